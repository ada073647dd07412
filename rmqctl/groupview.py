"""Build a :class:`~rmqctl.model.GroupView` for one consumer group across every broker.

The view joins what mqadmin spreads over four commands: each broker's connections and stored
subscription table (203), the merged progress of every queue (208), each client's own running
info (307, relayed by a broker that holds the client's channel) and the routes of the group's
topics. A broker that fails leaves its name and error in ``GroupView.errors``; the rest of the
view is still built.

The reads come through :class:`BrokerReads`, a small protocol of per-broker calls that the
remoting client implements (and any other back end able to answer them may), so the assembly
here is independent of how the bytes travel.

Imports only the model, errors and the fan-out helper: never the remoting package, the CLI,
the TUI or pyspark.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol, runtime_checkable

from rmqctl import errors
from rmqctl.clock import Clock
from rmqctl.fanout import fan_out
from rmqctl.model import (
    DLQ_PREFIX,
    ClientConnection,
    ConsumerConnection,
    ConsumerRunningInfo,
    ConsumeStats,
    GroupSummary,
    GroupView,
    MessageQueue,
    QueueProgress,
    SampledMessage,
    SubscriptionGroupConfig,
    TagSample,
    TopicOffset,
    TopicRoute,
    TopicStats,
    version_desc,
)


class BrokerReads(Protocol):
    """The per-broker reads a group view is assembled from (``address`` is a broker address)."""

    async def consumer_connection(self, address: str, group: str) -> ConsumerConnection: ...

    async def consume_stats(self, address: str, group: str, topic: str | None = None) -> ConsumeStats: ...

    async def consumer_running_info(
        self, address: str, group: str, client_id: str
    ) -> ConsumerRunningInfo: ...

    async def topic_route(self, topic: str) -> TopicRoute: ...

    async def topic_stats(self, address: str, topic: str) -> TopicStats: ...

    async def subscription_groups(self, address: str) -> dict[str, SubscriptionGroupConfig]: ...


@runtime_checkable
class QueueReads(Protocol):
    """Per-queue reads that fill what consume stats leaves out and sample messages read-only.
    A back end without them still builds views: the rows stay missing and nothing is sampled."""

    async def query_consumer_offset(self, address: str, group: str, topic: str, queue_id: int) -> int | None: ...

    async def pull_by_offset(
        self, address: str, broker_name: str, topic: str, queue_id: int, offset: int, max_nums: int = 32
    ) -> list[SampledMessage]: ...


#: messages read back per queue when sampling tags (one pull: the broker answers at most 32)
SAMPLE_PER_QUEUE = 32


async def _fill_missing_rows(
    reads: BrokerReads, masters: Mapping[str, str], group: str, stats_by_broker: Mapping[str, ConsumeStats],
    topic_queues: Mapping[str, tuple[MessageQueue, ...]], owners: Mapping[MessageQueue, str],
) -> list[QueueProgress]:
    """Rows for the queues consume stats left out although the broker answered it.

    The broker drops a topic from ConsumeStats while the topic is absent from the group's
    subscription table, which, in a group whose clients subscribe different topics, flips with
    every heartbeat. The offsets are still there: the consumer offset comes from the broker's
    offset table (QUERY_CONSUMER_OFFSET, per queue) and the broker offset from topic stats. A
    topic none of whose queues has a committed offset is left out, as ConsumeStats would; a queue
    whose offsets cannot be read gets a row marked ``unknown``.
    """
    if not isinstance(reads, QueueReads):
        return []
    listed = {mq for s in stats_by_broker.values() for mq in s.offsets}
    wanted: dict[tuple[str, str], list[MessageQueue]] = {}
    for topic, queues in topic_queues.items():
        for mq in queues:
            if mq not in listed and mq.broker_name in stats_by_broker and mq.broker_name in masters:
                wanted.setdefault((mq.broker_name, topic), []).append(mq)

    async def one(broker: str, topic: str, queues: list[MessageQueue]) -> list[QueueProgress]:
        addr = masters[broker]
        try:
            stats = await reads.topic_stats(addr, topic)
            committed = await asyncio.gather(
                *(reads.query_consumer_offset(addr, group, topic, mq.queue_id) for mq in queues))
        except errors.RmqctlError:
            return [QueueProgress(mq, 0, 0, None, 0, owners.get(mq), offsets_from="unknown") for mq in queues]
        if all(c is None for c in committed):
            return []  # the group never committed on this topic here: ConsumeStats would not list it
        max_offsets = {o.queue.queue_id: o.max_offset for o in stats.offsets}
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


async def sample_tags(
    reads: BrokerReads, masters: Mapping[str, str], view: GroupView, topics: Iterable[str],
    *, per_queue: int = SAMPLE_PER_QUEUE,
) -> GroupView:
    """``view`` with :attr:`GroupView.tag_samples` for every queue of ``topics``: the last
    ``per_queue`` messages of each, pulled by offset under the tools group (nothing committed).
    Queues that cannot be read are left out (their error goes into ``errors`` as
    ``sample:<broker>``)."""
    if not isinstance(reads, QueueReads):
        return view
    progress = {p.queue: p for p in view.progress}
    wanted = [mq for t in sorted(set(topics)) for mq in view.topic_queues.get(t, ()) if mq.broker_name in masters]

    async def one(mq: MessageQueue) -> TagSample | errors.RmqctlError:
        addr = masters[mq.broker_name]
        row = progress.get(mq)
        try:
            end = row.broker_offset if row is not None and row.known else await _max_offset(reads, addr, mq)
            start = max(0, end - per_queue)
            messages = await reads.pull_by_offset(addr, mq.broker_name, mq.topic, mq.queue_id, start, per_queue)
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


async def _max_offset(reads: BrokerReads, addr: str, mq: MessageQueue) -> int:
    stats = await reads.topic_stats(addr, mq.topic)
    return next((o.max_offset for o in stats.offsets if o.queue.queue_id == mq.queue_id), 0)


async def _connections(
    reads: BrokerReads, masters: Mapping[str, str], group: str
) -> tuple[dict[str, ConsumerConnection], dict[str, errors.RmqctlError]]:
    async def one(addr: str) -> ConsumerConnection | None:
        try:
            return await reads.consumer_connection(addr, group)
        except errors.ConsumerNotOnline:
            return None  # this broker has no live channel of the group: not a failure

    results, failures = await fan_out(masters, one)
    return {b: c for b, c in results.items() if c is not None}, failures


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
) -> GroupView:
    """The :class:`GroupView` of the parts every back end reads; the group's consume type, model
    and start point come from the first broker that lists its connections. ``sampled_at`` is the
    source clock's "now" in epoch ms (what the checks compare client timestamps with)."""
    first = next(iter(sorted(conns_by_broker.items())), None)
    cc0 = first[1] if first else None
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
    )


