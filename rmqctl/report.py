"""The output contract: every command's document, and the rows ``jsonl`` and ``csv`` derive from it.

Runbooks depend on these shapes (docs/output.md): snake_case keys that mean the same thing with
the same value in every command, timestamps as epoch milliseconds in ``*_ts`` keys, lists kept as
lists, and an ``errors`` object (source → message) in every document. Each document is a
TypedDict built here from core objects; each has a ``*_rows`` function returning its
:class:`RowSet`\\ s — one kind of row each — computed from the document alone, so ``json``,
``jsonl`` and ``csv`` can never disagree. The CLI renders these, the TUI and tests read them.
Also holds the side-by-side subscription comparison that ``group show`` marks.

Must not import the CLI, the TUI or pyspark.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NotRequired, TypedDict

from rmqctl.errors import RmqctlError
from rmqctl.model import GroupSummary, GroupView, Subscription, queues_as_dicts


@dataclass(frozen=True, slots=True)
class RowSet:
    """One kind of row of a document: ``jsonl`` prints each row with ``"kind": kind`` first;
    ``csv`` prints one kind, with ``columns`` as its header."""

    kind: str
    columns: tuple[str, ...]
    rows: Sequence[Mapping[str, Any]]


class QueueDict(TypedDict):
    topic: str
    broker: str
    queue_id: int


Errors = dict[str, str]


def errors_doc(errors: Mapping[str, RmqctlError | str]) -> Errors:
    """``{"broker-a": "TOPIC_NOT_EXIST (17) from …: …"}``: what made a document partial."""
    return {name: str(err) for name, err in sorted(errors.items())}


def error_rows(doc: Mapping[str, Any]) -> list[RowSet]:
    """The document's errors as rows of kind ``error`` (only when there are some)."""
    errs = doc.get("errors") or {}
    if not errs:
        return []
    return [RowSet("error", ("source", "message"), [{"source": k, "message": v} for k, v in errs.items()])]


def _queue_label(q: Mapping[str, Any]) -> str:
    return f"{q['topic']}@{q['broker']}/{q['queue_id']}"


# ---------------------------------------------------------------------------------------------
# Subscriptions compared (group show)


@dataclass(frozen=True, slots=True)
class SubscriptionRow:
    """One source's subscription of one topic, and whether it disagrees with the others."""

    topic: str
    source: str  # "broker:<name>" or "client:<client id>"
    subscription: Subscription | None  # None: this client does not subscribe the topic
    differs: bool


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
        present = [s for _, s in entries if s is not None]
        for source, sub in entries:
            if sub is None:
                differs = True
            else:
                differs = any(not sub.same_filter(other) for other in present)
            rows.append(SubscriptionRow(topic, source, sub, differs))
    return rows


SUBSCRIPTION_CODES = (
    "SUBSCRIPTION_TAG_CONFLICT", "SUBSCRIPTION_TOPIC_CONFLICT", "BROKER_SUBSCRIPTION_DIVERGENCE",
)


def subscription_conflicts(view: GroupView) -> list[dict[str, Any]]:
    """The doctor's subscription findings for this group, reduced to code, topic(s) and title."""
    from rmqctl.doctor import run_checks

    out = []
    for finding in run_checks(view, only=SUBSCRIPTION_CODES):
        topics = finding.evidence.get("topic")
        if topics is None:
            topics = [t["topic"] for t in finding.evidence.get("topics", [])]
        out.append({"code": finding.code, "severity": finding.severity,
                    "topics": [topics] if isinstance(topics, str) else list(topics),
                    "title": finding.title})
    return out


def _sub_dict(sub: Subscription) -> dict[str, Any]:
    return {
        "topic": sub.topic,
        "expression": sub.expression,
        "expression_type": sub.expression_type,
        "tags": list(sub.tags),
        "sub_version": sub.sub_version,
    }


#: the broker's ConsumeType names as operators say them (the same in every document)
CONSUME_TYPES = {"CONSUME_PASSIVELY": "PUSH", "CONSUME_ACTIVELY": "PULL", "CONSUME_POP": "POP"}


