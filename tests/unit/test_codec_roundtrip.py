"""Every frame, body and message codec: ``decode(encode(x)) == x`` for any value Hypothesis builds.

Each encoder in :mod:`rmqctl.remoting.frame`, :mod:`rmqctl.remoting.bodies` and
:mod:`rmqctl.remoting.messages` sits beside its decoder; these properties pin the pair together
(names with quotes, backslashes and non-ASCII text, extreme longs, doubles that need Java's
exponent form, optional fields left out). What the bytes must look like is pinned separately, by
the golden frames of a real broker.
"""

from __future__ import annotations

import string
from collections.abc import Callable
from typing import Any, TypeVar

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rmqctl.model import (
    BrokerData,
    ClientConnection,
    ClusterInfo,
    ConsumerConnection,
    ConsumerRunningInfo,
    ConsumeStats,
    ConsumeStatus,
    MessageQueue,
    OffsetEntry,
    ProcessQueueInfo,
    QueueData,
    RetryPolicy,
    SampledMessage,
    Subscription,
    SubscriptionGroupConfig,
    TopicOffset,
    TopicRoute,
    TopicStats,
    TraceEvent,
    decode_offset_message_id,
    decode_trace_events,
    encode_offset_message_id,
    encode_trace_events,
)
from rmqctl.remoting import bodies, fastjson, frame, messages
from rmqctl.remoting.bodies import ConsumerData, HeartbeatData, TopicConfig
from rmqctl.remoting.frame import RemotingCommand
from rmqctl.remoting.messages import BORNHOST_V6, STOREHOST_V6, MessageRecord

T = TypeVar("T")
PROPERTIES = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Any text JSON can carry: quotes, backslashes, control characters, non-ASCII (no lone surrogates).
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
NAME = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="@"), min_size=1, max_size=12)
LONG = st.integers(-(2**63), 2**63 - 1)
INT = st.integers(-(2**31), 2**31 - 1)
DOUBLE = st.floats(allow_nan=False, allow_infinity=False)
OPT_TEXT = st.none() | TEXT


def unique_by(items: st.SearchStrategy[list[T]], key: Callable[[T], Any]) -> st.SearchStrategy[list[T]]:
    return items.map(lambda xs: list({key(x): x for x in xs}.values()))


queues = st.builds(MessageQueue, NAME, NAME, st.integers(0, 2**31 - 1))
subscriptions = st.builds(
    Subscription, topic=NAME, expression=TEXT, tags=st.lists(TEXT, max_size=3).map(tuple),
    codes=st.lists(INT, max_size=3).map(tuple), sub_version=LONG, expression_type=st.sampled_from(["TAG", "SQL92"]),
)
connections = st.builds(ClientConnection, client_id=TEXT, client_addr=TEXT, language=TEXT, version=INT)
broker_datas = st.builds(BrokerData, NAME, NAME, st.dictionaries(st.integers(0, 64), TEXT, max_size=3))
queue_datas = st.builds(QueueData, NAME, INT, INT, INT, INT)
group_configs = st.builds(
    SubscriptionGroupConfig, group_name=NAME, consume_enable=st.booleans(), consume_broadcast_enable=st.booleans(),
    consume_message_orderly=st.booleans(), retry_queue_nums=INT, retry_max_times=INT, broker_id=LONG,
    notify_consumer_ids_changed_enable=st.booleans(),
    retry_policy=st.none() | st.builds(
        RetryPolicy, kind=st.sampled_from(["CUSTOMIZED", "EXPONENTIAL"]),
        delays_ms=st.none() | st.lists(LONG, max_size=4).map(tuple), initial_ms=st.none() | LONG,
        max_ms=st.none() | LONG, multiplier=st.none() | LONG),
)
process_queues = st.builds(
    ProcessQueueInfo, LONG, LONG, LONG, LONG, LONG, st.booleans(), st.booleans(), LONG, LONG, LONG, LONG,
)
statuses = st.builds(ConsumeStatus, DOUBLE, DOUBLE, DOUBLE, DOUBLE, DOUBLE, LONG)
topic_configs = st.builds(TopicConfig, NAME, INT, INT, INT, st.booleans(), INT, TEXT)
VERSIONS = st.tuples(LONG, LONG)


@PROPERTIES
@given(unique_by(st.lists(queues, max_size=4), lambda mq: mq))
def test_message_queue_keys(mqs: list[MessageQueue]) -> None:
    body = ("{" + ",".join(f"{bodies.queue_key(mq)}:{i}" for i, mq in enumerate(mqs)) + "}").encode()
    decoded = {bodies.message_queue(k): v for k, v in fastjson.loads(body).items()}
    assert decoded == {mq: i for i, mq in enumerate(mqs)}


