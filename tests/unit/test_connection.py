"""asyncio connection behaviour against a scripted server on loopback."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from rmqctl import errors
from rmqctl.remoting import frame
from rmqctl.remoting.connection import Connection, ConnectionPool
from rmqctl.remoting.frame import FrameDecoder, RemotingCommand

Script = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def read_command(reader: asyncio.StreamReader) -> RemotingCommand:
    length = int.from_bytes(await reader.readexactly(4), "big")
    return frame.decode_payload(await reader.readexactly(length))


def reply(writer: asyncio.StreamWriter, req: RemotingCommand, code: int = 0, body: bytes = b"") -> None:
    writer.write(frame.encode(req.response(code, body=body)))


class Server:
    def __init__(self, script: Script) -> None:
        self.script = script
        self.accepted = 0
        self.server: asyncio.base_events.Server | None = None

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        try:
            await self.script(reader, writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def __aenter__(self) -> str:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        port = self.server.sockets[0].getsockname()[1]
        return f"127.0.0.1:{port}"

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()


@contextlib.asynccontextmanager
async def pool_on(script: Script) -> AsyncIterator[tuple[Server, str, ConnectionPool]]:
    """A pool of connections to a scripted server: the server, its address and the pool."""
    server = Server(script)
    async with server as address:
        pool = ConnectionPool(connect_timeout=2.0)
        try:
            yield server, address, pool
        finally:
            await pool.close()


@pytest.fixture
async def connect() -> AsyncIterator[Callable[..., Awaitable[Connection]]]:
    opened: list[Connection] = []

    async def open_(address: str, **kwargs: object) -> Connection:
        conn = Connection(address, **kwargs)  # type: ignore[arg-type]
        await conn.open(2.0)
        opened.append(conn)
        return conn

    yield open_
    for conn in opened:
        await conn.close()


async def test_out_of_order_responses_are_matched_by_opaque(connect) -> None:
    async def script(reader, writer):
        first = await read_command(reader)
        second = await read_command(reader)
        reply(writer, second, body=b"second")  # answer the later request first
        reply(writer, first, body=b"first")
        await writer.drain()
        await reader.read()

    async with Server(script) as address:
        conn = await connect(address)
        a, b = await asyncio.gather(
            conn.request(frame.request(1), 2.0), conn.request(frame.request(2), 2.0)
        )
        assert (a.body, b.body) == (b"first", b"second")


async def test_server_request_goes_to_the_handler_not_the_pending_map(connect) -> None:
    answered: asyncio.Future[RemotingCommand] = asyncio.get_running_loop().create_future()

    async def script(reader, writer):
        req = await read_command(reader)
        # A server-initiated request reusing the same opaque as the pending client request.
        writer.write(frame.encode(RemotingCommand(code=307, opaque=req.opaque, language="JAVA")))
        await writer.drain()
        answered.set_result(await read_command(reader))
        reply(writer, req, body=b"done")
        await writer.drain()
        await reader.read()

    async def handler(cmd: RemotingCommand) -> RemotingCommand:
        return cmd.response(0, body=b"running-info", language="PYTHON")

    async with Server(script) as address:
        conn = await connect(address, handler=handler)
        response = await conn.request(frame.request(105), 2.0)
        assert response.body == b"done"
        relayed = await answered
        assert relayed.is_response and relayed.body == b"running-info" and relayed.code == 0


async def test_pending_requests_fail_fast_when_the_socket_dies(connect) -> None:
    async def script(reader, writer):
        await read_command(reader)
        await read_command(reader)
        writer.close()  # die with two requests pending

    async with Server(script) as address:
        conn = await connect(address)
        results = await asyncio.wait_for(
            asyncio.gather(conn.request(frame.request(1), 30), conn.request(frame.request(2), 30),
                           return_exceptions=True),
            timeout=5,
        )
        assert all(isinstance(r, errors.ConnectionLost) for r in results)
        assert not conn.usable


async def test_malformed_frame_closes_the_connection_with_a_protocol_cause(connect) -> None:
    async def script(reader, writer):
        await read_command(reader)
        writer.write(b"\x7f\xff\xff\xff garbage")
        await writer.drain()
        await reader.read()

    async with Server(script) as address:
        conn = await connect(address)
        with pytest.raises(errors.ProtocolError, match="malformed frame") as info:
            await asyncio.wait_for(conn.request(frame.request(1), 30), timeout=5)
        assert isinstance(info.value.__cause__, errors.ProtocolError)
        assert info.value.raw == b"\x7f\xff\xff\xff"  # the length prefix that was refused
        assert not conn.usable


async def test_timeout_raises_our_timeout_error(connect) -> None:
    async def script(reader, writer):
        await reader.read()

    async with Server(script) as address:
        conn = await connect(address)
        with pytest.raises(errors.TimeoutError, match="timed out"):
            await conn.request(frame.request(1), 0.05)


async def test_pool_reconnects_after_idle_close_and_on_go_away() -> None:
    async def script(reader, writer):
        while True:
            req = await read_command(reader)
            if req.code == 1:  # answer, then close like an idle server channel
                reply(writer, req, body=b"one")
                await writer.drain()
                return
            if req.code == 2:  # a server shutting down
                reply(writer, req, code=1500)
                await writer.drain()
                return
            reply(writer, req, body=b"fresh")
            await writer.drain()

    async with pool_on(script) as (server, address, pool):
        assert (await pool.request(address, frame.request(1), 2.0)).body == b"one"
        # the server closed that connection; the pool must open a new one transparently
        assert (await pool.request(address, frame.request(3), 2.0)).body == b"fresh"
        assert server.accepted == 2
        # GO_AWAY: retried once on a new connection
        assert (await pool.request(address, frame.request(2), 2.0)).code == 1500
    assert server.accepted == 3  # one; fresh (which then answered go-away); the go-away retry


async def test_connect_refused_is_a_connection_error() -> None:
    srv = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = srv.sockets[0].getsockname()[1]
    srv.close()
    await srv.wait_closed()
    conn = Connection(f"127.0.0.1:{port}")
    with pytest.raises(errors.ConnectionError, match=f"127.0.0.1:{port}"):
        await conn.open(2.0)


def test_decoder_unused_import_guard() -> None:
    assert FrameDecoder().next_command() is None


async def test_a_request_on_an_answering_connection_ends_at_its_deadline_and_the_connection_lives() -> None:
    late: list[RemotingCommand] = []

    async def script(reader, writer):
        while True:
            req = await read_command(reader)
            if req.code == 2:  # answered only after the caller has given up
                late.append(req)
                continue
            if late:
                await asyncio.sleep(0.05)
                reply(writer, late.pop(), body=b"late")
            reply(writer, req, body=b"on time")
            await writer.drain()

    async with pool_on(script) as (server, address, pool):
        assert (await pool.request(address, frame.request(1), 2.0)).body == b"on time"
        loop = asyncio.get_running_loop()
        started = loop.time()
        with pytest.raises(errors.TimeoutError, match=rf"request 2 to {address} timed out after 0.2s"):
            await asyncio.wait_for(pool.request(address, frame.request(2), 0.2), 5)
        assert 0.2 <= loop.time() - started < 1.5
        endpoint = pool._conns[address]._endpoint
        assert endpoint is not None and endpoint.pending == 0  # the opaque given up on is forgotten
        # the late answer is dropped, the next answer goes to its own request
        assert (await pool.request(address, frame.request(3), 2.0)).body == b"on time"
    assert server.accepted == 1


async def test_an_answering_connection_lost_with_a_request_out_is_asked_again_on_a_fresh_one() -> None:
    accepted: list[int] = []

    async def script(reader, writer):
        accepted.append(len(accepted) + 1)
        on = accepted[-1]
        while True:
            req = await read_command(reader)
            if req.code == 2 and on == 1:
                return  # read it, then close without an answer
            reply(writer, req, body=f"{req.code} on connection {on}".encode())
            await writer.drain()

    async with pool_on(script) as (_, address, pool):
        assert (await pool.request(address, frame.request(1), 2.0)).body == b"1 on connection 1"
        assert (await pool.request(address, frame.request(2), 2.0)).body == b"2 on connection 2"
    assert accepted == [1, 2]
