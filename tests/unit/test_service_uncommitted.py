"""Topics a group never committed an offset for, over a fake back end: consume stats leave them
out, so the service must count their held queues' backlog where the back end can read it cheaply
(topic stats first, holders only when messages wait), and say it is unknown where it cannot."""

from __future__ import annotations

import asyncio

from rmqctl.backends import Capabilities
from rmqctl.model import (
    ConsumerConnection,
    ConsumerRunningInfo,
    MessageQueue,
    SubscriptionGroupConfig,
    TopicOffset,
    TopicStats,
    parse_tag_expression,
)
from rmqctl.service import ClusterService
from tests.fake_source import FakeClock
from tests.unit.test_doctor import C1, G, conn, info
from tests.unit.test_service import A, TwoBrokers

T_HELD = [MessageQueue("T", "broker-a", 0), MessageQueue("T", "broker-b", 0)]
U_HELD = [MessageQueue("U", "broker-a", 0), MessageQueue("U", "broker-b", 0)]


class NeverCommittedU(TwoBrokers):
    """Its one client subscribes T and U and holds queue 0 of both on both brokers; the group
    committed only on T (consume stats and the offset table list T alone). U's queues span
    ``u_min``..``u_max``."""

    def __init__(self, capabilities: Capabilities, u_min: int, u_max: int, *, cached_from: int = 0) -> None:
        super().__init__(capabilities)
        self.u = (u_min, u_max)
        self.cached_from = cached_from
        self.configs[A] = {G: SubscriptionGroupConfig(G)}

    async def consumer_connection(self, address: str, group: str) -> ConsumerConnection:
        self._read("consumer_connection", address)
        subs = {t: parse_tag_expression(t, "*", 1) for t in ("T", "U")}
        return ConsumerConnection((conn(C1),), subs, "CONSUME_PASSIVELY", "CLUSTERING", "CONSUME_FROM_LAST_OFFSET")

    async def topics_by_consumer(self, address: str, group: str) -> list[str]:
        self._read("topics_by_consumer", address)
        return ["T"]

    async def topic_stats(self, address: str, topic: str) -> TopicStats:
        self._read("topic_stats", address)
        broker = "broker-a" if address == A else "broker-b"
        low, high = self.u if topic == "U" else (0, 10)
        return TopicStats(topic, (TopicOffset(MessageQueue(topic, broker, 0), low, high, 0),), 1.5)

    async def consumer_running_info(self, address: str, group: str, client_id: str) -> ConsumerRunningInfo:
        self._read("consumer_running_info", address)
        return info(client_id, [parse_tag_expression(t, "*", 1) for t in ("T", "U")], [*T_HELD, *U_HELD],
                    cached_msg_count=3, cached_msg_min_offset=self.cached_from)


REMOTING = Capabilities(lists_group_topics=True)


def summary_of(backend: TwoBrokers):  # type: ignore[no-untyped-def]
    (summary,) = asyncio.run(ClusterService(backend, FakeClock()).group_summaries()).value
    return summary


def test_a_never_committed_topic_with_nothing_waiting_costs_one_stats_read_per_broker() -> None:
    backend = NeverCommittedU(REMOTING, 7, 7)
    summary = summary_of(backend)
    assert summary.total_diff == 12 and summary.unknown_diff_topics == ()  # T's 6 + 6 from consume stats
    assert backend.calls.count("topic_stats") == 2
    assert "consumer_running_info" not in backend.calls


def test_held_queues_of_a_never_committed_topic_add_their_backlog_from_the_min_offset() -> None:
    backend = NeverCommittedU(REMOTING, 2, 10)
    summary = summary_of(backend)
    assert summary.total_diff == 12 + 8 + 8
    assert summary.unknown_diff_topics == ()
    assert backend.calls.count("consumer_running_info") == 1


def test_the_group_view_has_no_commit_rows_that_agree_with_the_summary() -> None:
    backend = NeverCommittedU(REMOTING, 2, 10)
    view = asyncio.run(ClusterService(backend, FakeClock()).group_view(G))
    rows = [(p.queue, p.broker_offset, p.consumer_offset, p.offsets_from, p.owner)
            for p in view.progress if p.queue.topic == "U"]
    assert rows == [(mq, 10, 2, "no_commit", C1) for mq in U_HELD]
    assert sum(p.diff for p in view.progress) == summary_of(NeverCommittedU(REMOTING, 2, 10)).total_diff


def test_without_the_offset_table_held_queues_left_out_are_unknown_never_blank() -> None:
    backend = NeverCommittedU(Capabilities(queue_offsets=False), 2, 10)
    view = asyncio.run(ClusterService(backend, FakeClock()).group_view(G))
    rows = [(p.queue, p.offsets_from, p.lag, p.owner) for p in view.progress if p.queue.topic == "U"]
    assert rows == [(mq, "unknown", None, C1) for mq in U_HELD]
    assert "query_consumer_offset" not in backend.calls


def test_a_back_ends_own_group_list_says_it_cannot_count_never_committed_topics() -> None:
    listing = TwoBrokers(Capabilities(lists_groups=True))
    result = asyncio.run(ClusterService(listing).group_summaries())
    assert set(result.unavailable) == {"uncommitted_topics"}
    assert "total_diff" in result.unavailable["uncommitted_topics"]
    assembled = asyncio.run(ClusterService(NeverCommittedU(REMOTING, 0, 0)).group_summaries())
    assert assembled.unavailable == {}


def test_a_holder_that_started_past_the_min_offset_owes_only_what_it_pulled_on() -> None:
    # the client started at offset 6 (CONSUME_FROM_LAST_OFFSET) and hangs on what it pulled from there
    backend = NeverCommittedU(REMOTING, 2, 10, cached_from=6)
    view = asyncio.run(ClusterService(backend, FakeClock()).group_view(G))
    assert [(p.consumer_offset, p.diff) for p in view.progress if p.queue.topic == "U"] == [(6, 4), (6, 4)]
    assert summary_of(NeverCommittedU(REMOTING, 2, 10, cached_from=6)).total_diff == 12 + 4 + 4
