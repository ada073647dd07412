"""Held (long-polling) pulls cost O(1) each to hold, wake and drop, and leave nothing behind.

Each new held pull used to rebuild its queue's waiting list once it held more than 64 entries
(10k/20k/30k pulls took 4/17/28 s), and a client that left kept its held pulls (and their timers'
references) in memory until each one timed out: 100k of them held 384 MiB.
"""

from __future__ import annotations

import gc
import time
import tracemalloc

from rmqctl.emulator.pulls import FLAG_SUSPEND, PullRequestHeader, PullResult
from tests.emulator.test_broker_rules import FakeChannel, make_broker, registered


def hold(broker, channel, count: int, queue: int = 0) -> list[PullResult]:  # type: ignore[no-untyped-def]
    got: list[PullResult] = []
    header = PullRequestHeader("G", "T", queue, 0, FLAG_SUSPEND, 5, suspend_timeout_ms=3_600_000)
    for _ in range(count):
        broker.pull(channel, header, got.append)
    return got


def test_a_closed_clients_held_pulls_go_with_their_timers() -> None:
    broker = make_broker()
    registered(broker, "tagB", 5)
    leaving, staying = FakeChannel(), FakeChannel()
    gc.collect()
    tracemalloc.start()
    try:
        baseline = tracemalloc.get_traced_memory()[0]
        hold(broker, leaving, 20_000)
        stayed = hold(broker, staying, 3, queue=1)
        assert broker.suspended_pulls() == 20_003
        holding = tracemalloc.get_traced_memory()[0] - baseline
        broker.pulls.channel_closed(leaving)
        gc.collect()
        left = tracemalloc.get_traced_memory()[0] - baseline
    finally:
        tracemalloc.stop()
    assert broker.suspended_pulls() == 3
    assert broker.scheduler.pending() == 3
    assert broker.scheduler.scheduled() < 4096 + 3  # cancelled timers are dropped from the heap too
    assert holding > 2_000_000 and left < holding / 10, (holding, left)
    # the other client's pulls still wake on a matching message
    broker.put_message("T", 1, "tagB", seq=1, msg_id="m1")
    broker.scheduler.run_until(broker.scheduler.now_ms + 1)
    assert [r.messages[0].tag for r in stayed] == ["tagB"] * 3


def cpu_seconds_to_hold(count: int) -> float:
    broker = make_broker()
    registered(broker, "tagB", 5)
    gc.disable()  # the cyclic collector's full passes grow with the heap, whatever holds the pulls
    try:
        started = time.process_time()
        hold(broker, FakeChannel(), count)
        return time.process_time() - started
    finally:
        gc.enable()


def test_holding_grows_linearly_with_the_held_pulls() -> None:
    small = min(cpu_seconds_to_hold(10_000) for _ in range(3))
    large = min(cpu_seconds_to_hold(40_000) for _ in range(3))
    # linear is ~4x, quadratic ~16x (and 4 s at 10k); CPU time: other work on the machine does not count
    assert large < 8 * small + 0.05, (small, large)


def test_a_matching_message_wakes_each_held_pull_once_and_drops_it() -> None:
    broker = make_broker()
    registered(broker, "tagB", 5)
    got = hold(broker, FakeChannel(), 5)
    broker.put_message("T", 0, "tagA", seq=1, msg_id="m1")  # filtered: nobody wakes
    broker.scheduler.run_until(broker.scheduler.now_ms + 1)
    assert got == [] and broker.suspended_pulls() == 5
    broker.put_message("T", 0, "tagB", seq=2, msg_id="m2")
    broker.scheduler.run_until(broker.scheduler.now_ms + 1)
    assert len(got) == 5 and broker.suspended_pulls() == 0
    broker.put_message("T", 0, "tagB", seq=3, msg_id="m3")
    broker.scheduler.run_until(broker.scheduler.now_ms + 3_700_000)  # past every timeout
    assert len(got) == 5  # none answered twice
