"""What every doctor check shares: its inputs (:class:`CheckContext`), the few lookups over a
:class:`~rmqctl.model.GroupView` that several check families make, and the helpers that phrase
findings as prose (``1 queue``, ``a, b and c``).

Must not do I/O, and must not import the CLI, the TUI, pyspark or the other doctor modules.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import field
from typing import Any

from rmqctl import errors
from rmqctl.model import (
    DEFAULT_STRATEGY,
    ExpressionHistory,
    Finding,
    GroupView,
    MessageQueue,
    QueueProgress,
    Severity,
    Subscription,
    sort_queues,
)
from rmqctl.records import dataclass


@dataclass(frozen=True)
class CheckContext:
    """Inputs of every check beyond the view itself."""

    view: GroupView
    previous: GroupView | None = None
    now_ms: int = 0
    #: the view is a second sample taken because the first showed a rebalance in progress
    resampled: bool = False
    #: what earlier samples observed of each queue (expression, owner, consumer offset)
    history: ExpressionHistory = field(default_factory=ExpressionHistory)

    @property
    def clustering(self) -> bool:
        models = {ri.message_model for ri in self.view.running_infos.values() if ri.message_model}
        model = self.view.message_model or next(iter(models), None)
        return model != "BROADCASTING"


Check = Callable[[CheckContext], list[Finding]]


def n_of(count: int, noun: str) -> str:
    """``1 queue``, ``2 queues``: findings read as prose."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def are(count: int) -> str:
    return "is" if count == 1 else "are"


def and_list(names: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    if len(names) <= 2:
        return " and ".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


def queue_dict(mq: MessageQueue) -> dict[str, Any]:
    """A queue in a finding's evidence, shaped as in every document: ``{topic, broker, queue_id}``."""
    return {"topic": mq.topic, "broker": mq.broker_name, "queue_id": mq.queue_id}


def queues_text(queues: list[MessageQueue]) -> str:
    """Queues in words, grouped by topic and broker in queue order: ``T@broker-a queue 0``,
    ``T@broker-a queues 0, 1 and 2; U@broker-b queue 3``."""
    by_place: dict[tuple[str, str], list[int]] = {}
    for mq in sort_queues(queues):
        by_place.setdefault((mq.topic, mq.broker_name), []).append(mq.queue_id)
    return "; ".join(
        f"{topic}@{broker} {'queue' if len(ids) == 1 else 'queues'} {and_list([str(i) for i in ids])}"
        for (topic, broker), ids in by_place.items())


def finding(ctx: CheckContext, code: str, severity: Severity, title: str, detail: str,
            evidence: Mapping[str, Any], fix: str) -> Finding:
    return Finding(code, severity, ctx.view.group, title, detail, dict(evidence), fix)


def expression_of(sub: Subscription | None) -> str:
    return sub.expression if sub is not None else "(not subscribed)"


def client_sub(view: GroupView, cid: str, topic: str) -> Subscription | None:
    """``cid``'s own subscription of ``topic`` (None when it does not subscribe it)."""
    info = view.running_infos.get(cid)  # not view.client_subscriptions, which builds all clients
    if info is None:
        return None
    return next((s for s in info.user_subscriptions() if s.topic == topic), None)


def queues_by_topic(view: GroupView, topic: str) -> list[MessageQueue]:
    """The queues of ``topic`` the view knows of: its route, plus any with a progress row."""
    queues = set(view.topic_queues.get(topic, ()))
    queues.update(p.queue for p in view.progress if p.queue.topic == topic)
    return sort_queues(queues)


def progress_by_queue(view: GroupView) -> Mapping[MessageQueue, QueueProgress]:
    """:meth:`GroupView.progress_by_queue` (read only)."""
    return view.progress_by_queue()


def backlog_text(known: int, unknown_queues: int) -> str:
    """A backlog in words; queues whose offsets could not be read are said to be unknown, never 0."""
    if not unknown_queues:
        return f"{n_of(known, 'message')} now"
    unknown = f"unknown for {n_of(unknown_queues, 'queue')}"
    return f"{n_of(known, 'message')} now, {unknown}" if known else unknown


#: strategies whose answer depends on what each client was configured with (CONFIG's queue list,
#: MACHINE_ROOM's rooms), which no client reports: the allocation cannot be recomputed from a view
PER_CLIENT_STRATEGIES = frozenset({"CONFIG", "MACHINE_ROOM"})


def expected_allocation(view: GroupView, topic: str) -> dict[str, list[MessageQueue]] | None:
    """What each client's OWN strategy (the one its running info names; AVG when it names none)
    assigns to it for ``topic`` over ALL clients of the group, as its own rebalance computes it;
    ``None`` when some client's strategy cannot be recomputed."""
    from rmqctl.rebalance.strategies import get_strategy

    queues = view.topic_queues.get(topic)
    if not queues or not view.client_ids:
        return None
    names = {cid: (info.strategy if (info := view.running_infos.get(cid)) is not None else None)
             or view.strategy or DEFAULT_STRATEGY for cid in view.client_ids}
    if any(name in PER_CLIENT_STRATEGIES for name in names.values()):
        return None
    by_name: dict[str, dict[str, list[MessageQueue]]] = {}
    try:
        for name in sorted(set(names.values())):
            by_name[name] = dict(get_strategy(name).allocate_all(list(queues), view.client_channels()))
    except errors.RmqctlError:  # a strategy we cannot reproduce (nearby rooms, a custom class)
        return None
    return {cid: by_name[names[cid]].get(cid, []) for cid in view.client_ids}


def deliveries_text(view: GroupView) -> str:
    """How many deliveries a POP consumer of the group gets before the DLQ, from its config
    (``4 deliveries (retryMaxTimes 3)``), or the broker's default when the config was not read."""
    if view.max_deliveries is None:
        return "the group's maximum of deliveries (retryMaxTimes + 1; 17 by default, its config was not read)"
    n = view.max_deliveries
    return f"{n} {'delivery' if n == 1 else 'deliveries'} (retryMaxTimes {view.retry_max_times})"
