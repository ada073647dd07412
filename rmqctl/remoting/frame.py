"""Sans-I/O codec for RocketMQ remoting frames.

A frame is ``int32 length | int32 (serializeType << 24 | headerLength) | header | body``, all
big-endian, where ``length`` counts everything after itself. The header is JSON (type 0, what we
send) or the compact ROCKETMQ binary form (type 1, which 5.x servers may answer with whatever we
sent). This module turns bytes into :class:`RemotingCommand` objects and back; it never touches a
socket and never imports asyncio.

Must not import anything from rmqctl but ``errors``.
"""

from __future__ import annotations

import json
import re
import struct
from collections.abc import Callable
from dataclasses import field, replace
from json import encoder as _json_encoder

from rmqctl.errors import ProtocolError
from rmqctl.records import dataclass

#: Largest frame a RocketMQ server accepts (``com.rocketmq.remoting.frameMaxLength`` default).
MAX_FRAME_LENGTH = 16 * 1024 * 1024
#: Opening brackets allowed in a JSON header (a real one has two: the header and ``extFields``).
MAX_HEADER_DEPTH = 16

SERIALIZE_JSON = 0
SERIALIZE_ROCKETMQ = 1

FLAG_RESPONSE = 1
FLAG_ONEWAY = 2

#: ``MQVersion.Version.V5_3_3``; anything >= 401 makes the name server send standard-JSON routes.
DEFAULT_VERSION = 479

LANGUAGES = (
    "JAVA", "CPP", "DOTNET", "PYTHON", "DELPHI", "ERLANG", "RUBY", "OTHER", "HTTP", "GO",
    "PHP", "OMS", "RUST", "NODE_JS",
)

_LENGTH = struct.Struct(">i")
_BINARY_FIXED = struct.Struct(">hbhii")


@dataclass(frozen=True, slots=True)
class RemotingCommand:
    """One request or response as it travels on the wire."""

    code: int
    opaque: int = 0
    flag: int = 0
    language: str = "PYTHON"
    version: int = DEFAULT_VERSION
    remark: str | None = None
    ext_fields: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    serialize_type: int = SERIALIZE_JSON

    @property
    def is_response(self) -> bool:
        return bool(self.flag & FLAG_RESPONSE)

    @property
    def is_oneway(self) -> bool:
        return bool(self.flag & FLAG_ONEWAY)

    def response(
        self,
        code: int,
        *,
        remark: str | None = None,
        ext_fields: dict[str, str] | None = None,
        body: bytes = b"",
        language: str = "JAVA",
    ) -> RemotingCommand:
        """A response to this request: same opaque, response flag set."""
        return RemotingCommand(
            code=code,
            opaque=self.opaque,
            flag=FLAG_RESPONSE,
            language=language,
            version=self.version,
            remark=remark,
            ext_fields=dict(ext_fields or {}),
            body=body,
            serialize_type=self.serialize_type,
        )


def request(
    code: int, ext_fields: dict[str, object] | None = None, body: bytes = b"", *, oneway: bool = False
) -> RemotingCommand:
    """Build a request; header values are stringified the way Java expects (``true``/``false``)."""
    fields: dict[str, str] = {}
    for key, value in (ext_fields or {}).items():
        if value is None:
            continue  # Java leaves null header fields out entirely
        if isinstance(value, bool):
            fields[key] = "true" if value else "false"
        else:
            fields[key] = str(value)
    return RemotingCommand(code=code, ext_fields=fields, body=body, flag=FLAG_ONEWAY if oneway else 0)


# ---------------------------------------------------------------------------------------------
# Encoding


#: the JSON header of a command without fields or remark (most responses), as ``json.dumps``
#: writes it, filled in by ``%`` instead of built as a dict and encoded
_PLAIN_HEADER = ('{"code":%d,"flag":%d,"language":"%s","opaque":%d,'
                 '"serializeTypeCurrentRPC":"JSON","version":%d}')
_PLAIN_LANGUAGES = frozenset(LANGUAGES)


#: the JSON header of any command whose numbers are ints and whose fields and remark are text,
#: as ``json.dumps`` writes it (``extFields`` and ``remark`` go in the two ``%s``, or nothing)
_TEXT_HEADER = ('{"code":%s%s,"flag":%s,"language":%s,"opaque":%s%s,'
                '"serializeTypeCurrentRPC":"JSON","version":%s}')
