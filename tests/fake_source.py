"""An in-memory :class:`~rmqctl.source.ClusterSource` for front-end tests (CLI, TUI, exporter).

It holds model objects and answers from them; a test changes what the next call returns by
replacing a view (``set_view``) or by making a group or the whole source fail (``fail``). Every
call is counted so tests can wait for a poll to have happened.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace

from rmqctl import errors
from rmqctl.clock import Clock
from rmqctl.model import (
    BrokerData,
    BrokerRuntime,
    ClusterInfo,
    GroupSummary,
    GroupView,
    MessageQueue,
    QueueData,
    TopicRoute,
    TopicStats,
)
from rmqctl.source import Opened, Partial


class FakeClock:
    """A clock that moves only when slept on (or when a test calls :meth:`advance`)."""

    def __init__(self, start: float = 1_704_067_200.0) -> None:
        self.t = start

    def now(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds

    async def sleep(self, seconds: float) -> None:
        self.t += seconds
        await asyncio.sleep(0)


@dataclass
class FakeSource:
    """Answers from ``views`` (by group) and a one-broker cluster unless told otherwise."""

    views: dict[str, GroupView] = field(default_factory=dict)
    cluster_info: ClusterInfo = field(default_factory=lambda: ClusterInfo(
        brokers={"broker-a": BrokerData("broker-a", "DefaultCluster", {0: "127.0.0.1:10911"})},
        clusters={"DefaultCluster": ("broker-a",)},
    ))
    routes: dict[str, TopicRoute] = field(default_factory=dict)
    stats: dict[str, TopicStats] = field(default_factory=dict)
    #: group (or ``"*"`` for every call) → error raised instead of answering
    failures: dict[str, errors.RmqctlError] = field(default_factory=dict)
    #: per-broker errors added to every multi-broker answer
    broker_errors: dict[str, errors.RmqctlError] = field(default_factory=dict)
    clock: Clock = field(default_factory=lambda: FakeClock())
    calls: int = 0
    closed: bool = False

    def set_view(self, view: GroupView) -> None:
        self.views[view.group] = view

    def fail(self, key: str, error: errors.RmqctlError | None) -> None:
        if error is None:
            self.failures.pop(key, None)
        else:
            self.failures[key] = error

    def _check(self, key: str | None = None) -> None:
        self.calls += 1
        if "*" in self.failures:
            raise self.failures["*"]
        if key is not None and key in self.failures:
            raise self.failures[key]

    async def cluster(self) -> ClusterInfo:
        self._check()
        return self.cluster_info

    def sharing(self) -> AbstractContextManager[None]:
        return contextlib.nullcontext()

    async def broker_runtimes(self, info: ClusterInfo | None = None) -> Partial[list[BrokerRuntime]]:
        self._check()
        info = info or self.cluster_info
        runtimes = [BrokerRuntime(b.broker_name, bid, addr, b.cluster, {})
                    for b in info.brokers.values() for bid, addr in sorted(b.addrs.items())]
        return Partial(runtimes, dict(self.broker_errors))

    async def topics(self) -> list[str]:
        self._check()
        names = set(self.routes)
        for view in self.views.values():
            names.update(view.topic_queues)
        return sorted(names)

    async def topic_types(self) -> Partial[dict[str, str]]:
        """No topic declares a message type here: ``topic list`` types every topic by its name."""
        self._check()
        return Partial({})

    async def topic_route(self, topic: str) -> TopicRoute:
        self._check()
        if topic in self.routes:
            return self.routes[topic]
        for view in self.views.values():
            queues = view.topic_queues.get(topic)
            if queues:
                brokers = sorted({q.broker_name for q in queues})
                datas = tuple(
                    QueueData(b, sum(1 for q in queues if q.broker_name == b),
                              sum(1 for q in queues if q.broker_name == b), 6)
                    for b in brokers)
                return TopicRoute(topic, datas, tuple(self.cluster_info.brokers[b] for b in brokers
                                                      if b in self.cluster_info.brokers))
        raise errors.NotFound(f"topic {topic!r} does not exist")

    async def topic_status(self, topic: str) -> Partial[TopicStats]:
        self._check()
        if topic not in self.stats:
            raise errors.NotFound(f"topic {topic!r} does not exist")
        return Partial(self.stats[topic], dict(self.broker_errors))

    async def groups(self, *, include_system: bool = False) -> Partial[list[str]]:
        self._check()
        return Partial(sorted(self.views), dict(self.broker_errors))

    async def group_summaries(self, *, include_system: bool = False) -> Partial[list[GroupSummary]]:
        self._check()
        rows = [GroupSummary(g, len(v.client_ids), v.consume_type, v.message_model, None, v.total_diff)
                for g, v in sorted(self.views.items())]
        return Partial(rows, dict(self.broker_errors))

    async def sample_messages(self, view: GroupView, topics: Iterable[str]) -> GroupView:
        return view  # like a back end that cannot read messages

    async def oldest_unconsumed(self, view: GroupView, *, concurrency: int = 16) -> dict[MessageQueue, int]:
        return {}  # like a back end that cannot read messages

    async def group_view(self, group: str, *, running_info: bool = True, serial: bool = False) -> GroupView:
        self._check(group)
        if group not in self.views:
            raise errors.NotFound(f"consumer group {group!r} not found on any broker")
        view = self.views[group]
        if self.broker_errors:
            view = replace(view, errors={**view.errors, **self.broker_errors})
        return view

    async def close(self) -> None:
        self.closed = True


def opened(source: FakeSource, clock: Clock | None = None, label: str = "fake cluster") -> Opened:
    """``source`` as :func:`rmqctl.connect.open_source` would hand it out."""
    return Opened(source, label, clock or FakeClock())


def views_by_group(views: Sequence[GroupView] | Mapping[str, GroupView]) -> dict[str, GroupView]:
    items = views.values() if isinstance(views, Mapping) else views
    return {v.group: v for v in items}
