"""The requests one ``group list`` sends, counted over a fake back end: each read once per group
and broker where the column needs it, a never-committed topic's stats once per broker and topic
however many groups subscribe it, and running infos only where messages wait."""

from __future__ import annotations

import asyncio
from collections import Counter

from rmqctl.model import SubscriptionGroupConfig
from rmqctl.service import ClusterService
from tests.fake_source import FakeClock
from tests.unit.test_doctor import G
from tests.unit.test_service import A
from tests.unit.test_service_uncommitted import REMOTING, NeverCommittedU

G2 = "test-consumer-2"


def two_groups(u_min: int, u_max: int) -> NeverCommittedU:
    """Two groups with the same client, both subscribing T (committed) and U (never committed)."""
    backend = NeverCommittedU(REMOTING, u_min, u_max)
    backend.configs[A] = {G: SubscriptionGroupConfig(G), G2: SubscriptionGroupConfig(G2)}
    return backend


def listed(backend: NeverCommittedU) -> tuple[list[tuple[str, int, tuple[str, ...]]], Counter[str]]:
    result = asyncio.run(ClusterService(backend, FakeClock()).group_summaries())
    rows = [(s.group, s.total_diff, s.unknown_diff_topics) for s in result.value]
    return rows, Counter(backend.calls)


def test_two_groups_on_one_never_committed_topic_read_its_stats_once_per_broker() -> None:
    rows, calls = listed(two_groups(7, 7))
    assert rows == [(G, 12, ()), (G2, 12, ())]
    assert calls == Counter(subscription_groups=2, consumer_connection=4, consume_stats=4,
                            topics_by_consumer=4, topic_stats=2)


def test_running_infos_are_asked_only_where_messages_wait_once_per_group_and_client() -> None:
    rows, calls = listed(two_groups(2, 10))
    assert rows == [(G, 12 + 8 + 8, ()), (G2, 12 + 8 + 8, ())]
    assert calls == Counter(subscription_groups=2, consumer_connection=4, consume_stats=4,
                            topics_by_consumer=4, topic_stats=2, consumer_running_info=2)
