"""fan_out: every target's result or error under its name, the reads at the same time, none left
running when the caller is cancelled or a read fails with something other than an rmqctl error."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

import pytest

from rmqctl import errors
from rmqctl.fanout import bounded, fan_out

K = TypeVar("K")


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


def sleeping_read(cancelled: list[K]) -> Callable[[K], Awaitable[K]]:
    """A read that waits a minute, noting in ``cancelled`` each one cancelled first."""

    async def read(item: K) -> K:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.append(item)
            raise
        return item

    return read


async def test_cancelling_the_caller_cancels_every_read() -> None:
    cancelled: list[str] = []
    read = sleeping_read(cancelled)

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


async def test_bounded_keeps_the_order_and_the_limit_with_as_many_tasks_as_the_limit() -> None:
    running = 0
    most = 0
    started: list[int] = []
    made = 0
    loop = asyncio.get_running_loop()

    def factory(loop: asyncio.AbstractEventLoop, coro, **kwargs):  # type: ignore[no-untyped-def]
        nonlocal made
        made += 1
        return asyncio.Task(coro, loop=loop, **kwargs)

    async def read(item: int) -> int:
        nonlocal running, most
        started.append(item)
        running += 1
        most = max(most, running)
        for _ in range(item % 3 + 1):
            await asyncio.sleep(0)
        running -= 1
        return item * 10

    loop.set_task_factory(factory)
    try:
        results = await bounded(list(range(50)), read, 4)
    finally:
        loop.set_task_factory(None)
    assert results == [i * 10 for i in range(50)]
    assert most == 4
    assert started[:4] == [0, 1, 2, 3] and sorted(started) == list(range(50))
    assert made == 4
    assert await bounded([], read, 4) == []
    assert await bounded([7], read, 0) == [70]  # a limit below one still reads, one at a time


async def test_bounded_stops_every_other_read_at_the_first_failure() -> None:
    cancelled: list[int] = []

    async def read(item: int) -> int:
        try:
            if item == 5:
                await asyncio.sleep(0)
                raise errors.TimeoutError("item 5 timed out")
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.append(item)
            raise
        return item

    with pytest.raises(errors.TimeoutError, match="item 5"):
        await bounded(list(range(10)), read, 8)
    await asyncio.sleep(0)
    assert sorted(cancelled) == [0, 1, 2, 3, 4, 6, 7]  # the reads in flight; 8 and 9 never began


async def test_bounded_leaves_no_read_running_when_its_caller_is_cancelled() -> None:
    cancelled: list[int] = []
    read = sleeping_read(cancelled)

    call = asyncio.ensure_future(bounded(list(range(6)), read, 3))
    await asyncio.sleep(0.01)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    await asyncio.sleep(0)
    assert sorted(cancelled) == [0, 1, 2]


async def test_fan_out_with_a_limit_keeps_each_error_under_its_name_and_the_limit() -> None:
    running = 0
    most = 0

    async def read(address: str) -> str:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await asyncio.sleep(0)
        running -= 1
        if address.endswith(":2"):
            raise errors.TimeoutError(f"{address} timed out")
        return address.upper()

    targets = {f"b{i}": f"h:{i}" for i in range(1, 8)}
    results, failures = await fan_out(targets, read, limit=2)
    assert most == 2
    assert list(results) == ["b1", "b3", "b4", "b5", "b6", "b7"] and results["b3"] == "H:3"
    assert set(failures) == {"b2"} and str(failures["b2"]) == "h:2 timed out"


async def test_bounded_one_at_a_time_runs_in_the_callers_task_in_order() -> None:
    made = 0
    loop = asyncio.get_running_loop()
    seen: list[tuple[int, asyncio.Task[object] | None]] = []

    def factory(loop: asyncio.AbstractEventLoop, coro, **kwargs):  # type: ignore[no-untyped-def]
        nonlocal made
        made += 1
        return asyncio.Task(coro, loop=loop, **kwargs)

    async def read(item: int) -> int:
        seen.append((item, asyncio.current_task()))
        await asyncio.sleep(0)
        if item == 3:
            raise errors.TimeoutError("item 3 timed out")
        return item * 10

    loop.set_task_factory(factory)
    try:
        assert await bounded([0, 1, 2], read, 1) == [0, 10, 20]
        with pytest.raises(errors.TimeoutError, match="item 3"):
            await bounded([2, 3, 4], read, 1)
        assert await fan_out({"a": "h:1", "b": "h:22"}, lambda a: read(len(a) + 4), limit=1) == (
            {"a": 70, "b": 80}, {})
    finally:
        loop.set_task_factory(None)
    assert made == 0
    assert [item for item, _ in seen] == [0, 1, 2, 2, 3, 7, 8]  # 4 never began
    assert {task for _, task in seen} == {asyncio.current_task()}
