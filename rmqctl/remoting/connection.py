"""The client end of the remoting protocol: a connection to one server, and a pool of them.

A :class:`Connection` opens the socket and runs one reader task over an
:class:`~rmqctl.remoting.endpoint.Endpoint`, which keeps the pending requests by ``opaque``
(RocketMQ may answer out of order), hands requests *from* the server (a broker relaying
``GET_CONSUMER_RUNNING_INFO`` to a client, a consumer-ids-changed notice) to the connection's
request handler, and fails every pending request with :class:`~rmqctl.errors.ConnectionLost`
raised from the cause (or with the :class:`~rmqctl.errors.ProtocolError` of the frame that could
not be decoded) when the socket dies. What is the client's own: signing requests, speaking TLS
when asked (:mod:`rmqctl.remoting.tls`; a mismatch either way is named as one), and noticing a
server that answers ``GO_AWAY``. The pool opens a fresh connection on next use (servers close idle
channels after 120 s, and a server shutting down answers ``GO_AWAY``).
:meth:`ConnectionPool.request` gives connecting, sending and waiting for the answer one deadline;
no future or task is ever left with an exception nobody retrieves, whatever the peer does.

Must not import anything above the remoting layer.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from rmqctl import errors
from rmqctl.remoting.acl import Credentials, sign
from rmqctl.remoting.codes import ResponseCode
from rmqctl.remoting.endpoint import Endpoint, HandlerResult
from rmqctl.remoting.frame import FLAG_ONEWAY, RemotingCommand
from rmqctl.remoting.tls import TlsOptions, handshake_error, speaks_tls

if TYPE_CHECKING:
    import ssl

log = logging.getLogger(__name__)

RequestHandler = Callable[[RemotingCommand], Awaitable[RemotingCommand | None]]

def split_address(address: str) -> tuple[str, int]:
    """``host:port`` → (host, port), with a clear error for anything else."""
    host, sep, port = address.strip().rpartition(":")
    shown = address if len(address) <= 80 else address[:60] + "…"
    # isascii: "¹²" is a digit to str.isdigit but not to int()
    if not sep or not host or not (port.isascii() and port.isdigit()) or not 0 < int(port) < 65536:
        raise errors.UsageError(f"invalid address {shown!r}; expected host:port")
    host = host.strip("[]")
    if len(host) > 253:  # the longest DNS name; longer ones fail deep inside the resolver
        raise errors.UsageError(f"invalid address {shown!r}: host name longer than 253 characters")
    if not _idna_encodable(host):
        raise errors.UsageError(f"invalid address {shown!r}: not a valid DNS host name")
    return host, int(port)


def _idna_encodable(host: str) -> bool:
    """Whether the ``idna`` codec (which the resolver applies to a host name) takes ``host``. An
    ASCII name is checked here by the codec's own rule for ASCII (every label but the last of 1-63
    characters, the last under 64), without loading the codec and the Unicode tables behind it."""
    if host.isascii():
        labels = host.split(".")
        return all(0 < len(label) < 64 for label in labels[:-1]) and len(labels[-1]) < 64
    try:
        host.encode("idna")
    except UnicodeError:
        return False
    return True


#: Seconds a closing connection may spend flushing what it still has to send.
CLOSE_GRACE = 1.0
#: how an HTTP server's reply starts (a dashboard's or a proxy's port given as a name server)
HTTP_REPLY = b"HTTP"
#: how a TLS record starts (a handshake or an alert): a TLS server answering plain bytes
TLS_RECORD = (b"\x15\x03", b"\x16\x03")
#: a TLS handshake that got no answer: a plain server waiting for a whole frame never answers one
PLAIN_PORT_HINT = "the TLS handshake got no answer: is it a plain port? (drop --tls)"
#: Seconds the TLS probe of a server that closed a plain connection may take.
PROBE_TIMEOUT = 2.0


async def resolve(host: str, port: int) -> str:
    """The first address of ``host``, looked up in a daemon thread of its own.

    asyncio resolves names in its default executor, whose threads ``asyncio.run`` waits for at
    exit: a DNS server that never answers held the process for the resolver's own timeouts long
    after ``--timeout`` had ended the command. A daemon thread is abandoned instead.
    """
    import ipaddress
    import socket
    import threading

    try:
        ipaddress.ip_address(host)
        return host
    except ValueError:
        pass
    loop = asyncio.get_running_loop()
    answer: asyncio.Future[str] = loop.create_future()

    def settle(value: str | None, error: OSError | None) -> None:
        if answer.done():
            return
        if error is not None:
            answer.set_exception(error)
        else:
            answer.set_result(value or host)

    def lookup() -> None:
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
            value, error = str(infos[0][4][0]), None
        except OSError as exc:
            value, error = None, exc
        except UnicodeError as exc:  # split_address has refused what IDNA cannot encode
            value, error = None, OSError(str(exc))
        try:
            loop.call_soon_threadsafe(settle, value, error)
        except RuntimeError:  # the loop is gone: nobody waits any more
            pass

    threading.Thread(target=lookup, name=f"resolve-{host[:40]}", daemon=True).start()
    return await answer


class Connection:
    """A single TCP connection speaking the remoting protocol, as a client."""

    def __init__(
        self,
        address: str,
        *,
        handler: RequestHandler | None = None,
        credentials: Credentials | None = None,
        tls: TlsOptions | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.address = address
        self._handler = handler
        self._credentials = credentials
        self._tls = tls
        self._ssl_context = ssl_context if ssl_context is not None or tls is None else tls.context()
        self._endpoint: Endpoint | None = None
        self._reader_task: asyncio.Task[None] | None = None
        self._going_away = False
        #: an answer has arrived on this connection (a server enforcing TLS closes a plain one first)
        self._answered = False

    @property
    def usable(self) -> bool:
        """Open, not closed by the peer, and the peer did not announce it is going away."""
        return self._endpoint is not None and not self._endpoint.closed and not self._going_away

    async def open(self, timeout: float) -> None:
        host, port = split_address(self.address)
        try:
            async with asyncio.timeout(timeout):
                ip = await resolve(host, port)
                if self._ssl_context is None:
                    reader, writer = await asyncio.open_connection(ip, port)
                else:
                    reader, writer = await self._open_tls(ip, port, host, self._ssl_context)
        except TimeoutError as exc:
            raise errors.TimeoutError(
                f"connecting to {self.address} timed out after {round(timeout, 2):g}s",
                # a plain server that waits for a whole frame never answers a TLS handshake
                hint=None if self._ssl_context is None else PLAIN_PORT_HINT,
            ) from exc
        except OSError as exc:
            raise errors.ConnectionError(f"cannot connect to {self.address}: {errors.os_reason(exc)}") from exc
        self._endpoint = Endpoint(writer, self._handle_request, peer=self.address,
                                  on_handler_error=self._handler_failed, coalesce=True)
        self._reader_task = asyncio.create_task(self._read_loop(reader), name=f"rmq-read-{self.address}")

    async def _open_tls(self, ip: str, port: int, host: str,
                        context: ssl.SSLContext) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        import ssl

        try:
            # the name the user gave goes out as SNI (none for an IP address); the certificate is
            # checked against its chain only (see rmqctl.remoting.tls)
            return await asyncio.open_connection(ip, port, ssl=context, server_hostname=host)
        except (ssl.SSLError, ConnectionResetError, BrokenPipeError, asyncio.IncompleteReadError) as exc:
            raise handshake_error(self.address, exc, self._tls or TlsOptions()) from exc

    def _live_endpoint(self) -> Endpoint:
        if not self.usable or self._endpoint is None:
            raise errors.ConnectionLost(f"connection to {self.address} is closed")
        return self._endpoint

    def _signed(self, cmd: RemotingCommand) -> RemotingCommand:
        return cmd if self._credentials is None else sign(cmd, self._credentials)

    @property
    def answering(self) -> bool:
        """:attr:`usable`, and an answer came on it before: a request sent on it now needs none of
        the checks of a connection the server may close unanswered (see :meth:`request`)."""
        return self._answered and self.usable

    async def request(self, cmd: RemotingCommand, timeout: float | None, *,
                      deadline: float | None = None) -> RemotingCommand:
        """Send a request and wait for its response (any response code).

        With ``timeout=None`` the caller bounds the wait (e.g. with ``asyncio.timeout``), or
        ``deadline`` does (:meth:`Endpoint.request`).
        """
        endpoint = self._live_endpoint()
        try:
            response = await endpoint.request(self._signed(cmd), timeout, deadline=deadline)
        except errors.ProtocolError as exc:
            if exc.raw.startswith(HTTP_REPLY):  # its length prefix read "HTTP": 1213486160 bytes
                raise errors.ProtocolError(
                    f"{self.address} answered in HTTP, not RocketMQ's remoting protocol: "
                    "is it a dashboard or a proxy's HTTP port?", exc.raw) from exc
            if exc.raw.startswith(TLS_RECORD) and self._ssl_context is None:
                raise self._needs_tls() from exc
            raise
        except errors.ConnectionLost as exc:
            # closed before any answer: a server enforcing TLS does that to a plain connection
            if self._ssl_context is None and not self._answered and await self._accepts_tls():
                raise self._needs_tls() from exc
            if self._ssl_context is not None and not self._answered:
                # TLS 1.3 tells a client that its certificate was refused only after the handshake
                raise errors.ConnectionError(
                    f"{self.address} closed the TLS connection before answering",
                    hint="it may require a client certificate it trusts: tls_cert_file and tls_key_file "
                         "in the context") from exc
            raise
        self._answered = True
        if response.code == ResponseCode.GO_AWAY:
            self._going_away = True
        return response

    def start_request(self, cmd: RemotingCommand) -> tuple[Endpoint, int, asyncio.Future[RemotingCommand]]:
        """Send a request without waiting (:meth:`Endpoint.start_request`, signed): the endpoint,
        the opaque and the future of its response. The caller bounds the wait; an answer it gets
        this way is not looked at for TLS or HTTP mix-ups or ``GO_AWAY`` (ask again with
        :meth:`request` for that)."""
        endpoint = self._live_endpoint()
        opaque, future = endpoint.start_request(self._signed(cmd))
        return endpoint, opaque, future

    async def _accepts_tls(self) -> bool:
        host, port = split_address(self.address)
        try:
            ip = await resolve(host, port)
        except OSError:
            return False
        return await speaks_tls(ip, port, PROBE_TIMEOUT)

    def _needs_tls(self) -> errors.TlsMismatch:
        return errors.TlsMismatch(
            f"{self.address} requires TLS: it closed the plain connection and accepts a TLS handshake",
            hint="add --tls (or set tls = true in the context)")

    async def send_oneway(self, cmd: RemotingCommand) -> None:
        endpoint = self._live_endpoint()
        endpoint.send_oneway(self._signed(replace(cmd, flag=FLAG_ONEWAY)))
        await endpoint.drain()

    async def _read_loop(self, reader: asyncio.StreamReader) -> None:
        assert self._endpoint is not None
        ended = await self._endpoint.serve(reader)
        if isinstance(ended, errors.ProtocolError):
            log.debug("protocol error from %s: %s", self.address, ended)
        elif ended is not None and not isinstance(ended, (OSError, asyncio.IncompleteReadError)):
            log.debug("reader of %s failed", self.address, exc_info=ended)

    def _handle_request(self, cmd: RemotingCommand) -> HandlerResult:
        if self._handler is None:
            return cmd.response(
                ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
                remark=f" request type {cmd.code} not supported",
                language="PYTHON",
            )
        return self._handler(cmd)

    def _handler_failed(self, cmd: RemotingCommand, exc: Exception) -> RemotingCommand:
        log.debug("request handler failed for code %s", cmd.code, exc_info=exc)
        return cmd.response(ResponseCode.SYSTEM_ERROR, remark=str(exc), language="PYTHON")

    async def close(self) -> None:
        if self._endpoint is not None:
            self._endpoint.fail_all(None)
        if self._reader_task is not None and not self._reader_task.done():
            self._reader_task.cancel()
            try:
                await self._reader_task
            except (asyncio.CancelledError, Exception):
                pass
        if self._endpoint is not None:
            try:
                async with asyncio.timeout(CLOSE_GRACE):
                    await self._endpoint.wait_closed()
            except TimeoutError:
                # a peer that never reads keeps our unsent bytes (and the close) waiting for ever
                self._endpoint.abort()


class ConnectionPool:
    """Lazily opened connections by address; a dead or going-away connection is replaced."""

    def __init__(
        self,
        *,
        connect_timeout: float,
        credentials: Credentials | None = None,
        handler: RequestHandler | None = None,
        tls: TlsOptions | None = None,
    ) -> None:
        self.connect_timeout = connect_timeout
        self.credentials = credentials
        self.handler = handler
        self.tls = tls
        # built once (reading its files) and shared by every connection; a bad file fails here
        self._ssl_context = tls.context() if tls is not None else None
        self._conns: dict[str, Connection] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    async def get(self, address: str) -> Connection:
        conn = self._conns.get(address)
        if conn is not None and conn.usable:
            return conn  # the common case: no lock to take
        lock = self._locks.get(address)
        if lock is None:
            lock = self._locks[address] = asyncio.Lock()
        async with lock:
            conn = self._conns.get(address)
            if conn is not None and conn.usable:
                return conn
            if conn is not None:
                await conn.close()
            conn = Connection(address, handler=self.handler, credentials=self.credentials, tls=self.tls,
                              ssl_context=self._ssl_context)
            await conn.open(self.connect_timeout)
            self._conns[address] = conn
            return conn

    async def request(self, address: str, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        """Send on a pooled connection; retry once on a fresh one if the old one was dead.

        One deadline of ``timeout`` seconds covers connecting, sending, the retry and the wait.
        On a connection that has answered before, the first attempt waits by that deadline alone
        (a timer handle, no timeout context: a round of the exporter sends 10,000 requests).
        """
        conn = self._conns.get(address)
        if conn is None or not conn.answering:
            return await self._request(address, cmd, timeout, timeout, (0, 1))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        try:
            response = await conn.request(cmd, None, deadline=deadline)
        except errors.ConnectionLost:
            pass
        except TimeoutError as exc:  # the builtin one, raised at the deadline
            raise self._timed_out(address, cmd, timeout) from exc
        else:
            if response.code != ResponseCode.GO_AWAY:
                return response
        # dead or going away: once more on a fresh connection, within what is left of the deadline
        return await self._request(address, cmd, deadline - loop.time(), timeout, (1,))

    async def _request(self, address: str, cmd: RemotingCommand, left: float, timeout: float,
                       attempts: tuple[int, ...]) -> RemotingCommand:
        """:meth:`request`'s ``attempts`` (the last one is final) within ``left`` seconds of the
        caller's ``timeout``."""
        try:
            async with asyncio.timeout(left):
                for attempt in attempts:
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
            raise self._timed_out(address, cmd, timeout) from exc
        raise AssertionError("unreachable")

    def _timed_out(self, address: str, cmd: RemotingCommand, timeout: float) -> errors.TimeoutError:
        """The error of a request to ``address`` unanswered within ``timeout`` seconds; a TLS
        connection still without a usable one may be shaking hands with a plain port."""
        pooled = self._conns.get(address)
        handshaking = self._ssl_context is not None and (pooled is None or not pooled.usable)
        return errors.TimeoutError(f"request {cmd.code} to {address} timed out after {round(timeout, 2):g}s",
                                   hint=PLAIN_PORT_HINT if handshaking else None)

    async def close(self) -> None:
        conns, self._conns = list(self._conns.values()), {}
        await asyncio.gather(*(c.close() for c in conns), return_exceptions=True)