#: ``json.dumps(header, separators=(",", ":"), ensure_ascii=False)`` without building an
#: encoder per call
_HEADER_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
_encode_text: Callable[[str], str] = _json_encoder.encode_basestring


def _json_int(value: object) -> str | None:
    """What ``json.dumps`` writes for an int (or an int subclass such as a request code's enum);
    None for anything else (a bool is not written as a number)."""
    if type(value) is int or (isinstance(value, int) and not isinstance(value, bool)):
        return int.__repr__(value)
    return None


def _json_header(cmd: RemotingCommand) -> bytes:
    # Alphabetical keys and no spaces, like fastjson; null remark/extFields are omitted.
    if (not cmd.ext_fields and cmd.remark is None and cmd.language in _PLAIN_LANGUAGES
            and type(cmd.code) is int and type(cmd.flag) is int and type(cmd.opaque) is int
            and type(cmd.version) is int):
        return (_PLAIN_HEADER % (cmd.code, cmd.flag, cmd.language, cmd.opaque, cmd.version)).encode("ascii")
    numbers = (_json_int(cmd.code), _json_int(cmd.flag), _json_int(cmd.opaque), _json_int(cmd.version))
    ext, remark, language = cmd.ext_fields, cmd.remark, cmd.language
    if (None not in numbers and type(language) is str and (remark is None or type(remark) is str)
            and type(ext) is dict and all(type(k) is str and type(v) is str for k, v in ext.items())):
        # what json.dumps writes below, filled in without building a dict and an encoder
        code, flag, opaque, version = numbers
        fields = (',"extFields":{' + ",".join([_encode_text(k) + ":" + _encode_text(v) for k, v in ext.items()])
                  + "}") if ext else ""
        remark_text = "" if remark is None else ',"remark":' + _encode_text(remark)
        return (_TEXT_HEADER % (code, fields, flag, _encode_text(language), opaque, remark_text,
                                version)).encode("utf-8")
    header: dict[str, object] = {"code": cmd.code}
    if cmd.ext_fields:
        header["extFields"] = cmd.ext_fields
    header["flag"] = cmd.flag
    header["language"] = cmd.language
    header["opaque"] = cmd.opaque
    if cmd.remark is not None:
        header["remark"] = cmd.remark
    header["serializeTypeCurrentRPC"] = "JSON"
    header["version"] = cmd.version
    return _HEADER_ENCODER.encode(header).encode("utf-8")


def _binary_header(cmd: RemotingCommand) -> bytes:
    try:
        lang = LANGUAGES.index(cmd.language)
    except ValueError:
        lang = LANGUAGES.index("OTHER")
    parts = [_BINARY_FIXED.pack(cmd.code, lang, cmd.version, cmd.opaque, cmd.flag)]
    remark = (cmd.remark or "").encode("utf-8")
    parts.append(_LENGTH.pack(len(remark)) + remark)
    ext = bytearray()
    for key, value in cmd.ext_fields.items():
        kb, vb = key.encode("utf-8"), value.encode("utf-8")
        ext += struct.pack(">h", len(kb)) + kb + _LENGTH.pack(len(vb)) + vb
    parts.append(_LENGTH.pack(len(ext)) + bytes(ext))
    return b"".join(parts)


def encode_request(cmd: RemotingCommand, opaque: int) -> bytes:
    """:func:`encode` of ``cmd`` as a request under ``opaque`` (the response and oneway flags
    cleared), without building the changed command first."""
    flag = cmd.flag & ~(FLAG_RESPONSE | FLAG_ONEWAY)
    if cmd.serialize_type == SERIALIZE_JSON and type(opaque) is int and type(flag) is int:
        header = _json_header(_Retagged(cmd, opaque, flag))  # type: ignore[arg-type]
        length = 4 + len(header) + len(cmd.body)
        if length > MAX_FRAME_LENGTH:
            raise ProtocolError(f"frame of {length} bytes exceeds the {MAX_FRAME_LENGTH}-byte limit")
        return _LENGTH.pack(length) + _LENGTH.pack(len(header)) + header + cmd.body
    return encode(replace(cmd, opaque=opaque, flag=flag))


