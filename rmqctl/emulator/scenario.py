"""Emulator scenarios: the TOML contract users write, validated into frozen specs.

A scenario declares brokers, topics, consumer groups, simulated consumers (with their own
subscriptions, strategy, message model, start/stop times) and produce steps, all timed in
seconds of scenario time. The keys below are a public contract::

    name = "tag-overwrite"           # default: the file name without .toml
    description = "one line"
    duration = 60                    # seconds the scenario runs (emulator run / --emulator)

    [[brokers]]                      # default: one broker "broker-a"
    name = "broker-a"
    cluster = "DefaultCluster"       # optional
    long_polling = true              # optional; false: empty pulls are held 1 s (short polling)
    server_side_reset = true         # optional; false: useServerSideResetOffset off (resets go through the clients)
    property_filter = true           # optional; false: enablePropertyFilter off (CHECK_CLIENT_CONFIG
                                     # refuses a real client's SQL92 subscription)

    [[topics]]
    name = "TopicTest2"
    queues = 4                       # per broker; or read_queues / write_queues
    perm = 6                         # optional (2 = W, 4 = R)
    brokers = ["broker-a"]           # optional, default every broker
    message_type = "FIFO"            # optional: the config's message.type (NORMAL, FIFO, DELAY,
                                     # TRANSACTION, LITE, PRIORITY); topic list shows it

    [[groups]]                       # optional subscription-group configs
    name = "test-consumer"
    retry_queue_nums = 1
    notify_consumer_ids_changed_enable = true
    pop_topics = ["TopicTest2"]      # optional: topics the group consumes by POP (5.x, gRPC
                                     # clients); each gets the group's POP retry topic
    pop_retry_v2 = false             # true: %RETRY%group+topic (enableRetryTopicV2), else group_topic

    [[consumers]]
    group = "test-consumer"
    subscriptions = { TopicTest2 = "tag1" }
    # sql_subscriptions = { TopicTest2 = "p_a > 5" }  # SQL92 instead: filtered on properties
    client_id = "10.0.0.1@consumer1" # optional (default: Java's ip@pid#nanotime form)
    start = 0.0                      # optional
    stop = 30.0                      # optional: leaves the group cleanly (the others rebalance)
    stall = 20.0                     # optional: the listener hangs for good (queues kept, no commits)
    strategy = "AVG"                 # any Java getName(); strategy_options = {...} if it needs some
    message_model = "CLUSTERING"     # or BROADCASTING
    consume_from_where = "CONSUME_FROM_LAST_OFFSET"
    sub_version = 1704067200000      # optional explicit initial subVersion (ms)
    post_subscription = false        # postSubscriptionWhenPull
    count = 1                        # N identical clients ("{n}" in client_id numbers them)
    consume_ms = 0                   # time the listener takes per message
    consume_result = "SUCCESS"       # or RECONSUME_LATER: every message fails and is retried
    orderly = false                  # MessageListenerOrderly: queues locked on the broker (renewed
                                     # every 20 s, unlocked at stop), consumed only while locked
    suspend_queues = [0]             # orderly only: these queue ids answer SUSPEND_CURRENT_QUEUE_A_MOMENT
    pop = false                      # a POP consumer (5.x, CONSUME_POP): pops, ACKs, no queue of its own
    invisible_s = 30                 # POP: how long a popped message stays invisible before it comes back
    # fail_tags = ["bad"]            # POP only: the listener fails these (back after the retry policy's wait)
    # no_ack_tags = ["slow"]         # POP only: never ACKed (back after the invisible time)
    ip = "10.0.0.7"                  # optional, used to build the default client id
    trace = false                    # enableMsgTrace: each consumption recorded in RMQ_SYS_TRACE_TOPIC

    [[produce]]
    at = 5.0
    topic = "TopicTest2"
    tag = "tag1"                     # optional: no tag means tags code 0
    count = 10
    queue = 2                        # optional: fixed queue (default round robin over writable queues)
    broker = "broker-a"              # optional, with queue when several brokers serve the topic
    interval = 0.0                   # optional seconds between messages
    properties = { p_a = ["1", "9"] }  # optional: user properties; message k takes value k % len

Errors raise :class:`~rmqctl.errors.ConfigError` naming the file, the line (found in the TOML
text) and the field. Built-in scenarios live in ``scenarios/*.toml``; ``scale`` and
``scale:GROUPSxQUEUESxBROKERSxCLIENTS`` generate large clusters for scale tests.

Must not import the CLI, textual or pyspark.
"""

from __future__ import annotations

import difflib
import math
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from rmqctl import errors
from rmqctl.emulator.store import MAX_QUEUES_PER_TOPIC
from rmqctl.model import Sql92Error, compile_sql92
from rmqctl.rebalance.strategies import AllocationError, get_strategy

