"""Exported from the emulator, judged by the Spark job: the incidents come out as what they are.

The snapshots are written by the real exporter (``rmqctl.snapshot.export`` on the embedded
emulator's virtual clock) and read back by the job exactly as ``rmqctl analyze stuck`` reads
them; the expected holders come from the emulator's own view of the group at the end, never from
the job.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from analysis.files import check_files, list_snapshot_files, read_snapshots
from rmqctl import doctor
from rmqctl.connect import Target, open_source
from rmqctl.snapshot import export
from rmqctl.stuck import STUCK_STATUSES
from tests.analysis.engines import diagnose


async def export_and_hold(scenario: str, out: Path, minutes: int) -> dict[str, dict[tuple[str, str, int], str]]:
    """Export every group for ``minutes`` of virtual time; each group's holders at the end."""
    async with open_source(Target(emulator=scenario)) as opened:
        await export(opened, None, out, every=30, duration=minutes * 60, handle_signals=False)
        holders = {}
        for group in (await opened.source.groups()).value:
            view = await opened.source.group_view(group)
            holders[group] = {(mq.topic, mq.broker_name, mq.queue_id): owners[0]
                              for mq, owners in view.owners().items()}
        return holders


def verdicts(spark: Any, out: Path, minutes: int) -> dict[tuple[str, str, str, int], dict[str, Any]]:
    df = read_snapshots(spark, check_files(spark, list_snapshot_files(out, None, None), pytest.fail))
    until = int(df.agg({"ts": "max"}).collect()[0][0].timestamp() * 1000)
    rows = diagnose(df, until - minutes * 60_000, until).collect()
    return {(r["group"], r["topic"], r["broker"], r["queue_id"]): r.asDict() for r in rows}


async def test_the_stalled_consumer_and_the_queues_it_inherited_are_stalled_and_nothing_else(
        spark: Any, tmp_path: Path) -> None:
    # stall-and-leave: pay-2 hangs at 7 min, pay-4 leaves at 17 min and pay-2 inherits two of its
    # queues, whose offsets then freeze too. A hung listener keeps pulling (pull offsets advance)
    # while nothing is committed (one slow message pinning the offset would look the same: both
    # are stalled); 36 minutes of snapshots from the end of the warm-up (2 min) give the inherited
    # queues 20 minutes frozen.
    holders = await export_and_hold("stall-and-leave", tmp_path / "snaps", 36)
    judged = verdicts(spark, tmp_path / "snaps", 36)
    stalled_client = "10.0.0.2@pay-2"
    held_by_stalled = {q for q, owner in holders["payment-service"].items()
                       if owner == stalled_client and q[0] == "PaymentTopic"}
    assert len(held_by_stalled) == 3  # its own queue and the two it inherited
    for (group, topic, broker, queue_id), verdict in judged.items():
        queue = (topic, broker, queue_id)
        if topic.startswith("%RETRY%"):
            expected = "IDLE"
        elif group == "payment-service" and queue in held_by_stalled:
            expected = "STALLED"
        else:
            expected = "OK"
        assert verdict["status"] == expected, (group, queue, verdict["reason"])
        if expected == "STALLED":
            assert verdict["owner"] == stalled_client
    # two groups, each with the topic's 8 queues and one retry queue on each of the two brokers
    assert len(judged) == 20


async def test_the_doctor_and_the_job_give_the_recorded_hang_the_same_verdict_per_queue(
        spark: Any, tmp_path: Path) -> None:
    # 30 minutes of stall-and-leave from the end of the warm-up, judged over the default 10-minute window:
    # pay-2 hung at 7 min, so its own queue has been frozen for 24 minutes, only 10 of them in the window,
    # and the two queues it inherited at 17 min for 14. The doctor looks at the same emulated cluster right
    # after the recording (two samples 30 s apart on its virtual clock). Both must call the same queues
    # stuck, with the same verdict, and the job must measure each frozen run from where it began.
    out = tmp_path / "snaps"
    async with open_source(Target(emulator="stall-and-leave")) as opened:
        await export(opened, None, out, every=30, duration=30 * 60, handle_signals=False)
        found = await doctor.diagnose(opened.source, ["payment-service", "ledger-service"], interval=30,
                                      clock=opened.clock, sample=False)
        hung = {(mq.topic, mq.broker_name, mq.queue_id)
                for mq, owners in (await opened.source.group_view("payment-service")).owners().items()
                if owners == ["10.0.0.2@pay-2"] and not mq.topic.startswith("%RETRY%")}
    by_doctor = {(f.group, q["topic"], q["broker"], q["queue_id"]): q["verdict"]
                 for f in found.findings if f.code == "LAG_NOT_ADVANCING" for q in f.evidence["queues"]}
    judged = verdicts(spark, out, 10)
    by_job = {k: v["status"] for k, v in judged.items() if v["status"] in STUCK_STATUSES}
    assert by_job == by_doctor
    assert by_job == {("payment-service", *q): "STALLED" for q in hung} and len(hung) == 3
    frozen = sorted((v["frozen_ms"], v["frozen_start_seen"]) for k, v in judged.items() if k in by_job)
    # 14m..., 14m..., 24m...: the run that began before the window is measured from its start
    assert [seen for _, seen in frozen] == [True] * 3
    assert frozen[0][0] >= 14 * 60_000 and frozen[-1][0] >= 24 * 60_000, frozen


async def test_topic_overwrite_never_pulled_queues_are_orphaned_under_the_owner_that_does_not_subscribe(
        spark: Any, tmp_path: Path) -> None:
    # topic-overwrite: c1 subscribes topicA only, c2 topicB only; every client takes part in
    # every topic's allocation, so topicA 2-3 go to c2 and topicB 0-1 to c1, and nobody pulls them
    await export_and_hold("topic-overwrite", tmp_path / "snaps", 10)
    judged = verdicts(spark, tmp_path / "snaps", 10)
    by_queue = {(t, q): (v["status"], v["owner"]) for (g, t, _, q), v in judged.items() if g == "g1"
                and not t.startswith("%RETRY%")}
    c1, c2 = "10.0.0.1@c1", "10.0.0.2@c2"
    assert by_queue == {
        ("topicA", 0): ("IDLE", c1), ("topicA", 1): ("IDLE", c1),
        ("topicA", 2): ("ORPHANED", c2), ("topicA", 3): ("ORPHANED", c2),
        ("topicB", 0): ("ORPHANED", c1), ("topicB", 1): ("ORPHANED", c1),
        ("topicB", 2): ("IDLE", c2), ("topicB", 3): ("IDLE", c2),
    }
    orphaned = judged[("g1", "topicA", "broker-a", 2)]
    assert "does not subscribe topicA" in orphaned["reason"]
