"""The messages a PULL_MESSAGE response carries (the commit-log layout of ``MessageDecoder``).

:func:`encode_message` writes one :class:`MessageRecord` the way a broker does (magic v1, one-byte
topic length, IPv4 hosts; v2 with a two-byte length for a longer topic) and :func:`decode_records`
reads every record of a body back, v1 or v2, IPv4 or IPv6 hosts; ``decode(encode(r)) == r``.
:func:`decode_messages` keeps only what rmqctl reads back (queue, offset, tag, reconsume count,
properties); :func:`record_message` turns a record into the model's :class:`~rmqctl.model.Message`
(its offset message id computed from the store host and commit-log offset, as the Java decoder
does) and :func:`message_record` turns it back.
The properties string (``name\\x01value\\x02``…) has its own pair, which a SEND_MESSAGE header
carries too. Sans-I/O: bytes in, model objects out. Must not import the connection layer, the
emulator, the CLI, the TUI or pyspark.
"""

from __future__ import annotations

import ipaddress
import struct
import zlib
from collections.abc import Mapping
from dataclasses import field

from rmqctl import errors
from rmqctl.model import Message, MessageQueue, SampledMessage, encode_offset_message_id
from rmqctl.records import dataclass

#: ``MessageDecoder.MESSAGE_MAGIC_CODE`` (1-byte topic length) and ``_V2`` (2-byte topic length)
MAGIC_V1 = -626843481
MAGIC_V2 = -626843477
#: ``MessageSysFlag`` bits that widen the born / store host from IPv4 to IPv6
BORNHOST_V6 = 0x1 << 4
STOREHOST_V6 = 0x1 << 5
_PROPERTY_SEPARATOR = "\x02"
_NAME_VALUE_SEPARATOR = "\x01"
#: written for a host that is not an IPv4 address (a name, or empty)
_LOOPBACK = b"\x7f\x00\x00\x01"
_FIXED = struct.Struct(">iiiiiqqiq")  # total, magic, crc, queueId, flag, queueOffset, physical, sysFlag, born


@dataclass(frozen=True, slots=True)
class MessageRecord:
    """One message as the commit log stores it (the fields a pull response carries)."""

    topic: str
    queue_id: int
    queue_offset: int
    #: commit-log (physical) offset
    physical_offset: int
    born_timestamp: int
    store_timestamp: int
    body: bytes = b""
    properties: dict[str, str] = field(default_factory=dict)
    born_host: tuple[str, int] = ("127.0.0.1", 0)
    store_host: tuple[str, int] = ("127.0.0.1", 0)
    reconsume_times: int = 0
    flag: int = 0
    sys_flag: int = 0
    prepared_transaction_offset: int = 0


def encode_properties(properties: Mapping[str, str]) -> str:
    """``MessageDecoder.messageProperties2String``: ``name\\x01value\\x02`` for each entry."""
    return "".join(f"{k}{_NAME_VALUE_SEPARATOR}{v}{_PROPERTY_SEPARATOR}" for k, v in properties.items())


def decode_properties(text: str) -> dict[str, str]:
    """``MessageDecoder.string2messageProperties``; items without a separator are skipped."""
    out = {}
    for item in text.split(_PROPERTY_SEPARATOR):
        key, sep, value = item.partition(_NAME_VALUE_SEPARATOR)
        if sep:
            out[key] = value
    return out


def _host(addr: tuple[str, int], v6: bool) -> bytes:
    try:
        packed = ipaddress.ip_address(addr[0]).packed
    except ValueError:
        packed = _LOOPBACK
    if len(packed) != (16 if v6 else 4):
        packed = ipaddress.IPv6Address(1).packed if v6 else _LOOPBACK  # ::1 or 127.0.0.1
    return packed + struct.pack(">i", addr[1])


def encode_message(record: MessageRecord) -> bytes:
    """One message in the commit-log layout. Hosts are IPv4 unless the record's ``sys_flag``
    has the v6 bits; a host that is not an address of that family is written as loopback."""
    topic = record.topic.encode("utf-8")
    properties = encode_properties(record.properties).encode("utf-8")
    if len(properties) > 0x7FFF:
        raise errors.ProtocolError(f"message properties of {len(properties)} bytes exceed 32767")
    if len(topic) > 0x7FFF:
        raise errors.ProtocolError(f"topic of {len(topic)} bytes exceeds 32767")
    v2 = len(topic) > 0xFF
    body = record.body
    born = _host(record.born_host, bool(record.sys_flag & BORNHOST_V6))
    store = _host(record.store_host, bool(record.sys_flag & STOREHOST_V6))
    rest = (
        born + struct.pack(">q", record.store_timestamp) + store
        + struct.pack(">iqi", record.reconsume_times, record.prepared_transaction_offset, len(body)) + body
        + (struct.pack(">h", len(topic)) if v2 else struct.pack(">B", len(topic))) + topic
        + struct.pack(">h", len(properties)) + properties
    )
    total = _FIXED.size + len(rest)
    return _FIXED.pack(
        total, MAGIC_V2 if v2 else MAGIC_V1, zlib.crc32(body) & 0x7FFFFFFF, record.queue_id, record.flag,
        record.queue_offset, record.physical_offset, record.sys_flag, record.born_timestamp,
    ) + rest