DEFAULT_CLUSTER = "DefaultCluster"
MESSAGE_MODELS = ("CLUSTERING", "BROADCASTING")
#: ``ConsumeFromWhere`` names a push consumer may still set (the deprecated ones included).
CONSUME_FROM_WHERE = (
    "CONSUME_FROM_LAST_OFFSET",
    "CONSUME_FROM_FIRST_OFFSET",
    "CONSUME_FROM_TIMESTAMP",
    "CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST",
    "CONSUME_FROM_MIN_OFFSET",
    "CONSUME_FROM_MAX_OFFSET",
)
SCALE_PREFIX = "scale"
#: what a simulated listener may return (``ConsumeConcurrentlyStatus``)
CONSUME_RESULTS = ("SUCCESS", "RECONSUME_LATER")


@dataclass(frozen=True, slots=True)
class BrokerSpec:
    name: str
    cluster: str = DEFAULT_CLUSTER
    #: ``longPollingEnable``: false holds an empty pull only ``shortPollingTimeMills`` (1 s)
    long_polling: bool = True
    #: ``useServerSideResetOffset`` (5.2.0+ default true): the broker applies offset resets itself
    server_side_reset: bool = True
    #: ``enablePropertyFilter``: SQL92 subscriptions accepted and filtered on message properties
    property_filter: bool = True


@dataclass(frozen=True, slots=True)
class TopicSpec:
    name: str
    read_queues: int
    write_queues: int
    perm: int = 6
    #: brokers serving the topic; empty means every broker
    brokers: tuple[str, ...] = ()
    order: bool = False
    #: the topic config's ``message.type`` attribute (5.x), ``None`` for none (read as NORMAL)
    message_type: str | None = None


@dataclass(frozen=True, slots=True)
class GroupSpec:
    """A subscription-group config (what ``SubscriptionGroupConfig`` holds on each broker)."""

    name: str
    retry_queue_nums: int = 1
    retry_max_times: int = 16
    consume_enable: bool = True
    consume_broadcast_enable: bool = True
    consume_message_orderly: bool = False
    notify_consumer_ids_changed_enable: bool = True
    #: topics the group consumes by POP: the broker keeps one retry topic per (group, topic)
    pop_topics: tuple[str, ...] = ()
    #: the broker's ``enableRetryTopicV2``: POP retry topics read ``%RETRY%group+topic``
    pop_retry_v2: bool = False


@dataclass(frozen=True, slots=True)
class ConsumerSpec:
    """One simulated push consumer (a ``DefaultMQPushConsumer`` in its own process)."""

    group: str
    #: (topic, tag expression) in declaration order
    subscriptions: tuple[tuple[str, str], ...]
    client_id: str | None = None
    start: float = 0.0
    stop: float | None = None
    strategy: str = "AVG"
    strategy_options: tuple[tuple[str, Any], ...] = ()
    message_model: str = "CLUSTERING"
    consume_from_where: str = "CONSUME_FROM_LAST_OFFSET"
    sub_version: int | None = None
    post_subscription: bool = False
    ip: str | None = None
    instance_name: str | None = None
    consume_ms: int = 0
    consume_threads: int = 20
    #: scenario time at which the listener hangs for good: the client keeps its queues and its
    #: heartbeats, pulls until flow control stops it, and consumes and commits nothing more
    stall: float | None = None
    #: what the listener returns for every message: SUCCESS or RECONSUME_LATER
    consume_result: str = "SUCCESS"
    #: topics of :attr:`subscriptions` whose expression is SQL92 (``MessageSelector.bySql``)
    sql_topics: frozenset[str] = frozenset()
    #: a ``MessageListenerOrderly``: each held queue is locked on its broker and consumed only while locked
    orderly: bool = False
    #: orderly only: ids of the queues whose every message the listener answers with
    #: SUSPEND_CURRENT_QUEUE_A_MOMENT (retried locally every second, forever)
    suspend_queues: frozenset[int] = frozenset()
    #: message tracing on (``enableMsgTrace``): each consumption is recorded in the trace topic
    trace: bool = False
    #: a POP consumer (:class:`~rmqctl.emulator.pop.SimulatedPopConsumer`): it registers as
    #: CONSUME_POP, holds no queue, pops from every queue and ACKs what it consumed
    pop: bool = False
    #: POP: seconds a popped message stays invisible; not ACKed by then, it is delivered again
    invisible_s: float = 30.0
    #: POP: tags whose messages the listener fails (they come back after the retry policy's wait)
    fail_tags: frozenset[str] = frozenset()
    #: POP: tags whose messages are never ACKed (they come back after the invisible time)
    no_ack_tags: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class ProduceSpec:
    at: float
    topic: str
    count: int = 1
    tag: str | None = None
    queue: int | None = None
    broker: str | None = None
    interval: float = 0.0
    producer: str = "default"
    keys: str | None = None
    #: user property name → the values the messages take in turn
    properties: tuple[tuple[str, tuple[str, ...]], ...] = ()


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    description: str
    duration: float
    brokers: tuple[BrokerSpec, ...]
    topics: tuple[TopicSpec, ...]
    groups: tuple[GroupSpec, ...] = ()
    consumers: tuple[ConsumerSpec, ...] = ()
    produce: tuple[ProduceSpec, ...] = ()
    #: where it came from: a file path, ``built-in NAME`` or ``generated NAME``
    source: str = ""
    #: the TOML text (built-ins and files), for ``emulator show``
    text: str = field(default="", compare=False, repr=False)

    def topic(self, name: str) -> TopicSpec | None:
        return next((t for t in self.topics if t.name == name), None)

    def topic_brokers(self, topic: TopicSpec) -> tuple[str, ...]:
        return topic.brokers or tuple(b.name for b in self.brokers)


