"""The cluster service over a fake back end: what a back end declares decides what is read and
what is marked unavailable, partial results keep each broker's error, and views carry the
service's clock."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from rmqctl import errors
from rmqctl.backends import Capabilities
from rmqctl.model import (
    BrokerData,
    ClusterInfo,
    ConsumerConnection,
    ConsumerRunningInfo,
    ConsumeStats,
    GroupSummary,
    Message,
    MessageQueue,
    OffsetEntry,
    QueueData,
    SampledMessage,
    SubscriptionGroupConfig,
    TopicOffset,
    TopicRoute,
    TopicStats,
    parse_tag_expression,
)
from rmqctl.service import ClusterService
from tests.fake_source import FakeClock
from tests.unit.test_doctor import C1, G, conn, info

A, B = "10.0.0.1:10911", "10.0.0.2:10911"
MASTERS = {"broker-a": A, "broker-b": B}


class TwoBrokers:
    """A back end of two brokers; ``capabilities`` and failures are set per test, every read is
    recorded by name."""

    def __init__(self, capabilities: Capabilities | None = None) -> None:
        self.capabilities = capabilities or Capabilities()
        self.calls: list[str] = []
        #: address → error raised by every read of that broker
        self.down: dict[str, errors.RmqctlError] = {}
        self.configs: dict[str, dict[str, SubscriptionGroupConfig]] = {A: {}, B: {}}
        self.online = True
        #: the group's dead-letter topic has a route (a message was given up on)
        self.dlq = False
        #: what ``pull_messages`` reads back, whatever the topic (whole messages)
        self.messages: list[Message] = []

    def _read(self, name: str, address: str | None = None) -> None:
        self.calls.append(name)
        if address in self.down:
            raise self.down[address]

    async def close(self) -> None:
        return None

    async def cluster_info(self) -> ClusterInfo:
        return ClusterInfo(brokers={name: BrokerData(name, "C", {0: addr}) for name, addr in MASTERS.items()},
                           clusters={"C": tuple(MASTERS)})

    async def broker_runtime(self, address: str) -> dict[str, str]:
        self._read("broker_runtime", address)
        return {"brokerVersionDesc": "V5_3_3"}

    async def topic_list(self) -> list[str]:
        return ["T", f"%RETRY%{G}"]

    async def topic_route(self, topic: str) -> TopicRoute:
        if (topic.startswith("%DLQ%") and not self.dlq) or topic == "missing":
            raise errors.TopicNotExist(17, "no route")
        return TopicRoute(topic, (QueueData("broker-a", 1, 1, 6), QueueData("broker-b", 1, 1, 6)),
                          tuple(BrokerData(name, "C", {0: addr}) for name, addr in MASTERS.items()))

    async def topic_stats(self, address: str, topic: str) -> TopicStats:
        self._read("topic_stats", address)
        broker = "broker-a" if address == A else "broker-b"
        return TopicStats(topic, (TopicOffset(MessageQueue(topic, broker, 0), 0, 10, 0),), 1.5)

    async def consumer_connection(self, address: str, group: str) -> ConsumerConnection:
        self._read("consumer_connection", address)
        if not self.online:
            raise errors.ConsumerNotOnline(206, "offline")
        return ConsumerConnection((conn(C1),), {"T": parse_tag_expression("T", "*", 1)},
                                  "CONSUME_PASSIVELY", "CLUSTERING", "CONSUME_FROM_LAST_OFFSET")

    async def consume_stats(self, address: str, group: str) -> ConsumeStats:
        self._read("consume_stats", address)
        if not self.online:
            return ConsumeStats({})
        broker = "broker-a" if address == A else "broker-b"
        return ConsumeStats({MessageQueue("T", broker, 0): OffsetEntry(10, 4, 6, 0)}, 2.0)

    async def broker_consume_stats(self, address: str) -> dict[str, ConsumeStats]:
        """Every group configured on the broker, each as ``consume_stats`` answers it."""
        self._read("broker_consume_stats", address)
        calls = list(self.calls)
        try:
            return {g: await self.consume_stats(address, g) for g in self.configs[address]}
        finally:
            self.calls[:] = calls

    async def consumer_running_info(self, address: str, group: str, client_id: str) -> ConsumerRunningInfo:
        self._read("consumer_running_info", address)
        return info(client_id, [parse_tag_expression("T", "*", 1)],
                    [MessageQueue("T", "broker-a", 0), MessageQueue("T", "broker-b", 0)])

    async def subscription_group(self, address: str, group: str) -> SubscriptionGroupConfig | None:
        self._read("subscription_group", address)
        return self.configs[address].get(group)

    async def subscription_groups(self, address: str) -> dict[str, SubscriptionGroupConfig]:
        self._read("subscription_groups", address)
        return self.configs[address]

    async def group_summaries(
        self, *, include_system: bool
    ) -> tuple[list[GroupSummary], dict[str, errors.RmqctlError]]:
        self._read("group_summaries")
        return [GroupSummary("listed", 1, None, None, None, 0)], {}

    async def query_consumer_offset(self, address: str, group: str, topic: str, queue_id: int) -> int | None:
        self._read("query_consumer_offset", address)
        return None

    async def pull_by_offset(self, address: str, broker_name: str, topic: str, queue_id: int, offset: int,
                             max_nums: int = 32) -> list[SampledMessage]:
        self._read("pull_by_offset", address)
        return [SampledMessage(MessageQueue(topic, broker_name, queue_id), o, "tagA", 0)
                for o in range(offset, offset + 3)]

    async def pull_messages(self, address: str, broker_name: str, topic: str, queue_id: int, offset: int,
                            max_nums: int = 32) -> list[Message]:
        self._read("pull_messages", address)
        return [m for m in self.messages if m.queue.broker_name == broker_name and m.queue_offset >= offset][:max_nums]


def view_of(backend: TwoBrokers, clock: FakeClock | None = None):  # type: ignore[no-untyped-def]
    return asyncio.run(ClusterService(backend, clock or FakeClock()).group_view(G))


def test_views_are_stamped_with_the_services_clock() -> None:
    clock = FakeClock(start=1_704_067_200.5)
    assert view_of(TwoBrokers(), clock).sampled_at == 1_704_067_200_500
    clock.advance(30)
    assert view_of(TwoBrokers(), clock).sampled_at == 1_704_067_230_500


def test_a_dead_broker_leaves_its_error_and_the_others_rows() -> None:
    backend = TwoBrokers()
    backend.down[B] = errors.ConnectionError("broker-b down")
    view = view_of(backend)
    assert [p.queue.broker_name for p in view.progress] == ["broker-a"]
    assert set(view.errors) == {"broker-b"}  # the DLQ has no route: nothing asked of broker-b there
    assert isinstance(view.errors["broker-b"], errors.ConnectionError)


def test_every_broker_failing_is_a_connection_error() -> None:
    backend = TwoBrokers()
    backend.down = {A: errors.ConnectionError("a down"), B: errors.ConnectionError("b down")}
    with pytest.raises(errors.ConnectionError, match="no broker answered for group"):
        view_of(backend)


def test_a_group_no_broker_knows_is_not_found_and_a_configured_one_is_a_view() -> None:
    backend = TwoBrokers()
    backend.online = False
    with pytest.raises(errors.NotFound, match="not found on any broker"):
        view_of(backend)
    backend.configs[B] = {G: SubscriptionGroupConfig(G)}
    view = view_of(backend)
    assert view.connections == () and view.progress == ()


def test_declared_fatal_errors_end_the_command_instead_of_one_brokers_read() -> None:
    backend = TwoBrokers(Capabilities(fatal=(errors.TimeoutError,)))
    backend.down[B] = errors.TimeoutError("the command's deadline passed")
    with pytest.raises(errors.TimeoutError):
        view_of(backend)
    # without the declaration the same error is one broker's
    backend.capabilities = Capabilities()
    assert isinstance(view_of(backend).errors["broker-b"], errors.TimeoutError)


def test_what_a_back_end_cannot_supply_is_unavailable_and_never_read() -> None:
    caps = Capabilities(unavailable={"pull_offset": "no pull offset"}, connections_of_one_broker="one broker",
                        queue_offsets=False, message_reads=False)
    backend = TwoBrokers(caps)
    service = ClusterService(backend, FakeClock())
    view = asyncio.run(service.group_view(G))
    assert view.unavailable == {"pull_offset": "no pull offset", "broker_subscriptions": "one broker",
                                "duplicate_clients": "one broker"}
    sampled = asyncio.run(service.sample_messages(view, ["T"]))
    assert sampled is view
    assert "pull_by_offset" not in backend.calls and "query_consumer_offset" not in backend.calls


def test_one_broker_connections_with_one_broker_lose_nothing() -> None:
    backend = TwoBrokers(Capabilities(connections_of_one_broker="one broker"))

    async def one_master() -> ClusterInfo:
        return ClusterInfo(brokers={"broker-a": BrokerData("broker-a", "C", {0: A})}, clusters={"C": ("broker-a",)})

    backend.cluster_info = one_master  # type: ignore[method-assign]
    assert view_of(backend).unavailable == {}


def test_message_reads_fill_tag_samples_when_declared() -> None:
    backend = TwoBrokers()
    service = ClusterService(backend, FakeClock())
    view = asyncio.run(service.group_view(G))
    sampled = asyncio.run(service.sample_messages(view, ["T"]))
    sample = sampled.tag_samples[MessageQueue("T", "broker-a", 0)]
    assert (sample.from_offset, sample.to_offset) == (0, 10)
    # this broker answers 3 messages a pull: the window is read pull after pull to its end
    assert [m.offset for m in sample.messages] == list(range(10))


def test_group_list_from_the_back_end_only_when_it_keeps_one() -> None:
    listing = TwoBrokers(Capabilities(lists_groups=True))
    summaries = asyncio.run(ClusterService(listing).group_summaries())
    assert [s.group for s in summaries.value] == ["listed"]
    assert asyncio.run(ClusterService(listing).groups()).value == ["listed"]
    assembled = TwoBrokers()
    assembled.configs[A] = {"other": SubscriptionGroupConfig("other")}
    assert asyncio.run(ClusterService(assembled).groups()).value == ["other", G]
    assert "group_summaries" not in assembled.calls
    no_configs = TwoBrokers(Capabilities(lists_subscription_groups=False))
    assert asyncio.run(ClusterService(no_configs).groups()).value == [G]
    assert "subscription_groups" not in no_configs.calls


def test_summaries_assembled_per_group() -> None:
    backend = TwoBrokers()
    backend.configs[A] = {G: SubscriptionGroupConfig(G)}
    (summary,) = asyncio.run(ClusterService(backend).group_summaries()).value
    assert (summary.group, summary.clients, summary.total_diff, summary.consume_tps) == (G, 1, 12, 4.0)


def test_topic_status_sums_brokers_and_topic_not_exist_is_not_found() -> None:
    service = ClusterService(TwoBrokers())
    status = asyncio.run(service.topic_status("T"))
    assert [o.queue.broker_name for o in status.value.offsets] == ["broker-a", "broker-b"]
    assert status.value.put_tps == 3.0 and status.errors == {}
    with pytest.raises(errors.NotFound, match="'missing' does not exist"):
        asyncio.run(service.topic_status("missing"))


def test_broker_runtimes_keep_each_failure_by_broker_and_id() -> None:
    backend = TwoBrokers()
    backend.down[A] = errors.ConnectionError("a down")
    runtimes = asyncio.run(ClusterService(backend).broker_runtimes())
    assert [(r.broker_name, r.broker_id) for r in runtimes.value] == [("broker-b", 0)]
    assert list(runtimes.errors) == ["broker-a#0"]


def test_capabilities_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        Capabilities().message_reads = False  # type: ignore[misc]


def test_dead_letter_queues_of_every_broker_and_the_error_of_one() -> None:
    backend = TwoBrokers()
    backend.dlq = True
    view = view_of(backend)
    assert [(o.queue.broker_name, o.max_offset) for o in view.dlq] == [("broker-a", 10), ("broker-b", 10)]
    assert view.dlq_messages == 20 and view.errors == {}
    slow = TwoBrokers()
    slow.dlq = True

    async def dlq_stats_fail(address: str, topic: str) -> TopicStats:
        if topic.startswith("%DLQ%") and address == B:
            raise errors.TimeoutError("no answer")
        return await TwoBrokers.topic_stats(slow, address, topic)

    slow.topic_stats = dlq_stats_fail  # type: ignore[method-assign]
    view = view_of(slow)
    assert [o.queue.broker_name for o in view.dlq] == ["broker-a"]
    assert list(view.errors) == ["dlq:broker-b"]


def test_a_dead_letter_route_that_failed_is_an_error_of_every_broker_not_an_absent_dlq() -> None:
    backend = TwoBrokers()

    async def route_times_out(topic: str) -> TopicRoute:
        if topic.startswith("%DLQ%"):
            raise errors.TimeoutError("no answer")
        return await TwoBrokers.topic_route(backend, topic)

    backend.topic_route = route_times_out  # type: ignore[method-assign]
    view = view_of(backend)
    # read as unknown on both brokers (the snapshot writes placeholders), never as "no DLQ yet"
    assert view.dlq == () and sorted(k for k in view.errors if k.startswith("dlq:")) == ["dlq:broker-a", "dlq:broker-b"]
    absent = view_of(TwoBrokers())  # the route does not exist: no message was given up on
    assert absent.dlq == () and absent.errors == {}


def test_samples_read_back_to_the_known_end_or_the_queues_max_offset() -> None:
    backend = TwoBrokers()
    service = ClusterService(backend, FakeClock())
    view = asyncio.run(service.group_view(G))
    unknown = tuple(dataclasses.replace(p, broker_offset=0, consumer_offset=0, offsets_from="unknown")
                    if p.queue.broker_name == "broker-a" else p for p in view.progress)
    backend.down[B] = errors.ConnectionError("broker-b down")
    sampled = asyncio.run(service.sample_messages(dataclasses.replace(view, progress=unknown), ["T", "other"]))
    # broker-a's row is unknown: its end comes from topic stats (max offset 10)
    (sample,) = sampled.tag_samples.values()
    assert sample.queue == MessageQueue("T", "broker-a", 0) and (sample.from_offset, sample.to_offset) == (0, 10)
    assert sample.tag_counts() == {"tagA": 10}
    assert list(sampled.errors) == ["sample:broker-b"]


def test_a_summary_names_the_broker_that_failed_and_the_list_says_which_group() -> None:
    backend = TwoBrokers()
    backend.configs[A] = {G: SubscriptionGroupConfig(G)}
    backend.down[B] = errors.ConnectionError("broker-b down")
    listed = asyncio.run(ClusterService(backend).group_summaries())
    (summary,) = listed.value
    assert (summary.clients, summary.total_diff, summary.consume_tps) == (1, 6, 2.0)
    assert summary.error == "broker-b: broker-b down"
    assert list(listed.errors) == ["broker-b", f"group:{G}"]
    assert str(listed.errors[f"group:{G}"]) == "broker-b: broker-b down"


def test_a_group_nobody_lists_carries_the_brokers_release_read_once_per_service() -> None:
    from rmqctl.model import GroupView, SubscriptionGroupConfig

    backend = TwoBrokers()
    backend.online = False
    backend.configs[A] = {G: SubscriptionGroupConfig(G)}
    service = ClusterService(backend, FakeClock())

    async def twice() -> tuple[GroupView, GroupView]:
        return await service.group_view(G), await service.group_view(G)

    first, second = asyncio.run(twice())
    assert not first.online
    # whether gRPC clients may hide behind a proxy depends on it: 5.x
    assert first.broker_versions == second.broker_versions == {"broker-a": "V5_3_3", "broker-b": "V5_3_3"}
    assert backend.calls.count("broker_runtime") == 2  # one per broker, for the whole service
    online = TwoBrokers()
    assert view_of(online).broker_versions == {} and "broker_runtime" not in online.calls
