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
    SubscriptionGroupConfig,
    TopicRoute,
    TopicStats,
)
from rmqctl.remoting import bodies, frame
from rmqctl.remoting.acl import Credentials
from rmqctl.remoting.codes import RequestCode, ResponseCode
from rmqctl.remoting.connection import ConnectionPool, RequestHandler, split_address
from rmqctl.remoting.frame import RemotingCommand

_KNOWN_CODES = frozenset(int(c) for c in ResponseCode)

T = TypeVar("T")

DEFAULT_TIMEOUT = 5.0
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
            name = ResponseCode(response.code).name if response.code in _KNOWN_CODES else None
            raise errors.RemoteError.for_code(response.code, response.remark, address=address, name=name)
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
