"""A served emulator's advances and the cyclic collector (``FrozenWorld``).

What an advance of the virtual clock leaves alive is frozen out of the collector's passes at once,
so the requests that follow it are not held up by a pass over all of it; cyclic garbage frozen
with it is still collected, at every ``full_every``-th advance."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import httpx
import pytest

from rmqctl.emulator.clock import FrozenWorld
from rmqctl.emulator.scenario import load_scenario
from rmqctl.emulator.serve import ServeOptions, running_emulator


class Node:
    """An object that can hold itself in a cycle and be watched through a weak reference."""

    def __init__(self) -> None:
        self.me: Node | None = None


@pytest.fixture
def thawed() -> Iterator[None]:
    """Whatever a test freezes is handed back to the collector after it."""
    gc.collect()
    yield
    gc.unfreeze()
    gc.collect()


def test_what_an_advance_leaves_alive_is_frozen_without_a_pass(thawed: None) -> None:
    kept: list[list[int]] = []
    heap = FrozenWorld(full_every=100)

    def step() -> None:
        assert not gc.isenabled()  # the whole advance runs with the collector off
        kept.extend([i] for i in range(50_000))

    frozen_before = gc.get_freeze_count()
    collections_before = sum(s["collections"] for s in gc.get_stats())
    heap.advance(step)
    assert gc.isenabled()
    assert gc.get_freeze_count() - frozen_before >= 50_000
    assert gc.get_count()[0] < 100  # the youngest generation holds none of it
    assert sum(s["collections"] for s in gc.get_stats()) == collections_before


def test_cyclic_garbage_frozen_with_an_advance_is_collected_at_the_full_pass(thawed: None) -> None:
    heap = FrozenWorld(full_every=3)
    watched: list[weakref.ref[Node]] = []

    def step() -> None:
        node = Node()
        node.me = node  # garbage as soon as the step ends, but only a pass can tell
        watched.append(weakref.ref(node))

    heap.advance(step)
    heap.advance(lambda: None)
    assert watched[0]() is not None
    heap.advance(lambda: None)
    assert watched[0]() is None
    assert heap.advances == 3


def test_an_advance_that_fails_still_hands_the_collector_back(thawed: None) -> None:
    heap = FrozenWorld()

    def step() -> None:
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        heap.advance(step)
    assert gc.isenabled()


async def test_the_served_emulator_freezes_after_each_advance_when_it_owns_its_heap(thawed: None) -> None:
    for own_heap in (False, True):
        options = ServeOptions(clock="virtual", at=10, own_heap=own_heap)
        async with (running_emulator(load_scenario("idle-consumers"), options) as (served, _),
                    httpx.AsyncClient(base_url=served.control, timeout=20) as http):
            gc.unfreeze()
            response = await http.post("/v1/advance", json={"seconds": 20})
            assert response.status_code == 200 and response.json()["at"] == 30
            assert (gc.get_freeze_count() > 0) is own_heap
