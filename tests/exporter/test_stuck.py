"""The exporter's stuck verdicts: the rules of ``analyze stuck`` over in-memory rounds."""

from __future__ import annotations

from rmqctl.exporter.stuck import Observation, StuckJudge, judge
from rmqctl.model import GroupView, MessageQueue, QueueProgress

Q = MessageQueue("T", "broker-a", 0)
RETRY = MessageQueue("%RETRY%g", "broker-a", 0)


def obs(ts: int, bo: int, co: int, owner: str | None = "c1", pull: int | None = None,
        subscribed: bool | None = True) -> Observation:
    return Observation(ts * 1000, bo, co, pull, owner, subscribed if owner else None)


def test_fewer_than_two_answered_rounds_is_insufficient_data() -> None:
    # two looks are the least that show an offset standing still: what the doctor's two samples have
    v = judge(Q, [obs(0, 10, 0)])
    assert (v.status, v.rule, v.snapshots) == ("INSUFFICIENT_DATA", "min-snapshots", 1)
    assert judge(Q, []).status == "INSUFFICIENT_DATA"
    v = judge(Q, [obs(0, 10, 0), obs(30, 20, 0)])
    assert (v.status, v.rule, v.snapshots) == ("STALLED", "frozen", 2)


def test_a_frozen_offset_under_its_owner_with_new_messages_is_stalled_since_the_run_start() -> None:
    v = judge(Q, [obs(0, 10, 5), obs(30, 20, 8), obs(60, 30, 8), obs(90, 40, 8), obs(120, 50, 8)])
    assert (v.status, v.rule, v.lag, v.owner) == ("STALLED", "frozen", 42, "c1")
    assert v.frozen_since_ms == 30_000  # the round the offset last moved to 8


def test_frozen_with_nobody_holding_it_is_orphaned_and_with_a_non_subscriber_too() -> None:
    rows = [obs(t, 10 + t, 5, owner=None) for t in (0, 30, 60)]
    assert (judge(Q, rows).status, judge(Q, rows).rule) == ("ORPHANED", "no-owner")
    rows = [obs(t, 10 + t, 5, subscribed=False) for t in (0, 30, 60)]
    assert (judge(Q, rows).status, judge(Q, rows).rule) == ("ORPHANED", "owner-not-subscribed")


def test_a_frozen_offset_while_pulls_go_on_is_stalled_by_either_rule() -> None:
    # one unfinished message or a hung listener: the offsets cannot tell which (rmqctl.stuck)
    rows = [obs(t, 100 + t, 5, pull=10 + t) for t in (0, 60, 120)]
    assert (judge(Q, rows).status, judge(Q, rows).rule) == ("STALLED", "offset-pinned")
    rows = [obs(t, 100 + t, 5, pull=10 + t) for t in (0, 600, 1000)]  # 1000 s > 15 min
    assert (judge(Q, rows).status, judge(Q, rows).rule) == ("STALLED", "frozen")


def test_caught_up_idle_rewound_moving_and_growing() -> None:
    assert judge(Q, [obs(t, 10, 10) for t in (0, 30, 60)]).rule == "no-new-messages"
    assert judge(Q, [obs(0, 10, 10), obs(30, 20, 20), obs(60, 30, 30)]).rule == "caught-up"
    assert judge(Q, [obs(0, 10, 9), obs(30, 20, 15), obs(60, 30, 12)]).status == "REWOUND"
    assert judge(Q, [obs(0, 10, 5), obs(30, 20, 15), obs(60, 30, 25)]).rule == "moving"
    grow = judge(Q, [obs(0, 10, 5), obs(30, 40, 15), obs(60, 90, 25)])
    assert (grow.status, grow.rule) == ("LAGGING", "lag-growing")


def test_an_owner_change_restarts_the_count() -> None:
    rows = [obs(0, 10, 5), obs(30, 20, 5), obs(60, 30, 5), obs(90, 40, 5, owner="c2")]
    assert (judge(Q, rows).status, judge(Q, rows).rule) == ("INSUFFICIENT_DATA", "owner-changed")


def test_a_retry_queue_frozen_past_its_allowance_is_stalled_at_once() -> None:
    # what waits in %RETRY% is due (the broker delayed it before it landed): no minutes of grace
    rows = [obs(t, 100 + t, 5, pull=10 + t) for t in (0, 60, 120)]
    assert (judge(RETRY, rows).status, judge(RETRY, rows).rule) == ("STALLED", "offset-pinned")
    assert judge(RETRY, [obs(t, 100 + t, 5) for t in (0, 30)]).rule == "frozen"
    assert judge(RETRY, [obs(t, 15, 5) for t in (0, 30)]).rule == "no-new-messages"  # within its allowance


def test_a_queue_frozen_since_it_was_rewound_is_stalled_not_rewound() -> None:
    assert (judge(Q, [obs(0, 300, 200), obs(30, 300, 150), obs(60, 300, 150)]).status) == "STALLED"
    assert judge(Q, [obs(0, 300, 200), obs(30, 300, 150), obs(60, 300, 150)]).rule == "frozen"
    assert judge(Q, [obs(0, 300, 200), obs(30, 300, 200), obs(60, 300, 150)]).rule == "rewind"
    assert judge(Q, [obs(0, 300, 200), obs(30, 300, 150), obs(60, 300, 170)]).rule == "rewind"


def view_at(ts: int, bo: int, co: int, known: bool = True) -> GroupView:
    p = QueueProgress(Q, bo, co, None, 0, offsets_from="consume_stats" if known else "unknown")
    return GroupView("g", (), {}, {}, (p,), topic_queues={"T": (Q,)}, sampled_at=ts * 1000)


def test_the_judge_keeps_a_window_and_unknown_rounds_are_gaps_not_zeros() -> None:
    judge_ = StuckJudge(window_ms=100_000)
    for t, bo in ((0, 10), (30, 20), (60, 30)):
        verdicts = judge_.add([view_at(t, bo, 5)], t * 1000)
    assert verdicts["g"][0].status == "ORPHANED"  # nobody holds it in these views
    verdicts = judge_.add([view_at(90, 0, 0, known=False)], 90_000)
    assert verdicts["g"][0].snapshots == 3 and verdicts["g"][0].lag == 25
    verdicts = judge_.add([view_at(200, 60, 5)], 200_000)  # the window keeps 100 s..200 s only
    assert (verdicts["g"][0].status, verdicts["g"][0].snapshots) == ("INSUFFICIENT_DATA", 1)


def test_a_frozen_pop_queue_is_stalled_not_orphaned_after_the_commit_grace() -> None:
    # a POP group's queues have no owner by design: frozen with messages waiting, nobody pops them
    def pop(ts: int, bo: int, co: int) -> Observation:
        return Observation(ts * 1000, bo, co, None, None, None, pop=True)

    rows = [pop(t, 10 + t, 5) for t in (0, 30, 60)]
    assert (judge(Q, rows).status, judge(Q, rows).rule) == ("STALLED", "not-popped")
    # POP's commit trails the last message for a few seconds: a run seen to start 20 s ago says nothing yet
    rows = [pop(0, 10, 2), pop(10, 20, 5), pop(20, 30, 5), pop(30, 40, 5)]
    assert (judge(Q, rows).status, judge(Q, rows).rule) == ("INSUFFICIENT_DATA", "pop-grace")
    rows = [pop(0, 10, 2), pop(10, 20, 5), pop(30, 30, 5), pop(45, 40, 5)]
    assert (judge(Q, rows).status, judge(Q, rows).rule) == ("STALLED", "not-popped")
