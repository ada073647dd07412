"""An in-memory :class:`~rmqctl.source.ClusterSource` for tests: hand-built group views.

Faking at our own seam: the TUI, the snapshot exporter and the Spark end-to-end test read this
exactly as they read a cluster. The data can change between polls (:meth:`FakeSource.set_views`),
and a poll can be made to fail (:attr:`FakeSource.fail_with`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from rmqctl import errors
from rmqctl.model import (
    BrokerData,
    BrokerRuntime,
    ClientConnection,
    ClusterInfo,
    ConsumerRunningInfo,
    GroupSummary,
    GroupView,
    MessageQueue,
    ProcessQueueInfo,
    QueueProgress,
    Subscription,
    TopicRoute,
    TopicStats,
    parse_tag_expression,
)
from rmqctl.source import Partial

AVG = "org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely@1b2c"


def conn(cid: str) -> ClientConnection:
    return ClientConnection(cid, cid.split("@")[0] + ":5000", "JAVA", 479)


def running_info(cid: str, subs: Iterable[Subscription], held: Iterable[MessageQueue],
                 model: str = "CLUSTERING") -> ConsumerRunningInfo:
    props = {"PROP_CONSUME_TYPE": "CONSUME_PASSIVELY", "messageModel": model,
             "allocateMessageQueueStrategy": AVG}
    return ConsumerRunningInfo(cid, props, tuple(subs), {mq: ProcessQueueInfo() for mq in held})


def make_view(
    group: str,
    offsets: Mapping[MessageQueue, tuple[int, int]],
    held: Mapping[str, Iterable[MessageQueue]],
    *,
    sampled_at: int,
    topic: str = "TopicTest",
    model: str = "CLUSTERING",
    pull: Mapping[MessageQueue, int] | None = None,
    errors_: Mapping[str, str] | None = None,
) -> GroupView:
    """A group whose clients ``held`` subscribe ``topic`` with ``*``.

    ``offsets`` maps each queue to (broker offset, consumer offset); the owner of each progress
    row is the client that holds it (``None`` when nobody does).
    """
    sub = parse_tag_expression(topic, "*")
    owner_of = {mq: cid for cid, mqs in sorted(held.items()) for mq in mqs}
    progress = tuple(
        QueueProgress(mq, bo, co, (pull or {}).get(mq), 1_700_000_000_000 if co else 0,
                      owner_of.get(mq))
        for mq, (bo, co) in sorted(offsets.items())
    )
    topic_queues = {topic: tuple(sorted(mq for mq in offsets if mq.topic == topic))}
    return GroupView(
        group=group,
        connections=tuple(conn(cid) for cid in sorted(held)),
        broker_subscriptions={"broker-a": {topic: sub}},
        running_infos={cid: running_info(cid, [sub], mqs, model)
                       for cid, mqs in sorted(held.items())},
        progress=progress,
        consume_type="CONSUME_PASSIVELY",
        message_model=model,
        topic_queues=topic_queues,
        sampled_at=sampled_at,
        errors=dict(errors_ or {}),
    )


def queues(topic: str, n: int, broker: str = "broker-a") -> list[MessageQueue]:
    return [MessageQueue(topic, broker, i) for i in range(n)]


class FakeSource:
    """Serves the current ``views``; counts calls; raises ``fail_with`` while it is set."""

    description = "fake source"

    def __init__(self, views: Iterable[GroupView], *, cluster_name: str = "DefaultCluster") -> None:
        self.views: dict[str, GroupView] = {}
        self.set_views(views)
        self.cluster_name = cluster_name
        self.fail_with: Exception | None = None
        self.calls: list[str] = []
        self.closed = False

    def set_views(self, views: Iterable[GroupView]) -> None:
        self.views = {v.group: v for v in views}

    def _check(self, call: str) -> None:
        self.calls.append(call)
        if self.fail_with is not None:
            raise self.fail_with

    async def cluster(self) -> ClusterInfo:
        self._check("cluster")
        brokers = sorted({p.queue.broker_name for v in self.views.values() for p in v.progress})
        return ClusterInfo(
            {b: BrokerData(b, self.cluster_name, {0: "127.0.0.1:10911"}) for b in brokers},
            {self.cluster_name: tuple(brokers)},
        )

    async def broker_runtimes(self) -> Partial[list[BrokerRuntime]]:
        self._check("broker_runtimes")
        return Partial([])

    async def topics(self) -> list[str]:
        self._check("topics")
        return sorted({p.queue.topic for v in self.views.values() for p in v.progress})

    async def topic_route(self, topic: str) -> TopicRoute:
        self._check(f"topic_route:{topic}")
        raise errors.NotFound(f"topic {topic!r} does not exist")

    async def topic_status(self, topic: str) -> Partial[TopicStats]:
        self._check(f"topic_status:{topic}")
        raise errors.NotFound(f"topic {topic!r} does not exist")

    async def groups(self, *, include_system: bool = False) -> Partial[list[str]]:
        self._check("groups")
        return Partial(sorted(self.views))

    async def group_summaries(self, *, include_system: bool = False) -> Partial[list[GroupSummary]]:
        self._check("group_summaries")
        return Partial([
            GroupSummary(v.group, len(v.client_ids), v.consume_type, v.message_model, "V5_3_3",
                         v.total_diff)
            for _, v in sorted(self.views.items())
        ])

    async def group_view(self, group: str, *, running_info: bool = True) -> GroupView:
        self._check(f"group_view:{group}")
        try:
            return self.views[group]
        except KeyError:
            raise errors.NotFound(f"consumer group {group!r} does not exist") from None

    async def close(self) -> None:
        self.closed = True
