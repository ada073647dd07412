"""A header without fields or remark (most responses) is written without building a dict: the
bytes must be exactly what the general JSON writer gives for the same command."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from rmqctl.remoting import frame
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