def consume_type(raw: str | None) -> str | None:
    """``CONSUME_PASSIVELY`` → ``PUSH``, ``CONSUME_ACTIVELY`` → ``PULL``, ``CONSUME_POP`` → ``POP``."""
    return CONSUME_TYPES.get(raw or "", raw) if raw else None


def _unavailable(view: GroupView) -> dict[str, Any]:
    """``{"unavailable": {field: why}}`` when the source could not supply something, else nothing."""
    return {"unavailable": dict(view.unavailable)} if view.unavailable else {}


class GroupShowDoc(TypedDict):
    group: str
    online: bool
    consume_type: str | None
    message_model: str | None
    consume_from_where: str | None
    connections: list[dict[str, Any]]
    broker_subscriptions: dict[str, list[dict[str, Any]]]
    client_subscriptions: dict[str, list[dict[str, Any]]]
    client_strategies: dict[str, str | None]
    subscriptions: list[dict[str, Any]]
    subscription_conflicts: list[dict[str, Any]]
    errors: Errors
    unavailable: NotRequired[dict[str, str]]


#: a connection row of ``group show``; the consume numbers come from the client's running info
CONNECTION_COLUMNS = ("client_id", "client_addr", "language", "version", "strategy", "consume_ok_tps",
                      "consume_failed_tps", "consume_failed_msgs")


def _consume_numbers(view: GroupView, client_id: str) -> dict[str, Any]:
    info = view.running_infos.get(client_id)
    if info is None:
        return {"consume_ok_tps": None, "consume_failed_tps": None, "consume_failed_msgs": None}
    return {"consume_ok_tps": round(info.consume_ok_tps, 2),
            "consume_failed_tps": round(info.consume_failed_tps, 2),
            "consume_failed_msgs": info.consume_failed_msgs}


