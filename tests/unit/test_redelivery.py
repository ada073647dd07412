"""REPEATED_REDELIVERY on POP views built by hand: copies in a POP retry topic whose reconsume
times say how often their message was delivered, against the group's maximum of deliveries."""

from __future__ import annotations

import dataclasses

from rmqctl.doctor import run_checks, skipped_checks
from rmqctl.doctor.redelivery import LIVE_SLACK_MS, redelivery_topics
from rmqctl.model import (
    ClientConnection,
    GroupView,
    MessageQueue,
    QueueProgress,
    SampledMessage,
    SubscriptionGroupConfig,
    TagSample,
)

G = "G_simple"
RETRY = MessageQueue(f"%RETRY%{G}_T", "broker-a", 0)
GRPC = ClientConnection("app-host@4242@0@4e1tsla2r", "10.0.0.7:51000", "JAVA", 479, proxy="p:8081", sdk="grpc")
NOW = 1_700_000_000_000


def copy(offset: int, key: str, deliveries: int, age_ms: int = 20_000, tag: str = "bad") -> SampledMessage:
    return SampledMessage(RETRY, offset, tag, deliveries - 1, {"UNIQ_KEY": key, "TAGS": tag}, NOW - age_ms)


def pop_view(copies: list[SampledMessage], retry_max_times: int | None = 4, retry_end: int = 40) -> GroupView:
    rows = (QueueProgress(MessageQueue("T", "broker-a", 0), 100, 100, None, 0),
            QueueProgress(RETRY, retry_end, retry_end, None, 0))
    configs = ({} if retry_max_times is None else
               {"broker-a": SubscriptionGroupConfig(G, retry_max_times=retry_max_times)})
    return GroupView(G, (GRPC,), {}, {}, rows, consume_type="CONSUME_ACTIVELY", sampled_at=NOW,
                     group_configs=configs, retry_samples={RETRY: TagSample(RETRY, 0, retry_end, tuple(copies))})


def codes(view: GroupView, previous: GroupView | None = None) -> list[str]:
    return [f.code for f in run_checks(view, previous)]


def test_messages_delivered_again_and_again_are_reported_with_the_deliveries_left() -> None:
    # m1's copies: delivered 2, 3 and 4 times; m2: 3 times; m3 once redelivered (not "again and again")
    view = pop_view([copy(30, "m1", 2, 60_000), copy(31, "m2", 3), copy(32, "m1", 3, 40_000), copy(33, "m3", 2),
                     copy(34, "m1", 4)])
    assert redelivery_topics(view) == (RETRY.topic,)
    (found,) = [f for f in run_checks(view) if f.code == "REPEATED_REDELIVERY"]
    assert found.severity == "error"  # m1 has one delivery left of 5
    assert (found.evidence["messages"], found.evidence["highest_delivery"], found.evidence["max_deliveries"],
            found.evidence["deliveries_left"]) == (2, 4, 5, 1)
    assert [e["key"] for e in found.evidence["examples"]] == ["m1", "m2"]
    assert "After 5 deliveries (retryMaxTimes 4) it goes to %DLQ%G_simple" in found.detail
    assert found.title == "2 messages of G_simple delivered up to 4 of 5 times, on their way to %DLQ%G_simple"


def test_far_from_the_dlq_it_is_a_warning_and_an_unread_config_assumes_the_default() -> None:
    (found,) = [f for f in run_checks(pop_view([copy(1, "m1", 3)], retry_max_times=None))
                if f.code == "REPEATED_REDELIVERY"]
    assert found.severity == "warning"
    assert found.evidence["max_deliveries"] is None and found.evidence["deliveries_left"] == 14
    assert "was not read" in found.detail


def test_healthy_and_finished_redeliveries_draw_no_finding() -> None:
    assert "REPEATED_REDELIVERY" not in codes(pop_view([]))
    assert "REPEATED_REDELIVERY" not in codes(pop_view([copy(1, "m1", 2), copy(2, "m2", 2)]))
    # a copy stored long before its next delivery was due: its message was ACKed (or moved on)
    stale = 10_000 + 30_000 + LIVE_SLACK_MS  # the default policy waits 1 min after 3 deliveries
    assert "REPEATED_REDELIVERY" not in codes(pop_view([copy(1, "m1", 3, age_ms=60_000 + LIVE_SLACK_MS + 1)]))
    assert "REPEATED_REDELIVERY" in codes(pop_view([copy(1, "m1", 3, age_ms=stale)]))
    # a push group's retry copies are RETRY_BACKLOG's and CONSUME_FAILURES' business
    remoting = ClientConnection("10.0.0.1@1#1", "10.0.0.1:5000", "JAVA", 479, sdk="remoting")
    push = dataclasses.replace(pop_view([copy(1, "m1", 5)]), connections=(remoting,), consume_type="CONSUME_PASSIVELY")
    assert "REPEATED_REDELIVERY" not in codes(push) and redelivery_topics(push) == ()


def test_growth_between_two_samples_is_counted() -> None:
    before, after = pop_view([copy(1, "m1", 3)], retry_end=30), pop_view([copy(1, "m1", 3)], retry_end=42)
    (found,) = [f for f in run_checks(after, before) if f.code == "REPEATED_REDELIVERY"]
    assert found.evidence["retry_growth"] == 12 and "12 copies were written" in found.detail


def test_without_the_samples_the_check_is_skipped_and_said_so() -> None:
    view = dataclasses.replace(pop_view([copy(1, "m1", 4)]), retry_samples={})
    assert "not with --no-sample" in skipped_checks(view)["REPEATED_REDELIVERY"]
    assert "REPEATED_REDELIVERY" not in skipped_checks(pop_view([copy(1, "m1", 4)]))
    quiet = dataclasses.replace(pop_view([], retry_end=0), retry_samples={})  # nothing ever came back
    assert "REPEATED_REDELIVERY" not in skipped_checks(quiet)


def test_a_frozen_pop_queue_is_stalled_never_orphaned_and_only_past_the_commit_grace() -> None:
    # POP: no client holds T's queue, its committed offset stood at 100 while 20 messages waited; two
    # samples 30 s apart (POP's commit grace) are evidence, 20 s apart are not
    def frozen(at_ms: int, broker_offset: int) -> GroupView:
        rows = (QueueProgress(MessageQueue("T", "broker-a", 0), broker_offset, 100, None, 0),)
        return GroupView(G, (GRPC,), {}, {}, rows, consume_type="CONSUME_ACTIVELY", sampled_at=at_ms)

    (found,) = [f for f in run_checks(frozen(NOW, 120), frozen(NOW - 30_000, 110)) if f.code == "LAG_NOT_ADVANCING"]
    assert [(q["topic"], q["owner"], q["verdict"]) for q in found.evidence["queues"]] == [("T", None, "STALLED")]
    assert "LAG_NOT_ADVANCING" not in codes(frozen(NOW, 120), frozen(NOW - 20_000, 110))
