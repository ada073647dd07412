"""A small HTTP/1.1 control API for a served emulator (asyncio + h11, JSON in and out).

Endpoints (all JSON; errors are ``{"error": "..."}`` with a 4xx/5xx status):

- ``GET  /v1/health``                 scenario name and clock
- ``GET  /v1/clients``                every simulated consumer, running or stopped
- ``POST /v1/consumers``              start one: ``{"group", "topic", "expr"}`` or
  ``{"group", "subscriptions": {TOPIC: EXPR}}``, optional ``client_id``, ``strategy``,
  ``message_model``, ``consume_from_where``, ``post_subscription``, ``sub_version``, ``ip``
- ``POST /v1/consumers/stop``         ``{"client_id", "kill": false}`` (also ``DELETE /v1/consumers/ID``)
- ``POST /v1/produce``                ``{"topic", "tag", "count", "queue", "broker", "keys"}``
- ``POST /v1/advance``                ``{"seconds"}``: only with the virtual clock (409 otherwise)
- ``GET  /v1/state``                  the full state dump; ``GET /v1/report`` the run report

It listens on loopback by default. Bound to any other address it refuses to start without a
token, and every request must then carry ``Authorization: Bearer <token>`` (a token, when set,
is always required, loopback or not). Without a token a request must name a loopback ``Host``
(a DNS-rebinding page names its own) and, when it carries an ``Origin``, come from the API's own
origin (a cross-site page's POST carries the page's): both are answered 403. One request per
connection (``Connection: close``); at most :data:`MAX_CONNECTIONS` at once, the next ones are
answered 503 and closed at once, so no client can hold every file descriptor of the process.

HTTP framing is h11's (no hand-written parsing): any malformed request gets a 4xx answer and is
never logged as a traceback; a request not complete within ``request_timeout`` seconds gets 408;
headers are capped at 64 KiB and bodies at 1 MiB (413); ``produce`` sends at most
:data:`MAX_PRODUCE` messages per request, in chunks, yielding to other clients between them.

Must not import the CLI, textual or pyspark.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import hmac
import ipaddress
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import unquote, urlsplit

import h11

from rmqctl import errors
from rmqctl.emulator import report
from rmqctl.emulator.clock import FrozenWorld, RealTimeDriver
from rmqctl.emulator.scenario import CONSUME_FROM_WHERE, MESSAGE_MODELS, ConsumerSpec
from rmqctl.emulator.world import EmulatedCluster
from rmqctl.rebalance.strategies import AllocationError, get_strategy

log = logging.getLogger(__name__)

MAX_HEADER = 64 * 1024
MAX_BODY = 1024 * 1024
#: Most messages one ``POST /v1/produce`` may send.
MAX_PRODUCE = 100_000
#: ``produce`` yields to the event loop after every this many messages.
PRODUCE_CHUNK = 1000
#: Default seconds a client has to send one whole request.
REQUEST_TIMEOUT = 10.0
#: Default most control connections open at once.
MAX_CONNECTIONS = 64
_READ_CHUNK = 16 * 1024
_REASONS = {200: "OK", 201: "Created", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
            405: "Method Not Allowed", 408: "Request Timeout", 409: "Conflict", 413: "Payload Too Large",
            431: "Request Header Fields Too Large", 500: "Internal Server Error", 503: "Service Unavailable"}

Route = Callable[[dict[str, Any]], "tuple[int, Any] | Awaitable[tuple[int, Any]]"]


def _content_length(request: h11.Request) -> int | None:
    for name, value in request.headers:
        if name == b"content-length":
            return int(value)  # h11 has checked it is a number
    return None


class HttpError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address, IPv6 with or without brackets) is this machine."""
    host = host.strip("[]")
    if host in ("localhost", ""):
        return host == "localhost"
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback  # ::ffff:127.0.0.1
    return address.is_loopback


def _host_of(authority: str) -> str:
    """The host part of a ``Host`` header or an origin's authority (``[::1]:80`` -> ``::1``)."""
    if authority.startswith("["):
        return authority[1:].split("]", 1)[0]
    return authority.rsplit(":", 1)[0] if authority.count(":") == 1 else authority