@PROPERTIES
@given(st.dictionaries(NAME, broker_datas, max_size=3),
       st.dictionaries(NAME, st.lists(NAME, max_size=3).map(lambda xs: tuple(sorted(xs))), max_size=3))
def test_cluster_info(brokers: dict[str, BrokerData], clusters: dict[str, tuple[str, ...]]) -> None:
    info = ClusterInfo(brokers, clusters)
    assert bodies.cluster_info(bodies.encode_cluster_info(info)) == info


@PROPERTIES
@given(NAME, st.lists(queue_datas, max_size=3), st.lists(broker_datas, max_size=3), OPT_TEXT, st.booleans())
def test_topic_route(topic: str, qds: list[QueueData], bds: list[BrokerData], order: str | None,
                     standard: bool) -> None:
    route = TopicRoute(topic, tuple(qds), tuple(bds), order)
    assert bodies.topic_route(topic, bodies.encode_topic_route(route, standard=standard)) == route


@PROPERTIES
@given(st.sampled_from(["topicList", "groupList", "consumerIdList"]), st.lists(TEXT, max_size=5), OPT_TEXT)
def test_string_list(field: str, values: list[str], broker_addr: str | None) -> None:
    assert bodies.string_list(bodies.encode_string_list(field, values, broker_addr=broker_addr), field) == values


@PROPERTIES
@given(NAME, unique_by(st.lists(st.builds(TopicOffset, queues, LONG, LONG, LONG), max_size=4), lambda o: o.queue),
       st.none() | DOUBLE)
def test_topic_stats(topic: str, rows: list[TopicOffset], tps: float | None) -> None:
    stats = TopicStats(topic, tuple(sorted(rows, key=lambda o: o.queue)), tps)
    assert bodies.topic_stats(topic, bodies.encode_topic_stats(stats)) == stats


@PROPERTIES
@given(subscriptions)
def test_subscription(sub: Subscription) -> None:
    assert bodies.subscription(fastjson.loads(bodies.encode_subscription(sub).encode())) == sub


@PROPERTIES
@given(unique_by(st.lists(connections, max_size=4), lambda c: c.client_id),
       st.dictionaries(NAME, subscriptions, max_size=3), OPT_TEXT, OPT_TEXT, OPT_TEXT)
def test_consumer_connection(conns: list[ClientConnection], subs: dict[str, Subscription], consume_type: str | None,
                             model: str | None, where: str | None) -> None:
    view = ConsumerConnection(tuple(sorted(conns, key=lambda c: c.client_id)), dict(sorted(subs.items())),
                              consume_type, model, where)
    assert bodies.consumer_connection(bodies.encode_consumer_connection(view)) == view


@PROPERTIES
@given(st.lists(connections, max_size=4))
def test_producer_connection(conns: list[ClientConnection]) -> None:
    assert bodies.producer_connection(bodies.encode_producer_connection(conns)) == tuple(conns)


@PROPERTIES
@given(st.dictionaries(queues, st.builds(OffsetEntry, LONG, LONG, st.none() | LONG, LONG), max_size=4), DOUBLE)
def test_consume_stats(offsets: dict[MessageQueue, OffsetEntry], tps: float) -> None:
    stats = ConsumeStats(offsets, tps)
    assert bodies.consume_stats(bodies.encode_consume_stats(stats)) == stats


@PROPERTIES
@given(st.dictionaries(queues, LONG, max_size=4))
def test_reset_offset_body(offsets: dict[MessageQueue, int]) -> None:
    assert bodies.reset_offset_body(bodies.encode_reset_offset_body(offsets)) == offsets


def test_reset_offset_body_reads_the_brokers_form_and_an_empty_answer() -> None:
    # the shape ResetOffsetBody.encode writes: fastjson object keys, fields alphabetical
    body = b'{"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:0,' \
           b'{"brokerName":"broker-a","queueId":1,"topic":"T"}:17}}'
    assert bodies.reset_offset_body(body) == {MessageQueue("T", "broker-a", 0): 0, MessageQueue("T", "broker-a", 1): 17}
    assert bodies.reset_offset_body(b"") == {}


@PROPERTIES
@given(TEXT, st.dictionaries(TEXT, TEXT, max_size=4),
       unique_by(st.lists(subscriptions, max_size=3), lambda s: (s.topic, s.expression)),
       st.dictionaries(queues, process_queues, max_size=3), st.dictionaries(TEXT, statuses, max_size=3), OPT_TEXT)
