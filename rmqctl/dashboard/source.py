"""A :class:`~rmqctl.source.ClusterSource` that reads a cluster through rocketmq-dashboard's REST API.

For operators who may reach only the dashboard (name server and broker ports firewalled). Each
method maps to the dashboard endpoints that carry the same facts the native protocol does, and
returns model objects only. What the dashboard cannot supply is never invented: a
:class:`~rmqctl.model.GroupView` lists it in ``unavailable`` (field → why) and leaves the value
empty (``pull_offset`` None), so renderers show "unavailable" and the doctor skips checks that need it.

Errors are built as :class:`~rmqctl.errors.RmqctlError` and turned into the strings today's
``Partial.errors`` holds in exactly one place, :func:`error_entry`.

Must not import the CLI, the TUI or pyspark; httpx only through :mod:`rmqctl.dashboard.client`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, TypeVar

from rmqctl import errors
from rmqctl.clock import Clock, SystemClock
from rmqctl.dashboard import wire
from rmqctl.dashboard.client import DashboardClient
from rmqctl.groupview import assemble_view, merge_connections
from rmqctl.model import (
    DLQ_PREFIX,
    RETRY_PREFIX,
    SYSTEM_GROUPS,
    BrokerRuntime,
    ClusterInfo,
    ConsumerConnection,
    ConsumerRunningInfo,
    GroupSummary,
    GroupView,
    MessageQueue,
    QueueProgress,
    TopicOffset,
    TopicRoute,
    TopicStats,
)
from rmqctl.source import Partial

T = TypeVar("T")

#: notes for what no dashboard generation supplies
NO_PULL_OFFSET = ("the dashboard's per-queue stats (QueueStatInfo) carry no pull offset, "
                  "so inflight cannot be computed through it")
ONE_BROKER_ONLY = ("dashboard 1.x reports the connections and stored subscriptions of one broker only "
                   "(no per-broker address parameter)")
#: the 2.x group list is a cache the dashboard builds on first use; callers racing it get this
CACHE_BUSY = "Cache is being built"
NO_PERMISSION = "no permission"
TOPIC_NOT_EXIST = 17
CONSUMER_NOT_ONLINE = 206


def error_entry(error: errors.RmqctlError) -> errors.RmqctlError:
    """The one place an error becomes a ``Partial.errors`` / ``GroupView.errors`` value."""
    return error


class DashboardSource:
    """A cluster seen through one dashboard (one HTTP client for the whole command)."""

    def __init__(self, client: DashboardClient, clock: Clock | None = None) -> None:
        self.client = client
        self.clock: Clock = clock or SystemClock()
        self.description = f"dashboard {client.url}"
        self._cluster: tuple[ClusterInfo, dict[str, dict[int, dict[str, str]]]] | None = None

    async def close(self) -> None:
        await self.client.close()

    @property
    def _v2(self) -> bool:
        return self.client.generation is None or self.client.generation.v2

    # -- cluster and topics ------------------------------------------------------------------

    async def _cluster_list(self) -> tuple[ClusterInfo, dict[str, dict[int, dict[str, str]]]]:
        if self._cluster is None:
            self._cluster = wire.cluster_list(await self.client.get("/cluster/list.query"))
        return self._cluster

    async def cluster(self) -> ClusterInfo:
        return (await self._cluster_list())[0]

    async def masters(self) -> dict[str, str]:
        masters = (await self.cluster()).masters()
        if not masters:
            raise errors.ConnectionError("the dashboard's name server lists no master broker",
                                         hint="is any broker registered?")
        return masters

    async def broker_runtimes(self, info: ClusterInfo | None = None) -> Partial[list[BrokerRuntime]]:
        listed, tables = await self._cluster_list()
        info = info or listed
        runtimes = wire.broker_runtimes(info, tables)
        have = {(r.broker_name, r.broker_id) for r in runtimes}
        failures = {
            f"{name}#{bid}": error_entry(errors.ConnectionError(f"{addr}: the dashboard has no runtime info"))
            for name, data in sorted(info.brokers.items()) for bid, addr in sorted(data.addrs.items())
            if (name, bid) not in have
        }
        return Partial(runtimes, failures)

    async def topics(self) -> list[str]:
        # skipSysProcess=true: 2.x would otherwise rename system topics to "%SYS%<name>"
        return wire.topic_list(await self.client.get("/topic/list.query", {"skipSysProcess": "true"}))

    async def topic_route(self, topic: str) -> TopicRoute:
        try:
            return wire.topic_route(topic, await self.client.get("/topic/route.query", {"topic": topic}))
        except wire.DashboardRefused as exc:
            if exc.remote_code == TOPIC_NOT_EXIST:
                raise errors.NotFound(f"topic {topic!r} does not exist") from exc
            raise

    async def topic_status(self, topic: str) -> Partial[TopicStats]:
        await self.topic_route(topic)  # NotFound like the native source, before any stats call
        return Partial(wire.topic_stats(topic, await self.client.get("/topic/stats.query", {"topic": topic})))

    # -- groups ------------------------------------------------------------------------------

    async def _group_list(self) -> list[Any]:
        if not self._v2:
            return wire.seq(await self.client.get("/consumer/groupList.query"), "group list")
        # group.refresh.all rebuilds the 2.x cache, so new groups and current lag show up (what the
        # UI's refresh button does); a concurrent rebuild answers "Cache is being built"
        delay = 0.2
        path = "/consumer/group.refresh.all"
        while True:
            try:
                return wire.seq(await self.client.get(path), "group list")
            except wire.DashboardRefused as exc:
                if NO_PERMISSION in (exc.remark or "") and path != "/consumer/groupList.query":
                    # normal (non-admin) users may only call *.query paths: read the cache as is
                    path = "/consumer/groupList.query"
                    continue
                if CACHE_BUSY not in (exc.remark or ""):
                    raise
            await asyncio.sleep(delay)  # bounded by the command's deadline inside client.get
            delay = min(delay * 2, 2.0)

    async def group_summaries(self, *, include_system: bool = False) -> Partial[list[GroupSummary]]:
        entries = await self._group_list()
        summaries: dict[str, GroupSummary] = {}
        for entry in entries:
            summary = wire.group_summary(entry)
            if not include_system and (wire.is_system_summary(entry) or summary.group in SYSTEM_GROUPS):
                continue
            summaries[summary.group] = summary
        failures: dict[str, errors.RmqctlError] = {}
        # groups known only by their retry topic (config deleted, offsets kept): the native
        # source lists them too
        try:
            extra = [t[len(RETRY_PREFIX):] for t in await self.topics() if t.startswith(RETRY_PREFIX)]
        except errors.RmqctlError as exc:
            failures["topics"] = error_entry(exc)
            extra = []
        extra = [g for g in extra if g not in summaries and (include_system or g not in SYSTEM_GROUPS)]
        found, more = await self._fan_out({g: g for g in extra}, lambda g: self.client.get(
            "/consumer/group.query", {"consumerGroup": g}))
        for name, doc in found.items():
            summaries[name] = wire.group_summary({**wire.obj(doc, "GroupConsumeInfo"), "group": name})
        failures.update({f"group:{g}": e for g, e in more.items()})
        return Partial([summaries[g] for g in sorted(summaries)], failures)

    async def groups(self, *, include_system: bool = False) -> Partial[list[str]]:
        listed = await self.group_summaries(include_system=include_system)
        return Partial([s.group for s in listed.value], listed.errors)

    async def _fan_out(self, targets: Mapping[str, str], fn: Callable[[str], Awaitable[T]]
                       ) -> tuple[dict[str, T], dict[str, errors.RmqctlError]]:
        """``fn(value)`` for every ``name → value`` (the client's semaphore bounds concurrency)."""

        async def one(name: str, value: str) -> tuple[str, T | None, errors.RmqctlError | None]:
            try:
                return name, await fn(value), None
            except errors.TimeoutError:
                raise  # the command's deadline passed: nothing else will answer either
            except errors.ConfigError:
                raise  # a failed re-login ends the command
            except errors.RmqctlError as exc:
                return name, None, exc

        results: dict[str, T] = {}
        failures: dict[str, errors.RmqctlError] = {}
        for name, value, error in await asyncio.gather(*(one(n, v) for n, v in targets.items())):
            if error is not None:
                failures[name] = error_entry(error)
            else:
                results[name] = value  # type: ignore[assignment]
        return results, failures

    async def _connection(self, group: str, addr: str | None) -> ConsumerConnection | None:
        params = {"consumerGroup": group}
        if addr:
            params["address"] = addr
        try:
            return wire.consumer_connection(await self.client.get("/consumer/consumerConnection.query", params))
        except wire.DashboardRefused as exc:
            # no live channel of the group on this broker (206), or, from 1.x, which looks up the
            # group's retry topic first, no such topic (17): the group is offline, not failing
            if exc.remote_code in (CONSUMER_NOT_ONLINE, TOPIC_NOT_EXIST):
                return None
            raise

    async def _connections(self, group: str, masters: Mapping[str, str]
                           ) -> tuple[dict[str, ConsumerConnection], dict[str, errors.RmqctlError]]:
        if self._v2:
            found, failures = await self._fan_out(masters, lambda addr: self._connection(group, addr))
            return {b: c for b, c in found.items() if c is not None}, failures
        # 1.x asks the first broker of %RETRY%<group>'s route itself; name the broker it asked
        broker = next(iter(sorted(masters)))
        with contextlib.suppress(errors.RmqctlError):
            route = await self.topic_route(RETRY_PREFIX + group)
            broker = next((b.broker_name for b in route.broker_datas if b.broker_name in masters), broker)
        try:
            conn = await self._connection(group, None)
        except errors.RmqctlError as exc:
            if isinstance(exc, (errors.TimeoutError, errors.ConfigError)):
                raise
            return {}, {broker: error_entry(exc)}
        return ({broker: conn} if conn else {}), {}

    async def _progress(self, group: str, masters: Mapping[str, str]
                        ) -> tuple[list[QueueProgress], dict[str, errors.RmqctlError]]:
        path = "/consumer/queryTopicByConsumer.query"
        if self._v2:
            # one call per broker, so one broker's failure leaves the others' rows
            found, failures = await self._fan_out(
                masters, lambda addr: self.client.get(path, {"consumerGroup": group, "address": addr}))
            rows = [row for data in found.values() for row in wire.queue_progress(data)]
            return sorted(rows, key=lambda r: r.queue), failures
        try:
            return wire.queue_progress(await self.client.get(path, {"consumerGroup": group})), {}
        except errors.RmqctlError as exc:
            if isinstance(exc, (errors.TimeoutError, errors.ConfigError)):
                raise
            return [], {"progress": error_entry(exc)}

    async def _running_info(self, group: str, client_id: str) -> ConsumerRunningInfo:
        data = await self.client.get("/consumer/consumerRunningInfo.query",
                                     {"consumerGroup": group, "clientId": client_id, "jstack": "false"})
        return wire.consumer_running_info(client_id, data)

    async def _group_exists(self, group: str) -> bool:
        configs = await self.client.get("/consumer/examineSubscriptionGroupConfig.query", {"consumerGroup": group})
        return bool(wire.seq(configs, "ConsumerConfigInfo list"))

    async def _routes(self, topics: list[str]) -> tuple[dict[str, TopicRoute], dict[str, errors.RmqctlError]]:
        async def route_or_none(topic: str) -> TopicRoute | None:
            try:
                return await self.topic_route(topic)
            except errors.NotFound:
                return None

        found, failures = await self._fan_out({t: t for t in topics}, route_or_none)
        return {t: r for t, r in found.items() if r is not None}, {f"route:{t}": e for t, e in failures.items()}

    async def group_view(self, group: str, *, running_info: bool = True) -> GroupView:
        masters = await self.masters()
        (conns_by_broker, conn_failures), (progress, progress_failures) = await asyncio.gather(
            self._connections(group, masters), self._progress(group, masters))
        failures: dict[str, errors.RmqctlError] = {**progress_failures, **conn_failures}
        if masters and all(b in failures for b in masters):
            detail = "; ".join(f"{b}: {failures[b]}" for b in masters)
            raise errors.ConnectionError(f"no broker answered the dashboard for group {group!r}: {detail}")

        connections, _, duplicates = merge_connections(conns_by_broker, {})

        if not connections and not progress and not failures and not await self._group_exists(group):
            raise errors.NotFound(f"consumer group {group!r} not found on any broker",
                                  hint="list groups with: rmqctl group list")

        infos: dict[str, ConsumerRunningInfo] = {}
        if running_info and connections:
            found, info_failures = await self._fan_out({c: c for c in sorted(connections)},
                                                       lambda cid: self._running_info(group, cid))
            infos = dict(sorted(found.items()))
            failures.update({f"client:{cid}": e for cid, e in info_failures.items()})

        # the owner is whoever reports holding the queue, as the native source decides it; the
        # dashboard's clientInfo is only a fallback when running infos were not asked for
        owners: dict[MessageQueue, str] = {}
        for cid in sorted(infos):
            for mq, pq in infos[cid].mq_table.items():
                if not pq.dropped:
                    owners.setdefault(mq, cid)
        if running_info:
            progress = [QueueProgress(p.queue, p.broker_offset, p.consumer_offset, None, p.last_timestamp,
                                      owners.get(p.queue)) for p in progress]

        topics: set[str] = set()
        for cc in conns_by_broker.values():
            topics.update(cc.subscriptions)
        for ri in infos.values():
            topics.update(s.topic for s in ri.subscriptions)
        dlq_topic = DLQ_PREFIX + group
        routes, route_failures = await self._routes([*sorted(topics), dlq_topic])
        failures.update(route_failures)
        dlq: tuple[TopicOffset, ...] = ()
        if dlq_topic in routes:
            try:
                dlq = wire.topic_stats(dlq_topic, await self.client.get("/topic/stats.query",
                                                                        {"topic": dlq_topic})).offsets
            except (errors.ProtocolError, wire.DashboardRefused) as exc:
                failures["dlq"] = error_entry(exc)

        unavailable = {"pull_offset": NO_PULL_OFFSET, "inflight": NO_PULL_OFFSET}
        if not self._v2 and len(masters) > 1:
            unavailable["broker_subscriptions"] = ONE_BROKER_ONLY
            unavailable["duplicate_clients"] = ONE_BROKER_ONLY

        return assemble_view(
            group, conns_by_broker, connections, duplicates, running_infos=infos, progress=tuple(progress),
            topic_queues={t: tuple(r.read_queues()) for t, r in sorted(routes.items()) if t != dlq_topic},
            dlq=dlq, failures=failures, unavailable=unavailable, sampled_at=int(self.clock.now() * 1000),
        )


@contextlib.asynccontextmanager
async def open_dashboard_source(url: str, *, username: str | None, password: str | None,
                                timeout: float) -> AsyncIterator[DashboardSource]:
    """A logged-in :class:`DashboardSource` for one command; ``timeout`` bounds the whole command."""
    client = DashboardClient(url, username=username, password=password, timeout=timeout)
    source = DashboardSource(client)
    try:
        await client.open()
        yield source
    finally:
        await source.close()
