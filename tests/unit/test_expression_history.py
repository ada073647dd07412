"""Which broker expression and owner judged a consumed message, from the samples that saw them.

Hand-built observations of one queue (no I/O): the rules of
:meth:`rmqctl.model.ExpressionHistory.judge` and the doctor's counts over them when the
subVersions date nothing (a source that cannot read them, a skewed client clock).
"""

from __future__ import annotations

from rmqctl.doctor import run_checks
from rmqctl.model import (
    HISTORY_DEPTH,
    ClientConnection,
    ConsumerRunningInfo,
    ExpressionHistory,
    GroupView,
    MessageQueue,
    Observation,
    ProcessQueueInfo,
    QueueProgress,
    Reign,
    SampledMessage,
    TagSample,
    parse_tag_expression,
)

MQ = MessageQueue("T", "broker-a", 0)
X, STAR = parse_tag_expression("T", "tagX", 1_000), parse_tag_expression("T", "*", 30_000)
UNDATED_X, UNDATED_STAR = parse_tag_expression("T", "tagX"), parse_tag_expression("T", "*")
UNDER_X = Reign(X, "a", X)
UNDER_STAR = Reign(STAR, "b", STAR)


def history(*observed: Observation) -> ExpressionHistory:
    return ExpressionHistory({MQ: tuple(observed)})


def test_a_message_stored_after_the_current_reign_needs_no_history() -> None:
    now = Observation(50_000, 10, UNDER_STAR)
    assert ExpressionHistory().judge(MQ, 3, 31_000, now) == (now, False)


def test_a_message_stored_before_the_current_reign_is_unknown_without_history() -> None:
    now = Observation(50_000, 10, UNDER_STAR)
    assert ExpressionHistory().judge(MQ, 3, 5_000, now) == (None, False)


def test_the_first_sample_past_the_message_judges_it_when_its_reign_was_dated_before_the_store() -> None:
    then = Observation(8_000, 4, UNDER_X)
    now = Observation(50_000, 10, UNDER_STAR)
    judged, earlier = history(then).judge(MQ, 3, 5_000, now)
    assert judged is then and earlier


def test_two_samples_of_one_reign_judge_what_was_consumed_between_them() -> None:
    # stored before tagX's version can date it (a version the sample cannot trust is 0 here)
    first, second = Observation(8_000, 2, Reign(UNDATED_X, "a", UNDATED_X)), Observation(
        28_000, 6, Reign(UNDATED_X, "a", UNDATED_X))
    now = Observation(50_000, 6, UNDER_STAR)
    h = history(first, second)
    assert h.judge(MQ, 4, 5_000, now) == (second, True)
    # consumed before the first sample: nothing says which reign judged it
    assert h.judge(MQ, 1, 5_000, now) == (None, False)


def test_undated_reigns_count_a_message_unknown_once_a_change_was_seen_never_delivered() -> None:
    # a source without subVersions: one sample alone can only go by the reign it sees, but once
    # an earlier sample saw another expression, what was consumed before the change is unknown
    then = Observation(8_000, 4, Reign(UNDATED_X, "a", UNDATED_X))
    now = Observation(50_000, 10, Reign(UNDATED_STAR, "b", UNDATED_STAR))
    assert ExpressionHistory().judge(MQ, 7, None, now) == (now, False)
    assert history(then).judge(MQ, 7, None, now) == (None, False)
    assert history(then).judge(MQ, 2, None, now) == (None, False)
    # the same reign seen before: nothing changed, so one sample's answer stands
    same = Observation(8_000, 4, Reign(UNDATED_STAR, "b", UNDATED_STAR))
    assert history(same).judge(MQ, 2, None, now) == (now, False)


def test_a_run_of_one_reign_keeps_its_first_and_last_sample_and_a_reset_starts_over() -> None:
    view_offsets = [(1_000 * n, 10 * n) for n in range(1, 6)]
    h = ExpressionHistory()
    for at, offset in view_offsets:
        h = h.observed(_view(at, offset, X, "a"))
    assert [(o.at_ms, o.consumer_offset) for o in h.queues[MQ]] == [(1_000, 10), (5_000, 50)]
    h = h.observed(_view(6_000, 3, X, "a"))
    assert [(o.at_ms, o.consumer_offset) for o in h.queues[MQ]] == [(6_000, 3)]