# ---------------------------------------------------------------------------------------------
# Built-ins


def _builtin_dir() -> Any:
    return resources.files("rmqctl.emulator") / "scenarios"


#: former built-in names, still accepted: they read like the doctor's finding codes
#: (IDLE_CONSUMERS, UNEVEN_ALLOCATION), so the scenarios were renamed
RENAMED = {"idle-consumers": "two-consumers-one-queue", "uneven-allocation": "avg-contiguous-blocks"}


def builtin_names() -> list[str]:
    """Names of the shipped scenarios, sorted."""
    return sorted(
        p.name[: -len(".toml")] for p in _builtin_dir().iterdir() if p.name.endswith(".toml")
    )


def builtin_scenarios() -> list[tuple[str, str]]:
    """(name, one-line description) of every built-in, plus the scale generator."""
    out = [(name, load_scenario(name).description) for name in builtin_names()]
    out.append(
        (
            f"{SCALE_PREFIX}[:GxQxBxC]",
            ("generated: G groups x Q queues per broker x B brokers x C clients "
             "(default scale:50x8x2x120)"),
        )
    )
    return out


def load_scenario(name_or_path: str | Path) -> Scenario:
    """A built-in by name, a generated ``scale:…`` cluster, or a TOML file path."""
    text = str(name_or_path)
    if text == SCALE_PREFIX or text.startswith(SCALE_PREFIX + ":"):
        return _scale_from_name(text)
    if isinstance(name_or_path, str) and "/" not in text and not text.endswith(".toml"):
        text = RENAMED.get(text, text)
        resource = _builtin_dir() / f"{text}.toml"
        if resource.is_file():
            return parse_scenario(resource.read_text(encoding="utf-8"), f"built-in {text}", text)
        raise errors.ConfigError(
            f"unknown scenario {text!r}; built-ins: {', '.join(builtin_names())}, {SCALE_PREFIX}",
            hint="or give the path of a scenario .toml file; list them with: rmqctl emulator scenarios",
        )
    path = Path(name_or_path)
    try:
        content = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise errors.ConfigError(
            f"scenario file {str(path)!r} not found",
            hint=f"built-ins: {', '.join(builtin_names())}",
        ) from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise errors.ConfigError(f"cannot read scenario file {str(path)!r}: {exc}") from exc
    return parse_scenario(content, str(path), path.stem)


# ---------------------------------------------------------------------------------------------
# Parsing and validation


_HEADER = re.compile(r"^\s*\[")
_ARRAY_HEADER = re.compile(r"^\s*\[\[\s*([A-Za-z0-9_\-\"' .]+?)\s*\]\]")
_TOML_POS = re.compile(r"\(at line (\d+), column (\d+)\)")


class _Locator:
    """Finds the line of a field in the TOML text (tomllib keeps no positions)."""

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()

    def _key_line(self, key: str, start: int, end: int) -> int | None:
        pattern = re.compile(r"^\s*[\"']?" + re.escape(key) + r"[\"']?\s*[=.]")
        for i in range(start, end):
            if pattern.match(self.lines[i]):
                return i + 1
        return None

    def _next_header(self, start: int) -> int:
        for i in range(start, len(self.lines)):
            if _HEADER.match(self.lines[i]):
                return i
        return len(self.lines)

    def line_of(self, path: Sequence[str | int]) -> int | None:
        if not path:
            return None
        if len(path) == 1 or not isinstance(path[1], int):
            return self._key_line(str(path[0]), 0, self._next_header(0))
        table, index = str(path[0]), int(path[1])
        seen = -1
        for i, line in enumerate(self.lines):
            match = _ARRAY_HEADER.match(line)
            if match and match.group(1).strip("\"' ") == table:
                seen += 1
                if seen == index:
                    if len(path) == 2:
                        return i + 1
                    found = self._key_line(str(path[2]), i + 1, self._next_header(i + 1))
                    return found if found is not None else i + 1
        # an inline array (consumers = [{…}]): point at its key
        return self._key_line(table, 0, len(self.lines))


def _field_name(path: Sequence[str | int]) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + part
    return out


