"""Pulled-message decoding, rows consume stats leaves out, unknown lag and mid-rebalance holdings."""

from __future__ import annotations

import asyncio
import struct

import pytest

from rmqctl import errors
from rmqctl.backends import Capabilities
from rmqctl.doctor import run_checks
from rmqctl.model import (
    BrokerData,
    ClusterInfo,
    ConsumerConnection,
    ConsumerRunningInfo,
    ConsumeStats,
    GroupSummary,
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
from rmqctl.remoting.messages import decode_messages
from rmqctl.report import progress_row
from rmqctl.service import ClusterService
from tests.fake_source import FakeClock
from tests.unit.test_doctor import C1, C2, G, conn, info, queues, view


def message_v1(queue_id: int, offset: int, topic: bytes, props: bytes, reconsume: int = 0) -> bytes:
    fixed = (
        struct.pack(">i", -626843481)          # magic code, v1 (1-byte topic length)
        + struct.pack(">i", 0)                 # body CRC
        + struct.pack(">i", queue_id)          # queue id
        + struct.pack(">i", 0)                 # flag
        + struct.pack(">q", offset)            # queue offset
        + struct.pack(">q", 4096)              # physical offset
        + struct.pack(">i", 0)                 # sys flag: IPv4 born and store hosts
        + struct.pack(">q", 1_700_000_000_000)  # born timestamp
        + bytes([10, 0, 0, 1]) + struct.pack(">i", 5000)  # born host
        + struct.pack(">q", 1_700_000_000_001)  # store timestamp
        + bytes([127, 0, 0, 1]) + struct.pack(">i", 10911)  # store host
        + struct.pack(">i", reconsume)         # reconsume times
        + struct.pack(">q", 0)                 # prepared transaction offset
        + struct.pack(">i", 2) + b"hi"         # body
        + bytes([len(topic)]) + topic          # topic
        + struct.pack(">h", len(props)) + props  # properties: key \x01 value \x02
    )
    return struct.pack(">i", 4 + len(fixed)) + fixed


def test_decode_pulled_messages_keeps_queue_offset_tag_and_reconsume_times() -> None:
    body = (message_v1(3, 41, b"T", b"TAGS\x01tagX\x02UNIQ_KEY\x01AB\x02")
            + message_v1(3, 42, b"T", b"UNIQ_KEY\x01AC\x02", reconsume=2))
    assert decode_messages(body, "broker-a") == [
        SampledMessage(MessageQueue("T", "broker-a", 3), 41, "tagX", 0, {"TAGS": "tagX", "UNIQ_KEY": "AB"},
                       1700000000001),
        SampledMessage(MessageQueue("T", "broker-a", 3), 42, None, 2, {"UNIQ_KEY": "AC"}, 1700000000001),
    ]
    with pytest.raises(errors.ProtocolError):
        decode_messages(body[:-5], "broker-a")


class Reads:
    """A back end of one broker whose consume stats leave topic T2 out (T2 is absent from the
    group's subscription table at this moment), with per-queue offset reads."""

    capabilities = Capabilities()

    def __init__(self, *, offsets_fail: bool = False) -> None:
        self.offsets_fail = offsets_fail
        t1, t2 = queues("T1", 2), queues("T2", 2)
        self.held = {C1: t1, C2: t2[1:]}

    async def close(self) -> None:
        return None

    async def cluster_info(self) -> ClusterInfo:
        return ClusterInfo(brokers={"broker-a": BrokerData("broker-a", "DefaultCluster", {0: "127.0.0.1:10911"})},
                           clusters={"DefaultCluster": ("broker-a",)})

    async def broker_runtime(self, address: str) -> dict[str, str]:
        return {}

    async def topic_list(self) -> list[str]:
        return ["T1", "T2"]

    async def subscription_group(self, address: str, group: str) -> SubscriptionGroupConfig | None:
        return SubscriptionGroupConfig(G) if group == G else None

    async def group_summaries(
        self, *, include_system: bool
    ) -> tuple[list[GroupSummary], dict[str, errors.RmqctlError]]:
        raise AssertionError("not declared")

    async def consumer_connection(self, address: str, group: str) -> ConsumerConnection:
        return ConsumerConnection((conn(C1), conn(C2)), {"T1": parse_tag_expression("T1", "*", 1)},
                                  "CONSUME_PASSIVELY", "CLUSTERING", "CONSUME_FROM_LAST_OFFSET")

    async def consume_stats(self, address: str, group: str) -> ConsumeStats:
        return ConsumeStats({mq: OffsetEntry(4, 4, 4, 0) for mq in queues("T1", 2)})

    async def consumer_running_info(self, address: str, group: str, client_id: str) -> ConsumerRunningInfo:
        subs = [parse_tag_expression("T1", "*", 1)] + ([parse_tag_expression("T2", "*", 1)] if client_id == C2 else [])
        return info(client_id, subs, self.held[client_id])

    async def topic_route(self, topic: str) -> TopicRoute:
        if topic.startswith("%"):
            raise errors.TopicNotExist.for_code(17, "no route")
        return TopicRoute(topic, (QueueData("broker-a", 2, 2, 6),), ())

    async def topic_stats(self, address: str, topic: str) -> TopicStats:
        return TopicStats(topic, tuple(TopicOffset(MessageQueue(topic, "broker-a", q), 0, 5, 0) for q in range(2)))

    async def subscription_groups(self, address: str) -> dict[str, SubscriptionGroupConfig]:
        return {G: SubscriptionGroupConfig(G)}

    async def query_consumer_offset(self, address: str, group: str, topic: str, queue_id: int) -> int | None:
        if self.offsets_fail:
            raise errors.TimeoutError("no answer")
        return 2 if queue_id == 1 else None  # only the held queue was ever committed

    async def pull_by_offset(self, address: str, broker_name: str, topic: str, queue_id: int, offset: int,
                             max_nums: int = 32) -> list[SampledMessage]:
        return []


def test_rows_consume_stats_left_out_come_from_the_offset_table() -> None:
    v = asyncio.run(ClusterService(Reads(), FakeClock()).group_view(G))
    rows = {(p.queue.topic, p.queue.queue_id): p for p in v.progress}
    assert rows[("T2", 0)].offsets_from == "offset_table" and rows[("T2", 0)].lag == 5  # never committed
    assert rows[("T2", 1)].lag == 3 and rows[("T1", 0)].offsets_from == "consume_stats"
    orphaned = next(f for f in run_checks(v) if f.code == "ORPHANED_QUEUES")
    assert orphaned.severity == "error" and orphaned.evidence["total_diff"] == 5


def test_unreadable_offsets_are_unknown_never_zero_and_never_milder() -> None:
    v = asyncio.run(ClusterService(Reads(offsets_fail=True), FakeClock()).group_view(G))
    row = next(p for p in v.progress if p.queue == MessageQueue("T2", "broker-a", 0))
    assert row.lag is None and progress_row(row)["diff"] is None and progress_row(row)["offsets_from"] == "unknown"
    assert v.unknown_lag_queues == queues("T2", 2)
    orphaned = next(f for f in run_checks(v) if f.code == "ORPHANED_QUEUES")
    assert orphaned.severity == "error" and "the backlog (unknown for 1 queue)" in orphaned.detail
    assert orphaned.evidence["queues"][0]["diff"] is None
    # the held T2 queue: its topic is missing from the broker's table and its lag is unknown
    assert list(v.unpullable()) == [MessageQueue("T2", "broker-a", 1)]


def test_overlap_and_gaps_are_a_rebalance_in_progress_only_where_every_client_subscribes() -> None:
    qs = queues("T", 4)
    star = parse_tag_expression("T", "*", 1)
    # C1 moved to its new share (q0, q1, q2), C2 still holds its old one (q2): q2 shared, q3 unheld
    mid = view([conn(C1), conn(C2)], [info(C1, [star], qs[:3]), info(C2, [star], qs[2:3])], {"T": star},
               {"T": qs})
    assert mid.rebalance_in_progress() == {"shared": [qs[2]], "unheld": [qs[3]]}
    assert [f.code for f in run_checks(mid)] == ["REBALANCE_IN_PROGRESS"]
    again = {f.code for f in run_checks(mid, resampled=True)}
    assert {"REBALANCE_IN_PROGRESS", "ORPHANED_QUEUES"} <= again
    # a topic only one client subscribes leaves gaps for good: that is no rebalance
    t2 = queues("T2", 2)
    s2 = parse_tag_expression("T2", "*", 1)
    settled = view([conn(C1), conn(C2)], [info(C1, [star], qs[:2]), info(C2, [star, s2], qs[2:] + t2[1:])],
                   {"T": star, "T2": s2}, {"T": qs, "T2": t2})
    assert settled.rebalance_in_progress() is None
