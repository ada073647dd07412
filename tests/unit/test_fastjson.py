"""The fastjson dialect: non-string keys in, the same dialect out."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqctl.errors import ProtocolError
from rmqctl.model import MessageQueue
from rmqctl.remoting import bodies, fastjson
from rmqctl.remoting.fastjson import ObjectKey


def test_unquoted_integer_keys() -> None:
    assert fastjson.loads('{"brokerAddrs":{0:"127.0.0.1:10911",1:"127.0.0.2:10911"}}') == {
        "brokerAddrs": {0: "127.0.0.1:10911", 1: "127.0.0.2:10911"}
    }


def test_object_keys_become_hashable_message_queues() -> None:
    body = (
        '{"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:'
        '{"brokerOffset":5,"consumerOffset":3,"lastTimestamp":0},'
        '{"brokerName":"broker-a","queueId":1,"topic":"T"}:{"brokerOffset":7,"consumerOffset":7}},'
        '"consumeTps":1.5}'
    )
    stats = bodies.consume_stats(body.encode())
    assert stats.consume_tps == 1.5
    assert stats.offsets[MessageQueue("T", "broker-a", 0)].broker_offset == 5
    assert stats.offsets[MessageQueue("T", "broker-a", 1)].consumer_offset == 7
    assert stats.offsets[MessageQueue("T", "broker-a", 1)].pull_offset is None  # 4.9 has none


def test_browser_compatible_string_keys_are_decoded() -> None:
    key_text = '"{\\"brokerName\\":\\"b\\",\\"queueId\\":2,\\"topic\\":\\"T\\"}"'
    # in a map that is plain JSON the C decoder keeps the key a string, even beside a sibling
    # map that is not plain JSON
    (plain,) = fastjson.loads('{"t":{' + key_text + ":1}}")["t"]
    (beside,) = fastjson.loads('{"t":{' + key_text + ':1}, "u":{0:1}}')["t"]
    assert isinstance(plain, str) and isinstance(beside, str)
    # in a map the tolerant parser walks (a number key beside it), it is decoded at once
    parsed, number = fastjson.loads('{"t":{' + key_text + ':1, 0:2}}')["t"]
    assert isinstance(parsed, ObjectKey) and number == 0
    for key in (plain, beside, parsed):
        assert bodies.message_queue(key) == MessageQueue("T", "b", 2)


def test_whitespace_styled_keys_and_trailing_comma() -> None:
    doc = fastjson.loads('{ "mqTable" : {\n  {\n "topic" : "T", "brokerName":"b", "queueId":0\n } : {"x": 1.5},\n} }')
    (value,) = doc["mqTable"].values()
    assert value["x"] == 1.5


@pytest.mark.parametrize("text", ['{"x": NaN}', '{0: Infinity}', '[-Infinity]', '{"x": 1e999}', '{0:{"x":NaN}}'])
def test_non_finite_numbers_are_rejected(text: str) -> None:
    # fastjson writes NaN/infinite doubles as null; a peer sending them is not a RocketMQ server
    with pytest.raises(ProtocolError, match="finite|range"):
        fastjson.loads(text)


def test_large_longs_survive() -> None:
    assert fastjson.loads("{1:9223372036854775807}") == {1: 9223372036854775807}


@pytest.mark.parametrize("text", ['{"a":1', '{"a" 1}', "[1,2", '{"a":tru}', "", '{"a":1} x', "\xff"])
def test_malformed_bodies_raise_protocol_error(text: str) -> None:
    with pytest.raises(ProtocolError):
        fastjson.loads(text.encode("latin-1") if text == "\xff" else text)


@pytest.mark.parametrize("text", ['{"a":1,"b":{5,"c":2}}', '{"t":{0:{"n":{5,"m":1}},1:{}}}', '{"a":1,"b":[{1,2]}'])
def test_a_malformed_map_inside_a_walked_map_is_an_error_where_the_value_is_read(text: str) -> None:
    # "{5," opens a map keyed by numbers that never comes: the entry it stands in is malformed,
    # and reading the outer map from its first byte must say so, not read past it
    with pytest.raises(ProtocolError):
        fastjson.Scanner(text).value_at(0)
    with pytest.raises(ProtocolError):
        fastjson.loads(text)


def test_a_body_with_a_brace_written_over_a_digit_is_not_read_as_an_empty_running_info() -> None:
    # a group table whose "15" lost its "1" to a brace: read as a running info in one pass, the
    # fields it does not know were read past as far as the stray map, and the rest taken for
    # the next fields, so the body read as a client holding nothing
    body = (b'{"dataVersion":{"counter":1,"timestamp":1},"subscriptionGroupTable":{"g":{"brokerId":0,'
            b'"consumeEnable":true,"consumeTimeoutMinute":{5,"groupName":"g","retryMaxTimes":16}}}')
    with pytest.raises(ProtocolError):
        bodies.consumer_running_info("c", body)


def test_truncated_c_client_body_is_a_protocol_error() -> None:
    # The C++ client writes '"mqTable":}' when it holds no queue.
    with pytest.raises(ProtocolError):
        bodies.consumer_running_info("c", b'{"mqTable":},"properties":{}}')


def test_dumps_writes_the_same_dialect_and_roundtrips() -> None:
    mq = ObjectKey(sorted({"brokerName": "b", "queueId": 3, "topic": "T"}.items()))
    value = {"table": {0: "x", 12: "y"}, "offsetTable": {mq: {"maxOffset": 4}}, "skip": None,
             "flag": True, "name": "ü"}
    text = fastjson.dumps(value)
    assert text == ('{"table":{0:"x",12:"y"},"offsetTable":{{"brokerName":"b","queueId":3,'
                    '"topic":"T"}:{"maxOffset":4}},"flag":true,"name":"ü"}')
    back = fastjson.loads(text)
    assert back["offsetTable"][mq] == {"maxOffset": 4}
    assert back["table"] == {0: "x", 12: "y"}


def test_cluster_info_parses_numeric_broker_ids() -> None:
    body = (b'{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"127.0.0.1:10911",1:"127.0.0.1:10921"},'
            b'"brokerName":"broker-a","cluster":"C","enableActingMaster":false}},'
            b'"clusterAddrTable":{"C":["broker-a"]}}')
    info = bodies.cluster_info(body)
    assert info.masters() == {"broker-a": "127.0.0.1:10911"}
    assert info.brokers["broker-a"].addrs[1] == "127.0.0.1:10921"
    assert info.clusters == {"C": ("broker-a",)}


def test_running_info_reads_droped_and_dropped_and_strategy() -> None:
    body = (b'{"mqTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"commitOffset":"12","droped":true},'
            b'{"brokerName":"b","queueId":1,"topic":"T"}:{"commitOffset":3,"dropped":false}},'
            b'"properties":{"PROP_CONSUME_TYPE":"CONSUME_PASSIVELY","allocateMessageQueueStrategy":'
            b'"org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragelyByCircle@1a2b"},'
            b'"subscriptionSet":[{"topic":"T","subString":"a || b","tagsSet":["a","b"],"subVersion":7},'
            b'{"topic":"%RETRY%G","subString":"*"}]}')
    info = bodies.consumer_running_info("c1", body)
    assert info.mq_table[MessageQueue("T", "b", 0)].dropped is True
    assert info.mq_table[MessageQueue("T", "b", 0)].commit_offset == 12
    assert info.mq_table[MessageQueue("T", "b", 1)].dropped is False
    assert info.strategy == "AVG_BY_CIRCLE"
    assert [s.topic for s in info.user_subscriptions()] == ["T"]
    assert info.user_subscriptions()[0].tags == ("a", "b")


def test_tag_expressions_follow_java_filter_api() -> None:
    from rmqctl.model import parse_tag_expression

    assert parse_tag_expression("T", "*").is_all and parse_tag_expression("T", "").is_all
    spaced = parse_tag_expression("T", " * ")
    assert not spaced.is_all and spaced.tags == ("*",) and spaced.codes == (42,)
    mixed = parse_tag_expression("T", "TagA||*")
    assert not mixed.is_all and mixed.codes == (2598919, 42)
    pair = parse_tag_expression("T", "TagA || TagB")
    assert pair.expression == "TagA || TagB" and pair.codes == (2598919, 2598920)
    assert parse_tag_expression("T", "TagA|TagB").tags == ("TagA|TagB",)
    assert parse_tag_expression("T", "Aa").codes == parse_tag_expression("T", "BB").codes == (2112,)


def test_fast_and_tolerant_paths_agree_and_strings_are_never_rewritten() -> None:
    from rmqctl.remoting.fastjson import _Parser

    texts = [
        '{"a":{0:"x",-3:"y"},"b":{{"brokerName":"b","queueId":1,"topic":"T"}:{"v":1}}}',
        # look-alikes inside strings must survive untouched
        '{"remark":"a,{0:1} and ,{\\"x\\":1}:","m":{1:"{2:3}"}}',
        # a nested object key that the fast path cannot express
        '{"k":{{"a":{"b":1}}:2}}',
        '{"p":{"subscription":"{T=*}","x":[1,{2:3}]}}',
    ]
    for text in texts:
        assert fastjson.loads(text) == _Parser(text).document(), text
    assert fastjson.loads(texts[1])["remark"] == 'a,{0:1} and ,{"x":1}:'
    assert fastjson.loads(texts[1])["m"] == {1: "{2:3}"}


@given(depth=st.integers(500, 530), in_strings=st.integers(0, 700),
       escaped=st.booleans(), keyed=st.booleans())
@settings(max_examples=40, deadline=None)
def test_a_body_is_refused_exactly_when_it_nests_deeper_than_the_limit(
        depth: int, in_strings: int, escaped: bool, keyed: bool) -> None:
    """Brackets inside strings (escaped or not) never count; containers do, however many."""
    from rmqctl.remoting.fastjson import MAX_DEPTH

    text = '{"s":"' + ('\\"' if escaped else "") + "[{" * in_strings + '","d":' + "[" * (depth - 1) + "]" * (depth - 1)
    text += ',"m":{{"brokerName":"b","queueId":0,"topic":"T"}:1}}' if keyed else "}"
    if depth > MAX_DEPTH:
        with pytest.raises(ProtocolError, match="deeper"):
            fastjson.loads(text)
    else:
        assert fastjson.loads(text)["s"].endswith("[{" * in_strings)
