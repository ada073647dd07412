"""fan_out: every target's result or error under its name, the reads at the same time, none left
running when the caller is cancelled or a read fails with something other than an rmqctl error."""

from __future__ import annotations

import asyncio

import pytest

from rmqctl import errors
from rmqctl.fanout import fan_out


async def test_each_target_keeps_its_result_or_its_error_under_its_name() -> None:
    async def read(address: str) -> str:
        await asyncio.sleep(0)
        if address.endswith(":2"):
            raise errors.TimeoutError(f"{address} timed out")
        return address.upper()

    results, failures = await fan_out({"a": "h:1", "b": "h:2", "c": "h:3"}, read)
    assert results == {"a": "H:1", "c": "H:3"}
    assert list(results) == ["a", "c"]
    assert set(failures) == {"b"} and str(failures["b"]) == "h:2 timed out"


async def test_no_target_and_one_target() -> None:
    async def read(address: str) -> int:
        return len(address)

    assert await fan_out({}, read) == ({}, {})
    assert await fan_out({"only": "abc"}, read) == ({"only": 3}, {})


async def test_the_reads_run_at_the_same_time() -> None:
    started: list[str] = []
    release = asyncio.Event()

    async def read(address: str) -> str:
        started.append(address)
        await release.wait()
        return address

    running = asyncio.ensure_future(fan_out({n: n for n in "abcd"}, read))
    for _ in range(5):
        await asyncio.sleep(0)
    assert sorted(started) == ["a", "b", "c", "d"]  # all four wait at once: none waits for another
    release.set()
    assert (await running)[0] == {n: n for n in "abcd"}


async def test_cancelling_the_caller_cancels_every_read() -> None:
    cancelled: list[str] = []

    async def read(address: str) -> str:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.append(address)
            raise
        return address

    running = asyncio.ensure_future(fan_out({n: n for n in "abc"}, read))
    for _ in range(3):
        await asyncio.sleep(0)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    for _ in range(3):
        await asyncio.sleep(0)
    assert sorted(cancelled) == ["a", "b", "c"]


async def test_a_bug_in_one_read_raises_and_leaves_no_read_running() -> None:
    async def read(address: str) -> str:
        if address == "a":
            raise ValueError("a bug")
        await asyncio.sleep(0.01 if address == "c" else 60)
        return address

    with pytest.raises(ValueError, match="a bug"):
        await asyncio.wait_for(fan_out({n: n for n in "abc"}, read), 5)
    await asyncio.sleep(0)
    assert asyncio.all_tasks() == {asyncio.current_task()}  # "b" was cancelled, not left waiting
