"""Headers are written without building a dict and an encoder, and plain ones (most responses)
read without the JSON parser: the bytes must be exactly what the general JSON writer gives for
the same command, and what is read what the JSON parser reads (or refused alike)."""

from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rmqctl.errors import ProtocolError
from rmqctl.remoting import frame
from rmqctl.remoting.codes import RequestCode
from rmqctl.remoting.frame import LANGUAGES, RemotingCommand

INT32 = st.integers(-(2**31), 2**31 - 1)


def general(cmd: RemotingCommand) -> bytes:
    header = {"code": cmd.code, "flag": cmd.flag, "language": cmd.language, "opaque": cmd.opaque,
              "serializeTypeCurrentRPC": "JSON", "version": cmd.version}
    return json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


@given(code=INT32, flag=INT32, opaque=INT32, version=INT32, language=st.sampled_from(LANGUAGES))
def test_a_plain_header_is_the_general_writers_bytes(code: int, flag: int, opaque: int, version: int,
                                                     language: str) -> None:
    cmd = RemotingCommand(code=code, opaque=opaque, flag=flag, language=language, version=version, body=b"x")
    data = frame.encode(cmd)
    header = general(cmd)
    assert data[8:8 + len(header)] == header and data[4:8] == len(header).to_bytes(4, "big")
    assert frame.decode(data) == cmd


def test_a_header_with_fields_a_remark_or_an_odd_language_takes_the_general_path() -> None:
    for cmd in (RemotingCommand(code=0, remark='no "route"'), RemotingCommand(code=0, ext_fields={"a": "b"}),
                RemotingCommand(code=0, language='PY"THON')):
        decoded = frame.decode(frame.encode(cmd))
        assert (decoded.remark, decoded.ext_fields, decoded.language) == (cmd.remark, cmd.ext_fields, cmd.language)


def general_any(cmd: RemotingCommand) -> bytes:
    """The header as the general JSON writer gives it, fields and remark included."""
    header: dict[str, object] = {"code": cmd.code}
    if cmd.ext_fields:
        header["extFields"] = cmd.ext_fields
    header.update(flag=cmd.flag, language=cmd.language, opaque=cmd.opaque)
    if cmd.remark is not None:
        header["remark"] = cmd.remark
    header.update(serializeTypeCurrentRPC="JSON", version=cmd.version)
    return json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)


@given(code=st.one_of(INT32, st.sampled_from(list(RequestCode))), flag=INT32, opaque=INT32, version=INT32,
       language=st.one_of(st.sampled_from(LANGUAGES), TEXT), remark=st.one_of(st.none(), TEXT),
       ext=st.dictionaries(TEXT, TEXT, max_size=4))
def test_a_header_with_fields_or_a_remark_is_the_general_writers_bytes(
        code: int, flag: int, opaque: int, version: int, language: str, remark: str | None,
        ext: dict[str, str]) -> None:
    cmd = RemotingCommand(code=code, opaque=opaque, flag=flag, language=language, version=version,
                          remark=remark, ext_fields=ext, body=b"x")
    header = general_any(cmd)
    data = frame.encode(cmd)
    assert data[8:8 + len(header)] == header and data[4:8] == len(header).to_bytes(4, "big")


@given(code=st.sampled_from(list(RequestCode)), flag=st.integers(0, 3), opaque=st.integers(1, 2**31 - 1),
       ext=st.dictionaries(TEXT, st.one_of(TEXT, st.integers(), st.booleans()), max_size=4),
       body=st.binary(max_size=8))
def test_a_request_under_an_opaque_is_the_changed_commands_frame(
        code: int, flag: int, opaque: int, ext: dict[str, object], body: bytes) -> None:
    cmd = dataclasses.replace(frame.request(code, ext, body), flag=flag)
    expected = frame.encode(dataclasses.replace(cmd, opaque=opaque, flag=flag & ~3))
    assert frame.encode_request(cmd, opaque) == expected
    binary = dataclasses.replace(cmd, serialize_type=frame.SERIALIZE_ROCKETMQ)
    assert frame.encode_request(binary, opaque) == frame.encode(dataclasses.replace(binary, opaque=opaque,
                                                                                    flag=flag & ~3))


@given(code=INT32, flag=INT32, opaque=INT32, version=INT32, language=st.sampled_from(LANGUAGES))
def test_a_plain_header_reads_as_the_json_parser_reads_it(code: int, flag: int, opaque: int, version: int,
                                                          language: str) -> None:
    raw = general(RemotingCommand(code=code, opaque=opaque, flag=flag, language=language, version=version))
    data = json.loads(raw)
    assert frame.decode_payload(len(raw).to_bytes(4, "big") + raw + b"B") == RemotingCommand(
        code=data["code"], opaque=data["opaque"], flag=data["flag"], language=data["language"],
        version=data["version"], body=b"B")