def test_consumer_running_info(client_id: str, props: dict[str, str], subs: list[Subscription],
                               mq_table: dict[MessageQueue, ProcessQueueInfo], status: dict[str, ConsumeStatus],
                               jstack: str | None) -> None:
    info = ConsumerRunningInfo(client_id, props, tuple(sorted(subs, key=lambda s: (s.topic, s.expression))),
                               dict(sorted(mq_table.items())), dict(sorted(status.items())))
    assert bodies.consumer_running_info(client_id, bodies.encode_consumer_running_info(info, jstack=jstack)) == info


@PROPERTIES
@given(st.dictionaries(NAME, group_configs, max_size=4), VERSIONS)
def test_subscription_groups(configs: dict[str, SubscriptionGroupConfig], version: tuple[int, int]) -> None:
    assert bodies.subscription_groups(bodies.encode_subscription_groups(configs, version)) == dict(
        sorted(configs.items()))


@PROPERTIES
@given(group_configs)
def test_subscription_group_config(config: SubscriptionGroupConfig) -> None:
    assert bodies.subscription_group_config(bodies.encode_subscription_group_config(config)) == config


@PROPERTIES
@given(st.dictionaries(TEXT, TEXT, max_size=5))
def test_kv_table(table: dict[str, str]) -> None:
    assert bodies.kv_table(bodies.encode_kv_table(table)) == table


@PROPERTIES
@given(topic_configs)
def test_topic_config(config: TopicConfig) -> None:
    assert bodies.topic_config(bodies.encode_topic_config(config)) == config


@PROPERTIES
@given(st.dictionaries(NAME, topic_configs, max_size=4), VERSIONS)
def test_topic_configs(configs: dict[str, TopicConfig], version: tuple[int, int]) -> None:
    assert bodies.topic_configs(bodies.encode_topic_configs(configs, version)) == configs


@PROPERTIES
@given(st.dictionaries(st.tuples(NAME, NAME), st.dictionaries(INT, LONG, max_size=4), max_size=4), VERSIONS)
def test_consumer_offsets(offsets: dict[tuple[str, str], dict[int, int]], version: tuple[int, int]) -> None:
    assert bodies.consumer_offsets(bodies.encode_consumer_offsets(offsets, version)) == offsets


@PROPERTIES
@given(TEXT, TEXT, st.none() | subscriptions)
def test_query_subscription(group: str, topic: str, sub: Subscription | None) -> None:
    assert bodies.query_subscription(bodies.encode_query_subscription(group, topic, sub)) == (group, topic, sub)


PROPERTY_KEY = st.text(string.ascii_letters, min_size=1, max_size=1).flatmap(
    lambda first: st.text(string.ascii_letters + string.digits + "._-:/ ", max_size=10).map(lambda rest: first + rest))
PROPERTY_VALUE = st.text(string.ascii_letters + string.digits + "._-:/ ={};,\"", max_size=16)


@PROPERTIES
@given(st.dictionaries(PROPERTY_KEY, PROPERTY_VALUE, max_size=6))
def test_broker_config(values: dict[str, str]) -> None:
    assert bodies.broker_config(bodies.encode_broker_config(values)) == values


heartbeats = st.builds(
    HeartbeatData, TEXT,
    st.lists(st.builds(ConsumerData, TEXT, NAME, NAME, NAME, st.lists(subscriptions, max_size=3).map(tuple),
                       st.booleans()), max_size=3).map(tuple),
    st.lists(TEXT, max_size=3).map(tuple),
)


@PROPERTIES
@given(heartbeats)
def test_heartbeat_data(data: HeartbeatData) -> None:
    assert bodies.heartbeat_data(bodies.encode_heartbeat_data(data)) == data


# ---------------------------------------------------------------------------------------------
# Messages of a pull response

PROPERTY_TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x01\x02"), max_size=10)
V4 = st.ip_addresses(v=4).map(str)
V6 = st.ip_addresses(v=6).map(str)
PORT = INT


