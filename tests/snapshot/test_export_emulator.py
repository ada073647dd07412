"""Export on the embedded emulator: 30 virtual minutes of stall-and-leave at 30 s, no host-clock wait.

The scenario (rmqctl/emulator/scenarios/stall-and-leave.toml): two brokers, PaymentTopic with 4
queues on each, two messages a second round robin; payment-service has pay-1..pay-4 (AVG), pay-2
hangs at 420 s, pay-4 leaves at 1020 s; ledger-service (2 clients) stays healthy. The expected
owners below are AVG worked out by hand over the 8 queues sorted (a0..a3, b0..b3).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from rmqctl.connect import Target, open_source
from rmqctl.snapshot import export
from tests.snapshot.helpers import read_dataset, scenario_seconds

PAY = "payment-service"
LEDGER = "ledger-service"
TOPIC = "PaymentTopic"
P1, P2, P3, P4 = (f"10.0.0.{i}@pay-{i}" for i in range(1, 5))
BEFORE_LEAVE = {("broker-a", 0): P1, ("broker-a", 1): P1, ("broker-a", 2): P2, ("broker-a", 3): P2,
                ("broker-b", 0): P3, ("broker-b", 1): P3, ("broker-b", 2): P4, ("broker-b", 3): P4}
# 8 queues over 3 clients: 3, 3, 2
AFTER_LEAVE = {("broker-a", 0): P1, ("broker-a", 1): P1, ("broker-a", 2): P1, ("broker-a", 3): P2,
               ("broker-b", 0): P2, ("broker-b", 1): P2, ("broker-b", 2): P3, ("broker-b", 3): P3}
STALL_AT, LEAVE_AT = 420, 1020
#: one round's worth of messages on one queue (2 msg/s over 8 queues for 30 s) plus slack
ONE_ROUND = 8


def _series(rows: list[dict[str, Any]], group: str) -> dict[tuple[str, int], list[dict[str, Any]]]:
    out: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        if row["group"] == group and row["topic"] == TOPIC:
            out[(row["broker"], row["queue_id"])].append(row)
    for series in out.values():
        series.sort(key=lambda r: r["ts"])
    return out


async def test_thirty_virtual_minutes_show_the_stall_and_the_leave(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "snaps"
    # every wait is on the emulator's clock: the host clock is never asked to wait
    host_waits: list[float] = []
    real_sleep, real_time_sleep = asyncio.sleep, time.sleep
    this_thread = threading.current_thread()

    async def counted_sleep(delay: float, result: object = None) -> object:
        host_waits.append(delay)
        return await real_sleep(delay, result)

    def counted_time_sleep(delay: float) -> None:
        # only this thread's waits: other threads of the test process (a real cluster's log
        # readers, say) keep sleeping for real
        if threading.current_thread() is this_thread:
            host_waits.append(delay)
        else:
            real_time_sleep(delay)

    monkeypatch.setattr(asyncio, "sleep", counted_sleep)
    monkeypatch.setattr(time, "sleep", counted_time_sleep)
    async with open_source(Target(emulator="stall-and-leave")) as opened:
        result = await export(opened, None, out, every=30, duration=30 * 60, handle_signals=False)
    monkeypatch.undo()
    assert [d for d in host_waits if d > 0] == []

    rows = read_dataset(out)
    # 60 rounds (0, 30 … 1770 s after the scenario's 120 s); per group and round: 8 queues of
    # PaymentTopic and one %RETRY% queue on each of the 2 brokers.
    assert result.rounds == 60
    assert result.rows == len(rows) == 60 * 2 * 10
    assert result.missing == 0
    per_group = defaultdict(int)
    for row in rows:
        per_group[row["group"]] += 1
    assert per_group == {PAY: 600, LEDGER: 600}
    times = sorted({scenario_seconds(r["ts"]) for r in rows})
    assert times == [120 + 30 * k for k in range(60)]
    assert all(r["error"] is None and r["broker_offset"] is not None for r in rows)
    # 15 minutes of snapshot time per file: rounds 0-29 and 30-59
    assert len(result.files) == 2

    pay = _series(rows, PAY)
    assert sorted(pay) == sorted(BEFORE_LEAVE)
    for queue, series in pay.items():
        assert len(series) == 60
        # a steady producer: every queue's broker offset grows every round
        brokers = [r["broker_offset"] for r in series]
        assert all(b > a for a, b in zip(brokers, brokers[1:], strict=False)), queue
        for row in series:
            t = scenario_seconds(row["ts"])
            if t < LEAVE_AT:
                assert row["owner"] == BEFORE_LEAVE[queue], (queue, t)
            elif t >= LEAVE_AT + 30:
                assert row["owner"] == AFTER_LEAVE[queue], (queue, t)
            assert row["owner_subscribed"] is True
            if t < STALL_AT:  # everyone keeps up before the stall
                assert row["broker_offset"] - row["consumer_offset"] <= ONE_ROUND, (queue, t)

    def offsets(queue: tuple[str, int], since: float, until: float = 1e9) -> list[int]:
        return [r["consumer_offset"] for r in pay[queue] if since <= scenario_seconds(r["ts"]) < until]

    # pay-2 holds broker-a 2 and 3 when it hangs: their committed offsets freeze for good
    # (a3 stays with pay-2; a2 moves to pay-1 at the leave and is drained).
    assert len(set(offsets(("broker-a", 3), STALL_AT + 30))) == 1
    assert len(set(offsets(("broker-a", 2), STALL_AT + 30, LEAVE_AT))) == 1
    a2 = pay[("broker-a", 2)][-1]
    assert a2["broker_offset"] - a2["consumer_offset"] <= ONE_ROUND
    a3 = pay[("broker-a", 3)][-1]
    assert a3["broker_offset"] - a3["consumer_offset"] > 100  # ~25 minutes of backlog
    # broker-b 0 and 1 move from pay-3 to the hung pay-2 at the leave: consumed before, frozen after
    for queue in (("broker-b", 0), ("broker-b", 1)):
        before = offsets(queue, STALL_AT, LEAVE_AT)
        assert all(b > a for a, b in zip(before, before[1:], strict=False)), queue
        assert len(set(offsets(queue, LEAVE_AT + 30))) == 1, queue
    # the leaver's queues keep being consumed by pay-3
    for queue in (("broker-b", 2), ("broker-b", 3)):
        last = pay[queue][-1]
        assert last["owner"] == P3 and last["broker_offset"] - last["consumer_offset"] <= ONE_ROUND
    assert not any(r["owner"] == P4 for r in rows if scenario_seconds(r["ts"]) >= LEAVE_AT + 30)

    # ledger-service reads the same messages and never falls behind
    for queue, series in _series(rows, LEDGER).items():
        assert {r["owner"] for r in series} == {"10.0.1.1@ledger-1" if queue[0] == "broker-a" else "10.0.1.2@ledger-2"}
        assert all(r["broker_offset"] - r["consumer_offset"] <= ONE_ROUND for r in series), queue

    # last_consumed_ts and broker_last_ts come from the brokers' store times: the newest message
    # is at most one round old, and a frozen queue's last consumed message stays old.
    last_round = [r for r in rows if scenario_seconds(r["ts"]) == 1890 and r["topic"] == TOPIC]
    for row in last_round:
        assert 1890 - 30 <= scenario_seconds(row["broker_last_ts"]) <= 1890
    frozen = next(r for r in last_round if r["group"] == PAY and (r["broker"], r["queue_id"]) == ("broker-a", 3))
    assert STALL_AT - 30 <= scenario_seconds(frozen["last_consumed_ts"]) <= STALL_AT