def _read_host(body: bytes, cursor: int, v6: bool) -> tuple[tuple[str, int], int]:
    size = 16 if v6 else 4
    raw = body[cursor:cursor + size]
    if len(raw) != size:
        raise errors.ProtocolError(f"message host at byte {cursor} is truncated", raw=body)
    (port,) = struct.unpack_from(">i", body, cursor + size)
    return (str(ipaddress.ip_address(raw)), port), cursor + size + 4


def decode_records(body: bytes) -> list[MessageRecord]:
    """Every message of a pull response body, in order; a truncated or garbled body raises
    :class:`~rmqctl.errors.ProtocolError` with the raw bytes kept."""
    out: list[MessageRecord] = []
    pos = 0
    try:
        while pos < len(body):
            (total,) = struct.unpack_from(">i", body, pos)
            if total <= 0 or pos + total > len(body):
                raise errors.ProtocolError(f"message at byte {pos} claims {total} bytes", raw=body)
            (_, magic, _crc, queue_id, flag, queue_offset, physical, sys_flag, born_ts) = _FIXED.unpack_from(
                body, pos)
            cursor = pos + _FIXED.size
            born_host, cursor = _read_host(body, cursor, bool(sys_flag & BORNHOST_V6))
            (store_ts,) = struct.unpack_from(">q", body, cursor)
            cursor += 8
            store_host, cursor = _read_host(body, cursor, bool(sys_flag & STOREHOST_V6))
            reconsume_times, prepared, body_len = struct.unpack_from(">iqi", body, cursor)
            cursor += 16
            payload = body[cursor:cursor + max(0, body_len)]
            cursor += max(0, body_len)
            if magic == MAGIC_V2:
                (topic_len,) = struct.unpack_from(">h", body, cursor)
                cursor += 2
            else:
                topic_len = body[cursor]
                cursor += 1
            topic = body[cursor:cursor + topic_len].decode("utf-8", "replace")
            cursor += topic_len
            (props_len,) = struct.unpack_from(">h", body, cursor)
            cursor += 2
            props = decode_properties(body[cursor:cursor + props_len].decode("utf-8", "replace"))
            out.append(MessageRecord(
                topic=topic, queue_id=queue_id, queue_offset=queue_offset, physical_offset=physical,
                born_timestamp=born_ts, store_timestamp=store_ts, body=payload, properties=props,
                born_host=born_host, store_host=store_host, reconsume_times=reconsume_times, flag=flag,
                sys_flag=sys_flag, prepared_transaction_offset=prepared,
            ))
            pos += total
    except (struct.error, IndexError, ValueError) as exc:
        raise errors.ProtocolError(f"cannot decode pulled messages: {exc}", raw=body) from exc
    return out


def decode_messages(body: bytes, broker_name: str) -> list[SampledMessage]:
    """What rmqctl keeps of every message of a pull response body, in order (see
    :func:`decode_records`)."""
    return [
        SampledMessage(MessageQueue(r.topic, broker_name, r.queue_id), r.queue_offset,
                       r.properties.get("TAGS") or None, r.reconsume_times, dict(r.properties),
                       r.store_timestamp)
        for r in decode_records(body)
    ]


def record_message(record: MessageRecord, broker_name: str) -> Message:
    """The model's view of one record; the offset message id is the store host's and the
    commit-log offset's (``MessageDecoder.createMessageId``)."""
    host, port = record.store_host
    return Message(
        queue=MessageQueue(record.topic, broker_name, record.queue_id), queue_offset=record.queue_offset,
        physical_offset=record.physical_offset,
        offset_msg_id=encode_offset_message_id(host, port, record.physical_offset),
        born_timestamp=record.born_timestamp, store_timestamp=record.store_timestamp,
        born_host=f"{record.born_host[0]}:{record.born_host[1]}", store_host=f"{host}:{port}",
        properties=dict(record.properties), body=record.body, reconsume_times=record.reconsume_times,
        sys_flag=record.sys_flag, flag=record.flag, prepared_transaction_offset=record.prepared_transaction_offset,
    )


def _split_host(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host.strip("[]"), int(port or 0)


def message_record(message: Message) -> MessageRecord:
    """The record a broker would send for ``message`` (the inverse of :func:`record_message`)."""
    return MessageRecord(
        topic=message.queue.topic, queue_id=message.queue.queue_id, queue_offset=message.queue_offset,
        physical_offset=message.physical_offset, born_timestamp=message.born_timestamp,
        store_timestamp=message.store_timestamp, body=message.body, properties=dict(message.properties),
        born_host=_split_host(message.born_host), store_host=_split_host(message.store_host),
        reconsume_times=message.reconsume_times, flag=message.flag, sys_flag=message.sys_flag,
        prepared_transaction_offset=message.prepared_transaction_offset,
    )


def decode_full_messages(body: bytes, broker_name: str) -> list[Message]:
    """Every message of a pull, view or query response body, with all it carries."""
    return [record_message(r, broker_name) for r in decode_records(body)]
