"""The requests one ``group list`` sends, counted over a fake back end: consume stats in one
read per broker where the back end can (a group the broker's answer leaves out is asked alone),
the rest once per group and broker where the column needs it, a never-committed topic's stats
once per broker and topic however many groups subscribe it, and running infos only where
messages wait."""

from __future__ import annotations

import asyncio
import dataclasses
from collections import Counter
from collections.abc import Sequence

from rmqctl import errors
from rmqctl.backends import Capabilities
from rmqctl.model import ConsumerConnection, SubscriptionGroupConfig
from rmqctl.service import ClusterService
from tests.fake_source import FakeClock
from tests.unit.test_doctor import G
from tests.unit.test_service import A, B
from tests.unit.test_service_uncommitted import REMOTING, NeverCommittedU

G2 = "test-consumer-2"
#: what the remoting back end declares: consume stats of every configured group in one read
BROKER_WIDE = dataclasses.replace(REMOTING, broker_consume_stats=True)


def two_groups(u_min: int, u_max: int, *, configured_on_b: tuple[str, ...] = (G, G2)) -> NeverCommittedU:
    """Two groups with the same client, both subscribing T (committed) and U (never committed)."""
    backend = NeverCommittedU(BROKER_WIDE, u_min, u_max)
    backend.configs[A] = {G: SubscriptionGroupConfig(G), G2: SubscriptionGroupConfig(G2)}
    backend.configs[B] = {g: SubscriptionGroupConfig(g) for g in configured_on_b}
    return backend


def listed(backend: NeverCommittedU) -> tuple[list[tuple[str, int, tuple[str, ...]]], Counter[str]]:
    result = asyncio.run(ClusterService(backend, FakeClock()).group_summaries())
    rows = [(s.group, s.total_diff, s.unknown_diff_topics) for s in result.value]
    return rows, Counter(backend.calls)


def test_two_groups_on_one_never_committed_topic_read_its_stats_once_per_broker() -> None:
    rows, calls = listed(two_groups(7, 7))
    assert rows == [(G, 12, ()), (G2, 12, ())]
    assert calls == Counter(subscription_groups=2, broker_consume_stats=2, consumer_connection=4,
                            topics_by_consumer=4, topic_stats=2)


def test_running_infos_are_asked_only_where_messages_wait_once_per_group_and_client() -> None:
    rows, calls = listed(two_groups(2, 10))
    assert rows == [(G, 12 + 8 + 8, ()), (G2, 12 + 8 + 8, ())]
    assert calls == Counter(subscription_groups=2, broker_consume_stats=2, consumer_connection=4,
                            topics_by_consumer=4, topic_stats=2, consumer_running_info=2)


def test_a_group_the_brokers_answer_leaves_out_is_read_alone_with_the_same_total() -> None:
    rows, calls = listed(two_groups(7, 7, configured_on_b=(G,)))
    assert rows == [(G, 12, ()), (G2, 12, ())]
    assert calls == Counter(subscription_groups=2, broker_consume_stats=2, consume_stats=1,
                            consumer_connection=4, topics_by_consumer=4, topic_stats=2)


def test_a_broker_whose_answer_failed_is_read_group_by_group() -> None:
    backend = two_groups(7, 7)
    original = backend.broker_consume_stats

    async def failing(address: str):  # type: ignore[no-untyped-def]
        if address == B:
            backend.calls.append("broker_consume_stats")
            from rmqctl import errors
            raise errors.TimeoutError("no answer")
        return await original(address)

    backend.broker_consume_stats = failing  # type: ignore[method-assign]
    rows, calls = listed(backend)
    assert rows == [(G, 12, ()), (G2, 12, ())]
    assert calls["consume_stats"] == 2 and calls["broker_consume_stats"] == 2


def test_without_the_broker_wide_read_each_group_asks_each_broker() -> None:
    backend = two_groups(7, 7)
    backend.capabilities = REMOTING
    rows, calls = listed(backend)
    assert rows == [(G, 12, ()), (G2, 12, ())]
    assert calls == Counter(subscription_groups=2, consumer_connection=4, consume_stats=4,
                            topics_by_consumer=4, topic_stats=2)


