"""The emulator's remoting servers: one name server port and one port per broker (asyncio).

Each port speaks RocketMQ's native protocol over the same
:class:`~rmqctl.remoting.endpoint.Endpoint` as rmqctl's own client connection (pending table,
dispatch, fail-all) and answers what a real 5.x name server or broker answers: the handlers are in
:mod:`rmqctl.emulator.handlers` (name server) and :mod:`rmqctl.emulator.broker_handlers`. This
module is the connection handling around them. A connection is an asyncio protocol: the requests
in the bytes of one read are decoded and answered in that callback, and their replies leave in
one write. ``emulator serve`` keeps the answers of read-only requests while the cluster does not
change (:mod:`rmqctl.emulator.replies`).

Server behaviour mirrored from ``NettyRemotingServer`` (5.x): responses are always JSON-headed
(5.x does not mirror the request's serialize type); an unknown request code gets 3
REQUEST_CODE_NOT_SUPPORTED with remark `` request type N not supported``; a frame that cannot be
decoded closes that connection only; oneway requests get no answer. Admin clients need no
heartbeat. Before handling any request the world is brought up to "now" (real-time serving).

Peers may be hostile, so each port is bounded by :class:`~rmqctl.emulator.limits.ServerLimits`:
a connection silent for ``idle_timeout`` is closed (the broker's
``serverChannelMaxIdleTimeSeconds``, 120 s); at most ``max_connections`` are open at once (the
next is closed on accept); one unfinished frame may buffer at most ``max_frame_bytes``; replies
queued for a peer that does not read stop the reading of its requests at ``write_buffer_bytes``
until they drain, and a drain stalled for ``idle_timeout`` closes the connection. A bad frame is
logged in one line and closes only its connection.

Must not import the CLI, textual or pyspark.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import itertools
import logging
import socket
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Self, cast

from rmqctl import errors
from rmqctl.emulator.broker import BROKER_VERSION
from rmqctl.emulator.broker_handlers import BrokerService
from rmqctl.emulator.handlers import Handler, Result, namesrv_handlers, not_supported, respond
from rmqctl.emulator.limits import ServerLimits
from rmqctl.emulator.replies import CACHED_READS, ReplyCache
from rmqctl.emulator.world import EmulatedCluster
from rmqctl.remoting import frame
from rmqctl.remoting.codes import RequestCode, ResponseCode
from rmqctl.remoting.endpoint import Endpoint, HandlerResult
from rmqctl.remoting.frame import RemotingCommand

if TYPE_CHECKING:
    import ssl

__all__ = ["AcceptErrors", "EmulatorServer", "MemoryBudget", "RemotingServer", "ServerConnection", "ServerLimits"]

log = logging.getLogger(__name__)


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


#: what asyncio's accept loop reports when a listening socket cannot take a connection
_ACCEPT_FAILURES = ("socket.accept() out of system resource", "Error on transport creation for incoming connection")

ExceptionHandler = Callable[[asyncio.AbstractEventLoop, dict[str, Any]], object]


class AcceptErrors:
    """An event-loop exception handler that turns failed accepts (no file descriptor left, no
    buffer memory) into one warning line per second with their count, never a traceback.

    asyncio's accept loop already stops accepting on that listening socket for a second after
    such a failure (the backoff); without this handler it logs each failure with a traceback.
    Anything else goes to ``previous`` (or the loop's default handler).
    """

    WINDOW = 1.0

    def __init__(self, previous: ExceptionHandler | None = None) -> None:
        self.previous = previous
        #: failures since the process started serving, and in the current window
        self.total = 0
        self.pending = 0
        self._reason = ""
        self._timer: asyncio.TimerHandle | None = None

    def __call__(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        message = str(context.get("message", ""))
        if not message.startswith(_ACCEPT_FAILURES):
            if self.previous is not None:
                self.previous(loop, context)
            else:
                loop.default_exception_handler(context)
            return
        exc = context.get("exception")
        self.total += 1
        self.pending += 1
        self._reason = _one_line(f"{exc}" if exc is not None else message)
        if self._timer is None:
            self._timer = loop.call_later(self.WINDOW, self.flush)

    def flush(self) -> None:
        """Write the line for the failures not yet logged (the timer does it once per second)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self.pending:
            log.warning("cannot accept connections: %s (%d failed accept%s in the last %gs; retrying)",
                        self._reason, self.pending, "" if self.pending == 1 else "s", self.WINDOW)
            self.pending = 0


class MemoryBudget:
    """Bytes held for peers across every connection of every port: unfinished input frames and
    replies not yet taken by the peer (``ServerLimits.memory_bytes``).

    Each connection's share is recorded when it changes on our side (a read, a write); a share
    that shrank because the peer read is only noticed when the total looks over the limit, and
    then every share is read again before anything is closed.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.total = 0
        self.connections: set[ServerConnection] = set()
        #: connections closed to keep the total under the limit
        self.closed = 0

    def add(self, conn: ServerConnection) -> None:
        self.connections.add(conn)

    def remove(self, conn: ServerConnection) -> None:
        self.connections.discard(conn)
        self.total -= conn.charged
        conn.charged = 0

    def recharge(self, conn: ServerConnection) -> None:
        held = conn.held()
        self.total += held - conn.charged
        conn.charged = held

    def check(self, conn: ServerConnection) -> None:
        """After ``conn`` took more: if the total is over the limit, close connections whose
        replies are not being read (largest first), then ``conn`` itself if still over."""
        self.recharge(conn)
        if self.total <= self.limit:
            return
        for other in list(self.connections):
            self.recharge(other)
        if self.total <= self.limit:
            return
        stalled = sorted((c for c in self.connections if c.output_full), key=lambda c: -c.charged)
        for victim in stalled + [conn]:
            if self.total <= self.limit:
                return
            if victim in self.connections:
                victim.abort_over_budget(self.limit)


class _TransportWriter:
    """What the connection's :class:`~rmqctl.remoting.endpoint.Endpoint` writes through: the
    transport, with flow control for ``drain`` and the replies to one chunk of requests corked
    into one write (one system call for every request that arrived in one read)."""

    #: corked bytes beyond which they go out at once (the write-buffer checks then see them)
    CORK_LIMIT = 64 * 1024

    def __init__(self, conn: ServerConnection, transport: asyncio.WriteTransport) -> None:
        self._conn = conn
        self.transport = transport
        self._corked: list[bytes] | None = None
        self.corked_bytes = 0

    def cork(self) -> None:
        if self._corked is None:
            self._corked = []

    def uncork(self) -> None:
        corked, self._corked = self._corked, None
        if corked:
            self.corked_bytes = 0
            self._send(corked[0] if len(corked) == 1 else b"".join(corked))

    def write(self, data: bytes) -> None:
        corked = self._corked
        if corked is None:
            self._send(data)
            return
        corked.append(data)
        self.corked_bytes += len(data)
        if self.corked_bytes > self.CORK_LIMIT:
            self._corked = []
            self.corked_bytes = 0
            self._send(b"".join(corked))

    def _send(self, data: bytes) -> None:
        if self.transport.is_closing():
            return
        self.transport.write(data)
        self._conn.wrote()

    async def drain(self) -> None:
        self.uncork()
        await self._conn.writable()

    def close(self) -> None:
        self.uncork()
        self.transport.close()

    async def wait_closed(self) -> None:
        await self._conn.lost()

    def get_extra_info(self, name: str, default: object = None) -> object:
        return self.transport.get_extra_info(name, default)


class ServerConnection(asyncio.Protocol):
    """One accepted connection (an asyncio protocol: requests are decoded and answered in the
    callback that received their bytes, no task per connection); also a broker
    :class:`~.groups.Channel` for TCP clients."""

    def __init__(self, server: RemotingServer, channel_id: int) -> None:
        self.server = server
        self.channel_id = channel_id
        self.remote_addr = "?"
        self.decoder = frame.FrameDecoder(server.limits.max_frame_bytes)
        #: bytes this connection is counted for in the server's memory budget
        self.charged = 0
        self._over_budget: str | None = None
        self._loop = asyncio.get_running_loop()
        self.transport: asyncio.Transport | None = None
        self.writer: _TransportWriter | None = None
        self.endpoint: Endpoint | None = None
        self._refused = False
        #: whether a request that may change the cluster (anything but a kept read) came on this
        #: connection: only then may its closing change what the reads answer
        self.changed_cluster = False
        #: why serving ended (None: the peer closed), once it has
        self._ended: Exception | None = None
        self._ending = False
        #: when the last whole frame arrived, and the one timer watching that (idle_timeout)
        self._last_frame = self._loop.time()
        self._idle_timer: asyncio.TimerHandle | None = None
        #: replies over ``write_buffer_bytes``: reading is paused until they drain
        self._stalled = False
        self._stalled_at = 0
        self._stall_timer: asyncio.TimerHandle | None = None
        self._writing_paused = False
        self._writable: asyncio.Future[None] | None = None
        self._lost: asyncio.Future[None] = self._loop.create_future()
        self._release_timer: asyncio.TimerHandle | None = None

    def __hash__(self) -> int:
        return self.channel_id

    def __eq__(self, other: object) -> bool:
        return self is other

    @property
    def closed(self) -> bool:
        return self.endpoint is None or self.endpoint.closed

    @property
    def write_buffered(self) -> int:
        """Reply bytes queued in the transport, not yet taken by the peer."""
        if self.endpoint is None or self.writer is None:
            return 0
        try:
            return self.endpoint.write_buffered + self.writer.corked_bytes
        except AttributeError:  # a TLS transport whose connection is gone (asyncio's sslproto)
            return 0

    @property
    def read_buffered(self) -> int:
        """Bytes of an unfinished frame held for this peer."""
        return self.decoder.buffered

    @property
    def output_full(self) -> bool:
        """Its replies are over the per-connection limit: its requests are not being read."""
        return self.write_buffered > self.server.limits.write_buffer_bytes

    def held(self) -> int:
        return 0 if self.closed else self.read_buffered + self.write_buffered

    # -- asyncio protocol ---------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        server, limits = self.server, self.server.limits
        self.transport = cast(asyncio.Transport, transport)
        peer = transport.get_extra_info("peername")
        self.remote_addr = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        if len(server.connections) >= limits.max_connections:
            self._refused = True
            server.refused += 1
            log.warning("%s: refusing a connection from %s: %d connections open (the cap)", server.name,
                        peer, len(server.connections))
            self.transport.close()
            return
        sock = transport.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
        self.transport.set_write_buffer_limits(high=limits.write_buffer_bytes)
        self.writer = _TransportWriter(self, self.transport)
        self.endpoint = Endpoint(cast(asyncio.StreamWriter, self.writer), self._handle, peer=self.remote_addr,
                                 on_handler_error=self._handler_failed, on_close=self._closed)
        # counted until its socket is really gone, not only until the broker forgets it
        server.connections.add(self)
        server.budget.add(self)
        self._idle_timer = self._loop.call_at(self._last_frame + limits.idle_timeout, self._idle_check)

    def data_received(self, data: bytes) -> None:
        if self.closed or self._ending:
            return
        self.decoder.feed(data)
        if self._stalled:  # a TLS transport may hand over what it had decrypted before the pause
            self.server.budget.check(self)
            return
        self._dispatch()

    def _dispatch(self) -> None:
        """Answer every whole frame buffered, unless the replies are over their limit."""
        writer, endpoint = self.writer, self.endpoint
        assert writer is not None and endpoint is not None
        limit = self.server.limits.write_buffer_bytes
        writer.cork()
        try:
            for cmd in self.decoder:
                # progress: a whole frame arrived (bytes alone do not count)
                self._last_frame = self._loop.time()
                endpoint.receive(cmd)
                if endpoint.closed:
                    return
                if self.write_buffered > limit:
                    writer.uncork()
                    if endpoint.closed:
                        return
                    if self.write_buffered > limit:
                        self._stall()
                        break
        except errors.ProtocolError as exc:
            writer.uncork()
            self._end(exc)
            return
        except Exception as exc:  # never a traceback per connection
            writer.uncork()
            self._end(exc)
            return
        writer.uncork()
        if self.decoder.buffered or self.charged:  # else the write above already told the budget
            self.server.budget.check(self)

    def eof_received(self) -> bool:
        self._end(None)
        # the transport stays open until the replies queued for the peer are out (a TLS
        # transport does that itself, and warns when asked to)
        return self.transport is not None and self.transport.get_extra_info("sslcontext") is None

    def connection_lost(self, exc: Exception | None) -> None:
        if not self._refused:
            if not self._ending:
                self._end(exc)
            self._cancel_timers()
            self.server.connection_gone(self)
        if not self._lost.done():
            self._lost.set_result(None)
        if self._writable is not None and not self._writable.done():
            self._writable.set_result(None)

    def pause_writing(self) -> None:
        self._writing_paused = True

    def resume_writing(self) -> None:
        self._writing_paused = False
        if self._writable is not None and not self._writable.done():
            self._writable.set_result(None)
        if self._stalled and not self.closed and self.write_buffered <= self.server.limits.write_buffer_bytes:
            self._unstall()

    async def writable(self) -> None:
        """Until the transport takes writes again (below its low-water mark) or is gone."""
        if not self._writing_paused or self._lost.done():
            return
        if self._writable is None or self._writable.done():
            self._writable = self._loop.create_future()
        await self._writable

    async def lost(self) -> None:
        await self._lost

    # -- limits ---------------------------------------------------------------------------------

    def _idle_check(self) -> None:
        """The idle deadline of reads: ``idle_timeout`` after the last whole frame. One timer per
        connection, moved on only when it fires, so a busy connection costs nothing per request."""
        self._idle_timer = None
        if self._ending:
            return
        timeout = self.server.limits.idle_timeout
        now = self._loop.time()
        due = self._last_frame + timeout
        if self._stalled:  # waiting for replies to drain, which has its own bound
            due = max(due, now + timeout)
        if now < due:
            self._idle_timer = self._loop.call_at(due, self._idle_check)
            return
        self._end(errors.TimeoutError(f"idle for {timeout:g}s"))

    def _stall(self) -> None:
        """Backpressure: read no more requests until the peer takes our replies; a peer that
        takes none of them for ``idle_timeout`` is closed."""
        assert self.transport is not None
        self._stalled = True
        self._stalled_at = self.write_buffered
        self.transport.pause_reading()
        if self._stall_timer is None:
            self._stall_timer = self._loop.call_later(self.server.limits.idle_timeout, self._stall_check)

    def _stall_check(self) -> None:
        self._stall_timer = None
        if not self._stalled or self._ending:
            return
        now_held = self.write_buffered
        if now_held < self._stalled_at:  # it reads, slowly
            self._stalled_at = now_held
            self._stall_timer = self._loop.call_later(self.server.limits.idle_timeout, self._stall_check)
            return
        self._end(TimeoutError())

    def _unstall(self) -> None:
        assert self.transport is not None
        self._stalled = False
        if self._stall_timer is not None:
            self._stall_timer.cancel()
            self._stall_timer = None
        self._last_frame = self._loop.time()
        self.transport.resume_reading()
        self._dispatch()  # the frames that arrived while the replies were over the limit

    def _cancel_timers(self) -> None:
        for timer in (self._idle_timer, self._stall_timer, self._release_timer):
            if timer is not None:
                timer.cancel()
        self._idle_timer = self._stall_timer = self._release_timer = None

    def _end(self, ended: Exception | None) -> None:
        """Stop serving: fail what is pending, log why, and let the socket go. A peer that closed
        gets its queued replies for up to ``idle_timeout``; any other ending drops them at once
        (the memory goes with them)."""
        if self._ending:
            return
        self._ending = True
        self._ended = ended
        self._cancel_timers()
        endpoint, transport = self.endpoint, self.transport
        if endpoint is not None:
            endpoint.fail_all(ended)
        if transport is not None:
            try:
                unsent = transport.get_write_buffer_size()
            except AttributeError:  # a TLS transport whose connection is gone (asyncio's sslproto)
                unsent = 0
            if ended is None and unsent:
                self._release_timer = self._loop.call_later(self.server.limits.idle_timeout, transport.abort)
            else:
                transport.abort()
        self._log_end(ended)

    def _log_end(self, ended: Exception | None) -> None:
        name, peer, limits = self.server.name, self.remote_addr, self.server.limits
        if self._over_budget is not None:
            log.warning("%s: closing %s: %s", name, peer, self._over_budget)
        elif isinstance(ended, errors.ProtocolError):
            # ``NettyDecoder``: a frame that does not decode closes this channel, nothing else.
            log.warning("%s: closing %s after a bad frame: %s", name, peer, _one_line(str(ended)))
        elif isinstance(ended, errors.TimeoutError):
            log.debug("%s: closing %s, idle for %gs", name, peer, limits.idle_timeout)
        elif isinstance(ended, TimeoutError):
            log.debug("%s: closing %s, it has not read its replies for %gs", name, peer, limits.idle_timeout)
        elif ended is not None and not isinstance(ended, (ConnectionError, OSError, asyncio.IncompleteReadError)):
            # never a traceback per connection
            log.warning("%s: closing %s: %s: %s", name, peer, type(ended).__name__, _one_line(str(ended)))

    def wrote(self) -> None:
        """After each write: the memory budget sees what this connection holds now (nothing to
        tell it when the socket took the whole write and nothing was held before)."""
        if not self.closed and (self.charged or self.write_buffered or self.decoder.buffered):
            self.server.budget.check(self)

    def abort_over_budget(self, limit: int) -> None:
        """Close at once, dropping what it holds, to bring the memory budget back under ``limit``."""
        what = (f"{self.write_buffered} bytes of replies it does not read" if self.output_full
                else f"{self.held()} bytes held")
        self._over_budget = f"over the memory budget of {limit} bytes across connections ({what})"
        self.server.budget.closed += 1
        self.server.budget.remove(self)
        self._end(ConnectionAbortedError(self._over_budget))

    def _handle(self, cmd: RemotingCommand) -> HandlerResult:
        return self.server.handle(cmd, self)

    def _handler_failed(self, cmd: RemotingCommand, exc: Exception) -> RemotingCommand:
        # A handler bug answers SYSTEM_ERROR, like the Java catch-all; one line per failed
        # request (a peer can send many), the traceback only at debug level.
        log.warning("handler for code %s failed: %s: %s", cmd.code, type(exc).__name__, _one_line(str(exc)))
        log.debug("handler traceback", exc_info=exc)
        return respond(cmd, ResponseCode.SYSTEM_ERROR, remark=f"{type(exc).__name__}: {exc}")

    # -- Channel protocol (broker -> client) -------------------------------------------------

    def notify_consumer_ids_changed(self, group: str) -> None:
        if self.endpoint is None:
            return
        self.endpoint.send_oneway(RemotingCommand(code=RequestCode.NOTIFY_CONSUMER_IDS_CHANGED,
                                                  language="JAVA", version=BROKER_VERSION,
                                                  ext_fields={"consumerGroup": group}))

    async def invoke(self, request: RemotingCommand, timeout: float) -> RemotingCommand:
        if self.closed or self.endpoint is None:
            raise errors.ConnectionLost(f"channel {self.remote_addr} is closed")
        return await self.endpoint.request(
            RemotingCommand(code=request.code, language="JAVA", version=BROKER_VERSION,
                            ext_fields=dict(request.ext_fields), body=request.body),
            timeout)

    def close(self) -> None:
        """Close the connection: pending relays fail, long-polling pulls stop, the broker forgets it."""
        if self.endpoint is not None:
            self.endpoint.fail_all(None)

    def abort(self) -> None:
        """Drop the connection at once (the server stops)."""
        if self.endpoint is not None:
            self.endpoint.abort()
        elif self.transport is not None:
            self.transport.abort()

    def _closed(self) -> None:
        self.server.connection_closed(self)


class RemotingServer:
    """A listening socket whose requests go to ``handlers[code]``."""

    def __init__(self, name: str, handlers: Mapping[int, Handler], *, sync: Callable[[], None] | None = None,
                 on_close: Callable[[ServerConnection], None] | None = None,
                 limits: ServerLimits | None = None, budget: MemoryBudget | None = None) -> None:
        self.name = name
        self.limits = limits or ServerLimits()
        self.budget = budget or MemoryBudget(self.limits.memory_bytes)
        self.refused = 0
        self.handlers = dict(handlers)
        self.sync = sync
        self.on_close = on_close
        self.connections: set[ServerConnection] = set()
        self._server: asyncio.base_events.Server | None = None
        self._ids = itertools.count(1)
        self.port = 0
        self.host = ""
        #: serve TLS only (like a RocketMQ server in ``tls.server.mode=enforcing``), or None: plain
        self.ssl_context: ssl.SSLContext | None = None
        #: the answers of read-only requests, kept while the cluster does not change (or None)
        self.replies: ReplyCache | None = None

    async def start(self, host: str, port: int) -> None:
        loop = asyncio.get_running_loop()
        try:
            self._server = await loop.create_server(self._new_connection, host, port, reuse_address=True,
                                                    ssl=self.ssl_context)
        except OSError as exc:
            reason = "address already in use" if exc.errno == errno.EADDRINUSE else (exc.strerror or str(exc))
            raise errors.UsageError(
                f"cannot listen on {host}:{port} for the {self.name}: {reason}",
                hint="pick another port, or 0 for a free one",
            ) from exc
        sockname = self._server.sockets[0].getsockname()
        self.host, self.port = sockname[0], sockname[1]

    def _new_connection(self) -> ServerConnection:
        return ServerConnection(self, next(self._ids))

    def handle(self, cmd: RemotingCommand, conn: ServerConnection) -> Result:
        if self.sync is not None:
            self.sync()
        handler = self.handlers.get(cmd.code)
        if handler is None:
            return not_supported(cmd)
        replies = self.replies
        if replies is not None:
            if cmd.code in CACHED_READS:
                return replies.answer(cmd, conn, handler, self.name)
            replies.changed()  # anything else may change what the reads answer
        conn.changed_cluster = True
        result = handler(cmd, conn)
        if self.sync is not None:
            # Run what the request made due right now (e.g. a send waking long-polling pulls)
            # instead of waiting for the clock driver's next tick.
            self.sync()
        if replies is not None:
            replies.changed()
        return result

    def connection_closed(self, conn: ServerConnection) -> None:
        """The connection stopped serving: the broker forgets its clients. A connection that
        only read (an admin tool's) leaves the kept answers as they are."""
        if self.replies is not None and conn.changed_cluster:
            self.replies.changed()
        if self.on_close is not None:
            self.on_close(conn)

    def connection_gone(self, conn: ServerConnection) -> None:
        """The connection's socket is closed: it no longer counts against the cap or the budget."""
        self.connections.discard(conn)
        self.budget.remove(conn)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for conn in list(self.connections):
            conn.abort()
        if self._server is not None:
            with contextlib.suppress(TimeoutError, OSError):
                await asyncio.wait_for(self._server.wait_closed(), 2.0)
            self._server = None


class EmulatorServer:
    """The name server and every broker of an :class:`EmulatedCluster` on TCP ports."""

    def __init__(self, cluster: EmulatedCluster, *, host: str = "127.0.0.1", namesrv_port: int = 0,
                 broker_ports: Mapping[str, int] | None = None, advertise: str | None = None,
                 sync: Callable[[], None] | None = None, limits: ServerLimits | None = None,
                 ssl_context: ssl.SSLContext | None = None, cache_replies: bool = False) -> None:
        self.cluster = cluster
        self.host = host
        self.namesrv_port = namesrv_port
        self.broker_ports = dict(broker_ports or {})
        self.advertise = advertise or (host if host not in ("0.0.0.0", "::", "") else "127.0.0.1")
        self.sync = sync
        self.limits = limits or ServerLimits()
        #: one memory budget for every port
        self.budget = MemoryBudget(self.limits.memory_bytes)
        self.namesrv = RemotingServer("name server", namesrv_handlers(cluster), sync=sync, limits=self.limits,
                                      budget=self.budget)
        self.brokers: dict[str, RemotingServer] = {}
        for name, broker in cluster.brokers.items():
            service = BrokerService(cluster, broker)
            self.brokers[name] = RemotingServer(f"broker {name}", service.handlers(), sync=sync,
                                                on_close=broker.channel_closed, limits=self.limits,
                                                budget=self.budget)
        #: with ``cache_replies``, one cache for every port: a change seen by one port (a commit, a
        #: heartbeat, a closed connection) is a change for all of them
        self.replies = ReplyCache(cluster) if cache_replies else None
        for server in (self.namesrv, *self.brokers.values()):
            server.ssl_context = ssl_context
            server.replies = self.replies

    @property
    def namesrv_addr(self) -> str:
        return f"{self.advertise}:{self.namesrv.port}"

    def broker_addrs(self) -> dict[str, str]:
        return {name: b.addr for name, b in sorted(self.cluster.brokers.items())}

    async def start(self) -> None:
        try:
            await self.namesrv.start(self.host, self.namesrv_port)
            for name, server in self.brokers.items():
                await server.start(self.host, self.broker_ports.get(name, 0))
                self.cluster.brokers[name].addr = f"{self.advertise}:{server.port}"
        except BaseException:
            await self.stop()
            raise
        self.cluster.namesrv_addr = self.namesrv_addr
        self.cluster.namesrv.invalidate()  # routes carry the broker addresses just bound

    async def stop(self) -> None:
        await asyncio.gather(self.namesrv.stop(), *(b.stop() for b in self.brokers.values()),
                             return_exceptions=True)

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


