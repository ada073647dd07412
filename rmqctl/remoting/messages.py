"""Decode the messages a PULL_MESSAGE response carries (the commit-log layout of ``MessageDecoder``).

Only what rmqctl reads back is kept: queue, offset, tag, reconsume count. Sans-I/O: bytes in,
model objects out. Must not import the connection layer, the CLI, the TUI or pyspark.
"""

from __future__ import annotations

import struct

from rmqctl import errors
from rmqctl.model import MessageQueue, SampledMessage

#: ``MessageDecoder.MESSAGE_MAGIC_CODE`` (1-byte topic length) and ``_V2`` (2-byte topic length)
MAGIC_V1 = -626843481
MAGIC_V2 = -626843477
#: ``MessageSysFlag`` bits that widen the born / store host from IPv4 to IPv6
BORNHOST_V6 = 0x1 << 4
STOREHOST_V6 = 0x1 << 5
_PROPERTY_SEPARATOR = "\x02"
_NAME_VALUE_SEPARATOR = "\x01"


def _properties(text: str) -> dict[str, str]:
    out = {}
    for item in text.split(_PROPERTY_SEPARATOR):
        key, sep, value = item.partition(_NAME_VALUE_SEPARATOR)
        if sep:
            out[key] = value
    return out


def decode_messages(body: bytes, broker_name: str) -> list[SampledMessage]:
    """Every message of a pull response body, in order; a truncated or garbled body raises
    :class:`~rmqctl.errors.ProtocolError` with the raw bytes kept."""
    out: list[SampledMessage] = []
    pos = 0
    try:
        while pos < len(body):
            (total,) = struct.unpack_from(">i", body, pos)
            if total <= 0 or pos + total > len(body):
                raise errors.ProtocolError(f"message at byte {pos} claims {total} bytes", raw=body)
            magic, _crc, queue_id, _flag, queue_offset, _physical, sys_flag, _born = struct.unpack_from(
                ">iiiiqqiq", body, pos + 4)
            cursor = pos + 4 + 44
            cursor += (16 if sys_flag & BORNHOST_V6 else 4) + 4
            cursor += 8  # store timestamp
            cursor += (16 if sys_flag & STOREHOST_V6 else 4) + 4
            (reconsume_times,) = struct.unpack_from(">i", body, cursor)
            cursor += 4 + 8  # reconsume times, prepared transaction offset
            (body_len,) = struct.unpack_from(">i", body, cursor)
            cursor += 4 + max(0, body_len)
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
            props = _properties(body[cursor:cursor + props_len].decode("utf-8", "replace"))
            out.append(SampledMessage(MessageQueue(topic, broker_name, queue_id), queue_offset,
                                      props.get("TAGS") or None, reconsume_times))
            pos += total
    except (struct.error, IndexError) as exc:
        raise errors.ProtocolError(f"cannot decode pulled messages: {exc}", raw=body) from exc
    return out
