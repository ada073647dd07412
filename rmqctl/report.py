"""Plain documents built from a :class:`~rmqctl.model.GroupView`: the JSON output contracts.

Runbooks depend on these shapes (snake_case, stable keys); the CLI renders them, the TUI and
tests read them. Also holds the side-by-side subscription comparison that ``group show`` marks.

Must not import the CLI, the TUI or pyspark.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rmqctl.model import GroupSummary, GroupView, Subscription, queues_as_dicts


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


def group_show(view: GroupView) -> dict[str, Any]:
    """``group show -o json``."""
    return {
        "group": view.group,
        "online": view.online,
        "consume_type": view.consume_type,
        "message_model": view.message_model,
        "consume_from_where": view.consume_from_where,
        "connections": [c.as_dict() for c in view.connections],
        "broker_subscriptions": {
            broker: [_sub_dict(s) for _, s in sorted(table.items())]
            for broker, table in sorted(view.broker_subscriptions.items())
        },
        "client_subscriptions": {
            cid: [_sub_dict(s) for s in subs] for cid, subs in view.client_subscriptions.items()
        },
        "client_strategies": {cid: ri.strategy for cid, ri in sorted(view.running_infos.items())},
        "client_consume": {
            cid: {"consume_ok_tps": round(ri.consume_ok_tps, 2),
                  "consume_failed_tps": round(ri.consume_failed_tps, 2),
                  "consume_failed_msgs": ri.consume_failed_msgs}
            for cid, ri in sorted(view.running_infos.items())
        },
        "subscription_conflicts": subscription_conflicts(view),
        "errors": {name: str(err) for name, err in view.errors.items()},
    }


def group_progress(view: GroupView) -> list[dict[str, Any]]:
    """``group progress -o json``: one row per queue, retry queues included; a held queue whose
    pulls fail now carries ``unpullable`` (the reason); unknown numbers are null."""
    stuck = view.unpullable()
    return [{**p.as_dict(), **({"unpullable": stuck[p.queue]} if p.queue in stuck else {})}
            for p in view.progress]


def group_assignment(view: GroupView) -> dict[str, Any]:
    """``group assignment -o json``: what each client holds, and what nobody holds."""
    assignments = view.assignments()
    owners = view.owners()
    return {
        "group": view.group,
        "assignments": {cid: queues_as_dicts(qs) for cid, qs in assignments.items()},
        "unassigned": queues_as_dicts(view.unassigned()),
        "shared": [
            {**mq.as_dict(), "clients": cids} for mq, cids in sorted(owners.items()) if len(cids) > 1
        ],
        "idle_clients": [cid for cid, qs in assignments.items() if not qs],
        "rebalance_in_progress": _rebalance_doc(view),
        "errors": {name: str(err) for name, err in view.errors.items()},
    }


def _rebalance_doc(view: GroupView) -> dict[str, Any] | None:
    state = view.rebalance_in_progress()
    if state is None:
        return None
    return {"shared": queues_as_dicts(state["shared"]), "unheld": queues_as_dicts(state["unheld"])}


def group_summary(summary: GroupSummary) -> dict[str, Any]:
    kind = {"CONSUME_PASSIVELY": "PUSH", "CONSUME_ACTIVELY": "PULL", "CONSUME_POP": "POP"}
    return {
        "group": summary.group,
        "clients": summary.clients,
        "online": summary.clients > 0,
        "consume_type": kind.get(summary.consume_type or "", summary.consume_type),
        "message_model": summary.message_model,
        "version": summary.version if summary.clients else "OFFLINE",
        "total_diff": summary.total_diff,
        "consume_tps": summary.consume_tps,
    }
