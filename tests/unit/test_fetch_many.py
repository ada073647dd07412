"""Pipelined reads (``AdminClient.fetch_many``) against a scripted server on loopback: each item is
what one ``fetch`` of it gives (its answer or its error), in order, within the ``concurrency``
limit, each request within its own deadline, a lost connection asked again, nothing left held."""

from __future__ import annotations

import asyncio
from typing import Any

from rmqctl import errors
from rmqctl.remoting import bodies
from rmqctl.remoting.admin import AdminClient
from rmqctl.remoting.codes import RequestCode, ResponseCode
from rmqctl.remoting.frame import RemotingCommand
from tests.unit.test_connection import Server, read_command, reply

CONN = bodies.encode_consumer_connection(bodies.consumer_connection(
    b'{"connectionSet":[{"clientAddr":"10.0.0.1:1","clientId":"c1","language":"JAVA","version":479}],'
    b'"consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","subscriptionTable":{}}'))


def answer(writer: asyncio.StreamWriter, req: RemotingCommand) -> bool:
    """Answer a request by its group's name: ``off-*`` not online, ``err-*`` a system error,
    ``bad-*`` a body that does not decode, ``mute-*`` never; anything else its connections."""
    group = str(req.ext_fields.get("consumerGroup"))
    if group.startswith("mute-"):
        return False
    if group.startswith("off-"):
        reply(writer, req, ResponseCode.CONSUMER_NOT_ONLINE)
    elif group.startswith("err-"):
        reply(writer, req, ResponseCode.SYSTEM_ERROR)
    elif group.startswith("bad-"):
        reply(writer, req, body=b'{"connectionSet":[')
    else:
        reply(writer, req, body=CONN)
    return True


class Scripted:
    """A server answering as :func:`answer` does, counting the requests in flight at most and
    closing the first connection after ``close_after`` requests."""

    def __init__(self, close_after: int | None = None, reverse: bool = False) -> None:
        self.close_after = close_after
        self.reverse = reverse
        self.most_in_flight = 0
        self.received = 0

    async def __call__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        first = self.received == 0
        while True:
            batch = [await read_command(reader)]
            while len(reader._buffer) >= 4:  # type: ignore[attr-defined]  # what arrived together
                batch.append(await read_command(reader))
            self.received += len(batch)
            self.most_in_flight = max(self.most_in_flight, len(batch))
            if first and self.close_after is not None and self.received >= self.close_after:
                writer.close()
                return
            for req in reversed(batch) if self.reverse else batch:
                answer(writer, req)
            await writer.drain()


def outcome(value: Any) -> Any:
    if isinstance(value, errors.RmqctlError):
        return (type(value).__name__, str(value))
    return value


async def one_by_one(admin: AdminClient, address: str, groups: list[str]) -> list[Any]:
    out = []
    for group in groups:
        try:
            out.append(await admin.consumer_connection(address, group))
        except errors.RmqctlError as exc:
            out.append(exc)
    return out


async def test_each_item_is_what_one_fetch_of_it_gives_in_order() -> None:
    groups = [f"{kind}-{i}" for i in range(40) for kind in ("g", "off", "err", "bad")]
    async with Server(Scripted(reverse=True)) as address:
        admin = AdminClient([address], timeout=5, concurrency=6)
        try:
            batch = await admin.consumer_connections(address, groups)
            alone = await one_by_one(admin, address, groups)
        finally:
            await admin.close()
    assert [outcome(v) for v in batch] == [outcome(v) for v in alone]
    assert {type(v).__name__ for v in batch} == {"ConsumerConnection", "ConsumerNotOnline", "SystemError",
                                                 "ProtocolError"}


async def test_never_more_requests_in_flight_than_the_limit_and_none_held_after() -> None:
    script = Scripted()
    async with Server(script) as address:
        admin = AdminClient([address], timeout=5, concurrency=8)
        try:
            found = await admin.consumer_connections(address, [f"g-{i}" for i in range(500)])
        finally:
            await admin.close()
    assert len(found) == 500 and all(not isinstance(v, errors.RmqctlError) for v in found)
    assert script.received == 500
    assert 1 < script.most_in_flight <= 8
    assert admin._limit._value == 8  # every slot given back


async def test_a_request_never_answered_times_out_alone() -> None:
    async with Server(Scripted()) as address:
        admin = AdminClient([address], timeout=0.5, concurrency=4)
        try:
            found = await admin.consumer_connections(address, ["g-1", "mute-1", "g-2", "g-3", "mute-2", "g-4"])
        finally:
            await admin.close()
    kinds = [type(v).__name__ for v in found]
    assert kinds == ["ConsumerConnection", "TimeoutError", "ConsumerConnection", "ConsumerConnection",
                     "TimeoutError", "ConsumerConnection"]
    assert str(found[1]) == f"request {int(RequestCode.GET_CONSUMER_CONNECTION_LIST)} to {address} timed out after 0.5s"
    assert admin._limit._value == 4


async def test_requests_on_a_connection_that_closed_are_asked_again() -> None:
    script = Scripted(close_after=5)
    async with Server(script) as address:
        admin = AdminClient([address], timeout=5, concurrency=4)
        try:
            found = await admin.consumer_connections(address, [f"g-{i}" for i in range(30)])
        finally:
            await admin.close()
    assert all(not isinstance(v, errors.RmqctlError) for v in found), [outcome(v) for v in found]
    assert admin._limit._value == 4


async def test_a_batch_given_up_half_way_gives_back_its_slots() -> None:
    async with Server(Scripted()) as address:
        admin = AdminClient([address], timeout=5, concurrency=4)
        try:
            batch = asyncio.ensure_future(admin.consumer_connections(address, [f"mute-{i}" for i in range(20)]))
            for _ in range(50):
                await asyncio.sleep(0.01)
                if admin._limit.locked():
                    break
            assert admin._limit.locked()
            batch.cancel()
            await asyncio.gather(batch, return_exceptions=True)
            assert admin._limit._value == 4
            assert not admin._pool._conns[address]._endpoint._pending  # type: ignore[union-attr]
        finally:
            await admin.close()


async def test_a_server_that_cannot_be_reached_fails_every_item_alike() -> None:
    admin = AdminClient(["127.0.0.1:1"], timeout=2, concurrency=4)
    try:
        found = await admin.consumer_connections("127.0.0.1:1", ["a", "b"])
    finally:
        await admin.close()
    assert [type(v) for v in found] == [errors.ConnectionError, errors.ConnectionError]


class Answer:
    """A parsed answer that can be watched through a weak reference."""


async def test_answers_are_freed_without_the_collector() -> None:
    """Nothing of a batch holds its answers in a reference cycle once it returned: a caller that
    drops them frees them at once, with the cyclic collector off (as during an exporter round)."""
    import gc
    import weakref

    async with Server(Scripted()) as address:
        admin = AdminClient([address], timeout=5, concurrency=4)
        gc.collect()
        gc.disable()
        try:
            found = await admin.fetch_many(address, RequestCode.GET_CONSUMER_CONNECTION_LIST,
                                           [{"consumerGroup": f"g-{i}"} for i in range(20)], lambda r: Answer())
            watched = [weakref.ref(v) for v in found]
            del found
            alive = sum(ref() is not None for ref in watched)
        finally:
            gc.enable()
            await admin.close()
    assert len(watched) == 20
    assert alive == 0