class _Checker:
    def __init__(self, text: str, source: str) -> None:
        self.source = source
        self.locator = _Locator(text)

    def fail(self, path: Sequence[str | int], message: str, hint: str | None = None) -> errors.ConfigError:
        line = self.locator.line_of(path)
        where = f"{self.source}, line {line}" if line else self.source
        return errors.ConfigError(f"{where}: {_field_name(path)}: {message}", hint=hint)

    def keys(self, table: Mapping[str, Any], path: Sequence[str | int], allowed: Sequence[str]) -> None:
        for key in table:
            if key not in allowed:
                close = difflib.get_close_matches(key, allowed, n=1)
                hint = f"did you mean {close[0]!r}?" if close else "known keys: " + ", ".join(allowed)
                raise self.fail([*path, key], "unknown key", hint)

    def string(self, value: Any, path: Sequence[str | int], *, empty: bool = False) -> str:
        if not isinstance(value, str):
            raise self.fail(path, f"expected a string, got {_kind(value)}")
        if not empty and not value.strip():
            raise self.fail(path, "must not be empty")
        return value

    def number(self, value: Any, path: Sequence[str | int], *, minimum: float = 0.0) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(path, f"expected a number of seconds, got {_kind(value)}")
        try:
            seconds = float(value)
        except OverflowError:  # a TOML integer beyond any float
            seconds = math.inf
        if not math.isfinite(seconds):
            raise self.fail(path, f"must be a finite number of seconds, got {str(value)[:40]}")
        if seconds < minimum:
            raise self.fail(path, f"must be >= {minimum:g}, got {value}")
        return seconds

    def integer(self, value: Any, path: Sequence[str | int], *, minimum: int = 0, maximum: int | None = None) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(path, f"expected an integer, got {_kind(value)}")
        if value < minimum or (maximum is not None and value > maximum):
            bound = f"{minimum}..{maximum}" if maximum is not None else f">= {minimum}"
            raise self.fail(path, f"must be {bound}, got {value}")
        return value

    def boolean(self, value: Any, path: Sequence[str | int]) -> bool:
        if not isinstance(value, bool):
            raise self.fail(path, f"expected true or false, got {_kind(value)}")
        return value

    def table(self, value: Any, path: Sequence[str | int]) -> Mapping[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(path, f"expected a table, got {_kind(value)}")
        return value

    def tables(self, doc: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
        value = doc.get(key, [])
        if not isinstance(value, list):
            raise self.fail([key], f"expected an array of tables ([[{key}]]), got {_kind(value)}")
        for i, item in enumerate(value):
            self.table(item, [key, i])
        return value

    def choice(self, value: Any, path: Sequence[str | int], choices: Sequence[str]) -> str:
        text = self.string(value, path)
        if text not in choices:
            raise self.fail(path, f"{text!r} is not one of {', '.join(choices)}")
        return text


def _kind(value: Any) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
            list: "an array", dict: "a table"}.get(type(value), type(value).__name__)


_TOP_KEYS = ("name", "description", "duration", "brokers", "topics", "groups", "consumers", "produce")
_BROKER_KEYS = ("name", "cluster", "long_polling", "server_side_reset", "property_filter")
_TOPIC_KEYS = ("name", "queues", "read_queues", "write_queues", "perm", "brokers", "order", "message_type")
#: the values of a 5.x topic's ``message.type`` (5.5 adds LITE and PRIORITY)
MESSAGE_TYPES = ("NORMAL", "FIFO", "DELAY", "TRANSACTION", "LITE", "PRIORITY")
_GROUP_KEYS = ("name", "retry_queue_nums", "retry_max_times", "consume_enable",
               "consume_broadcast_enable", "consume_message_orderly",
               "notify_consumer_ids_changed_enable", "pop_topics", "pop_retry_v2")
_CONSUMER_KEYS = ("group", "subscriptions", "sql_subscriptions", "client_id", "start", "stop", "strategy",
                  "strategy_options", "message_model", "consume_from_where", "sub_version",
                  "post_subscription", "ip", "instance_name", "count", "consume_ms",
                  "consume_threads", "stall", "consume_result", "orderly", "suspend_queues", "trace",
                  "pop", "invisible_s", "fail_tags", "no_ack_tags")
_PRODUCE_KEYS = ("at", "topic", "tag", "count", "queue", "broker", "interval", "producer", "keys",
                 "properties")


def parse_scenario(text: str, source: str = "<scenario>", default_name: str = "scenario") -> Scenario:
    """Validate a scenario's TOML text; ``source`` names it in error messages."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        match = _TOML_POS.search(str(exc))
        where = f"{source}, line {match.group(1)}" if match else source
        message = _TOML_POS.sub("", str(exc)).strip()
        raise errors.ConfigError(f"{where}: invalid TOML: {message}") from exc
    check = _Checker(text, source)
    check.keys(doc, [], _TOP_KEYS)

    name = check.string(doc.get("name", default_name), ["name"])
    description = check.string(doc.get("description", ""), ["description"], empty=True)
    description = " ".join(description.split())
    duration = check.number(doc.get("duration", 60), ["duration"])
    if duration <= 0:
        raise check.fail(["duration"], "must be > 0")

    brokers = _brokers(check, doc)
    broker_names = [b.name for b in brokers]
    topics = _topics(check, doc, broker_names)
    topic_map = {t.name: t for t in topics}
    groups = _groups(check, doc, topic_map)
    consumers = _consumers(check, doc, topic_map)
    _check_property_filter(check, brokers, topic_map, consumers)
    produce = _produce(check, doc, topic_map, broker_names)
    return Scenario(name, description, duration, brokers, topics, groups, consumers, produce,
                    source, text)


def _check_property_filter(check: _Checker, brokers: Sequence[BrokerSpec], topics: Mapping[str, TopicSpec],
                           consumers: Sequence[ConsumerSpec]) -> None:
    """A SQL92 subscription on a broker without ``property_filter``: a real client's ``start()``
    fails there (CHECK_CLIENT_CONFIG answers SYSTEM_ERROR), so no consumer can be declared so."""
    off = {b.name for b in brokers if not b.property_filter}
    if not off:
        return
    every = tuple(b.name for b in brokers)
    for i, consumer in enumerate(consumers):
        for topic in sorted(consumer.sql_topics):
            refusing = sorted(off.intersection(topics[topic].brokers or every))
            if refusing:
                raise check.fail(["consumers", i, "sql_subscriptions", topic],
                                 f"broker {refusing[0]!r} has property_filter = false: it refuses SQL92 "
                                 f"subscriptions, so this consumer could not start",
                                 hint="set property_filter = true on that broker, or subscribe by tag")


def _brokers(check: _Checker, doc: Mapping[str, Any]) -> tuple[BrokerSpec, ...]:
    out: list[BrokerSpec] = []
    for i, raw in enumerate(check.tables(doc, "brokers")):
        path: list[str | int] = ["brokers", i]
        check.keys(raw, path, _BROKER_KEYS)
        if "name" not in raw:
            raise check.fail(path, "a broker needs a name")
        name = check.string(raw["name"], [*path, "name"])
        if any(b.name == name for b in out):
            raise check.fail([*path, "name"], f"broker {name!r} is declared twice")
        cluster = check.string(raw.get("cluster", DEFAULT_CLUSTER), [*path, "cluster"])
        long_polling = check.boolean(raw.get("long_polling", True), [*path, "long_polling"])
        server_side = check.boolean(raw.get("server_side_reset", True), [*path, "server_side_reset"])
        property_filter = check.boolean(raw.get("property_filter", True), [*path, "property_filter"])
        out.append(BrokerSpec(name, cluster, long_polling, server_side, property_filter))
    return tuple(out) or (BrokerSpec("broker-a"),)


def _topics(check: _Checker, doc: Mapping[str, Any], brokers: Sequence[str]) -> tuple[TopicSpec, ...]:
    out: list[TopicSpec] = []
    for i, raw in enumerate(check.tables(doc, "topics")):
        path: list[str | int] = ["topics", i]
        check.keys(raw, path, _TOPIC_KEYS)
        if "name" not in raw:
            raise check.fail(path, "a topic needs a name")
        name = check.string(raw["name"], [*path, "name"])
        if any(t.name == name for t in out):
            raise check.fail([*path, "name"], f"topic {name!r} is declared twice")
        if name.startswith("%") or not re.fullmatch(r"[%|a-zA-Z0-9_\-]+", name) or len(name) > 127:
            raise check.fail([*path, "name"], f"invalid topic name {name!r}",
                             "letters, digits, '_', '-' and '|', at most 127 characters")
        queues = check.integer(raw.get("queues", 4), [*path, "queues"], minimum=1, maximum=MAX_QUEUES_PER_TOPIC)
        read = check.integer(raw.get("read_queues", queues), [*path, "read_queues"], minimum=0, maximum=1024)
        write = check.integer(raw.get("write_queues", queues), [*path, "write_queues"], minimum=0, maximum=1024)
        perm = check.integer(raw.get("perm", 6), [*path, "perm"], minimum=0, maximum=15)
        order = check.boolean(raw.get("order", False), [*path, "order"])
        message_type = None
        if "message_type" in raw:
            message_type = check.string(raw["message_type"], [*path, "message_type"]).upper()
            if message_type not in MESSAGE_TYPES:
                raise check.fail([*path, "message_type"], f"unknown message type {raw['message_type']!r}",
                                 "one of: " + ", ".join(MESSAGE_TYPES))
        on: list[str] = []
        if "brokers" in raw:
            names = raw["brokers"]
            if not isinstance(names, list) or not names:
                raise check.fail([*path, "brokers"], "expected a non-empty array of broker names")
            for b in names:
                b = check.string(b, [*path, "brokers"])
                if b not in brokers:
                    raise check.fail([*path, "brokers"], f"broker {b!r} is not declared",
                                     "declared brokers: " + ", ".join(brokers))
                if b not in on:
                    on.append(b)
        out.append(TopicSpec(name, read, write, perm, tuple(on), order, message_type))
    return tuple(out)


def _groups(check: _Checker, doc: Mapping[str, Any], topics: Mapping[str, TopicSpec]) -> tuple[GroupSpec, ...]:
    out: list[GroupSpec] = []
    for i, raw in enumerate(check.tables(doc, "groups")):
        path: list[str | int] = ["groups", i]
        check.keys(raw, path, _GROUP_KEYS)
        if "name" not in raw:
            raise check.fail(path, "a group needs a name")
        name = check.string(raw["name"], [*path, "name"])
        if any(g.name == name for g in out):
            raise check.fail([*path, "name"], f"group {name!r} is declared twice")
        out.append(
            GroupSpec(
                name,
                retry_queue_nums=check.integer(raw.get("retry_queue_nums", 1), [*path, "retry_queue_nums"],
                                               minimum=1, maximum=64),
                retry_max_times=check.integer(raw.get("retry_max_times", 16), [*path, "retry_max_times"], minimum=-1),
                consume_enable=check.boolean(raw.get("consume_enable", True), [*path, "consume_enable"]),
                consume_broadcast_enable=check.boolean(raw.get("consume_broadcast_enable", True),
                                                       [*path, "consume_broadcast_enable"]),
                consume_message_orderly=check.boolean(raw.get("consume_message_orderly", False),
                                                      [*path, "consume_message_orderly"]),
                notify_consumer_ids_changed_enable=check.boolean(
                    raw.get("notify_consumer_ids_changed_enable", True),
                    [*path, "notify_consumer_ids_changed_enable"]),
                pop_topics=_pop_topics(check, raw.get("pop_topics", []), [*path, "pop_topics"], topics),
                pop_retry_v2=check.boolean(raw.get("pop_retry_v2", False), [*path, "pop_retry_v2"]),
            )
        )
    return tuple(out)


def _pop_topics(check: _Checker, raw: Any, path: list[str | int],
                topics: Mapping[str, TopicSpec]) -> tuple[str, ...]:
    if not isinstance(raw, list):
        raise check.fail(path, "expected an array of topic names")
    names = tuple(dict.fromkeys(check.string(t, path) for t in raw))
    for name in names:
        if name not in topics:
            raise check.fail(path, f"topic {name!r} is not declared", "declare it under [[topics]]")
    return names


def _strategy_options(check: _Checker, raw: Any, path: list[str | int]) -> dict[str, Any]:
    options = dict(check.table(raw, path))
    if "queues" in options:
        from rmqctl.model import MessageQueue

        items = options["queues"]
        if not isinstance(items, list):
            raise check.fail([*path, "queues"], "expected an array of {topic, broker, queue_id} tables")
        queues = []
        for item in items:
            if not isinstance(item, dict) or not {"topic", "broker", "queue_id"} <= set(item):
                raise check.fail([*path, "queues"], "each queue needs topic, broker and queue_id")
            queues.append(MessageQueue(str(item["topic"]), str(item["broker"]), int(item["queue_id"])))
        options["queues"] = tuple(queues)
    return options


def _consumers(check: _Checker, doc: Mapping[str, Any], topics: Mapping[str, TopicSpec]) -> tuple[ConsumerSpec, ...]:
    out: list[ConsumerSpec] = []
    for i, raw in enumerate(check.tables(doc, "consumers")):
        path: list[str | int] = ["consumers", i]
        check.keys(raw, path, _CONSUMER_KEYS)
        if "group" not in raw:
            raise check.fail(path, "a consumer needs a group")
        group = check.string(raw["group"], [*path, "group"])
        if "subscriptions" not in raw and "sql_subscriptions" not in raw:
            raise check.fail(path, "a consumer needs subscriptions = { TOPIC = \"tag expression\" }")
        subs_raw = check.table(raw.get("subscriptions", {}), [*path, "subscriptions"])
        sql_raw = check.table(raw.get("sql_subscriptions", {}), [*path, "sql_subscriptions"])
        if not subs_raw and not sql_raw:
            raise check.fail([*path, "subscriptions"], "subscribe at least one topic")
        for topic, expr in sql_raw.items():
            if topic in subs_raw:
                raise check.fail([*path, "sql_subscriptions"],
                                 f"topic {topic!r} is subscribed twice (by tag and by SQL92)")
            if isinstance(expr, str):
                try:
                    compile_sql92(expr)
                except Sql92Error as exc:
                    raise check.fail([*path, "sql_subscriptions"], f"{topic!r}: {exc}") from exc
        subs: list[tuple[str, str]] = []
        for topic, expr in [*subs_raw.items(), *sql_raw.items()]:
            if not isinstance(expr, str):
                raise check.fail([*path, "subscriptions"],
                                 f"the expression of {topic!r} must be a string like \"TagA || TagB\" or \"*\"")
            if topic not in topics:
                raise check.fail([*path, "subscriptions"], f"topic {topic!r} is not declared",
                                 "declare it under [[topics]]")
            subs.append((topic, expr))
        strategy = check.string(raw.get("strategy", "AVG"), [*path, "strategy"])
        options = _strategy_options(check, raw.get("strategy_options", {}), [*path, "strategy_options"])
        try:
            get_strategy(strategy, **options)
        except AllocationError as exc:
            raise check.fail([*path, "strategy"], str(exc), exc.hint) from exc
        model = check.choice(raw.get("message_model", "CLUSTERING"), [*path, "message_model"], MESSAGE_MODELS)
        cfw = check.choice(raw.get("consume_from_where", CONSUME_FROM_WHERE[0]), [*path, "consume_from_where"],
                           CONSUME_FROM_WHERE)
        start = check.number(raw.get("start", 0.0), [*path, "start"])
        stop = None
        if "stop" in raw:
            stop = check.number(raw["stop"], [*path, "stop"])
            if stop <= start:
                raise check.fail([*path, "stop"], f"must be after start ({start:g}), got {stop:g}")
        stall = _stall_time(check, raw, path, start, stop)
        sub_version = None
        if "sub_version" in raw:
            sub_version = check.integer(raw["sub_version"], [*path, "sub_version"])
        post = check.boolean(raw.get("post_subscription", False), [*path, "post_subscription"])
        count = check.integer(raw.get("count", 1), [*path, "count"], minimum=1, maximum=100_000)
        client_id = None
        if "client_id" in raw:
            client_id = check.string(raw["client_id"], [*path, "client_id"])
            if "@" not in client_id:
                raise check.fail([*path, "client_id"], f"{client_id!r} does not look like a client id",
                                 "Java client ids are ip@instance, e.g. 10.0.0.1@12345#8812749")
            if count > 1 and "{n}" not in client_id:
                raise check.fail([*path, "client_id"], "with count > 1 the client id must contain {n}")
        ip = check.string(raw["ip"], [*path, "ip"]) if "ip" in raw else None
        instance = check.string(raw["instance_name"], [*path, "instance_name"]) if "instance_name" in raw else None
        consume_ms = check.integer(raw.get("consume_ms", 0), [*path, "consume_ms"], minimum=0)
        threads = check.integer(raw.get("consume_threads", 20), [*path, "consume_threads"], minimum=1, maximum=1000)
        consume_result = check.choice(raw.get("consume_result", "SUCCESS"), [*path, "consume_result"],
                                      CONSUME_RESULTS)
        orderly = check.boolean(raw.get("orderly", False), [*path, "orderly"])
        suspend_raw = raw.get("suspend_queues", [])
        if not isinstance(suspend_raw, list) or not all(isinstance(q, int) and not isinstance(q, bool)
                                                        and q >= 0 for q in suspend_raw):
            raise check.fail([*path, "suspend_queues"], "expected a list of queue ids (0, 1, …)")
        if suspend_raw and not orderly:
            raise check.fail([*path, "suspend_queues"], "only an orderly listener suspends a queue",
                             "add orderly = true")
        suspend_queues = frozenset(suspend_raw)
        trace = check.boolean(raw.get("trace", False), [*path, "trace"])
        pop = check.boolean(raw.get("pop", False), [*path, "pop"])
        invisible_s = check.number(raw.get("invisible_s", 30.0), [*path, "invisible_s"])
        if invisible_s <= 0:
            raise check.fail([*path, "invisible_s"], f"must be more than 0, got {invisible_s:g}")
        tag_lists = {}
        for key in ("fail_tags", "no_ack_tags"):
            tags = raw.get(key, [])
            if not isinstance(tags, list) or not all(isinstance(t, str) and t for t in tags):
                raise check.fail([*path, key], "expected a list of tags")
            if tags and not pop:
                raise check.fail([*path, key], "only a POP consumer fails or leaves messages by tag",
                                 "add pop = true")
            tag_lists[key] = frozenset(tags)
        if pop and (orderly or model == "BROADCASTING"):
            raise check.fail([*path, "pop"], "a POP consumer is concurrent and CLUSTERING")
        for n in range(1, count + 1):
            cid = client_id.replace("{n}", str(n)) if client_id else None
            out.append(
                ConsumerSpec(
                    group=group, subscriptions=tuple(subs), client_id=cid, start=start, stop=stop,
                    strategy=strategy, strategy_options=tuple(sorted(options.items())),
                    message_model=model, consume_from_where=cfw, sub_version=sub_version,
                    post_subscription=post, ip=ip, instance_name=instance, consume_ms=consume_ms,
                    consume_threads=threads, stall=stall, consume_result=consume_result,
                    sql_topics=frozenset(sql_raw), orderly=orderly, suspend_queues=suspend_queues,
                    trace=trace,
                    pop=pop, invisible_s=invisible_s, fail_tags=tag_lists["fail_tags"],
                    no_ack_tags=tag_lists["no_ack_tags"],
                )
            )
    return tuple(out)


def _stall_time(check: _Checker, raw: Mapping[str, Any], path: list[str | int], start: float,
                stop: float | None) -> float | None:
    """``stall``: when the consumer's listener hangs, between its start and its stop."""
    if "stall" not in raw:
        return None
    stall = check.number(raw["stall"], [*path, "stall"])
    if stall < start:
        raise check.fail([*path, "stall"], f"must not be before start ({start:g}), got {stall:g}")
    if stop is not None and stall >= stop:
        raise check.fail([*path, "stall"], f"must be before stop ({stop:g}), got {stall:g}")
    return stall


def _produce(check: _Checker, doc: Mapping[str, Any], topics: Mapping[str, TopicSpec],
             brokers: Sequence[str]) -> tuple[ProduceSpec, ...]:
    out: list[ProduceSpec] = []
    for i, raw in enumerate(check.tables(doc, "produce")):
        path: list[str | int] = ["produce", i]
        check.keys(raw, path, _PRODUCE_KEYS)
        if "topic" not in raw:
            raise check.fail(path, "a produce step needs a topic")
        topic_name = check.string(raw["topic"], [*path, "topic"])
        topic = topics.get(topic_name)
        if topic is None:
            raise check.fail([*path, "topic"], f"topic {topic_name!r} is not declared",
                             "declare it under [[topics]]")
        at = check.number(raw.get("at", 0.0), [*path, "at"])
        count = check.integer(raw.get("count", 1), [*path, "count"], minimum=1, maximum=10_000_000)
        tag = check.string(raw["tag"], [*path, "tag"]) if "tag" in raw else None
        on = topic.brokers or tuple(brokers)
        broker = None
        if "broker" in raw:
            broker = check.string(raw["broker"], [*path, "broker"])
            if broker not in on:
                raise check.fail([*path, "broker"], f"topic {topic_name!r} is not on broker {broker!r}",
                                 "it is on: " + ", ".join(on))
        queue = None
        if "queue" in raw:
            queue = check.integer(raw["queue"], [*path, "queue"], minimum=0)
            if queue >= topic.write_queues:
                raise check.fail([*path, "queue"],
                                 f"topic {topic_name!r} has {topic.write_queues} write queue(s); "
                                 f"ids are 0..{topic.write_queues - 1}")
            if broker is None:
                if len(on) > 1:
                    raise check.fail([*path, "queue"], "the topic is on several brokers; add broker = \"…\"")
                broker = on[0]
        if not topic.perm & 2 or topic.write_queues == 0:
            raise check.fail([*path, "topic"], f"topic {topic_name!r} is not writable (perm {topic.perm})")
        interval = check.number(raw.get("interval", 0.0), [*path, "interval"])
        producer = check.string(raw.get("producer", "default"), [*path, "producer"])
        keys = check.string(raw["keys"], [*path, "keys"]) if "keys" in raw else None
        props: list[tuple[str, tuple[str, ...]]] = []
        for name, values in check.table(raw.get("properties", {}), [*path, "properties"]).items():
            listed = values if isinstance(values, list) else [values]
            if not listed or not all(isinstance(v, (str, int, float)) and not isinstance(v, bool)
                                     for v in listed):
                raise check.fail([*path, "properties"],
                                 f"the value of {name!r} must be a string or number, or a list of them")
            props.append((name, tuple(str(v) for v in listed)))
        out.append(ProduceSpec(at, topic_name, count, tag, queue, broker, interval, producer, keys,
                               tuple(props)))
    return tuple(out)


# ---------------------------------------------------------------------------------------------
# Generated large clusters


def scale_scenario(groups: int = 50, queues: int = 8, brokers: int = 2, clients: int = 120,
                   *, duration: float = 5.0, messages_per_queue: int = 2) -> Scenario:
    """``groups`` groups, one topic each with ``queues`` queues on every one of ``brokers``
    brokers, and ``clients`` consumers spread round-robin over the groups."""
    if min(groups, queues, brokers) < 1 or clients < 0:
        raise errors.ConfigError("scale needs at least 1 group, 1 queue and 1 broker")
    broker_specs = tuple(BrokerSpec(f"broker-{_letters(i)}") for i in range(brokers))
    topics = tuple(TopicSpec(f"scale-topic-{g:04d}", queues, queues) for g in range(groups))
    consumers = tuple(
        ConsumerSpec(
            group=f"scale-group-{k % groups:04d}",
            subscriptions=((f"scale-topic-{k % groups:04d}", "*"),),
            start=round((k // groups) * 0.25, 3),
        )
        for k in range(clients)
    )
    produce = tuple(
        ProduceSpec(at=1.0, topic=t.name, count=queues * brokers * messages_per_queue,
                    tag=f"Tag{g % 4}")
        for g, t in enumerate(topics)
    )
    name = f"{SCALE_PREFIX}:{groups}x{queues}x{brokers}x{clients}"
    return Scenario(
        name=name,
        description=f"{groups} groups x {queues} queues x {brokers} brokers, {clients} clients",
        duration=duration, brokers=broker_specs, topics=topics, consumers=consumers,
        produce=produce, source=f"generated {name}",
    )


def _letters(index: int) -> str:
    """0 → a, 25 → z, 26 → ba … (broker-a, broker-b …, like the usual naming)."""
    out = ""
    while True:
        out = chr(ord("a") + index % 26) + out
        index //= 26
        if index == 0:
            return out


def _scale_from_name(text: str) -> Scenario:
    if text == SCALE_PREFIX:
        return scale_scenario()
    spec = text[len(SCALE_PREFIX) + 1 :]
    match = re.fullmatch(r"(\d+)x(\d+)x(\d+)x(\d+)", spec)
    if not match:
        raise errors.ConfigError(
            f"bad generated scenario {text!r}; the form is scale:GROUPSxQUEUESxBROKERSxCLIENTS",
            hint="e.g. scale:2000x16x2x5000",
        )
    g, q, b, c = (int(x) for x in match.groups())
    return scale_scenario(g, q, b, c)
