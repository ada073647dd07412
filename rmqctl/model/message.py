"""Messages as operators look them up: a stored message with everything the broker keeps of it,
the two kinds of message id, and what a look-up names.

RocketMQ shows two ids for one message. The *offset message id* is the broker's: the store host's
address (IPv4 or IPv6) and port, then the message's commit-log offset, as upper-case hex — 32
characters for IPv4, 56 for IPv6 (``MessageDecoder.createMessageId``); it says where to read the
message (``VIEW_MESSAGE_BY_ID``). The *unique key* (``UNIQ_KEY`` property) is the producer's
(``MessageClientIDSetter``) and is what a ``SendResult``'s ``msgId`` and the client's
``MessageExt.getMsgId()`` show; the broker finds it only through its index, per topic. Both are 32
hex characters for IPv4 hosts, so an id that decodes as an offset id may still be a unique key:
like mqadmin, try the decoded broker first and the index after.

Frozen dataclasses and pure functions; must not import anything from rmqctl outside this package.
"""

from __future__ import annotations

import ipaddress
import struct
from collections.abc import Mapping
from dataclasses import field
from typing import Literal

from rmqctl.model.cluster import MessageQueue
from rmqctl.model.consumer import Subscription
from rmqctl.model.names import DLQ_PREFIX, RETRY_PREFIX
from rmqctl.records import dataclass

#: property names the broker and clients write (``MessageConst``)
_PROPERTY_TAGS = "TAGS"
_PROPERTY_KEYS = "KEYS"
_PROPERTY_UNIQ_KEY = "UNIQ_KEY"
_PROPERTY_RETRY_TOPIC = "RETRY_TOPIC"
#: keys in ``KEYS`` are separated by one space (``MessageConst._KEY_SEPARATOR``)
_KEY_SEPARATOR = " "


def encode_offset_message_id(host: str, port: int, physical_offset: int) -> str:
    """The broker's message id: host bytes, port (4 bytes), commit-log offset (8 bytes), in hex.
    ``host`` is an IPv4 or IPv6 address (a name raises ``ValueError``)."""
    packed = ipaddress.ip_address(host).packed
    return (packed + struct.pack(">iq", port, physical_offset)).hex().upper()


def decode_offset_message_id(msg_id: str) -> tuple[str, int, int] | None:
    """``(host, port, commit-log offset)`` of an offset message id, or ``None`` when ``msg_id``
    cannot be one (not 32 or 56 hex characters). A unique key of an IPv4 producer also decodes:
    the address it names is then no broker's."""
    if len(msg_id) not in (32, 56):
        return None
    try:
        raw = bytes.fromhex(msg_id)
    except ValueError:
        return None
    ip_len = 4 if len(raw) == 16 else 16
    host = str(ipaddress.ip_address(raw[:ip_len]))
    port, offset = struct.unpack(">iq", raw[ip_len:])
    return host, port, offset


@dataclass(frozen=True, slots=True)
class Message:
    """One stored message with everything the broker returns for it."""

    queue: MessageQueue
    #: offset in its consume queue
    queue_offset: int
    #: commit-log offset (where the broker's id points)
    physical_offset: int
    #: the broker's id (store host and commit-log offset), see :func:`encode_offset_message_id`
    offset_msg_id: str
    born_timestamp: int
    store_timestamp: int
    born_host: str
    store_host: str
    properties: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""
    reconsume_times: int = 0
    #: ``MessageSysFlag`` bits (compression, transaction state, IPv6 hosts)
    sys_flag: int = 0
    flag: int = 0
    prepared_transaction_offset: int = 0

    @property
    def unique_key(self) -> str | None:
        """The producer's id (``UNIQ_KEY``), what clients show as the message id."""
        return self.properties.get(_PROPERTY_UNIQ_KEY) or None

    @property
    def msg_id(self) -> str:
        """The id a Java client shows: the unique key when the producer set one, else the
        broker's offset id."""
        return self.unique_key or self.offset_msg_id

    @property
    def tags(self) -> str | None:
        return self.properties.get(_PROPERTY_TAGS) or None

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(k for k in self.properties.get(_PROPERTY_KEYS, "").split(_KEY_SEPARATOR) if k)

    @property
    def body_size(self) -> int:
        return len(self.body)

    @property
    def origin_topic(self) -> str:
        """The topic the message was first sent to: a retry or dead-letter copy names it in
        ``RETRY_TOPIC``; any other message is on it."""
        return self.properties.get(_PROPERTY_RETRY_TOPIC) or self.queue.topic

    @property
    def is_retry_copy(self) -> bool:
        return self.queue.topic.startswith(RETRY_PREFIX)

    @property
    def is_dead_letter(self) -> bool:
        return self.queue.topic.startswith(DLQ_PREFIX)


