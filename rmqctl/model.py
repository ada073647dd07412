"""Domain model: frozen dataclasses that every layer exchanges.

Wire formats never cross a layer boundary; these objects do. Derived numbers (lag, inflight,
owner lookups, Java ordering) are properties here, never recomputed in a command or widget.

Must not import anything that does I/O, and nothing from the rest of rmqctl but ``errors``.
"""

from __future__ import annotations

import datetime as _dt
import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from rmqctl.errors import RmqctlError

RETRY_PREFIX = "%RETRY%"
DLQ_PREFIX = "%DLQ%"
#: The Java client and broker treat this expression as "everything".
SUB_ALL = "*"

#: ``TopicValidator``'s system topics (what GET_SYSTEM_TOPIC_LIST_FROM_NS lists, besides the
#: cluster and broker names every broker registers as topics).
SYSTEM_TOPICS = frozenset(
    {"TBW102", "SELF_TEST_TOPIC", "OFFSET_MOVED_EVENT", "SCHEDULE_TOPIC_XXXX",
     "RMQ_SYS_TRANS_HALF_TOPIC", "rmq_sys_wheel_timer", "RMQ_SYS_TRACE_TOPIC",
     "RMQ_SYS_TRANS_OP_HALF_TOPIC", "TRANS_CHECK_MAX_TIME_TOPIC", "BenchmarkTest"}
)
#: Groups ``SubscriptionGroupManager`` creates on every broker at start.
BROKER_BUILTIN_GROUPS = (
    "TOOLS_CONSUMER", "FILTERSRV_CONSUMER", "SELF_TEST_C_GROUP", "CID_ONS-HTTP-PROXY",
    "CID_ONSAPI_PULL", "CID_ONSAPI_PERMISSION", "CID_ONSAPI_OWNER", "CID_SYS_RMQ_TRANS",
)
#: Groups that are not user groups: the brokers' built-ins and what brokers and tools use.
SYSTEM_GROUPS = frozenset(
    {*BROKER_BUILTIN_GROUPS, "CID_RMQ_SYS_TRANS", "CID_DefaultHeartBeatSyncerTopic"}
)

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


Severity = Literal["info", "warning", "error"]
#: severities in increasing order of gravity
SEVERITY_RANK: Mapping[str, int] = {"info": 0, "warning": 1, "error": 2}


@functools.lru_cache(maxsize=4096)
def java_str_key(text: str) -> bytes:
    """Sort key that orders strings like Java's ``String.compareTo`` (UTF-16 code units).

    Cached: sorting queues asks for the same few topic and broker names thousands of times."""
    return text.encode("utf-16-be", "surrogatepass")


def java_string_hash(text: str) -> int:
    """Java ``String.hashCode`` as a signed 32-bit int (the broker's tag code)."""
    h = 0
    data = java_str_key(text)
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def _version_names() -> tuple[str, ...]:
    """The ``MQVersion.Version`` enum in ordinal order (its layout is regular past 3.0.0)."""
    names = ["V3_0_0_SNAPSHOT", "V3_0_0_ALPHA1"]
    names += [f"V3_0_0_BETA{i}" for i in range(1, 6)]
    for i in range(6, 10):
        names += [f"V3_0_0_BETA{i}_SNAPSHOT", f"V3_0_0_BETA{i}"]
    names.append("V3_0_0_FINAL")
    releases = [(3, 0, p) for p in range(1, 16)]
    releases += [(3, m, p) for m in (1, 2) for p in range(10)]
    releases += [(3, m, p) for m in range(3, 10) for p in range(1, 10)]
    releases += [(major, m, p) for major in (4, 5) for m in range(10) for p in range(10)]
    for major, minor, patch in releases:
        names += [f"V{major}_{minor}_{patch}_SNAPSHOT", f"V{major}_{minor}_{patch}"]
    names.append("HIGHER_VERSION")
    return tuple(names)


_VERSION_NAMES = _version_names()


def version_desc(version: int) -> str:
    """``MQVersion.getVersionDesc``: the enum name of an ordinal, clamped to the last entry."""
    if version < 0:
        return f"V{version}"
    return _VERSION_NAMES[min(version, len(_VERSION_NAMES) - 1)]