@pytest.mark.parametrize("raw", [
    # a number beyond 32 bits, and one with a leading zero (not JSON): refused as before
    b'{"code":0,"flag":1,"language":"JAVA","opaque":4294967296,"serializeTypeCurrentRPC":"JSON","version":1}',
    b'{"code":0,"flag":1,"language":"JAVA","opaque":9999999999,"serializeTypeCurrentRPC":"JSON","version":1}',
    b'{"code":01,"flag":1,"language":"JAVA","opaque":5,"serializeTypeCurrentRPC":"JSON","version":1}',
])
def test_a_plain_looking_header_with_a_bad_number_is_refused(raw: bytes) -> None:
    with pytest.raises(ProtocolError):
        frame.decode_payload(len(raw).to_bytes(4, "big") + raw)


def read_general(raw: bytes, body: bytes = b"B") -> RemotingCommand | ProtocolError:
    """What the JSON parser's path makes of ``raw`` (a header), with the field fast path off."""
    fast = frame._FIELDS_HEADER_RE
    frame._FIELDS_HEADER_RE = frame.re.compile(rb"(?!)")  # matches nothing
    try:
        return frame.decode_payload(len(raw).to_bytes(4, "big") + raw + body)
    except ProtocolError as exc:
        return exc
    finally:
        frame._FIELDS_HEADER_RE = fast


def read_fast(raw: bytes, body: bytes = b"B") -> RemotingCommand | ProtocolError:
    try:
        return frame.decode_payload(len(raw).to_bytes(4, "big") + raw + body)
    except ProtocolError as exc:
        return exc


#: field text as requests carry it, with what a JSON string must escape and what it need not
FIELD_TEXT = st.text(st.sampled_from(['a', 'Z', '0', '%', '@', '"', '\\', '\n', '\x1f', '\x7f', 'é', '中', '🙂']),
                     max_size=8)


@given(code=st.one_of(INT32, st.sampled_from(list(RequestCode))), flag=INT32, opaque=INT32, version=INT32,
       language=st.sampled_from(LANGUAGES), ext=st.dictionaries(FIELD_TEXT, FIELD_TEXT, min_size=1, max_size=5))
def test_a_header_with_text_fields_reads_as_the_json_parser_reads_it(
        code: int, flag: int, opaque: int, version: int, language: str, ext: dict[str, str]) -> None:
    cmd = RemotingCommand(code=code, opaque=opaque, flag=flag, language=language, version=version, ext_fields=ext)
    raw = general_any(cmd)
    fast = read_fast(raw)
    assert fast == read_general(raw) == dataclasses.replace(cmd, body=b"B")
    plain = all(not set(t) & {'"', '\\', '\n', '\x1f'} for kv in ext.items() for t in kv)
    assert (frame._fields_header(raw, b"B") is not None) == plain  # escapes take the general path


@pytest.mark.parametrize("raw", [
    # a field named twice: the last value, as the JSON parser keeps it
    b'{"code":36,"extFields":{"topic":"a","topic":"b"},"flag":0,"language":"JAVA","opaque":7,'
    b'"serializeTypeCurrentRPC":"JSON","version":475}',
    # a raw control character inside a string: refused by the JSON parser, so refused here too
    b'{"code":36,"extFields":{"topic":"a\tb"},"flag":0,"language":"JAVA","opaque":7,'
    b'"serializeTypeCurrentRPC":"JSON","version":475}',
    # bytes that are not UTF-8
    b'{"code":36,"extFields":{"topic":"\xff"},"flag":0,"language":"JAVA","opaque":7,'
    b'"serializeTypeCurrentRPC":"JSON","version":475}',
    # an opaque beyond 32 bits, and a leading zero
    b'{"code":36,"extFields":{"topic":"a"},"flag":0,"language":"JAVA","opaque":4294967296,'
    b'"serializeTypeCurrentRPC":"JSON","version":475}',
    b'{"code":036,"extFields":{"topic":"a"},"flag":0,"language":"JAVA","opaque":7,'
    b'"serializeTypeCurrentRPC":"JSON","version":475}',
    # a value that is a number, as some clients write it: the general path makes it text
    b'{"code":36,"extFields":{"queueId":3},"flag":0,"language":"JAVA","opaque":7,'
    b'"serializeTypeCurrentRPC":"JSON","version":475}',
])
def test_an_odd_header_with_fields_reads_or_is_refused_as_the_json_parser_does(raw: bytes) -> None:
    fast, general_read = read_fast(raw), read_general(raw)
    if isinstance(general_read, ProtocolError):
        assert isinstance(fast, ProtocolError)
    else:
        assert fast == general_read