@st.composite
def records(draw: st.DrawFn) -> MessageRecord:
    born_v6, store_v6 = draw(st.booleans()), draw(st.booleans())
    sys_flag = (draw(INT) & ~(BORNHOST_V6 | STOREHOST_V6)) | (BORNHOST_V6 if born_v6 else 0) | (
        STOREHOST_V6 if store_v6 else 0)
    return MessageRecord(
        # up to 300 characters: topics longer than 255 bytes need the v2 layout
        topic=draw(st.text(st.characters(blacklist_categories=("Cs",)), max_size=300)),
        queue_id=draw(INT), queue_offset=draw(LONG), physical_offset=draw(LONG), born_timestamp=draw(LONG),
        store_timestamp=draw(LONG), body=draw(st.binary(max_size=64)),
        properties=draw(st.dictionaries(PROPERTY_TEXT, PROPERTY_TEXT, max_size=4)),
        born_host=(draw(V6 if born_v6 else V4), draw(PORT)), store_host=(draw(V6 if store_v6 else V4), draw(PORT)),
        reconsume_times=draw(INT), flag=draw(INT), sys_flag=sys_flag, prepared_transaction_offset=draw(LONG),
    )


@PROPERTIES
@given(st.lists(records(), max_size=4))
def test_message_records(recs: list[MessageRecord]) -> None:
    body = b"".join(messages.encode_message(r) for r in recs)
    assert messages.decode_records(body) == recs
    assert messages.decode_messages(body, "b") == [
        SampledMessage(MessageQueue(r.topic, "b", r.queue_id), r.queue_offset, r.properties.get("TAGS") or None,
                       r.reconsume_times, r.properties, r.store_timestamp) for r in recs
    ]


@PROPERTIES
@given(st.lists(records(), max_size=4), NAME)
def test_whole_messages(recs: list[MessageRecord], broker: str) -> None:
    body = b"".join(messages.encode_message(r) for r in recs)
    decoded = messages.decode_full_messages(body, broker)
    assert [messages.message_record(m) for m in decoded] == recs
    for message, record in zip(decoded, recs, strict=True):
        assert message.queue == MessageQueue(record.topic, broker, record.queue_id)
        # the broker's id names the store host and the commit-log offset
        assert decode_offset_message_id(message.offset_msg_id) == (*record.store_host, record.physical_offset)


TRACE_TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x01\x02"), max_size=10)
trace_events = st.one_of(
    st.builds(TraceEvent, st.just("SubBefore"), TRACE_TEXT, TRACE_TEXT.map(lambda g: g or None), TRACE_TEXT,
              timestamp=LONG, retry_times=INT),
    st.builds(TraceEvent, st.just("SubAfter"), TRACE_TEXT, TRACE_TEXT.map(lambda g: g or None), TRACE_TEXT,
              timestamp=LONG, success=st.booleans(), cost_ms=LONG),
)


@PROPERTIES
@given(st.lists(trace_events, max_size=4))
def test_trace_records(events: list[TraceEvent]) -> None:
    assert decode_trace_events(encode_trace_events(events)) == events


@PROPERTIES
@given(V4 | V6, INT, LONG)
def test_offset_message_ids(host: str, port: int, physical: int) -> None:
    msg_id = encode_offset_message_id(host, port, physical)
    assert len(msg_id) == (32 if ":" not in host else 56) and msg_id == msg_id.upper()
    assert decode_offset_message_id(msg_id) == (host, port, physical)
    assert decode_offset_message_id(msg_id.lower()) == (host, port, physical)


def test_an_offset_message_id_is_the_store_host_then_the_commit_log_offset() -> None:
    # MessageDecoder.createMessageId: 4 address bytes, the port as an int, the offset as a long
    assert encode_offset_message_id("192.168.0.10", 10911, 0x1234) == (
        "C0A8000A" + "00002A9F" + "0000000000001234")
    assert decode_offset_message_id("not an id") is None
    assert decode_offset_message_id("Z" * 32) is None


@PROPERTIES
@given(st.dictionaries(PROPERTY_TEXT, PROPERTY_TEXT, max_size=5))
def test_message_properties(props: dict[str, str]) -> None:
    assert messages.decode_properties(messages.encode_properties(props)) == props


