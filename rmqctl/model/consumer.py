"""Consumer-side types: subscriptions, client connections, consume stats, running info.

What a broker stores about a group and what each client reports about itself. Frozen dataclasses,
no I/O; must not import anything from rmqctl outside this package.
"""

from __future__ import annotations

import functools
import json
import typing as _typing
from collections.abc import Mapping
from dataclasses import field

from rmqctl.model.cluster import MessageQueue
from rmqctl.model.java import java_string_hash, version_desc
from rmqctl.model.names import RETRY_PREFIX, SUB_ALL
from rmqctl.records import dataclass

if _typing.TYPE_CHECKING:
    from rmqctl.model.sql92 import Selector

#: ``ExpressionType.SQL92``
SQL92 = "SQL92"


@functools.lru_cache(maxsize=256)
def _selector(expression: str) -> Selector | None:
    from rmqctl.model.sql92 import Sql92Error, compile_sql92  # here: most groups subscribe by tag

    try:
        return compile_sql92(expression)
    except Sql92Error:
        return None


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

    @property
    def is_sql92(self) -> bool:
        return self.expression_type == SQL92

    @property
    def selector(self) -> Selector | None:
        """The compiled SQL92 expression (None for TAG, or when the broker would refuse it)."""
        return _selector(self.expression) if self.is_sql92 else None

    def accepts(self, tag: str | None) -> bool:
        """Does the client keep a message with ``tag`` after the pull?

        This is the client's final check (``PullAPIWrapper`` keeps a message only when its tag
        string is in the subscription's tag set; ``*`` keeps everything). A SQL92 subscription
        has no tag set, so the client keeps whatever the broker sent, even messages its own
        expression excludes (see :meth:`wants`).
        """
        if self.expression_type != "TAG" or self.is_all:
            return True
        return tag is not None and tag in self.tags

    def broker_passes(self, tag: str | None, properties: Mapping[str, str] | None) -> bool | None:
        """Does the broker's pull filter let a message through when it holds this subscription?

        TAG: the tag's hash code (an untagged message has code 0). SQL92: the expression over the
        message's properties (``TAGS`` among them), TRUE only; None when the properties are not
        known or the expression is one the broker refuses.
        """
        if not self.is_sql92:
            return self.accepts_code(java_string_hash(tag) if tag else 0)
        selector = self.selector
        if selector is None or properties is None:
            return None
        return selector.matches(properties)

    def wants(self, tag: str | None, properties: Mapping[str, str] | None) -> bool | None:
        """Did the application ask for this message? TAG: its tag is in the set; SQL92: the
        expression is TRUE over its properties (None when they are not known)."""
        if not self.is_sql92:
            return self.accepts(tag)
        return self.broker_passes(tag, properties)

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


def sql92_subscription(topic: str, expression: str, sub_version: int = 0) -> Subscription:
    """A SQL92 subscription as ``FilterAPI.build`` makes it: the expression, no tag set."""
    return Subscription(topic, expression, (), (), sub_version, SQL92)


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
    #: the 5.x proxy (its remoting address) that lists this client, ``None`` when a broker does
    proxy: str | None = None
    #: ``remoting`` or ``grpc``; ``None`` when it cannot be told (see :func:`client_sdk`)
    sdk: str | None = None

    @property
    def version_desc(self) -> str:
        return version_desc(self.version)

    @property
    def sdk_version(self) -> str | None:
        """The client's own release, ``None`` for a gRPC client: a proxy lists every gRPC client
        with the proxy's own version, the SDK's is not on the remoting protocol."""
        return None if self.sdk == "grpc" else self.version_desc

    @property
    def ip(self) -> str:
        """The IP part of the client id (what mqadmin shows as Client IP)."""
        return self.client_id.split("@", 1)[0]


def client_sdk(client_id: str, *, via_proxy: bool) -> str | None:
    """Which SDK a client speaks, from what a broker or proxy lists: a broker holds only remoting
    channels; a proxy holds both. The gRPC SDKs (rocketmq-clients: Java, Go, C++, C#, Python,
    Node.js) name a client ``host@pid@index@sequence``, the remoting clients ``ip@instance``
    (``@unit`` appended at most), so a proxy's client with the four-part name is a gRPC one."""
    if not via_proxy:
        return "remoting"
    parts = client_id.split("@")
    if len(parts) == 4 and parts[1].isdigit() and parts[2].isdigit():
        return "grpc"
    return "remoting"


def announced_proxy(body: bytes) -> str | None:
    """The remoting address (``host:port``) of the proxy that sent one heartbeat-sync message: its
    body (``HeartbeatSyncerData``, JSON) names the proxy as ``localProxyId``, its serve address,
    remoting port and gRPC port joined by ``%``. ``None`` when the body says no such thing."""
    try:
        data = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    proxy_id = data.get("localProxyId") if isinstance(data, dict) else None
    if not isinstance(proxy_id, str):
        return None
    parts = proxy_id.split("%")
    if len(parts) != 3 or not parts[0] or not parts[1].isdigit():
        return None
    return f"{parts[0]}:{parts[1]}"


