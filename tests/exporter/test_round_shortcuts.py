"""A round's shortcuts change what it reads and computes, never what it exports.

Two exporters poll one embedded emulator in turns, round after round, as its virtual clock moves
on: one as ``rmqctl exporter`` runs, the other with every shortcut off (each group's dead-letter
route read on its own instead of one topic list). Every series of every round, findings and stuck
verdicts included, is the same bytes. The scenarios hold what the shortcuts could get wrong: a
dead-letter queue that appears (``pop-redelivery``), a queue that stalls and changes owner
(``stall-and-leave``), a subscription conflict (``tag-overwrite``).
"""

from __future__ import annotations

import asyncio
import dataclasses

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import generate_latest

from rmqctl.backends import Capabilities
from rmqctl.backends.remoting import RemotingBackend
from rmqctl.emulator.embedded import VirtualClock, embedded_cluster
from rmqctl.exporter import RoundCollector, RoundMaker, RoundResult
from rmqctl.exporter.metrics import _Part
from rmqctl.exporter.stuck import StuckJudge
from rmqctl.remoting.admin import AdminClient
from rmqctl.service import ClusterService


class Plain(RemotingBackend):
    """The remoting back end with the shortcuts of a round declared away."""

    @property
    def capabilities(self) -> Capabilities:
        return dataclasses.replace(super().capabilities, lists_every_topic=False)


def encoded(result: RoundResult) -> bytes:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Part(lambda: RoundCollector().round_metrics(result)))
    return generate_latest(registry)


@pytest.mark.parametrize(("scenario", "start", "rounds"), [
    ("pop-redelivery", 300, 8),
    ("stall-and-leave", 380, 8),
    ("tag-overwrite", 30, 4),
])
def test_a_round_with_its_shortcuts_exports_what_one_without_them_exports(
        scenario: str, start: float, rounds: int) -> None:
    async def run() -> list[tuple[bytes, bytes]]:
        out = []
        async with embedded_cluster(scenario, at=start) as (cluster, server):
            clock = VirtualClock(cluster)
            sources = [ClusterService(kind(AdminClient([server.namesrv_addr], timeout=10)), clock)
                       for kind in (RemotingBackend, Plain)]
            makers = [RoundMaker(s, stuck=StuckJudge(120_000)) for s in sources]
            try:
                for _ in range(rounds):
                    fast, plain = [await m.take() for m in makers]
                    assert fast.taken_at == plain.taken_at
                    out.append((encoded(fast), encoded(plain)))
                    await clock.sleep(30)
            finally:
                for source in sources:
                    await source.close()
        return out

    bodies = asyncio.run(run())
    for fast, plain in bodies:
        assert fast == plain
    assert any(b"rmqctl_finding{" in fast for fast, _ in bodies)
    if scenario == "pop-redelivery":
        # the dead-letter topic appears between the first round and the last
        assert b'rmqctl_group_dlq_messages{group="order-pop"} 0.0' in bodies[0][0]
        assert b'rmqctl_group_dlq_messages{group="order-pop"} 4.0' in bodies[-1][0]
    if scenario == "stall-and-leave":
        assert b"rmqctl_queue_stuck{" in bodies[-1][0]
