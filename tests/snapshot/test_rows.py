"""What a row says for queues the consume stats do not list: route queues and the DLQ."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from rmqctl.connect import Target, open_source
from rmqctl.model import MessageQueue, TopicOffset
from rmqctl.snapshot import export
from tests.fake_source import FakeClock, FakeSource, opened
from tests.snapshot.helpers import read_dataset


async def test_topic_overwrite_rows_name_the_owner_that_does_not_subscribe(tmp_path: Path) -> None:
    out = tmp_path / "snaps"
    async with open_source(Target(emulator="topic-overwrite")) as live:
        await export(live, ["g1"], out, every=30, count=1, handle_signals=False)
    rows = {(r["topic"], r["queue_id"]): r for r in read_dataset(out)}
    c1, c2 = "10.0.0.1@c1", "10.0.0.2@c2"
    # 8 messages per topic round robin over 4 queues: 2 each
    for queue_id, owner, subscribed in [(0, c1, True), (1, c1, True), (2, c2, False), (3, c2, False)]:
        row = rows[("topicA", queue_id)]
        assert (row["owner"], row["owner_subscribed"], row["broker_offset"]) == (owner, subscribed, 2)
    assert rows[("topicA", 2)]["consumer_offset"] == 0 and rows[("topicA", 2)]["last_consumed_ts"] is None
    # The broker's stored table holds topicA only (the last heartbeat was c1's), so its consume
    # stats leave topicB out: the rows come from the broker's offset table and topic stats — c2
    # committed 0 on q0/q1 before c1 joined and took them, and consumed q2/q3 to the end.
    for queue_id, owner, subscribed, committed in [(0, c1, False, 0), (1, c1, False, 0), (2, c2, True, 2),
                                                   (3, c2, True, 2)]:
        row = rows[("topicB", queue_id)]
        assert (row["owner"], row["owner_subscribed"]) == (owner, subscribed)
        assert row["broker_offset"] == 2 and row["consumer_offset"] == committed and row["error"] is None
        assert row["broker_last_ts"] is not None


async def test_dlq_queues_are_recorded_with_their_broker_offsets(tmp_path: Path) -> None:
    async with open_source(Target(emulator="stall-and-leave")) as live:
        view = await live.source.group_view("ledger-service")
    dlq = MessageQueue("%DLQ%ledger-service", "broker-a", 0)
    source = FakeSource(views={"ledger-service": replace(view, dlq=(TopicOffset(dlq, 0, 3, 1_704_067_260_000),))})
    out = tmp_path / "snaps"
    await export(opened(source, FakeClock()), ["ledger-service"], out, every=30, count=1, handle_signals=False)
    (row,) = [r for r in read_dataset(out) if r["topic"].startswith("%DLQ%")]
    assert (row["broker"], row["queue_id"], row["broker_offset"], row["consumer_offset"], row["owner"]) == (
        "broker-a", 0, 3, None, None)
    assert row["broker_last_ts"].isoformat() == "2024-01-01T00:01:00+00:00"
