"""How a round treats the cyclic garbage collector: a pass where an error path ran, none where
none did, and the full collection that bounds whatever was frozen."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from rmqctl import errors
from rmqctl.exporter.rounds import FULL_COLLECTION_EVERY, _Heap


class Node:
    """A container that can sit in a reference cycle."""

    def __init__(self) -> None:
        self.other: Node | None = None


def cyclic_garbage() -> weakref.ref[Node]:
    """A cycle nothing else refers to: only the collector frees it."""
    a, b = Node(), Node()
    a.other, b.other = b, a
    return weakref.ref(a)


@pytest.fixture
def passes() -> Iterator[list[int]]:
    """The generations of the collector's passes while the test runs; the heap is thawed after."""
    seen: list[int] = []

    def record(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            seen.append(info["generation"])

    gc.collect()
    gc.callbacks.append(record)
    try:
        yield seen
    finally:
        gc.callbacks.remove(record)
        gc.unfreeze()
        gc.collect()


def test_a_round_without_an_error_path_freezes_its_survivors_without_a_pass(passes: list[int]) -> None:
    heap = _Heap(own_heap=True)
    frozen = gc.get_freeze_count()
    with heap.round():
        kept = [Node() for _ in range(1000)]
        passes.clear()
    assert passes == []
    assert gc.get_freeze_count() >= frozen + len(kept)


def test_a_round_that_made_an_error_collects_its_cycles_before_freezing(passes: list[int]) -> None:
    heap = _Heap(own_heap=True)
    with heap.round():
        garbage = cyclic_garbage()
        errors.ConnectionError("broker-a: connection refused")
        passes.clear()
    assert passes and max(passes) >= 1
    assert garbage() is None


def test_cycles_a_clean_round_froze_are_freed_by_the_full_collection(passes: list[int]) -> None:
    heap = _Heap(own_heap=True)
    with heap.round():
        garbage = cyclic_garbage()
    assert garbage() is not None  # frozen, as the doc says: it waits for the full collection
    for _ in range(FULL_COLLECTION_EVERY - 2):
        with heap.round():
            pass
    assert garbage() is not None
    with heap.round():
        passes.clear()
    assert 2 in passes
    assert garbage() is None


def test_without_a_heap_of_its_own_every_round_collects_and_nothing_is_frozen(passes: list[int]) -> None:
    heap = _Heap(own_heap=False)
    frozen = gc.get_freeze_count()
    with heap.round():
        garbage = cyclic_garbage()
        passes.clear()
    assert passes and max(passes) >= 1
    assert garbage() is None
    assert gc.get_freeze_count() == frozen


def test_every_rmqctl_error_counts_as_an_error_path() -> None:
    before = errors.errors_made()
    errors.RemoteError(17, "topic not exist", address="127.0.0.1:10911")
    errors.ProtocolError("truncated frame", b"\x00")
    errors.ConsumerNotOnline(206, "the consumer group not online", address="127.0.0.1:10911")
    assert errors.errors_made() == before + 3



def test_cycles_made_between_rounds_are_collected_before_the_next_round_is_frozen(passes: list[int]) -> None:
    heap = _Heap(own_heap=True)
    with heap.round():
        pass
    garbage = cyclic_garbage()  # made after a round (the encoding, a scrape): young, not frozen yet
    with heap.round():
        passes.clear()
    assert garbage() is None
