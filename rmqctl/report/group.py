"""The documents of ``group list|show|progress|assignment`` (and a ``--watch`` sample of them).

Also the side-by-side subscription comparison that ``group show`` marks. The subscription
conflicts it lists are the doctor's findings, handed in by the command: documents never run checks.
Must not import the CLI, the TUI, the doctor or pyspark.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NotRequired, TypedDict

from rmqctl.errors import RmqctlError
from rmqctl.model import Finding, GroupSummary, GroupView, QueueProgress, Subscription, unpullable_reason
from rmqctl.records import dataclass
from rmqctl.report.common import (
    Errors,
    QueueDict,
    RowSet,
    connection_doc,
    consume_type,
    error_rows,
    errors_doc,
    queues_doc,
    subscription_doc,
)

# ---------------------------------------------------------------------------------------------
# Subscriptions compared (group show)


@dataclass(frozen=True, slots=True)
class SubscriptionRow:
    """One source's subscription of one topic, and whether it differs: a client's from what the
    brokers store (``None`` when no broker's table could be read), a broker's from another
    broker's."""

    topic: str
    source: str  # "broker:<name>" or "client:<client id>"
    subscription: Subscription | None  # None: this client does not subscribe the topic
    differs: bool | None


def compare_subscriptions(view: GroupView) -> list[SubscriptionRow]:
    """Every topic the group touches, each broker's stored entry and each client's own."""
    clients = view.client_subscriptions
    topics: set[str] = set()
    for table in view.broker_subscriptions.values():
        topics.update(t for t in table if not t.startswith("%RETRY%"))
    for subs in clients.values():
        topics.update(s.topic for s in subs)
    rows: list[SubscriptionRow] = []
    for topic in sorted(topics):
        entries: list[tuple[str, Subscription | None]] = []
        for broker, table in sorted(view.broker_subscriptions.items()):
            entries.append((f"broker:{broker}", table.get(topic)))
        for cid, subs in sorted(clients.items()):
            entries.append((f"client:{cid}", next((s for s in subs if s.topic == topic), None)))
        stored = [s for src, s in entries if src.startswith("broker:") and s is not None]
        for source, sub in entries:
            differs: bool | None
            if source.startswith("broker:"):  # the reference; it differs only from another broker
                differs = sub is None or any(not sub.same_filter(other) for other in stored)
            elif not view.broker_subscriptions:
                differs = None  # no broker's table was read: nothing to compare with
            else:  # a client against what the brokers store (nothing stored differs too)
                differs = sub is None or not stored or any(not sub.same_filter(other) for other in stored)
            rows.append(SubscriptionRow(topic, source, sub, differs))
    return rows


#: the doctor's codes that ``group show`` lists as its ``subscription_conflicts``
SUBSCRIPTION_CODES = (
    "SUBSCRIPTION_TAG_CONFLICT", "SUBSCRIPTION_TOPIC_CONFLICT", "BROKER_SUBSCRIPTION_DIVERGENCE",
)


def subscription_conflicts(findings: Iterable[Finding]) -> list[dict[str, Any]]:
    """The group's subscription findings (codes in :data:`SUBSCRIPTION_CODES`), reduced to code,
    topic(s) and title; other findings are left out."""
    out = []
    for finding in findings:
        if finding.code not in SUBSCRIPTION_CODES:
            continue
        topics = finding.evidence.get("topic")
        if topics is None:
            topics = [t["topic"] for t in finding.evidence.get("topics", [])]
        out.append({"code": finding.code, "severity": finding.severity,
                    "topics": [topics] if isinstance(topics, str) else list(topics),
                    "title": finding.title})
    return out


class GroupShowDoc(TypedDict):
    group: str
    online: bool
    consume_type: str | None
    message_model: str | None
    consume_from_where: str | None
    connections: list[dict[str, Any]]
    #: ``pop``, ``push``, ``mixed`` or null (see GroupView.consumption)
    consumption: str | None
    #: the 5.x proxies read: address, how rmqctl knew it, the clients it lists, why it failed
    proxies: list[dict[str, Any]]
    #: the group's retry policy and maximum of deliveries from its stored config (see
    #: :func:`retry_policy_doc`); null when no config was read
    retry_policy: dict[str, Any] | None
    broker_subscriptions: dict[str, list[dict[str, Any]]]
    client_subscriptions: dict[str, list[dict[str, Any]]]
    client_strategies: dict[str, str | None]
    subscriptions: list[dict[str, Any]]
    subscription_conflicts: list[dict[str, Any]]
    errors: Errors
    unavailable: NotRequired[dict[str, str]]


#: a connection row of ``group show``; the consume numbers come from the client's running info
CONNECTION_COLUMNS = ("client_id", "client_addr", "language", "version", "sdk", "strategy", "consume_ok_tps",
                      "consume_failed_tps", "consume_failed_msgs")


def _consume_numbers(view: GroupView, client_id: str) -> dict[str, Any]:
    info = view.running_infos.get(client_id)
    if info is None:
        return {"consume_ok_tps": None, "consume_failed_tps": None, "consume_failed_msgs": None}
    return {"consume_ok_tps": round(info.consume_ok_tps, 2),
            "consume_failed_tps": round(info.consume_failed_tps, 2),
            "consume_failed_msgs": info.consume_failed_msgs}


def retry_policy_doc(view: GroupView) -> dict[str, Any] | None:
    """The group's retry policy as its stored config says: ``type`` (``CUSTOMIZED`` or
    ``EXPONENTIAL``, null for a 4.x broker's config, which has none), its parameters, in words
    (``description``), ``retry_max_times`` and ``max_deliveries`` (what a POP consumer gets a
    message at most before the DLQ: ``retry_max_times + 1``), and the brokers whose configs
    differ (the fewest deliveries is the one given). Null when no config was read."""
    if not view.group_configs:
        return None
    policy = view.retry_policy
    kinds = {(c.retry_policy, c.retry_max_times) for c in view.group_configs.values()}
    return {
        "type": policy.kind if policy else None,
        "description": policy.describe() if policy else None,
        "delays_ms": list(policy.delays_ms) if policy and policy.delays_ms is not None else None,
        "initial_ms": policy.initial_ms if policy else None,
        "max_ms": policy.max_ms if policy else None,
        "multiplier": policy.multiplier if policy else None,
        "retry_max_times": view.retry_max_times,
        "max_deliveries": view.max_deliveries,
        "brokers": sorted(view.group_configs),
        "differs_by_broker": len(kinds) > 1,
    }


def group_show(view: GroupView, findings: Iterable[Finding]) -> GroupShowDoc:
    """``group show``: connections, stored and own subscriptions side by side, and the conflicts
    among ``findings`` (the doctor's, for this view: see :data:`SUBSCRIPTION_CODES`)."""
    strategies = {cid: ri.strategy for cid, ri in sorted(view.running_infos.items())}
    doc = GroupShowDoc(
        group=view.group,
        online=view.online,
        consume_type=consume_type(view.consume_type),
        message_model=view.message_model,
        consume_from_where=view.consume_from_where,
        connections=[{**connection_doc(c), "strategy": strategies.get(c.client_id),
                      **_consume_numbers(view, c.client_id)} for c in view.connections],
        consumption=view.consumption,
        proxies=[{"address": p.address, "found_by": p.found_by,
                  "clients": [c.client_id for c in p.connection.connections] if p.connection else [],
                  "error": p.error} for p in view.proxies],
        retry_policy=retry_policy_doc(view),
        broker_subscriptions={
            broker: [subscription_doc(s) for _, s in sorted(table.items())]
            for broker, table in sorted(view.broker_subscriptions.items())
        },
        client_subscriptions={
            cid: [subscription_doc(s) for s in subs] for cid, subs in view.client_subscriptions.items()
        },
        client_strategies=strategies,
        subscriptions=[
            {"topic": row.topic, "source": row.source,
             "expression": row.subscription.expression if row.subscription else None,
             "tags": list(row.subscription.tags) if row.subscription else [],
             "sub_version": row.subscription.sub_version if row.subscription else None,
             "subscribed": row.subscription is not None, "differs": row.differs}
            for row in compare_subscriptions(view)
        ],
        subscription_conflicts=subscription_conflicts(findings),
        errors=errors_doc(view.errors),
    )
    if view.unavailable:
        doc["unavailable"] = dict(view.unavailable)
    return doc


def group_show_rows(doc: GroupShowDoc) -> list[RowSet]:
    return [
        RowSet("connection", CONNECTION_COLUMNS, doc["connections"]),
        RowSet("subscription", ("topic", "source", "expression", "tags", "sub_version", "subscribed", "differs"),
               doc["subscriptions"]),
        RowSet("conflict", ("code", "severity", "topics", "title"), doc["subscription_conflicts"]),
        *error_rows(doc),
    ]


# ---------------------------------------------------------------------------------------------
# Progress, assignment, list


#: fields of a progress row that a source may be unable to supply (see GroupView.unavailable)
PROGRESS_FIELDS = ("pull_offset", "inflight", "last_consumed_ts", "owner")
PROGRESS_COLUMNS = ("topic", "broker", "queue_id", "broker_offset", "consumer_offset", "pull_offset",
                    "diff", "inflight", "last_consumed_ts", "owner", "unpullable")


class GroupProgressDoc(TypedDict):
    group: str
    queues: list[dict[str, Any]]
    total_diff: int | None
    unknown_diff_queues: int
    total_inflight: int | None
    errors: Errors
    unavailable: NotRequired[dict[str, str]]


def progress_row(p: QueueProgress) -> dict[str, Any]:
    """One queue of ``group progress``: offsets, lag and owner; offsets that could not be read are
    ``null`` (and ``offsets_from`` says where the numbers came from when not the consume stats)."""
    known = p.known
    out: dict[str, Any] = {
        "topic": p.queue.topic,
        "broker": p.queue.broker_name,
        "queue_id": p.queue.queue_id,
        "broker_offset": p.broker_offset if known else None,
        "consumer_offset": p.consumer_offset if known else None,
        "pull_offset": p.pull_offset if known else None,
        "diff": p.lag,
        "inflight": p.inflight,
        "last_consumed_ts": p.last_timestamp or None,
        "owner": p.owner,
    }
    if p.offsets_from != "consume_stats":
        out["offsets_from"] = p.offsets_from
    if not p.subscribed:
        out["subscribed"] = False  # left behind: no online client subscribes its topic
    return out


def group_progress(view: GroupView) -> GroupProgressDoc:
    """``group progress``: one row per queue, retry queues included.

    A field the source cannot supply is ``null`` in every row and named, with why, in the
    document's ``unavailable``; a number the brokers did not report (a topic left out of the
    consume stats and not in the offset table) is ``null`` too, never 0, and ``total_diff``
    sums the known rows while ``unknown_diff_queues`` counts the others. A 5.5 lite group's
    ``total_diff`` is ``null``: its offsets live in light message queues no row shows."""
    missing = {k: v for k, v in view.unavailable.items() if k in PROGRESS_FIELDS}
    stuck = {mq: unpullable_reason(mq.topic, mq.broker_name) for mq in view.unpullable()}
    pop_owner = pop_label(view)
    rows = []
    for p in view.progress:
        row = progress_row(p)
        row.update(dict.fromkeys(missing))
        if pop_owner and row["owner"] is None:
            row["owner"] = pop_owner
        # a held queue whose pulls fail: why (its topic is missing from the broker's table)
        row["unpullable"] = stuck.get(p.queue)
        rows.append(row)
    doc = GroupProgressDoc(
        group=view.group, queues=rows, total_diff=0, unknown_diff_queues=0, total_inflight=None,
        errors=errors_doc(view.errors))
    if view.unavailable:
        doc["unavailable"] = dict(view.unavailable)
    return retotal_progress(doc)


def retotal_progress(doc: GroupProgressDoc) -> GroupProgressDoc:
    """``doc`` with its totals summed over its own ``queues`` (call again after rows are left
    out): ``total_diff`` over the known diffs (``null`` for a lite group, whose lite topics' queues
    are not among the rows), ``unknown_diff_queues`` counting the ``null`` ones,
    ``total_inflight`` over the known inflights (``null`` when the source cannot supply inflight,
    or no shown row knows it)."""
    rows = doc["queues"]
    known_diff = sum(r["diff"] for r in rows if r["diff"] is not None)
    doc["total_diff"] = None if "lite_topics" in doc.get("unavailable", {}) else known_diff
    doc["unknown_diff_queues"] = sum(1 for r in rows if r["diff"] is None)
    inflights = [r["inflight"] for r in rows if r["inflight"] is not None]
    # null when the source cannot supply it, or when rows exist and none knows it: never a 0
    doc["total_inflight"] = (None if "inflight" in doc.get("unavailable", {}) or (rows and not inflights)
                             else sum(inflights))
    return doc


def group_progress_rows(doc: GroupProgressDoc) -> list[RowSet]:
    return [RowSet("queue", PROGRESS_COLUMNS, doc["queues"]), *error_rows(doc)]


class HeldTwiceDict(QueueDict):
    clients: list[str]


class GroupAssignmentDoc(TypedDict):
    group: str
    message_model: str | None
    assignments: dict[str, list[QueueDict]]
    unassigned_queues: list[QueueDict]
    held_twice: list[HeldTwiceDict]
    idle_clients: list[str]
    #: right after a membership change: queues two clients hold and queues nobody holds while
    #: the clients move to the new allocation (``null`` when the holdings look settled)
    rebalance_in_progress: dict[str, Any] | None
    errors: Errors
    #: a POP group only: ``pop`` or ``mixed`` (see GroupView.consumption)
    consumption: NotRequired[str]
    #: a POP group only: the queues its clients pop from (no client holds them)
    pop_queues: NotRequired[list[QueueDict]]
    #: a POP group only: ``POP (n clients)``
    pop_owner: NotRequired[str]
    unavailable: NotRequired[dict[str, str]]




def pop_label(view: GroupView) -> str | None:
    """What stands in a POP group's owner column: ``POP (n clients)``; ``None`` for other groups."""
    if not view.pop:
        return None
    n = sum(1 for c in view.connections if c.sdk == "grpc" or view.consumption == "pop")
    return f"POP ({n} client{'' if n == 1 else 's'})"


def group_assignment(view: GroupView) -> GroupAssignmentDoc:
    """``group assignment``: what each client holds, what nobody holds, what two hold at once.
    In a POP group no client holds a queue: every queue is handed out by POP (``pop_queues``),
    none is held by nobody and no client is idle for holding none."""
    assignments = view.assignments()
    pop = view.pop
    if pop:
        assignments = {cid: qs for cid, qs in assignments.items() if qs}
    doc = GroupAssignmentDoc(
        group=view.group,
        message_model=view.message_model,
        assignments={cid: queues_doc(qs) for cid, qs in assignments.items()},
        unassigned_queues=[] if pop else queues_doc(view.unassigned()),
        held_twice=[HeldTwiceDict(topic=mq.topic, broker=mq.broker_name, queue_id=mq.queue_id, clients=cids)
                    for mq, cids in view.held_twice().items()],
        idle_clients=[cid for cid, qs in assignments.items() if not qs],
        rebalance_in_progress=None if pop else _rebalance_doc(view),
        errors=errors_doc(view.errors),
    )
    label = pop_label(view)
    if label is not None and view.consumption is not None:
        doc["consumption"] = view.consumption
        doc["pop_queues"] = queues_doc(view.unassigned())
        doc["pop_owner"] = label
    if view.unavailable:
        doc["unavailable"] = dict(view.unavailable)
    return doc


ASSIGNMENT_COLUMNS = ("client_id", "topic", "broker", "queue_id", "state")


def assignment_rows(doc: GroupAssignmentDoc) -> list[dict[str, Any]]:
    """One row per (client, queue) held, per idle client and per queue nobody holds; ``state`` is
    ``held``, ``held twice``, ``idle`` or ``held by nobody``."""
    twice = {(q["topic"], q["broker"], q["queue_id"]) for q in doc["held_twice"]}
    rows: list[dict[str, Any]] = []
    for cid, queues in doc["assignments"].items():
        if not queues:
            rows.append({"client_id": cid, "topic": None, "broker": None, "queue_id": None, "state": "idle"})
        for q in queues:
            state = "held twice" if (q["topic"], q["broker"], q["queue_id"]) in twice else "held"
            rows.append({"client_id": cid, **q, "state": state})
    for q in doc["unassigned_queues"]:
        rows.append({"client_id": None, **q, "state": "held by nobody"})
    for q in doc.get("pop_queues", []):
        rows.append({"client_id": None, **q, "state": doc.get("pop_owner")})
    return rows


def group_assignment_rows(doc: GroupAssignmentDoc) -> list[RowSet]:
    return [RowSet("assignment", ASSIGNMENT_COLUMNS, assignment_rows(doc)), *error_rows(doc)]


def watched(doc: Any, records: list[RowSet], *, sample: int, taken_at_ts: int,
            rates: Mapping[tuple[str, str, int], float]) -> list[RowSet]:
    """One ``--watch`` sample of ``group progress|assignment``.

    The document gains ``sample`` (1, 2, ...), ``taken_at_ts`` and ``consume_rates``: per queue, the
    messages per second consumed since the previous sample (empty on the first). Returns the rows
    with ``sample`` first in each and, in each row that names a queue, its ``consume_rate``
    (``null`` when there is no earlier sample of it)."""
    doc["sample"] = sample
    doc["taken_at_ts"] = taken_at_ts
    doc["consume_rates"] = [{"topic": t, "broker": b, "queue_id": q, "consume_rate": rate}
                            for (t, b, q), rate in sorted(rates.items())]
    out = []
    for rowset in records:
        per_queue = "queue_id" in rowset.columns
        columns = ("sample", *rowset.columns, *(("consume_rate",) if per_queue else ()))
        rows = []
        for row in rowset.rows:
            shown = {"sample": sample, **row}
            if per_queue:
                shown["consume_rate"] = rates.get((row["topic"], row["broker"], row["queue_id"]))
            rows.append(shown)
        out.append(RowSet(rowset.kind, columns, rows))
    return out


GROUP_LIST_COLUMNS = ("group", "clients", "online", "consume_type", "message_model", "version",
                      "total_diff", "consume_tps")


def _rebalance_doc(view: GroupView) -> dict[str, Any] | None:
    state = view.rebalance_in_progress()
    if state is None:
        return None
    return {"shared": queues_doc(state["shared"]), "unheld": queues_doc(state["unheld"])}


def group_summary(summary: GroupSummary, now_ms: int | None = None) -> dict[str, Any]:
    """One group of ``group list``; ``unknown_diff_topics`` (only when there are some) names the
    topics whose lag ``total_diff`` could not count; a line from a cache (a dashboard's cached group
    list) carries ``cached: true``, ``cached_at_ts`` and ``cache_age_ms`` (null when not known)."""
    out = {
        "group": summary.group,
        "clients": summary.clients,
        "online": summary.clients > 0,
        "consume_type": consume_type(summary.consume_type),
        "message_model": summary.message_model,
        "version": summary.version if summary.clients else "OFFLINE",
        "total_diff": summary.total_diff,
        "consume_tps": summary.consume_tps,
    }
    if summary.unknown_diff_topics:
        out["unknown_diff_topics"] = list(summary.unknown_diff_topics)
    if summary.cached:
        out["cached"] = True
        out["cached_at_ts"] = summary.cached_at
        out["cache_age_ms"] = (max(0, now_ms - summary.cached_at)
                               if now_ms is not None and summary.cached_at is not None else None)
    return out


class GroupListDoc(TypedDict):
    groups: list[dict[str, Any]]
    errors: Errors
    unavailable: NotRequired[dict[str, str]]


def group_list(summaries: Iterable[GroupSummary], errors: Mapping[str, RmqctlError],
               unavailable: Mapping[str, str] | None = None, now_ms: int | None = None) -> GroupListDoc:
    """``group list``; what the source cannot count (``unavailable``) is named with why; ``now_ms`` (the
    source's clock) dates the age of cached lines."""
    doc = GroupListDoc(groups=[group_summary(s, now_ms) for s in summaries], errors=errors_doc(errors))
    if unavailable:
        doc["unavailable"] = dict(unavailable)
    return doc


def _age(ms: int) -> str:
    secs = ms // 1000
    if secs < 60:
        return f"{secs}s"
    if secs < 3600:
        return f"{secs // 60}m{secs % 60:02d}s"
    return f"{secs // 3600}h{secs % 3600 // 60:02d}m"


def cached_note(doc: GroupListDoc) -> str | None:
    """The table's line about cached lines: how many, and the oldest one's age (None: no cached line)."""
    cached = [g for g in doc["groups"] if g.get("cached")]
    if not cached:
        return None
    ages = [g["cache_age_ms"] for g in cached if g.get("cache_age_ms") is not None]
    age = f"built {_age(max(ages))} ago" if len(ages) == len(cached) else "of unknown age"
    return (f"{len(cached)} of {len(doc['groups'])} groups come from the dashboard's cached group list, {age}: "
            "their clients and lag are not read now (this login may not refresh the list; an admin login can)")


#: what a ``group list`` row carries beyond :data:`GROUP_LIST_COLUMNS` when there is something to say:
#: topics its total leaves out, and whether the line is a cached answer and how old
GROUP_LIST_EXTRA_COLUMNS = ("unknown_diff_topics", "cached", "cached_at_ts", "cache_age_ms")


def group_list_rows(doc: GroupListDoc) -> list[RowSet]:
    """Rows of ``group list``: csv's header names every column a line may carry, so a cached
    line's ``cached``, ``cached_at_ts`` and ``cache_age_ms`` reach csv as they reach JSON (empty
    cells on lines read now)."""
    return [RowSet("group", (*GROUP_LIST_COLUMNS, *GROUP_LIST_EXTRA_COLUMNS), doc["groups"]), *error_rows(doc)]