class _Retagged:
    """The fields of a command that :func:`_json_header` reads, with another opaque and flag."""

    __slots__ = ("code", "flag", "language", "opaque", "version", "remark", "ext_fields")

    def __init__(self, cmd: RemotingCommand, opaque: int, flag: int) -> None:
        self.code, self.language, self.version = cmd.code, cmd.language, cmd.version
        self.remark, self.ext_fields = cmd.remark, cmd.ext_fields
        self.opaque, self.flag = opaque, flag


def encode(cmd: RemotingCommand) -> bytes:
    """Serialize a command to a full frame (length prefix included)."""
    if cmd.serialize_type == SERIALIZE_ROCKETMQ:
        if not -32768 <= cmd.code <= 32767:
            raise ProtocolError(f"request code {cmd.code} does not fit a binary header")
        try:
            header = _binary_header(cmd)
        except struct.error as exc:  # a version, opaque, flag or key length out of its field's range
            raise ProtocolError(f"a field does not fit a binary header: {exc}") from exc
    else:
        header = _json_header(cmd)
    length = 4 + len(header) + len(cmd.body)
    if length > MAX_FRAME_LENGTH:
        raise ProtocolError(f"frame of {length} bytes exceeds the {MAX_FRAME_LENGTH}-byte limit")
    word = (cmd.serialize_type << 24) | len(header)
    return _LENGTH.pack(length) + _LENGTH.pack(word) + header + cmd.body


# ---------------------------------------------------------------------------------------------
# Decoding


_INT32 = (-(2**31), 2**31 - 1)
#: A numeric header string: ASCII digits only ("²" is a digit to str.isdigit, not to int()).
_DECIMAL = re.compile(r"-?[0-9]{1,10}")


def _header_int(data: dict[str, object], name: str, raw: bytes, default: int = 0) -> int:
    value = data.get(name, default)
    if type(value) is int and _INT32[0] <= value <= _INT32[1]:  # what Java writes: the common case
        return value
    if value is None:
        return default
    # Java writes these as JSON numbers; a numeric string is tolerated, anything else is not.
    if isinstance(value, str) and _DECIMAL.fullmatch(value.strip()):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not _INT32[0] <= value <= _INT32[1]:
        raise ProtocolError(f"frame header {name!r} is not a 32-bit integer: {str(value)[:40]!r}", raw)
    return value


def _header_text(value: object) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (bool, int, float)):
        return str(value).lower() if isinstance(value, bool) else str(value)
    return None


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not allowed")


#: A header with no fields and no remark, as brokers (fastjson, keys in order) and the emulator
#: write most responses: read without the JSON parser. Numbers of at most ten digits without
#: leading zeros, as JSON writes them; anything else takes the general path below.
_PLAIN_HEADER_RE = re.compile(
    rb'\{"code":(-?(?:0|[1-9][0-9]{0,9})),"flag":(-?(?:0|[1-9][0-9]{0,9})),"language":"([A-Z_]{1,16})",'
    rb'"opaque":(-?(?:0|[1-9][0-9]{0,9})),"serializeTypeCurrentRPC":"JSON","version":(-?(?:0|[1-9][0-9]{0,9}))\}')
#: A header whose fields are all text and which has no remark, as brokers, Java clients and
#: rmqctl write requests: the fields are read by :data:`_TEXT_FIELD_RE`. A JSON string here holds
#: no quote, backslash or control character (an escape or a character the JSON parser refuses
#: takes the general path).
_FIELDS_HEADER_RE = re.compile(
    rb'\{"code":(-?(?:0|[1-9][0-9]{0,9})),"extFields":\{((?:"[^"\\\x00-\x1f]*":"[^"\\\x00-\x1f]*",)*'
    rb'"[^"\\\x00-\x1f]*":"[^"\\\x00-\x1f]*")\},"flag":(-?(?:0|[1-9][0-9]{0,9})),"language":"([A-Z_]{1,16})",'
    rb'"opaque":(-?(?:0|[1-9][0-9]{0,9})),"serializeTypeCurrentRPC":"JSON","version":(-?(?:0|[1-9][0-9]{0,9}))\}')
_TEXT_FIELD_RE = re.compile(rb'"([^"]*)":"([^"]*)"')
#: ``json.loads(text, parse_constant=...)`` without building a decoder per call
_HEADER_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