async def _running_infos(
    reads: BrokerReads, relay: Mapping[str, str], group: str
) -> tuple[dict[str, ConsumerRunningInfo], dict[str, errors.RmqctlError]]:
    """Each client's running info, asked through the broker in ``relay`` (client id → address)."""
    client_ids = sorted(relay)
    results = await asyncio.gather(
        *(reads.consumer_running_info(relay[cid], group, cid) for cid in client_ids), return_exceptions=True
    )
    infos: dict[str, ConsumerRunningInfo] = {}
    failures: dict[str, errors.RmqctlError] = {}
    for cid, result in zip(client_ids, results, strict=True):
        if isinstance(result, errors.RmqctlError):
            failures[f"client:{cid}"] = result
        elif isinstance(result, BaseException):
            raise result
        else:
            infos[cid] = result
    return infos, failures


async def _routes(reads: BrokerReads, topics: Sequence[str]) -> dict[str, TopicRoute | errors.RmqctlError]:
    """Each topic's route, or the error that says why there is none."""
    results = await asyncio.gather(*(reads.topic_route(t) for t in topics), return_exceptions=True)
    routes: dict[str, TopicRoute | errors.RmqctlError] = {}
    for topic, result in zip(topics, results, strict=True):
        if isinstance(result, BaseException) and not isinstance(result, errors.RmqctlError):
            raise result
        routes[topic] = result
    return routes


async def _dlq_offsets(
    reads: BrokerReads, dlq_topic: str
) -> tuple[tuple[TopicOffset, ...], dict[str, errors.RmqctlError]]:
    """The group's dead-letter queues (none until a message was given up on: no route yet)."""
    try:
        route = await reads.topic_route(dlq_topic)
    except errors.RmqctlError:
        return (), {}
    stats, failures = await fan_out(route.master_addrs(), lambda addr: reads.topic_stats(addr, dlq_topic))
    offsets = sorted((o for s in stats.values() for o in s.offsets), key=lambda o: o.queue)
    return tuple(offsets), {f"dlq:{b}": e for b, e in failures.items()}


