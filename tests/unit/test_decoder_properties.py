"""Every decoder, on any input: a value or ProtocolError, never anything else, in linear time.

Hypothesis feeds arbitrary and mutated bytes to the frame codec, the header decoders, the
fastjson parser and every body converter, with a deadline per input. The pathological inputs
found by probing (quadratic string scans, deep nesting, huge integers, colliding object keys,
non-finite numbers, wrong JSON types) are kept as regressions; the timing checks compare an
input with one twice its size (a ratio, not an absolute time), so a slow machine does not fail.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from rmqctl.errors import ProtocolError
from rmqctl.remoting import bodies, fastjson, frame, messages

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
GOLDEN_FRAMES = sorted(p.read_bytes() for p in GOLDEN.rglob("*.bin"))

FAST = settings(max_examples=150, deadline=1000, suppress_health_check=[HealthCheck.too_slow])

BODY_DECODERS: dict[str, Callable[[bytes], Any]] = {
    "cluster_info": bodies.cluster_info,
    "topic_route": lambda b: bodies.topic_route("T", b),
    "string_list": lambda b: bodies.string_list(b, "topicList"),
    "topic_stats": lambda b: bodies.topic_stats("T", b),
    "consumer_connection": bodies.consumer_connection,
    "consume_stats": bodies.consume_stats,
    "broker_consume_stats": bodies.broker_consume_stats,
    "consumer_running_info": lambda b: bodies.consumer_running_info("c", b),
    "subscription_groups": bodies.subscription_groups,
    "kv_table": bodies.kv_table,
    "subscription_group_config": bodies.subscription_group_config,
    "producer_connection": bodies.producer_connection,
    "topic_config": bodies.topic_config,
    "topic_configs": bodies.topic_configs,
    "consumer_offsets": bodies.consumer_offsets,
    "query_subscription": bodies.query_subscription,
    "broker_config": bodies.broker_config,
    "heartbeat_data": bodies.heartbeat_data,
    "message_records": messages.decode_records,
}


def only_protocol_errors(fn: Callable[[bytes], Any], data: bytes) -> None:
    try:
        fn(data)
    except ProtocolError:
        pass


def mutate(data: bytes, edits: list[tuple[int, int, int]]) -> bytes:
    """Apply (op, position, byte) edits: 0 overwrite, 1 insert, 2 delete, 3 duplicate a slice."""
    out = bytearray(data)
    for op, pos, value in edits:
        if not out:
            out.append(value)
            continue
        pos %= len(out)
        if op == 0:
            out[pos] = value
        elif op == 1:
            out.insert(pos, value)
        elif op == 2:
            del out[pos]
        else:
            out[pos:pos] = out[pos : pos + value]
    return bytes(out)


EDITS = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 1 << 20), st.integers(0, 255)), max_size=8)

# JSON-ish text built from the characters that matter to the parsers
JSONISH = st.text(alphabet='{}[]":,0123456789-.eE \\tfnruNaIiy', max_size=300)


@FAST
@given(st.binary(max_size=600))
@example(b"\x00\x00\x00\x08\x00\x00\x00\x04[[[[")
@example(b"\x00\x00\x00\x05\x01\x00\x00\x00\xff")
def test_frame_decode_any_bytes(data: bytes) -> None:
    only_protocol_errors(frame.decode, data)
    only_protocol_errors(frame.decode_payload, data)
    decoder = frame.FrameDecoder()
    decoder.feed(data)
    only_protocol_errors(lambda _: list(decoder), data)


@FAST
@given(st.sampled_from(GOLDEN_FRAMES), EDITS)
def test_mutated_golden_frames(golden: bytes, edits: list[tuple[int, int, int]]) -> None:
    data = mutate(golden, edits)
    try:
        cmd = frame.decode(data)
    except ProtocolError:
        cmd = frame.decode_payload(golden[4:])  # still exercise the body decoders
    for decode in BODY_DECODERS.values():
        only_protocol_errors(decode, cmd.body)
        only_protocol_errors(decode, mutate(cmd.body, edits))


@FAST
@given(st.one_of(
    st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
                 lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                 max_leaves=10),
    st.dictionaries(st.sampled_from(["code", "opaque", "flag", "version", "language", "remark", "extFields"]),
                    st.none() | st.booleans() | st.integers() | st.text(max_size=5) | st.lists(st.integers())),
))
def test_json_header_of_any_shape(header: Any) -> None:
    raw = json.dumps(header).encode()
    payload = struct.pack(">i", len(raw)) + raw
    only_protocol_errors(frame.decode_payload, payload)


@FAST
@given(st.binary(max_size=200))
def test_binary_header_any_bytes(raw: bytes) -> None:
    payload = struct.pack(">i", (1 << 24) | len(raw)) + raw
    only_protocol_errors(frame.decode_payload, payload)


@FAST
@given(JSONISH)
@example('{{1:1,"1":"a"}:2}')
@example('{0:NaN}')
@example('{"a":' + "9" * 5000 + "}")
def test_fastjson_any_text(text: str) -> None:
    only_protocol_errors(fastjson.loads, text.encode())


@FAST
@given(st.sampled_from(sorted(BODY_DECODERS)), st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["brokerAddrTable", "clusterAddrTable", "brokerAddrs", "queueDatas", "brokerDatas",
                         "topicList", "offsetTable", "connectionSet", "subscriptionTable", "tagsSet", "codeSet",
                         "mqTable", "properties", "subscriptionSet", "subscriptionGroupTable", "table",
                         "consumeTps", "topicPutTps", "consumeStatsList",
                         "brokerOffset", "queueId", "topic", "brokerName",
                         "locked", "droped", "retryQueueNums", "topicConfigTable", "readQueueNums",
                         "consumerDataSet", "subscriptionDataSet", "subscriptionData", "x"]), inner, max_size=4),
    max_leaves=12))
def test_body_converters_on_any_json_shape(name: str, doc: Any) -> None:
    only_protocol_errors(BODY_DECODERS[name], json.dumps(doc).encode())


# ---------------------------------------------------------------------------------------------
# Regressions: the inputs of the probe, each must be a ProtocolError (or a value), quickly


@pytest.mark.parametrize("data", [
    b"[" * 100_000,
    b'{"a":' * 50_000,
    b"{1:" * 50_000,
    b'{"x":' + b"7" * 5000 + b"}",
    b"{0:" + b"1" * 5000 + b"}",
    b'{"consumeTps":Infinity}',
    b'{"consumeTps":1e999}',
    b'{"offsetTable":{{"brokerName":"b","queueId":NaN,"topic":"T"}:{}}}',
    b'{{1:1,"1":"a"}:2}',
    b'{"brokerAddrTable":true,"clusterAddrTable":[1]}',
    b'{"queueDatas":"abc","brokerDatas":[true]}',
    b'{"connectionSet":[{"clientId":{"a":1}}]}',
    b'{"offsetTable":{{"brokerName":"b","queueId":"x","topic":"T"}:{"brokerOffset":[1]}}}',
])
def test_pathological_bodies_raise_protocol_error_only(data: bytes) -> None:
    for decode in BODY_DECODERS.values():
        only_protocol_errors(decode, data)


def test_wrong_json_type_names_the_field() -> None:
    with pytest.raises(ProtocolError, match="queueDatas"):
        bodies.topic_route("T", b'{"queueDatas":true}')
    with pytest.raises(ProtocolError, match="OffsetWrapper.brokerOffset"):
        bodies.consume_stats(b'{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"brokerOffset":[]}}}')
    with pytest.raises(ProtocolError, match="consumeTps"):
        bodies.consume_stats(b'{"offsetTable":{},"consumeTps":"NaN"}')


@pytest.mark.parametrize("header", [
    {"code": 0, "opaque": "abc"},
    {"code": 0, "flag": [1]},
    {"code": 0, "version": 1.5},
    {"code": 0, "opaque": 2**40},
    {"code": True},
    {"code": 0, "remark": {"a": 1}},
    {"code": 0, "extFields": {"k": [1, 2]}},
    {"code": 0, "language": ["JAVA"]},
])
def test_header_fields_of_the_wrong_type(header: dict[str, Any]) -> None:
    raw = json.dumps(header).encode()
    with pytest.raises(ProtocolError):
        frame.decode_payload(struct.pack(">i", len(raw)) + raw)


def test_deep_header_json_is_refused_without_recursion() -> None:
    raw = b'{"code":0,"extFields":' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    with pytest.raises(ProtocolError, match="deep"):
        frame.decode_payload(struct.pack(">i", len(raw)) + raw)


def test_object_keys_that_print_alike_do_not_break_sorting() -> None:
    (key,) = fastjson.loads(b'{{1:1,"1":"a"}:2}')
    assert isinstance(key, fastjson.ObjectKey) and sorted(v for _, v in key if isinstance(v, int)) == [1]


# ---------------------------------------------------------------------------------------------
# Linear time: a megabyte-sized input of each shape that was once quadratic is read at once


@pytest.mark.parametrize("make", [
    pytest.param(lambda n: b'"' + b'\\"' * n, id="escaped-quotes"),  # was 2.7 s at 16000
    pytest.param(lambda n: b'{"k":"' + b'\\"' * n, id="unterminated-string-after-key"),
    pytest.param(lambda n: b"{0:" + b'"a",' * n, id="fastjson-keys-then-quotes"),
    pytest.param(lambda n: b"[" + b"{1:" * n, id="many-openers"),
    pytest.param(lambda n: b'{"a":"x",' * n, id="unterminated-object"),
    pytest.param(lambda n: b"{" + b",{" * n, id="key-scan-restarts"),
    pytest.param(lambda n: b"{" + b"-1" * n, id="long-number-key"),
])
@pytest.mark.timeout(120)
def test_parse_time_grows_linearly(make: Callable[[int], bytes]) -> None:
    # Linear: well under a second for each shape at this size. Quadratic would be some 10^12
    # steps (16000 escaped quotes once took 2.7 s; this is 60 times as many) and never end
    # within the time-out however fast or loaded the machine is, so no time is measured.
    only_protocol_errors(fastjson.loads, make(1_000_000))


@pytest.mark.parametrize("body", [
    b'{"consumerDataSet":true}',
    b'{"consumerDataSet":[{"subscriptionDataSet":7}]}',
    b'{"producerDataSet":1.5}',
])
def test_heartbeat_fields_of_the_wrong_json_type_are_protocol_errors(body: bytes) -> None:
    with pytest.raises(ProtocolError, match="expected a list"):
        bodies.heartbeat_data(body)
