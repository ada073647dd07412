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

from rmqctl.doctor import run_checks
from rmqctl.emulator.scenario import builtin_names
from rmqctl.stuck import POP_STATUSES, STUCK_STATUSES
from tests.analysis.agreement import Key, iso, job_stuck, job_verdicts, last_ms, record
from tests.emulator.test_topic_left_behind import SCENARIO as SCENARIO_LEFT_BEHIND

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


# One client of group g fails every message (RECONSUME_LATER): each goes back to the broker, which parks
# it in its schedule topic for delay level 3 + reconsume times (10 s, 30 s …) before it lands in
# %RETRY%g. The 30 messages of 5 s land there at 15 s and are failed again at once; the 30 copies that
# land at 45 s find the listener hanging (from 40 s) and wait in %RETRY%g queue 0, consumed by nobody.
# Rounds every 30 s from 30 s: the retry queue is caught up at the first and frozen from the second (60 s),
# 2 minutes before the last round (180 s), less than 5.
RETRY_FROZEN = """
name = "retry-frozen"
description = "every message fails; the listener hangs while 30 copies are on their way to the retry topic"
duration = 30

[[brokers]]
name = "broker-a"

[[topics]]
name = "T"
queues = 2

[[consumers]]
group = "g"
client_id = "10.0.0.1@c1"
subscriptions = { T = "*" }
consume_result = "RECONSUME_LATER"
stall = 40.0

[[produce]]
at = 5.0
topic = "T"
count = 30
"""


async def test_a_retry_queue_frozen_for_less_than_five_minutes_is_stalled_for_both(
        spark: Any, tmp_path: Path) -> None:
    # what waits in %RETRY% is due (the broker delayed it before it landed): a retry queue frozen past its
    # allowance of 10 is stalled however recently its run began, as the doctor's two samples must say
    scenario = tmp_path / "retry-frozen.toml"
    scenario.write_text(RETRY_FROZEN, encoding="utf-8")
    rec = await record(scenario, tmp_path / "snaps", 6)
    judged = job_verdicts(spark, rec.out, last_ms(rec))
    retry = ("g", "%RETRY%g", "broker-a", 0)
    assert (judged[retry]["lag_end"], judged[retry]["frozen_start_seen"]) == (30, True)
    assert judged[retry]["frozen_ms"] < 5 * 60_000
    assert job_stuck(judged) == {retry: "STALLED"}
    assert rec.doctor[6] == {retry: "STALLED"}
    assert rec.warnings == []


# One client of group g consumes the 20 messages of 5 s (offset 10 on each of T's two queues) and hangs at
# 40 s; after the second round an operator resets the group to the earliest offset (server-side reset, as
# mqadmin resetOffsetByTime does on 5.x): the committed offsets go back to 0 and stay there, 10 messages
# waiting on each queue under the hung client.
REWOUND_FROZEN = """
name = "rewound-frozen"
description = "a group reset to its earliest offset while its only client hangs"
duration = 60

[[brokers]]
name = "broker-a"

[[topics]]
name = "T"
queues = 2

[[groups]]
name = "g"

[[consumers]]
group = "g"
client_id = "10.0.0.1@c1"
subscriptions = { T = "*" }
stall = 40.0

[[produce]]
at = 5.0
topic = "T"
count = 20
"""


async def test_a_queue_frozen_since_its_offset_was_reset_is_stalled_for_both(
        spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rmqctl.actions.permission import Writer
    from rmqctl.actions.plan import ResetTarget
    from rmqctl.actions.reset import apply_reset, plan_reset

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))

    async def reset(opened: Any) -> None:
        plan = await plan_reset(opened.source, "g", ResetTarget("earliest"), cluster="c")
        outcome = await apply_reset(opened.source, plan, Writer("tester", None, None), wait_s=0)
        assert outcome.all_applied

    scenario = tmp_path / "rewound-frozen.toml"
    scenario.write_text(REWOUND_FROZEN, encoding="utf-8")
    rec = await record(scenario, tmp_path / "snaps", 6, judge_at=(2,), after={2: reset})
    judged = job_verdicts(spark, rec.out, last_ms(rec))
    frozen = {("g", "T", "broker-a", q): "STALLED" for q in (0, 1)}
    # the window holds the committed offset before the reset (10) and after it (0, frozen there)
    assert {k: (v["consumer_offset_end"], v["lag_end"]) for k, v in judged.items() if k in frozen} == {
        k: (0, 10) for k in frozen}
    assert job_stuck(judged) == frozen
    assert rec.doctor[6] == frozen
    # before the reset nothing waited: neither judge called anything stuck
    assert rec.doctor[2] == {} and job_stuck(job_verdicts(spark, rec.out, rec.round_ms[2])) == {}
    assert rec.warnings == []


# A topic left behind (tests/emulator/test_topic_left_behind.py): c2, the only client subscribing topicB,
# consumes its first 10 messages and stops at 20 s; c1 (topicA only) starts at 25 s; 65 more messages go to
# topicB at 30 s. Its offsets stay in the offset table, and 33 + 32 messages wait that nobody consumes.
LEFT_BEHIND = SCENARIO_LEFT_BEHIND