class ControlServer:
    """The control API of one emulated cluster."""

    def __init__(self, cluster: EmulatedCluster, *, driver: RealTimeDriver | None = None,
                 host: str = "127.0.0.1", port: int = 0, token: str | None = None,
                 request_timeout: float = REQUEST_TIMEOUT, max_connections: int = MAX_CONNECTIONS,
                 heap: FrozenWorld | None = None) -> None:
        if not is_loopback(host) and not token:
            raise errors.UsageError(
                f"the control API would listen on {host}, which is not loopback, without a token",
                hint="pass --token TOKEN (clients then send Authorization: Bearer TOKEN)",
            )
        self.cluster = cluster
        self.driver = driver
        self.host = host
        self.port = port
        self.token = token
        self.request_timeout = request_timeout
        self.max_connections = max_connections
        #: how the serving process's collector treats an advance (None: as it is)
        self.heap = heap
        self._open = 0
        self._server: asyncio.base_events.Server | None = None
        self._routes: dict[tuple[str, str], Route] = {
            ("GET", "/v1/health"): self._health,
            ("GET", "/v1/clients"): self._clients,
            ("POST", "/v1/consumers"): self._start_consumer,
            ("POST", "/v1/consumers/stop"): self._stop_consumer,
            ("POST", "/v1/produce"): self._produce,
            ("POST", "/v1/advance"): self._advance,
            ("GET", "/v1/state"): self._state,
            ("GET", "/v1/report"): self._report,
        }

    @property
    def url(self) -> str:
        host = self.host if ":" not in self.host else f"[{self.host}]"
        if host in ("0.0.0.0", "[::]"):
            host = "127.0.0.1"
        return f"http://{host}:{self.port}"

    async def start(self) -> None:
        try:
            self._server = await asyncio.start_server(self._accept, self.host, self.port,
                                                      reuse_address=True)
        except OSError as exc:
            reason = "address already in use" if exc.errno == errno.EADDRINUSE else (exc.strerror or str(exc))
            raise errors.UsageError(f"cannot listen on {self.host}:{self.port} for the control API: {reason}",
                                    hint="pick another --control-port, or 0 for a free one") from exc
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(TimeoutError, OSError):
                await asyncio.wait_for(self._server.wait_closed(), 2.0)
            self._server = None

    # -- HTTP ---------------------------------------------------------------------------------

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._open >= self.max_connections:
            body = b'{"error": "too many control connections"}'
            writer.write(b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                         b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body))
            writer.close()  # ~100 bytes: they fit the socket buffer, nothing waits on the peer
            return
        self._open += 1
        try:
            await self._answer(reader, writer)
        finally:
            self._open -= 1

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEADER)
        try:
            async with asyncio.timeout(self.request_timeout):
                request, blob = await self._read_request(conn, reader)
            status, payload = await self._serve_one(request, blob)
        except HttpError as exc:
            status, payload = exc.status, {"error": exc.message}
        except h11.RemoteProtocolError as exc:
            status, payload = exc.error_status_hint, {"error": f"malformed request: {exc}"}
        except TimeoutError:
            status, payload = 408, {"error": f"request not complete within {self.request_timeout:g}s"}
        except (ConnectionError, OSError):
            writer.close()
            return
        body = json.dumps(payload, indent=None, ensure_ascii=False, default=str).encode("utf-8")
        headers = [("Content-Type", "application/json"), ("Content-Length", str(len(body))),
                   ("Connection", "close")]
        try:
            if conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
                data = conn.send(h11.Response(status_code=status, headers=headers,
                                              reason=_REASONS.get(status, "Error")))
                data = (data or b"") + (conn.send(h11.Data(data=body)) or b"")
                data += conn.send(h11.EndOfMessage()) or b""
            else:  # h11 cannot frame a response any more; write a minimal one ourselves
                data = (f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\nContent-Type: application/json\r\n"
                        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode("ascii") + body
            writer.write(data)
            async with asyncio.timeout(self.request_timeout):
                await writer.drain()
        except (ConnectionError, OSError, TimeoutError, h11.LocalProtocolError):
            pass
        finally:
            writer.close()

    async def _read_request(self, conn: h11.Connection, reader: asyncio.StreamReader) -> tuple[h11.Request, bytes]:
        request: h11.Request | None = None
        body = bytearray()
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                chunk = await reader.read(_READ_CHUNK)
                conn.receive_data(chunk)  # b"" tells h11 the peer closed
                continue
            if isinstance(event, h11.Request):
                request = event
                length = _content_length(event)
                if length is not None and length > MAX_BODY:
                    raise HttpError(413, "request body too large")
            elif isinstance(event, h11.Data):
                body += event.data
                if len(body) > MAX_BODY:
                    raise HttpError(413, "request body too large")
            elif isinstance(event, h11.EndOfMessage):
                assert request is not None
                return request, bytes(body)
            elif isinstance(event, h11.ConnectionClosed):
                raise ConnectionResetError("the client closed the connection mid-request")

    async def _serve_one(self, request: h11.Request, blob: bytes) -> tuple[int, Any]:
        method = request.method.decode("ascii", "replace")
        target = request.target.decode("ascii", "replace")
        headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in request.headers}
        if self.token is not None:
            auth = headers.get("authorization", "")
            scheme, _, given = auth.partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), self.token.encode()):
                raise HttpError(401, "missing or wrong bearer token")
        else:
            self._check_local(headers)
        data: dict[str, Any] = {}
        if blob:
            try:
                parsed = json.loads(blob)
            except (ValueError, RecursionError) as exc:
                raise HttpError(400, f"body is not JSON: {exc}") from exc
            if not isinstance(parsed, dict):
                raise HttpError(400, "body must be a JSON object")
            data = parsed
        path = unquote(urlsplit(target).path).rstrip("/") or "/"
        route: Route | None
        if method == "DELETE" and path.startswith("/v1/consumers/"):
            data = {"client_id": path[len("/v1/consumers/"):], "kill": data.get("kill", False)}
            route = self._stop_consumer
        else:
            route = self._routes.get((method, path))
            if route is None:
                if any(p == path for _, p in self._routes):
                    raise HttpError(405, f"{method} is not allowed on {path}")
                raise HttpError(404, f"no such endpoint {path}")
        if self.driver is not None:
            self.driver.sync()
        try:
            result = route(data)
            status, payload = result if isinstance(result, tuple) else await result
        except errors.NotFound as exc:
            raise HttpError(404, exc.message) from exc
        except (errors.UsageError, errors.ConfigError, AllocationError) as exc:
            raise HttpError(400, exc.message) from exc
        except HttpError:
            raise
        except Exception as exc:
            log.warning("control request %s %s failed: %s: %s", method, path, type(exc).__name__, exc)
            raise HttpError(500, f"{type(exc).__name__}: {exc}") from exc
        finally:
            self.cluster.changes += 1  # a served emulator's kept answers are built again
        if self.driver is not None:
            self.driver.poke()
        return status, payload

    def _check_local(self, headers: dict[str, str]) -> None:
        """Without a token, only this machine's own clients: a loopback Host, no foreign Origin."""
        host = headers.get("host", "")
        if not is_loopback(_host_of(host)):
            raise HttpError(403, f"Host {host[:100]!r} is not a loopback address")
        origin = headers.get("origin")
        if origin is not None:
            parts = urlsplit(origin)
            try:
                port = parts.port
            except ValueError:
                port = None
            if parts.scheme != "http" or not is_loopback(parts.hostname or "") or port != self.port:
                raise HttpError(403, f"cross-origin request from {origin[:100]!r} refused")

    # -- endpoints -----------------------------------------------------------------------------

    def _health(self, data: dict[str, Any]) -> tuple[int, Any]:
        return 200, {"ok": True, "scenario": self.cluster.scenario.name, "at": self.cluster.elapsed,
                     "now_ms": self.cluster.now_ms, "clock": "real" if self.driver else "virtual",
                     "speed": self.driver.speed if self.driver else None,
                     "namesrv": self.cluster.namesrv_addr}

    def _clients(self, data: dict[str, Any]) -> tuple[int, Any]:
        return 200, {"clients": report.clients(self.cluster)}

    def _start_consumer(self, data: dict[str, Any]) -> tuple[int, Any]:
        group = _required(data, "group")
        subs = data.get("subscriptions")
        if subs is None:
            subs = {_required(data, "topic"): _text(data, "expr") or "*"}
        if not isinstance(subs, dict) or not subs or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in subs.items()):
            raise HttpError(400, "subscriptions must be an object of topic -> tag expression")
        strategy = _text(data, "strategy") or "AVG"
        get_strategy(strategy)
        model = _text(data, "message_model") or "CLUSTERING"
        if model not in MESSAGE_MODELS:
            raise HttpError(400, f"message_model must be one of {', '.join(MESSAGE_MODELS)}")
        cfw = _text(data, "consume_from_where") or CONSUME_FROM_WHERE[0]
        if cfw not in CONSUME_FROM_WHERE:
            raise HttpError(400, f"consume_from_where must be one of {', '.join(CONSUME_FROM_WHERE)}")
        client_id = _text(data, "client_id")
        if client_id is not None and "@" not in client_id:
            raise HttpError(400, f"{client_id!r} does not look like a client id (ip@instance)")
        sub_version = data.get("sub_version")
        if sub_version is not None and (isinstance(sub_version, bool) or not isinstance(sub_version, int)):
            raise HttpError(400, "sub_version must be an integer")
        spec = ConsumerSpec(
            group=group, subscriptions=tuple(subs.items()), client_id=client_id,
            strategy=strategy, message_model=model, consume_from_where=cfw,
            sub_version=sub_version, post_subscription=bool(data.get("post_subscription", False)),
            ip=_text(data, "ip"),
        )
        consumer = self.cluster.start_consumer(spec)
        doc = next(c for c in report.clients(self.cluster) if c["client_id"] == consumer.client_id
                   and c["running"])
        return 201, doc

    def _stop_consumer(self, data: dict[str, Any]) -> tuple[int, Any]:
        client_id = _required(data, "client_id")
        consumer = self.cluster.stop_consumer(client_id, kill=bool(data.get("kill", False)))
        return 200, {"client_id": consumer.client_id, "running": consumer.running}

    async def _produce(self, data: dict[str, Any]) -> tuple[int, Any]:
        topic = _required(data, "topic")
        count = data.get("count", 1)
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_PRODUCE:
            raise HttpError(400, f"count must be an integer between 1 and {MAX_PRODUCE}")
        queue = data.get("queue")
        if queue is not None and (isinstance(queue, bool) or not isinstance(queue, int)):
            raise HttpError(400, "queue must be an integer")
        tag, broker, keys = _text(data, "tag"), _text(data, "broker"), _text(data, "keys")
        producer = _text(data, "producer") or "default"
        sent = []
        for done in range(0, count, PRODUCE_CHUNK):
            if done:
                await asyncio.sleep(0)  # let other clients (and the clock) in between chunks
            sent += self.cluster.produce(topic, min(PRODUCE_CHUNK, count - done), tag, queue=queue,
                                         broker=broker, keys=keys, producer=producer)
        return 200, {
            "sent": len(sent),
            "messages": [{"broker": b, "queue_id": m.queue_id, "queue_offset": m.queue_offset,
                          "msg_id": m.msg_id, "tag": m.tag}
                         for m, b in ((m, self._broker_of(m)) for m in sent[:1000])],
        }

    def _broker_of(self, message: Any) -> str:
        for name, broker in self.cluster.brokers.items():
            queue = broker.queue(message.topic, message.queue_id)
            if message.queue_offset < len(queue) and queue[message.queue_offset] is message:
                return name
        return ""

    def _advance(self, data: dict[str, Any]) -> tuple[int, Any]:
        if self.driver is not None:
            raise HttpError(409, "the emulator runs on the real-time clock; serve with --clock virtual to advance it")
        seconds = data.get("seconds")
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 <= seconds <= 86_400 * 30:
            raise HttpError(400, "seconds must be a number between 0 and 2592000")
        if self.heap is None:
            self.cluster.advance(float(seconds))
        else:
            self.heap.advance(lambda: self.cluster.advance(float(seconds)))
        return 200, {"at": self.cluster.elapsed, "now_ms": self.cluster.now_ms}

    def _state(self, data: dict[str, Any]) -> tuple[int, Any]:
        return 200, report.state(self.cluster)

    def _report(self, data: dict[str, Any]) -> tuple[int, Any]:
        return 200, self.cluster.report()


def _text(data: dict[str, Any], key: str) -> str | None:
    value = data.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise HttpError(400, f"{key!r} must be a string")
    return value


def _required(data: dict[str, Any], key: str) -> str:
    value = _text(data, key)
    if value is None:
        raise HttpError(400, f"{key!r} is required")
    return value