def version_ordinal(name: str) -> int:
    """Inverse of :func:`version_desc` (``V5_3_3`` → 479); the dashboard reports names only."""
    return _VERSION_NAMES.index(name)


def format_millis(ts: int | None) -> str:
    """Render epoch milliseconds as local ``YYYY-MM-DD HH:MM:SS`` (``N/A`` for 0/None)."""
    if not ts:
        return "N/A"
    return _dt.datetime.fromtimestamp(ts / 1000).strftime("%Y-%m-%d %H:%M:%S")


@functools.total_ordering
@dataclass(frozen=True, slots=True)
class MessageQueue:
    """One queue of one topic on one broker; ordered exactly like Java's ``MessageQueue``."""

    topic: str
    broker_name: str
    queue_id: int

    def sort_key(self) -> tuple[bytes, bytes, int]:
        """The Java order as a key: sort many queues with :func:`sort_queues`, not ``__lt__``."""
        return (java_str_key(self.topic), java_str_key(self.broker_name), self.queue_id)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, MessageQueue):
            return NotImplemented
        # ASCII names (nearly all) compare the same as code points and as UTF-16 code units, so
        # skip the encoding that dominates sorting tens of thousands of queues.
        if self.topic != other.topic:
            if self.topic.isascii() and other.topic.isascii():
                return self.topic < other.topic
            return java_str_key(self.topic) < java_str_key(other.topic)
        if self.broker_name != other.broker_name:
            if self.broker_name.isascii() and other.broker_name.isascii():
                return self.broker_name < other.broker_name
            return java_str_key(self.broker_name) < java_str_key(other.broker_name)
        return self.queue_id < other.queue_id

    def java_string(self) -> str:
        """``MessageQueue.toString()``; the consistent-hash strategy hashes this exact text."""
        return (
            f"MessageQueue [topic={self.topic}, brokerName={self.broker_name}, "
            f"queueId={self.queue_id}]"
        )

    def as_dict(self) -> dict[str, Any]:
        """The JSON shape used in every output contract."""
        return {"topic": self.topic, "broker": self.broker_name, "queue_id": self.queue_id}


def sort_queues(queues: Iterable[MessageQueue]) -> list[MessageQueue]:
    """``queues`` in Java's ``MessageQueue`` order. A key sort: comparing through ``__lt__`` is a
    Python call per comparison, most of the time of a 10,000-queue group's dashboard refresh."""
    return sorted(queues, key=MessageQueue.sort_key)


# ---------------------------------------------------------------------------------------------
# Cluster, topics, routes


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

    def read_queues(self) -> list[MessageQueue]:
        """Every readable queue, sorted as the Java client sorts mqAll."""
        out = [
            MessageQueue(self.topic, qd.broker_name, qid)
            for qd in self.queue_datas
            if qd.readable
            for qid in range(qd.read_queue_nums)
        ]
        return sort_queues(out)

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
    topic: str
    offsets: tuple[TopicOffset, ...]
    put_tps: float | None = None


# ---------------------------------------------------------------------------------------------
# Consumers


@dataclass(frozen=True, slots=True)
class Subscription:
    """A subscription as a client sends it or the broker stores it (``SubscriptionData``)."""

    topic: str
    expression: str
    tags: tuple[str, ...] = ()
    codes: tuple[int, ...] = ()
    sub_version: int = 0
    expression_type: str = "TAG"

    @property
    def is_all(self) -> bool:
        # Only an exact "*" (or nothing) means everything; " * " or "TagA||*" is the literal tag *.
        return self.expression_type == "TAG" and self.expression in ("", SUB_ALL)

    def accepts(self, tag: str | None) -> bool:
        """Does a message with ``tag`` reach the application through this subscription?

        For TAG expressions this is the client's final check (``PullAPIWrapper`` keeps a message
        only when its tag string is in the subscription's tag set; ``*`` keeps everything). A
        SQL92 expression filters on properties, which a tag alone cannot decide: it is taken to
        pass, so nothing is ever counted as lost on a guess.
        """
        if self.expression_type != "TAG" or self.is_all:
            return True
        return tag is not None and tag in self.tags

    def accepts_code(self, tags_code: int) -> bool:
        """The broker's pull-time filter (``ExpressionMessageFilter``): tag hash codes, so two
        tags with the same hash both pass here and the client's :meth:`accepts` drops one."""
        if self.expression_type != "TAG" or self.is_all:
            return True
        return tags_code in self.codes

    def same_filter(self, other: Subscription) -> bool:
        """True when both select the same messages (tag sets, not spelling, for TAG)."""
        if self.expression_type != other.expression_type:
            return False
        if self.expression_type == "TAG":
            if self.is_all or other.is_all:
                return self.is_all and other.is_all
            return set(self.tags) == set(other.tags)
        return " ".join(self.expression.split()) == " ".join(other.expression.split())

    def as_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "expression": self.expression,
            "expression_type": self.expression_type,
            "tags": list(self.tags),
            "sub_version": self.sub_version,
        }