@dataclass(frozen=True, slots=True)
class ProxyClients:
    """What one 5.x proxy lists for a group (GET_CONSUMER_CONNECTION_LIST on its remoting port).

    gRPC clients are invisible to the brokers (the broker answers "not online" for their group):
    only the proxies that hold their streams list them, and proxies share what they hold, so each
    proxy of a cluster lists the clients of every other."""

    #: the proxy's remoting address (``host:port``)
    address: str
    #: how rmqctl knew it: ``named`` (``--proxy`` or the context), ``announced`` (the proxy named
    #: its address and remoting port in its heartbeat-sync messages) or ``brokers`` (a broker lists
    #: the proxy's host among the clients of the heartbeat-sync group; its port is a guess)
    found_by: str
    #: what it lists; ``None`` when it holds no client of the group or could not be read
    connection: ConsumerConnection | None = None
    #: why it could not be read, when it could not
    error: str | None = None


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
    """A group's offsets per queue as one broker reports them, and its consume rate (messages/s)."""

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


#: the delays of a CUSTOMIZED retry policy the broker uses when the group's config names none
#: (the old delay levels 3 to 18: 10 s up to 2 h; ``CustomizedRetryPolicy``), milliseconds
DEFAULT_RETRY_DELAYS_MS = (1_000, 5_000, 10_000, 30_000, *(m * 60_000 for m in (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 20, 30)),
                           3_600_000, 7_200_000)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """A 5.x group's retry policy (``groupRetryPolicy`` of its config): how long a message the
    group failed waits before it is delivered again. POP consumers (every gRPC client) follow it;
    the proxy also tells each gRPC client the group's maximum of deliveries
    (``retryMaxTimes + 1``)."""

    #: ``CUSTOMIZED`` (a table of delays, the default) or ``EXPONENTIAL``
    kind: str = "CUSTOMIZED"
    #: CUSTOMIZED: the delay table (``next``), milliseconds; ``None`` when the config names none
    #: (the broker then uses :data:`DEFAULT_RETRY_DELAYS_MS`)
    delays_ms: tuple[int, ...] | None = None
    #: EXPONENTIAL: first delay, longest delay and factor; ``None`` for the broker's default
    #: (5 s, 2 h, 2)
    initial_ms: int | None = None
    max_ms: int | None = None
    multiplier: int | None = None

    def delay_ms(self, reconsume_times: int) -> int:
        """The wait before the delivery that follows ``reconsume_times`` failures, as the broker
        computes it (``nextDelayDuration``): CUSTOMIZED reads its table two places on (where
        the old delay levels started), capped at its last entry; EXPONENTIAL multiplies, capped."""
        times = max(0, reconsume_times)
        if self.kind == "EXPONENTIAL":
            initial = 5_000 if self.initial_ms is None else self.initial_ms
            longest = 7_200_000 if self.max_ms is None else self.max_ms
            factor = 2 if self.multiplier is None else self.multiplier
            return int(min(longest, initial * factor ** min(times, 32)))
        table = self.delays_ms or DEFAULT_RETRY_DELAYS_MS
        return table[min(times + 2, len(table) - 1)]

    def describe(self) -> str:
        """In words: ``customized (10s, 30s, 1m … 2h)`` or ``exponential (5s ×2 up to 2h)``."""
        if self.kind == "EXPONENTIAL":
            return (f"exponential ({_duration(self.delay_ms(0))} ×{self.multiplier or 2} up to "
                    f"{_duration(7_200_000 if self.max_ms is None else self.max_ms)})")
        table = self.delays_ms or DEFAULT_RETRY_DELAYS_MS
        used = [_duration(d) for d in table[2:]] or [_duration(table[-1])]
        shown = ", ".join(used) if len(used) <= 4 else f"{', '.join(used[:3])} … {used[-1]}"
        return f"{self.kind.lower()} ({shown})"


def _duration(ms: int) -> str:
    for unit, size in (("h", 3_600_000), ("m", 60_000), ("s", 1_000)):
        if ms >= size and ms % size == 0:
            return f"{ms // size}{unit}"
    return f"{ms}ms"


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
    #: the 5.x retry policy; ``None`` when the config has none (a 4.x broker)
    retry_policy: RetryPolicy | None = RetryPolicy()
    #: 5.5: the LITE topic this group consumes the lite topics of (its ``lite.bind.topic``
    #: attribute); ``None`` for every other group
    lite_bind_topic: str | None = None

    @property
    def max_deliveries(self) -> int:
        """How often a POP consumer (every gRPC client) gets a message before it goes to the
        dead-letter queue: the first delivery and ``retryMaxTimes`` more (the proxy gives each
        gRPC client ``retryMaxTimes + 1`` as its maximum of attempts)."""
        return self.retry_max_times + 1
