"""The requests one ``group list`` sends, counted over a fake back end: consume stats in one
read per broker where the back end can (a group the broker's answer leaves out is asked alone),
the rest once per group and broker where the column needs it, a never-committed topic's stats
once per broker and topic however many groups subscribe it, and running infos only where
messages wait."""

from __future__ import annotations

import asyncio
import dataclasses
from collections import Counter

from rmqctl.model import SubscriptionGroupConfig
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