def parse_tag_expression(topic: str, expression: str, sub_version: int = 0) -> Subscription:
    """Build a TAG subscription like ``FilterAPI.buildSubscriptionData``: split on ``||``."""
    expr = expression if expression is not None else SUB_ALL
    if expr in ("", SUB_ALL):
        return Subscription(topic, SUB_ALL, (), (), sub_version)
    tags: list[str] = []
    for part in expr.split("||"):
        # Java's trim() strips every char <= U+0020, which is not Python's strip()
        tag = part.strip("".join(chr(c) for c in range(0x21)))
        if tag and tag not in tags:
            tags.append(tag)
    return Subscription(
        topic, expr, tuple(tags), tuple(java_string_hash(t) for t in tags), sub_version
    )


@dataclass(frozen=True, slots=True)
class ClientConnection:
    """One consumer client connected to a broker (an entry of ``connectionSet``)."""

    client_id: str
    client_addr: str
    language: str
    version: int

    @property
    def version_desc(self) -> str:
        return version_desc(self.version)

    @property
    def ip(self) -> str:
        """The IP part of the client id (what mqadmin shows as Client IP)."""
        return self.client_id.split("@", 1)[0]

    def as_dict(self) -> dict[str, Any]:
        return {
            "client_id": self.client_id,
            "client_addr": self.client_addr,
            "language": self.language,
            "version": self.version_desc,
        }


@dataclass(frozen=True, slots=True)
class ConsumerConnection:
    """A broker's view of a group (request 203): live channels and its stored subscriptions."""

    connections: tuple[ClientConnection, ...]
    subscriptions: Mapping[str, Subscription]
    consume_type: str | None
    message_model: str | None
    consume_from_where: str | None


@dataclass(frozen=True, slots=True)
class OffsetEntry:
    """One queue of ``ConsumeStats`` (request 208)."""

    broker_offset: int
    consumer_offset: int
    pull_offset: int | None
    last_timestamp: int


@dataclass(frozen=True, slots=True)
class ConsumeStats:
    offsets: Mapping[MessageQueue, OffsetEntry]
    consume_tps: float = 0.0


@dataclass(frozen=True, slots=True)
class ProcessQueueInfo:
    """A client's local state for one queue it holds (``mqTable`` of ConsumerRunningInfo)."""

    commit_offset: int = 0
    cached_msg_count: int = 0
    cached_msg_min_offset: int = 0
    cached_msg_max_offset: int = 0
    cached_msg_size_mib: int = 0
    locked: bool = False
    dropped: bool = False
    try_unlock_times: int = 0
    last_lock_timestamp: int = 0
    last_pull_timestamp: int = 0
    last_consume_timestamp: int = 0


@dataclass(frozen=True, slots=True)
class ConsumeStatus:
    """One topic's row of a client's ``statusTable`` (``ConsumeStatus``): rates over the last
    minute, and failed messages over the last hour, as the Java client's stats manager keeps them."""

    pull_rt: float = 0.0
    pull_tps: float = 0.0
    consume_rt: float = 0.0
    consume_ok_tps: float = 0.0
    consume_failed_tps: float = 0.0
    consume_failed_msgs: int = 0

    @property
    def failing(self) -> bool:
        return self.consume_failed_tps > 0 or self.consume_failed_msgs > 0