def test_the_groups_other_reads_go_out_while_the_broker_wide_read_is_in_flight() -> None:
    """A broker that takes its time over the broker-wide answer does not hold back the groups'
    connection lists: the answer here comes only after a connection list was asked."""
    backend = two_groups(7, 7)
    asked = asyncio.Event()
    broker_wide, connection = backend.broker_consume_stats, backend.consumer_connection

    async def slow(address: str):  # type: ignore[no-untyped-def]
        await asyncio.wait_for(asked.wait(), 10)
        return await broker_wide(address)

    async def connections(address: str, group: str):  # type: ignore[no-untyped-def]
        asked.set()
        return await connection(address, group)

    backend.broker_consume_stats = slow  # type: ignore[method-assign]
    backend.consumer_connection = connections  # type: ignore[method-assign]
    rows, calls = listed(backend)
    assert rows == [(G, 12, ()), (G2, 12, ())]
    assert calls["broker_consume_stats"] == 2 and calls["consume_stats"] == 0


class Batched(NeverCommittedU):
    """Answers every group's connection list of a broker in one batch, each item what
    ``consumer_connection`` answers or raises for it; ``failing`` groups fail on broker B."""

    def __init__(self, capabilities: Capabilities, failing: dict[str, errors.RmqctlError]) -> None:
        super().__init__(dataclasses.replace(capabilities, batches_connections=True), 7, 7)
        self.configs[B] = {G: SubscriptionGroupConfig(G), G2: SubscriptionGroupConfig(G2)}
        self.configs[A] = dict(self.configs[B])
        self.failing = failing

    async def consumer_connection(self, address: str, group: str) -> ConsumerConnection:
        if address == B and group in self.failing:
            self.calls.append("consumer_connection")
            raise self.failing[group]
        return await super().consumer_connection(address, group)

    async def consumer_connections(
        self, address: str, groups: Sequence[str]
    ) -> list[ConsumerConnection | errors.RmqctlError]:
        self.calls.append("consumer_connections")
        calls = list(self.calls)
        out: list[ConsumerConnection | errors.RmqctlError] = []
        for group in groups:
            try:
                out.append(await self.consumer_connection(address, group))
            except errors.RmqctlError as exc:
                out.append(exc)
        self.calls[:] = calls
        return out


def test_batched_connection_lists_give_the_rows_of_one_read_per_group_and_broker() -> None:
    """A back end that batches connection lists is asked once per broker for all of them, and
    every row (a broker without the group's clients, a broker that failed) reads the same."""
    failing = {G2: errors.RemoteError(1, "broker busy"), G: errors.ConsumerNotOnline(206, "offline")}
    for capabilities in (BROKER_WIDE, REMOTING):
        one_by_one = Batched(capabilities, failing)
        one_by_one.capabilities = capabilities
        batched = Batched(capabilities, failing)
        expected = asyncio.run(ClusterService(one_by_one, FakeClock()).group_summaries())
        found = asyncio.run(ClusterService(batched, FakeClock()).group_summaries())
        assert found.value == expected.value
        assert [s.error for s in found.value] == [None, "broker-b: response code 1: broker busy"]
        assert {k: str(e) for k, e in found.errors.items()} == {k: str(e) for k, e in expected.errors.items()}
        assert Counter(batched.calls)["consumer_connections"] == 2
        assert "consumer_connection" not in batched.calls
        assert Counter(one_by_one.calls)["consumer_connection"] == 4


def test_the_broker_wide_reads_go_out_while_the_groups_are_listed() -> None:
    """The reads that need only the brokers (consume stats of every group, the offset tables)
    do not wait for the list of groups: each broker's group configs come back here only after
    its broker-wide read was asked."""
    backend = two_groups(7, 7)
    asked = {A: asyncio.Event(), B: asyncio.Event()}
    configs, broker_wide = backend.subscription_groups, backend.broker_consume_stats

    async def slow(address: str):  # type: ignore[no-untyped-def]
        await asyncio.wait_for(asked[address].wait(), 10)
        return await configs(address)

    async def wide(address: str):  # type: ignore[no-untyped-def]
        asked[address].set()
        return await broker_wide(address)

    backend.subscription_groups = slow  # type: ignore[method-assign]
    backend.broker_consume_stats = wide  # type: ignore[method-assign]
    rows, calls = listed(backend)
    assert rows == [(G, 12, ()), (G2, 12, ())]
    assert calls["broker_consume_stats"] == 2 and calls["consume_stats"] == 0
