"""Turn one watch round into snapshot rows: one :class:`QueueSnapshot` per (group, queue).

Pure functions over model objects, no I/O: the exporter fetches, these decide what a row says.
A queue's row carries the offsets the brokers report, the client holding it and whether that
client subscribes the topic, the subscription the broker stored for the group and the holder's
own (what judges the messages pulled: readers rebuild the expression history from them), and for
a POP group what its verdicts need: that it consumes by POP, its maximum of deliveries and, on
its retry queues, the most deliveries among the copies read back this round. A
broker that failed a round (or a whole group that could not be read) gives *placeholder* rows —
offsets null, ``error`` set — for every queue of it known from the routes or from the previous
round: missing data is recorded as missing, never as zeros. So does a broker whose dead-letter
offsets could not be read: a group's ``%DLQ%`` queue absent from a round that read the group did
not exist then (readers count its messages from 0), so a failed read must never look absent.

Imports the model, the watch service's types and the rebalance strategies only: never the CLI,
textual, pyspark or pyarrow.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from rmqctl import errors
from rmqctl.model import DLQ_PREFIX, GroupView, MessageQueue, Subscription, TopicOffset
from rmqctl.rebalance.strategies import get_strategy
from rmqctl.stuck import DEFAULT_MAX_DELIVERIES
from rmqctl.watch import holders


@dataclass(frozen=True, slots=True)
class QueueSnapshot:
    """One row of the snapshot contract (see :mod:`rmqctl.snapshot.schema` for the columns)."""

    ts_ms: int
    cluster: str
    group: str
    topic: str
    broker: str
    queue_id: int
    broker_offset: int | None = None
    consumer_offset: int | None = None
    pull_offset: int | None = None
    last_consumed_ms: int | None = None
    broker_last_ms: int | None = None
    owner: str | None = None
    owner_subscribed: bool | None = None
    message_model: str | None = None
    error: str | None = None
    #: the subscription of the topic the broker stored for the group (schema version 2)
    expression: str | None = None
    expression_type: str | None = None
    expression_version: int | None = None
    #: the owner's own subscription of the topic (schema version 2)
    owner_expression: str | None = None
    owner_expression_type: str | None = None
    owner_expression_version: int | None = None
    #: the group consumes by POP (or POP beside remoting clients): no client owns its queues
    #: (schema version 3; None: nothing told, no client and no POP retry topic)
    pop: bool | None = None
    #: the group's maximum of deliveries of a POP message (``retryMaxTimes + 1``; None: not read)
    max_deliveries: int | None = None
    #: on a retry queue whose newest copies were read back this round: the most deliveries among
    #: them (reconsume times + 1, up to ``max_deliveries``); None when none were read
    retry_deliveries: int | None = None

    @property
    def queue(self) -> MessageQueue:
        return MessageQueue(self.topic, self.broker, self.queue_id)

    @property
    def missing(self) -> bool:
        """A placeholder for a queue whose broker (or group) could not be read this round."""
        return self.error is not None


def _allocated_elsewhere(view: GroupView) -> dict[MessageQueue, str]:
    """Queues nobody holds that the group's strategy allocates to a client which does not
    subscribe their topic: the client-side rebalance gives every client of the group a share of
    every topic, and a client never pulls a topic it does not subscribe, so that share is dead."""
    if view.message_model == "BROADCASTING" or not view.running_infos:
        return {}
    try:
        strategy = get_strategy(view.strategy or "AVG")
    except errors.RmqctlError:  # a strategy we cannot reproduce (CONFIG, a custom class)
        return {}
    held = set(view.owners())
    out: dict[MessageQueue, str] = {}
    for topic, queues in sorted(view.topic_queues.items()):
        if all(mq in held for mq in queues):
            continue
        try:
            allocation = strategy.allocate_all(list(queues), view.client_channels())
        except errors.RmqctlError:
            continue
        for cid, assigned in allocation.items():
            if view.subscribes(cid, topic) is False:
                out.update({mq: cid for mq in assigned if mq not in held})
    return out


def owners(view: GroupView) -> dict[MessageQueue, tuple[str | None, bool | None]]:
    """Queue → (owner, owner subscribes the topic) for every queue of the view.

    The owner is the client that reports holding the queue; for a queue nobody holds, the client
    the group's allocation gives it to when that client does not subscribe the topic (so
    ``owner_subscribed`` is false); otherwise nobody (``(None, None)``).
    """
    out: dict[MessageQueue, tuple[str | None, bool | None]] = {}
    for mq, holder in holders(view).items():
        out[mq] = (holder, view.subscribes(holder, mq.topic)) if holder else (None, None)
    for mq, cid in _allocated_elsewhere(view).items():
        out[mq] = (cid, False)
    return out


def _own_subscription(view: GroupView, owner: str | None, topic: str) -> Subscription | None:
    """``owner``'s own subscription of ``topic`` (its running info), when it reports one."""
    info = view.running_infos.get(owner) if owner is not None else None
    return next((s for s in info.subscriptions if s.topic == topic), None) if info is not None else None


