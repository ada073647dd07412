"""One remoting endpoint, the same for either end of a connection (client or server).

RocketMQ's remoting is symmetric: each side sends requests and answers the other's, and
responses may come back out of order. An :class:`Endpoint` owns one open stream and does what
both ends must do alike: it gives each request it sends a fresh ``opaque`` and keeps its future in
a pending table keyed by that opaque; it sends each arriving response to the matching future and
each arriving request to the handler, writing back what the handler answers (with the request's
opaque and the response flag; never for a oneway request); and when the stream ends, for whatever
reason, it fails every pending future at once (fail-all) with
:class:`~rmqctl.errors.ConnectionLost` raised from the cause, or with the
:class:`~rmqctl.errors.ProtocolError` of the frame that could not be decoded. The role decides
only what surrounds it: the client connection opens the socket, signs requests and notices
``GO_AWAY``; an emulator server connection enforces its limits and logs. No future or task is ever
left with an exception nobody retrieves.

With ``coalesce`` (the client's connections) the frames written within one turn of the event
loop go out in one write: a fan-out that starts thousands of requests at once then costs one
system call per turn, not one per request, and the server reads them in few chunks.

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
from rmqctl.remoting.frame import FLAG_ONEWAY, FLAG_RESPONSE, RemotingCommand

log = logging.getLogger(__name__)

#: What a handler may return: an answer now, no answer, or an answer later.
HandlerResult = RemotingCommand | None | Awaitable[RemotingCommand | None]
#: Turns a request that arrived into an answer (called once per request, in arrival order).
Handler = Callable[[RemotingCommand], HandlerResult]
#: The answer to a request whose handler raised (``None``: no answer).
ErrorReply = Callable[[RemotingCommand, Exception], RemotingCommand | None]

_READ_CHUNK = 64 * 1024
#: Bytes of unsent requests past which a request waits for the stream to drain (``deadline``)
DRAIN_ABOVE = 256 * 1024


def _expire(future: asyncio.Future[RemotingCommand]) -> None:
    """End the wait for an answer whose deadline has come."""
    if not future.done():
        future.set_exception(TimeoutError())


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


class Endpoint:
    """Pending table, dispatch and fail-all over one open stream, for either role.

    ``peer`` names the other end in error messages. ``handler`` answers the peer's requests;
    ``on_handler_error`` answers a request whose handler raised; ``on_close`` runs once, when the
    endpoint closes (the stream ended, a write failed, or :meth:`fail_all` was called).
    """

    def __init__(
        self,
        writer: asyncio.StreamWriter,
        handler: Handler,
        *,
        peer: str,
        on_handler_error: ErrorReply,
        on_close: Callable[[], None] | None = None,
        coalesce: bool = False,
    ) -> None:
        self.peer = peer
        self._writer = writer
        self._handler = handler
        self._on_handler_error = on_handler_error
        self._on_close = on_close
        self._pending: dict[int, asyncio.Future[RemotingCommand]] = {}
        self._opaque = itertools.count(1)
        self._tasks: set[asyncio.Task[None]] = set()
        self.closed = False
        self._coalesce = coalesce
        #: frames written this turn of the loop, not handed to the stream yet (``coalesce``)
        self._unsent: list[bytes] = []
        self._unsent_bytes = 0
        self._flush_handle: asyncio.Handle | None = None

    @property
    def write_buffered(self) -> int:
        """Bytes written to the stream that the peer has not taken yet."""
        return self._writer.transport.get_write_buffer_size() + self._unsent_bytes

    def _write(self, data: bytes) -> None:
        """Hand ``data`` to the stream now, or (``coalesce``) at the end of this loop turn."""
        if not self._coalesce:
            self._writer.write(data)
            return
        self._unsent.append(data)
        self._unsent_bytes += len(data)
        if self._flush_handle is None:
            self._flush_handle = asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_handle = None
        if not self._unsent:
            return
        data = self._unsent[0] if len(self._unsent) == 1 else b"".join(self._unsent)
        self._unsent.clear()
        self._unsent_bytes = 0
        if self.closed:
            return
        try:
            self._writer.write(data)
        except (OSError, RuntimeError) as exc:
            self.fail_all(exc)

    @property
    def pending(self) -> int:
        """Requests sent and not answered yet."""
        return len(self._pending)

    def next_opaque(self) -> int:
        # Java uses a signed int32 counter; stay within it so peers echo it back intact.
        value = next(self._opaque) & 0x7FFFFFFF
        if value == 0:
            value = next(self._opaque) & 0x7FFFFFFF
        return value

    # -- sending ---------------------------------------------------------------------------------

    async def request(self, cmd: RemotingCommand, timeout: float | None, *,
                      deadline: float | None = None) -> RemotingCommand:
        """Send ``cmd`` as a request under a fresh opaque and wait for its response (any code).

        ``timeout`` bounds sending and waiting together; with ``None`` the caller bounds the wait,
        either around the call or by ``deadline``: the loop's time at which the wait ends with the
        builtin ``TimeoutError`` (one timer handle, without a timeout context or a drain per
        request: the caller keeps few requests in flight, and a write buffer past
        :data:`DRAIN_ABOVE` is drained all the same).
        """
        opaque, data, future = self._register(cmd)
        try:
            if timeout is None:  # the caller's own deadline bounds it (the pool's, one per request)
                self._write(data)
                if deadline is None:
                    await self._writer.drain()
                    return await future
                timer = asyncio.get_running_loop().call_at(deadline, _expire, future)
                try:
                    if self.write_buffered > DRAIN_ABOVE:
                        await self._writer.drain()
                    return await future
                finally:
                    timer.cancel()
            async with asyncio.timeout(timeout):
                self._write(data)
                await self._writer.drain()
                return await future
        except TimeoutError as exc:  # the builtin one, raised by asyncio.timeout or at the deadline
            if timeout is None:
                raise  # the caller's deadline: the caller names it
            raise errors.TimeoutError(
                f"request {cmd.code} to {self.peer} timed out after {round(timeout, 2):g}s"
            ) from exc
        except (OSError, RuntimeError) as exc:
            self.fail_all(exc)
            raise errors.ConnectionLost(f"connection to {self.peer} lost: {exc}") from exc
        finally:
            self._pending.pop(opaque, None)
            # fail-all may have failed this future while we were still sending; we raised our
            # own error then, so mark its exception seen (no "never retrieved" on stderr).
            if future.done() and not future.cancelled():
                future.exception()
            elif not future.done():
                future.cancel()

    def start_request(self, cmd: RemotingCommand) -> tuple[int, asyncio.Future[RemotingCommand]]:
        """Write ``cmd`` as a request under a fresh opaque and return the opaque with the future
        its response completes, without waiting: many requests are then pipelined without a task
        each. The caller bounds the wait and calls :meth:`forget` when it gives up; the future
        fails like :meth:`request` when the stream ends."""
        opaque, data, future = self._register(cmd)
        self._write(data)
        return opaque, future

    def _register(self, cmd: RemotingCommand) -> tuple[int, bytes, asyncio.Future[RemotingCommand]]:
        """``cmd`` encoded under a fresh opaque, and the future its response will complete."""
        if self.closed:
            raise errors.ConnectionLost(f"connection to {self.peer} is closed")
        opaque = self.next_opaque()
        data = frame.encode_request(cmd, opaque)
        future: asyncio.Future[RemotingCommand] = asyncio.get_running_loop().create_future()
        self._pending[opaque] = future
        return opaque, data, future

    def forget(self, opaque: int) -> None:
        """Stop waiting for the response to ``opaque`` (it is dropped if it comes)."""
        future = self._pending.pop(opaque, None)
        if future is not None and not future.done():
            future.cancel()

    def send_oneway(self, cmd: RemotingCommand) -> None:
        """Write ``cmd`` as a oneway request (fresh opaque, no answer expected)."""
        self.send(replace(cmd, opaque=self.next_opaque(), flag=FLAG_ONEWAY))

    def send(self, cmd: RemotingCommand) -> None:
        """Write one frame as it is; a write on a dead stream closes the endpoint."""
        if self.closed:
            return
        data = frame.encode(cmd)
        try:
            self._write(data)
        except (OSError, RuntimeError) as exc:
            self.fail_all(exc)

    async def drain(self) -> None:
        """Wait until the stream's write buffer is below its high-water mark."""
        if self.closed:
            return
        self._flush()
        if self.closed:
            return
        try:
            await self._writer.drain()
        except (OSError, RuntimeError) as exc:
            self.fail_all(exc)
            raise errors.ConnectionLost(f"connection to {self.peer} lost: {exc}") from exc

    # -- receiving -------------------------------------------------------------------------------

    async def serve(
        self,
        reader: asyncio.StreamReader,
        *,
        max_frame_length: int = frame.MAX_FRAME_LENGTH,
        idle_timeout: float | None = None,
        write_buffer_bytes: int | None = None,
    ) -> Exception | None:
        """Read and dispatch until the stream ends; then fail all and return why it ended.

        ``None`` means the peer closed the stream. Otherwise the exception that ended it:
        :class:`~rmqctl.errors.ProtocolError` (a frame that did not decode),
        :class:`~rmqctl.errors.TimeoutError` (silent for ``idle_timeout``), the builtin
        ``TimeoutError`` (replies unread for ``idle_timeout`` while more than
        ``write_buffer_bytes`` were queued: reading stops until they drain), an ``OSError``, or
        anything else that went wrong. Cancelling the call closes the endpoint too.
        """
        ended: Exception | None = None
        try:
            async for cmd in read_commands(reader, max_frame_length=max_frame_length,
                                           idle_timeout=idle_timeout):
                self.receive(cmd)
                if write_buffer_bytes is not None and self.write_buffered > write_buffer_bytes:
                    # Backpressure: read no more requests until the peer takes our replies.
                    async with asyncio.timeout(idle_timeout):
                        await self._writer.drain()
        except asyncio.CancelledError:
            self.fail_all(None)
            raise
        except Exception as exc:
            ended = exc
        cause: Exception | None = ended
        if ended is not None and not isinstance(
            ended, (errors.RmqctlError, OSError, asyncio.IncompleteReadError, TimeoutError)
        ):
            cause = errors.ProtocolError(f"{type(ended).__name__}: {ended}")
            cause.__cause__ = ended
        self.fail_all(cause)
        return ended

    def receive(self, cmd: RemotingCommand) -> None:
        """Dispatch one arriving command: a response to its future, a request to the handler."""
        if cmd.is_response:
            future = self._pending.pop(cmd.opaque, None)
            if future is not None and not future.done():
                future.set_result(cmd)
            else:
                log.debug("dropping unmatched response opaque=%s from %s", cmd.opaque, self.peer)
            return
        try:
            result = self._handler(cmd)
        except Exception as exc:  # a handler bug answers an error; the connection lives on
            result = self._on_handler_error(cmd, exc)
        if result is None or isinstance(result, RemotingCommand):
            self._reply(cmd, result)
            return
        task = asyncio.ensure_future(self._await_reply(cmd, result))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _await_reply(self, cmd: RemotingCommand, later: Awaitable[RemotingCommand | None]) -> None:
        try:
            result = await later
        except Exception as exc:
            result = self._on_handler_error(cmd, exc)
        self._reply(cmd, result)

    def _reply(self, cmd: RemotingCommand, response: RemotingCommand | None) -> None:
        if response is None or cmd.is_oneway or self.closed:
            return
        if response.opaque != cmd.opaque or not response.is_response:
            response = replace(response, opaque=cmd.opaque, flag=response.flag | FLAG_RESPONSE)
        try:
            self.send(response)
        except errors.ProtocolError as exc:  # an answer too large for a frame
            fallback = self._on_handler_error(cmd, exc)
            if fallback is not None:
                self.send(replace(fallback, opaque=cmd.opaque, flag=fallback.flag | FLAG_RESPONSE))

    # -- closing ---------------------------------------------------------------------------------

    def fail_all(self, cause: BaseException | None) -> None:
        """Close: fail every pending request, stop every handler still running, close the stream.

        Pending futures get :class:`~rmqctl.errors.ConnectionLost` (or the ProtocolError of a
        bad frame) with ``cause`` as its ``__cause__``. Idempotent.
        """
        if self.closed:
            return
        if self._unsent and cause is None:
            self._flush()  # what was written before a clean close still goes out
            if self.closed:  # the write failed and closed it
                return
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        self._unsent.clear()
        self._unsent_bytes = 0
        self.closed = True
        reason = f": {cause}" if cause else " by the peer"
        for future in self._pending.values():
            if future.done():
                continue
            error: errors.RmqctlError
            if isinstance(cause, errors.ProtocolError):
                error = errors.ProtocolError(f"{self.peer} sent a malformed frame: {cause}", cause.raw)
            else:
                error = errors.ConnectionLost(f"connection to {self.peer} closed{reason}")
            error.__cause__ = cause
            future.set_exception(error)
        self._pending.clear()
        for task in list(self._tasks):
            task.cancel()  # e.g. a long-polling pull that can never be answered now
        try:
            self._writer.close()
        except (OSError, RuntimeError):
            pass
        if self._on_close is not None:
            self._on_close()

    def abort(self) -> None:
        """Drop the connection at once, discarding whatever is still unsent."""
        self.fail_all(None)
        self._writer.transport.abort()

    async def wait_closed(self) -> None:
        """Close (if not yet) and wait until the stream and every handler task are done."""
        self.fail_all(None)
        tasks = list(self._tasks)
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        try:
            await self._writer.wait_closed()
        except (OSError, RuntimeError, asyncio.CancelledError):
            pass
