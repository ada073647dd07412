"""Compacting the scheduler's heap from inside an event must not lose or repeat events.

The broker's pull processor compacts the heap every 4,096 released pulls, from inside the event
that releases them. The heap used to be replaced by a new list there while ``run_until`` kept
popping the old one: events already due ran twice, and events scheduled after the compaction
waited for the next ``run_until``. In the generated 2,000-group cluster this left 976 groups'
pulls answered twice or never, so about half the groups never consumed a message.
"""

from __future__ import annotations

import pytest

from rmqctl.emulator.clock import Scheduler
from rmqctl.emulator.scenario import scale_scenario
from rmqctl.emulator.world import run_scenario

pytestmark = pytest.mark.fast


def test_compaction_inside_an_event_runs_each_event_once_and_in_the_same_run() -> None:
    scheduler = Scheduler(0)
    ran: list[str] = []
    doomed = [scheduler.call_later(5, ran.append, f"cancelled-{i}") for i in range(10)]

    def compacting() -> None:
        for timer in doomed:
            timer.cancel()
        scheduler.compact()
        scheduler.call_later(0, ran.append, "scheduled-after")

    scheduler.call_later(1, compacting)
    for i in range(3):
        scheduler.call_later(2, ran.append, f"due-{i}")
    scheduler.run_until(10)
    assert ran == ["scheduled-after", "due-0", "due-1", "due-2"]
    assert scheduler.run_until(20) == 0


def test_every_group_of_a_large_generated_cluster_commits() -> None:
    # 2,000 groups x 2 brokers hold 8,000 pulls at once, over the compaction threshold
    cluster = run_scenario(scale_scenario(2000, 4, 2, 2000), at=20)
    for broker in cluster.brokers.values():
        committed = {group for (_, group) in broker.offsets}
        assert len(committed) == 2000, f"{broker}: {2000 - len(committed)} groups never committed"