def group_show(view: GroupView) -> GroupShowDoc:
    """``group show``: connections, stored and own subscriptions side by side, conflicts."""
    strategies = {cid: ri.strategy for cid, ri in sorted(view.running_infos.items())}
    doc = GroupShowDoc(
        group=view.group,
        online=view.online,
        consume_type=consume_type(view.consume_type),
        message_model=view.message_model,
        consume_from_where=view.consume_from_where,
        connections=[{**c.as_dict(), "strategy": strategies.get(c.client_id), **_consume_numbers(view, c.client_id)}
                     for c in view.connections],
        broker_subscriptions={
            broker: [_sub_dict(s) for _, s in sorted(table.items())]
            for broker, table in sorted(view.broker_subscriptions.items())
        },
        client_subscriptions={
            cid: [_sub_dict(s) for s in subs] for cid, subs in view.client_subscriptions.items()
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
        subscription_conflicts=subscription_conflicts(view),
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
    total_diff: int
    unknown_diff_queues: int
    total_inflight: int | None
    errors: Errors
    unavailable: NotRequired[dict[str, str]]


def group_progress(view: GroupView) -> GroupProgressDoc:
    """``group progress``: one row per queue, retry queues included.

    A field the source cannot supply is ``null`` in every row and named, with why, in the
    document's ``unavailable``; a number the brokers did not report (a topic left out of the
    consume stats and not in the offset table) is ``null`` too, never 0, and ``total_diff``
    sums the known rows while ``unknown_diff_queues`` counts the others."""
    missing = {k: v for k, v in view.unavailable.items() if k in PROGRESS_FIELDS}
    stuck = view.unpullable()
    rows = []
    for p in view.progress:
        row = p.as_dict()
        row.update(dict.fromkeys(missing))
        # a held queue whose pulls fail: why (its topic is missing from the broker's table)
        row["unpullable"] = stuck.get(p.queue)
        rows.append(row)
    doc = GroupProgressDoc(
        group=view.group, queues=rows, total_diff=view.total_diff,
        unknown_diff_queues=len(view.unknown_lag_queues),
        total_inflight=None if "inflight" in view.unavailable else view.total_inflight,
        errors=errors_doc(view.errors))
    if view.unavailable:
        doc["unavailable"] = dict(view.unavailable)
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
    unavailable: NotRequired[dict[str, str]]


def _queues(queues: Iterable[Any]) -> list[QueueDict]:
    return [QueueDict(topic=q["topic"], broker=q["broker"], queue_id=q["queue_id"])
            for q in queues_as_dicts(list(queues))]


def group_assignment(view: GroupView) -> GroupAssignmentDoc:
    """``group assignment``: what each client holds, what nobody holds, what two hold at once."""
    assignments = view.assignments()
    doc = GroupAssignmentDoc(
        group=view.group,
        message_model=view.message_model,
        assignments={cid: _queues(qs) for cid, qs in assignments.items()},
        unassigned_queues=_queues(view.unassigned()),
        held_twice=[HeldTwiceDict(topic=mq.topic, broker=mq.broker_name, queue_id=mq.queue_id, clients=cids)
                    for mq, cids in view.held_twice().items()],
        idle_clients=[cid for cid, qs in assignments.items() if not qs],
        rebalance_in_progress=_rebalance_doc(view),
        errors=errors_doc(view.errors),
    )
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
    return {"shared": queues_as_dicts(state["shared"]), "unheld": queues_as_dicts(state["unheld"])}


def group_summary(summary: GroupSummary) -> dict[str, Any]:
    """One group of ``group list``."""
    return {
        "group": summary.group,
        "clients": summary.clients,
        "online": summary.clients > 0,
        "consume_type": consume_type(summary.consume_type),
        "message_model": summary.message_model,
        "version": summary.version if summary.clients else "OFFLINE",
        "total_diff": summary.total_diff,
        "consume_tps": summary.consume_tps,
    }


class GroupListDoc(TypedDict):
    groups: list[dict[str, Any]]
    errors: Errors


def group_list(summaries: Iterable[GroupSummary], errors: Mapping[str, RmqctlError]) -> GroupListDoc:
    return GroupListDoc(groups=[group_summary(s) for s in summaries], errors=errors_doc(errors))


def group_list_rows(doc: GroupListDoc) -> list[RowSet]:
    return [RowSet("group", GROUP_LIST_COLUMNS, doc["groups"]), *error_rows(doc)]


# ---------------------------------------------------------------------------------------------
# Cluster and topics


class ClusterListDoc(TypedDict):
    brokers: list[dict[str, Any]]
    errors: Errors


CLUSTER_COLUMNS = ("cluster", "broker", "broker_id", "addr", "version", "in_tps", "out_tps", "disk_ratio")


def cluster_list_rows(doc: ClusterListDoc) -> list[RowSet]:
    return [RowSet("broker", CLUSTER_COLUMNS, doc["brokers"]), *error_rows(doc)]


class TopicListDoc(TypedDict):
    topics: list[dict[str, Any]]
    errors: Errors


TOPIC_LIST_COLUMNS = ("topic", "type")


def topic_list_rows(doc: TopicListDoc) -> list[RowSet]:
    return [RowSet("topic", TOPIC_LIST_COLUMNS, doc["topics"]), *error_rows(doc)]


class TopicRouteDoc(TypedDict):
    topic: str
    brokers: list[dict[str, Any]]
    order_topic_conf: str | None
    errors: Errors


ROUTE_COLUMNS = ("cluster", "broker", "addrs", "read_queues", "write_queues", "perm")


def topic_route_rows(doc: TopicRouteDoc) -> list[RowSet]:
    return [RowSet("route", ROUTE_COLUMNS, doc["brokers"]), *error_rows(doc)]


class TopicStatusDoc(TypedDict):
    topic: str
    queues: list[dict[str, Any]]
    put_tps: float | None
    errors: Errors


STATUS_COLUMNS = ("broker", "queue_id", "min_offset", "max_offset", "last_updated_ts")


def topic_status_rows(doc: TopicStatusDoc) -> list[RowSet]:
    return [RowSet("queue", STATUS_COLUMNS, doc["queues"]), *error_rows(doc)]


# ---------------------------------------------------------------------------------------------
# Doctor


class DoctorDoc(TypedDict):
    groups: list[str]
    findings: list[dict[str, Any]]
    skipped: list[dict[str, str]]
    errors: Errors


FINDING_COLUMNS = ("group", "severity", "code", "title", "detail", "evidence", "fix")


def doctor(groups: Sequence[str], findings: Iterable[Any], skipped: Mapping[str, Mapping[str, str]],
           errors: Mapping[str, RmqctlError]) -> DoctorDoc:
    """``doctor``: the groups checked, every finding whole, the checks skipped and why."""
    return DoctorDoc(
        groups=list(groups),
        findings=[f.as_dict() for f in findings],
        skipped=[{"group": g, "code": code, "reason": why}
                 for g, checks in sorted(skipped.items()) for code, why in sorted(checks.items())],
        errors=errors_doc(errors),
    )


def doctor_rows(doc: DoctorDoc) -> list[RowSet]:
    return [RowSet("finding", FINDING_COLUMNS, doc["findings"]),
            RowSet("skipped", ("group", "code", "reason"), doc["skipped"]), *error_rows(doc)]


# ---------------------------------------------------------------------------------------------
# Emulator run report and demo


class EmulatorRunDoc(TypedDict):
    scenario: str
    at: float
    consumers: dict[str, dict[str, Any]]
    produced_by_tag: dict[str, int]
    lost_by_tag: dict[str, int]
    broker_subscriptions: dict[str, Any]
    errors: Errors


def emulator_run(report: Mapping[str, Any]) -> EmulatorRunDoc:
    """The emulator's run report (its response codes already named: ``SUBSCRIPTION_NOT_EXIST (24)``)."""
    consumers = {cid: dict(c) for cid, c in report["consumers"].items()}
    return EmulatorRunDoc(scenario=report["scenario"], at=report["at"], consumers=consumers,
                          produced_by_tag=dict(report["produced_by_tag"]), lost_by_tag=dict(report["lost_by_tag"]),
                          broker_subscriptions=dict(report["broker_subscriptions"]),
                          errors=dict(report.get("errors", {})))


def emulator_run_rows(doc: EmulatorRunDoc) -> list[RowSet]:
    consumers = [
        {"client_id": cid, "group": c["group"], "received_by_tag": c["received_by_tag"], "queues": c["queues"],
         "pull_errors": c["pull_errors"]}
        for cid, c in doc["consumers"].items()
    ]
    tags = [{"tag": tag, "produced": n, "lost": doc["lost_by_tag"].get(tag, 0)}
            for tag, n in doc["produced_by_tag"].items()]
    subs = [
        {"broker": broker, "group": group, "topic": topic, "expression": sub["expression"],
         "sub_version": sub["sub_version"]}
        for broker, groups in doc["broker_subscriptions"].items()
        for group, topics in groups.items()
        for topic, sub in topics.items()
    ]
    return [
        RowSet("consumer", ("client_id", "group", "received_by_tag", "queues", "pull_errors"), consumers),
        RowSet("tag", ("tag", "produced", "lost"), tags),
        RowSet("broker_subscription", ("broker", "group", "topic", "expression", "sub_version"), subs),
        *error_rows(doc),
    ]


class DemoGroupDoc(TypedDict):
    show: GroupShowDoc
    assignment: GroupAssignmentDoc
    findings: list[dict[str, Any]]


class DemoDoc(TypedDict):
    scenario: EmulatorRunDoc
    description: str
    namesrv: str
    groups: dict[str, DemoGroupDoc]
    errors: Errors


def demo_rows(doc: DemoDoc) -> list[RowSet]:
    """The run report's rows, then each group's subscriptions, assignment and findings (rows of
    a group carry its name)."""
    run = [r for r in emulator_run_rows(doc["scenario"]) if r.kind != "error"]
    subs, assignment, findings = [], [], []
    for group, part in doc["groups"].items():
        subs += [{"group": group, **row} for row in part["show"]["subscriptions"]]
        assignment += [{"group": group, **row} for row in assignment_rows(part["assignment"])]
        findings += part["findings"]
    return [
        *run,
        RowSet("subscription", ("group", "topic", "source", "expression", "tags", "sub_version", "subscribed",
                                "differs"), subs),
        RowSet("assignment", ("group", *ASSIGNMENT_COLUMNS), assignment),
        RowSet("finding", FINDING_COLUMNS, findings),
        *error_rows(doc),
    ]


def queue_labels(queues: Iterable[Mapping[str, Any]]) -> list[str]:
    """``topic@broker/queue_id`` per queue, for tables."""
    return [_queue_label(q) for q in queues]
