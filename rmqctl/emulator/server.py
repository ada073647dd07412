"""The emulator's remoting servers: one name server port and one port per broker (asyncio).

Each port speaks RocketMQ's native protocol over the same
:class:`~rmqctl.remoting.endpoint.Endpoint` as rmqctl's own client connection (pending table,
dispatch, fail-all) and answers what a real 5.x name server or broker answers: the handlers are in
:mod:`rmqctl.emulator.handlers` (name server) and :mod:`rmqctl.emulator.broker_handlers`. This
module is the connection handling around them.

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


_READ_CHUNK = 64 * 1024

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


class _MeteredWriter:
    """The connection's stream writer, telling it after each write how much it holds."""

    def __init__(self, writer: asyncio.StreamWriter, wrote: Callable[[], None]) -> None:
        self._writer = writer
        self._wrote = wrote
        self.transport = writer.transport

    def write(self, data: bytes) -> None:
        self._writer.write(data)
        self._wrote()

    async def drain(self) -> None:
        await self._writer.drain()

    def close(self) -> None:
        self._writer.close()

    async def wait_closed(self) -> None:
        await self._writer.wait_closed()

    def get_extra_info(self, name: str, default: object = None) -> object:
        return self._writer.get_extra_info(name, default)


class _IdleWatch:
    """The idle deadline of one connection's reads: ``idle_timeout`` after the last whole frame.

    One timer per connection, moved on only when it fires, instead of a timeout armed and
    cancelled around every read: a busy connection then costs nothing per request for it. The
    timer cancels the read it finds still waiting past the deadline; that read raises the
    builtin ``TimeoutError``, as ``asyncio.timeout`` would.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, idle_timeout: float) -> None:
        self._loop = loop
        self._idle_timeout = idle_timeout
        self._last = loop.time()
        self._reading: asyncio.Task[Any] | None = None
        self._fired = False
        self._timer: asyncio.TimerHandle | None = loop.call_at(self._last + idle_timeout, self._check)

    def progress(self) -> None:
        self._last = self._loop.time()

    async def read(self, reader: asyncio.StreamReader) -> bytes:
        self._reading = asyncio.current_task()
        try:
            return await reader.read(_READ_CHUNK)
        except asyncio.CancelledError:
            if self._fired and self._reading is not None and self._reading.uncancel() == 0:
                raise TimeoutError from None
            raise
        finally:
            self._reading = None

    def _check(self) -> None:
        due = self._last + self._idle_timeout
        now = self._loop.time()
        if now < due:  # a frame arrived since the timer was set
            self._timer = self._loop.call_at(due, self._check)
            return
        if self._reading is None:  # waiting for replies to drain, which has its own bound
            self._timer = self._loop.call_at(now + self._idle_timeout, self._check)
            return
        self._timer = None
        self._fired = True
        self._reading.cancel()

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


class ServerConnection:
    """One accepted connection; also a broker :class:`~.groups.Channel` for TCP clients."""

    def __init__(self, server: RemotingServer, reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter, channel_id: int) -> None:
        self.server = server
        self.reader = reader
        self.writer = writer
        self.channel_id = channel_id
        peer = writer.get_extra_info("peername")
        self.remote_addr = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        self.decoder = frame.FrameDecoder(server.limits.max_frame_bytes)
        #: bytes this connection is counted for in the server's memory budget
        self.charged = 0
        self._over_budget: str | None = None
        metered = cast(asyncio.StreamWriter, _MeteredWriter(writer, self._wrote))
        self.endpoint = Endpoint(metered, self._handle, peer=self.remote_addr,
                                 on_handler_error=self._handler_failed, on_close=self._closed)

    def __hash__(self) -> int:
        return self.channel_id

    def __eq__(self, other: object) -> bool:
        return self is other

    @property
    def closed(self) -> bool:
        return self.endpoint.closed

    @property
    def write_buffered(self) -> int:
        """Reply bytes queued in the transport, not yet taken by the peer."""
        return self.endpoint.write_buffered

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

    async def run(self) -> None:
        limits = self.server.limits
        self.writer.transport.set_write_buffer_limits(high=limits.write_buffer_bytes)
        ended: Exception | None
        try:
            ended = await self._serve()
        except asyncio.CancelledError:
            self.endpoint.abort()
            self.server.connection_gone(self)
            raise
        except Exception as exc:  # never a traceback per connection
            ended = exc
        self.endpoint.fail_all(ended)
        try:
            await self._release(graceful=ended is None)
        finally:
            self.server.connection_gone(self)
        self._log_end(ended)

    async def _serve(self) -> Exception | None:
        """Read and dispatch until the peer closes; then ``None``, else why it was closed."""
        limits = self.server.limits
        loop = asyncio.get_running_loop()
        budget = self.server.budget
        idle = _IdleWatch(loop, limits.idle_timeout)
        try:
            while not self.closed:
                try:
                    chunk = await idle.read(self.reader)
                except TimeoutError:
                    return errors.TimeoutError(f"idle for {limits.idle_timeout:g}s")
                if not chunk or self.closed:
                    return None
                self.decoder.feed(chunk)
                try:
                    for cmd in self.decoder:
                        # progress: a whole frame arrived (bytes alone do not count)
                        idle.progress()
                        self.endpoint.receive(cmd)
                        if self.closed:
                            break
                        if self.write_buffered > limits.write_buffer_bytes:
                            stalled = await self._wait_drained()
                            if stalled is not None:
                                return stalled
                            idle.progress()
                except errors.ProtocolError as exc:
                    return exc
                budget.check(self)
            return None
        finally:
            idle.stop()

    async def _wait_drained(self) -> Exception | None:
        """Backpressure: read no more requests until the peer takes our replies; a peer that
        takes none of them for ``idle_timeout`` is closed."""
        limits = self.server.limits
        while not self.closed and self.write_buffered > limits.write_buffer_bytes:
            before = self.write_buffered
            try:
                async with asyncio.timeout(limits.idle_timeout):
                    await self.writer.drain()
            except TimeoutError as exc:
                if self.write_buffered < before:
                    continue  # it reads, slowly
                return exc
            except (OSError, RuntimeError) as exc:
                return exc
        return None

    async def _release(self, *, graceful: bool) -> None:
        """Let the socket go: a peer that closed gets its queued replies for up to
        ``idle_timeout``; any other ending drops them at once (the memory goes with them)."""
        transport = self.writer.transport
        try:
            unsent = transport.get_write_buffer_size()
        except AttributeError:  # a TLS transport whose connection is gone (asyncio's sslproto)
            unsent = 0
        if graceful and unsent:
            try:
                async with asyncio.timeout(self.server.limits.idle_timeout):
                    await self.writer.wait_closed()
            except (TimeoutError, OSError, RuntimeError):
                pass
        transport.abort()

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

    def _wrote(self) -> None:
        if not self.closed:
            self.server.budget.check(self)

    def abort_over_budget(self, limit: int) -> None:
        """Close at once, dropping what it holds, to bring the memory budget back under ``limit``."""
        what = (f"{self.write_buffered} bytes of replies it does not read" if self.output_full
                else f"{self.held()} bytes held")
        self._over_budget = f"over the memory budget of {limit} bytes across connections ({what})"
        self.server.budget.closed += 1
        self.server.budget.remove(self)
        self.endpoint.abort()

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
        self.endpoint.send_oneway(RemotingCommand(code=RequestCode.NOTIFY_CONSUMER_IDS_CHANGED,
                                                  language="JAVA", version=BROKER_VERSION,
                                                  ext_fields={"consumerGroup": group}))

    async def invoke(self, request: RemotingCommand, timeout: float) -> RemotingCommand:
        if self.closed:
            raise errors.ConnectionLost(f"channel {self.remote_addr} is closed")
        return await self.endpoint.request(
            RemotingCommand(code=request.code, language="JAVA", version=BROKER_VERSION,
                            ext_fields=dict(request.ext_fields), body=request.body),
            timeout)

    def close(self) -> None:
        """Close the connection: pending relays fail, long-polling pulls stop, the broker forgets it."""
        self.endpoint.fail_all(None)

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

    async def start(self, host: str, port: int) -> None:
        try:
            self._server = await asyncio.start_server(self._accept, host, port, reuse_address=True,
                                                      ssl=self.ssl_context)
        except OSError as exc:
            reason = "address already in use" if exc.errno == errno.EADDRINUSE else (exc.strerror or str(exc))
            raise errors.UsageError(
                f"cannot listen on {host}:{port} for the {self.name}: {reason}",
                hint="pick another port, or 0 for a free one",
            ) from exc
        sockname = self._server.sockets[0].getsockname()
        self.host, self.port = sockname[0], sockname[1]

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if len(self.connections) >= self.limits.max_connections:
            self.refused += 1
            log.warning("%s: refusing a connection from %s: %d connections open (the cap)", self.name,
                        writer.get_extra_info("peername"), len(self.connections))
            writer.close()
            return
        sock = writer.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
        conn = ServerConnection(self, reader, writer, next(self._ids))
        # counted until its socket is really gone, not only until the broker forgets it
        self.connections.add(conn)
        self.budget.add(conn)
        await conn.run()

    def handle(self, cmd: RemotingCommand, conn: ServerConnection) -> Result:
        if self.sync is not None:
            self.sync()
        handler = self.handlers.get(cmd.code)
        if handler is None:
            return not_supported(cmd)
        result = handler(cmd, conn)
        if self.sync is not None:
            # Run what the request made due right now (e.g. a send waking long-polling pulls)
            # instead of waiting for the clock driver's next tick.
            self.sync()
        return result

    def connection_closed(self, conn: ServerConnection) -> None:
        """The connection stopped serving: the broker forgets its clients."""
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
            conn.endpoint.abort()
        if self._server is not None:
            with contextlib.suppress(TimeoutError, OSError):
                await asyncio.wait_for(self._server.wait_closed(), 2.0)
            self._server = None


class EmulatorServer:
    """The name server and every broker of an :class:`EmulatedCluster` on TCP ports."""

    def __init__(self, cluster: EmulatedCluster, *, host: str = "127.0.0.1", namesrv_port: int = 0,
                 broker_ports: Mapping[str, int] | None = None, advertise: str | None = None,
                 sync: Callable[[], None] | None = None, limits: ServerLimits | None = None,
                 ssl_context: ssl.SSLContext | None = None) -> None:
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
        for server in (self.namesrv, *self.brokers.values()):
            server.ssl_context = ssl_context

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


