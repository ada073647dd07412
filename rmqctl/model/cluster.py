"""Cluster, broker, topic and queue types: what the name server and brokers describe.

``MessageQueue`` orders exactly like Java's. Frozen dataclasses, no I/O; must not import anything
from rmqctl outside this package.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Iterable, Mapping
from dataclasses import field
from operator import attrgetter
from typing import Literal

from rmqctl.model.java import java_str_key
from rmqctl.model.names import (
    DLQ_PREFIX,
    POP_RETRY_SEPARATOR_V1,
    POP_RETRY_SEPARATOR_V2,
    RETRY_PREFIX,
    SYSTEM_TOPICS,
)
from rmqctl.records import dataclass

TopicKind = Literal["normal", "retry", "dlq", "system", "cluster", "broker"]


def topic_kind(name: str, cluster: ClusterInfo | None = None) -> TopicKind:
    """What a name from the name server's topic list is: a user topic, a group's retry or
    dead-letter topic, a system topic, or a cluster or broker name (brokers register both as
    topics, so the full list contains them)."""
    if name.startswith(RETRY_PREFIX):
        return "retry"
    if name.startswith(DLQ_PREFIX):
        return "dlq"
    if name in SYSTEM_TOPICS or name.startswith("rmq_sys_"):
        return "system"
    if cluster is not None:
        if name in cluster.clusters:
            return "cluster"
        if name in cluster.brokers:
            return "broker"
    return "normal"


def retry_topic_owner(
    name: str, *, topics: Collection[str] = (), groups: Collection[str] = ()
) -> tuple[str, str | None] | None:
    """Whose retry topic ``name`` is: ``(group, None)`` for a group's own ``%RETRY%<group>``,
    ``(group, topic)`` for a POP retry topic, ``None`` when ``name`` is no retry topic.

    POP consumption (5.x brokers; every gRPC client through a proxy) redelivers through one retry
    topic per group and topic, ``%RETRY%<group>+<topic>`` or, by default, ``%RETRY%<group>_<topic>``.
    No legal group or topic name holds a '+', so the first form splits there. The second is
    ambiguous, since names hold '_' freely: it is a POP retry topic when what follows one of its
    '_' is an existing topic (``topics``, the name server's list) and the whole is not a
    configured group (``groups``). When several splits name an existing topic, a configured group
    before the '_' decides; failing that, the longest topic wins.
    """
    if not name.startswith(RETRY_PREFIX):
        return None
    rest = name[len(RETRY_PREFIX):]
    group, plus, topic = rest.partition(POP_RETRY_SEPARATOR_V2)
    if plus and group and topic:
        return group, topic
    if rest in groups:
        return rest, None
    splits = [
        (rest[:i], rest[i + 1:]) for i, ch in enumerate(rest)
        if ch == POP_RETRY_SEPARATOR_V1 and 0 < i < len(rest) - 1
        and rest[i + 1:] in topics and not rest[i + 1:].startswith(RETRY_PREFIX)
    ]
    known = [s for s in splits if s[0] in groups]
    if known or splits:
        pop_group, pop_topic = (known or splits)[0]
        return pop_group, pop_topic
    return rest, None


def retry_topic_groups(topics: Iterable[str], configured: Iterable[str] = ()) -> set[str]:
    """The groups the retry topics among ``topics`` (the name server's list) belong to: a group's
    own retry topic and a POP group's per-topic ones all name their group, so a POP retry topic
    never lists as a group of its own. ``configured`` are the groups the brokers keep configs for
    (what tells a group whose name holds '_' from a POP retry topic)."""
    known = set(topics)
    groups = set(configured)
    owners = (retry_topic_owner(t, topics=known, groups=groups) for t in sorted(known))
    return {owner[0] for owner in owners if owner is not None}


@functools.total_ordering
@dataclass(frozen=True, slots=True)
class MessageQueue:
    """One queue of one topic on one broker; ordered exactly like Java's ``MessageQueue``."""

    topic: str
    broker_name: str
    queue_id: int
    #: the hash of the three fields, taken once: a round of the exporter looks queues up in
    #: dicts half a million times, and a hash computed per lookup is a Python call each time
    _hash: int = field(init=False, repr=False, compare=False)
    #: :meth:`sort_key`, taken once: a sort by it reads an attribute (no Python call per queue)
    _order: tuple[bytes, bytes, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash((self.topic, self.broker_name, self.queue_id)))
        object.__setattr__(self, "_order", (java_str_key(self.topic), java_str_key(self.broker_name), self.queue_id))

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self) -> tuple[type[MessageQueue], tuple[str, str, int]]:
        # by its fields: a string's hash differs from one process to the next, so the kept hash
        # is taken again where the queue is unpickled
        return MessageQueue, (self.topic, self.broker_name, self.queue_id)

    def sort_key(self) -> tuple[bytes, bytes, int]:
        """The Java order as a key: sort many queues with :func:`sort_queues`, not ``__lt__``."""
        return self._order

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, MessageQueue):
            return NotImplemented
        return self._order < other._order

    def java_string(self) -> str:
        """``MessageQueue.toString()``; the consistent-hash strategy hashes this exact text."""
        return (
            f"MessageQueue [topic={self.topic}, brokerName={self.broker_name}, "
            f"queueId={self.queue_id}]"
        )


#: the queues :func:`queue_of` made, by their fields; emptied when it reaches :data:`_SHARED_QUEUES_CAP`
_shared_queues: dict[tuple[str, str, int], MessageQueue] = {}
_SHARED_QUEUES_CAP = 1 << 17


