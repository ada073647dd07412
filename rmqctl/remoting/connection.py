"""asyncio connection to one RocketMQ server, and a pool of them keyed by address.

One reader task per connection decodes frames and resolves the pending request whose ``opaque``
matches (RocketMQ may answer out of order). Frames without the response flag are requests *from*
the server (a broker relaying ``GET_CONSUMER_RUNNING_INFO`` to a client, a consumer-ids-changed
notice) and go to the connection's request handler, never to the pending map. When the socket
dies every pending request fails with :class:`~rmqctl.errors.ConnectionLost` raised from the
cause (or with the :class:`~rmqctl.errors.ProtocolError` of the frame that could not be decoded);
the pool then opens a fresh connection on next use (servers close idle channels after 120 s, and a
server shutting down answers ``GO_AWAY``). :meth:`ConnectionPool.request` gives connecting,
sending and waiting for the answer one deadline; no future or task is ever left with an exception
nobody retrieves, whatever the peer does.

Must not import anything above the remoting layer.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace

from rmqctl import errors
from rmqctl.remoting import frame
from rmqctl.remoting.acl import Credentials, sign
from rmqctl.remoting.codes import ResponseCode
from rmqctl.remoting.frame import RemotingCommand

log = logging.getLogger(__name__)

RequestHandler = Callable[[RemotingCommand], Awaitable[RemotingCommand | None]]

_READ_CHUNK = 64 * 1024


async def read_commands(
    reader: asyncio.StreamReader,
    *,
    max_frame_length: int = frame.MAX_FRAME_LENGTH,
    idle_timeout: float | None = None,
) -> AsyncIterator[RemotingCommand]:
    """Every command arriving on ``reader`` until EOF; a bad frame raises ProtocolError.

    ``max_frame_length`` bounds what one unfinished frame may buffer; with ``idle_timeout`` a
    peer that sends nothing for that long raises :class:`~rmqctl.errors.TimeoutError`.
    """
    decoder = frame.FrameDecoder(max_frame_length)
    while True:
        if idle_timeout is None:
            chunk = await reader.read(_READ_CHUNK)
        else:
            try:
                async with asyncio.timeout(idle_timeout):
                    chunk = await reader.read(_READ_CHUNK)
            except TimeoutError as exc:
                raise errors.TimeoutError(f"idle for {idle_timeout:g}s") from exc
        if not chunk:
            return
        decoder.feed(chunk)
        for cmd in decoder:
            yield cmd


def split_address(address: str) -> tuple[str, int]:
    """``host:port`` → (host, port), with a clear error for anything else."""
    host, sep, port = address.strip().rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise errors.UsageError(f"invalid address {address!r}; expected host:port")
    return host.strip("[]"), int(port)


class Connection:
    """A single TCP connection speaking the remoting protocol."""

    def __init__(
        self,
        address: str,
        *,
        handler: RequestHandler | None = None,
        credentials: Credentials | None = None,
    ) -> None:
        self.address = address
        self._handler = handler
        self._credentials = credentials
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._reader_task: asyncio.Task[None] | None = None
        self._pending: dict[int, asyncio.Future[RemotingCommand]] = {}
        self._opaque = itertools.count(1)
        self._closed = False
        self._going_away = False
        self._handler_tasks: set[asyncio.Task[None]] = set()

    @property
    def usable(self) -> bool:
        """Open, not closed by the peer, and the peer did not announce it is going away."""
        return self._writer is not None and not self._closed and not self._going_away

    async def open(self, timeout: float) -> None:
        host, port = split_address(self.address)
        try:
            self._reader, self._writer = await asyncio.wait_for(
                asyncio.open_connection(host, port), timeout
            )
        except asyncio.TimeoutError as exc:
            raise errors.TimeoutError(
                f"connecting to {self.address} timed out after {timeout:g}s"
            ) from exc
        except OSError as exc:
            raise errors.ConnectionError(f"cannot connect to {self.address}: {errors.os_reason(exc)}") from exc
        self._reader_task = asyncio.create_task(self._read_loop(), name=f"rmq-read-{self.address}")

    def _next_opaque(self) -> int:
        # Java uses a signed int32 counter; stay within it so servers echo it back intact.
        value = next(self._opaque) & 0x7FFFFFFF
        if value == 0:
            value = next(self._opaque) & 0x7FFFFFFF
        return value

    async def request(self, cmd: RemotingCommand, timeout: float | None) -> RemotingCommand:
        """Send a request and wait for its response (any response code).

        With ``timeout=None`` the caller bounds the wait (e.g. with ``asyncio.timeout``).
        """
        if not self.usable or self._writer is None:
            raise errors.ConnectionLost(f"connection to {self.address} is closed")
        opaque = self._next_opaque()
        cmd = replace(cmd, opaque=opaque, flag=cmd.flag & ~frame.FLAG_RESPONSE)
        if self._credentials is not None:
            cmd = sign(cmd, self._credentials)
        data = frame.encode(cmd)
        future: asyncio.Future[RemotingCommand] = asyncio.get_running_loop().create_future()
        self._pending[opaque] = future
        try:
            self._writer.write(data)
            await self._writer.drain()
            if timeout is None:
                response = await future
            else:
                response = await asyncio.wait_for(future, timeout)
        except asyncio.TimeoutError as exc:
            raise errors.TimeoutError(
                f"request {cmd.code} to {self.address} timed out after {timeout:g}s"
            ) from exc
        except OSError as exc:
            self._fail_all(exc)
            raise errors.ConnectionLost(f"connection to {self.address} lost: {exc}") from exc
        finally:
            self._pending.pop(opaque, None)
            # The reader may have failed this future while we were still sending; we raised
            # our own error then, so mark its exception seen (no "never retrieved" on stderr).
            if future.done() and not future.cancelled():
                future.exception()
            elif not future.done():
                future.cancel()
        if response.code == ResponseCode.GO_AWAY:
            self._going_away = True
        return response

    async def send_oneway(self, cmd: RemotingCommand) -> None:
        if not self.usable or self._writer is None:
            raise errors.ConnectionLost(f"connection to {self.address} is closed")
        cmd = replace(cmd, opaque=self._next_opaque(), flag=frame.FLAG_ONEWAY)
        if self._credentials is not None:
            cmd = sign(cmd, self._credentials)
        self._writer.write(frame.encode(cmd))
        await self._writer.drain()

    async def _read_loop(self) -> None:
        assert self._reader is not None
        cause: BaseException | None = None
        try:
            async for cmd in read_commands(self._reader):
                self._dispatch(cmd)
        except errors.ProtocolError as exc:
            log.debug("protocol error from %s: %s", self.address, exc)
            cause = exc
        except (OSError, asyncio.IncompleteReadError) as exc:
            cause = exc
        except asyncio.CancelledError:
            cause = None
            raise
        except Exception as exc:  # never let the reader task die with an unretrieved exception
            log.debug("reader of %s failed", self.address, exc_info=True)
            cause = errors.ProtocolError(f"{type(exc).__name__}: {exc}")
        finally:
            self._fail_all(cause)

    def _dispatch(self, cmd: RemotingCommand) -> None:
        if cmd.is_response:
            future = self._pending.get(cmd.opaque)
            if future is not None and not future.done():
                future.set_result(cmd)
            else:
                log.debug("dropping unmatched response opaque=%s from %s", cmd.opaque, self.address)
            return
        task = asyncio.create_task(self._handle_request(cmd))
        self._handler_tasks.add(task)
        task.add_done_callback(self._handler_tasks.discard)

    async def _handle_request(self, cmd: RemotingCommand) -> None:
        if self._handler is None:
            response: RemotingCommand | None = cmd.response(
                ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
                remark=f" request type {cmd.code} not supported",
                language="PYTHON",
            )
        else:
            try:
                response = await self._handler(cmd)
            except Exception as exc:  # a handler bug must not kill the connection
                log.debug("request handler failed for code %s", cmd.code, exc_info=True)
                response = cmd.response(ResponseCode.SYSTEM_ERROR, remark=str(exc), language="PYTHON")
        if response is None or cmd.is_oneway or self._writer is None or self._closed:
            return
        response = replace(response, opaque=cmd.opaque, flag=response.flag | frame.FLAG_RESPONSE)
        try:
            self._writer.write(frame.encode(response))
            await self._writer.drain()
        except OSError:
            self._fail_all(None)

    def _fail_all(self, cause: BaseException | None) -> None:
        if self._closed:
            return
        self._closed = True
        reason = f": {cause}" if cause else " by the peer"
        for future in self._pending.values():
            if not future.done():
                error: errors.RmqctlError
                if isinstance(cause, errors.ProtocolError):
                    error = errors.ProtocolError(
                        f"{self.address} sent a malformed frame: {cause}", cause.raw
                    )
                else:
                    error = errors.ConnectionLost(f"connection to {self.address} closed{reason}")
                error.__cause__ = cause
                future.set_exception(error)
        self._pending.clear()
        if self._writer is not None:
            self._writer.close()

    async def close(self) -> None:
        self._fail_all(None)
        if self._reader_task is not None and not self._reader_task.done():
            self._reader_task.cancel()
            try:
                await self._reader_task
            except (asyncio.CancelledError, Exception):
                pass
        for task in list(self._handler_tasks):
            task.cancel()
        if self._writer is not None:
            try:
                await self._writer.wait_closed()
            except (OSError, asyncio.CancelledError):
                pass


class ConnectionPool:
    """Lazily opened connections by address; a dead or going-away connection is replaced."""

    def __init__(
        self,
        *,
        connect_timeout: float,
        credentials: Credentials | None = None,
        handler: RequestHandler | None = None,
    ) -> None:
        self.connect_timeout = connect_timeout
        self.credentials = credentials
        self.handler = handler
        self._conns: dict[str, Connection] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    async def get(self, address: str) -> Connection:
        lock = self._locks.setdefault(address, asyncio.Lock())
        async with lock:
            conn = self._conns.get(address)
            if conn is not None and conn.usable:
                return conn
            if conn is not None:
                await conn.close()
            conn = Connection(address, handler=self.handler, credentials=self.credentials)
            await conn.open(self.connect_timeout)
            self._conns[address] = conn
            return conn

    async def request(self, address: str, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        """Send on a pooled connection; retry once on a fresh one if the old one was dead.

        One deadline of ``timeout`` seconds covers connecting, sending, the retry and the wait.
        """
        try:
            async with asyncio.timeout(timeout):
                for attempt in (0, 1):
                    conn = await self.get(address)
                    try:
                        response = await conn.request(cmd, None)
                    except errors.ConnectionLost:
                        if attempt:
                            raise
                        continue
                    if response.code == ResponseCode.GO_AWAY and not attempt:
                        continue
                    return response
        except TimeoutError as exc:  # the builtin one, raised by asyncio.timeout
            raise errors.TimeoutError(
                f"request {cmd.code} to {address} timed out after {timeout:g}s"
            ) from exc
        raise AssertionError("unreachable")

    async def close(self) -> None:
        conns, self._conns = list(self._conns.values()), {}
        await asyncio.gather(*(c.close() for c in conns), return_exceptions=True)
