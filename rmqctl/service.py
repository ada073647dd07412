"""The cluster service: the one place group views and cluster-wide answers are assembled.

:class:`ClusterService` is the :class:`~rmqctl.source.ClusterSource` every front end reads. It
stands on one :class:`~rmqctl.backends.Backend` (remoting, dashboard, a 5.x proxy) and one
:class:`~rmqctl.clock.Clock`, and writes once what no back end repeats: the fan-out over brokers,
partial results (a broker that fails leaves its name and error, the others' data stays), the
not-found rules, which data the back end's :class:`~rmqctl.backends.Capabilities` leave
unavailable, and the time a view is stamped with (the clock's, never the host's behind it).

A group view joins what mqadmin spreads over four commands: each broker's connections and stored
subscription table, the merged progress of every queue, each client's own running info (relayed
by a broker that holds the client's channel) and the routes of the group's topics.

Imports the back-end protocol, the model, errors, the clock and the fan-out helper: never a back
end's implementation, the CLI, the TUI, the emulator or pyspark.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gc
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import field
from typing import Any, Generic, TypeVar

from rmqctl import errors
from rmqctl.backends import Backend
from rmqctl.clock import Clock, SystemClock
from rmqctl.fanout import bounded, fan_out
from rmqctl.model import (
    DEFAULT_PROXY_REMOTING_PORT,
    DLQ_PREFIX,
    HEARTBEAT_SYNC_GROUP,
    HEARTBEAT_SYNC_TOPIC,
    RETRY_PREFIX,
    SYSTEM_GROUPS,
    TRACE_TOPIC,
    BrokerRuntime,
    ClientConnection,
    ClusterInfo,
    ConsumerConnection,
    ConsumerRunningInfo,
    ConsumeStats,
    GroupSummary,
    GroupView,
    Message,
    MessageQueue,
    MessageRef,
    ProcessQueueInfo,
    ProxyClients,
    QueueProgress,
    SampledMessage,
    SubscriptionGroupConfig,
    TagSample,
    TopicOffset,
    TopicRoute,
    TopicStats,
    TraceEvent,
    announced_proxy,
    client_sdk,
    decode_offset_message_id,
    decode_trace_events,
    retry_topic_groups,
    version_desc,
)
from rmqctl.records import dataclass

T = TypeVar("T")

#: seconds a broker's table of group configs read for group views is used again
CONFIG_TABLE_TTL_S = 30.0
#: heartbeat-sync messages read back to find the proxies' remoting addresses
ANNOUNCEMENTS_READ = 64
#: store times of messages kept by (queue, offset) for the lag in seconds, at most
STORE_TIMES_KEPT = 100_000
#: seconds (by the clock) a topic's route read inside :meth:`ClusterService.sharing` serves later
#: scopes: a topic's brokers and queue counts change only when someone changes them
ROUTE_TTL_S = 300.0
#: a proxy that announced itself longer ago than this (ms) is not looked for (a proxy with a
#: client heartbeats every 10 s or so; one without announces nothing and is guessed from its host)
ANNOUNCED_WITHIN_MS = 10 * 60_000

#: messages read back per queue when sampling tags (one pull: the broker answers at most 32)
SAMPLE_PER_QUEUE = 32
#: the most ``doctor --sample`` reads back per queue (``all`` means up to this many)
SAMPLE_MAX_PER_QUEUE = 100_000  # doctor --sample all (its SAMPLE_ALL)
#: messages ``browse`` reads per queue unless told otherwise
BROWSE_LIMIT = 32

#: why a back end's own group list cannot count the backlog of a topic never committed
UNCOMMITTED_NOT_COUNTED = (
    "the back end's group list sums the brokers' consume stats, which leave out a topic the group "
    "never committed an offset for (a listener that hangs before its first commit): total_diff "
    "does not count such a topic's messages")


@dataclass(frozen=True, slots=True)
class Partial(Generic[T]):
    """A value assembled from several brokers, with the error of each broker that failed."""

    value: T
    errors: Mapping[str, errors.RmqctlError] = field(default_factory=dict)
    #: what the back end could not supply for this answer, each with why (``unavailable`` in
    #: the document)
    unavailable: Mapping[str, str] = field(default_factory=dict)


def all_failed(failures: Mapping[str, errors.RmqctlError], message: str) -> errors.RmqctlError:
    """One error for brokers that all failed: a timeout (exit 4) when every one of them timed
    out, a refusal (exit 6) when every one answered with an error code (NO_PERMISSION …), a
    connection error (exit 3) otherwise; ``message`` is followed by each broker's error."""
    detail = "; ".join(f"{name}: {err}" for name, err in failures.items())
    timed_out = bool(failures) and all(isinstance(e, errors.TimeoutError) for e in failures.values())
    if failures and all(isinstance(e, errors.RemoteError) for e in failures.values()):
        # every broker answered, and refused (an ACL says no): exit 6, with what to grant
        hints = {e.hint for e in failures.values() if e.hint}
        return errors.RmqctlError(f"{message}: {detail}", hint=hints.pop() if len(hints) == 1 else None)
    kind = errors.TimeoutError if timed_out else errors.ConnectionError
    return kind(f"{message}: {detail}")


def _joined(
    reads: dict[str, asyncio.Future[T]], key: str, start: Callable[[], Awaitable[T]],
    on_done: Callable[[asyncio.Future[T]], None] | None = None,
) -> Awaitable[T]:
    """The read ``key`` of ``reads`` already on its way on this event loop, or a new one from
    ``start`` (``on_done`` called when it ends): many views wait for one request. Awaited through a
    shield, so that one waiter's cancellation does not cancel the read for the others."""
    read = reads.get(key)
    if read is None or read.get_loop() is not asyncio.get_running_loop():
        read = reads[key] = asyncio.ensure_future(start())
        if on_done is not None:
            read.add_done_callback(on_done)
    elif read.done():
        return read  # the answer at hand (a finished read is never cancelled by a waiter)
    return asyncio.shield(read)


