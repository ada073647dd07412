"""Admin operations over the native protocol, returning model objects.

:class:`AdminClient` is what ``mqadmin``'s ``DefaultMQAdminExt`` is to Java: it knows the name
servers (trying each in turn when one is down), keeps pooled connections to brokers, signs
requests when credentials are configured, and turns every response into model objects or a
:class:`~rmqctl.errors.RemoteError`. :meth:`AdminClient.fan_out` runs one call against many
brokers with bounded concurrency and reports per-broker failures instead of raising.

Every request has one deadline, ``timeout`` seconds, that covers connecting (or reconnecting),
sending, waiting for the answer and parsing it; an answer parsed after its deadline is a
:class:`~rmqctl.errors.TimeoutError` like one that never came. No call waits longer than that
(waiting for a free slot of the ``concurrency`` limit does not count).

Must not import the CLI, the TUI or anything above ``source``.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TypeVar

from rmqctl import errors
from rmqctl.fanout import fan_out
from rmqctl.model import (
    ClusterInfo,
    ConsumerConnection,
    ConsumerRunningInfo,
    ConsumeStats,
    Message,
    SampledMessage,
    SubscriptionGroupConfig,
    TopicRoute,
    TopicStats,
)
from rmqctl.remoting import bodies, frame
from rmqctl.remoting.acl import Credentials
from rmqctl.remoting.codes import RequestCode, ResponseCode
from rmqctl.remoting.connection import ConnectionPool, RequestHandler, split_address
from rmqctl.remoting.endpoint import Endpoint
from rmqctl.remoting.frame import RemotingCommand
from rmqctl.remoting.messages import decode_full_messages, decode_messages
from rmqctl.remoting.permissions import denied, is_acl_refusal, is_proxy_acl_refusal
from rmqctl.remoting.tls import TlsOptions

_KNOWN_CODES = frozenset(int(c) for c in ResponseCode)

T = TypeVar("T")

DEFAULT_TIMEOUT = 5.0
#: the group mqadmin's message tools pull under; built into every broker and never committed for
TOOLS_GROUP = "TOOLS_CONSUMER"
#: ``PullSysFlag.SUBSCRIPTION``: the pull carries its own expression (no commit, no suspend)
_PULL_FLAG_SUBSCRIPTION = 0x4
#: ``MixAll.UNIQUE_MSG_QUERY_FLAG``: an ext field saying the key of QUERY_MESSAGE is a unique key
UNIQUE_KEY_QUERY = "_UNIQUE_KEY_QUERY"
#: ``Long.MAX_VALUE``: the end of an index query's time range when none is given
_END_OF_TIME = 2**63 - 1
DEFAULT_CONCURRENCY = 16
#: Seconds to wait for the preferred name server before asking the next one as well.
NAMESRV_STAGGER = 0.5


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
        tls: TlsOptions | None = None,
    ) -> None:
        if not namesrv:
            raise errors.UsageError("no name server address given", hint="use -n host:9876")
        self.namesrv = list(namesrv)
        self.timeout = timeout
        self._pool = ConnectionPool(
            connect_timeout=timeout, credentials=credentials, handler=handler, tls=tls
        )
        self._ns_index = 0
        self._limit = asyncio.Semaphore(max(1, concurrency))
        self._concurrency = max(1, concurrency)

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
        return await self.fetch(address, code, ext, _as_is, body=body, timeout=timeout, accept=accept)

    async def fetch(
        self,
        address: str,
        code: int,
        ext: Mapping[str, object] | None,
        parse: Callable[[RemotingCommand], T],
        *,
        body: bytes = b"",
        timeout: float | None = None,
        accept: Iterable[int] = (ResponseCode.SUCCESS,),
    ) -> T:
        """Like :meth:`call`, then ``parse`` the response, all within one deadline."""
        limit = timeout or self.timeout
        cmd = frame.request(code, dict(ext or {}), body)
        loop = asyncio.get_running_loop()
        async with self._limit:
            started = loop.time()
            response = await self._pool.request(address, cmd, limit)
        return self._answer(address, code, cmd, response, parse, tuple(accept), started, limit)

    def _answer(self, address: str, code: int, cmd: RemotingCommand, response: RemotingCommand,
                parse: Callable[[RemotingCommand], T], accept: tuple[int, ...], started: float, limit: float) -> T:
        """What :meth:`fetch` makes of ``response``: the parsed answer, or the error it raises."""
        if response.code not in accept:
            if (response.code == ResponseCode.NO_PERMISSION and is_acl_refusal(response.remark)) or (
                    response.code == ResponseCode.SYSTEM_ERROR and is_proxy_acl_refusal(response.remark)):
                # name what is missing, and for whom (a proxy says it as a SYSTEM_ERROR)
                raise denied(code, cmd.ext_fields, response.remark, address=address,
                             access_key=self._pool.credentials.access_key if self._pool.credentials else None,
                             response_code=response.code)
            name = ResponseCode(response.code).name if response.code in _KNOWN_CODES else None
            raise errors.RemoteError.for_code(response.code, response.remark, address=address, name=name)
        try:
            value = parse(response)
        except errors.ProtocolError as exc:
            exc.raw = exc.raw or response.body  # for --debug
            raise
        elapsed = asyncio.get_running_loop().time() - started
        if elapsed > limit:
            raise errors.TimeoutError(
                f"request {code} to {address} timed out after {round(limit, 2):g}s "
                f"(its answer took {elapsed:.1f}s to arrive and read)"
            )
        return value

    async def fetch_many(
        self,
        address: str,
        code: int,
        exts: Sequence[Mapping[str, object] | None],
        parse: Callable[[RemotingCommand], T],
        *,
        timeout: float | None = None,
        accept: Iterable[int] = (ResponseCode.SUCCESS,),
    ) -> list[T | errors.RmqctlError]:
        """:meth:`fetch` of one request per item of ``exts`` to one server: each item's parsed
        answer or the error :meth:`fetch` raises for it, in order.

        The requests are pipelined on the server's pooled connection within the ``concurrency``
        limit and read by a callback when their answers come, without a task or a deadline timer
        each; each keeps its own deadline of ``timeout`` seconds from when it was sent (one timer
        watches the oldest). When no more may go out, more are sent once half of those in flight
        are answered, together in one write, so that the server reads and answers them together too (sent one by one
        as slots free, each would cost a system call at both ends). A request whose connection
        was lost or told to go away is asked again on its own with :meth:`fetch`, which
        reconnects."""
        limit = timeout or self.timeout
        accepted = tuple(accept)
        loop = asyncio.get_running_loop()
        count = len(exts)
        results: list[T | errors.RmqctlError | None] = [None] * count
        if not count:
            return []
        try:
            async with asyncio.timeout(limit):
                conn = await self._pool.get(address)
        except TimeoutError as exc:  # the builtin one, raised by asyncio.timeout
            failed: errors.RmqctlError = errors.TimeoutError(
                f"request {int(code)} to {address} timed out after {round(limit, 2):g}s")
            failed.__cause__ = exc
            return [failed] * count
        except errors.RmqctlError as exc:
            return [exc] * count
        again: list[int] = []
        #: requests sent and not answered, in the order sent (so by deadline): opaque → index,
        #: deadline, the endpoint that sent it
        waiting: dict[int, tuple[int, float, Endpoint]] = {}
        unfinished = count
        finished: asyncio.Future[None] = loop.create_future()
        timer: asyncio.TimerHandle | None = None
        cmds: list[RemotingCommand] = []
        window = self._concurrency
        #: set when the requests in flight fall to ``low_water``
        room: asyncio.Future[None] | None = None
        low_water = 0

        def finish(index: int, value: T | errors.RmqctlError | None) -> None:
            nonlocal unfinished
            results[index] = value
            self._limit.release()
            unfinished -= 1
            if not unfinished and not finished.done():
                finished.set_result(None)
            if room is not None and len(waiting) <= low_water and not room.done():
                room.set_result(None)

        def answered(index: int, opaque: int, started: float, future: asyncio.Future[RemotingCommand]) -> None:
            if waiting.pop(opaque, None) is None:
                return  # it timed out, or the batch was given up
            if future.cancelled() or future.exception() is not None or future.result().code == ResponseCode.GO_AWAY:
                # the connection failed or is going away: :meth:`fetch` reconnects and names
                # what went wrong the way it does for one request
                again.append(index)
                finish(index, None)
                return
            try:
                finish(index, self._answer(address, code, cmds[index], future.result(), parse, accepted, started,
                                           limit))
            except errors.RmqctlError as exc:
                finish(index, exc)

        #: the timer's callback, which arms the next timer through this list, not its own name:
        #: a function naming itself would be a reference cycle holding, through ``finish``, every
        #: answer until the collector's next pass over the oldest objects (a group list holds the
        #: collector off while it reads)
        rearm: list[Callable[[], None]] = []

        def expire() -> None:
            nonlocal timer
            timer = None
            now = loop.time()
            for opaque, (index, deadline, endpoint) in list(waiting.items()):
                if deadline > now:
                    timer = loop.call_at(deadline, rearm[0])
                    return
                del waiting[opaque]
                endpoint.forget(opaque)
                finish(index, errors.TimeoutError(
                    f"request {int(code)} to {address} timed out after {round(limit, 2):g}s"))

        rearm.append(expire)
        try:
            for index, ext in enumerate(exts):
                cmd = frame.request(code, dict(ext or {}))
                cmds.append(cmd)
                if len(waiting) >= window or (waiting and self._limit.locked()):
                    low_water = len(waiting) // 2
                    room = loop.create_future()
                    await room
                    room = None
                await self._limit.acquire()
                started = loop.time()
                try:
                    endpoint, opaque, future = conn.start_request(cmd)
                except errors.ConnectionLost:
                    again.append(index)
                    finish(index, None)
                    continue
                waiting[opaque] = (index, started + limit, endpoint)
                future.add_done_callback(functools.partial(answered, index, opaque, started))
                if timer is None:
                    timer = loop.call_at(started + limit, expire)
            await finished
        finally:
            if timer is not None:
                timer.cancel()
            for opaque, (_, _, endpoint) in waiting.items():  # only when given up half-way
                endpoint.forget(opaque)
                self._limit.release()
            waiting.clear()
            rearm.clear()

        async def alone(index: int) -> T | errors.RmqctlError:
            try:
                return await self.fetch(address, code, exts[index], parse, timeout=timeout, accept=accepted)
            except errors.RmqctlError as exc:
                return exc

        for index, value in zip(again, await asyncio.gather(*(alone(i) for i in again)), strict=True):
            results[index] = value
        return results  # type: ignore[return-value]  # every item is set by now

    async def call_namesrv(
        self, code: int, ext: Mapping[str, object] | None = None
    ) -> RemotingCommand:
        """Ask the name servers in turn, starting with the last one that answered."""
        return await self.fetch_namesrv(code, ext, _as_is)

    async def fetch_namesrv(
        self, code: int, ext: Mapping[str, object] | None, parse: Callable[[RemotingCommand], T]
    ) -> T:
        """:meth:`call_namesrv`, then ``parse`` the answer, all within one request's deadline.

        The last name server that answered is asked first; when it has not answered within
        :data:`NAMESRV_STAGGER` seconds (or failed), the next one is asked too, and so on: the
        first answer wins. Silent name servers therefore cost one deadline in all, not one each.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        count = len(self.namesrv)
        order = [(self._ns_index + step) % count for step in range(count)]
        failures: list[errors.RmqctlError] = []
        running: dict[asyncio.Task[T], int] = {}

        def ask(index: int) -> None:
            remaining = deadline - loop.time()
            if remaining <= 0:  # the deadline is over: a request now could only time out
                failures.append(errors.TimeoutError(f"{self.namesrv[index]} not asked: the "
                                                    f"{round(self.timeout, 2):g}s deadline had passed"))
                return
            coro = self.fetch(self.namesrv[index], code, ext, parse, timeout=remaining)
            running[asyncio.ensure_future(coro)] = index

        next_start = loop.time()
        try:
            while running or order:
                if order and (not running or loop.time() >= next_start):
                    ask(order.pop(0))
                    next_start = loop.time() + NAMESRV_STAGGER
                    if not running:
                        continue  # not asked (no time left): name the next one the same way
                # every request carries what is left of the deadline, so this ends by then
                wait = max(0.0, next_start - loop.time()) if order else None
                done, _ = await asyncio.wait(running, timeout=wait, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    index = running.pop(task)
                    error = task.exception()
                    if error is None:
                        self._ns_index = index
                        return task.result()
                    if not isinstance(error, (errors.ConnectionError, errors.TimeoutError)):
                        raise error  # a real answer (e.g. refused): the others would say the same
                    failures.append(error)
        finally:
            for task in running:
                task.cancel()
            if running:
                await asyncio.gather(*running, return_exceptions=True)
        timed_out = all(isinstance(f, errors.TimeoutError) for f in failures)
        exc_type: type[errors.RmqctlError] = errors.TimeoutError if timed_out else errors.ConnectionError
        if failures and all(isinstance(f, errors.TlsMismatch) for f in failures):
            exc_type = errors.TlsMismatch
        hints = {f.hint for f in failures}
        raise exc_type(
            f"no name server reachable ({'; '.join(map(str, failures))})",
            # every one failed alike (TLS): its hint says what to do
            hint=hints.pop() if len(hints) == 1 and None not in hints
            else "check -n/--namesrv, NAMESRV_ADDR or the active context",
        )

    async def fan_out(
        self, targets: Mapping[str, str], fn: Callable[[str], Awaitable[T]]
    ) -> tuple[dict[str, T], dict[str, errors.RmqctlError]]:
        """Run ``fn(address)`` for every ``name → address``; return results and per-name errors."""
        return await fan_out(targets, fn)

    # -- name server ------------------------------------------------------------------------

    async def cluster_info(self) -> ClusterInfo:
        return await self.fetch_namesrv(
            RequestCode.GET_BROKER_CLUSTER_INFO, None, lambda r: bodies.cluster_info(r.body)
        )

    async def topic_route(self, topic: str) -> TopicRoute:
        return await self.fetch_namesrv(
            RequestCode.GET_ROUTEINFO_BY_TOPIC,
            {"topic": topic, "acceptStandardJsonOnly": True},
            lambda r: bodies.topic_route(topic, r.body),
        )

    async def topic_list(self) -> list[str]:
        return sorted(await self.fetch_namesrv(
            RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, None,
            lambda r: bodies.string_list(r.body, "topicList"),
        ))

    # -- broker -----------------------------------------------------------------------------

    async def topic_stats(self, address: str, topic: str) -> TopicStats:
        return await self.fetch(
            address, RequestCode.GET_TOPIC_STATS_INFO, {"topic": topic},
            lambda r: bodies.topic_stats(topic, r.body),
        )

    async def consumer_connection(self, address: str, group: str) -> ConsumerConnection:
        return await self.fetch(
            address, RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": group},
            lambda r: bodies.consumer_connection(r.body),
        )

    async def consumer_connections(
        self, address: str, groups: Sequence[str]
    ) -> list[ConsumerConnection | errors.RmqctlError]:
        """:meth:`consumer_connection` of many groups on one broker, pipelined (:meth:`fetch_many`):
        each group's answer or its error, in order."""
        return await self.fetch_many(
            address, RequestCode.GET_CONSUMER_CONNECTION_LIST, [{"consumerGroup": g} for g in groups],
            lambda r: bodies.consumer_connection(r.body),
        )

    async def consume_stats(
        self, address: str, group: str, topic: str | None = None
    ) -> ConsumeStats:
        # mqadmin allows this call three times its timeout; here --timeout is a promise.
        return await self.fetch(
            address, RequestCode.GET_CONSUME_STATS, {"consumerGroup": group, "topic": topic},
            lambda r: bodies.consume_stats(r.body),
        )

    async def broker_consume_stats(self, address: str, *, timeout: float | None = None) -> dict[str, ConsumeStats]:
        """GET_BROKER_CONSUME_STATS (317, ``isOrder`` false: every topic): the consume stats of
        every group in the broker's subscription-group table, by group. ``pullOffset`` is not
        part of this answer (see :func:`~rmqctl.remoting.bodies.broker_consume_stats`)."""
        return await self.fetch(
            address, RequestCode.GET_BROKER_CONSUME_STATS, {"isOrder": False},
            lambda r: bodies.broker_consume_stats(r.body), timeout=timeout,
        )

    async def topic_configs(self, address: str) -> dict[str, bodies.TopicConfig]:
        """GET_ALL_TOPIC_CONFIG (21): every topic config of one broker, by name."""
        return await self.fetch(address, RequestCode.GET_ALL_TOPIC_CONFIG, None,
                                lambda r: bodies.topic_configs(r.body))

    async def topic_queue_counts(self, address: str) -> dict[str, tuple[int, int]]:
        """GET_ALL_TOPIC_CONFIG (21), only each topic's read and write queue counts, by name."""
        return await self.fetch(address, RequestCode.GET_ALL_TOPIC_CONFIG, None,
                                lambda r: bodies.topic_queue_counts(r.body))

    async def consumer_running_info(
        self, address: str, group: str, client_id: str
    ) -> ConsumerRunningInfo:
        # The broker waits up to 10 s for the client before answering 207; with a shorter
        # --timeout a client that hangs shows up as a timeout instead.
        return await self.fetch(
            address,
            RequestCode.GET_CONSUMER_RUNNING_INFO,
            {"consumerGroup": group, "clientId": client_id, "jstackEnable": False},
            lambda r: bodies.consumer_running_info(client_id, r.body),
        )

    async def consumer_ids(self, address: str, group: str) -> list[str]:
        def parse(response: RemotingCommand) -> list[str]:
            if response.code != ResponseCode.SUCCESS:
                return []  # "no consumer for this group"
            return bodies.string_list(response.body, "consumerIdList")

        return await self.fetch(
            address,
            RequestCode.GET_CONSUMER_LIST_BY_GROUP,
            {"consumerGroup": group},
            parse,
            accept=(ResponseCode.SUCCESS, ResponseCode.SYSTEM_ERROR),
        )

    async def topics_by_consumer(self, address: str, group: str) -> list[str]:
        """QUERY_TOPICS_BY_CONSUMER (343): the topics ``group`` has committed offsets for here."""
        return sorted(await self.fetch(
            address, RequestCode.QUERY_TOPICS_BY_CONSUMER, {"group": group},
            lambda r: bodies.string_list(r.body, "topicList"),
        ))

    async def consumer_offsets(self, address: str) -> dict[tuple[str, str], dict[int, int]]:
        """GET_ALL_CONSUMER_OFFSET (43): the broker's whole offset table, ``(topic, group)`` →
        {queue id: committed offset}."""
        return await self.fetch(address, RequestCode.GET_ALL_CONSUMER_OFFSET, None,
                                lambda r: bodies.consumer_offsets(r.body))

    async def topic_consumers(self, address: str, topic: str) -> list[str]:
        return sorted(await self.fetch(
            address, RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, {"topic": topic},
            lambda r: bodies.string_list(r.body, "groupList"),
        ))

    async def subscription_groups(self, address: str) -> dict[str, SubscriptionGroupConfig]:
        return await self.fetch(
            address, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG, None,
            lambda r: bodies.subscription_groups(r.body),
        )

    async def broker_runtime_info(self, address: str) -> dict[str, str]:
        return await self.fetch(
            address, RequestCode.GET_BROKER_RUNTIME_INFO, None, lambda r: bodies.kv_table(r.body)
        )

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

    async def search_offset(self, address: str, topic: str, queue_id: int, timestamp_ms: int) -> int:
        """SEARCH_OFFSET_BY_TIMESTAMP (29): the offset of the first message of one queue stored
        at or after ``timestamp_ms`` (the queue's max offset when none is)."""
        response = await self.call(address, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP,
                                   {"topic": topic, "queueId": queue_id, "timestamp": timestamp_ms})
        try:
            return int(response.ext_fields.get("offset", ""))
        except ValueError as exc:
            raise errors.ProtocolError(f"SEARCH_OFFSET_BY_TIMESTAMP answered no offset from {address}") from exc

    async def pull_by_offset(
        self, address: str, broker_name: str, topic: str, queue_id: int, offset: int, max_nums: int = 32
    ) -> list[SampledMessage]:
        """PULL_MESSAGE (11) from ``offset`` under :data:`TOOLS_GROUP` with its own ``*``
        expression, like mqadmin's message tools: no commit flag, no long polling, so no consumer
        group's offsets or subscriptions are touched. Returns at most ``max_nums`` messages."""
        body = await self._tools_pull(address, topic, queue_id, offset, max_nums)
        return decode_messages(body, broker_name)[:max_nums] if body is not None else []

    async def _tools_pull(self, address: str, topic: str, queue_id: int, offset: int, max_nums: int) -> bytes | None:
        """The body of one read-only pull under :data:`TOOLS_GROUP`; ``None`` when the broker
        found nothing to return (no message there, or the offset moved)."""
        response = await self.call(
            address, RequestCode.PULL_MESSAGE,
            {"consumerGroup": TOOLS_GROUP, "topic": topic, "queueId": queue_id, "queueOffset": offset,
             "maxMsgNums": max_nums, "sysFlag": _PULL_FLAG_SUBSCRIPTION, "commitOffset": 0,
             "suspendTimeoutMillis": 0, "subscription": "*", "subVersion": 0, "expressionType": "TAG"},
            accept=(ResponseCode.SUCCESS, ResponseCode.PULL_NOT_FOUND, ResponseCode.PULL_RETRY_IMMEDIATELY,
                    ResponseCode.PULL_OFFSET_MOVED),
        )
        return response.body if response.code == ResponseCode.SUCCESS else None

    async def pull_messages(
        self, address: str, broker_name: str, topic: str, queue_id: int, offset: int, max_nums: int = 32
    ) -> list[Message]:
        """:meth:`pull_by_offset` keeping everything of each message (properties, body, hosts)."""
        body = await self._tools_pull(address, topic, queue_id, offset, max_nums)
        return decode_full_messages(body, broker_name)[:max_nums] if body is not None else []

    async def view_message(self, address: str, broker_name: str, physical_offset: int,
                           topic: str | None = None) -> Message | None:
        """VIEW_MESSAGE_BY_ID (33): the message at one commit-log offset of the broker at
        ``address`` (what an offset message id names); ``None`` when the broker has none there
        (it answers SYSTEM_ERROR "can not find message by the offset")."""
        ext: dict[str, object] = {"offset": physical_offset}
        if topic:
            ext["topic"] = topic  # 5.x brokers check ACL permissions on it
        response = await self.call(address, RequestCode.VIEW_MESSAGE_BY_ID, ext,
                                   accept=(ResponseCode.SUCCESS, ResponseCode.SYSTEM_ERROR))
        if response.code != ResponseCode.SUCCESS or not response.body:
            return None
        found = decode_full_messages(response.body, broker_name)
        return found[0] if found else None

    async def query_messages(
        self, address: str, broker_name: str, topic: str, key: str, *, unique_key: bool = False,
        max_num: int = 32, begin_ms: int = 0, end_ms: int | None = None,
    ) -> list[Message]:
        """QUERY_MESSAGE (12) through the broker's index: messages of ``topic`` whose ``KEYS``
        hold ``key``, or whose unique key is ``key`` (``unique_key``: the broker then ignores
        ``max_num`` and answers up to its own ``defaultQueryMaxNum``). The index is a hash
        index, so the broker may return other keys' messages: they are left out here, as
        mqadmin leaves them out. An empty list when nothing was found (QUERY_NOT_FOUND)."""
        response = await self.call(
            address, RequestCode.QUERY_MESSAGE,
            {"topic": topic, "key": key, "maxNum": max_num, "beginTimestamp": begin_ms,
             "endTimestamp": _END_OF_TIME if end_ms is None else end_ms,
             UNIQUE_KEY_QUERY: "true" if unique_key else "false"},
            accept=(ResponseCode.SUCCESS, ResponseCode.QUERY_NOT_FOUND),
        )
        if response.code != ResponseCode.SUCCESS:
            return []
        found = decode_full_messages(response.body, broker_name)
        if unique_key:
            return [m for m in found if m.unique_key == key and m.queue.topic == topic]
        return [m for m in found if key in m.keys and m.queue.topic == topic]


def _as_is(response: RemotingCommand) -> RemotingCommand:
    return response
