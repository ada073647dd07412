"""A client endpoint writes the frames of one event-loop turn in one write: a fan-out of many
requests costs one system call, and nothing written before a clean close is lost."""

from __future__ import annotations

import asyncio
from typing import cast

from rmqctl.remoting import frame
from rmqctl.remoting.endpoint import Endpoint
from rmqctl.remoting.frame import RemotingCommand


class Transport:
    def get_write_buffer_size(self) -> int:
        return 0


class RecordingWriter:
    """A stream writer that keeps every write it is given."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.transport = Transport()
        self.closed = False

    def write(self, data: bytes) -> None:
        assert not self.closed, "written after close"
        self.writes.append(data)

    async def drain(self) -> None:
        return None

    def close(self) -> None:
        self.closed = True

    async def wait_closed(self) -> None:
        return None


def endpoint(writer: RecordingWriter, *, coalesce: bool) -> Endpoint:
    return Endpoint(cast(asyncio.StreamWriter, writer), lambda cmd: None, peer="the broker",
                    on_handler_error=lambda cmd, exc: None, coalesce=coalesce)


def frames(data: bytes) -> list[RemotingCommand]:
    decoder = frame.FrameDecoder()
    decoder.feed(data)
    return list(decoder)


async def fan_out(coalesce: bool) -> tuple[RecordingWriter, list[bytes]]:
    writer = RecordingWriter()
    ep = endpoint(writer, coalesce=coalesce)
    requests = [asyncio.ensure_future(ep.request(frame.request(208, body=b"%d" % i), 5)) for i in range(100)]
    while sum(len(frames(w)) for w in writer.writes) < 100:
        await asyncio.sleep(0)
    for sent in frames(b"".join(writer.writes)):
        ep.receive(RemotingCommand(code=0, opaque=sent.opaque, flag=frame.FLAG_RESPONSE, body=sent.body))
    answers = [r.body for r in await asyncio.gather(*requests)]
    return writer, answers


async def test_requests_started_together_go_out_in_one_write_and_are_all_answered() -> None:
    writer, answers = await fan_out(coalesce=True)
    assert len(writer.writes) == 1
    assert [c.body for c in frames(writer.writes[0])] == [b"%d" % i for i in range(100)]
    assert answers == [b"%d" % i for i in range(100)]


async def test_without_coalescing_each_request_is_its_own_write() -> None:
    writer, answers = await fan_out(coalesce=False)
    assert len(writer.writes) == 100 and answers == [b"%d" % i for i in range(100)]


async def test_frames_written_before_a_clean_close_still_go_out() -> None:
    writer = RecordingWriter()
    ep = endpoint(writer, coalesce=True)
    ep.send_oneway(frame.request(40, body=b"notice"))
    assert writer.writes == []  # not yet: the turn has not ended
    ep.fail_all(None)
    assert [c.body for c in frames(b"".join(writer.writes))] == [b"notice"] and writer.closed


async def test_what_is_counted_as_buffered_includes_frames_not_yet_written() -> None:
    writer = RecordingWriter()
    ep = endpoint(writer, coalesce=True)
    ep.send_oneway(frame.request(40, body=b"x" * 100))
    assert ep.write_buffered == len(frame.encode(frame.request(40, body=b"x" * 100)))
    await asyncio.sleep(0)
    assert ep.write_buffered == 0 and len(writer.writes) == 1