class ClusterService:
    """Cluster-wide reads over one back end, stamped with one clock."""

    def __init__(self, backend: Backend, clock: Clock | None = None, *, proxies: Sequence[str] = ()) -> None:
        self.backend = backend
        self._clock: Clock = clock or SystemClock()
        #: 5.x proxies' remoting addresses named by the user (``--proxy``, a context's ``proxy``)
        self.proxies = tuple(dict.fromkeys(proxies))
        #: proxies the brokers revealed, found once per service (address → how)
        self._found_proxies: dict[str, str] | None = None
        #: revealed proxies whose guessed address did not answer once: not asked again
        self._silent_proxies: dict[str, str] = {}
        #: each broker's group configs (address → when read, by the clock, and the table)
        self._config_tables: dict[str, tuple[float, Mapping[str, SubscriptionGroupConfig]]] = {}
        #: each master's release, read once per service (only for a group nobody lists)
        self._versions: dict[str, str] | None = None
        #: 5.5 groups the brokers' configs bind to a LITE topic (group → topic), as the last
        #: group list read them
        self._lite_groups: dict[str, str] = {}
        #: reads of a broker's group configs on their way (address → the read): views that need
        #: the table at the same time wait for one read instead of each asking the broker
        self._config_reads: dict[str, asyncio.Future[Mapping[str, SubscriptionGroupConfig]]] = {}
        #: while :meth:`sharing` is open, the reads every view shares, by what they read (the
        #: cluster; each broker's offset table by address) (None: not open)
        self._shared: dict[str, asyncio.Future[Any]] | None = None
        #: routes read inside :meth:`sharing` (topic → when read, by the clock, and the route)
        self._routes_kept: dict[str, tuple[float, TopicRoute]] = {}
        #: (queue, offset) → store time (epoch ms) of the message there, which never changes:
        #: the lag in seconds of a backlog that did not move is not read again (bounded, oldest out)
        self._store_times: OrderedDict[tuple[MessageQueue, int], int] = OrderedDict()

    @property
    def clock(self) -> Clock:
        return self._clock

    async def close(self) -> None:
        await self.backend.close()

    async def _fan_out(
        self, targets: Mapping[str, str], fn: Callable[[str], Awaitable[T]], *, serial: bool = False
    ) -> tuple[dict[str, T], dict[str, errors.RmqctlError]]:
        """:func:`~rmqctl.fanout.fan_out`, except that errors the back end declares fatal end
        the command instead of counting against one target. With ``serial``, one target after
        another in the caller's task."""
        results, failures = await fan_out(targets, fn, limit=1 if serial else None)
        fatal = self.backend.capabilities.fatal
        for error in failures.values():
            if fatal and isinstance(error, fatal):
                raise error
        return results, failures

    # -- the cluster --------------------------------------------------------------------------

    @contextlib.contextmanager
    def sharing(self) -> Iterator[None]:
        """While open, reads that every view repeats are made once and shared: the cluster (its
        brokers and masters; a read that fails is not shared, the next one asks again) and each
        broker's offset table (the topics every group committed; where it fails, each group asks
        for its own). A round over thousands of groups then asks the name server once, not once
        per view. Topic routes read inside serve every scope of the next :data:`ROUTE_TTL_S`
        seconds; outside a scope every read asks."""
        outer = self._shared
        self._shared = {} if outer is None else outer
        try:
            yield
        finally:
            self._shared = outer
            if outer is None:
                now = self._clock.now()
                self._routes_kept = {t: kept for t, kept in self._routes_kept.items() if now - kept[0] < ROUTE_TTL_S}

    async def cluster(self) -> ClusterInfo:
        shared = self._shared
        if shared is None:
            return await self.backend.cluster_info()

        def forget(done: asyncio.Future[ClusterInfo]) -> None:
            if done.cancelled() or done.exception() is not None:
                if shared.get("cluster") is done:
                    del shared["cluster"]

        cluster: ClusterInfo = await _joined(shared, "cluster", self.backend.cluster_info, forget)
        return cluster

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
        tables, failures = await self._fan_out(targets, self.backend.broker_runtime)
        runtimes = [
            BrokerRuntime(meta[k][0], meta[k][1], targets[k], meta[k][2], tables[k])
            for k in targets
            if k in tables
        ]
        return Partial(runtimes, failures)

    async def topics(self) -> list[str]:
        shared = self._shared
        if shared is None:
            return await self.backend.topic_list()
        # inside a sharing scope the list is read once (a failed read fails the scope's callers)
        listed: list[str] = await _joined(shared, "topic_list", self.backend.topic_list)
        return list(listed)

    async def _listed_topics(self) -> frozenset[str] | None:
        """Inside a sharing scope, every topic the name servers list, read once for the scope,
        when the back end's list is theirs (``lists_every_topic``); None outside a scope, for
        another back end or when the list could not be read."""
        shared = self._shared
        if shared is None or not self.backend.capabilities.lists_every_topic:
            return None

        async def read() -> frozenset[str]:
            return frozenset(await self.topics())

        try:
            names: frozenset[str] = await _joined(shared, "topic_names", read)
        except errors.RmqctlError:
            return None  # each caller asks its own way
        return names

    async def topic_types(self) -> Partial[dict[str, str]]:
        """Each topic's message type as the brokers declare it in their topic configs (one
        GET_ALL_TOPIC_CONFIG per master; upper case, ``NORMAL`` when a config names none). A
        topic that two brokers declare differently keeps the first broker's (by name). What could
        not be read is no error (the topic list itself comes from the name servers): it is named
        in ``unavailable`` (``topic_types``), and ``topic list`` types those topics by name."""
        if not self.backend.capabilities.reads_topic_configs:
            return Partial({}, unavailable={"topic_types": (
                "this source does not read the brokers' topic configs: topics are typed by their names")})
        found, failures = await self._fan_out(await self.masters(), self.backend.topic_message_types)
        declared: dict[str, str] = {}
        for _, table in sorted(found.items()):
            for topic, kind in table.items():
                declared.setdefault(topic, kind)
        if not failures:
            return Partial(declared)
        why = "; ".join(f"{broker}: {error}" for broker, error in sorted(failures.items()))
        return Partial(declared, unavailable={"topic_types": (
            f"the topic configs of a broker could not be read ({why}): its topics are typed by their names")})

    async def topic_route(self, topic: str) -> TopicRoute:
        try:
            return await self.backend.topic_route(topic)
        except errors.TopicNotExist as exc:
            raise errors.NotFound(f"topic {topic!r} does not exist") from exc

    async def topic_status(self, topic: str) -> Partial[TopicStats]:
        route = await self.topic_route(topic)
        results, failures = await self._fan_out(
            route.master_addrs(), lambda addr: self.backend.topic_stats(addr, topic)
        )
        if not results and failures:
            raise all_failed(failures, f"every broker failed topic stats of {topic!r}")
        offsets = sorted(
            (o for stats in results.values() for o in stats.offsets), key=lambda o: o.queue
        )
        tps = [s.put_tps for s in results.values() if s.put_tps is not None]
        return Partial(TopicStats(topic, tuple(offsets), sum(tps) if tps else None), failures)

    # -- groups -------------------------------------------------------------------------------

    async def groups(self, *, include_system: bool = False) -> Partial[list[str]]:
        """Every consumer group: the back end's own list when it keeps one, else the retry topics
        on the name server plus every broker's group configs."""
        if self.backend.capabilities.lists_groups:
            listed = await self.group_summaries(include_system=include_system)
            return Partial([s.group for s in listed.value], listed.errors)
        names: set[str] = set()
        failures: dict[str, errors.RmqctlError] = {}
        topics: list[str] = []
        try:
            topics = await self.topics()
        except errors.RemoteError as exc:  # enableAllTopicList=false answers "disable"
            failures["namesrv"] = exc
        if self.backend.capabilities.lists_subscription_groups:
            masters = await self.masters()
            read_at = self._clock.now()
            configs, broker_failures = await self._fan_out(masters, self.backend.subscription_groups)
            failures.update(broker_failures)
            # the views that follow read their groups' configs from these tables (one read per
            # broker, not one for the list and one for the views)
            for broker, table in configs.items():
                self._config_tables[masters[broker]] = (read_at, table)
            for table in configs.values():
                names.update(table)
            self._lite_groups = {name: cfg.lite_bind_topic for _, table in sorted(configs.items())
                                 for name, cfg in table.items() if cfg.lite_bind_topic}
        names.update(retry_topic_groups(topics, configured=names))
        if not include_system:
            names -= SYSTEM_GROUPS
        return Partial(sorted(names), failures)

    async def group_summaries(
        self, *, include_system: bool = False
    ) -> Partial[list[GroupSummary]]:
        if self.backend.capabilities.lists_groups:
            summaries, failures = await self.backend.group_summaries(include_system=include_system)
            # asking every group's topics and holders would cost a full view per group: say
            # what the list cannot know instead
            return Partial(summaries, failures, {"uncommitted_topics": UNCOMMITTED_NOT_COUNTED})
        with collector_paused(), self.sharing():
            return await self._group_summaries(include_system=include_system)

    async def _group_summaries(self, *, include_system: bool) -> Partial[list[GroupSummary]]:
        # the list of groups (each broker's group configs) and the reads that need only the
        # brokers go out together: the cluster is read once (shared) and neither waits for the other
        listing = asyncio.ensure_future(self.groups(include_system=include_system))
        try:
            masters = await self.masters()
        except errors.RmqctlError:
            await asyncio.wait([listing])
            first = None if listing.cancelled() else listing.exception()
            if first is not None:
                raise first from None  # the list's own error, as when the list was read first
            raise
        except BaseException:
            listing.cancel()
            raise
        # the broker-wide consume stats (a broker may take a while to gather them) stay in
        # flight while each group's other reads go out; only its consume stats wait for them
        bulk = self.broker_consume_stats(masters)
        offset_tables = asyncio.ensure_future(self._offset_tables(masters))
        batches: dict[str, asyncio.Future[Sequence[ConsumerConnection | errors.RmqctlError]]] = {}
        try:
            listed = await listing
            # where the back end batches them, every group's connections go out at once too, one
            # pipelined batch per broker beside the broker-wide reads
            if self.backend.capabilities.batches_connections:
                batches = {addr: asyncio.ensure_future(self.backend.consumer_connections(addr, listed.value))
                           for addr in masters.values()}
            tables = await offset_tables
            connections: dict[str, dict[str, ConsumerConnection | errors.RmqctlError]] = {}
            if batches:
                answers = {addr: await read for addr, read in batches.items()}
                connections = {group: {b: answers[addr][i] for b, addr in masters.items()}
                               for i, group in enumerate(listed.value)}
                if bulk:
                    await asyncio.wait(bulk.values())  # so that each group takes its stats as they are
            # groups subscribing one topic share its stats: each broker is asked once per topic
            shared: dict[tuple[str, str], asyncio.Future[TopicStats]] = {}
            rows = await asyncio.gather(
                *(self._summarize_group(masters, group, tables, shared, bulk, connections.get(group))
                  for group in listed.value)
            )
        finally:
            reads: list[asyncio.Future[Any]] = [listing, offset_tables, *bulk.values(), *batches.values()]
            for read in reads:
                read.cancel()  # only still running when something above failed
            await asyncio.gather(*reads, return_exceptions=True)
        failures = dict(listed.errors)
        for summary in rows:
            if summary.error:
                failures[f"group:{summary.group}"] = errors.RmqctlError(summary.error)
        lite = {g: t for g, t in self._lite_groups.items() if g in listed.value}
        if lite:
            # a lite group's offsets live in its lite topics' queues, which consume stats leave out
            rows = [dataclasses.replace(r, total_diff=None) if r.group in lite else r for r in rows]
            bound = ", ".join(f"{g} to {t}" for g, t in sorted(lite.items()))
            return Partial(list(rows), failures, {"lite_topics": (
                f"groups bound to a LITE topic ({bound}) keep their progress per lite topic, in light "
                "message queues rmqctl does not read: their total_diff is unknown")})
        return Partial(list(rows), failures)

    async def _offset_tables(self, masters: Mapping[str, str]) -> dict[str, Mapping[str, frozenset[str]]]:
        """Each broker's groups with the topics they have offsets for, in one read per broker
        where the back end can; a broker whose table could not be read is left out (its groups
        are then asked one by one)."""
        if not (self.backend.capabilities.lists_group_topics and self.backend.capabilities.reads_offset_table):
            return {}
        tables, _ = await self._fan_out(masters, self.backend.offset_topics)
        return tables

    def broker_consume_stats(self, masters: Mapping[str, str]) -> dict[str, asyncio.Future[Mapping[str, ConsumeStats]]]:
        """Every broker's consume stats of many groups, one read per broker started now, by
        address, where the back end can (else none). A group such a read leaves out, or every
        group when it failed, is read alone by :meth:`consume_stats_of`. The caller awaits or
        cancels what it started."""
        if not self.backend.capabilities.broker_consume_stats:
            return {}
        return {addr: asyncio.ensure_future(self.backend.broker_consume_stats(addr)) for addr in masters.values()}

    def consume_stats_of(self, group: str, bulk: Mapping[str, asyncio.Future[Mapping[str, ConsumeStats]]] | None
                         ) -> Callable[[str], Awaitable[ConsumeStats]]:
        """One group's consume stats on a broker (by address): from the broker's read in
        ``bulk`` (:meth:`broker_consume_stats`) where it holds the group, else read alone."""
        backend = self.backend

        async def read(addr: str) -> ConsumeStats:
            pending = (bulk or {}).get(addr)
            found = None
            if pending is not None:
                try:
                    # shielded: one group giving up must not cancel the read the others share
                    found = (await asyncio.shield(pending)).get(group)
                except errors.RmqctlError as exc:
                    fatal = backend.capabilities.fatal
                    if fatal and isinstance(exc, fatal):
                        raise
            return found if found is not None else await backend.consume_stats(addr, group)

        return read

    async def _summarize_group(
        self, masters: Mapping[str, str], group: str,
        tables: Mapping[str, Mapping[str, frozenset[str]]] | None = None,
        shared: dict[tuple[str, str], asyncio.Future[TopicStats]] | None = None,
        bulk: Mapping[str, asyncio.Future[Mapping[str, ConsumeStats]]] | None = None,
        connections: Mapping[str, ConsumerConnection | errors.RmqctlError] | None = None,
    ) -> GroupSummary:
        """One ``group list`` row: connections and total lag, never raising for one bad group.
        ``connections``: each broker's answer to the group's connection list (or its error),
        when it was read already.

        A broker leaves out of consume stats a topic missing from the group's subscription table
        (which flips when clients subscribe different topics); ``group progress`` fills those
        rows from the offset table, queue by queue. That costs too much for every group of a
        list, so the summary asks each broker which topics the group has offsets for (one read,
        alongside the others) and names the ones consume stats left out: its total is then
        partial, never a smaller number passed off as the whole.

        A subscribed topic the group never committed is left out of consume stats for good (and
        of mqadmin's); a listener that hangs before its first commit would read as a total of 0.
        Where the back end reads topic stats and the offset table itself (not a dashboard, whose
        group list is its own), the row adds the backlog of such topics' held queues, as
        ``group progress`` counts them, without assembling the group's whole view."""
        lists_topics = self.backend.capabilities.lists_group_topics

        by_address = {masters[b]: table for b, table in (tables or {}).items() if b in masters}

        async def offset_topics(addr: str) -> list[str]:
            if addr in by_address:
                return sorted(by_address[addr].get(group, ()))
            return await self.backend.topics_by_consumer(addr, group) if lists_topics else []

        try:
            if bulk and all(addr in by_address for addr in masters.values()):
                # the offset tables are here and the broker-wide consume stats on their way: only
                # the connections are asked now; reads that need no request take no task
                topics = {b: sorted(by_address[addr].get(group, ())) for b, addr in masters.items()}
                conns, conn_failures = (self._answered_connections(connections) if connections is not None
                                        else await self._connections(masters, group))
                held = _held_by_bulk(masters, group, bulk)
                stats, stats_failures = held if held is not None else await self._fan_out(
                    masters, self.consume_stats_of(group, bulk))
            else:
                (conns, conn_failures), (stats, stats_failures), (topics, _) = await asyncio.gather(
                    self._connections(masters, group, connections),
                    self._fan_out(masters, self.consume_stats_of(group, bulk)),
                    self._fan_out(masters, offset_topics),
                )
            proxies, proxy_failures = await self._proxy_clients(
                masters, group, discover=not conns and not conn_failures)
        except errors.RmqctlError as exc:
            return GroupSummary(group, 0, None, None, None, 0, error=str(exc))
        left_out = sorted({(b, t) for b, ts in topics.items() if b in stats and b in masters
                           for t in set(ts) - {mq.topic for mq in stats[b].offsets}})
        unlisted = sorted({t for _, t in left_out})
        clients = {c.client_id: c for cc in conns.values() for c in cc.connections}
        add_proxy_clients(clients, proxies)
        cc0 = next(iter(conns.values()), None) or next((p.connection for p in proxies if p.connection), None)
        diff = sum(
            e.broker_offset - e.consumer_offset for s in stats.values() for e in s.offsets.values()
        )
        tps = sum(s.consume_tps for s in stats.values())
        # a gRPC client's listed version is its proxy's, not its own
        version = min((c.version for c in clients.values() if c.sdk != "grpc"), default=None)
        failures: dict[str, errors.RmqctlError] = {**stats_failures, **conn_failures, **proxy_failures}
        caps = self.backend.capabilities
        if left_out and caps.queue_offsets:
            # counted as group progress counts their rows, so both show one total
            left_backlog, left_unknown = await self._left_out_backlog(masters, group, left_out)
            diff += left_backlog
            unlisted = sorted(left_unknown)
        # a subscribed topic the group never committed on a broker: consume stats leave it out
        never = sorted({(b, t) for b, cc in conns.items() if b in stats and b in topics and b in masters
                        for t in cc.subscriptions if t not in topics[b]})
        if never and caps.queue_offsets and lists_topics:
            backlog, unknown = await self._uncommitted_backlog(masters, group, conns, never, shared)
            diff += backlog
            unlisted = sorted(set(unlisted) | unknown)
        return GroupSummary(
            group=group,
            clients=len(clients),
            consume_type=cc0.consume_type if cc0 else None,
            message_model=cc0.message_model if cc0 else None,
            version=version_desc(version) if version is not None else None,
            total_diff=diff,
            consume_tps=tps,
            error="; ".join(f"{b}: {e}" for b, e in failures.items()) or None,
            unknown_diff_topics=tuple(unlisted),
        )

    async def _left_out_backlog(
        self, masters: Mapping[str, str], group: str, left_out: Sequence[tuple[str, str]],
    ) -> tuple[int, set[str]]:
        """The lag of topics the group has committed offsets for that consume stats left out
        (``left_out``: broker and topic) — one absent from the group's subscription table at
        that moment, or one a stopped client left behind — read as ``group progress`` reads
        their ``offset_table`` rows: the broker offset from topic stats, the consumer offset per
        queue from the broker's offset table (a queue without one counts from 0, as consume stats
        show it). Returns the backlog and the topics whose offsets could not be read."""
        backend = self.backend

        async def one(broker: str, topic: str) -> int | None:
            addr = masters[broker]
            try:
                stats = await backend.topic_stats(addr, topic)
                queues = sorted(stats.offsets, key=lambda o: o.queue.queue_id)
                committed = await asyncio.gather(
                    *(backend.query_consumer_offset(addr, group, topic, o.queue.queue_id) for o in queues))
            except errors.TopicNotExist:
                return 0  # a deleted topic: group progress has no row for it either
            except errors.RmqctlError as exc:
                fatal = backend.capabilities.fatal
                if fatal and isinstance(exc, fatal):
                    raise
                return None
            if queues and all(c is None for c in committed):
                return None  # its offsets went away between the two reads: not known
            return sum(o.max_offset - max(0, c if c is not None else 0)
                       for o, c in zip(queues, committed, strict=True))

        results = await asyncio.gather(*(one(b, t) for b, t in left_out))
        unknown = {t for (_, t), n in zip(left_out, results, strict=True) if n is None}
        return sum(n for n in results if n is not None), unknown

    async def _uncommitted_backlog(
        self, masters: Mapping[str, str], group: str, conns: Mapping[str, ConsumerConnection],
        never: Sequence[tuple[str, str]],
        shared: dict[tuple[str, str], asyncio.Future[TopicStats]] | None = None,
    ) -> tuple[int, set[str]]:
        """The lag of subscribed topics the group never committed on a broker (``never``: broker
        and topic), counted as ``group progress`` counts its ``no_commit`` rows, and the topics
        whose lag could not be read (their stats failed, or a client that may hold a queue with
        messages did not answer).

        Cheap first: one topic-stats read per broker and topic. Only when a queue there holds
        messages (a listener hung before its first commit; a healthy client commits even an idle
        queue) are the clients' running infos asked, for which client holds which queue.
        ``shared`` holds one command's topic-stats reads by address and topic, so groups on one
        topic ask each broker once."""

        def stats(address: str, topic: str) -> Awaitable[TopicStats]:
            if shared is None:
                return self.backend.topic_stats(address, topic)
            read = shared.get((address, topic))
            if read is None:
                read = shared[address, topic] = asyncio.ensure_future(self.backend.topic_stats(address, topic))
            return read

        # the shared reads are awaited as they are (no task of their own per group)
        answers = await asyncio.gather(*(stats(masters[b], t) for b, t in never), return_exceptions=True)
        fatal = self.backend.capabilities.fatal
        results: list[TopicStats | errors.RmqctlError] = []
        for answer in answers:
            if isinstance(answer, BaseException) and (
                    not isinstance(answer, errors.RmqctlError) or (fatal and isinstance(answer, fatal))):
                raise answer
            results.append(answer)
        unknown = {t for (_, t), r in zip(never, results, strict=True)
                   if isinstance(r, errors.RmqctlError) and not isinstance(r, errors.TopicNotExist)}
        waiting = [o for r in results if isinstance(r, TopicStats) for o in r.offsets
                   if o.max_offset > o.min_offset]
        if not waiting:
            return 0, unknown
        _, relay, _ = merge_connections(conns, masters)
        infos, failures = await self._running_infos(relay, group)
        owners = _owners(infos)
        backlog = 0
        for o in waiting:
            if o.queue in owners:
                pq = infos[owners[o.queue]].mq_table.get(o.queue)
                backlog += _uncommitted_row(o.queue, owners[o.queue], o.min_offset, o.max_offset, pq).diff
            elif failures:
                unknown.add(o.queue.topic)  # held, perhaps, by a client that did not answer
        return backlog, unknown

    async def group_view(self, group: str, *, running_info: bool = True, serial: bool = False) -> GroupView:
        """Everything about ``group``, stamped with the clock's time; raises NotFound when no
        broker knows the group at all.

        With ``serial``, the brokers are read one after another in the caller's task, for a
        caller that reads many views at once: their reads keep the admin window full all the
        same, and a task per read costs more than overlapping one view's reads gains."""
        masters = await self.masters()
        backend = self.backend

        def read_stats(addr: str) -> Awaitable[ConsumeStats]:
            return backend.consume_stats(addr, group)

        # The consume stats are the slowest read of a real broker. What needs only the
        # connections (each client's running info, relayed through a broker; the routes of the
        # topics the connections name; the DLQ's offsets) goes out while they are on their way.
        stats = None if serial else asyncio.ensure_future(self._fan_out(masters, read_stats))
        try:
            conns_by_broker, conn_failures = await self._connections(masters, group, serial=serial)
            connections, relay, duplicates = merge_connections(conns_by_broker, masters)
            proxies, proxy_failures = await self._proxy_clients(
                masters, group, discover=not connections and not conn_failures)
            add_proxy_clients(connections, proxies)
            listed = [*conns_by_broker.values(), *(p.connection for p in proxies if p.connection)]
            known_topics = sorted({t for cc in listed for t in cc.subscriptions})
            # What a round of many views has mostly read already (the routes kept, the topic list,
            # the offset and config tables) is taken as it is; only what is not at hand is read,
            # all of it at once with the clients' running infos (a view of one group reads it all).
            wanted_topics = bool(connections) and running_info
            routes = self._routes_at_hand(known_topics)
            dlq_part = self._dlq_at_hand(DLQ_PREFIX + group)
            committed_topics = self._offset_topics_at_hand(masters, group, wanted=wanted_topics)
            configs = self._group_configs_at_hand(masters, group)
            infos_read = self._running_infos(relay if running_info else {}, group)
            if routes is None or dlq_part is None or committed_topics is None or configs is None:
                (infos, info_failures), read_routes, read_dlq, read_topics, read_configs = await asyncio.gather(
                    infos_read,
                    self._routes(known_topics) if routes is None else _given(routes),
                    self._dlq_offsets(DLQ_PREFIX + group, masters) if dlq_part is None else _given(dlq_part),
                    self._offset_topics(masters, group, wanted=wanted_topics) if committed_topics is None
                    else _given(committed_topics),
                    self._group_configs(masters, group) if configs is None else _given(configs),
                )
                routes, dlq_part, committed_topics, configs = read_routes, read_dlq, read_topics, read_configs
            else:
                infos, info_failures = await infos_read
            dlq, dlq_failures = dlq_part
            offset_topics, ot_failures, ot_unavailable = committed_topics
            stats_by_broker, stats_failures = await (
                stats if stats is not None else self._fan_out(masters, read_stats, serial=True))
        finally:
            if stats is not None:
                stats.cancel()  # only still running when something above failed

        failures: dict[str, errors.RmqctlError] = {**stats_failures, **conn_failures}
        if len(failures) == len(masters) and masters:
            raise all_failed(failures, f"no broker answered for group {group!r}")

        has_offsets = any(s.offsets for s in stats_by_broker.values())
        if not connections and not has_offsets and not failures and not configs and \
                not await self._configured(masters, group):
            raise errors.NotFound(
                f"consumer group {group!r} not found on any broker",
                hint="list groups with: rmqctl group list",
            )
        failures.update(info_failures)
        failures.update(dlq_failures)
        failures.update(ot_failures)
        failures.update(proxy_failures)

        owners = _owners(infos)

        topics = set(known_topics)
        for ri in infos.values():
            topics.update(s.topic for s in ri.subscriptions)
        # topics the group committed offsets for that no online client subscribes (a client that
        # subscribed them stopped): consume stats leave them out while any client is online, so
        # they are read like the other left-out topics and marked; only when every client told
        # its own subscriptions, since the broker's table flips between clients' sets
        left_behind: set[str] = set()
        unsure: set[str] = set()
        committed = {t for ts in offset_topics.values() for t in ts} - topics
        if connections and running_info and not info_failures and set(infos) >= set(connections):
            left_behind = committed
        elif connections and running_info:
            # a client that did not tell its subscriptions may still subscribe these: their rows
            # (the group's backlog either way) are shown unmarked, and the view says what is unknown
            unsure = committed
        routes.update(await self._routes(sorted((topics | left_behind | unsure) - routes.keys())))
        topic_queues = {}
        for topic in sorted(topics):
            route = routes[topic]
            if isinstance(route, errors.RmqctlError):
                if not isinstance(route, errors.TopicNotExist):
                    failures[f"route:{topic}"] = route
                continue
            topic_queues[topic] = tuple(route.read_queues())

        left_queues = {t: tuple(r.read_queues()) for t in sorted(left_behind | unsure)
                       if isinstance(r := routes[t], TopicRoute)}
        progress = _merge_progress(stats_by_broker, owners)
        extra = await self._fill_missing_rows(masters, group, stats_by_broker, {**topic_queues, **left_queues},
                                              owners, infos)
        if extra:
            progress = tuple(sorted((*progress, *extra), key=lambda r: r.queue))
        if left_behind:
            progress = tuple(dataclasses.replace(p, subscribed=False) if p.queue.topic in left_behind else p
                             for p in progress)

        view = assemble_view(
            group, conns_by_broker, connections, duplicates, running_infos=dict(sorted(infos.items())),
            progress=progress, topic_queues=topic_queues, dlq=dlq, failures=failures,
            sampled_at=int(self._clock.now() * 1000),
            unavailable={**self._unavailable(masters), **ot_unavailable,
                         **_unsure_topics(unsure, connections, infos)},
            proxies=tuple(proxies), group_configs=configs,
        )
        if not connections and not any(p.error is None for p in proxies) and self.backend.capabilities.reads_proxies:
            # nobody lists a client and no proxy answered: whether gRPC clients may hide behind
            # a proxy depends on the brokers' release
            view = dataclasses.replace(view, broker_versions=await self._broker_versions(masters))
        if view.lite_bind_topic:
            view = lite_view(view)
        return pop_view(view) if view.pop else view

    async def _broker_versions(self, masters: Mapping[str, str]) -> dict[str, str]:
        """Each master's release (``brokerVersionDesc`` of its runtime info), read once per
        service; a broker that does not answer is left out, and the read is tried again later."""
        if self._versions is None:
            tables, failures = await self._fan_out(masters, self.backend.broker_runtime)
            found = {b: v for b, t in sorted(tables.items()) if (v := t.get("brokerVersionDesc"))}
            if failures:
                return found
            self._versions = found
        return dict(self._versions)

    def _unavailable(self, masters: Mapping[str, str]) -> dict[str, str]:
        """What the back end declares it cannot supply, for a view of this cluster."""
        caps = self.backend.capabilities
        out = dict(caps.unavailable)
        if caps.connections_of_one_broker and len(masters) > 1:
            out["broker_subscriptions"] = caps.connections_of_one_broker
            out["duplicate_clients"] = caps.connections_of_one_broker
        return out

    async def proxy_addresses(self, masters: Mapping[str, str], *, discover: bool = True) -> dict[str, str]:
        """The proxies to read, address → how rmqctl knew it (``named``; with ``discover``,
        ``announced`` or ``brokers``). Every 5.x proxy in cluster mode is a client of the
        heartbeat-sync group on each broker, which shows its host, not its remoting port; a proxy
        that serves clients also announces its address and remoting port in the messages it
        sends to the heartbeat-sync topic (:meth:`_announced_proxies`). A host with no announced
        proxy is read on the default port, unless a named proxy has the same host."""
        if not discover:
            return {address: "named" for address in self.proxies}
        if self._found_proxies is None:
            async def sync_clients(addr: str) -> ConsumerConnection | None:
                try:
                    return await self.backend.consumer_connection(addr, HEARTBEAT_SYNC_GROUP)
                except errors.ConsumerNotOnline:
                    return None

            listed, _ = await self._fan_out(masters, sync_clients)
            hosts = sorted({c.client_addr.rpartition(":")[0] or c.ip
                            for cc in listed.values() if cc is not None for c in cc.connections})
            announced = await self._announced_proxies() if hosts else []
            found = {address: "announced" for address in announced}
            # a host whose proxy announced nothing (no client has sent it a heartbeat lately) is
            # read on the default remoting port: a guess, said to be one
            for host in hosts:
                if host and not any(a.rpartition(":")[0] == host for a in announced):
                    found[f"{host}:{DEFAULT_PROXY_REMOTING_PORT}"] = "brokers"
            self._found_proxies = dict(sorted(found.items()))
        named_hosts = {address.rpartition(":")[0] for address in self.proxies}
        out = {address: "named" for address in self.proxies}
        for address, found_by in self._found_proxies.items():
            # a port guessed for a host gives way to a proxy named on that host; an announced
            # address is the proxy's own, whatever else runs on its host
            if found_by == "announced" or address.rpartition(":")[0] not in named_hosts:
                out.setdefault(address, found_by)
        return out

    async def _announced_proxies(self) -> list[str]:
        """The remoting addresses the proxies announced lately: each proxy in cluster mode sends
        every heartbeat of its own clients to the heartbeat-sync topic, naming itself
        (``localProxyId``: address, remoting port, gRPC port). The newest messages of the topic
        are read back (read-only); an address last announced more than
        :data:`ANNOUNCED_WITHIN_MS` ago is left out (that proxy may be gone). Empty when the
        back end cannot read messages, the topic does not exist or nothing could be read."""
        if not self.backend.capabilities.message_reads:
            return []
        try:
            found = await self.browse(HEARTBEAT_SYNC_TOPIC, limit=ANNOUNCEMENTS_READ)
        except errors.RmqctlError:
            return []
        now_ms = self._clock.now() * 1000
        latest: dict[str, int] = {}
        for message in found.value:
            address = announced_proxy(message.body)
            if address is not None:
                latest[address] = max(latest.get(address, 0), message.store_timestamp)
        return sorted(a for a, at in latest.items() if now_ms - at <= ANNOUNCED_WITHIN_MS)

    async def _proxy_clients(
        self, masters: Mapping[str, str], group: str, *, discover: bool
    ) -> tuple[list[ProxyClients], dict[str, errors.RmqctlError]]:
        """What each proxy lists for ``group``: the named ones, and with ``discover`` (the
        brokers list no client of the group, as for a group of gRPC clients) the ones the brokers
        reveal. A named proxy that fails is a partial result (``proxy:<address>``); one only the
        brokers revealed, read on the default port, is a guess: its failure is noted on it, not
        counted against the view, and it is not asked again."""
        if not self.backend.capabilities.reads_proxies or not (discover or self.proxies):
            return [], {}
        addresses = await self.proxy_addresses(masters, discover=discover)
        silent = {a: self._silent_proxies[a] for a in addresses if a in self._silent_proxies}

        async def one(address: str) -> ConsumerConnection | None:
            try:
                cc = await self.backend.consumer_connection(address, group)
            except errors.ConsumerNotOnline:
                return None
            return cc if cc.connections else None

        found, failures = await self._fan_out({a: a for a in addresses if a not in silent}, one)
        out: list[ProxyClients] = []
        partial: dict[str, errors.RmqctlError] = {}
        for address, found_by in sorted(addresses.items()):
            error = failures.get(address)
            if error is not None and found_by == "named":
                partial[f"proxy:{address}"] = error
            note = silent.get(address)
            if error is not None:
                note = str(error)
                if found_by == "brokers":
                    note = self._silent_proxies[address] = (
                        f"a broker lists a proxy on this host, but the default remoting port did not "
                        f"answer ({error}); name it with --proxy host:port")
                elif found_by == "announced":
                    note = self._silent_proxies[address] = (
                        f"the proxy announced this remoting address in its heartbeat-sync messages, but it "
                        f"did not answer ({error}); name the proxy with --proxy host:port")
            out.append(ProxyClients(address, found_by, found.get(address), note))
        return out, partial

    def _routes_at_hand(self, topics: Sequence[str]) -> dict[str, TopicRoute | errors.RmqctlError] | None:
        """Inside a sharing scope, every route of ``topics`` as :meth:`_routes` would answer it
        from the routes kept, or None when one of them would be read."""
        if self._shared is None:
            return None
        now = self._clock.now()
        kept: dict[str, TopicRoute | errors.RmqctlError] = {}
        for topic in topics:
            route = self._routes_kept.get(topic)
            if route is None or now - route[0] >= ROUTE_TTL_S:
                return None
            kept[topic] = route[1]
        return kept

    def _dlq_at_hand(
        self, dlq_topic: str
    ) -> tuple[tuple[TopicOffset, ...], dict[str, errors.RmqctlError]] | None:
        """No DLQ, as :meth:`_dlq_offsets` would answer, when the scope's topic list has come back
        and does not name ``dlq_topic``; None when it must be asked."""
        shared = self._shared
        if shared is None or not self.backend.capabilities.lists_every_topic:
            return None
        read = shared.get("topic_names")
        if read is None or read.get_loop() is not asyncio.get_running_loop() or not read.done() \
                or read.cancelled() or read.exception() is not None or dlq_topic in read.result():
            return None
        return (), {}

    def _offset_topics_at_hand(
        self, masters: Mapping[str, str], group: str, *, wanted: bool,
    ) -> tuple[dict[str, list[str]], dict[str, errors.RmqctlError], dict[str, str]] | None:
        """:meth:`_offset_topics` when it needs no read (not wanted, or every broker's offset
        table of the scope has come back), else None."""
        if not wanted or not self.backend.capabilities.lists_group_topics:
            return {}, {}, {}
        shared = self._shared
        if shared is None or not self.backend.capabilities.reads_offset_table:
            return None
        loop = asyncio.get_running_loop()
        tables = [shared.get(f"offset_topics:{addr}") for addr in masters.values()]
        if not all(t is not None and t.get_loop() is loop and t.done() and not t.cancelled()
                   and t.exception() is None for t in tables):
            return None
        return ({broker: sorted(t.result().get(group, ()))  # type: ignore[union-attr]
                 for broker, t in zip(masters, tables, strict=True)}, {}, {})

    def _group_configs_at_hand(
        self, masters: Mapping[str, str], group: str
    ) -> dict[str, SubscriptionGroupConfig] | None:
        """:meth:`_group_configs` when it needs no read (every broker's table is kept and fresh,
        or the back end reads no config), else None."""
        caps = self.backend.capabilities
        if not caps.reads_group_config:
            return {}
        if not caps.lists_subscription_groups:
            return None
        now = self._clock.now()
        at_hand = {broker: kept[1] for broker, addr in masters.items()
                   if (kept := self._config_tables.get(addr)) is not None and now - kept[0] < CONFIG_TABLE_TTL_S}
        if len(at_hand) < len(masters):
            return None
        return {broker: t[group] for broker, t in sorted(at_hand.items()) if group in t}

    async def _group_configs(self, masters: Mapping[str, str], group: str) -> dict[str, SubscriptionGroupConfig]:
        """The group's stored config on each broker that keeps one (its retry policy and maximum
        of deliveries), when the back end reads it for every view. A broker's whole table is read
        (its read of one group's config creates one when it has none) and kept for
        :data:`CONFIG_TABLE_TTL_S` seconds, so views of many groups cost one read per broker. A
        broker that fails leaves its config out: the policy is then unknown, which no check reads
        as healthy."""
        caps = self.backend.capabilities
        if not caps.reads_group_config:
            return {}
        if not caps.lists_subscription_groups:
            configs, _ = await self._fan_out(masters, lambda addr: self.backend.subscription_group(addr, group))
            return {broker: config for broker, config in sorted(configs.items()) if config is not None}
        now = self._clock.now()
        at_hand = self._group_configs_at_hand(masters, group)
        if at_hand is not None:
            return at_hand

        async def table(addr: str) -> Mapping[str, SubscriptionGroupConfig]:
            cached = self._config_tables.get(addr)
            if cached is not None and now - cached[0] < CONFIG_TABLE_TTL_S:
                return cached[1]
            # a table of thousands of groups takes a while to decode: views that want it while it
            # is on its way wait for that read instead of each asking the broker again
            def done(read: asyncio.Future[Mapping[str, SubscriptionGroupConfig]]) -> None:
                if self._config_reads.get(addr) is read:
                    del self._config_reads[addr]
                if not read.cancelled() and read.exception() is None:
                    self._config_tables[addr] = (now, read.result())

            return await _joined(self._config_reads, addr, lambda: self.backend.subscription_groups(addr), done)

        tables, _ = await self._fan_out(masters, table)
        return {broker: t[group] for broker, t in sorted(tables.items()) if group in t}

    async def _configured(self, masters: Mapping[str, str], group: str) -> bool:
        """Whether any broker keeps a config for ``group`` (a group with no client and no offset)."""
        configs, _ = await self._fan_out(masters, lambda addr: self.backend.subscription_group(addr, group))
        return any(c is not None for c in configs.values())

    async def _offset_topics(
        self, masters: Mapping[str, str], group: str, *, wanted: bool,
    ) -> tuple[dict[str, list[str]], dict[str, errors.RmqctlError], dict[str, str]]:
        """The topics each broker holds the group's committed offsets for (QUERY_TOPICS_BY_CONSUMER),
        when ``wanted`` and the back end can list them, the error of each broker that failed
        (``offset_topics:<broker>``: its left-behind topics are not known), and ``offset_topics``
        unavailable when a broker does not serve the request at all (a 4.x broker answers it
        REQUEST_CODE_NOT_SUPPORTED): that is no failed read, and the check that needs it is skipped."""
        if not wanted or not self.backend.capabilities.lists_group_topics:
            return {}, {}, {}
        at_hand = self._offset_topics_at_hand(masters, group, wanted=wanted)
        if at_hand is not None:
            return at_hand
        shared = self._shared

        async def one(addr: str) -> list[str]:
            if shared is not None and self.backend.capabilities.reads_offset_table:
                # inside a round of many groups, each broker's whole offset table is read once
                try:
                    table: Mapping[str, frozenset[str]] = await _joined(
                        shared, f"offset_topics:{addr}", lambda: self.backend.offset_topics(addr))
                except errors.RmqctlError:
                    pass  # the group's own read says what the broker answers
                else:
                    return sorted(table.get(group, ()))
            return await self.backend.topics_by_consumer(addr, group)

        found, failures = await self._fan_out(masters, one)
        unsupported = sorted(b for b, e in failures.items() if isinstance(e, errors.RequestCodeNotSupported))
        unavailable = {"offset_topics": (
            f"{', '.join(unsupported)} cannot list the topics a group has committed offsets for "
            "(QUERY_TOPICS_BY_CONSUMER is not supported before RocketMQ 5), so topics no online client "
            "subscribes are not found there")} if unsupported else {}
        return (found, {f"offset_topics:{b}": e for b, e in failures.items() if b not in unsupported},
                unavailable)

    async def _connections(
        self, masters: Mapping[str, str], group: str,
        answered: Mapping[str, ConsumerConnection | errors.RmqctlError] | None = None, *, serial: bool = False,
    ) -> tuple[dict[str, ConsumerConnection], dict[str, errors.RmqctlError]]:
        if answered is not None:
            return self._answered_connections(answered)

        async def one(addr: str) -> ConsumerConnection | None:
            try:
                return await self.backend.consumer_connection(addr, group)
            except errors.ConsumerNotOnline:
                return None  # this broker has no live channel of the group: not a failure

        results, failures = await self._fan_out(masters, one, serial=serial)
        return {b: c for b, c in results.items() if c is not None}, failures

    def _answered_connections(
        self, answered: Mapping[str, ConsumerConnection | errors.RmqctlError]
    ) -> tuple[dict[str, ConsumerConnection], dict[str, errors.RmqctlError]]:
        """:meth:`_connections` of answers read already (by broker name): a broker without a
        channel of the group is left out, an error the back end declares fatal is raised."""
        conns: dict[str, ConsumerConnection] = {}
        failures: dict[str, errors.RmqctlError] = {}
        fatal = self.backend.capabilities.fatal
        for broker, answer in answered.items():
            if isinstance(answer, errors.ConsumerNotOnline):
                continue
            if isinstance(answer, errors.RmqctlError):
                if fatal and isinstance(answer, fatal):
                    raise answer
                failures[broker] = answer
            else:
                conns[broker] = answer
        return conns, failures

    async def _running_infos(
        self, relay: Mapping[str, str], group: str
    ) -> tuple[dict[str, ConsumerRunningInfo], dict[str, errors.RmqctlError]]:
        """Each client's running info, asked through the broker in ``relay`` (client id → address)."""
        found, failures = await self._fan_out(
            {cid: cid for cid in sorted(relay)},
            lambda cid: self.backend.consumer_running_info(relay[cid], group, cid),
        )
        return found, {f"client:{cid}": e for cid, e in failures.items()}

    async def _routes(self, topics: Sequence[str]) -> dict[str, TopicRoute | errors.RmqctlError]:
        """Each topic's route, or the error that says why there is none."""
        kept = self._routes_at_hand(topics)
        if kept is not None:
            return kept  # every route kept (as :meth:`_kept_route` answers): no read, no task
        read = self.backend.topic_route if self._shared is None else self._kept_route
        found, failures = await self._fan_out({t: t for t in topics}, read)
        routes: dict[str, TopicRoute | errors.RmqctlError] = {}
        for topic in topics:
            routes[topic] = found[topic] if topic in found else failures[topic]
        return routes

    async def _kept_route(self, topic: str) -> TopicRoute:
        """``topic``'s route as read inside a sharing scope less than :data:`ROUTE_TTL_S` ago, else
        read now (a topic without a route is asked again every time)."""
        now = self._clock.now()
        kept = self._routes_kept.get(topic)
        if kept is not None and now - kept[0] < ROUTE_TTL_S:
            return kept[1]
        route = await self.backend.topic_route(topic)
        self._routes_kept[topic] = (now, route)
        return route

    async def _dlq_offsets(
        self, dlq_topic: str, masters: Mapping[str, str]
    ) -> tuple[tuple[TopicOffset, ...], dict[str, errors.RmqctlError]]:
        """The group's dead-letter queues (none until a message was given up on: no route yet).

        Only the broker's "topic does not exist" means no DLQ; a route that could not be read
        leaves the DLQ of every broker unknown, so no reader takes it for absent. Inside a sharing
        scope, a dead-letter topic the name servers' topic list does not name has no route either
        (both come from one table): a round over thousands of groups reads one list, and a route
        only for the groups that have a DLQ."""
        listed = await self._listed_topics()
        if listed is not None and dlq_topic not in listed:
            return (), {}
        try:
            route = await self.backend.topic_route(dlq_topic)
        except (errors.TopicNotExist, errors.NotFound):
            return (), {}
        except errors.RmqctlError as exc:
            fatal = self.backend.capabilities.fatal
            if fatal and isinstance(exc, fatal):
                raise
            return (), {f"dlq:{broker}": exc for broker in masters}
        stats, failures = await self._fan_out(
            route.master_addrs(), lambda addr: self.backend.topic_stats(addr, dlq_topic))
        offsets = sorted((o for s in stats.values() for o in s.offsets), key=lambda o: o.queue)
        return tuple(offsets), {f"dlq:{b}": e for b, e in failures.items()}

    async def _fill_missing_rows(
        self, masters: Mapping[str, str], group: str, stats_by_broker: Mapping[str, ConsumeStats],
        topic_queues: Mapping[str, tuple[MessageQueue, ...]], owners: Mapping[MessageQueue, str],
        infos: Mapping[str, ConsumerRunningInfo] | None = None,
    ) -> list[QueueProgress]:
        """Rows for the queues consume stats left out although the broker answered it.

        The broker drops a topic from ConsumeStats while the topic is absent from the group's
        subscription table, which, in a group whose clients subscribe different topics, flips
        with every heartbeat. The offsets are still there: the consumer offset comes from the
        broker's offset table (per queue) and the broker offset from topic stats. A queue whose
        offsets cannot be read gets a row marked ``unknown``.

        A topic none of whose queues has a committed offset is one ConsumeStats leaves out for
        good (mqadmin too), yet a client that holds its queues and hangs before its first commit
        leaves every message there unconsumed. Such a held queue gets a ``no_commit`` row: its
        consumer offset is the queue's min offset, or the holding client's own offset (its
        running info) when that is further on; queues nobody holds stay out, as ConsumeStats
        would leave them.
        """
        listed = {mq for s in stats_by_broker.values() for mq in s.offsets}
        if not self.backend.capabilities.queue_offsets:
            # the offset table cannot be asked here: a held queue consume stats left out has
            # offsets this back end cannot read, which is unknown, never a blank healthy row
            return [QueueProgress(mq, 0, 0, None, 0, cid, offsets_from="unknown")
                    for mq, cid in sorted(owners.items())
                    if mq not in listed and mq.broker_name in stats_by_broker]
        backend = self.backend
        wanted: dict[tuple[str, str], list[MessageQueue]] = {}
        for topic, queues in topic_queues.items():
            for mq in queues:
                if mq not in listed and mq.broker_name in stats_by_broker and mq.broker_name in masters:
                    wanted.setdefault((mq.broker_name, topic), []).append(mq)
        if not wanted:
            return []  # consume stats listed every queue (the common case)
        held = {mq: info.mq_table[mq] for mq, cid in owners.items()
                for info in [(infos or {}).get(cid)] if info is not None and mq in info.mq_table}

        async def one(broker: str, topic: str, queues: list[MessageQueue]) -> list[QueueProgress]:
            addr = masters[broker]
            try:
                stats = await backend.topic_stats(addr, topic)
                committed = await asyncio.gather(
                    *(backend.query_consumer_offset(addr, group, topic, mq.queue_id) for mq in queues))
            except errors.RmqctlError:
                return [QueueProgress(mq, 0, 0, None, 0, owners.get(mq), offsets_from="unknown") for mq in queues]
            max_offsets = {o.queue.queue_id: o.max_offset for o in stats.offsets}
            if all(c is None for c in committed):
                # never committed on this topic here: ConsumeStats leaves it out, but a held queue
                # is read from the topic's offsets and the holder's own offset
                min_offsets = {o.queue.queue_id: o.min_offset for o in stats.offsets}
                return [_uncommitted_row(mq, owners[mq], min_offsets.get(mq.queue_id),
                                         max_offsets.get(mq.queue_id), held.get(mq))
                        for mq in queues if mq in owners]
            rows = []
            for mq, offset in zip(queues, committed, strict=True):
                if mq.queue_id not in max_offsets:
                    rows.append(QueueProgress(mq, 0, 0, None, 0, owners.get(mq), offsets_from="unknown"))
                    continue
                consumer = max(0, offset if offset is not None else 0)  # -1 shows as 0, as in ConsumeStats
                rows.append(QueueProgress(mq, max_offsets[mq.queue_id], consumer, None, 0, owners.get(mq),
                                          offsets_from="offset_table"))
            return rows

        results = await asyncio.gather(*(one(b, t, qs) for (b, t), qs in sorted(wanted.items())))
        return [row for rows in results for row in rows]

    # -- messages -----------------------------------------------------------------------------

    async def oldest_unconsumed(self, view: GroupView, *, concurrency: int = 16) -> dict[MessageQueue, int]:
        """Store time (epoch ms) of the oldest message not yet consumed, for every queue of ``view``
        with a backlog: the message at the consumer offset, read back under the tools group (nothing
        committed), as rocketmq-exporter times its lag. Queues without a backlog, with unknown
        offsets, on a broker that fails or on a back end that cannot read messages are left out:
        their lag in time is unknown, never 0. A message's store time never changes: one read at a
        (queue, offset) serves every later round whose backlog still starts there."""
        if not self.backend.capabilities.message_reads:
            return {}
        wanted = [p for p in view.progress if p.known and p.lag is not None and p.lag > 0]
        if not wanted:
            return {}
        store_times = self._store_times
        found: dict[MessageQueue, int | None] = {}
        unread: list[QueueProgress] = []
        for p in wanted:
            key = (p.queue, p.consumer_offset)
            known = store_times.get(key)
            if known is None:
                unread.append(p)
            else:
                store_times.move_to_end(key)
                found[p.queue] = known
        if unread:
            masters = await self.masters()
            backend = self.backend

            async def one(p: QueueProgress) -> int | None:
                addr = masters.get(p.queue.broker_name)
                if addr is None:
                    return None
                try:
                    messages = await backend.pull_by_offset(addr, p.queue.broker_name, p.queue.topic,
                                                            p.queue.queue_id, p.consumer_offset, 1)
                except errors.RmqctlError:
                    return None
                # the broker may answer from a later offset (the message there was cleaned): only
                # the message at the consumer offset itself is remembered by it
                first = next((m for m in messages if m.offset >= p.consumer_offset), None)
                if first is None or not first.store_timestamp:
                    return None
                if first.offset == p.consumer_offset:
                    store_times[p.queue, p.consumer_offset] = first.store_timestamp
                    while len(store_times) > STORE_TIMES_KEPT:
                        store_times.popitem(last=False)
                return first.store_timestamp

            found.update(zip((p.queue for p in unread), await bounded(unread, one, concurrency), strict=True))
        return {p.queue: t for p in wanted if (t := found.get(p.queue)) is not None}


    async def sample_messages(
        self, view: GroupView, topics: Iterable[str], *, per_queue: int | None = None
    ) -> GroupView:
        """``view`` with :attr:`GroupView.tag_samples` for every queue of ``topics``: the last
        ``per_queue`` messages of each (default :data:`SAMPLE_PER_QUEUE`, at most
        :data:`SAMPLE_MAX_PER_QUEUE`), read back by offset under the tools group, one pull of up
        to 32 after another (nothing committed). Queues that cannot be read are left out (their
        error goes into ``errors`` as ``sample:<broker>``); a back end that cannot read messages
        leaves the view as it is."""
        if not self.backend.capabilities.message_reads:
            return view
        wanted_per_queue = min(max(1, per_queue or SAMPLE_PER_QUEUE), SAMPLE_MAX_PER_QUEUE)
        masters = await self.masters()
        backend = self.backend
        progress = {p.queue: p for p in view.progress}
        wanted = [mq for t in sorted(set(topics)) for mq in view.topic_queues.get(t, ())
                  if mq.broker_name in masters]

        async def max_offset(addr: str, mq: MessageQueue) -> int:
            stats = await backend.topic_stats(addr, mq.topic)
            return next((o.max_offset for o in stats.offsets if o.queue.queue_id == mq.queue_id), 0)

        async def one(mq: MessageQueue) -> TagSample | errors.RmqctlError:
            addr = masters[mq.broker_name]
            row = progress.get(mq)
            try:
                end = row.broker_offset if row is not None and row.known else await max_offset(addr, mq)
                start = max(0, end - wanted_per_queue)
                messages: list[SampledMessage] = []
                at = start
                while at < end:
                    batch = await backend.pull_by_offset(addr, mq.broker_name, mq.topic, mq.queue_id,
                                                         at, min(SAMPLE_PER_QUEUE, end - at))
                    if not batch:
                        break
                    messages += batch
                    nxt = max(m.offset for m in batch) + 1
                    if nxt <= at:
                        break
                    at = nxt
            except errors.RmqctlError as exc:
                return exc
            kept = tuple(m for m in messages if start <= m.offset < end)
            return TagSample(mq, start, end, kept)

        results = await asyncio.gather(*(one(mq) for mq in wanted))
        samples = {}
        failures = dict(view.errors)
        for mq, result in zip(wanted, results, strict=True):
            if isinstance(result, TagSample):
                samples[mq] = result
            else:
                failures[f"sample:{mq.broker_name}"] = result
        return dataclasses.replace(view, tag_samples=samples, errors=failures)

    # -- one message --------------------------------------------------------------------------

    def _lookups(self) -> None:
        why = self.backend.capabilities.message_lookups_unavailable
        if why:
            raise errors.UsageError(f"this source cannot look messages up: {why}")

    def _reads(self) -> None:
        if not self.backend.capabilities.message_reads:
            raise errors.UsageError("this source cannot read messages back by offset",
                                    hint="read them with -n and the cluster's name servers")

    async def find_messages(self, ref: MessageRef) -> Partial[list[Message]]:
        """The messages ``ref`` names, oldest first, with the errors of brokers that failed.

        An id is tried as the broker's offset id first (its store host named a broker of the
        cluster: VIEW_MESSAGE_BY_ID there), then as a unique key through the index of
        ``ref.topic`` on every broker of the topic, like mqadmin's queryMsgById. A key is
        looked up in the index of its topic on every broker; a position is read back by offset
        (nothing committed). Raises NotFound when nothing answers to ``ref``."""
        if ref.position is not None:
            found: Partial[list[Message]] = await self._message_at(ref.position, ref.offset or 0)
        elif ref.msg_id is not None:
            found = await self._message_by_id(ref.msg_id, ref.topic)
        elif ref.key is not None and ref.topic is not None:
            self._lookups()
            found = await self._query_topic(ref.topic, ref.key, unique_key=False)
        else:
            raise errors.UsageError("name a message by id, by --key and --topic, or by topic, --queue and --offset")
        if not found.value and not found.errors:
            raise errors.NotFound(f"no message found for {ref.describe()}", hint=_not_found_hint(ref))
        if not found.value:
            raise all_failed(dict(found.errors), f"no message found for {ref.describe()}")
        return found

    async def _message_at(self, mq: MessageQueue, offset: int) -> Partial[list[Message]]:
        self._reads()
        route = await self.topic_route(mq.topic)
        addr = route.master_addrs().get(mq.broker_name)
        if addr is None:
            raise errors.NotFound(f"topic {mq.topic!r} has no queue on broker {mq.broker_name!r}",
                                  hint=f"list its queues with: rmqctl topic status {mq.topic}")
        messages = await self.backend.pull_messages(addr, mq.broker_name, mq.topic, mq.queue_id, offset, 1)
        return Partial([m for m in messages if m.queue_offset == offset and m.queue.queue_id == mq.queue_id])

    async def _message_by_id(self, msg_id: str, topic: str | None) -> Partial[list[Message]]:
        self._lookups()
        decoded = decode_offset_message_id(msg_id.upper())
        failures: dict[str, errors.RmqctlError] = {}
        if decoded is not None:
            host, port, physical = decoded
            wanted = f"{host}:{port}"
            info = await self.cluster()
            for _, broker_name, _, addr in info.broker_addresses():
                if addr != wanted:
                    continue
                try:
                    message = await self.backend.view_message(addr, broker_name, physical, topic)
                except errors.UsageError:
                    raise  # the back end cannot ask this way: no broker failed
                except errors.RmqctlError as exc:
                    failures[broker_name] = exc
                    break
                if message is not None and message.offset_msg_id == msg_id.upper():
                    return Partial([message])
                break
        if topic is None:
            if failures:
                return Partial([], failures)
            raise errors.NotFound(
                f"message id {msg_id} names no message on a broker of this cluster",
                hint="a producer's id (UNIQ_KEY) is found through its topic's index: add --topic TOPIC")
        found = await self._query_topic(topic, msg_id, unique_key=True)
        return Partial(found.value, {**failures, **found.errors})

    async def _query_topic(self, topic: str, key: str, *, unique_key: bool) -> Partial[list[Message]]:
        route = await self.topic_route(topic)
        backend = self.backend
        results, failures = await self._fan_out(
            route.master_addrs(),
            lambda addr: backend.query_messages(addr, _broker_of(route, addr), topic, key, unique_key=unique_key))
        messages = [m for found in results.values() for m in found]
        return Partial(sorted(messages, key=_message_order), failures)

    async def browse(self, topic: str, *, queue: MessageQueue | None = None, from_offset: int | None = None,
                     since_ms: int | None = None, limit: int = BROWSE_LIMIT) -> Partial[list[Message]]:
        """Up to ``limit`` messages of each queue of ``topic`` (or of ``queue`` alone), read back
        without committing: from ``from_offset``, from the first stored at or after
        ``since_ms``, or else the last ``limit`` of each queue. Oldest first per queue, queues in
        order; a broker that fails leaves its error."""
        self._reads()
        route = await self.topic_route(topic)
        masters = route.master_addrs()
        queues = [mq for mq in route.read_queues() if mq.broker_name in masters]
        if queue is not None:
            if queue not in queues:
                raise errors.NotFound(f"topic {topic!r} has no readable queue {queue.broker_name}/{queue.queue_id}",
                                      hint=f"list its queues with: rmqctl topic status {topic}")
            queues = [queue]
        backend = self.backend

        async def one(mq: MessageQueue) -> list[Message]:
            addr = masters[mq.broker_name]
            if from_offset is not None:
                start = from_offset
            elif since_ms is not None:
                start = await backend.search_offset(addr, topic, mq.queue_id, since_ms)
            else:
                stats = await backend.topic_stats(addr, topic)
                end = next((o.max_offset for o in stats.offsets if o.queue.queue_id == mq.queue_id), 0)
                start = max(0, end - limit)
            out: list[Message] = []
            while len(out) < limit:
                batch = await backend.pull_messages(addr, mq.broker_name, topic, mq.queue_id, start,
                                                    min(32, limit - len(out)))
                batch = [m for m in batch if m.queue_offset >= start]
                if not batch:
                    break
                out.extend(batch)
                start = batch[-1].queue_offset + 1
            return out[:limit]

        results = await asyncio.gather(*(one(mq) for mq in queues), return_exceptions=True)
        messages: list[Message] = []
        failures: dict[str, errors.RmqctlError] = {}
        for mq, result in zip(queues, results, strict=True):
            if isinstance(result, errors.RmqctlError):
                failures[mq.broker_name] = result
            elif isinstance(result, BaseException):
                raise result
            else:
                messages.extend(result)
        if failures and not messages and len(failures) == len({mq.broker_name for mq in queues}):
            raise all_failed(failures, f"no broker answered for topic {topic!r}")
        return Partial(messages, failures)

    async def topic_groups(self, topic: str) -> Partial[list[str]]:
        """The groups that consume ``topic``: each broker of the topic names its online
        subscribers and the groups with offsets on it (QUERY_TOPIC_CONSUME_BY_WHO); system
        groups are left out."""
        self._lookups()
        route = await self.topic_route(topic)
        results, failures = await self._fan_out(route.master_addrs(),
                                                lambda addr: self.backend.topic_consumers(addr, topic))
        names = {g for groups in results.values() for g in groups} - SYSTEM_GROUPS
        return Partial(sorted(names), failures)

    async def message_traces(self, message: Message) -> Partial[list[TraceEvent]]:
        """The consume records of ``message`` in the trace topic (clients with message tracing on
        write them, keyed by the unique key); empty when nothing traced it or there is no trace
        topic."""
        key = message.unique_key
        if key is None or self.backend.capabilities.message_lookups_unavailable:
            return Partial([])
        try:
            found = await self._query_topic(TRACE_TOPIC, key, unique_key=False)
        except errors.NotFound:
            return Partial([])
        events = [e for m in found.value for e in decode_trace_events(m.body, m.born_host.rpartition(":")[0])
                  if e.msg_id == key]
        return Partial(sorted(events, key=lambda e: (e.timestamp or 0, e.kind)),
                       {f"trace:{b}": e for b, e in found.errors.items()})

    async def message_copies(self, group: str, message: Message) -> Partial[list[Message]]:
        """The copies of ``message`` the group's consumers sent back: in ``%RETRY%<group>`` after
        each failed consumption and in ``%DLQ%<group>`` once they gave up, found by its unique
        key through those topics' indexes. Empty when the message has no unique key or the
        group never sent anything back (the topics do not exist until then)."""
        key = message.unique_key
        if key is None or self.backend.capabilities.message_lookups_unavailable:
            return Partial([])
        found: list[Message] = []
        failures: dict[str, errors.RmqctlError] = {}
        for topic in (RETRY_PREFIX + group, DLQ_PREFIX + group):
            try:
                part = await self._query_topic(topic, key, unique_key=True)
            except errors.NotFound:
                continue  # no such topic: nothing was ever sent back there
            found.extend(m for m in part.value if m.origin_topic == message.queue.topic)
            failures.update({f"{topic}:{b}": e for b, e in part.errors.items()})
        one_each = self.backend.capabilities.one_copy_per_unique_key
        return Partial(sorted(found, key=_message_order), failures,
                       {"copies": one_each} if one_each and found else {})