#: Strategy name (Java ``getName()``) → the simple name of the Java class that implements it.
STRATEGY_CLASSES: Mapping[str, str] = {
    "AVG": "AllocateMessageQueueAveragely",
    "AVG_BY_CIRCLE": "AllocateMessageQueueAveragelyByCircle",
    "CONSISTENT_HASH": "AllocateMessageQueueConsistentHash",
    "CONFIG": "AllocateMessageQueueByConfig",
    "MACHINE_ROOM": "AllocateMessageQueueByMachineRoom",
    "MACHINE_ROOM_NEARBY": "AllocateMachineRoomNearby",
}
_STRATEGY_BY_CLASS = {cls: name for name, cls in STRATEGY_CLASSES.items()}
#: what ``DefaultMQPushConsumer`` allocates with unless told otherwise
DEFAULT_STRATEGY = "AVG"


@dataclass(frozen=True, slots=True)
class ConsumerRunningInfo:
    """What one client reports about itself (request 307, relayed by the broker)."""

    client_id: str
    properties: Mapping[str, str]
    subscriptions: tuple[Subscription, ...]
    mq_table: Mapping[MessageQueue, ProcessQueueInfo]
    #: topic → the client's consume/pull rates for it (``statusTable``)
    status: Mapping[str, ConsumeStatus] = field(default_factory=dict)

    @property
    def consume_ok_tps(self) -> float:
        """Messages consumed successfully per second, every topic together."""
        return float(sum(s.consume_ok_tps for s in self.status.values()))

    @property
    def consume_failed_tps(self) -> float:
        """Messages whose listener failed (RECONSUME_LATER or an exception) per second."""
        return float(sum(s.consume_failed_tps for s in self.status.values()))

    @property
    def consume_failed_msgs(self) -> int:
        """Failed consumptions over the last hour, every topic together."""
        return sum(s.consume_failed_msgs for s in self.status.values())

    @property
    def consume_type(self) -> str | None:
        return self.properties.get("PROP_CONSUME_TYPE")

    @property
    def message_model(self) -> str | None:
        return self.properties.get("messageModel")

    @property
    def consume_orderly(self) -> bool:
        return self.properties.get("PROP_CONSUMEORDERLY", "false").lower() == "true"

    @property
    def start_timestamp(self) -> int:
        try:
            return int(self.properties.get("PROP_CONSUMER_START_TIMESTAMP", "0"))
        except ValueError:
            return 0

    @property
    def strategy(self) -> str | None:
        """Allocation strategy name (``AVG`` …) from the Java ``toString`` in the properties."""
        raw = self.properties.get("allocateMessageQueueStrategy")
        if not raw:
            return self.properties.get("allocateStrategy")
        cls = raw.split("@", 1)[0].rsplit(".", 1)[-1]
        return _STRATEGY_BY_CLASS.get(cls, raw if "." not in raw else cls)

    def user_subscriptions(self) -> tuple[Subscription, ...]:
        """The subscriptions the application asked for, without the automatic retry topic."""
        return tuple(s for s in self.subscriptions if not s.topic.startswith(RETRY_PREFIX))


@dataclass(frozen=True, slots=True)
class SubscriptionGroupConfig:
    """A broker's stored config of a consumer group (request 201/352)."""

    group_name: str
    consume_enable: bool = True
    consume_broadcast_enable: bool = True
    consume_message_orderly: bool = False
    retry_queue_nums: int = 1
    retry_max_times: int = 16
    broker_id: int = 0
    notify_consumer_ids_changed_enable: bool = True


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


# ---------------------------------------------------------------------------------------------
# The group view