def _fields_header(raw: bytes, body: bytes) -> RemotingCommand | None:
    """:func:`_decode_json_header` of a header :data:`_FIELDS_HEADER_RE` matches (what the general
    path makes of it); None for any other."""
    match = _FIELDS_HEADER_RE.fullmatch(raw)
    if match is None:
        return None
    code, flag, opaque, version = int(match[1]), int(match[3]), int(match[5]), int(match[6])
    if not (_INT32[0] <= min(code, flag, opaque, version) and max(code, flag, opaque, version) <= _INT32[1]):
        return None
    try:
        # a field named twice keeps its last value, as the JSON parser keeps it
        fields = {key.decode("utf-8"): value.decode("utf-8") for key, value in _TEXT_FIELD_RE.findall(match[2])}
    except UnicodeDecodeError:
        return None
    return RemotingCommand(code, opaque, flag, match[4].decode("ascii"), version, None, fields, body, SERIALIZE_JSON)


def _decode_json_header(raw: bytes, body: bytes) -> RemotingCommand:
    plain = _PLAIN_HEADER_RE.fullmatch(raw)
    if plain is not None:
        code, flag, opaque, version = (int(plain[1]), int(plain[2]), int(plain[4]), int(plain[5]))
        if _INT32[0] <= min(code, flag, opaque, version) and max(code, flag, opaque, version) <= _INT32[1]:
            return RemotingCommand(code, opaque, flag, plain[3].decode("ascii"), version, None, {}, body,
                                   SERIALIZE_JSON)
    elif raw.startswith(b'{"code":') and b'"extFields":{"' in raw:
        fields = _fields_header(raw, body)
        if fields is not None:
            return fields
    if raw.count(b"[") + raw.count(b"{") > MAX_HEADER_DEPTH:
        # A real header nests two levels (extFields); deeper input is an attack on the parser.
        raise ProtocolError("frame header nests too deeply", raw)
    try:
        data = _HEADER_DECODER.decode(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ProtocolError(f"frame header is not valid JSON: {exc}", raw) from exc
    if not isinstance(data, dict):
        raise ProtocolError("frame header is not a JSON object", raw)
    if isinstance(data.get("code"), bool) or not isinstance(data.get("code"), int):
        raise ProtocolError("frame header lacks an integer 'code'", raw)
    ext = data.get("extFields") or {}
    if not isinstance(ext, dict):
        raise ProtocolError("frame header 'extFields' is not an object", raw)
    ext_fields: dict[str, str] = {}
    for key, value in ext.items():
        text = "" if value is None else _header_text(value)
        if text is None:
            raise ProtocolError(f"frame header field {key[:40]!r} is not a string", raw)
        ext_fields[key] = text
    language = data.get("language", "OTHER")
    if isinstance(language, int) and not isinstance(language, bool):  # some clients send the ordinal
        language = LANGUAGES[language] if 0 <= language < len(LANGUAGES) else "OTHER"
    elif not isinstance(language, str):
        raise ProtocolError("frame header 'language' is not a string", raw)
    remark = data.get("remark")
    if remark is not None and not isinstance(remark, str):
        raise ProtocolError("frame header 'remark' is not a string", raw)
    return RemotingCommand(
        code=_header_int(data, "code", raw),
        opaque=_header_int(data, "opaque", raw),
        flag=_header_int(data, "flag", raw),
        language=language,
        version=_header_int(data, "version", raw),
        remark=remark,
        ext_fields=ext_fields,
        body=body,
        serialize_type=SERIALIZE_JSON,
    )


def _decode_binary_header(raw: bytes, body: bytes) -> RemotingCommand:
    try:
        code, lang, version, opaque, flag = _BINARY_FIXED.unpack_from(raw, 0)
        pos = _BINARY_FIXED.size
        (remark_len,) = _LENGTH.unpack_from(raw, pos)
        pos += 4
        if remark_len < 0 or pos + remark_len > len(raw):
            raise ProtocolError("binary header remark overruns the header", raw)
        remark = raw[pos : pos + remark_len].decode("utf-8") if remark_len else None
        pos += remark_len
        (ext_len,) = _LENGTH.unpack_from(raw, pos)
        pos += 4
        end = pos + ext_len
        if ext_len < 0 or end > len(raw):
            raise ProtocolError("binary header extFields overrun the header", raw)
        ext: dict[str, str] = {}
        while pos < end:
            (klen,) = struct.unpack_from(">h", raw, pos)
            pos += 2
            if klen < 0 or pos + klen > end:
                raise ProtocolError("binary header key overruns extFields", raw)
            key = raw[pos : pos + klen].decode("utf-8")
            pos += klen
            (vlen,) = _LENGTH.unpack_from(raw, pos)
            pos += 4
            if klen < 0 or vlen < 0 or pos + vlen > end:
                raise ProtocolError("binary header field overruns extFields", raw)
            ext[key] = raw[pos : pos + vlen].decode("utf-8")
            pos += vlen
    except (struct.error, UnicodeDecodeError) as exc:
        raise ProtocolError(f"malformed binary header: {exc}", raw) from exc
    return RemotingCommand(
        code=code,
        opaque=opaque,
        flag=flag,
        language=LANGUAGES[lang] if 0 <= lang < len(LANGUAGES) else "OTHER",
        version=version,
        remark=remark,
        ext_fields=ext,
        body=body,
        serialize_type=SERIALIZE_ROCKETMQ,
    )


def decode_payload(payload: bytes) -> RemotingCommand:
    """Decode a frame without its 4-byte length prefix."""
    if len(payload) < 4:
        raise ProtocolError(f"frame of {len(payload)} bytes is shorter than its header word", payload)
    (word,) = _LENGTH.unpack_from(payload, 0)
    serialize_type = (word >> 24) & 0xFF
    header_len = word & 0xFFFFFF
    if 4 + header_len > len(payload):
        raise ProtocolError(
            f"header length {header_len} exceeds the frame ({len(payload) - 4} bytes)", payload
        )
    header = payload[4 : 4 + header_len]
    body = payload[4 + header_len :]
    if serialize_type == SERIALIZE_JSON:
        return _decode_json_header(header, body)
    if serialize_type == SERIALIZE_ROCKETMQ:
        return _decode_binary_header(header, body)
    raise ProtocolError(f"unknown serialize type {serialize_type}", payload)


def check_length(length: int, limit: int = MAX_FRAME_LENGTH) -> None:
    """Validate a frame's length prefix before reading that many bytes."""
    if length < 4 or length > limit:
        raise ProtocolError(
            f"frame length {length} is outside 4..{limit}", _LENGTH.pack(length)
        )


def decode(frame: bytes) -> RemotingCommand:
    """Decode one complete frame, length prefix included."""
    if len(frame) < 4:
        raise ProtocolError("truncated frame", frame)
    (length,) = _LENGTH.unpack_from(frame, 0)
    check_length(length)
    if len(frame) != 4 + length:
        raise ProtocolError(f"frame says {length} bytes but carries {len(frame) - 4}", frame)
    return decode_payload(frame[4:])


class FrameDecoder:
    """Incremental decoder: feed bytes as they arrive, take whole commands out.

    ``max_frame_length`` bounds what one unfinished frame may make it buffer: a longer length
    prefix is a :class:`ProtocolError` as soon as its four bytes arrive. After a
    :class:`ProtocolError` the stream is unusable; the connection must be closed.
    """

    def __init__(self, max_frame_length: int = MAX_FRAME_LENGTH) -> None:
        self._buffer = bytearray()
        self.max_frame_length = max_frame_length

    @property
    def buffered(self) -> int:
        """Bytes received but not yet taken out as commands."""
        return len(self._buffer)

    def feed(self, data: bytes) -> None:
        self._buffer += data

    def next_command(self) -> RemotingCommand | None:
        if len(self._buffer) < 4:
            return None
        (length,) = _LENGTH.unpack_from(self._buffer, 0)
        check_length(length, self.max_frame_length)
        if len(self._buffer) < 4 + length:
            return None
        payload = bytes(self._buffer[4 : 4 + length])
        del self._buffer[: 4 + length]
        return decode_payload(payload)

    def __iter__(self) -> FrameDecoder:
        return self

    def __next__(self) -> RemotingCommand:
        cmd = self.next_command()
        if cmd is None:
            raise StopIteration
        return cmd