async def _given(value: T) -> T:
    """``value``, awaited beside reads (what a view already has)."""
    return value


def _unsure_topics(topics: set[str], connections: Mapping[str, object],
                   infos: Mapping[str, ConsumerRunningInfo]) -> dict[str, str]:
    if not topics:
        return {}
    silent = sorted(set(connections) - set(infos))
    return {"topic_subscribers": (
        f"the running info of {', '.join(silent) or 'a client'} could not be read, so whether a client still "
        f"subscribes {', '.join(sorted(topics))} (committed offsets, in no other client's subscriptions) is not "
        "known: its rows are shown unmarked and ABANDONED_TOPIC_BACKLOG is not judged")}


def _broker_of(route: TopicRoute, addr: str) -> str:
    return next((name for name, a in route.master_addrs().items() if a == addr), addr)


def _message_order(message: Message) -> tuple[int, str, int, int]:
    return (message.store_timestamp, message.queue.broker_name, message.queue.queue_id, message.queue_offset)


def _not_found_hint(ref: MessageRef) -> str:
    if ref.position is not None:
        return f"read the queue's offsets with: rmqctl topic status {ref.topic}"
    if ref.key is not None:
        return "keys are found through the broker's index, which a broker may keep off (messageIndexEnable)"
    return "an id is either the broker's offset id or the producer's unique key (give its --topic)"