@dataclass(frozen=True, slots=True)
class QueueProgress:
    """Progress of one queue for a group, with the client that reports holding it."""

    queue: MessageQueue
    broker_offset: int
    consumer_offset: int
    pull_offset: int | None
    last_timestamp: int
    owner: str | None = None
    #: where the offsets come from: ``consume_stats`` (208), ``offset_table`` (the broker's offset
    #: table and topic stats, read per queue because consume stats left the topic out while it
    #: was absent from the group's subscription table) or ``unknown`` (neither could be read)
    offsets_from: str = "consume_stats"

    @property
    def known(self) -> bool:
        """False when the offsets could not be read: the numbers of this row mean nothing."""
        return self.offsets_from != "unknown"

    @property
    def diff(self) -> int:
        """Lag in messages, as mqadmin's ``#Diff`` (broker offset − consumer offset); 0 for a row
        whose offsets are unknown, so use :attr:`lag` wherever "unknown" must not read as 0."""
        return self.broker_offset - self.consumer_offset

    @property
    def lag(self) -> int | None:
        """Lag in messages, or ``None`` when the offsets could not be read."""
        return self.diff if self.known else None

    @property
    def inflight(self) -> int:
        """Pulled but not committed (``pullOffset − consumerOffset``; 0 when unknown)."""
        if self.pull_offset is None:
            return 0
        return max(0, self.pull_offset - self.consumer_offset)

    @property
    def last_consumed_ms(self) -> int | None:
        """Store time of the last consumed message (None when nothing was consumed yet)."""
        return self.last_timestamp or None

    def as_dict(self) -> dict[str, Any]:
        known = self.known
        out: dict[str, Any] = {
            "topic": self.queue.topic,
            "broker": self.queue.broker_name,
            "queue_id": self.queue.queue_id,
            "broker_offset": self.broker_offset if known else None,
            "consumer_offset": self.consumer_offset if known else None,
            "pull_offset": self.pull_offset if known else None,
            "diff": self.lag,
            "inflight": self.inflight if known else None,
            "last_consumed_ts": self.last_timestamp or None,
            "owner": self.owner,
        }
        if self.offsets_from != "consume_stats":
            out["offsets_from"] = self.offsets_from
        return out


@dataclass(frozen=True, slots=True)
class SampledMessage:
    """One message read back by offset (tools group, nothing committed), for tag accounting."""

    queue: MessageQueue
    offset: int
    tag: str | None
    reconsume_times: int = 0


@dataclass(frozen=True, slots=True)
class TagSample:
    """The recent messages of one queue, read by offset: ``[from_offset, to_offset)``."""

    queue: MessageQueue
    from_offset: int
    to_offset: int
    messages: tuple[SampledMessage, ...] = ()

    def tag_counts(self, below: int | None = None, at_or_above: int | None = None) -> dict[str | None, int]:
        """Messages per tag, optionally only below / at or above an offset."""
        out: dict[str | None, int] = {}
        for m in self.messages:
            if below is not None and m.offset >= below:
                continue
            if at_or_above is not None and m.offset < at_or_above:
                continue
            out[m.tag] = out.get(m.tag, 0) + 1
        return out


