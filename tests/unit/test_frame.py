"""Frame codec: literal bytes with a comment per field."""

from __future__ import annotations

import json
import struct

import pytest

from rmqctl.errors import ProtocolError
from rmqctl.remoting import frame
from rmqctl.remoting.frame import FrameDecoder, RemotingCommand


def test_json_request_matches_the_documented_bytes() -> None:
    # GET_BROKER_CLUSTER_INFO (106), opaque 1, no extFields: a 99-byte header, 107-byte frame.
    cmd = RemotingCommand(code=106, opaque=1)
    data = frame.encode(cmd)
    header = (
        b'{"code":106,"flag":0,"language":"PYTHON","opaque":1,'
        b'"serializeTypeCurrentRPC":"JSON","version":479}'
    )
    assert len(header) == 99
    assert data == (
        b"\x00\x00\x00\x67"  # length = 4 + 99
        + b"\x00\x00\x00\x63"  # serialize type 0 (JSON), header length 99
        + header
    )


def test_binary_header_decodes_field_by_field() -> None:
    # GET_CONSUME_STATS (208) with consumerGroup=G, opaque 7, in the ROCKETMQ binary header form.
    raw = bytes.fromhex(
        "0000002d"  # length 45
        "01000029"  # type 1, header length 41
        "00d0"  # code 208
        "03"  # language PYTHON
        "01df"  # version 479
        "00000007"  # opaque 7
        "00000000"  # flag 0
        "00000000"  # remark length 0
        "00000014"  # extFields length 20
        "000d" + b"consumerGroup".hex() + "00000001" + b"G".hex()
    )
    cmd = frame.decode(raw)
    assert (cmd.code, cmd.language, cmd.version, cmd.opaque, cmd.flag) == (208, "PYTHON", 479, 7, 0)
    assert cmd.remark is None
    assert cmd.ext_fields == {"consumerGroup": "G"}
    assert cmd.serialize_type == frame.SERIALIZE_ROCKETMQ
    # and we write the very same bytes back
    assert frame.encode(cmd) == raw


def test_roundtrip_with_remark_body_and_unicode() -> None:
    cmd = RemotingCommand(code=17, opaque=9, flag=1, remark="topic 不存在", ext_fields={"a": "ü"},
                          body=b'{"x":1}', language="JAVA")
    for serialize_type in (frame.SERIALIZE_JSON, frame.SERIALIZE_ROCKETMQ):
        again = frame.decode(frame.encode(RemotingCommand(**{**_fields(cmd), "serialize_type": serialize_type})))
        assert (again.code, again.opaque, again.remark, again.ext_fields, again.body, again.language) == (
            17, 9, "topic 不存在", {"a": "ü"}, b'{"x":1}', "JAVA"
        )
        assert again.is_response


def _fields(cmd: RemotingCommand) -> dict[str, object]:
    return {name: getattr(cmd, name) for name in cmd.__dataclass_fields__}


def test_request_stringifies_header_values_like_java() -> None:
    cmd = frame.request(307, {"jstackEnable": False, "queueId": 3, "skip": None})
    assert cmd.ext_fields == {"jstackEnable": "false", "queueId": "3"}


def test_decoder_handles_split_and_coalesced_frames() -> None:
    a = frame.encode(RemotingCommand(code=1, opaque=1, flag=1))
    b = frame.encode(RemotingCommand(code=2, opaque=2, flag=1, body=b"xyz"))
    decoder = FrameDecoder()
    stream = a + b
    got = []
    for i in range(0, len(stream), 5):  # dribble the bytes in
        decoder.feed(stream[i : i + 5])
        got.extend(decoder)
    assert [(c.code, c.opaque, c.body) for c in got] == [(1, 1, b""), (2, 2, b"xyz")]


@pytest.mark.parametrize(
    "raw, message",
    [
        (struct.pack(">i", 16 * 1024 * 1024 + 1), "outside"),  # over the 16 MiB limit
        (struct.pack(">i", 2), "outside"),  # shorter than its own header word
        (struct.pack(">ii", 8, 100) + b"abcd", "exceeds the frame"),  # header longer than frame
        (struct.pack(">ii", 8, (7 << 24) | 4) + b"abcd", "unknown serialize type"),
        (struct.pack(">ii", 8, 4) + b"{no}", "not valid JSON"),
        (struct.pack(">ii", 6, 2) + b"{}", "lacks an integer 'code'"),
    ],
)
def test_bad_frames_raise_protocol_error(raw: bytes, message: str) -> None:
    decoder = FrameDecoder()
    decoder.feed(raw)
    with pytest.raises(ProtocolError, match=message):
        decoder.next_command()


def test_binary_header_overrun_is_a_protocol_error() -> None:
    header = struct.pack(">hbhii", 0, 0, 0, 0, 0) + struct.pack(">i", 50)  # remark claims 50 bytes
    payload = struct.pack(">i", (1 << 24) | len(header)) + header
    with pytest.raises(ProtocolError, match="remark"):
        frame.decode_payload(payload)


def test_oversized_frame_refused_on_encode() -> None:
    with pytest.raises(ProtocolError, match="limit"):
        frame.encode(RemotingCommand(code=1, body=b"x" * (16 * 1024 * 1024)))


def test_json_header_is_alphabetical_and_omits_nulls() -> None:
    data = frame.encode(RemotingCommand(code=5, ext_fields={"b": "1", "a": "2"}))
    header = json.loads(data[8:])
    assert list(header) == ["code", "extFields", "flag", "language", "opaque",
                            "serializeTypeCurrentRPC", "version"]


@pytest.mark.parametrize("cmd", [
    frame.RemotingCommand(code=1, version=70_000, serialize_type=frame.SERIALIZE_ROCKETMQ),  # 16-bit field
    frame.RemotingCommand(code=1, opaque=2**31, serialize_type=frame.SERIALIZE_ROCKETMQ),  # 32-bit field
    frame.RemotingCommand(code=1, ext_fields={"k" * 40_000: "v"}, serialize_type=frame.SERIALIZE_ROCKETMQ),
])
def test_a_binary_header_field_that_does_not_fit_is_a_protocol_error(cmd: frame.RemotingCommand) -> None:
    with pytest.raises(ProtocolError, match="binary header"):
        frame.encode(cmd)
