"""The dashboard back end: the read protocol through rocketmq-dashboard's REST API.

For operators who may reach only the dashboard (name server and broker ports firewalled). Each read
maps to the dashboard endpoint that carries the same facts a broker answers natively, and returns
model objects only. What no dashboard supplies is declared in :class:`~rmqctl.backends.Capabilities`,
never invented: the per-queue stats carry no pull offset (so inflight is unavailable), messages
cannot be read back by offset, the offset table cannot be asked per queue, and 1.x reads the
connections of one broker only (it takes no broker address).

Generations differ only here: 2.x takes a broker ``address`` on the consumer endpoints and keeps a
group list it can rebuild (``group.refresh.all``); 1.x answers for the broker it picks itself.

Must not import the CLI, the TUI, the emulator or pyspark; httpx only through
:mod:`rmqctl.dashboard.client`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any

from rmqctl import errors
from rmqctl.backends import Capabilities
from rmqctl.dashboard import wire
from rmqctl.dashboard.client import DashboardClient
from rmqctl.fanout import fan_out
from rmqctl.model import (
    RETRY_PREFIX,
    SYSTEM_GROUPS,
    ClusterInfo,
    ConsumerConnection,
    ConsumerRunningInfo,
    ConsumeStats,
    GroupSummary,
    Message,
    SampledMessage,
    SubscriptionGroupConfig,
    TopicRoute,
    TopicStats,
    encode_offset_message_id,
    retry_topic_groups,
    retry_topic_owner,
)

#: notes for what no dashboard generation supplies
NO_PULL_OFFSET = ("the dashboard's per-queue stats (QueueStatInfo) carry no pull offset, "
                  "so inflight cannot be computed through it")
NO_OFFSET_TOPICS = ("the dashboard cannot list the topics a group has committed offsets for "
                    "(QUERY_TOPICS_BY_CONSUMER), so topics no online client subscribes are not found")
ONE_BROKER_ONLY = ("dashboard 1.x reports the connections and stored subscriptions of one broker only "
                   "(no per-broker address parameter)")
#: the 2.x group list is a cache the dashboard builds on first use; callers racing it get this
CACHE_BUSY = "Cache is being built"
NO_PERMISSION = "no permission"
#: the dashboard finds one message per producer id, so a message's retry copies are not all seen
ONE_COPY_PER_ID = ("the dashboard's message page answers one message per id, so of a message's copies in "
                   "%RETRY% and %DLQ% at most one each is seen; count them with -n and the name servers")
#: ``ResponseCode.NO_MESSAGE`` and the texts of a message page that found nothing
NO_MESSAGE = 208
NOTHING_FOUND = ("but no message", "Failed to query message by Id")
#: the 2.x group list as the dashboard last built it (what a login that may not rebuild it reads)
CACHED_LIST = "/consumer/groupList.query"
TOPIC_NOT_EXIST = 17
CONSUMER_NOT_ONLINE = 206


class DashboardBackend:
    """A cluster's brokers seen through one dashboard (one HTTP client for the whole command)."""

    def __init__(self, client: DashboardClient) -> None:
        self.client = client
        self.description = f"dashboard {client.url}"
        self._cluster: tuple[ClusterInfo, dict[str, dict[int, dict[str, str]]]] | None = None
        #: message pages asked in this command (each spans every broker of its topic)
        self._lookups: dict[tuple[Any, ...], asyncio.Future[Any]] = {}
        self._claimed: dict[tuple[Any, ...], set[tuple[str, int]]] = {}

    @property
    def _v2(self) -> bool:
        return self.client.generation is None or self.client.generation.v2

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(
            unavailable={"pull_offset": NO_PULL_OFFSET, "inflight": NO_PULL_OFFSET, "offset_topics": NO_OFFSET_TOPICS},
            connections_of_one_broker=None if self._v2 else ONE_BROKER_ONLY,
            lists_groups=True, lists_subscription_groups=False, queue_offsets=False, message_reads=False,
            one_copy_per_unique_key=ONE_COPY_PER_ID, reads_proxies=False, reads_topic_configs=False,
            # a failed re-login ends the command (a slow request is one broker's failure, as natively)
            fatal=(errors.ConfigError,),
        )

    async def close(self) -> None:
        await self.client.close()

    # -- the cluster --------------------------------------------------------------------------

    async def _cluster_list(self) -> tuple[ClusterInfo, dict[str, dict[int, dict[str, str]]]]:
        if self._cluster is None:
            self._cluster = wire.cluster_list(await self.client.get("/cluster/list.query"))
        return self._cluster

    async def cluster_info(self) -> ClusterInfo:
        return (await self._cluster_list())[0]

    async def _broker_of(self, address: str) -> str:
        info = await self.cluster_info()
        return next((name for name, data in info.brokers.items() if address in data.addrs.values()), "")

    async def broker_runtime(self, address: str) -> dict[str, str]:
        info, tables = await self._cluster_list()
        for name, data in info.brokers.items():
            for broker_id, addr in data.addrs.items():
                if addr == address and broker_id in tables.get(name, {}):
                    return dict(tables[name][broker_id])
        raise errors.ConnectionError(f"{address}: the dashboard has no runtime info")

    async def topic_list(self) -> list[str]:
        # skipSysProcess=true: 2.x would otherwise rename system topics to "%SYS%<name>"
        return wire.topic_list(await self.client.get("/topic/list.query", {"skipSysProcess": "true"}))

    async def topic_route(self, topic: str) -> TopicRoute:
        try:
            return wire.topic_route(topic, await self.client.get("/topic/route.query", {"topic": topic}))
        except wire.DashboardRefused as exc:
            if exc.remote_code == TOPIC_NOT_EXIST:
                raise errors.TopicNotExist(TOPIC_NOT_EXIST, exc.remark) from exc
            raise

    async def topic_stats(self, address: str, topic: str) -> TopicStats:
        """One broker's part of the topic's stats (the dashboard answers for every broker at once)."""
        stats = wire.topic_stats(topic, await self.client.get("/topic/stats.query", {"topic": topic}))
        broker = await self._broker_of(address)
        return TopicStats(topic, tuple(o for o in stats.offsets if o.queue.broker_name == broker), stats.put_tps)

    # -- consumer groups ----------------------------------------------------------------------

    async def consumer_connections(
        self, address: str, groups: Sequence[str]
    ) -> Sequence[ConsumerConnection | errors.RmqctlError]:
        raise errors.UsageError("a dashboard answers one group's connections at a time")

    async def consumer_connection(self, address: str, group: str) -> ConsumerConnection:
        params = {"consumerGroup": group}
        if self._v2:
            params["address"] = address
        elif address != await self._one_broker_address(group):
            # 1.x asks one broker of its own choosing; the others cannot be asked
            raise errors.ConsumerNotOnline(CONSUMER_NOT_ONLINE, "dashboard 1.x asks one broker only")
        try:
            return wire.consumer_connection(await self.client.get("/consumer/consumerConnection.query", params))
        except wire.DashboardRefused as exc:
            # no live channel of the group on this broker (206), or, from 1.x, which looks up the
            # group's retry topic first, no such topic (17): the group is offline, not failing
            if exc.remote_code in (CONSUMER_NOT_ONLINE, TOPIC_NOT_EXIST):
                raise errors.ConsumerNotOnline(CONSUMER_NOT_ONLINE, exc.remark) from exc
            raise

    async def _one_broker_address(self, group: str) -> str:
        """The broker 1.x asks for a group's connections: the first of its retry topic's route."""
        masters = (await self.cluster_info()).masters()
        broker = next(iter(sorted(masters)), "")
        with contextlib.suppress(errors.RmqctlError):
            route = await self.topic_route(RETRY_PREFIX + group)
            broker = next((b.broker_name for b in route.broker_datas if b.broker_name in masters), broker)
        return masters.get(broker, "")

    async def consume_stats(self, address: str, group: str) -> ConsumeStats:
        path = "/consumer/queryTopicByConsumer.query"
        if self._v2:
            return wire.consume_stats(await self.client.get(path, {"consumerGroup": group, "address": address}))
        # 1.x answers for every broker at once: keep the asked broker's rows
        try:
            stats = wire.consume_stats(await self.client.get(path, {"consumerGroup": group}))
        except wire.DashboardRefused as exc:
            # 1.x finds the brokers through the group's retry topic, which the name server creates for a
            # group when its first client heartbeats: without it, and without a stored config, no broker
            # knows the group, which natively reads as no offsets (the service then says "not found").
            # A configured group whose stats cannot be read stays this broker's failure.
            unknown_group = exc.remote_code == TOPIC_NOT_EXIST and RETRY_PREFIX + group in (exc.remark or "")
            if not unknown_group or await self.subscription_group(address, group) is not None:
                raise
            return ConsumeStats({}, 0.0)
        broker = await self._broker_of(address)
        return ConsumeStats({mq: e for mq, e in stats.offsets.items() if mq.broker_name == broker},
                            stats.consume_tps)

    async def consumer_running_info(self, address: str, group: str, client_id: str) -> ConsumerRunningInfo:
        # the dashboard finds the client's broker itself
        data = await self.client.get("/consumer/consumerRunningInfo.query",
                                     {"consumerGroup": group, "clientId": client_id, "jstack": "false"})
        return wire.consumer_running_info(client_id, data)

    async def subscription_group(self, address: str, group: str) -> SubscriptionGroupConfig | None:
        configs = await self.client.get("/consumer/examineSubscriptionGroupConfig.query", {"consumerGroup": group})
        broker = await self._broker_of(address)
        for entry in wire.seq(configs, "ConsumerConfigInfo list"):
            doc = wire.obj(entry, "ConsumerConfigInfo")
            names = doc.get("brokerNameList") or []
            if not isinstance(names, list) or not names or broker in names:
                return wire.subscription_group_config(group, doc.get("subscriptionGroupConfig"))
        return None

    async def subscription_groups(self, address: str) -> dict[str, SubscriptionGroupConfig]:
        raise errors.UsageError("the dashboard lists no broker's group configs")

    async def _group_list(self) -> tuple[list[Any], bool]:
        """The group list's entries, and whether they are the 2.x cache as it is (not rebuilt now)."""
        if not self._v2:  # 1.x builds the list on every request
            return wire.seq(await self.client.get("/consumer/groupList.query"), "group list"), False
        # group.refresh.all rebuilds the 2.x cache, so new groups and current lag show up (what the
        # UI's refresh button does); a concurrent rebuild answers "Cache is being built"
        delay, waited = 0.2, 0.0
        path = "/consumer/group.refresh.all"
        while True:
            try:
                return wire.seq(await self.client.get(path), "group list"), path == CACHED_LIST
            except wire.DashboardRefused as exc:
                if NO_PERMISSION in (exc.remark or "") and path != CACHED_LIST:
                    # normal (non-admin) users may only call *.query paths: read the cache as is, and
                    # say so (each line carries the time the dashboard built it)
                    path = CACHED_LIST
                    continue
                if CACHE_BUSY not in (exc.remark or ""):
                    raise
            if waited >= self.client.timeout:  # as long as one request may take, no longer
                raise errors.TimeoutError(
                    f"dashboard {self.client.url}: its group list was still being built after {waited:g}s",
                    hint="raise --timeout")
            await asyncio.sleep(delay)
            waited += delay
            delay = min(delay * 2, 2.0)

    async def group_summaries(
        self, *, include_system: bool
    ) -> tuple[list[GroupSummary], dict[str, errors.RmqctlError]]:
        summaries: dict[str, GroupSummary] = {}
        entries, cached = await self._group_list()
        for entry in entries:
            summary = wire.group_summary(entry, cached=cached)
            if not include_system and (wire.is_system_summary(entry) or summary.group in SYSTEM_GROUPS):
                continue
            summaries[summary.group] = summary
        failures: dict[str, errors.RmqctlError] = {}
        # groups known only by their retry topic (config deleted, offsets kept): a broker's
        # listing names them too
        try:
            topics = await self.topic_list()
        except errors.RmqctlError as exc:
            if isinstance(exc, (errors.TimeoutError, errors.ConfigError)):
                raise
            failures["topics"] = exc
            topics = []
        # a dashboard lists every retry topic's suffix as a group, a POP group's per-topic retry
        # topics included: a client-less "group" whose retry topic belongs to another listed
        # group is one of those
        for name in [n for n, s in summaries.items() if not s.clients]:
            owner = retry_topic_owner(RETRY_PREFIX + name, topics=set(topics),
                                      groups=summaries.keys() - {name})
            if owner is not None and owner[1] is not None and owner[0] in summaries:
                del summaries[name]
        extra = sorted(retry_topic_groups(topics, configured=summaries))
        extra = [g for g in extra if g not in summaries and (include_system or g not in SYSTEM_GROUPS)]
        found, more = await fan_out({g: g for g in extra}, lambda g: self.client.get(
            "/consumer/group.query", {"consumerGroup": g}))
        for error in more.values():
            if isinstance(error, (errors.TimeoutError, errors.ConfigError)):
                raise error
        for name, doc in found.items():
            summaries[name] = wire.group_summary({**wire.obj(doc, "GroupConsumeInfo"), "group": name})
        failures.update({f"group:{g}": e for g, e in more.items()})
        return [summaries[g] for g in sorted(summaries)], failures

    # -- per queue: not through a dashboard ---------------------------------------------------

    async def query_consumer_offset(self, address: str, group: str, topic: str, queue_id: int) -> int | None:
        raise errors.UsageError("the dashboard cannot read one queue's committed offset")

    async def topics_by_consumer(self, address: str, group: str) -> list[str]:
        raise errors.UsageError("the dashboard cannot list the topics one group has offsets for")

    async def topic_message_types(self, address: str) -> Mapping[str, str]:
        raise errors.UsageError("the dashboard serves one topic's config at a time, not a broker's table")

    async def offset_topics(self, address: str) -> Mapping[str, frozenset[str]]:
        raise errors.UsageError("the dashboard does not serve a broker's offset table")

    async def broker_consume_stats(self, address: str) -> Mapping[str, ConsumeStats]:
        raise errors.UsageError("the dashboard reads consume stats one group at a time")

    async def pull_by_offset(
        self, address: str, broker_name: str, topic: str, queue_id: int, offset: int, max_nums: int = 32
    ) -> list[SampledMessage]:
        raise errors.UsageError("the dashboard cannot read messages back by offset")

    async def search_offset(self, address: str, topic: str, queue_id: int, timestamp_ms: int) -> int:
        raise errors.UsageError("the dashboard cannot read messages back by offset")

    async def pull_messages(
        self, address: str, broker_name: str, topic: str, queue_id: int, offset: int, max_nums: int = 32
    ) -> list[Message]:
        raise errors.UsageError("the dashboard cannot read messages back by offset")

    # -- one message: the dashboard's message pages ----------------------------------------------

    async def _broker_addresses(self) -> dict[str, str]:
        info = await self.cluster_info()
        return {addr: name for name, data in info.brokers.items() for addr in data.addrs.values()}

    async def _once(self, path: str, params: Mapping[str, str],
                    fetch: Callable[[str, Mapping[str, str]], Awaitable[Any]]) -> Any:
        """``fetch(path, params)``, asked once per command however many brokers ask: these pages
        already span every broker of the topic."""
        key = (path, tuple(sorted(params.items())))
        task = self._lookups.get(key)
        if task is None:
            task = self._lookups[key] = asyncio.ensure_future(fetch(path, params))
        return await asyncio.shield(task)

    async def _lookup(self, path: str, params: Mapping[str, str]) -> list[tuple[Message, bool]]:
        """The messages one message page answers; none when the page says none."""
        found: list[tuple[Message, bool]] = await self._once(path, params, self._fetch_messages)
        return found

    async def _fetch_messages(self, path: str, params: Mapping[str, str]) -> list[tuple[Message, bool]]:
        try:
            data = await self.client.get(path, dict(params))
        except wire.DashboardRefused as exc:
            if exc.remote_code == NO_MESSAGE or any(t in (exc.remark or "") for t in NOTHING_FOUND):
                return []
            raise
        views = [data["messageView"]] if isinstance(data, Mapping) and "messageView" in data else wire.seq(
            data or [], "message list")
        brokers = await self._broker_addresses()
        return [wire.message_view(v, brokers) for v in views if v]

    def _mine(self, found: list[tuple[Message, bool]], broker_name: str, claim: tuple[Any, ...]) -> list[Message]:
        """The messages of ``found`` stored on ``broker_name``; one whose store host is no known
        broker address goes, once, to the first broker that asks."""
        claimed = self._claimed.setdefault(claim, set())
        out = []
        for message, known in found:
            if known:
                if message.queue.broker_name == broker_name:
                    out.append(message)
            elif (where := (message.store_host, message.physical_offset)) not in claimed:
                claimed.add(where)
                out.append(dataclasses.replace(message, queue=dataclasses.replace(message.queue,
                                                                                   broker_name=broker_name)))
        return out

    async def view_message(self, address: str, broker_name: str, physical_offset: int,
                           topic: str | None = None) -> Message | None:
        if self._v2:
            # 2.x's id page asks the index for a producer's id only (queryMessage with uniqKey)
            raise errors.UsageError(
                "dashboard 2.x finds a message by the producer's id (UNIQ_KEY) or a key, not by the broker's "
                "offset id", hint="give the message's msg_id with --topic, or --key; or use -n with the name servers")
        if not topic:
            # 1.x finds the broker through the topic's route: without one it fails
            raise errors.UsageError("through a dashboard, a message id is looked up with its topic: add --topic TOPIC")
        host, _, port = address.rpartition(":")
        msg_id = encode_offset_message_id(host, int(port), physical_offset)
        params = {"msgId": msg_id, "topic": topic}
        found = await self._lookup("/message/viewMessage.query", params)
        return next((m for m in self._mine(found, broker_name, ("id", msg_id)) if m.offset_msg_id == msg_id), None)

    async def topic_consumers(self, address: str, topic: str) -> list[str]:
        data = await self._once("/topic/queryConsumerByTopic.query", {"topic": topic},
                                lambda path, params: self.client.get(path, dict(params)))
        return sorted(str(g) for g in wire.obj(data or {}, "consumers of a topic"))

    async def query_messages(self, address: str, broker_name: str, topic: str, key: str, *,
                             unique_key: bool = False) -> list[Message]:
        if unique_key:
            # the id page finds a producer's id through the index (one message per id)
            found = await self._lookup("/message/viewMessage.query", {"topic": topic, "msgId": key})
            found = [(m, known) for m, known in found if m.unique_key == key and m.queue.topic == topic]
        else:
            found = await self._lookup("/message/queryMessageByTopicAndKey.query", {"topic": topic, "key": key})
        return self._mine(found, broker_name, (topic, key, unique_key))


@contextlib.asynccontextmanager
async def open_dashboard_backend(url: str, *, username: str | None, password: str | None,
                                 timeout: float) -> AsyncIterator[DashboardBackend]:
    """A logged-in :class:`DashboardBackend` for one command; ``timeout`` bounds each request."""
    backend = DashboardBackend(DashboardClient(url, username=username, password=password, timeout=timeout))
    try:
        await backend.client.open()
        yield backend
    finally:
        await backend.close()
