"""The one remoting endpoint, with both ends of a loopback connection built from it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import pytest

from rmqctl import errors
from rmqctl.remoting import frame
from rmqctl.remoting.endpoint import Endpoint, HandlerResult
from rmqctl.remoting.frame import RemotingCommand


def error_reply(cmd: RemotingCommand, exc: Exception) -> RemotingCommand:
    return cmd.response(1, remark=f"{type(exc).__name__}: {exc}")


@dataclass
class Side:
    """One end: its endpoint, the task serving it, what it was asked, how often it closed."""

    endpoint: Endpoint
    served: asyncio.Task[Exception | None]
    asked: list[RemotingCommand] = field(default_factory=list)
    closes: list[int] = field(default_factory=list)


Answer = Callable[[RemotingCommand], HandlerResult]


def echo(cmd: RemotingCommand) -> HandlerResult:
    return cmd.response(0, body=b"echo:" + cmd.body)


@pytest.fixture
async def pair() -> AsyncIterator[Callable[..., Awaitable[tuple[Side, Side]]]]:
    """Open a loopback connection whose two ends are endpoints (``server``, ``client``)."""
    made: list[Side] = []
    servers: list[asyncio.base_events.Server] = []

    async def open_pair(server_answer: Answer = echo, client_answer: Answer = echo) -> tuple[Side, Side]:
        accepted: asyncio.Future[Side] = asyncio.get_running_loop().create_future()

        def side(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, answer: Answer, name: str) -> Side:
            asked: list[RemotingCommand] = []
            closes: list[int] = []

            def handler(cmd: RemotingCommand) -> HandlerResult:
                asked.append(cmd)
                return answer(cmd)

            endpoint = Endpoint(writer, handler, peer=name, on_handler_error=error_reply,
                                on_close=lambda: closes.append(1))
            result = Side(endpoint, asyncio.ensure_future(endpoint.serve(reader)), asked, closes)
            made.append(result)
            return result

        async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            accepted.set_result(side(reader, writer, server_answer, "the client"))

        srv = await asyncio.start_server(accept, "127.0.0.1", 0)
        servers.append(srv)
        reader, writer = await asyncio.open_connection("127.0.0.1", srv.sockets[0].getsockname()[1])
        client = side(reader, writer, client_answer, "the server")
        return await asyncio.wait_for(accepted, 5), client

    yield open_pair
    for s in made:
        await s.endpoint.wait_closed()
        await asyncio.wait_for(s.served, 5)
    for srv in servers:
        srv.close()


async def test_both_ends_send_requests_and_answer_each_other(pair) -> None:
    server, client = await pair()
    to_server = await client.endpoint.request(frame.request(105, body=b"a"), 5)
    to_client = await server.endpoint.request(frame.request(307, body=b"b"), 5)
    assert (to_server.body, to_client.body) == (b"echo:a", b"echo:b")
    assert to_server.is_response and to_client.is_response
    assert [c.code for c in server.asked] == [105] and [c.code for c in client.asked] == [307]
    assert server.endpoint.pending == client.endpoint.pending == 0


async def test_responses_are_matched_by_opaque_not_by_order(pair) -> None:
    release: dict[int, asyncio.Future[RemotingCommand]] = {}

    def later(cmd: RemotingCommand) -> HandlerResult:
        release[cmd.code] = asyncio.get_running_loop().create_future()
        return release[cmd.code]

    server, client = await pair(server_answer=later)
    first = asyncio.ensure_future(client.endpoint.request(frame.request(1), 5))
    second = asyncio.ensure_future(client.endpoint.request(frame.request(2), 5))
    while len(release) < 2:
        await asyncio.sleep(0)
    release[2].set_result(RemotingCommand(code=0, body=b"second", flag=frame.FLAG_RESPONSE))
    assert (await second).body == b"second" and not first.done()
    release[1].set_result(RemotingCommand(code=0, body=b"first", flag=frame.FLAG_RESPONSE))
    assert (await first).body == b"first"


async def test_a_request_reusing_a_pending_opaque_goes_to_the_handler(pair) -> None:
    server, client = await pair(server_answer=lambda cmd: None)  # never answers
    pending = asyncio.ensure_future(client.endpoint.request(frame.request(105), 5))
    while not server.asked:
        await asyncio.sleep(0)
    # the server's own request happens to carry the opaque of the client's pending one
    server.endpoint.send(RemotingCommand(code=307, opaque=server.asked[0].opaque))
    while not client.asked:
        await asyncio.sleep(0)
    assert client.asked[0].code == 307 and not pending.done()
    pending.cancel()


async def test_fail_all_fails_every_pending_request_from_the_cause(pair) -> None:
    server, client = await pair(server_answer=lambda cmd: None)
    requests = [asyncio.ensure_future(client.endpoint.request(frame.request(code), 30)) for code in (1, 2, 3)]
    while len(server.asked) < 3:
        await asyncio.sleep(0)
    server.endpoint.fail_all(None)  # the peer goes away with three requests pending
    results = await asyncio.wait_for(asyncio.gather(*requests, return_exceptions=True), 5)
    assert all(isinstance(r, errors.ConnectionLost) for r in results), results
    assert "closed by the peer" in str(results[0])
    assert await asyncio.wait_for(client.served, 5) is None  # ended by EOF
    assert client.endpoint.closed and client.endpoint.pending == 0
    assert client.closes == [1] and server.closes == [1]
    with pytest.raises(errors.ConnectionLost, match="is closed"):
        await client.endpoint.request(frame.request(4), 1)


async def test_a_malformed_frame_fails_pending_requests_with_its_protocol_error(pair) -> None:
    server, client = await pair(server_answer=lambda cmd: None)
    pending = asyncio.ensure_future(client.endpoint.request(frame.request(1), 30))
    while not server.asked:
        await asyncio.sleep(0)
    server.endpoint._writer.write(b"\x7f\xff\xff\xff garbage")
    with pytest.raises(errors.ProtocolError, match="malformed frame") as info:
        await asyncio.wait_for(pending, 5)
    assert isinstance(info.value.__cause__, errors.ProtocolError)
    assert isinstance(await client.served, errors.ProtocolError)


async def test_a_failing_handler_is_answered_with_the_error_reply_and_the_connection_lives(pair) -> None:
    def broken(cmd: RemotingCommand) -> HandlerResult:
        if cmd.code == 1:
            raise ValueError("bug")
        return echo(cmd)

    async def broken_later(cmd: RemotingCommand) -> RemotingCommand:
        raise KeyError("later")

    server, client = await pair(server_answer=lambda cmd: broken(cmd) if cmd.code < 3 else broken_later(cmd))
    failed = await client.endpoint.request(frame.request(1), 5)
    assert (failed.code, failed.remark) == (1, "ValueError: bug")
    failed_later = await client.endpoint.request(frame.request(3), 5)
    assert (failed_later.code, failed_later.remark) == (1, "KeyError: 'later'")
    assert (await client.endpoint.request(frame.request(2, body=b"x"), 5)).body == b"echo:x"


async def test_oneway_requests_get_no_answer(pair) -> None:
    server, client = await pair()
    client.endpoint.send_oneway(frame.request(40, {"consumerGroup": "g"}))
    answered = await client.endpoint.request(frame.request(2), 5)  # after the oneway, in order
    assert answered.code == 0 and [c.code for c in server.asked] == [40, 2]
    assert server.asked[0].is_oneway and server.asked[0].ext_fields == {"consumerGroup": "g"}
    assert client.asked == []  # nothing came back for the oneway


async def test_a_timeout_leaves_nothing_pending(pair) -> None:
    server, client = await pair(server_answer=lambda cmd: None)
    with pytest.raises(errors.TimeoutError, match="request 1 to the server timed out"):
        await client.endpoint.request(frame.request(1), 0.05)
    assert client.endpoint.pending == 0 and not client.endpoint.closed


async def test_closing_cancels_handlers_still_working(pair) -> None:
    started = asyncio.Event()
    cancelled = asyncio.Event()

    async def forever(cmd: RemotingCommand) -> RemotingCommand:
        started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        raise AssertionError("unreachable")

    server, client = await pair(server_answer=forever)
    pending = asyncio.ensure_future(client.endpoint.request(frame.request(11), 30))
    await asyncio.wait_for(started.wait(), 5)
    server.endpoint.fail_all(None)
    await asyncio.wait_for(cancelled.wait(), 5)
    with pytest.raises(errors.ConnectionLost):
        await asyncio.wait_for(pending, 5)


async def test_an_answer_too_large_for_a_frame_is_replaced_by_the_error_reply(pair) -> None:
    huge = b"x" * (frame.MAX_FRAME_LENGTH + 1)
    server, client = await pair(server_answer=lambda cmd: cmd.response(0, body=huge))
    answer = await client.endpoint.request(frame.request(1), 5)
    assert answer.code == 1 and "exceeds" in (answer.remark or "")
    assert not server.endpoint.closed


async def test_fail_all_raises_each_pending_request_from_its_cause(pair) -> None:
    server, client = await pair(server_answer=lambda cmd: None)
    requests = [asyncio.ensure_future(client.endpoint.request(frame.request(code), 30)) for code in (1, 2)]
    while len(server.asked) < 2:
        await asyncio.sleep(0)
    cause = OSError("broken pipe")
    client.endpoint.fail_all(cause)  # e.g. a write that failed
    results = await asyncio.wait_for(asyncio.gather(*requests, return_exceptions=True), 5)
    assert all(isinstance(r, errors.ConnectionLost) and r.__cause__ is cause for r in results), results
    assert "closed: broken pipe" in str(results[0])
    assert client.closes == [1]
    client.endpoint.fail_all(OSError("again"))  # idempotent
    assert client.closes == [1]
