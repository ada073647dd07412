"""``group list`` pauses the cyclic garbage collector while it assembles its rows (thousands of
groups build objects the collector would rescan again and again), and lets it run again after,
however its blocks nest or interleave, and only if it ran before."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator

import pytest

from rmqctl.service import ClusterService, collector_paused
from tests.fake_source import FakeClock
from tests.unit.test_group_list_requests import two_groups


@pytest.fixture
def collector() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_the_collector_is_paused_while_the_list_is_assembled_and_runs_after(collector: None) -> None:
    backend = two_groups(7, 7)
    seen: list[bool] = []
    original = backend.consumer_connection

    async def connection(address: str, group: str):  # type: ignore[no-untyped-def]
        seen.append(gc.isenabled())
        return await original(address, group)

    backend.consumer_connection = connection  # type: ignore[method-assign]
    rows = asyncio.run(ClusterService(backend, FakeClock()).group_summaries()).value
    assert len(rows) == 2 and seen and not any(seen)
    assert gc.isenabled()


def test_interleaved_pauses_end_with_the_last_and_a_disabled_collector_stays_disabled(collector: None) -> None:
    first, second = collector_paused(), collector_paused()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert not gc.isenabled()
    second.__exit__(None, None, None)
    assert gc.isenabled()
    gc.disable()
    with collector_paused():
        pass
    assert not gc.isenabled()