@dataclass(frozen=True, slots=True)
class MessageRef:
    """What a look-up names: an id (offset id or unique key), a key of a topic, or a position.

    Exactly one way is set: ``msg_id`` (with ``topic`` for a unique key), ``key`` with ``topic``,
    or ``topic`` with ``broker``, ``queue_id`` and ``offset``."""

    msg_id: str | None = None
    key: str | None = None
    topic: str | None = None
    broker: str | None = None
    queue_id: int | None = None
    offset: int | None = None

    @property
    def position(self) -> MessageQueue | None:
        if self.topic is None or self.broker is None or self.queue_id is None or self.offset is None:
            return None
        return MessageQueue(self.topic, self.broker, self.queue_id)

    def describe(self) -> str:
        """The look-up in words, for errors and headers."""
        if self.msg_id is not None:
            return f"message id {self.msg_id}" + (f" on topic {self.topic}" if self.topic else "")
        if self.key is not None:
            return f"key {self.key!r} on topic {self.topic}"
        return f"{self.topic} {self.broker}/{self.queue_id} offset {self.offset}"


#: what became of one message for one group (``msg explain``)
Verdict = Literal["consumed", "waiting", "filtered_by_broker", "dropped_by_client", "never_pulled", "retried",
                  "dead_lettered", "unknown"]
VERDICTS: tuple[Verdict, ...] = ("consumed", "waiting", "filtered_by_broker", "dropped_by_client", "never_pulled",
                                 "retried", "dead_lettered", "unknown")


@dataclass(frozen=True, slots=True)
class QueueOwnership:
    """Which client held a queue, and where that was read: ``live`` (the clients' running infos
    now) or ``snapshots`` (recorded offset snapshots, the last one at or before a time)."""

    owner: str | None
    #: does the owner subscribe the queue's topic (None: not known)
    subscribed: bool | None
    source: Literal["live", "snapshots"]
    #: when the ownership was read (the view's or the snapshot's time), epoch ms
    at_ms: int | None = None
    #: the subscription the broker stored then (recorded snapshots; None: use the live one)
    stored: Subscription | None = None
    #: the owner's own subscription then (recorded snapshots; None: use the live one)
    owner_subscription: Subscription | None = None
    #: why the snapshots cannot tell which expression and owner judged the message (None: they can)
    undetermined: str | None = None


@dataclass(frozen=True, slots=True)
class Explanation:
    """One verdict on one message for one group, with what it rests on."""

    group: str
    verdict: Verdict
    #: the verdict in one sentence, for people
    summary: str
    #: the facts the verdict rests on (clients, expressions, offsets, copies)
    evidence: Mapping[str, object] = field(default_factory=dict)
    #: where the queue's owner was read (``live``, ``snapshots``), None when no owner was needed
    ownership_from: str | None = None
    #: what could not be read and would have decided (for ``unknown``, and caveats otherwise)
    missing: tuple[str, ...] = ()


#: ``TopicValidator.RMQ_SYS_TRACE_TOPIC``: where clients with message tracing on write their traces
TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"
_CONTENT_SPLITOR = "\x01"
_FIELD_SPLITOR = "\x02"


@dataclass(frozen=True, slots=True)
class TraceEvent:
    """One consume record of message tracing (``TraceDataEncoder``): ``SubBefore`` when a
    consumer hands the message to its listener, ``SubAfter`` when the listener returned."""

    kind: Literal["SubBefore", "SubAfter"]
    #: the unique key of the traced message
    msg_id: str
    #: the consumer group (SubAfter names it only from 4.9 on: else None)
    group: str | None
    #: ties a SubBefore to its SubAfter
    request_id: str
    #: when the consumer began (SubBefore) or, from 4.9 on, finished (SubAfter), epoch ms
    timestamp: int | None = None
    retry_times: int | None = None
    #: SubAfter: did the listener return CONSUME_SUCCESS, and how long it took
    success: bool | None = None
    cost_ms: int | None = None
    #: the host the trace was sent from (the consumer's), from the trace message's born host
    client_host: str | None = None


def _int_or_none(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def decode_trace_events(data: bytes, client_host: str | None = None) -> list[TraceEvent]:
    """The consume records of one trace message's body (records of other kinds are skipped; a
    body batches the records of several messages, so callers keep those of their message)."""
    out = []
    for record in data.decode("utf-8", "replace").split(_FIELD_SPLITOR):
        f = record.split(_CONTENT_SPLITOR)
        if f[0] == "SubBefore" and len(f) >= 7:
            out.append(TraceEvent("SubBefore", f[5], f[3] or None, f[4], _int_or_none(f[1]), _int_or_none(f[6]),
                                  client_host=client_host))
        elif f[0] == "SubAfter" and len(f) >= 5:
            out.append(TraceEvent("SubAfter", f[2], (f[8] or None) if len(f) >= 9 else None, f[1],
                                  _int_or_none(f[7]) if len(f) >= 8 else None, None, f[4] == "true",
                                  _int_or_none(f[3]), client_host))
    return out


def encode_trace_events(events: list[TraceEvent]) -> bytes:
    """The body a 5.x client writes for ``events`` (region ``DefaultRegion``, no keys, context
    code 0); :func:`decode_trace_events` reads it back."""
    parts = []
    for e in events:
        if e.kind == "SubBefore":
            fields = ["SubBefore", str(e.timestamp or 0), "DefaultRegion", e.group or "", e.request_id, e.msg_id,
                      str(e.retry_times or 0), ""]
        else:
            fields = ["SubAfter", e.request_id, e.msg_id, str(e.cost_ms or 0), "true" if e.success else "false", "",
                      "0", str(e.timestamp or 0), e.group or ""]
        parts.append(_CONTENT_SPLITOR.join(fields) + _FIELD_SPLITOR)
    return "".join(parts).encode("utf-8")
