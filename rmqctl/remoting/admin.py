"""Admin operations over the native protocol, returning model objects.

:class:`AdminClient` is what ``mqadmin``'s ``DefaultMQAdminExt`` is to Java: it knows the name
servers (trying each in turn when one is down), keeps pooled connections to brokers, signs
requests when credentials are configured, and turns every response into model objects or a
:class:`~rmqctl.errors.RemoteError`. :meth:`AdminClient.fan_out` runs one call against many
brokers with bounded concurrency and reports per-broker failures instead of raising.

Must not import the CLI, the TUI or anything above ``source``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TypeVar

from rmqctl import errors
from rmqctl.fanout import fan_out
from rmqctl.model import (
    ClusterInfo,
    ConsumerConnection,
    ConsumerRunningInfo,
    ConsumeStats,
    SampledMessage,
    SubscriptionGroupConfig,
    TopicRoute,
    TopicStats,
)
from rmqctl.remoting import bodies, frame
from rmqctl.remoting.acl import Credentials
from rmqctl.remoting.codes import RequestCode, ResponseCode
from rmqctl.remoting.connection import ConnectionPool, RequestHandler, split_address
from rmqctl.remoting.frame import RemotingCommand
from rmqctl.remoting.messages import decode_messages

T = TypeVar("T")

DEFAULT_TIMEOUT = 5.0
#: the group mqadmin's message tools pull under; built into every broker and never committed for
TOOLS_GROUP = "TOOLS_CONSUMER"
#: ``PullSysFlag.SUBSCRIPTION``: the pull carries its own expression (no commit, no suspend)
_PULL_FLAG_SUBSCRIPTION = 0x4
DEFAULT_CONCURRENCY = 16


def parse_namesrv(value: str) -> list[str]:
    """``'h1:9876;h2:9876'`` (mqadmin's form; commas accepted too) → validated addresses."""
    addrs = [a.strip() for a in value.replace(",", ";").split(";") if a.strip()]
    if not addrs:
        raise errors.UsageError("no name server address given", hint="use -n host:9876")
    for addr in addrs:
        split_address(addr)
    return addrs


class AdminClient:
    """Read-only admin client for one cluster (its name servers and every broker they list)."""

    def __init__(
        self,
        namesrv: Sequence[str],
        *,
        timeout: float = DEFAULT_TIMEOUT,
        credentials: Credentials | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        handler: RequestHandler | None = None,
    ) -> None:
        if not namesrv:
            raise errors.UsageError("no name server address given", hint="use -n host:9876")
        self.namesrv = list(namesrv)
        self.timeout = timeout
        self._pool = ConnectionPool(
            connect_timeout=timeout, credentials=credentials, handler=handler
        )
        self._ns_index = 0
        self._limit = asyncio.Semaphore(max(1, concurrency))

    async def close(self) -> None:
        await self._pool.close()

    async def __aenter__(self) -> AdminClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- transport --------------------------------------------------------------------------

    async def call(
        self,
        address: str,
        code: int,
        ext: Mapping[str, object] | None = None,
        *,
        body: bytes = b"",
        timeout: float | None = None,
        accept: Iterable[int] = (ResponseCode.SUCCESS,),
    ) -> RemotingCommand:
        """One request to one server; a response code outside ``accept`` raises RemoteError."""
        cmd = frame.request(code, dict(ext or {}), body)
        async with self._limit:
            response = await self._pool.request(address, cmd, timeout or self.timeout)
        if response.code not in tuple(accept):
            raise errors.RemoteError.for_code(response.code, response.remark, address=address)
        return response

    async def call_namesrv(
        self, code: int, ext: Mapping[str, object] | None = None
    ) -> RemotingCommand:
        """Ask the name servers in turn, starting with the last one that answered."""
        failures: list[errors.RmqctlError] = []
        count = len(self.namesrv)
        for step in range(count):
            index = (self._ns_index + step) % count
            address = self.namesrv[index]
            try:
                response = await self.call(address, code, ext)
            except (errors.ConnectionError, errors.TimeoutError) as exc:
                failures.append(exc)
                continue
            self._ns_index = index
            return response
        timed_out = all(isinstance(f, errors.TimeoutError) for f in failures)
        exc_type = errors.TimeoutError if timed_out else errors.ConnectionError
        raise exc_type(
            f"no name server reachable ({'; '.join(map(str, failures))})",
            hint="check -n/--namesrv, NAMESRV_ADDR or the active context",
        )

    async def fan_out(
        self, targets: Mapping[str, str], fn: Callable[[str], Awaitable[T]]
    ) -> tuple[dict[str, T], dict[str, errors.RmqctlError]]:
        """Run ``fn(address)`` for every ``name → address``; return results and per-name errors."""
        return await fan_out(targets, fn)

    # -- name server ------------------------------------------------------------------------

    async def cluster_info(self) -> ClusterInfo:
        response = await self.call_namesrv(RequestCode.GET_BROKER_CLUSTER_INFO)
        return bodies.cluster_info(response.body)

    async def topic_route(self, topic: str) -> TopicRoute:
        response = await self.call_namesrv(
            RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic, "acceptStandardJsonOnly": True}
        )
        return bodies.topic_route(topic, response.body)

    async def topic_list(self) -> list[str]:
        response = await self.call_namesrv(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
        return sorted(bodies.string_list(response.body, "topicList"))

    # -- broker -----------------------------------------------------------------------------

    async def topic_stats(self, address: str, topic: str) -> TopicStats:
        response = await self.call(address, RequestCode.GET_TOPIC_STATS_INFO, {"topic": topic})
        return bodies.topic_stats(topic, response.body)

    async def consumer_connection(self, address: str, group: str) -> ConsumerConnection:
        response = await self.call(
            address, RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": group}
        )
        return bodies.consumer_connection(response.body)

    async def consume_stats(
        self, address: str, group: str, topic: str | None = None
    ) -> ConsumeStats:
        response = await self.call(
            address,
            RequestCode.GET_CONSUME_STATS,
            {"consumerGroup": group, "topic": topic},
            timeout=self.timeout * 3,  # mqadmin allows this call three times the timeout
        )
        return bodies.consume_stats(response.body)

    async def consumer_running_info(
        self, address: str, group: str, client_id: str
    ) -> ConsumerRunningInfo:
        response = await self.call(
            address,
            RequestCode.GET_CONSUMER_RUNNING_INFO,
            {"consumerGroup": group, "clientId": client_id, "jstackEnable": False},
            # the broker waits up to 10 s for the client before answering 207
            timeout=max(self.timeout, 12.0),
        )
        return bodies.consumer_running_info(client_id, response.body)

    async def consumer_ids(self, address: str, group: str) -> list[str]:
        response = await self.call(
            address,
            RequestCode.GET_CONSUMER_LIST_BY_GROUP,
            {"consumerGroup": group},
            accept=(ResponseCode.SUCCESS, ResponseCode.SYSTEM_ERROR),
        )
        if response.code != ResponseCode.SUCCESS:
            return []  # "no consumer for this group"
        return bodies.string_list(response.body, "consumerIdList")

    async def topic_consumers(self, address: str, topic: str) -> list[str]:
        response = await self.call(address, RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, {"topic": topic})
        return sorted(bodies.string_list(response.body, "groupList"))

    async def subscription_groups(self, address: str) -> dict[str, SubscriptionGroupConfig]:
        response = await self.call(address, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        return bodies.subscription_groups(response.body)

    async def broker_runtime_info(self, address: str) -> dict[str, str]:
        response = await self.call(address, RequestCode.GET_BROKER_RUNTIME_INFO)
        return bodies.kv_table(response.body)

    # -- read-only offset and message reads ------------------------------------------------------

    async def query_consumer_offset(self, address: str, group: str, topic: str, queue_id: int) -> int | None:
        """QUERY_CONSUMER_OFFSET (14): the offset the broker's offset table holds for ``group``
        on one queue, or ``None`` when nothing was ever committed (asked with
        ``setZeroIfNotFound=false`` so "never committed" is not mistaken for 0)."""
        response = await self.call(
            address, RequestCode.QUERY_CONSUMER_OFFSET,
            {"consumerGroup": group, "topic": topic, "queueId": queue_id, "setZeroIfNotFound": False},
            accept=(ResponseCode.SUCCESS, ResponseCode.QUERY_NOT_FOUND),
        )
        if response.code != ResponseCode.SUCCESS:
            return None
        try:
            return int(response.ext_fields.get("offset", ""))
        except ValueError as exc:
            raise errors.ProtocolError(f"QUERY_CONSUMER_OFFSET answered no offset from {address}") from exc

    async def max_offset(self, address: str, topic: str, queue_id: int) -> int:
        """GET_MAX_OFFSET (30): the next offset to be written in one queue."""
        response = await self.call(address, RequestCode.GET_MAX_OFFSET, {"topic": topic, "queueId": queue_id})
        try:
            return int(response.ext_fields.get("offset", ""))
        except ValueError as exc:
            raise errors.ProtocolError(f"GET_MAX_OFFSET answered no offset from {address}") from exc

    async def pull_by_offset(
        self, address: str, broker_name: str, topic: str, queue_id: int, offset: int, max_nums: int = 32
    ) -> list[SampledMessage]:
        """PULL_MESSAGE (11) from ``offset`` under :data:`TOOLS_GROUP` with its own ``*``
        expression, like mqadmin's message tools: no commit flag, no long polling, so no consumer
        group's offsets or subscriptions are touched. Returns at most ``max_nums`` messages."""
        response = await self.call(
            address, RequestCode.PULL_MESSAGE,
            {"consumerGroup": TOOLS_GROUP, "topic": topic, "queueId": queue_id, "queueOffset": offset,
             "maxMsgNums": max_nums, "sysFlag": _PULL_FLAG_SUBSCRIPTION, "commitOffset": 0,
             "suspendTimeoutMillis": 0, "subscription": "*", "subVersion": 0, "expressionType": "TAG"},
            accept=(ResponseCode.SUCCESS, ResponseCode.PULL_NOT_FOUND, ResponseCode.PULL_RETRY_IMMEDIATELY,
                    ResponseCode.PULL_OFFSET_MOVED),
        )
        if response.code != ResponseCode.SUCCESS:
            return []
        return decode_messages(response.body, broker_name)[:max_nums]
