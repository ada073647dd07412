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
