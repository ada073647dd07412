"""The doctor and ``analyze stuck`` give one recorded incident the same verdict per queue.

Each test records an emulated incident once (:mod:`tests.analysis.agreement`): the doctor judges the
last two rounds, as ``rmqctl doctor --interval 30`` would at that moment, and the Spark job (on the
shared session) judges the snapshot files of the same rounds with its default 10-minute window. The
expected stuck queues are written out by hand from the scenario, never taken from either judge.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rmqctl.emulator.scenario import builtin_names
from tests.analysis.agreement import iso, job_stuck, job_verdicts, last_ms, record

# One client of group g hangs in its listener at 20 s, after consuming the first 8 messages; 20 more
# arrive at 30 s (10 on each queue) and nothing after: a backlog that nobody consumes and that no new
# message ever joins. The recording starts after the 60 s warm-up.
FROZEN_BACKLOG = """
name = "frozen-backlog"
description = "one client hangs; 20 messages wait on its two queues and no more arrive"
duration = 60

[[brokers]]
name = "broker-a"

[[topics]]
name = "T"
queues = 2

[[consumers]]
group = "g"
client_id = "10.0.0.1@c1"
subscriptions = { T = "*" }
stall = 20.0

[[produce]]
at = 5.0
topic = "T"
count = 8

[[produce]]
at = 30.0
topic = "T"
count = 20
"""

FROZEN = {("g", "T", "broker-a", 0): "STALLED", ("g", "T", "broker-a", 1): "STALLED"}


@pytest.fixture
def frozen_backlog(tmp_path: Path) -> Path:
    path = tmp_path / "frozen-backlog.toml"
    path.write_text(FROZEN_BACKLOG, encoding="utf-8")
    return path


async def test_a_backlog_nobody_consumes_and_no_message_joins_is_stalled_for_both(
        spark: Any, tmp_path: Path, frozen_backlog: Path) -> None:
    # no new message in the whole recording: the broker offsets never move, the committed ones neither,
    # and 10 messages wait on each queue under the same holder
    rec = await record(frozen_backlog, tmp_path / "snaps", 6)
    judged = job_verdicts(spark, rec.out, last_ms(rec))
    assert {k: (v["broker_offset_start"], v["broker_offset_end"], v["lag_end"]) for k, v in judged.items()
            if k in FROZEN} == {k: (14, 14, 10) for k in FROZEN}
    assert job_stuck(judged) == FROZEN
    assert rec.doctor[6] == FROZEN
    assert rec.warnings == []


async def test_an_untouched_backlog_under_a_holder_that_does_not_subscribe_is_orphaned_for_both(
        spark: Any, tmp_path: Path) -> None:
    # topic-overwrite: the 8 messages of each topic arrived during the warm-up; topicA's queues 2-3 are
    # held by c2 and topicB's 0-1 by c1, neither subscribing that topic, so nobody pulls them and no
    # message joins them in the recording
    rec = await record("topic-overwrite", tmp_path / "snaps", 4)
    orphaned = {("g1", "topicA", "broker-a", 2): "ORPHANED", ("g1", "topicA", "broker-a", 3): "ORPHANED",
                ("g1", "topicB", "broker-a", 0): "ORPHANED", ("g1", "topicB", "broker-a", 1): "ORPHANED"}
    assert job_stuck(job_verdicts(spark, rec.out, last_ms(rec))) == orphaned
    assert rec.doctor[4] == orphaned


async def test_two_snapshots_are_evidence_enough_for_both_and_one_is_not_enough_for_either(
        spark: Any, tmp_path: Path, frozen_backlog: Path) -> None:
    # the doctor's two samples 30 s apart are two snapshots: the job needs no more to say the same
    rec = await record(frozen_backlog, tmp_path / "two", 2)
    judged = job_verdicts(spark, rec.out, last_ms(rec))
    assert {k: (v["status"], v["window_snapshots"]) for k, v in judged.items() if k in FROZEN} == {
        k: ("STALLED", 2) for k in FROZEN}
    assert rec.doctor[2] == FROZEN
    # one snapshot: the job says it cannot tell yet (never OK), and the doctor has no second sample
    rec = await record(frozen_backlog, tmp_path / "one", 1)
    judged = job_verdicts(spark, rec.out, last_ms(rec))
    assert {k: v["status"] for k, v in judged.items() if k in FROZEN} == {k: "INSUFFICIENT_DATA" for k in FROZEN}
    assert rec.doctor[1] == {}


# Every built-in scenario where offsets move: rounds recorded after its warm-up, and the rounds at
# which both judge (besides the last). stall-and-leave: pay-2 hangs at 7 min (round 11 is 7 min in:
# the warm-up is 2 min), pay-4 leaves at 17 min (round 31), after which pay-2 holds two more queues:
# round 32 is the first with a snapshot under the new holder, 33 the first with two.
SCENARIO_ROUNDS = {
    "stall-and-leave": (36, (11, 12, 13, 31, 32, 33)),
}
DEFAULT_ROUNDS = (6, (2,))

# The queues stuck at the last round, by hand from each scenario's comments (none: every message is
# consumed or filtered, and filtered messages move the committed offset on).
PAY_2 = "payment-service"
STUCK_AT_END: dict[str, dict[tuple[str, str, str, int], str]] = {
    "healthy": {}, "avg-contiguous-blocks": {}, "two-consumers-one-queue": {}, "tag-overwrite": {},
    "tag-overwrite-4q": {},
    # POP: the broker commits a message when it is popped, and the failed ones move on through the
    # group's POP retry topic to its DLQ (never judged)
    "pop-redelivery": {},
    "topic-overwrite": {("g1", "topicA", "broker-a", 2): "ORPHANED", ("g1", "topicA", "broker-a", 3): "ORPHANED",
                        ("g1", "topicB", "broker-a", 0): "ORPHANED", ("g1", "topicB", "broker-a", 1): "ORPHANED"},
    # AVG over 8 queues (broker-a 0-3, broker-b 0-3): with 3 clients left pay-2 holds the 4th to 6th
    "stall-and-leave": {(PAY_2, "PaymentTopic", "broker-a", 3): "STALLED",
                        (PAY_2, "PaymentTopic", "broker-b", 0): "STALLED",
                        (PAY_2, "PaymentTopic", "broker-b", 1): "STALLED"},
}


def test_every_built_in_scenario_is_checked() -> None:
    assert set(builtin_names()) == set(STUCK_AT_END)


@pytest.mark.slow
@pytest.mark.parametrize("scenario", builtin_names())
async def test_doctor_and_job_agree_on_every_queue_of_each_built_in_scenario(
        spark: Any, tmp_path: Path, scenario: str) -> None:
    rounds, judge_at = SCENARIO_ROUNDS.get(scenario, DEFAULT_ROUNDS)
    rec = await record(scenario, tmp_path / "snaps", rounds, judge_at)
    assert rec.warnings == []
    for number, by_doctor in sorted(rec.doctor.items()):
        judged = job_verdicts(spark, rec.out, rec.round_ms[number])
        # the job judges every queue the doctor saw in that round's samples
        assert rec.queues[number] <= set(judged), (scenario, number)
        by_job = job_stuck(judged)
        assert by_job == by_doctor, (scenario, number, iso(rec.round_ms[number]),
                                     {k: judged[k]["reason"] for k in set(by_job) ^ set(by_doctor) if k in judged})
    assert rec.doctor[rounds] == STUCK_AT_END[scenario]