def test_a_sample_where_nothing_was_consumed_or_changed_adds_nothing() -> None:
    h = ExpressionHistory().observed(_view(1_000, 10, X, "a"))
    for at in (2_000, 3_000, 4_000):
        h = h.observed(_view(at, 10, X, "a"))
    assert [(o.at_ms, o.consumer_offset) for o in h.queues[MQ]] == [(1_000, 10)]
    # a new owner at the same offset is a change
    h = h.observed(_view(5_000, 10, X, "b"))
    assert [(o.at_ms, o.reign.owner) for o in h.queues[MQ]] == [(1_000, "a"), (5_000, "b")]


def test_the_history_of_a_queue_is_bounded() -> None:
    h = ExpressionHistory()
    for n in range(1, HISTORY_DEPTH * 2):
        sub = X if n % 2 else STAR
        h = h.observed(_view(40_000 + n, n, sub, "a"))
    assert len(h.queues[MQ]) == HISTORY_DEPTH


def _view(at_ms: int, consumer_offset: int, stored: object, owner: str, *,
          own: dict[str, str] | None = None, samples: tuple[TagSample, ...] = ()) -> GroupView:
    assert isinstance(stored, type(X))
    own = own or {owner: stored.expression}
    infos = {cid: ConsumerRunningInfo(
        cid, {"PROP_CONSUME_TYPE": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING"},
        (parse_tag_expression("T", expr, stored.sub_version),),
        {MQ: ProcessQueueInfo()} if cid == owner else {}) for cid, expr in own.items()}
    return GroupView(
        group="g", connections=tuple(ClientConnection(cid, f"10.0.0.{n}:1", "JAVA", 479)
                                     for n, cid in enumerate(sorted(own), 1)),
        broker_subscriptions={"broker-a": {"T": stored}}, running_infos=infos,
        progress=(QueueProgress(MQ, 20, consumer_offset, None, at_ms, owner),),
        consume_type="CONSUME_PASSIVELY", message_model="CLUSTERING", topic_queues={"T": (MQ,)},
        sampled_at=at_ms, tag_samples={s.queue: s for s in samples})


def test_the_doctor_never_turns_a_message_filtered_before_an_undated_flip_into_a_delivery() -> None:
    # a tagY consumed (filtered) while the broker held "tagX"; the broker then holds "*", and no
    # subVersion dates either: the doctor counts it unknown, not delivered to the new owner
    messages = (SampledMessage(MQ, 0, "tagY"), SampledMessage(MQ, 1, "tagX"))
    sample = TagSample(MQ, 0, 2, messages)
    then = _view(8_000, 2, UNDATED_X, "a", own={"a": "tagX", "b": "*"})
    now = _view(50_000, 2, UNDATED_STAR, "b", own={"a": "tagX", "b": "*"}, samples=(sample,))
    (f,) = [x for x in run_checks(now, then) if x.code == "SUBSCRIPTION_TAG_CONFLICT"]
    assert f.evidence["counts"]["received_by_client"] == {"a": {}, "b": {}}
    assert f.evidence["consumed_before_current_expression"] == {"tagX": 1, "tagY": 1}


def test_recorded_samples_alone_place_a_message_or_say_they_cannot() -> None:
    before = Observation(8_000, 2, Reign(UNDATED_X, "a", UNDATED_X))
    after = Observation(40_000, 6, Reign(UNDATED_STAR, "b", UNDATED_STAR))
    same = Observation(20_000, 4, Reign(UNDATED_X, "a", UNDATED_X))
    h = ExpressionHistory.of_observations(MQ, [after, same, before])
    # consumed between two samples of "tagX": judged by it
    assert h.recorded_judge(MQ, 3, None) == (True, same)
    # consumed while the expression changed, undated: not known
    assert h.recorded_judge(MQ, 5, None) == (True, None)
    # no sample was taken after it was consumed
    assert h.recorded_judge(MQ, 6, None) == (False, None)