class _Pause:
    """How many :func:`collector_paused` blocks are open, and whether the collector ran before."""

    depth = 0
    was_enabled = False


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while the block runs (blocks may nest and
    interleave across tasks; the last to end lets it run again, if it ran before).

    A list of thousands of groups builds hundreds of thousands of objects that all outlive the
    collector's young generations: it would scan them again and again (a fifth of the command's
    CPU) to find cycles that are not there; objects freed by reference counting go on being freed.
    """
    if _Pause.depth == 0:
        _Pause.was_enabled = gc.isenabled()
        gc.disable()
    _Pause.depth += 1
    try:
        yield
    finally:
        _Pause.depth -= 1
        if _Pause.depth == 0 and _Pause.was_enabled:
            gc.enable()


def _held_by_bulk(
    masters: Mapping[str, str], group: str, bulk: Mapping[str, asyncio.Future[Mapping[str, ConsumeStats]]]
) -> tuple[dict[str, ConsumeStats], dict[str, errors.RmqctlError]] | None:
    """``group``'s consume stats on every broker from broker-wide reads that have all come back
    and all hold the group, as :meth:`ClusterService.consume_stats_of` would give them; None
    when one of them is still on its way, failed or left the group out."""
    stats: dict[str, ConsumeStats] = {}
    for name, addr in masters.items():
        read = bulk.get(addr)
        if read is None or not read.done() or read.cancelled() or read.exception() is not None:
            return None
        found = read.result().get(group)
        if found is None:
            return None
        stats[name] = found
    return stats, {}


def _owners(infos: Mapping[str, ConsumerRunningInfo]) -> dict[MessageQueue, str]:
    """The client holding each queue by its own running info (the first by client id when two
    claim one; a queue being dropped is not held)."""
    owners: dict[MessageQueue, str] = {}
    for cid in sorted(infos):
        for mq, pq in infos[cid].mq_table.items():
            if not pq.dropped:
                owners.setdefault(mq, cid)
    return owners


def _uncommitted_row(mq: MessageQueue, owner: str, min_offset: int | None, max_offset: int | None,
                     pq: ProcessQueueInfo | None) -> QueueProgress:
    """The row of a held queue the group never committed an offset for: everything from the
    queue's min offset is still to consume, or from where the holder's running info says it is,
    when further on: its own offset, or the oldest message it has pulled and not finished (a
    client that started at the queue's end, CONSUME_FROM_LAST_OFFSET, never owed what came
    before)."""
    if min_offset is None or max_offset is None:
        return QueueProgress(mq, 0, 0, None, 0, owner, offsets_from="unknown")
    consumer = min_offset
    if pq is not None:
        own = [pq.commit_offset]
        if pq.cached_msg_count > 0:
            own.append(pq.cached_msg_min_offset)
        consumer = max([min_offset, *(o for o in own if min_offset < o <= max_offset)])
    return QueueProgress(mq, max_offset, consumer, None, 0, owner, offsets_from="no_commit")


def _merge_progress(
    stats: Mapping[str, ConsumeStats], owners: Mapping[MessageQueue, str]
) -> tuple[QueueProgress, ...]:
    rows = []
    for broker_stats in stats.values():
        for mq, entry in broker_stats.offsets.items():
            rows.append(
                QueueProgress(
                    queue=mq,
                    broker_offset=entry.broker_offset,
                    consumer_offset=entry.consumer_offset,
                    pull_offset=entry.pull_offset,
                    last_timestamp=entry.last_timestamp,
                    owner=owners.get(mq),
                )
            )
    return tuple(sorted(rows, key=lambda r: r.queue))


def merge_connections(
    conns_by_broker: Mapping[str, ConsumerConnection], masters: Mapping[str, str]
) -> tuple[dict[str, ClientConnection], dict[str, str], dict[str, set[str]]]:
    """One connection per client id, a broker address that can relay to each client, and the
    client ids two connections share on one broker (with their addresses).

    Every broker lists the group's clients (each over its own channel, so with another client
    address); the same id twice on ONE broker means two processes share it.
    """
    connections: dict[str, ClientConnection] = {}
    relay: dict[str, str] = {}
    duplicates: dict[str, set[str]] = {}
    for broker, cc in sorted(conns_by_broker.items()):
        seen: dict[str, list[str]] = {}
        for conn in cc.connections:
            seen.setdefault(conn.client_id, []).append(conn.client_addr)
            connections.setdefault(conn.client_id, conn)
            if broker in masters:
                relay.setdefault(conn.client_id, masters[broker])
        for cid, addrs in seen.items():
            if len(addrs) > 1:
                duplicates.setdefault(cid, set()).update(addrs)
    return connections, relay, duplicates


def add_proxy_clients(connections: dict[str, ClientConnection], proxies: Iterable[ProxyClients]) -> None:
    """Add to ``connections`` (client id → connection, what the brokers list) the clients only
    proxies list, each marked with the first proxy that lists it and the SDK it speaks; every
    broker-listed client is a remoting one."""
    for cid, conn in list(connections.items()):
        connections[cid] = dataclasses.replace(conn, sdk=client_sdk(cid, via_proxy=False))
    for proxy in proxies:
        if proxy.connection is None:
            continue
        for conn in proxy.connection.connections:
            connections.setdefault(conn.client_id, dataclasses.replace(
                conn, proxy=proxy.address, sdk=client_sdk(conn.client_id, via_proxy=True)))


#: why in-flight messages of a POP group are unknown
POP_INFLIGHT = ("POP consumption commits no pull offset and moves the consumer offset when a message "
                "is popped, not when it is ACKed: the consume stats do not show what is in flight")


def lite_view(view: GroupView) -> GroupView:
    """A 5.5 lite group's view: the broker keeps its progress per lite topic, in light message
    queues (``%LMQ%$<topic>$<lite topic>``) that consume stats and routes do not show and rmqctl
    does not read; ``lite_topics`` says so, and the doctor skips the checks that need progress."""
    topic = view.lite_bind_topic
    why = (f"a lite group bound to the LITE topic {topic}: the broker keeps its progress per lite topic, "
           f"in light message queues (%LMQ%${topic}$<lite topic>) that rmqctl does not read")
    return dataclasses.replace(view, unavailable={**view.unavailable, "lite_topics": why, "inflight": why})


def pop_view(view: GroupView) -> GroupView:
    """A POP group's view: the pull offsets of its consume stats say nothing (POP never commits
    one), so they and the in-flight counts are unknown rather than 0."""
    progress = tuple(dataclasses.replace(p, pull_offset=None) for p in view.progress)
    unavailable = {**view.unavailable, "pull_offset": POP_INFLIGHT, "inflight": POP_INFLIGHT}
    return dataclasses.replace(view, progress=progress, unavailable=unavailable)


def assemble_view(
    group: str,
    conns_by_broker: Mapping[str, ConsumerConnection],
    connections: Mapping[str, ClientConnection],
    duplicates: Mapping[str, set[str]],
    *,
    running_infos: Mapping[str, ConsumerRunningInfo],
    progress: tuple[QueueProgress, ...],
    topic_queues: Mapping[str, tuple[MessageQueue, ...]],
    dlq: tuple[TopicOffset, ...],
    failures: Mapping[str, errors.RmqctlError],
    sampled_at: int,
    unavailable: Mapping[str, str] | None = None,
    proxies: tuple[ProxyClients, ...] = (),
    group_configs: Mapping[str, SubscriptionGroupConfig] | None = None,
) -> GroupView:
    """The :class:`GroupView` of the parts read; the group's consume type, model and start point
    come from the first broker that lists its connections. ``sampled_at`` is the clock's "now" in
    epoch ms (what the checks compare client timestamps with)."""
    first = next(iter(sorted(conns_by_broker.items())), None)
    cc0 = first[1] if first else next((p.connection for p in proxies if p.connection is not None), None)
    return GroupView(
        group=group,
        connections=tuple(sorted(connections.values(), key=lambda c: c.client_id)),
        duplicate_clients={cid: tuple(sorted(a)) for cid, a in sorted(duplicates.items())},
        broker_subscriptions={b: dict(cc.subscriptions) for b, cc in sorted(conns_by_broker.items())},
        running_infos=running_infos,
        progress=progress,
        consume_type=cc0.consume_type if cc0 else None,
        message_model=cc0.message_model if cc0 else None,
        consume_from_where=cc0.consume_from_where if cc0 else None,
        topic_queues=topic_queues,
        dlq=dlq,
        sampled_at=sampled_at,
        errors=failures,
        unavailable=unavailable or {},
        proxies=proxies,
        group_configs=dict(group_configs or {}),
    )
