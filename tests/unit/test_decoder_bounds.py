"""Decoders stay bounded in memory as well as time: object keys nested inside object keys.

fastjson writes a map keyed by objects as ``{{"brokerName":…}:…}``; a hostile peer can nest such
keys inside keys. Keeping each key's text as the name of the enclosing key re-escaped every level
below it, so the input's nesting multiplied memory by about four per two levels (a 139-byte body
needed gigabytes). Keys nest at most :data:`fastjson.MAX_KEY_DEPTH` levels, and memory is measured
with tracemalloc, an allocation count that does not depend on the machine's load.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqctl.errors import ProtocolError
from rmqctl.remoting import fastjson
from rmqctl.remoting.codes import RequestCode
from tests.fakes import FakeServer
from tests.unit.test_hostile_peers import answer, assert_one_error_line, cluster_with, run_cli


def nested_object_keys(levels: int) -> bytes:
    """``{{{"a":1}:1}:1}`` with ``levels`` opening braces: each object is the key of the next."""
    return b"{" * levels + b'"a":1' + b"}:1" * (levels - 1) + b"}"


def peak_bytes(fn: Callable[[], Any]) -> int:
    tracemalloc.start()
    try:
        try:
            fn()
        except ProtocolError:
            pass
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_the_139_byte_body_that_needed_gigabytes_is_refused_in_kilobytes() -> None:
    data = nested_object_keys(34)  # the seed: 139 bytes, ~20 GiB before keys were bounded
    assert len(data) == 139
    with pytest.raises(ProtocolError, match="map keys nested deeper than 4 levels"):
        fastjson.loads(data)
    assert peak_bytes(lambda: fastjson.loads(data)) < 256 * 1024


def test_object_keys_up_to_the_cap_parse_to_nested_object_keys() -> None:
    doc = fastjson.loads(b'{{{"brokerName":"a","queueId":1}:"x"}:2}')
    ((outer, value),) = doc.items()
    assert value == 2
    ((inner, inner_value),) = outer
    assert inner_value == "x"
    assert isinstance(inner, fastjson.ObjectKey) and inner.get("brokerName") == "a" and inner.get("queueId") == 1
    # a key nested one level too deep is refused, one level less is accepted
    fastjson.loads(nested_object_keys(fastjson.MAX_KEY_DEPTH + 1))
    with pytest.raises(ProtocolError):
        fastjson.loads(nested_object_keys(fastjson.MAX_KEY_DEPTH + 2))


def test_equal_object_keys_with_fields_in_another_order_are_one_key() -> None:
    doc = fastjson.loads(b'{{{"b":1,"a":2}:1,"z":[1]}:"first",{"z":[1],{"a":2,"b":1}:1}:"second"}')
    assert list(doc.values()) == ["second"]


@settings(max_examples=60, deadline=None)
@given(levels=st.integers(min_value=1, max_value=200), browser=st.booleans())
def test_memory_grows_at_most_linearly_with_nested_keys(levels: int, browser: bool) -> None:
    data = nested_object_keys(levels)
    if browser:  # BrowserCompatible output: the key object as a JSON string
        data = b'{"' + data.replace(b'"', b'\\"') + b'":1}'
    # ~30 live Python objects per input byte at most, plus the interpreter's fixed costs
    assert peak_bytes(lambda: fastjson.loads(data)) < 64 * 1024 + 2048 * len(data)


def test_a_broker_answering_nested_keys_ends_the_cli_with_one_line_and_exit_3() -> None:
    body = b'{"offsetTable":' + nested_object_keys(80) + b"}"
    handler = answer(body)
    with FakeServer({RequestCode.GET_CONSUMER_CONNECTION_LIST: handler,
                     RequestCode.GET_CONSUME_STATS: handler}) as broker:
        namesrv = {RequestCode.GET_BROKER_CLUSTER_INFO: lambda req: (0, cluster_with(broker.address))}
        with FakeServer(namesrv) as ns:
            code, lines = run_cli("-n", ns.address, "group", "progress", "G")
    assert code == 3, (code, lines)
    assert_one_error_line(lines)
    assert "map keys nested deeper" in lines[0]
