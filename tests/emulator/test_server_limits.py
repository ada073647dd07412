"""The served emulator under attack: bounded remoting ports and a control API that always answers.

Each attack runs against a served emulator while a normal admin client keeps asking for the
group list; the server must close idle and bad connections, refuse connections over its cap,
stop reading from a peer that does not read its replies (bounded write buffer), log one line
per bad frame, and answer every malformed HTTP request with a 4xx without a traceback.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import struct
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import httpx
import pytest

from rmqctl.backends.remoting import RemotingBackend
from rmqctl.emulator.control import MAX_PRODUCE
from rmqctl.emulator.scenario import load_scenario
from rmqctl.emulator.serve import Served, ServeOptions, running_emulator
from rmqctl.emulator.server import ServerConnection, ServerLimits
from rmqctl.emulator.world import EmulatedCluster
from rmqctl.remoting import frame
from rmqctl.remoting.admin import AdminClient
from rmqctl.remoting.codes import RequestCode
from rmqctl.service import ClusterService

BOUND = 30.0
LIMITS = ServerLimits(idle_timeout=0.8, max_connections=4, max_frame_bytes=64 * 1024,
                      write_buffer_bytes=64 * 1024)


@asynccontextmanager
async def emulator(limits: ServerLimits = LIMITS, **options: object) -> AsyncIterator[tuple[Served, ClusterService]]:
    async with emulated(limits, **options) as (served, source, _):
        yield served, source


@asynccontextmanager
async def emulated(limits: ServerLimits = LIMITS,
                   **options: object) -> AsyncIterator[tuple[Served, ClusterService, EmulatedCluster]]:
    opts = ServeOptions(clock="virtual", at=5, limits=limits, **options)  # type: ignore[arg-type]
    async with running_emulator(load_scenario("healthy"), opts) as (served, cluster):
        source = ClusterService(RemotingBackend(AdminClient([served.namesrv], timeout=3.0)))
        try:
            assert "order-service" in (await source.groups()).value  # connects before any attack
            yield served, source, cluster
        finally:
            await source.close()


async def wait_for(condition: Callable[[], bool], what: str, bound: float = BOUND) -> None:
    deadline = time.monotonic() + bound
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.01)


async def group_list_answers(source: ClusterService) -> None:
    """The admin client is answered while the attack holds (its own connection, no error)."""
    groups = await asyncio.wait_for(source.groups(), BOUND)
    assert "order-service" in groups.value and not groups.errors


async def connect(address: str, rcvbuf: int | None = None) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    host, port = address.rsplit(":", 1)
    if rcvbuf is None:
        return await asyncio.open_connection(host, int(port))
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, (host, int(port)))
    return await asyncio.open_connection(sock=sock)


async def closed_by_server(reader: asyncio.StreamReader, bound: float = BOUND) -> bool:
    try:
        while await asyncio.wait_for(reader.read(65536), bound):
            pass
    except (ConnectionError, OSError):
        pass
    return True


async def test_an_idle_connection_is_closed_after_the_idle_timeout(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="rmqctl.emulator.server")
    async with emulator() as (served, source):
        reader, writer = await connect(served.namesrv)
        # not closed on sight: a request on it is answered first
        request = frame.request(RequestCode.GET_BROKER_CLUSTER_INFO)
        writer.write(frame.encode(request))
        decoder = frame.FrameDecoder()
        answers: list[frame.RemotingCommand] = []
        while not answers:
            chunk = await asyncio.wait_for(reader.read(65536), BOUND)
            assert chunk, "closed before it was idle"
            decoder.feed(chunk)
            answers.extend(decoder)
        assert [(a.opaque, a.code) for a in answers] == [(request.opaque, 0)]
        await group_list_answers(source)  # the admin's own connection is busy, not idle
        assert await closed_by_server(reader)
        await group_list_answers(source)
        port = writer.get_extra_info("sockname")[1]
        writer.close()
    # this connection was closed once, and for being idle
    closes = [r.getMessage() for r in caplog.records
              if r.getMessage().startswith("name server: closing") and f":{port}" in r.getMessage()]
    assert closes == [f"name server: closing 127.0.0.1:{port}, idle for {LIMITS.idle_timeout:g}s"], closes


async def test_the_cap_refuses_the_next_connection_while_connected_clients_are_served(caplog) -> None:
    limits = ServerLimits(idle_timeout=30, max_connections=4)
    async with emulator(limits) as (served, source):
        # the admin client holds one name server connection; three more reach the cap
        held = [await connect(served.namesrv) for _ in range(3)]
        for reader, writer in held:  # each one is served
            writer.write(frame.encode(frame.request(RequestCode.GET_BROKER_CLUSTER_INFO)))
            length = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), BOUND))[0]
            assert frame.decode_payload(await reader.readexactly(length)).code == 0
        reader, writer = await connect(served.namesrv)
        assert await closed_by_server(reader, 5.0)
        assert any("refusing a connection" in r.getMessage() for r in caplog.records)
        await group_list_answers(source)
        for _, w in held + [(reader, writer)]:
            w.close()


async def test_a_frame_over_the_read_limit_closes_only_that_connection_with_one_log_line(caplog) -> None:
    caplog.set_level(logging.WARNING, logger="rmqctl.emulator.server")
    async with emulator() as (served, source):
        reader, writer = await connect(served.namesrv)
        writer.write(struct.pack(">i", LIMITS.max_frame_bytes + 1) + b"\x00" * 1000)
        assert await closed_by_server(reader)
        lines = [r for r in caplog.records if r.name == "rmqctl.emulator.server"]
        assert len(lines) == 1 and "bad frame" in lines[0].getMessage() and lines[0].exc_info is None
        await group_list_answers(source)
        writer.close()


BAD_FRAMES = {
    "deep-header": lambda: (lambda h: struct.pack(">ii", 4 + len(h), len(h)) + h)(b"[" * 50_000),
    "opaque-not-int": lambda: (lambda h: struct.pack(">ii", 4 + len(h), len(h)) + h)(b'{"code":34,"opaque":"x"}'),
    "unknown-serialize-type": lambda: struct.pack(">ii", 8, 7 << 24) + b"abcd",
    "header-longer-than-frame": lambda: struct.pack(">ii", 8, 4000) + b"abcd",
}


@pytest.mark.parametrize("case", sorted(BAD_FRAMES))
async def test_each_bad_frame_is_one_log_line_and_closes_its_connection(case: str, caplog) -> None:
    caplog.set_level(logging.DEBUG, logger="rmqctl.emulator.server")
    async with emulator() as (served, source):
        reader, writer = await connect(served.brokers["broker-a"])
        writer.write(BAD_FRAMES[case]())
        assert await closed_by_server(reader)
        lines = [r for r in caplog.records if r.name == "rmqctl.emulator.server" and r.levelno >= logging.WARNING]
        assert len(lines) == 1 and lines[0].exc_info is None, [r.getMessage() for r in lines]
        assert "\n" not in lines[0].getMessage()
        await group_list_answers(source)
        writer.close()


async def test_a_quadratic_heartbeat_body_does_not_stall_other_clients() -> None:
    async with emulator() as (served, source):
        reader, writer = await connect(served.brokers["broker-a"])
        body = b'"' + b'\\"' * 24_000  # froze the event loop for seconds before
        writer.write(frame.encode(frame.RemotingCommand(code=RequestCode.HEART_BEAT, body=body)))
        await group_list_answers(source)
        writer.close()


async def test_a_peer_that_never_reads_does_not_grow_the_write_buffer(monkeypatch) -> None:
    connections: list[ServerConnection] = []
    original = ServerConnection.connection_made

    def tracked(self: ServerConnection, transport: asyncio.BaseTransport) -> None:
        connections.append(self)
        original(self, transport)

    monkeypatch.setattr(ServerConnection, "connection_made", tracked)
    limits = ServerLimits(idle_timeout=30, write_buffer_bytes=64 * 1024)
    async with emulator(limits) as (served, source):
        reader, writer = await connect(served.brokers["broker-a"], rcvbuf=4096)
        request = frame.encode(frame.request(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG))
        attacker = connections[-1]
        # 20000 requests whose answers (~1.5 KiB each) would queue ~30 MiB without backpressure
        writer.write(request * 20_000)
        await wait_for(lambda: attacker.write_buffered >= limits.write_buffer_bytes, "the write buffer to fill")
        peak = 0
        for _ in range(50):  # it stays bounded while the peer still does not read
            peak = max(peak, attacker.write_buffered)
            await asyncio.sleep(0.02)
        assert peak <= limits.write_buffer_bytes + 64 * 1024, peak
        await group_list_answers(source)
        writer.transport.abort()


async def test_control_api_answers_every_malformed_request_with_a_4xx(caplog) -> None:
    caplog.set_level(logging.DEBUG)
    async with emulator(request_timeout=0.8) as (served, source):
        host, port = served.control.removeprefix("http://").rsplit(":", 1)

        async def exchange(data: bytes, stall: bool = False) -> int:
            reader, writer = await asyncio.open_connection(host, int(port))
            writer.write(data)
            if not stall:
                writer.write_eof()
            raw = await asyncio.wait_for(reader.read(), BOUND)
            writer.close()
            return int(raw.split(b" ", 2)[1])

        post = b"POST /v1/produce HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        cases: dict[str, tuple[bytes, set[int]]] = {
            "content-length-abc": (post + b"Content-Length: abc\r\n\r\n{}", {400}),
            "content-length-negative": (post + b"Content-Length: -1\r\n\r\n{}", {400}),
            "nested-json": (post + b"Content-Length: 1000000\r\n\r\n" + b"[" * 1_000_000, {400}),
            "too-large": (post + b"Content-Length: 2000000\r\n\r\n", {413}),
            "garbage-request-line": (b"HELLO\r\n\r\n", {400}),
            "huge-header": (b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX: " + b"a" * 100_000 + b"\r\n\r\n",
                            {400, 431}),
            "count-over-cap": (_json_post(b'{"topic":"OrderTopic","count":%d}' % (MAX_PRODUCE + 1)), {400}),
            "count-million": (_json_post(b'{"topic":"OrderTopic","count":1000000}'), {400}),
        }
        for name, (data, expected) in cases.items():
            assert await exchange(data) in expected, name
        assert await exchange(b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n", stall=True) == 408
        assert await exchange(b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n") == 200
        await group_list_answers(source)
    assert not [r for r in caplog.records if r.exc_info or "Traceback" in r.getMessage()]


def _json_post(body: bytes) -> bytes:
    return (b"POST /v1/produce HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body)) + body


async def test_a_large_produce_is_chunked_and_other_requests_are_answered_meanwhile() -> None:
    async with emulated() as (served, source, cluster), httpx.AsyncClient(base_url=served.control,
                                                                            timeout=BOUND) as http:
        before = len(cluster.messages)
        produce = asyncio.ensure_future(http.post("/v1/produce", json={"topic": "OrderTopic", "count": 60_000}))
        await wait_for(lambda: len(cluster.messages) > before, "the produce request to start")
        health = await http.get("/v1/health")
        assert health.status_code == 200
        assert not produce.done()  # answered between two chunks of the produce
        response = await produce
        assert response.status_code == 200 and response.json()["sent"] == 60_000
        assert len(cluster.messages) == before + 60_000
