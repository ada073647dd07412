"""What one exporter round reads, counted over a fake back end of two brokers: the cluster once
per round (not once per group), each broker's table of group configs once however many views
want it at the same time, and the store time of a backlog's oldest message once per queue and
offset over all rounds; and the collector's passes held off while a round reads."""

from __future__ import annotations

import asyncio
import dataclasses
import gc
from collections import Counter

import pytest

from rmqctl import errors
from rmqctl.exporter import RoundMaker
from rmqctl.model import ClusterInfo, GroupView, SampledMessage, SubscriptionGroupConfig
from rmqctl.service import ClusterService
from tests.fake_source import FakeSource
from tests.unit.test_service import A, B, FakeClock, TwoBrokers

GROUPS = [f"g{n:02}" for n in range(24)]
STORED_AT = 1_704_067_000_000


class Counted(TwoBrokers):
    """Every group of ``GROUPS`` configured on both brokers; the cluster reads are counted too,
    and a message read back carries its store time."""

    def __init__(self) -> None:
        super().__init__()
        self.configs = {A: {g: SubscriptionGroupConfig(g) for g in GROUPS},
                        B: {g: SubscriptionGroupConfig(g) for g in GROUPS}}
        self.cluster_fails = 0

    async def cluster_info(self) -> ClusterInfo:
        self.calls.append("cluster_info")
        if self.cluster_fails:
            self.cluster_fails -= 1
            raise errors.ConnectionError("name server down")
        return await super().cluster_info()

    async def subscription_groups(self, address: str) -> dict[str, SubscriptionGroupConfig]:
        found = await super().subscription_groups(address)
        await asyncio.sleep(0.01)  # a big table takes a while: other views ask meanwhile
        return found

    async def pull_by_offset(self, address: str, broker_name: str, topic: str, queue_id: int, offset: int,
                             max_nums: int = 32) -> list[SampledMessage]:
        return [dataclasses.replace(m, store_timestamp=STORED_AT + m.offset)
                for m in await super().pull_by_offset(address, broker_name, topic, queue_id, offset, max_nums)]


def test_a_round_reads_the_cluster_once_and_each_brokers_group_configs_once() -> None:
    backend = Counted()
    clock = FakeClock()
    maker = RoundMaker(ClusterService(backend, clock), GROUPS, concurrency=16)

    async def rounds() -> list[Counter[str]]:
        counted = []
        for _ in range(2):
            backend.calls.clear()
            result = await maker.take()
            assert sorted(result.groups) == GROUPS and not result.failed_groups
            counted.append(Counter(backend.calls))
            clock.advance(30)  # the configs are read again after their 30 s
        return counted

    for calls in asyncio.run(rounds()):
        assert calls["cluster_info"] == 1
        assert calls["subscription_groups"] == 2
        assert calls["consumer_connection"] == 2 * len(GROUPS)  # live state: every group, every round


def test_a_shared_cluster_read_that_failed_is_asked_again() -> None:
    backend = Counted()
    service = ClusterService(backend, FakeClock())

    async def twice() -> ClusterInfo:
        with service.sharing():
            with pytest.raises(errors.ConnectionError):
                await service.cluster()
            return await service.cluster()

    backend.cluster_fails = 1
    assert sorted(asyncio.run(twice()).brokers) == ["broker-a", "broker-b"]
    assert backend.calls.count("cluster_info") == 2
    # outside the scope every read asks
    asyncio.run(service.cluster())
    asyncio.run(service.cluster())
    assert backend.calls.count("cluster_info") == 4


def test_a_backlogs_store_time_is_read_once_per_queue_and_offset() -> None:
    backend = Counted()
    service = ClusterService(backend, FakeClock())
    view = asyncio.run(service.group_view("g00"))
    lagging = [p for p in view.progress if p.lag]
    assert len(lagging) == 2  # queue 0 of T on each broker, consumer offset 4
    first = asyncio.run(service.oldest_unconsumed(view))
    again = asyncio.run(service.oldest_unconsumed(view))
    assert first == again == {p.queue: STORED_AT + 4 for p in lagging}
    assert backend.calls.count("pull_by_offset") == 2
    # the consumer moved on: the message at the new offset is read
    moved = dataclasses.replace(view, progress=tuple(dataclasses.replace(p, consumer_offset=5)
                                                     for p in view.progress))
    assert set(asyncio.run(service.oldest_unconsumed(moved)).values()) == {STORED_AT + 5}
    assert backend.calls.count("pull_by_offset") == 4


def test_the_collector_is_held_while_a_round_reads_and_back_after() -> None:
    seen: list[bool] = []

    class Watching(FakeSource):
        async def group_view(self, group: str, *, running_info: bool = True) -> GroupView:
            seen.append(gc.isenabled())
            return await super().group_view(group, running_info=running_info)

    from tests.exporter.test_metrics import partial_view

    assert gc.isenabled()
    asyncio.run(RoundMaker(Watching(views={"g": partial_view()}), ["g"]).take())
    assert seen == [False]
    assert gc.isenabled()