def test_a_message_is_written_in_the_v1_layout_a_broker_writes() -> None:
    record = MessageRecord(topic="T", queue_id=1, queue_offset=7, physical_offset=512, born_timestamp=1000,
                           store_timestamp=2000, body=b"hi", properties={"TAGS": "a"},
                           born_host=("10.0.255.1", 0), store_host=("127.0.0.1", 10911))
    data = messages.encode_message(record)
    assert data == (
        bytes.fromhex("00000065")  # total size: 101 bytes, itself included
        + bytes.fromhex("daa320a7")  # MESSAGE_MAGIC_CODE (v1)
        + bytes.fromhex("58932aac")  # CRC32 of the body, masked to 31 bits
        + bytes.fromhex("00000001")  # queue id
        + bytes.fromhex("00000000")  # flag
        + bytes.fromhex("0000000000000007")  # queue offset
        + bytes.fromhex("0000000000000200")  # physical offset
        + bytes.fromhex("00000000")  # sys flag (IPv4 hosts)
        + bytes.fromhex("00000000000003e8")  # born timestamp
        + bytes.fromhex("0a00ff01") + bytes.fromhex("00000000")  # born host 10.0.255.1:0
        + bytes.fromhex("00000000000007d0")  # store timestamp
        + bytes.fromhex("7f000001") + bytes.fromhex("00002a9f")  # store host 127.0.0.1:10911
        + bytes.fromhex("00000000")  # reconsume times
        + bytes.fromhex("0000000000000000")  # prepared transaction offset
        + bytes.fromhex("00000002") + b"hi"  # body
        + bytes.fromhex("01") + b"T"  # topic, one-byte length
        + bytes.fromhex("0007") + b"TAGS\x01a\x02"  # properties
    )


# ---------------------------------------------------------------------------------------------
# Frames

SHORT = st.integers(-(2**15), 2**15 - 1)
EXT_FIELDS = st.dictionaries(TEXT, TEXT, max_size=4)


@st.composite
def commands(draw: st.DrawFn) -> RemotingCommand:
    if draw(st.booleans()):  # the compact ROCKETMQ header: 16-bit code and version, known languages
        return RemotingCommand(
            code=draw(SHORT), opaque=draw(INT), flag=draw(INT), language=draw(st.sampled_from(frame.LANGUAGES)),
            version=draw(SHORT), remark=draw(st.none() | TEXT.filter(bool)), ext_fields=draw(EXT_FIELDS),
            body=draw(st.binary(max_size=64)), serialize_type=frame.SERIALIZE_ROCKETMQ,
        )
    return RemotingCommand(
        code=draw(INT), opaque=draw(INT), flag=draw(INT), language=draw(TEXT), version=draw(INT),
        remark=draw(OPT_TEXT), ext_fields=draw(EXT_FIELDS), body=draw(st.binary(max_size=64)),
        serialize_type=frame.SERIALIZE_JSON,
    )


@PROPERTIES
@given(st.lists(commands(), min_size=1, max_size=4), st.integers(1, 64))
def test_frames(cmds: list[RemotingCommand], chunk: int) -> None:
    for cmd in cmds:
        assert frame.decode(frame.encode(cmd)) == cmd
    stream = b"".join(frame.encode(cmd) for cmd in cmds)
    decoder = frame.FrameDecoder()
    got: list[RemotingCommand] = []
    for start in range(0, len(stream), chunk):  # however the bytes arrive
        decoder.feed(stream[start:start + chunk])
        got.extend(decoder)
    assert got == cmds and decoder.buffered == 0


# ---------------------------------------------------------------------------------------------
# The fastjson dialect itself

SCALARS = st.booleans() | LONG | DOUBLE | TEXT
JSON_VALUES = st.recursive(
    st.none() | SCALARS,
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(TEXT, inner.filter(lambda v: v is not None), max_size=3)  # fastjson omits nulls
    | st.dictionaries(LONG, inner.filter(lambda v: v is not None), max_size=3),  # unquoted integer keys
    max_leaves=12,
)


@PROPERTIES
@given(JSON_VALUES)
def test_fastjson(value: Any) -> None:
    assert fastjson.loads(fastjson.dumps_bytes(value)) == value


def test_a_running_infos_properties_are_written_sorted_and_each_change_is_written() -> None:
    def written(properties: dict[str, str]) -> str:
        info = ConsumerRunningInfo("10.0.0.1@1", properties, (), {}, {})
        text = bodies.encode_consumer_running_info(info).decode()
        return text[text.index('"properties":'):text.index(',"statusTable"')]

    base = {"consumerGroup": "g", "PROP_CONSUMEORDERLY": "false", "messageModel": "CLUSTERING"}
    first = written(base)
    assert first == ('"properties":{"PROP_CONSUMEORDERLY":"false","consumerGroup":"g",'
                     '"messageModel":"CLUSTERING"}')
    assert written(dict(reversed(base.items()))) == first  # another order, the same text
    assert written({**base, "PROP_CONSUMEORDERLY": "true"}) == first.replace("false", "true")
    assert written(base) == first
    assert written({**base, "quote": 'a"b'}).endswith(',"quote":"a\\"b"}')
