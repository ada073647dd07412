"""What one exporter round reads, counted over a fake back end of two brokers: the cluster once
per round (not once per group), each broker's table of group configs once however many views
want it at the same time, each broker's offset table once (not each group's topics), a topic's
route once in five minutes, and the store time of a backlog's oldest message once per queue and
offset over all rounds; and the collector's passes held off while a round reads."""

from __future__ import annotations

import asyncio
import dataclasses
import gc
from collections import Counter
from collections.abc import Iterator

import pytest

from rmqctl import errors
from rmqctl.backends import Capabilities
from rmqctl.exporter import RoundMaker
from rmqctl.model import ClusterInfo, GroupView, SampledMessage, SubscriptionGroupConfig, TopicRoute
from rmqctl.service import ROUTE_TTL_S, ClusterService
from tests.fake_source import FakeClock, FakeSource
from tests.unit.test_service import A, B, TwoBrokers

GROUPS = [f"g{n:02}" for n in range(24)]
STORED_AT = 1_704_067_000_000


class Counted(TwoBrokers):
    """Every group of ``GROUPS`` configured on both brokers; the cluster reads are counted too,
    and a message read back carries its store time."""

    def __init__(self) -> None:
        super().__init__(Capabilities(lists_group_topics=True, reads_offset_table=True))
        self.configs = {A: {g: SubscriptionGroupConfig(g) for g in GROUPS},
                        B: {g: SubscriptionGroupConfig(g) for g in GROUPS}}
        self.cluster_fails = 0

    async def cluster_info(self) -> ClusterInfo:
        self.calls.append("cluster_info")
        if self.cluster_fails:
            self.cluster_fails -= 1
            raise errors.ConnectionError("name server down")
        return await super().cluster_info()

    async def topic_route(self, topic: str) -> TopicRoute:
        self.calls.append("topic_route")
        return await super().topic_route(topic)

    async def topics_by_consumer(self, address: str, group: str) -> list[str]:
        self._read("topics_by_consumer", address)
        return ["T"]

    async def offset_topics(self, address: str) -> dict[str, frozenset[str]]:
        self._read("offset_topics", address)
        return {g: frozenset({"T"}) for g in GROUPS}

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

    async def rounds(advance: float) -> list[Counter[str]]:
        counted = []
        for _ in range(3):
            backend.calls.clear()
            result = await maker.take()
            assert sorted(result.groups) == GROUPS and not result.failed_groups
            counted.append(Counter(backend.calls))
            clock.advance(advance)  # the configs are read again after their 30 s
        return counted

    for calls in asyncio.run(rounds(30)):
        assert calls["cluster_info"] == 1
        assert calls["subscription_groups"] == 2
        assert calls["offset_topics"] == 2 and calls["topics_by_consumer"] == 0
        assert calls["consumer_connection"] == 2 * len(GROUPS)  # live state: every group, every round
        assert calls["consume_stats"] == 2 * len(GROUPS)
    first, *later = asyncio.run(rounds(ROUTE_TTL_S))
    assert first["topic_route"] == len(GROUPS)  # T was read in the rounds above: only the DLQs' are asked
    assert all(calls["topic_route"] > len(GROUPS) for calls in later)  # T's route again, five minutes on


def test_a_round_over_every_group_reads_each_brokers_group_configs_once_for_the_list_and_the_views() -> None:
    backend = Counted()
    clock = FakeClock()
    maker = RoundMaker(ClusterService(backend, clock), None, concurrency=16)  # the groups listed each round

    async def rounds() -> list[Counter[str]]:
        counted = []
        for _ in range(3):
            backend.calls.clear()
            result = await maker.take()
            assert set(GROUPS) <= set(result.groups) and not result.failed_groups
            counted.append(Counter(backend.calls))
            clock.advance(30)
        return counted

    for calls in asyncio.run(rounds()):
        assert calls["subscription_groups"] == 2


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
        async def group_view(self, group: str, *, running_info: bool = True, serial: bool = False) -> GroupView:
            seen.append(gc.isenabled())
            return await super().group_view(group, running_info=running_info, serial=serial)

    from tests.exporter.test_metrics import partial_view

    assert gc.isenabled()
    asyncio.run(RoundMaker(Watching(views={"g": partial_view()}), ["g"]).take())
    assert seen == [False]
    assert gc.isenabled()


