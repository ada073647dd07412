"""Every decoder's memory is bounded by its input: at most a fixed overhead plus a constant per byte.

A decoder that is linear in time can still allocate out of all proportion (object keys nested in
object keys took ~20 GiB for 139 bytes). tracemalloc counts what Python allocates while one input
is decoded, whatever the machine is doing, so the bound is exact and never flaky. The constant is
generous (a one-byte JSON value becomes a Python object of tens of bytes) but an exponential or
quadratic blow-up passes it within a few dozen bytes of input.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rmqctl.errors import ProtocolError
from rmqctl.remoting import fastjson, frame
from tests.unit.test_decoder_properties import BODY_DECODERS, EDITS, GOLDEN_FRAMES, JSONISH, mutate

#: bytes Python may allocate per input byte, and once per decode
PER_BYTE = 256
OVERHEAD = 256 * 1024

DECODERS: dict[str, Callable[[bytes], Any]] = {
    **BODY_DECODERS, "fastjson": fastjson.loads, "frame": lambda b: frame.decode_payload(b[4:]),
}
MEMORY = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def peak(fn: Callable[[bytes], Any], data: bytes) -> int:
    tracemalloc.start()
    try:
        try:
            fn(data)
        except ProtocolError:
            pass
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def assert_bounded(name: str, data: bytes) -> None:
    used = peak(DECODERS[name], data)
    assert used <= OVERHEAD + PER_BYTE * len(data), (name, len(data), used)


def nested_keys(levels: int) -> bytes:
    return b"{" * levels + b'"a":1' + b"}:1" * (levels - 1) + b"}"


SHAPES = {
    "nested-object-keys": nested_keys(60),
    "browser-keys": b'{"' + nested_keys(12).replace(b'"', b'\\"') + b'":1}',
    "many-small-objects": b"[" + b'{"a":{}},' * 4_000 + b"1]",
    "many-object-keys": b"{" + b",".join(b'{"topic":"T","queueId":%d}:{}' % i for i in range(1000)) + b"}",
    "many-number-keys": b"{" + b",".join(b"%d:[]" % i for i in range(4000)) + b"}",
    "long-strings": b'["' + b"\\u00e9" * 10_000 + b'"]',
    "deep-arrays": b"[" * 400 + b"]" * 400,
    "escaped-quotes": b'"' + b'\\"' * 10_000,
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("name", sorted(DECODERS))
def test_pathological_shapes_stay_within_the_memory_bound(name: str, shape: str) -> None:
    assert_bounded(name, SHAPES[shape])


@MEMORY
@given(st.sampled_from(sorted(BODY_DECODERS) + ["fastjson"]), JSONISH)
def test_any_text_stays_within_the_memory_bound(name: str, text: str) -> None:
    assert_bounded(name, text.encode())


@MEMORY
@given(st.sampled_from(GOLDEN_FRAMES), EDITS)
def test_mutated_golden_frames_stay_within_the_memory_bound(golden: bytes, edits: list[tuple[int, int, int]]) -> None:
    assert_bounded("frame", mutate(golden, edits))
