"""``diagnose``: how many samples it takes and when, which errors stop it and which it reports,
what it asks the source to read back, and what it says it skipped — over an in-memory source
whose answers change from one poll to the next."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace

import pytest

from rmqctl import errors
from rmqctl.doctor import REBALANCE_WAIT, diagnose
from rmqctl.doctor.checks import ONE_SAMPLE, POP_TOO_CLOSE
from rmqctl.model import GroupView, ProcessQueueInfo, SampledMessage, TagSample
from tests.fake_source import FakeClock, FakeSource
from tests.unit.doctor_views import NOW, A, B, client, codes, group, one, qs, row, sub

T = qs("T", 4)
S = sub("T")


@dataclass
class ScriptedSource(FakeSource):
    """Answers each group with the next view of its script (the last one repeats)."""

    script: dict[str, list[GroupView]] = field(default_factory=dict)
    sampled: list[tuple[str, list[str]]] = field(default_factory=list)
    sample_error: errors.RmqctlError | None = None

    async def group_view(self, group: str, *, running_info: bool = True, serial: bool = False) -> GroupView:
        if group in self.script:
            views = self.script[group]
            self.set_view(views.pop(0) if len(views) > 1 else views[0])
        return await super().group_view(group, running_info=running_info)

    async def sample_messages(self, view: GroupView, topics: Iterable[str]) -> GroupView:
        self.sampled.append((view.group, list(topics)))
        if self.sample_error is not None:
            raise self.sample_error
        mq = view.topic_queues["T"][0]
        return replace(view, tag_samples={mq: TagSample(mq, 0, 1, (SampledMessage(mq, 0, "tagZ"),))})


#: A's listener sits on messages it pulled from queue 0 (so no broker filter explains a still offset)
CACHED = {T[0]: ProcessQueueInfo(cached_msg_count=5)}


def settled(consumer: int = 40, broker: int = 100, name: str = "orders-consumer") -> GroupView:
    return replace(group([client(A, [S], T[:2], pq=CACHED), client(B, [S], T[2:])], {"T": T},
                         progress=[row(T[0], broker, consumer, A)]), group=name)


def moving() -> GroupView:
    # B already took queue 1 while A still holds it
    return group([client(A, [S], T[:2]), client(B, [S], T[1:])], {"T": T}, progress=[row(q, 5, 5) for q in T])


def source(script: dict[str, list[GroupView]]) -> ScriptedSource:
    return ScriptedSource(script=script, clock=FakeClock())


async def test_one_sample_without_an_interval() -> None:
    src = source({"orders-consumer": [settled(), settled(consumer=40, broker=200)]})
    started = src.clock.now()
    d = await diagnose(src, ["orders-consumer"])
    assert d.groups == ("orders-consumer",)
    assert d.findings == () and d.errors == {}
    # one sample cannot show an offset standing still: the lag check says so instead of passing
    assert d.skipped == {"orders-consumer": {"LAG_NOT_ADVANCING": ONE_SAMPLE}}
    assert "--interval" in ONE_SAMPLE
    assert src.clock.now() == started  # nobody waited


async def test_an_interval_takes_two_samples_that_far_apart_for_the_lag_checks() -> None:
    src = source({"orders-consumer": [settled(broker=100), settled(broker=130)]})
    started = src.clock.now()
    d = await diagnose(src, ["orders-consumer"], interval=30)
    assert src.clock.now() - started == 30
    f = one(d.findings, "LAG_NOT_ADVANCING")
    assert f.evidence["queues"][0]["broker_offset"] == [100, 130]
    assert d.skipped == {}


async def test_samples_of_a_pop_group_too_close_together_skip_the_lag_check_and_say_so() -> None:
    pop = replace(settled(), consume_type="CONSUME_POP")
    d = await diagnose(source({"orders-consumer": [pop, replace(pop, sampled_at=pop.sampled_at + 10_000)]}),
                       ["orders-consumer"], interval=10)
    assert d.skipped["orders-consumer"]["LAG_NOT_ADVANCING"] == POP_TOO_CLOSE


async def test_a_broadcasting_group_skips_the_lag_check_with_any_number_of_samples() -> None:
    bc = replace(settled(), message_model="BROADCASTING")
    for interval in (None, 30.0):
        d = await diagnose(source({"orders-consumer": [bc]}), ["orders-consumer"], interval=interval)
        assert d.skipped["orders-consumer"]["LAG_NOT_ADVANCING"].startswith("does not apply: a BROADCASTING")


async def test_a_rebalance_in_progress_is_sampled_again_before_allocation_findings() -> None:
    src = source({"orders-consumer": [moving(), moving()]})
    started = src.clock.now()
    d = await diagnose(src, ["orders-consumer"])
    assert src.clock.now() - started == REBALANCE_WAIT == 3.0
    # still overlapping on the second look: reported as it stands
    assert codes(d.findings) == ["QUEUE_HELD_TWICE", "UNEVEN_ALLOCATION", "REBALANCE_IN_PROGRESS"]
    assert one(d.findings, "REBALANCE_IN_PROGRESS").evidence["resampled"] is True


async def test_a_rebalance_that_settles_by_the_second_look_leaves_no_finding() -> None:
    src = source({"orders-consumer": [moving(), settled()]})
    d = await diagnose(src, ["orders-consumer"], rebalance_wait=7)
    assert d.findings == ()
    src2 = source({"orders-consumer": [moving(), settled()]})
    started = src2.clock.now()
    await diagnose(src2, ["orders-consumer"], rebalance_wait=7)
    assert src2.clock.now() - started == 7


async def test_lag_checks_compare_with_the_first_sample_even_after_a_resample() -> None:
    first = settled(broker=100)
    src = source({"orders-consumer": [first, moving_with(broker=120), moving_with(broker=125)]})
    d = await diagnose(src, ["orders-consumer"], interval=10)
    f = one(d.findings, "LAG_NOT_ADVANCING")
    assert f.evidence["queues"][0]["broker_offset"] == [100, 125]


def moving_with(broker: int) -> GroupView:
    v = moving()
    return replace(v, progress=(row(T[0], broker, 40, A), *v.progress[1:]), running_infos={
        **v.running_infos, A: client(A, [S], T[:2], pq=CACHED)})


async def test_a_missing_group_alone_is_an_error() -> None:
    with pytest.raises(errors.NotFound):
        await diagnose(source({}), ["nope"])


async def test_a_missing_group_among_several_stops_unless_not_strict() -> None:
    src = source({"orders-consumer": [settled()]})
    with pytest.raises(errors.NotFound):
        await diagnose(src, ["orders-consumer", "gone"])
    d = await diagnose(source({"orders-consumer": [settled()]}), ["orders-consumer", "gone"], strict=False)
    assert list(d.errors) == ["gone"] and isinstance(d.errors["gone"], errors.NotFound)
    assert d.groups == ("orders-consumer", "gone")


async def test_another_error_of_one_group_is_reported_and_the_others_checked() -> None:
    src = source({"orders-consumer": [settled(consumer=40)], "other": [replace(settled(), group="other")]})
    src.fail("other", errors.ConnectionError("broker-a: connection refused"))
    d = await diagnose(src, ["orders-consumer", "other"])
    assert list(d.errors) == ["other"]
    assert d.findings == ()


async def test_a_single_group_that_cannot_be_read_raises() -> None:
    src = source({"orders-consumer": [settled()]})
    src.fail("orders-consumer", errors.ConnectionError("broker-a: connection refused"))
    with pytest.raises(errors.ConnectionError):
        await diagnose(src, ["orders-consumer"])


async def test_a_partial_view_names_the_group_and_broker_that_failed() -> None:
    partial = replace(settled(), errors={"broker-b": errors.TimeoutError("broker-b timed out")})
    d = await diagnose(source({"orders-consumer": [partial]}), ["orders-consumer"])
    assert list(d.errors) == ["orders-consumer/broker-b"]


async def test_checks_without_their_data_are_listed_as_skipped_per_group() -> None:
    v = replace(settled(), unavailable={"duplicate_clients": "the dashboard does not list connections"})
    d = await diagnose(source({"orders-consumer": [v]}), ["orders-consumer"])
    assert d.skipped == {"orders-consumer": {
        "DUPLICATE_CLIENT_ID": "needs duplicate_clients: the dashboard does not list connections",
        "LAG_NOT_ADVANCING": ONE_SAMPLE}}


def conflicting() -> GroupView:
    return group([client(A, [sub("T", "tagA", 1)], T[:2]), client(B, [sub("T", "tagB", 2)], T[2:])], {"T": T},
                 sampled_at=NOW)


async def test_tags_are_read_back_only_for_topics_whose_clients_disagree() -> None:
    src = source({"orders-consumer": [conflicting()], "calm": [settled(name="calm")]})
    d = await diagnose(src, ["orders-consumer", "calm"])
    assert src.sampled == [("orders-consumer", ["T"])]
    f = one(d.findings, "SUBSCRIPTION_TAG_CONFLICT")
    assert f.evidence["sampled"] is True
    assert f.evidence["tags_never_consumed"] == ["tagA", "tagZ"]


async def test_no_sample_when_told_not_to() -> None:
    src = source({"orders-consumer": [conflicting()]})
    d = await diagnose(src, ["orders-consumer"], sample=False)
    assert src.sampled == []
    assert one(d.findings, "SUBSCRIPTION_TAG_CONFLICT").evidence["sampled"] is False


async def test_a_sample_that_fails_is_reported_and_the_tags_counted_without_it() -> None:
    src = source({"orders-consumer": [conflicting()]})
    src.sample_error = errors.TimeoutError("pull timed out")
    d = await diagnose(src, ["orders-consumer"])
    assert list(d.errors) == ["orders-consumer/sample"]
    assert one(d.findings, "SUBSCRIPTION_TAG_CONFLICT").evidence["sampled"] is False


async def test_the_clock_given_is_the_one_waited_on() -> None:
    src = source({"orders-consumer": [settled(broker=100), settled(broker=130)]})
    own = FakeClock(start=5_000.0)
    source_started = src.clock.now()
    d = await diagnose(src, ["orders-consumer"], interval=30, clock=own)
    assert own.now() == 5_030.0 and src.clock.now() == source_started
    assert codes(d.findings) == ["LAG_NOT_ADVANCING"]


async def test_a_missing_group_listed_first_does_not_hide_the_next() -> None:
    src = source({"orders-consumer": [moving(), moving()]})
    d = await diagnose(src, ["gone", "orders-consumer"], strict=False)
    assert list(d.errors) == ["gone"]
    assert "QUEUE_HELD_TWICE" in codes(d.findings)