async def test_a_topic_left_behind_with_its_backlog_is_orphaned_for_both(spark: Any, tmp_path: Path) -> None:
    # nobody subscribes topicB, so nobody holds its queues: stuck (ORPHANED) for the job and for the
    # doctor's LAG_NOT_ADVANCING, whose finding sends to ABANDONED_TOPIC_BACKLOG for why
    scenario = tmp_path / "left.toml"
    scenario.write_text(LEFT_BEHIND, encoding="utf-8")
    rec = await record(scenario, tmp_path / "snaps", 4)
    left = {("g", "topicB", "broker-a", 0): "ORPHANED", ("g", "topicB", "broker-a", 1): "ORPHANED"}
    judged = job_verdicts(spark, rec.out, last_ms(rec))
    assert {k: (v["lag_end"], v["owner"]) for k, v in judged.items() if k in left} == {
        ("g", "topicB", "broker-a", 0): (33, None), ("g", "topicB", "broker-a", 1): (32, None)}
    assert job_stuck(judged) == left
    assert rec.doctor[4] == left
    assert rec.warnings == []


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


def redelivering_by_doctor(rec_round: Any) -> dict[Key, str]:
    """The retry queues the doctor's REPEATED_REDELIVERY names (its ``retry_topics``), as the job's verdict."""
    found: dict[Key, str] = {}
    for group, view in rec_round.current.views.items():
        before = rec_round.previous.views.get(group) if rec_round.previous is not None else None
        for finding in run_checks(view, before):
            if finding.code == "REPEATED_REDELIVERY":
                topics = set(finding.evidence["retry_topics"])
                found.update({(group, p.queue.topic, p.queue.broker_name, p.queue.queue_id): "REDELIVERING"
                              for p in view.progress if p.queue.topic in topics})
    return found


def job_pop_verdicts(judged: dict[Key, dict[str, Any]]) -> dict[Key, str]:
    """The queues the job gives a POP verdict (REDELIVERING, DEAD_LETTERING) or a stuck one."""
    return {k: v["status"] for k, v in judged.items() if v["status"] in (*STUCK_STATUSES, *POP_STATUSES)}


RETRY_Q = ("order-pop", "%RETRY%order-pop_OrderTopic", "broker-a", 0)
DLQ_Q = ("order-pop", "%DLQ%order-pop", "broker-a", 0)


async def test_pop_redelivery_the_failing_group_is_redelivering_for_both_and_the_healthy_one_for_neither(
        spark: Any, tmp_path: Path) -> None:
    # pop-redelivery, recorded every 30 s from its end at 2 min: order-pop fails its 4 "bad" messages at
    # every delivery (retryMaxTimes 4: 5 deliveries). At 2 min each has 3 copies in its POP retry topic
    # (delivered up to 4 times); the 4th copies arrive at 4 min (delivered 5 times, the last); the 5th
    # revival at 7 min goes on to %DLQ%order-pop. audit-pop consumes everything: no verdict from either.
    rounds: list[Any] = []
    rec = await record("pop-redelivery", tmp_path / "snaps", 20, range(1, 20), on_round=rounds.append)
    by_number = {r.number: r for r in rounds}
    # retry_deliveries, what the job reads of the copies: 4 at 2 min, 5 from 4 min on
    assert rec.warnings == []
    expected = {
        # 2m30s: the doctor reads the copies (delivered 4 times of 5); the job's window (from 2 min, where the
        # recording starts) holds no new copy yet, so it cannot tell: the retry queue is idle to it
        2: ({RETRY_Q: "REDELIVERING"}, {}),
        # 4m30s: the 4th copies were written at 4 min: both
        5: ({RETRY_Q: "REDELIVERING"}, {RETRY_Q: "REDELIVERING"}),
        # 10m: the messages went to the DLQ at 7 min and no copy cycles any more, which the doctor's look at
        # the copies sees; the job's 10-minute window still holds the copies written at 4 and 7 min, and the
        # DLQ the broker created at 7 min, absent from the rounds before: its 4 messages reached it in the window
        20: ({}, {RETRY_Q: "REDELIVERING", DLQ_Q: "DEAD_LETTERING"}),
    }
    for number, (by_doctor, by_job) in expected.items():
        assert redelivering_by_doctor(by_number[number]) == by_doctor, number
        judged = job_verdicts(spark, rec.out, rec.round_ms[number])
        assert job_pop_verdicts(judged) == by_job, (number, {k: judged[k]["reason"] for k in judged
                                                             if k[0] == "order-pop"})
        # the healthy POP group: every queue of it judged, none with a verdict; no ownership verdict anywhere
        assert {k for k in judged if k[0] == "audit-pop"} >= {("audit-pop", "OrderTopic", "broker-a", q)
                                                              for q in range(4)}
        assert rec.doctor[number] == {}
    judged = job_verdicts(spark, rec.out, rec.round_ms[20])
    assert judged[DLQ_Q]["reason"] == (
        "4 message(s) of this POP group reached its dead-letter queue in the window: broker offset 0 -> 4")
    judged = job_verdicts(spark, rec.out, rec.round_ms[5])
    assert judged[RETRY_Q]["reason"] == (
        "4 copies written to this POP retry queue in the window (broker offset 12 -> 16): messages failed or not "
        "ACKed come back again and again; copies read back were delivered up to 5 times (3 or more is redelivery)")
