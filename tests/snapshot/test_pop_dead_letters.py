"""A POP group's dead letters in the snapshots: a ``%DLQ%`` queue that did not exist yet starts at 0.

The broker creates ``%DLQ%<group>`` with the first message it gives up on, so a recording shows the queue
appear with all its messages at once. A round that recorded the group on that broker without the queue
(and without a failed row of it) says the queue did not exist then: its messages reached the DLQ in the
window (``DEAD_LETTERING``). A round that could not read the DLQ writes a placeholder for it, so a failed
read never makes the queue "appear". The local engine of ``analyze stuck`` judges here; the Spark job and
the local engine are held to the same verdicts in ``tests/analysis``.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from rmqctl import errors
from rmqctl.connect import Target, open_source
from rmqctl.localjob.files import list_snapshot_files, read_files
from rmqctl.localjob.verdicts import diagnose
from rmqctl.model import MessageQueue
from rmqctl.snapshot import export
from rmqctl.snapshot.rows import group_rows
from rmqctl.stuck import POP_STATUSES, STUCK_STATUSES
from tests.snapshot.helpers import read_dataset

DLQ = ("order-pop", "%DLQ%order-pop", "broker-a", 0)


def _verdicts(out: Path, until_ms: int) -> dict[tuple[str, str, str, int], dict[str, Any]]:
    """Every queue's verdict over the 10 minutes before ``until_ms``, as ``analyze stuck --engine local``."""
    _, rows = read_files(list_snapshot_files(out, None, None), _no_warning, until_ms)
    return {(v["group"], v["topic"], v["broker"], v["queue_id"]): v
            for v in diagnose(rows, until_ms - 600_000, until_ms)}


def _no_warning(message: str) -> None:
    raise AssertionError(message)


async def test_pop_redelivery_the_failing_groups_dead_letters_are_dead_lettering_the_healthy_group_never(
        tmp_path: Path) -> None:
    # pop-redelivery, recorded every 30 s from its end at 2 min: order-pop's four "bad" messages reach
    # %DLQ%order-pop with their fifth failed delivery at about 7 min; the broker creates the queue then
    out = tmp_path / "snaps"
    async with open_source(Target(emulator="pop-redelivery")) as live:
        await export(live, ["order-pop", "audit-pop"], out, every=30, count=20, handle_signals=False)
    rows = read_dataset(out)
    rounds = sorted({int(r["ts"].timestamp() * 1000) for r in rows})
    dlq_rounds = sorted({int(r["ts"].timestamp() * 1000) for r in rows if r["topic"] == "%DLQ%order-pop"})
    assert len(rounds) == 20 and dlq_rounds and rounds[0] < dlq_rounds[0]
    assert {r["broker_offset"] for r in rows if r["topic"] == "%DLQ%order-pop"} == {4}
    assert not [r for r in rows if r["group"] == "audit-pop" and r["topic"].startswith("%DLQ%")]
    for until in rounds:
        judged = _verdicts(out, until)
        # the healthy group: no POP verdict and nothing stuck, round after round
        assert not {v["status"] for k, v in judged.items() if k[0] == "audit-pop"} & {*POP_STATUSES, *STUCK_STATUSES}
        if until < dlq_rounds[0]:
            assert DLQ not in judged
            continue
        dlq = judged[DLQ]
        assert (dlq["status"], dlq["rule"], dlq["broker_offset_start"], dlq["broker_offset_end"]) == (
            "DEAD_LETTERING", "dlq-growing", 0, 4), until
        # the growth is counted from the first round of the window, where the group was read without the queue
        assert dlq["window_start_ts"] == rounds[0]
    assert _verdicts(out, rounds[-1])[DLQ]["reason"] == (
        "4 message(s) of this POP group reached its dead-letter queue in the window: broker offset 0 -> 4")


async def test_a_dlq_whose_offsets_could_not_be_read_is_a_placeholder_never_absent() -> None:
    # one broker answered the group but not its DLQ's offsets: the DLQ's queue is written as missing, so a
    # later round that reads it does not make it look newly created
    async with open_source(Target(emulator="pop-redelivery")) as live:
        view = await live.source.group_view("order-pop")
    failed = replace(view, dlq=(), errors={**view.errors, "dlq:broker-a": errors.TimeoutError("no answer")})
    placeholders = [r for r in group_rows(1, failed, cluster_of={}, newest={}) if r.topic.startswith("%DLQ%")]
    assert [(r.topic, r.broker, r.queue_id, r.broker_offset, r.error) for r in placeholders] == [
        ("%DLQ%order-pop", "broker-a", 0, None, "broker-a: no answer")]
    # a queue of it known from the previous round keeps its own id
    known = MessageQueue("%DLQ%order-pop", "broker-a", 1)
    again = [r.queue for r in group_rows(2, failed, cluster_of={}, newest={}, previous=[known]) if r.missing]
    assert again == [known]