def test_a_round_is_built_once_and_encoded_only_in_the_formats_scraped() -> None:
    from prometheus_client.metrics_core import Metric

    from rmqctl.exporter import RoundCollector, RoundResult
    from rmqctl.exporter.metrics import CachedExposition
    from tests.exporter.test_metrics import partial_view

    builds: list[int] = []

    class Counting(RoundCollector):
        def round_metrics(self, rnd: RoundResult | None) -> Iterator[Metric]:
            builds.append(rnd.number if rnd is not None else 0)
            return super().round_metrics(rnd)

    maker = RoundMaker(FakeSource(views={"g": partial_view()}), ["g"])
    collector = Counting()
    cached = CachedExposition(collector)
    om = "application/openmetrics-text; version=1.0.0"
    collector.publish(asyncio.run(maker.take()))
    cached.warm()  # before any scrape: both formats, from one build
    assert builds == [1]
    assert b"rmqctl_group_up" in cached.render(om)[0] and b"rmqctl_group_up" in cached.render(None)[0]
    assert builds == [1]

    fresh = CachedExposition(collector)
    fresh.render(om)
    collector.publish(asyncio.run(maker.take()))
    fresh.warm()  # only OpenMetrics was asked for
    assert builds == [1, 1, 2]
    assert [content_type.split(";")[0] for content_type in fresh._cache] == ["application/openmetrics-text"]
    fresh.render(None)  # a format not asked before: encoded on its first scrape
    assert builds == [1, 1, 2, 2]


class Listing(Counted):
    """A back end whose topic list is the name servers' own; one group (g03) has a DLQ."""

    def __init__(self) -> None:
        super().__init__()
        self.capabilities = dataclasses.replace(self.capabilities, lists_every_topic=True)
        self.list_fails = False

    async def topic_list(self) -> list[str]:
        self.calls.append("topic_list")
        if self.list_fails:
            raise errors.ConnectionError("name server down")
        return ["T", "%DLQ%g03", *(f"%RETRY%{g}" for g in GROUPS)]

    async def topic_route(self, topic: str) -> TopicRoute:
        self.dlq = topic == "%DLQ%g03"
        return await super().topic_route(topic)


def test_a_round_reads_one_topic_list_instead_of_each_groups_dead_letter_route() -> None:
    backend = Listing()
    maker = RoundMaker(ClusterService(backend, FakeClock()), GROUPS, concurrency=16)
    asyncio.run(maker.take())  # the first round reads T's route
    backend.calls.clear()
    result = asyncio.run(maker.take())
    calls = Counter(backend.calls)
    assert calls["topic_list"] == 1
    assert calls["topic_route"] == 1  # g03's dead-letter topic, which the list names
    views = {g: r.view for g, r in result.groups.items()}
    assert all(v is not None for v in views.values())
    assert [(o.queue.broker_name, o.max_offset) for o in views["g03"].dlq] == [("broker-a", 10), ("broker-b", 10)]
    assert all(v.dlq == () and "dlq" not in str(v.errors) for g, v in views.items() if g != "g03")
    # the list could not be read: every group asks for its dead-letter route, as without a list
    backend.list_fails = True
    backend.calls.clear()
    again = asyncio.run(maker.take())
    assert Counter(backend.calls)["topic_route"] == len(GROUPS)
    assert {g: r.view.dlq for g, r in again.groups.items() if r.view} == {g: v.dlq for g, v in views.items()}


def test_the_endpoint_keeps_a_few_formats_however_many_versions_scrapers_name() -> None:
    from rmqctl.exporter import RoundCollector
    from rmqctl.exporter.metrics import MAX_FORMATS, CachedExposition
    from tests.exporter.test_metrics import partial_view

    maker = RoundMaker(FakeSource(views={"g": partial_view()}), ["g"])
    collector = RoundCollector()
    cached = CachedExposition(collector)
    collector.publish(asyncio.run(maker.take()))
    cached.warm()
    # every version the Accept header names is a content type of its own
    for minor in range(20):
        body, content_type = cached.render(f"application/openmetrics-text; version=1.{minor}.0")
        assert f"version=1.{minor}.0" in content_type and b"rmqctl_group_up" in body
        assert len(cached._cache) <= MAX_FORMATS and len(cached._lines) <= MAX_FORMATS
    collector.publish(asyncio.run(maker.take()))
    cached.warm()  # the next round is encoded in the formats asked for last, no more
    assert sorted(cached._cache) == sorted(cached._asked) and len(cached._asked) == MAX_FORMATS
    assert all(f"version=1.{minor}.0" in t for t, minor in zip(cached._asked, range(16, 20), strict=True))
