"""A group list reads each broker's offset table once, not each group's topics per broker: the
rows are the same as when every group is asked on its own, and a broker whose table cannot be
read falls back to asking its groups one by one."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from rmqctl import errors
from rmqctl.backends import Capabilities
from rmqctl.service import ClusterService
from tests.fake_source import FakeClock
from tests.unit.test_doctor import G
from tests.unit.test_service import A, B
from tests.unit.test_service_uncommitted import NeverCommittedU

BATCHED = Capabilities(lists_group_topics=True, reads_offset_table=True)


class Tables(NeverCommittedU):
    """:class:`NeverCommittedU` whose brokers also answer their whole offset table; the table of
    an address in ``no_table`` cannot be read."""

    def __init__(self, capabilities: Capabilities, *, topics: frozenset[str] = frozenset({"T"}),
                 no_table: frozenset[str] = frozenset()) -> None:
        super().__init__(capabilities, 7, 7)
        self.topics = topics
        self.no_table = no_table

    async def offset_topics(self, address: str) -> Mapping[str, frozenset[str]]:
        self._read("offset_topics", address)
        if address in self.no_table:
            raise errors.RemoteError(1, "offset table unreadable")
        return {G: self.topics, "someone-else": frozenset({"X"})}

    async def topics_by_consumer(self, address: str, group: str) -> list[str]:
        self._read("topics_by_consumer", address)
        return sorted(self.topics)


def rows(backend: Tables) -> list[tuple[str, int, tuple[str, ...]]]:
    listed = asyncio.run(ClusterService(backend, FakeClock()).group_summaries()).value
    return [(s.group, s.total_diff, s.unknown_diff_topics) for s in listed]


def test_one_table_read_per_broker_replaces_a_topic_read_per_group_and_broker() -> None:
    batched, one_by_one = Tables(BATCHED), Tables(Capabilities(lists_group_topics=True))
    assert rows(batched) == rows(one_by_one)
    assert batched.calls.count("offset_topics") == 2 and "topics_by_consumer" not in batched.calls
    assert one_by_one.calls.count("topics_by_consumer") == 2 and "offset_topics" not in one_by_one.calls


def test_a_topic_the_table_lists_but_consume_stats_leave_out_is_named() -> None:
    # the fake's consume stats list T only: V, committed on both brokers, is not counted
    batched = Tables(BATCHED, topics=frozenset({"T", "V"}))
    assert rows(batched) == rows(Tables(Capabilities(lists_group_topics=True), topics=frozenset({"T", "V"})))
    ((_, _, unknown),) = rows(batched)
    assert unknown == ("V",)


def test_a_broker_whose_table_fails_has_its_groups_asked_one_by_one() -> None:
    backend = Tables(BATCHED, topics=frozenset({"T", "V"}), no_table=frozenset({B}))
    ((_, _, unknown),) = rows(backend)
    assert unknown == ("V",)
    assert backend.calls.count("topics_by_consumer") == 1 and A in backend.configs
