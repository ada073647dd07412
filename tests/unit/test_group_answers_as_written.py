"""The one-pass readers of the per-group answers, held to the general decoding.

A round of the exporter reads thousands of small per-group bodies: each client's
ConsumerRunningInfo (307, written by the client) and each group's ConsumeStats (208, pull offsets
kept); and each broker's table of group configs (201, thousands of entries). Laid out as Java's
fastjson writes them, each is read in one pass; anything else takes the general fastjson parser.
Here both read the same bodies: generated
by the encoders (names with quotes, backslashes, control characters and non-ASCII text, extreme
longs, any double, blank expression types), the bodies real 5.3.3 and 4.9.7 Java clients and
brokers wrote (tests/golden), and both edited (spaces, reordered, missing or repeated fields,
numbers as strings, escapes, fields the model does not read, cut or overwritten bytes). The model
(compared by its repr: every field, its type and every order in it) or the error must be what the
general decoding gives.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from rmqctl.errors import ProtocolError
from rmqctl.model import (
    ConsumerRunningInfo,
    ConsumeStats,
    ConsumeStatus,
    MessageQueue,
    OffsetEntry,
    ProcessQueueInfo,
    RetryPolicy,
    Subscription,
    SubscriptionGroupConfig,
)
from rmqctl.remoting import bodies, frame

PROPERTIES = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

PLAIN = st.text(st.characters(min_codepoint=0x20, blacklist_categories=("Cs",), blacklist_characters='"\\'),
                min_size=1, max_size=10).filter(lambda name: not name.startswith("{"))
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=10)
LONG = st.integers(-(2**63), 2**63 - 1)
SMALL = st.integers(-5, 10**6)
DOUBLE = st.floats(allow_nan=False, allow_infinity=False) | st.integers(0, 10**6).map(float)

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
REAL = [GOLDEN, GOLDEN / "rmq-4.9.7"]


def real_body(directory: Path, name: str) -> bytes:
    return frame.decode((directory / name).read_bytes()).body


def subscriptions(names: st.SearchStrategy[str], longs: st.SearchStrategy[int]) -> st.SearchStrategy[Subscription]:
    return st.builds(Subscription, topic=names, expression=names, tags=st.lists(names, max_size=3).map(tuple),
                     codes=st.lists(longs, max_size=3).map(tuple), sub_version=longs,
                     expression_type=st.sampled_from(["TAG", "SQL92"]) | names | st.just(""))


def running_infos(names: st.SearchStrategy[str], longs: st.SearchStrategy[int]) -> st.SearchStrategy[bytes]:
    queue = st.builds(MessageQueue, names, names, st.integers(0, 2**31 - 1) | longs)
    process = st.builds(ProcessQueueInfo, longs, longs, longs, longs, longs, st.booleans(), st.booleans(), longs,
                        longs, longs, longs)
    status = st.builds(ConsumeStatus, DOUBLE, DOUBLE, DOUBLE, DOUBLE, DOUBLE, longs)
    info = st.builds(ConsumerRunningInfo, st.just("c"), st.dictionaries(names, names | st.just(""), max_size=5),
                     st.lists(subscriptions(names, longs), max_size=3).map(tuple),
                     st.dictionaries(queue, process, max_size=4), st.dictionaries(names, status, max_size=3))
    return st.builds(lambda i, jstack: bodies.encode_consumer_running_info(i, jstack=jstack), info,
                     st.none() | names | TEXT)


def group_consume_stats(names: st.SearchStrategy[str], longs: st.SearchStrategy[int]) -> st.SearchStrategy[bytes]:
    queue = st.builds(MessageQueue, names, names, st.integers(0, 2**31 - 1) | longs)
    entry = st.builds(OffsetEntry, longs, longs, st.none() | longs, longs)
    return st.builds(ConsumeStats, st.dictionaries(queue, entry, max_size=4), DOUBLE).map(bodies.encode_consume_stats)


def group_tables(names: st.SearchStrategy[str], longs: st.SearchStrategy[int]) -> st.SearchStrategy[bytes]:
    number = st.none() | longs
    policy = st.none() | st.builds(RetryPolicy, names, st.none() | st.lists(longs, max_size=3).map(tuple),
                                   number, number, number)
    config = st.builds(SubscriptionGroupConfig, names, st.booleans(), st.booleans(), st.booleans(), longs, longs,
                       longs, st.booleans(), policy, st.none() | names | st.just(" "))
    return st.builds(bodies.encode_subscription_groups, st.dictionaries(names, config, max_size=4),
                     st.tuples(SMALL, SMALL))


#: names the layout of a group's retry policy takes (no brace in it)
NAME = PLAIN.filter(lambda name: "{" not in name and "}" not in name)


def outcome(decode: Callable[[bytes], Any], body: bytes) -> Any:
    """What a decoder gives (its repr: every field, its type and every order in it) or its error."""
    try:
        return repr(decode(body))
    except ProtocolError as exc:
        return ("error", str(exc))


def running_info(body: bytes) -> ConsumerRunningInfo:
    return bodies.consumer_running_info("10.0.0.1@c", body)


def running_info_general(body: bytes) -> ConsumerRunningInfo:
    return bodies._consumer_running_info_general("10.0.0.1@c", body)


def as_general(body: bytes) -> None:
    assert outcome(running_info, body) == outcome(running_info_general, body)
    assert outcome(bodies.consume_stats, body) == outcome(bodies._consume_stats_general, body)
    assert outcome(bodies.subscription_groups, body) == outcome(bodies._subscription_groups_general, body)


def one_pass(body: bytes) -> list[str]:
    """Which one-pass readers took the body."""
    text = body.decode()
    taken = {"running_info": bodies._running_info_as_written("c", text),
             "consume_stats": bodies._consume_stats_as_written(text),
             "group_configs": bodies._object_as_written(text, bodies._GROUP_TABLE_FIELDS)}
    return sorted(name for name, found in taken.items() if found is not None)


@PROPERTIES
@given(running_infos(PLAIN, SMALL))
def test_a_running_info_as_written_is_read_in_one_pass(body: bytes) -> None:
    if b'"expressionType":""' not in body:
        assert "running_info" in one_pass(body)
    as_general(body)


@PROPERTIES
@given(running_infos(TEXT, LONG))
def test_any_running_info_reads_as_the_general_decoding(body: bytes) -> None:
    as_general(body)


@PROPERTIES
@given(group_consume_stats(PLAIN, SMALL))
def test_a_group_consume_stats_as_written_is_read_in_one_pass(body: bytes) -> None:
    assert "consume_stats" in one_pass(body)
    as_general(body)


@PROPERTIES
@given(group_consume_stats(TEXT, LONG))
def test_any_group_consume_stats_reads_as_the_general_decoding(body: bytes) -> None:
    as_general(body)


@PROPERTIES
@given(group_tables(NAME, SMALL))
def test_a_group_config_table_as_written_is_read_in_one_pass(body: bytes) -> None:
    assert "group_configs" in one_pass(body)
    as_general(body)


@PROPERTIES
@given(group_tables(TEXT, LONG))
def test_any_group_config_table_reads_as_the_general_decoding(body: bytes) -> None:
    as_general(body)


def test_a_5x_brokers_group_configs_are_read_in_one_pass_and_a_4x_brokers_by_the_general_path() -> None:
    new = real_body(GOLDEN, "201_get_all_subscriptiongroup_config.bin")
    old = real_body(GOLDEN / "rmq-4.9.7", "201_get_all_subscriptiongroup_config.bin")
    assert "group_configs" in one_pass(new)
    assert "group_configs" not in one_pass(old)  # no attributes, no consumeMessageOrderly: defaults
    configs = bodies.subscription_groups(new)
    assert configs["GoldenGroup"] == SubscriptionGroupConfig("GoldenGroup", retry_policy=RetryPolicy("CUSTOMIZED"))
    assert bodies.subscription_groups(old)["GoldenGroup"] == SubscriptionGroupConfig("GoldenGroup", retry_policy=None)
    assert list(configs) == sorted(configs)
    as_general(new)
    as_general(old)


@pytest.mark.parametrize(("directory", "name", "reader"), [
    *((directory, name, reader) for directory in REAL for name, reader in (
        ("307_get_consumer_running_info.bin", "running_info"), ("208_get_consume_stats.bin", "consume_stats"))),
    (GOLDEN, "201_get_all_subscriptiongroup_config.bin", "group_configs"),  # 4.9.7's: the general path (below)
])
def test_the_bodies_real_clients_and_brokers_write_are_read_in_one_pass(
        directory: Path, name: str, reader: str) -> None:
    body = real_body(directory, name)
    assert reader in one_pass(body)
    as_general(body)


def test_what_a_real_running_info_holds_is_read_in_one_pass() -> None:
    """The 5.3.3 consumer's answer as captured: its properties in the client's hash order, its
    process queues, rates and subscriptions; no pull of a queue is made up."""
    info = running_info(real_body(GOLDEN, "307_get_consumer_running_info.bin"))
    assert info.properties["PROP_CLIENT_VERSION"] == "V5_3_3"
    assert list(info.properties)[:2] == ["consumeTimestamp", "pullThresholdForTopic"]
    assert len(info.properties) == 64
    golden = MessageQueue("GoldenTopic", "broker-a", 3)
    assert list(info.mq_table)[0] == MessageQueue("%RETRY%GoldenGroup", "broker-a", 0)
    assert info.mq_table[golden] == ProcessQueueInfo(
        commit_offset=1, locked=True, last_lock_timestamp=1795239638156, last_pull_timestamp=1795239639996,
        last_consume_timestamp=1795239638707)
    assert info.status["GoldenTopic"] == ConsumeStatus()
    assert info.subscriptions[1] == Subscription("GoldenTopic", "tagA || tagB", ("tagA", "tagB"),
                                                 (3552231, 3552232), 1795239638162, "TAG")


def test_pull_offsets_are_kept_where_written_and_unknown_where_not() -> None:
    new = bodies.consume_stats(real_body(GOLDEN, "208_get_consume_stats.bin"))
    old = bodies.consume_stats(real_body(GOLDEN / "rmq-4.9.7", "208_get_consume_stats.bin"))
    queue = MessageQueue("GoldenTopic", "broker-a", 3)
    assert new.offsets[queue] == OffsetEntry(1, 1, 1, 1795239638330)
    assert old.offsets[queue] == OffsetEntry(1, 1, None, 1795239627021)  # 4.9.7 writes none: unknown, not 0
    assert list(new.offsets) == [MessageQueue("GoldenTopic", "broker-a", q) for q in (0, 2, 1, 3)]  # as written


#: fields the model does not read, as other clients write them: a thread dump (``jstackEnable``),
#: a POP consumer's queues keyed by MessageQueue, user data
UNREAD = [
    b'"jstack":"\\"main\\" #1 prio=5\\n\\tat java.lang.Thread.sleep(Native Method)\\n",',
    b'"mqPopTable":{{"brokerName":"broker-a","queueId":0,"topic":"P"}:{"droped":false,"lastPopTimestamp":1,'
    b'"waitAckCount":3}},',
    b'"userConsumerInfo":{"k":[1,{"a":null}],"x":{{"a":1}:2}},',
]

EDITS = [
    (b",", b" , "), (b":", b" :"), (b"{", b"{ "), (b"[", b"[\n"), (b"}", b"}\t"), (b'"', b'"\\u0041'),
    (b'"brokerName"', b'"brokername"'), (b'"queueId":', b'"queueId":"'), (b'"consumeTps":', b'"consumeTps":"'),
    (b'"lastTimestamp"', b'"x"'), (b',"pullOffset":', b',"pullOffset":-'), (b'"brokerOffset":', b'"brokerOffset":0'),
    (b'"topic":"', b'"topic":"\\u0041'), (b'"brokerName":"', b'"brokerName":"\\"'), (b'"droped":', b'"dropped":'),
    (b'"locked":true', b'"locked":"true"'), (b'"locked":false', b'"locked":1'),
    (b'"commitOffset":', b'"commitOffset":1.5,"x":'),
    (b',"transactionMsgCount":0,"transactionMsgMaxOffset":0,"transactionMsgMinOffset":0', b""),
    (b'"consumeOKTPS":', b'"consumeOKTPS":1e999,"x":'), (b'"pullRT":', b'"pullRT":"2",'),
    (b'"pullTPS":0.0', b'"pullTPS":1E2'),
    (b'"consumeRT":0.0', b'"consumeRT":-0'), (b'"pullTPS":0.0', b'"pullTPS":1E400'),
    (b'"consumeTps":0.0', b'"consumeTps":1.5E999'), (b'"subVersion":', b'"subVersion":"'),
    (b'"tagsSet":[', b'"tagsSet":[1,'),
    (b'"codeSet":[', b'"codeSet":["7",'), (b'"expressionType":"TAG"', b'"expressionType":""'),
    (b'"expressionType":"TAG",', b''), (b'"tagsSet":[]', b'"tagsSet":null'),
    (b'"classFilterMode":false', b'"classFilterMode":0'),
    (b'"subString":"', b'"subString":"a\\\\'), (b'"messageModel":"CLUSTERING",', b''),
    (b'"properties":{', b'"properties":{"{x}":"y",'), (b'"properties":{', b'"properties":{"n":1,'),
    (b'"properties":{', b'"properties":{"a":"b","a":"c",'), (b'"properties":{"', b'"properties":{"\\u00e9'),
    (b'"statusTable":{', b'"statusTable":{"{":{},'), (b'"statusTable":{', b'"statusTable":null,"x":{'),
    (b'"mqTable":{', b'"mqTable":null,"mqTable":{'), (b'"mqTable":{', b'"mqTable":{"x":{},'),
    (b'"offsetTable":{', b'"offsetTable":{},"offsetTable":{'), (b'"consumeTps"', b'"consumeTps":1,"consumeTps"'),
    (b'{"', b'{"x":' + b"[" * 511 + b"]" * 511 + b',"'), (b'{"', b'{"x":' + b"[" * 520 + b"]" * 520 + b',"'),
    (b'{"', b'{"{x}":1,"'), (b'{"', b'{"mq\\u0054able":{},"'), (b'{"', b'{"x":1e999,"'), (b"}}", b"}"), (b"]", b""),
    (b"1", b"1e999"), (b"0", b"00"), (b"2", b"2.5"), (b"1", b"12345678901234567890123"), (b"}", b"},"),
    (b'"queueId":0', b'"queueId":9'), (b'"queueId":1', b'"queueId":0'), (b'"topic":"', b'"topic":"\xc3\xa9'),
    (b'{"brokerName":"broker-b"', b'{"brokerName":"broker-0"'), (b'"statusTable":{"', b'"statusTable":{"zz'),
    (b'"attributes":{', b'"attributes":{"lite.bind.topic":" L ",'),
    (b'"attributes":{', b'"attributes":{"+lite.bind.topic":"",'),
    (b'"attributes":{', b'"attributes":{"lite.bind.topic":"a","lite.bind.topic":"b",'),
    (b'"attributes":{}', b'"attributes":{"lite.bind.topic":1}'), (b'"type":"CUSTOMIZED"', b'"type":1'),
    (b'"type":"CUSTOMIZED"', b'"type":"exponential"'), (b'"type":"CUSTOMIZED"', b'"type":""'),
    (b'"groupRetryPolicy":{', b'"groupRetryPolicy":{"customizedRetryPolicy":{"next":[1,"x"]},'),
    (b'"groupRetryPolicy":{', b'"groupRetryPolicy":{"exponentialRetryPolicy":{"initial":1,"max":2.5},'),
    (b'"groupRetryPolicy":{"type":"CUSTOMIZED"}', b'"groupRetryPolicy":null'),
    (b'"consumeEnable":true', b'"consumeEnable":"true"'), (b'"retryMaxTimes":', b'"retryMaxTimes":1.5,"x":'),
    (b'"consumeMessageOrderly":false', b'"consumeMessageOrderly":true'), (b'"brokerId":0', b'"brokerId":-0'),
    (b'"groupName":"', b'"groupName":"\\u0041'), (b'"subscriptionGroupTable":{', b'"subscriptionGroupTable":{"{}":{},'),
    (b'"subscriptionGroupTable":{"', b'"subscriptionGroupTable":{"Z":{"groupName":"Z"},"'),
    (b'"subscriptionGroupTable":{', b'"subscriptionGroupTable":{"A":{},"A":{},'), (b',"groupSysFlag":0', b''),
    (b'"forbiddenTable":{}', b'"forbiddenTable":{{"a":1}:2}'),
    *((b'{"', b"{" + field) for field in UNREAD), *((b'"statusTable"', field + b'"statusTable"') for field in UNREAD),
]

BODIES = (running_infos(PLAIN, SMALL) | group_consume_stats(PLAIN, SMALL) | group_tables(NAME, SMALL)
          | st.sampled_from([real_body(directory, name) for directory in REAL
                             for name in ("307_get_consumer_running_info.bin", "208_get_consume_stats.bin",
                                          "201_get_all_subscriptiongroup_config.bin")]))


@PROPERTIES
@given(BODIES, st.lists(st.tuples(st.sampled_from(EDITS), st.integers(0, 50)), min_size=1, max_size=3),
       st.integers(0, 1 << 16), st.integers(0, 255))
@example(b'{"mqTable":},"properties":{}}', [], 0, 0)
@example(b"{}", [], 0, 0)
@example(b'{"consumeTps":0.0,"offsetTable":{}} \n', [], 0, 0)
@example(b'{"consumeTps":0.0,"offsetTable":{}}x', [], 0, 0)
@example(b'{"consumeTps":0.0}', [], 0, 0)
@example(b'{"offsetTable":{}}', [], 0, 0)
@example(b'{"properties":{"a":"b"},"mqTable":{}}', [], 0, 0)
@example(b'{"x":' + b"[" * 511 + b"]" * 511 + b',"consumeTps":1.0}', [], 0, 0)
@example(b'{"x":' + b"[" * 512 + b"]" * 512 + b',"consumeTps":1.0}', [], 0, 0)
def test_edited_bodies_read_as_the_general_decoding(
        body: bytes, edits: list[tuple[tuple[bytes, bytes], int]], cut: int, byte: int) -> None:
    for (old, new), nth in edits:
        at = -1
        for _ in range(nth % 8 + 1):
            found = body.find(old, at + 1)
            if found < 0:
                break
            at = found
        if at >= 0:
            body = body[:at] + new + body[at + len(old):]
    as_general(body)
    if body:
        at = cut % len(body)
        as_general(body[:at])  # cut short
        as_general(body[:at] + bytes([byte]) + body[at + 1:])  # one byte overwritten


@pytest.mark.parametrize("field", UNREAD)
def test_fields_the_model_does_not_read_are_read_past_in_one_pass(field: bytes) -> None:
    body = real_body(GOLDEN / "rmq-4.9.7", "307_get_consumer_running_info.bin")  # it writes none of them
    edited = b"{" + field + body[1:]
    assert "running_info" in one_pass(edited)
    assert running_info(edited) == running_info(body)


REAL_BODIES = {f"{directory.name}/{name}": real_body(directory, name) for directory in REAL
               for name in ("307_get_consumer_running_info.bin", "208_get_consume_stats.bin",
                            "201_get_all_subscriptiongroup_config.bin")}


@pytest.mark.parametrize("name", sorted(REAL_BODIES))
def test_every_edit_of_a_real_body_reads_as_the_general_decoding(name: str) -> None:
    """Each edit alone, at each place it applies (up to eight), in each real body."""
    body = REAL_BODIES[name]
    for old, new in EDITS:
        at = -1
        for _ in range(8):
            at = body.find(old, at + 1)
            if at < 0:
                break
            as_general(body[:at] + new + body[at + len(old):])


#: a map the C decoder cannot read (a key that is an object) before the fields read: the general
#: parser then walks the later maps itself, and reads a text key that holds an object as that object
WALKED = b'{"aWalked":{"x":{{"a":1}:2}},'
STATUS = b'{"consumeFailedMsgs":0,"consumeFailedTPS":0.0,"consumeOKTPS":0.0,"consumeRT":0.0,"pullRT":0.0,"pullTPS":0.0}'
CONFIG = (b'{"attributes":{},"brokerId":0,"consumeBroadcastEnable":true,"consumeEnable":true,'
          b'"consumeFromMinEnable":true,"consumeMessageOrderly":false,"consumeTimeoutMinute":15,"groupName":"G","groupSysFlag":0,'
          b'"notifyConsumerIdsChangedEnable":true,"retryMaxTimes":16,"retryQueueNums":1,"whichBrokerWhenConsumeSlowly":1}')


@pytest.mark.parametrize(("name", "field", "value"), [
    ("rmq-4.9.7/307_get_consumer_running_info.bin", b'"properties":{', b'"y"'),
    ("rmq-4.9.7/307_get_consumer_running_info.bin", b'"statusTable":{', STATUS),
    ("golden/201_get_all_subscriptiongroup_config.bin", b'"subscriptionGroupTable":{', CONFIG),
])
@pytest.mark.parametrize("key", [b'"{}"', b'"{\\"a\\":1}"'], ids=["plain", "escaped"])
@pytest.mark.parametrize("before", [b"{", WALKED], ids=["read-by-c", "walked"])
def test_a_text_key_holding_an_object_reads_as_the_general_decoding(name: str, field: bytes, value: bytes,
                                                                     key: bytes, before: bytes) -> None:
    body = before + REAL_BODIES[name][1:].replace(field, field + key + b":" + value + b",", 1)
    as_general(body)


def test_queues_are_in_java_order_where_python_orders_their_names_otherwise() -> None:
    """U+E000 sorts before U+10000 by code point, after it by UTF-16 code unit (Java's order)."""
    process = ProcessQueueInfo()
    table = {MessageQueue("a", "\ue000", 0): process, MessageQueue("a", "\U00010000", 0): process,
             MessageQueue("\ue000", "b", 0): process, MessageQueue("\U00010000", "b", 0): process}
    body = bodies.encode_consumer_running_info(ConsumerRunningInfo("c", {}, (), table))
    assert "running_info" in one_pass(body)
    assert list(running_info(body).mq_table) == [MessageQueue("a", "\U00010000", 0), MessageQueue("a", "\ue000", 0),
                                                 MessageQueue("\U00010000", "b", 0), MessageQueue("\ue000", "b", 0)]
    as_general(body)


def test_a_group_table_read_again_is_not_parsed_again_and_each_read_is_the_callers(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    parsed: list[bytes] = []
    parse = bodies._subscription_groups
    monkeypatch.setattr(bodies, "_subscription_groups", lambda body: parsed.append(body) or parse(body))
    monkeypatch.setattr(bodies, "_GROUP_TABLES", {})
    body = bodies.encode_subscription_groups(
        {"g1": SubscriptionGroupConfig("g1"), "g2": SubscriptionGroupConfig("g2")}, (1, 1700000000000))
    first = bodies.subscription_groups(body)
    first.pop("g1")  # the caller's own table
    again = bodies.subscription_groups(bytes(body))  # the same bytes, another object
    assert sorted(again) == ["g1", "g2"] and again["g2"] == SubscriptionGroupConfig("g2")
    assert len(parsed) == 1
    other = bodies.encode_subscription_groups({"g3": SubscriptionGroupConfig("g3")}, (2, 1700000000000))
    assert list(bodies.subscription_groups(other)) == ["g3"] and len(parsed) == 2
