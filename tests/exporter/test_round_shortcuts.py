"""A round's shortcuts change what it reads and computes, never what it exports.

Two exporters poll one embedded emulator in turns, round after round, as its virtual clock moves
on: one as ``rmqctl exporter`` runs (its rounds encoded by the metrics endpoint, which re-encodes
only the lines that changed), the other with every shortcut off (each group's dead-letter route
read on its own instead of one topic list; each round encoded whole by ``prometheus_client``).
Every series of every round, findings and stuck verdicts included, is the same bytes, in both
formats. The scenarios hold what the shortcuts could get wrong: a
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
from rmqctl.exporter.metrics import CachedExposition, _Part, exposition
from rmqctl.exporter.stuck import StuckJudge
from rmqctl.remoting.admin import AdminClient
from rmqctl.service import ClusterService


class Plain(RemotingBackend):
    """The remoting back end with the shortcuts of a round declared away."""

    @property
    def capabilities(self) -> Capabilities:
        return dataclasses.replace(super().capabilities, lists_every_topic=False)


OPENMETRICS = "application/openmetrics-text; version=1.0.0"


def encoded(result: RoundResult) -> tuple[bytes, bytes]:
    """The round's series as the library encodes them, in the classic format and OpenMetrics."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Part(lambda: RoundCollector().round_metrics(result)))
    return generate_latest(registry), exposition(registry, OPENMETRICS)[0]


@pytest.mark.parametrize(("scenario", "start", "rounds"), [
    ("pop-redelivery", 300, 8),
    ("stall-and-leave", 380, 8),
    ("tag-overwrite", 30, 4),
])
def test_a_round_with_its_shortcuts_exports_what_one_without_them_exports(
        scenario: str, start: float, rounds: int) -> None:
    async def run() -> list[tuple[tuple[bytes, bytes], tuple[bytes, bytes]]]:
        out = []
        collector = RoundCollector()
        endpoint = CachedExposition(collector)
        async with embedded_cluster(scenario, at=start) as (cluster, server):
            clock = VirtualClock(cluster)
            sources = [ClusterService(kind(AdminClient([server.namesrv_addr], timeout=10)), clock)
                       for kind in (RemotingBackend, Plain)]
            makers = [RoundMaker(s, stuck=StuckJudge(120_000)) for s in sources]
            try:
                for _ in range(rounds):
                    fast, plain = [await m.take() for m in makers]
                    assert fast.taken_at == plain.taken_at
                    collector.publish(fast)
                    endpoint.warm()
                    served = (endpoint.render_parts(None)[1], endpoint.render_parts(OPENMETRICS)[1])
                    assert served == encoded(fast)
                    out.append((served, encoded(plain)))
                    await clock.sleep(30)
            finally:
                for source in sources:
                    await source.close()
        return out

    pairs = asyncio.run(run())
    for fast, plain in pairs:
        assert fast == plain
    bodies = [(text, plain) for (text, _), (plain, _) in pairs]
    assert any(b"rmqctl_finding{" in fast for fast, _ in bodies)
    assert len({fast for fast, _ in bodies}) > 1  # the rounds differ: lines were re-encoded
    if scenario == "pop-redelivery":
        # the dead-letter topic appears between the first round and the last
        assert b'rmqctl_group_dlq_messages{group="order-pop"} 0.0' in bodies[0][0]
        assert b'rmqctl_group_dlq_messages{group="order-pop"} 4.0' in bodies[-1][0]
    if scenario == "stall-and-leave":
        assert b"rmqctl_queue_stuck{" in bodies[-1][0]