def queue_of(topic: str, broker_name: str, queue_id: int) -> MessageQueue:
    """``MessageQueue(topic, broker_name, queue_id)``, the same object each time while a table of
    up to :data:`_SHARED_QUEUES_CAP` queues holds it (emptied when full: a queue is then made
    anew, equal to the old one). Answers decoded this way (offsets, what each client holds, routes)
    name one queue with one object, so looking it up in another answer's table or comparing it
    is decided by identity, without calling the class's ``__eq__``; and it costs less than making
    one."""
    key = (topic, broker_name, queue_id)
    found = _shared_queues.get(key)
    if found is None:
        if len(_shared_queues) >= _SHARED_QUEUES_CAP:
            _shared_queues.clear()
        found = _shared_queues[key] = MessageQueue(topic, broker_name, queue_id)
    return found


#: :meth:`MessageQueue.sort_key` read in C
_JAVA_ORDER = attrgetter("_order")


def sort_queues(queues: Iterable[MessageQueue]) -> list[MessageQueue]:
    """``queues`` in Java's ``MessageQueue`` order. A key sort: comparing through ``__lt__`` is a
    Python call per comparison, most of the time of a 10,000-queue group's dashboard refresh."""
    return sorted(queues, key=_JAVA_ORDER)


@dataclass(frozen=True, slots=True)
class BrokerData:
    """One broker set: its name, cluster and addresses by broker id (0 is the master)."""

    broker_name: str
    cluster: str
    addrs: Mapping[int, str]

    @property
    def master_addr(self) -> str | None:
        return self.addrs.get(0)



@dataclass(frozen=True, slots=True)
class ClusterInfo:
    """What the name server knows about clusters and brokers (request 106)."""

    brokers: Mapping[str, BrokerData]
    clusters: Mapping[str, tuple[str, ...]]

    def masters(self) -> dict[str, str]:
        """Broker name → master address, for every broker set that has a master."""
        return {
            name: data.addrs[0] for name, data in sorted(self.brokers.items()) if 0 in data.addrs
        }

    def broker_addresses(self) -> list[tuple[str, str, int, str]]:
        """``(cluster, broker name, broker id, address)`` of every broker, masters and slaves, in
        cluster, then broker-set order (each set's ids ascending)."""
        out: list[tuple[str, str, int, str]] = []
        for cluster_name, broker_names in sorted(self.clusters.items()):
            for broker_name in broker_names:
                data = self.brokers.get(broker_name)
                if data is not None:
                    out.extend((cluster_name, broker_name, broker_id, addr)
                               for broker_id, addr in sorted(data.addrs.items()))
        return out


@dataclass(frozen=True, slots=True)
class QueueData:
    """The queues one broker serves for a topic."""

    broker_name: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_sys_flag: int = 0

    @property
    def readable(self) -> bool:
        return bool(self.perm & 4)

    @property
    def writable(self) -> bool:
        return bool(self.perm & 2)


@dataclass(frozen=True, slots=True)
class TopicRoute:
    """A topic's route from the name server (request 105)."""

    topic: str
    queue_datas: tuple[QueueData, ...]
    broker_datas: tuple[BrokerData, ...]
    order_topic_conf: str | None = None
    #: :meth:`read_queues`, taken once: a route kept for a round is read by every view of its
    #: topic; not part of the route's value (``replace`` starts it afresh)
    _read: tuple[MessageQueue, ...] | None = field(default=None, init=False, repr=False, compare=False)

    def read_queues(self) -> list[MessageQueue]:
        """Every readable queue, sorted as the Java client sorts mqAll."""
        read = self._read
        if read is None:
            read = tuple(sort_queues(
                queue_of(self.topic, qd.broker_name, qid)
                for qd in self.queue_datas
                if qd.readable
                for qid in range(qd.read_queue_nums)
            ))
            object.__setattr__(self, "_read", read)
        return list(read)

    def master_addrs(self) -> dict[str, str]:
        return {b.broker_name: b.master_addr for b in self.broker_datas if b.master_addr}


@dataclass(frozen=True, slots=True)
class TopicOffset:
    """Min/max offset of one queue (request 202). ``max_offset`` is the queue's length."""

    queue: MessageQueue
    min_offset: int
    max_offset: int
    last_update_timestamp: int

    @property
    def newest_store_ms(self) -> int | None:
        """Store time of the newest message in the queue (None when empty or unknown)."""
        return self.last_update_timestamp or None


@dataclass(frozen=True, slots=True)
class TopicStats:
    """A topic's offsets per queue as the brokers report them, and its put rate (messages/s) when known."""

    topic: str
    offsets: tuple[TopicOffset, ...]
    put_tps: float | None = None


@dataclass(frozen=True, slots=True)
class BrokerRuntime:
    """``GET_BROKER_RUNTIME_INFO`` of one broker: the raw key/value table plus handy fields."""

    broker_name: str
    broker_id: int
    addr: str
    cluster: str
    table: Mapping[str, str]

    @property
    def version(self) -> str:
        return self.table.get("brokerVersionDesc", "")

    def _float(self, key: str) -> float:
        try:
            return float(self.table.get(key, "0").split()[0])
        except (ValueError, IndexError):
            return 0.0

    @property
    def in_tps(self) -> float:
        return self._float("putTps")

    @property
    def out_tps(self) -> float:
        return self._float("getTransferredTps")

    @property
    def disk_ratio(self) -> float:
        return self._float("commitLogDiskRatio")
