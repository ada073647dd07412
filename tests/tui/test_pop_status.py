"""The TUI's queue status for a POP group: its queues have no holder by design, so none reads as
orphaned, and a queue whose consumer offset stood still for less than POP's commit grace waits
rather than stalls (POP's commit trails the last message by seconds)."""

from __future__ import annotations

from rmqctl.model import MessageQueue, QueueProgress
from tui.state import queue_status

MQ = MessageQueue("T", "broker-a", 0)


def row(broker: int, consumer: int) -> QueueProgress:
    return QueueProgress(MQ, broker, consumer, None, 0)


def test_a_pop_queue_without_a_holder_is_not_orphaned() -> None:
    assert queue_status(row(10, 9), None, ()) == "orphaned"
    assert queue_status(row(10, 9), None, (), pop=True) == "?"
    assert queue_status(row(10, 9), row(8, 5), (), pop=True) == "moving"


def test_a_pop_queue_still_for_less_than_the_grace_waits() -> None:
    assert queue_status(row(10, 9), row(10, 9), (), pop=True, pop_recent=True) == "waiting"
    assert queue_status(row(10, 9), row(10, 9), (), pop=True, pop_recent=False) == "stalled"