@dataclass(frozen=True, slots=True)
class GroupView:
    """Everything rmqctl knows about one consumer group across all brokers.

    ``errors`` maps a broker name (or ``client:<id>``) to the error that made this view
    partial; an empty mapping means the view is complete.
    """

    group: str
    connections: tuple[ClientConnection, ...]
    broker_subscriptions: Mapping[str, Mapping[str, Subscription]]
    running_infos: Mapping[str, ConsumerRunningInfo]
    progress: tuple[QueueProgress, ...]
    consume_type: str | None = None
    message_model: str | None = None
    consume_from_where: str | None = None
    #: readable queues per subscribed topic, from the name server routes (for assignment checks)
    topic_queues: Mapping[str, tuple[MessageQueue, ...]] = field(default_factory=dict)
    #: queues of ``%DLQ%<group>`` with their offsets (empty when the group has no DLQ topic)
    dlq: tuple[TopicOffset, ...] = ()
    #: client ids that more than one connection uses on one broker → those client addresses
    duplicate_clients: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: wall-clock time the view was sampled, epoch milliseconds
    sampled_at: int = 0
    errors: Mapping[str, RmqctlError] = field(default_factory=dict)
    #: data this source cannot supply (a field such as ``pull_offset`` → why); shown as
    #: "unavailable", never as zero, and the doctor skips the checks that need it
    unavailable: Mapping[str, str] = field(default_factory=dict)
    #: recent messages per queue of topics whose clients subscribe different tags (read back by
    #: offset, nothing committed); empty when not sampled (``--no-sample``) or not needed
    tag_samples: Mapping[MessageQueue, TagSample] = field(default_factory=dict)
    #: holdings derived once per view (a dashboard and the doctor ask many times); not part of
    #: the view's value: excluded from comparison, and ``replace`` starts it afresh
    _derived: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def online(self) -> bool:
        return bool(self.connections)

    @property
    def client_ids(self) -> tuple[str, ...]:
        """Client ids, sorted; a duplicated id appears once (see ``duplicate_clients``)."""
        return tuple(sorted({c.client_id for c in self.connections}))

    def client_channels(self) -> list[str]:
        """The group's client ids as the broker lists them to a rebalancing client: one per
        connection, so a duplicated id appears once per process (Java's ``cidAll``)."""
        out = []
        for cid in self.client_ids:
            out.extend([cid] * max(1, len(self.duplicate_clients.get(cid, ()))))
        return out

    @property
    def dlq_messages(self) -> int:
        return sum(max(0, o.max_offset - o.min_offset) for o in self.dlq)

    @property
    def client_subscriptions(self) -> dict[str, tuple[Subscription, ...]]:
        """Each client's own subscriptions (from its running info), retry topic excluded."""
        return {
            cid: info.user_subscriptions() for cid, info in sorted(self.running_infos.items())
        }

    @property
    def total_diff(self) -> int:
        return sum(p.diff for p in self.progress)

    @property
    def total_inflight(self) -> int:
        return sum(p.inflight for p in self.progress)

    @property
    def strategy(self) -> str | None:
        """The allocation strategy every client reports, or ``None`` when they differ or none
        reported one."""
        names = {info.strategy for info in self.running_infos.values() if info.strategy}
        return names.pop() if len(names) == 1 else None

    def _holdings(self) -> dict[str, tuple[MessageQueue, ...]]:
        held: dict[str, tuple[MessageQueue, ...]] | None = self._derived.get("holdings")
        if held is None:
            out: dict[str, list[MessageQueue]] = {cid: [] for cid in self.client_ids}
            for cid, info in self.running_infos.items():
                out.setdefault(cid, []).extend(mq for mq, pq in info.mq_table.items() if not pq.dropped)
            held = self._derived["holdings"] = {cid: tuple(sort_queues(qs)) for cid, qs in sorted(out.items())}
        return held

    def _owners(self) -> dict[MessageQueue, tuple[str, ...]]:
        owners: dict[MessageQueue, tuple[str, ...]] | None = self._derived.get("owners")
        if owners is None:
            out: dict[MessageQueue, list[str]] = {}
            for cid, queues in self._holdings().items():
                for mq in queues:
                    out.setdefault(mq, []).append(cid)
            owners = self._derived["owners"] = {mq: tuple(cids) for mq, cids in out.items()}
        return owners

    def assignments(self) -> dict[str, list[MessageQueue]]:
        """Client id → queues it reports holding (from running infos), sorted Java-style."""
        return {cid: list(queues) for cid, queues in self._holdings().items()}

    def owners(self) -> dict[MessageQueue, list[str]]:
        """Queue → every client that reports holding it (two or more is itself a problem)."""
        return {mq: list(cids) for mq, cids in self._owners().items()}

    def held_twice(self) -> dict[MessageQueue, list[str]]:
        """Queue → its holders, for queues that two or more clients report holding at once.

        Empty for a BROADCASTING group, where every client holds every queue by design."""
        if (self.message_model or "").upper() == "BROADCASTING":
            return {}
        owners = self._owners()
        return {mq: list(owners[mq]) for mq in sort_queues(mq for mq, cids in owners.items() if len(cids) > 1)}

    def known_queues(self) -> list[MessageQueue]:
        """Every queue the group should be consuming: progress rows plus route queues."""
        seen = {p.queue for p in self.progress}
        for queues in self.topic_queues.values():
            seen.update(queues)
        return sort_queues(seen)

    @property
    def failed_brokers(self) -> dict[str, RmqctlError]:
        """Brokers whose reads failed for this view (``errors`` minus client, route and DLQ keys)."""
        return {name: err for name, err in sorted(self.errors.items()) if ":" not in name}

    def subscribes(self, client_id: str, topic: str) -> bool | None:
        """Does ``client_id`` subscribe ``topic`` (its retry topic included), by its own running
        info; None when that client's running info is not known."""
        info = self.running_infos.get(client_id)
        if info is None:
            return None
        return any(s.topic == topic for s in info.subscriptions)

    def unassigned(self) -> list[MessageQueue]:
        """Queues of the group's topics that no online client reports holding."""
        owners = self._owners()
        return [mq for mq in self.known_queues() if mq not in owners]

    @property
    def unknown_lag_queues(self) -> list[MessageQueue]:
        """Queues whose offsets could not be read (their lag is unknown, not 0)."""
        return [p.queue for p in self.progress if not p.known]

    def rebalance_in_progress(self) -> dict[str, list[MessageQueue]] | None:
        """Queues held by two clients (``shared``) or by none (``unheld``) in topics every client
        subscribes: with a strategy that always covers every queue once (AVG, AVG_BY_CIRCLE,
        CONSISTENT_HASH) and unique client ids, that only happens while clients are still moving
        to a new allocation after a membership change. ``None`` when the holdings look settled."""
        if not self.running_infos or self.duplicate_clients or len(self.running_infos) < len(self.client_ids):
            return None
        if self.message_model == "BROADCASTING" or any(
            i.message_model == "BROADCASTING" or i.consume_orderly for i in self.running_infos.values()
        ):
            return None
        if self.strategy not in ("AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH"):
            return None
        subs = self.client_subscriptions
        common = set.intersection(*({s.topic for s in ss} for ss in subs.values())) if subs else set()
        common.add(RETRY_PREFIX + self.group)
        owners = self._owners()
        shared = sort_queues(mq for mq, holders in owners.items() if len(holders) > 1 and mq.topic in common)
        # A group that just started: the broker creates %RETRY%<group> on the first heartbeat and
        # the clients allocate it only after their next route poll (up to 30 s), so until an
        # offset exists for it nobody holding it is not a rebalance.
        with_offsets = {p.queue for p in self.progress}
        unheld = sort_queues(mq for t in common for mq in self.topic_queues.get(t, ()) if mq not in owners
                            and (mq in with_offsets or not mq.topic.startswith(RETRY_PREFIX)))
        if not shared and not unheld:
            return None
        return {"shared": shared, "unheld": unheld}

    def unpullable(self) -> dict[MessageQueue, str]:
        """Held queues whose pulls fail now: the queue's broker keeps no subscription for its topic
        in the group's table (push consumers then get SUBSCRIPTION_NOT_EXIST, code 24, on every
        pull) while messages wait or the lag is unknown. Queue → the reason, in plain words."""
        out: dict[MessageQueue, str] = {}
        progress = {p.queue: p for p in self.progress}
        for mq in self._owners():
            table = self.broker_subscriptions.get(mq.broker_name)
            if table is None or mq.topic in table or mq.topic.startswith(RETRY_PREFIX):
                continue
            row = progress.get(mq)
            lag = row.lag if row is not None else None
            if lag is None or lag > 0:
                out[mq] = (f"{mq.topic} is missing from {mq.broker_name}'s subscription table of the "
                           f"group: pulls fail with 'the consumer's subscription not exist' (24)")
        return dict(sorted(out.items()))


@dataclass(frozen=True, slots=True)
class GroupSummary:
    """One line of ``rmqctl group list``."""

    group: str
    clients: int
    consume_type: str | None
    message_model: str | None
    version: str | None
    total_diff: int
    consume_tps: float = 0.0
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Finding:
    """A doctor verdict: what is wrong, what it does to messages, and how to fix it."""

    code: str
    severity: Severity
    group: str
    title: str
    detail: str
    evidence: Mapping[str, Any]
    fix: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "severity": self.severity,
            "group": self.group,
            "title": self.title,
            "detail": self.detail,
            "evidence": dict(self.evidence),
            "fix": self.fix,
        }


def queues_as_dicts(queues: Iterable[MessageQueue]) -> list[dict[str, Any]]:
    return [mq.as_dict() for mq in queues]