def retry_deliveries(view: GroupView) -> dict[MessageQueue, int]:
    """Retry queue → the most deliveries among its copies read back (:attr:`GroupView.retry_samples`),
    counting only copies that may still be delivered (up to the group's maximum, else the broker's
    default): one revived after its last delivery goes to the DLQ when popped."""
    limit = view.max_deliveries if view.max_deliveries is not None else DEFAULT_MAX_DELIVERIES
    out: dict[MessageQueue, int] = {}
    for mq, sample in view.retry_samples.items():
        deliveries = [m.reconsume_times + 1 for m in sample.messages if m.reconsume_times + 1 <= limit]
        out[mq] = max(deliveries, default=0)
    return out


def group_rows(
    ts_ms: int,
    view: GroupView,
    *,
    cluster_of: Mapping[str, str],
    newest: Mapping[MessageQueue, TopicOffset],
    previous: Iterable[MessageQueue] = (),
) -> list[QueueSnapshot]:
    """The rows of one group in one round, sorted by queue.

    ``cluster_of`` maps a broker name to its cluster; ``newest`` holds the topic offsets read
    this round (their max offset stands in for a queue the broker's consume stats did not list,
    their store time fills ``broker_last_ts``); ``previous`` is the group's queues of the
    previous round, so a failed broker's queues are still listed when its routes are not.
    """
    failed = view.failed_brokers
    owned = owners(view)
    model = view.message_model
    default_cluster = next(iter(sorted(set(cluster_of.values()))), "")
    dlq = {o.queue: o for o in view.dlq}
    pop = view.pop if view.consumption is not None else None
    most = view.max_deliveries
    delivered = retry_deliveries(view)

    def base(mq: MessageQueue) -> QueueSnapshot:
        owner, subscribed = owned.get(mq, (None, None))
        topic_offset = newest.get(mq) or dlq.get(mq)
        stored = view.broker_subscriptions.get(mq.broker_name, {}).get(mq.topic)
        own = _own_subscription(view, owner, mq.topic)
        return QueueSnapshot(
            ts_ms, cluster_of.get(mq.broker_name, default_cluster), view.group, mq.topic,
            mq.broker_name, mq.queue_id,
            broker_last_ms=topic_offset.newest_store_ms if topic_offset else None,
            owner=owner, owner_subscribed=subscribed, message_model=model,
            expression=stored.expression if stored else None,
            expression_type=stored.expression_type if stored else None,
            expression_version=stored.sub_version if stored else None,
            owner_expression=own.expression if own else None,
            owner_expression_type=own.expression_type if own else None,
            owner_expression_version=own.sub_version if own else None,
            pop=pop, max_deliveries=most, retry_deliveries=delivered.get(mq),
        )

    rows: dict[MessageQueue, QueueSnapshot] = {}
    for p in view.progress:
        if p.queue.broker_name in failed:
            continue
        rows[p.queue] = replace(
            base(p.queue), broker_offset=p.broker_offset, consumer_offset=p.consumer_offset,
            pull_offset=p.pull_offset, last_consumed_ms=p.last_consumed_ms,
        )
    # Queues the routes (or the DLQ) name but the consume stats did not list: the broker has no
    # committed offset of the group for them (or filters their topic out), so only the broker
    # side is known.
    for mq in [*view.known_queues(), *dlq]:
        if mq in rows or mq.broker_name in failed:
            continue
        known = newest.get(mq) or dlq.get(mq)
        rows[mq] = replace(base(mq), broker_offset=known.max_offset if known else None)
    for broker, error in failed.items():
        queues = {mq for mq in [*view.known_queues(), *previous, *(p.queue for p in view.progress)]
                  if mq.broker_name == broker}
        for mq in queues:
            rows[mq] = replace(base(mq), broker_last_ms=None, error=f"{broker}: {error}")
    # A broker that answered the group but not its dead-letter offsets: the DLQ's queues there are
    # placeholders (those of the previous round, else queue 0, the one queue a broker gives a
    # dead-letter topic), so that a reader never takes the DLQ for absent (not created yet) then.
    dlq_topic = DLQ_PREFIX + view.group
    for key, error in view.errors.items():
        broker = key.removeprefix("dlq:")
        if broker == key or broker in failed:
            continue
        before = {mq for mq in previous if mq.topic == dlq_topic and mq.broker_name == broker}
        for mq in before or {MessageQueue(dlq_topic, broker, 0)}:
            rows[mq] = replace(base(mq), broker_last_ms=None, error=f"{broker}: {error}")
    return [rows[mq] for mq in sorted(rows)]


def failed_group_rows(
    ts_ms: int, group: str, error: errors.RmqctlError, previous: Iterable[QueueSnapshot]
) -> list[QueueSnapshot]:
    """Placeholders for a group that could not be read at all this round: its queues (and
    owners, model) as the previous round saw them, offsets null, ``error`` set."""
    return [
        QueueSnapshot(
            ts_ms, row.cluster, group, row.topic, row.broker, row.queue_id,
            owner=row.owner, owner_subscribed=row.owner_subscribed,
            message_model=row.message_model, error=str(error),
            expression=row.expression, expression_type=row.expression_type,
            expression_version=row.expression_version, owner_expression=row.owner_expression,
            owner_expression_type=row.owner_expression_type,
            owner_expression_version=row.owner_expression_version,
            pop=row.pop, max_deliveries=row.max_deliveries,
        )
        for row in sorted(previous, key=lambda r: r.queue)
    ]
