"""The read API every front end uses: one :class:`ClusterSource` protocol, several back ends.

A source answers with model objects only. Operations that span brokers return their data plus
a per-broker error mapping (:class:`Partial`), so a dead broker never hides the others' rows and
never vanishes silently. :class:`RemotingSource` reads a cluster (real or emulated) over the
native protocol; it is the first implementation. The direction is source → groupview →
remoting: the group view is assembled from :class:`~rmqctl.groupview.BrokerReads`, which the
remoting client implements.

Must not import the CLI, the TUI or pyspark.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from rmqctl import errors
from rmqctl.clock import Clock, SystemClock
from rmqctl.groupview import build_group_view, sample_tags, summarize_group
from rmqctl.model import (
    RETRY_PREFIX,
    SYSTEM_GROUPS,
    BrokerRuntime,
    ClusterInfo,
    GroupSummary,
    GroupView,
    TopicRoute,
    TopicStats,
)
from rmqctl.remoting.admin import AdminClient

T = TypeVar("T")

@dataclass(frozen=True, slots=True)
class Partial(Generic[T]):
    """A value assembled from several brokers, with the error of each broker that failed."""

    value: T
    errors: Mapping[str, errors.RmqctlError] = field(default_factory=dict)


@runtime_checkable
class ClusterSource(Protocol):
    """What the CLI, doctor and TUI may ask of a cluster."""

    @property
    def clock(self) -> Clock:
        """The source's clock: every "now" a view is stamped with or a watcher waits on."""
        ...

    async def cluster(self) -> ClusterInfo: ...

    async def broker_runtimes(
        self, info: ClusterInfo | None = None
    ) -> Partial[list[BrokerRuntime]]: ...

    async def topics(self) -> list[str]: ...

    async def topic_route(self, topic: str) -> TopicRoute: ...

    async def topic_status(self, topic: str) -> Partial[TopicStats]: ...

    async def groups(self, *, include_system: bool = False) -> Partial[list[str]]: ...

    async def group_summaries(
        self, *, include_system: bool = False
    ) -> Partial[list[GroupSummary]]: ...

    async def group_view(self, group: str, *, running_info: bool = True) -> GroupView: ...

    async def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class Opened:
    """An open source and what goes with it (see :func:`rmqctl.connect.open_source`)."""

    source: ClusterSource
    #: one line naming what is read, for status lines (``namesrv h1:9876``)
    label: str
    #: the clock a watcher polls on: the wall clock, or an embedded emulator's
    clock: Clock
    #: the emulated cluster (an ``EmulatedCluster``) when the source is the embedded emulator
    cluster: Any = None


def _all_failed(failures: Mapping[str, errors.RmqctlError], what: str) -> errors.ConnectionError:
    detail = "; ".join(f"{name}: {err}" for name, err in failures.items())
    return errors.ConnectionError(f"every broker failed {what}: {detail}")


class RemotingSource:
    """A cluster read over the native remoting protocol (a real cluster or the emulator)."""

    def __init__(self, admin: AdminClient, clock: Clock | None = None) -> None:
        self.admin = admin
        self.clock: Clock = clock or SystemClock()

    async def close(self) -> None:
        await self.admin.close()

    async def cluster(self) -> ClusterInfo:
        return await self.admin.cluster_info()

    async def masters(self) -> dict[str, str]:
        masters = (await self.cluster()).masters()
        if not masters:
            raise errors.ConnectionError(
                "the name server lists no master broker", hint="is any broker registered?"
            )
        return masters

    async def broker_runtimes(
        self, info: ClusterInfo | None = None
    ) -> Partial[list[BrokerRuntime]]:
        """Runtime info of every broker (master and slaves) of ``info`` (fetched when not given)."""
        info = info or await self.cluster()
        targets: dict[str, str] = {}
        meta: dict[str, tuple[str, int, str]] = {}
        for cluster_name, broker_name, broker_id, addr in info.broker_addresses():
            key = f"{broker_name}#{broker_id}"
            targets[key] = addr
            meta[key] = (broker_name, broker_id, cluster_name)
        tables, failures = await self.admin.fan_out(targets, self.admin.broker_runtime_info)
        runtimes = [
            BrokerRuntime(meta[k][0], meta[k][1], targets[k], meta[k][2], tables[k])
            for k in targets
            if k in tables
        ]
        return Partial(runtimes, failures)

    async def topics(self) -> list[str]:
        return await self.admin.topic_list()

    async def topic_route(self, topic: str) -> TopicRoute:
        try:
            return await self.admin.topic_route(topic)
        except errors.TopicNotExist as exc:
            raise errors.NotFound(f"topic {topic!r} does not exist") from exc

    async def topic_status(self, topic: str) -> Partial[TopicStats]:
        route = await self.topic_route(topic)
        targets = route.master_addrs()
        results, failures = await self.admin.fan_out(
            targets, lambda addr: self.admin.topic_stats(addr, topic)
        )
        if not results and failures:
            raise _all_failed(failures, f"topic stats of {topic!r}")
        offsets = sorted(
            (o for stats in results.values() for o in stats.offsets), key=lambda o: o.queue
        )
        tps = [s.put_tps for s in results.values() if s.put_tps is not None]
        return Partial(TopicStats(topic, tuple(offsets), sum(tps) if tps else None), failures)

    async def groups(self, *, include_system: bool = False) -> Partial[list[str]]:
        """Every consumer group: retry topics on the name server plus brokers' group configs."""
        names: set[str] = set()
        failures: dict[str, errors.RmqctlError] = {}
        try:
            names.update(
                t[len(RETRY_PREFIX) :] for t in await self.topics() if t.startswith(RETRY_PREFIX)
            )
        except errors.RemoteError as exc:  # enableAllTopicList=false answers "disable"
            failures["namesrv"] = exc
        configs, broker_failures = await self.admin.fan_out(
            await self.masters(), self.admin.subscription_groups
        )
        failures.update(broker_failures)
        for table in configs.values():
            names.update(table)
        if not include_system:
            names -= SYSTEM_GROUPS
        return Partial(sorted(names), failures)

    async def group_summaries(
        self, *, include_system: bool = False
    ) -> Partial[list[GroupSummary]]:
        listed = await self.groups(include_system=include_system)
        masters = await self.masters()
        summaries = await asyncio.gather(
            *(summarize_group(self.admin, masters, group) for group in listed.value)
        )
        failures = dict(listed.errors)
        for summary in summaries:
            if summary.error:
                failures[f"group:{summary.group}"] = errors.RmqctlError(summary.error)
        return Partial(list(summaries), failures)

    async def group_view(self, group: str, *, running_info: bool = True) -> GroupView:
        return await build_group_view(
            self.admin, await self.masters(), group, clock=self.clock, running_info=running_info
        )

    async def sample_messages(self, view: GroupView, topics: list[str]) -> GroupView:
        """``view`` with the recent messages of ``topics`` read back by offset (read-only: pulled
        under the tools group, nothing committed), for counting what each tag went through."""
        return await sample_tags(self.admin, await self.masters(), view, topics)
