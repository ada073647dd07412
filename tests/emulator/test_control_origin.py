"""The control API answers only the machine's own clients when it has no token.

A web page can make the browser send requests to loopback: a cross-site page posts with its own
``Origin``; a DNS-rebinding page reaches 127.0.0.1 under its own host name, so ``Host`` names it.
Both are refused with 403 and nothing happens; a loopback ``Host`` with no ``Origin`` (curl, the
CLI, the TUI) or the API's own origin is served. And no client can hold more than the connection
cap: the next connection gets 503 at once while the held ones stay.
"""

from __future__ import annotations

import asyncio

import httpx
import pytest

from rmqctl.emulator.control import ControlServer, is_loopback
from rmqctl.emulator.scenario import load_scenario
from rmqctl.emulator.world import EmulatedCluster


@pytest.fixture
async def control() -> ControlServer:
    server = ControlServer(EmulatedCluster(load_scenario("healthy")), max_connections=3)
    await server.start()
    yield server
    await server.stop()


async def post_produce(server: ControlServer, headers: dict[str, str], content: bytes | None = None) -> httpx.Response:
    async with httpx.AsyncClient(base_url=server.url) as http:
        if content is not None:
            return await http.post("/v1/produce", content=content, headers=headers)
        return await http.post("/v1/produce", json={"topic": "OrderTopic", "count": 2}, headers=headers)


async def count_messages(server: ControlServer) -> int:
    async with httpx.AsyncClient(base_url=server.url) as http:
        state = (await http.get("/v1/state")).json()
    topics = [broker["topics"]["OrderTopic"] for broker in state["brokers"].values()]
    assert topics, "the healthy scenario has OrderTopic"
    return sum(sum(t["max_offsets"]) for t in topics)


@pytest.mark.parametrize("headers", [
    pytest.param({"Origin": "http://evil.example"}, id="cross-site-origin"),
    pytest.param({"Origin": "null"}, id="opaque-origin"),
    pytest.param({"Host": "evil.example"}, id="rebinding-host"),
    pytest.param({"Host": "evil.example:80", "Origin": "http://evil.example"}, id="rebinding-both"),
])
async def test_foreign_pages_are_refused_and_send_nothing(control: ControlServer, headers: dict[str, str]) -> None:
    before = await count_messages(control)
    # a cross-site form posts text/plain: the one kind a browser sends without asking first
    response = await post_produce(control, {**headers, "Content-Type": "text/plain"},
                                  content=b'{"topic": "OrderTopic", "count": 2}')
    assert response.status_code == 403, response.text
    assert await count_messages(control) == before


async def test_own_clients_are_served(control: ControlServer) -> None:
    before = await count_messages(control)
    assert (await post_produce(control, {})).status_code == 200
    own_origin = f"http://127.0.0.1:{control.port}"
    assert (await post_produce(control, {"Origin": own_origin})).status_code == 200
    assert (await post_produce(control, {"Host": f"localhost:{control.port}"})).status_code == 200
    assert await count_messages(control) == before + 6


@pytest.mark.parametrize(("host", "expected"), [
    ("127.0.0.1", True), ("127.3.4.5", True), ("::1", True), ("[::1]", True), ("localhost", True),
    ("::ffff:127.0.0.1", True), ("::ffff:10.0.0.1", False), ("10.0.0.1", False), ("evil.example", False),
    ("", False), ("0.0.0.0", False),
])
def test_loopback_names(host: str, expected: bool) -> None:
    assert is_loopback(host) is expected


async def test_connections_over_the_cap_get_503_while_held_ones_stay(control: ControlServer) -> None:
    held = [await asyncio.open_connection("127.0.0.1", control.port) for _ in range(3)]
    for _, writer in held:
        writer.write(b"GET /v1/health HTTP/1.1\r\n")  # an unfinished request keeps each one open
        await writer.drain()
    await asyncio.sleep(0.05)
    reader, writer = await asyncio.open_connection("127.0.0.1", control.port)
    answer = await asyncio.wait_for(reader.read(), 5.0)
    assert answer.startswith(b"HTTP/1.1 503"), answer
    writer.close()
    # a held one is still served when it finishes its request
    reader0, writer0 = held[0]
    writer0.write(b"Host: 127.0.0.1\r\n\r\n")
    assert (await asyncio.wait_for(reader0.read(), 5.0)).startswith(b"HTTP/1.1 200")
    for _, w in held:
        w.close()