async def build_group_view(
    reads: BrokerReads, masters: Mapping[str, str], group: str, *, clock: Clock, running_info: bool = True
) -> GroupView:
    """Everything about ``group``, stamped with ``clock``'s time; raises NotFound when no broker
    knows the group at all."""

    # The consume stats are the slowest read of a real broker. What needs only the connections
    # (each client's running info, relayed through a broker; the routes of the topics the
    # connections name; the DLQ's offsets) goes out while they are still on their way.
    stats = asyncio.ensure_future(fan_out(masters, lambda addr: reads.consume_stats(addr, group)))
    try:
        conns_by_broker, conn_failures = await _connections(reads, masters, group)
        connections, relay, duplicates = merge_connections(conns_by_broker, masters)
        known_topics = sorted({t for cc in conns_by_broker.values() for t in cc.subscriptions})
        (infos, info_failures), routes, (dlq, dlq_failures) = await asyncio.gather(
            _running_infos(reads, relay if running_info else {}, group),
            _routes(reads, known_topics),
            _dlq_offsets(reads, DLQ_PREFIX + group),
        )
        stats_by_broker, stats_failures = await stats
    finally:
        stats.cancel()  # only still running when something above failed

    failures: dict[str, errors.RmqctlError] = {**stats_failures, **conn_failures}
    if len(failures) == len(masters) and masters:
        detail = "; ".join(f"{b}: {e}" for b, e in failures.items())
        raise errors.ConnectionError(f"no broker answered for group {group!r}: {detail}")

    has_offsets = any(s.offsets for s in stats_by_broker.values())
    if not connections and not has_offsets and not failures:
        configs, _ = await fan_out(masters, reads.subscription_groups)
        if not any(group in table for table in configs.values()):
            raise errors.NotFound(
                f"consumer group {group!r} not found on any broker",
                hint="list groups with: rmqctl group list",
            )
    failures.update(info_failures)
    failures.update(dlq_failures)

    owners: dict[MessageQueue, str] = {}
    for cid in sorted(infos):
        for mq, pq in infos[cid].mq_table.items():
            if not pq.dropped:
                owners.setdefault(mq, cid)

    topics = set(known_topics)
    for ri in infos.values():
        topics.update(s.topic for s in ri.subscriptions)
    routes.update(await _routes(reads, sorted(topics - routes.keys())))  # a client's own topics
    topic_queues = {}
    for topic in sorted(topics):
        route = routes[topic]
        if isinstance(route, errors.RmqctlError):
            if not isinstance(route, errors.TopicNotExist):
                failures[f"route:{topic}"] = route
            continue
        topic_queues[topic] = tuple(route.read_queues())

    progress = _merge_progress(stats_by_broker, owners)
    extra = await _fill_missing_rows(reads, masters, group, stats_by_broker, topic_queues, owners)
    if extra:
        progress = tuple(sorted((*progress, *extra), key=lambda r: r.queue))

    return assemble_view(
        group, conns_by_broker, connections, duplicates, running_infos=dict(sorted(infos.items())),
        progress=progress, topic_queues=topic_queues, dlq=dlq, failures=failures,
        sampled_at=int(clock.now() * 1000),
    )


async def summarize_group(
    reads: BrokerReads, masters: Mapping[str, str], group: str
) -> GroupSummary:
    """One ``group list`` row: connections and total lag, never raising for one bad group."""
    try:
        (conns, conn_failures), (stats, stats_failures) = await asyncio.gather(
            _connections(reads, masters, group),
            fan_out(masters, lambda addr: reads.consume_stats(addr, group)),
        )
    except errors.RmqctlError as exc:
        return GroupSummary(group, 0, None, None, None, 0, error=str(exc))
    clients = {c.client_id: c for cc in conns.values() for c in cc.connections}
    cc0 = next(iter(conns.values()), None)
    diff = sum(
        e.broker_offset - e.consumer_offset for s in stats.values() for e in s.offsets.values()
    )
    tps = sum(s.consume_tps for s in stats.values())
    version = min((c.version for c in clients.values()), default=None)
    failures = {**stats_failures, **conn_failures}
    return GroupSummary(
        group=group,
        clients=len(clients),
        consume_type=cc0.consume_type if cc0 else None,
        message_model=cc0.message_model if cc0 else None,
        version=version_desc(version) if version is not None else None,
        total_diff=diff,
        consume_tps=tps,
        error="; ".join(f"{b}: {e}" for b, e in failures.items()) or None,
    )

