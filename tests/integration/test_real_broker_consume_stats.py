"""GET_BROKER_CONSUME_STATS (317) on a real 5.3.3 broker against GET_CONSUME_STATS (208) for a
few groups: the broker-wide answer's rows equal the per-group ones (but for ``pullOffset``, which
the broker-wide answer never fills), except on a topic whose read and write queue counts differ,
where its rows stop at the write count; the remoting back end leaves such a group out, and
``group list`` gives the same rows with the broker-wide read and without it. The broker writes
that answer, its offset table (43) and its topic configs (21) in the layout read in one pass, which
reads them as the general parser does.

Real Java push consumers commit what they consumed; one group is stopped and then left a backlog
so its numbers are not all equal; the offsets are read once the broker's answer stays the same.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable

import pytest

from rmqctl.backends.remoting import REMOTING, RemotingBackend
from rmqctl.model import ConsumeStats, GroupSummary, MessageQueue
from rmqctl.remoting import bodies
from rmqctl.remoting.admin import AdminClient
from rmqctl.remoting.codes import RequestCode
from rmqctl.service import ClusterService
from tests.harness.realcluster import RealCluster, ScenarioClientsProcess, wait_until

pytestmark = [pytest.mark.real_cluster, pytest.mark.timeout(400)]


def offsets(stats: ConsumeStats) -> dict[MessageQueue, tuple[int, int, int]]:
    return {mq: (e.broker_offset, e.consumer_offset, e.last_timestamp) for mq, e in stats.offsets.items()}


def read(cluster: RealCluster, groups: list[str]) -> tuple[dict[str, ConsumeStats], dict[str, ConsumeStats],
                                                           dict[str, ConsumeStats]]:
    async def go() -> tuple[dict[str, ConsumeStats], dict[str, ConsumeStats], dict[str, ConsumeStats]]:
        async with AdminClient([cluster.namesrv_addr], timeout=20) as admin:
            wide = await admin.broker_consume_stats(cluster.broker_addr)
            alone = {g: await admin.consume_stats(cluster.broker_addr, g) for g in groups}
            kept = dict(await RemotingBackend(admin).broker_consume_stats(cluster.broker_addr))
            return wide, alone, kept

    return asyncio.run(go())


class WithoutBrokerWide(RemotingBackend):
    @property
    def capabilities(self):  # type: ignore[no-untyped-def]
        return dataclasses.replace(REMOTING, broker_consume_stats=False)


def summaries(cluster: RealCluster, groups: list[str], *, broker_wide: bool) -> list[GroupSummary]:
    async def go() -> list[GroupSummary]:
        admin = AdminClient([cluster.namesrv_addr], timeout=20)
        backend = RemotingBackend(admin) if broker_wide else WithoutBrokerWide(admin)
        source = ClusterService(backend)
        try:
            return [s for s in (await source.group_summaries()).value if s.group in groups]
        finally:
            await source.close()

    return asyncio.run(go())


def test_the_broker_wide_answer_equals_the_per_group_ones(
        real_cluster: RealCluster, scenario_clients: ScenarioClientsProcess,
        rmq_names: Callable[[str], str]) -> None:
    sc = scenario_clients
    t1, t2, shrunk = rmq_names("BcsT1"), rmq_names("BcsT2"), rmq_names("BcsShrunk")
    ga, gb, gc = rmq_names("GBcsA"), rmq_names("GBcsB"), rmq_names("GBcsC")
    real_cluster.create_topic(t1, 2)
    real_cluster.create_topic(t2, 2)
    real_cluster.create_topic(shrunk, 4)
    out = real_cluster.mqadmin("updateTopic", "-c", real_cluster.cluster_name, "-t", shrunk,
                               "-r", "4", "-w", "2", check=True)
    assert "success" in out
    a = sc.start_consumer("BcsA", ga, {t1: "*"}, instance_name=rmq_names("bcsa"))
    b = sc.start_consumer("BcsB", gb, {t1: "*", t2: "*"}, instance_name=rmq_names("bcsb"))
    c = sc.start_consumer("BcsC", gc, {shrunk: "*"}, instance_name=rmq_names("bcsc"))
    for group, cid in ((ga, a), (gb, b), (gc, c)):
        wait_until(lambda g=group, i=cid: real_cluster.consumer_ids(g) == [i], timeout=60,
                   message=f"{group} registered")
    sc.produce(t1, "x", 8, queue_ids=[0, 1])
    sc.produce(t2, "x", 6, queue_ids=[0, 1])
    sc.produce(shrunk, "x", 6, queue_ids=[0, 1])
    wait_until(lambda: all(real_cluster.consumer_offset(ga, t1, q) == 4 for q in (0, 1))
               and all(real_cluster.consumer_offset(gb, t2, q) == 3 for q in (0, 1))
               and all(real_cluster.consumer_offset(gc, shrunk, q) == 3 for q in (0, 1)),
               timeout=120, message="every group committed what was sent")
    sc.stop_consumer("BcsB")
    wait_until(lambda: real_cluster.consumer_ids(gb) == [], timeout=60, message="B offline")
    sc.produce(t2, "y", 5, queue_ids=[0, 1])  # a backlog of 3 + 2 for gb

    groups = [ga, gb, gc]

    def settled() -> tuple[dict[str, ConsumeStats], dict[str, ConsumeStats], dict[str, ConsumeStats]] | None:
        wide, alone, kept = read(real_cluster, groups)
        if any(offsets(wide.get(g, ConsumeStats({}))) != offsets(alone[g]) for g in (ga, gb)):
            return None  # a commit landed between the two reads
        return wide, alone, kept

    wide, alone, kept = wait_until(settled, timeout=90, interval=1.0, message="the two answers agree")
    assert {ga, gb, gc} <= set(wide)
    for g in (ga, gb):
        assert offsets(wide[g]) == offsets(alone[g]) and offsets(wide[g])
        assert all(e.pull_offset is None for e in wide[g].offsets.values())
        assert all(e.pull_offset is not None for e in alone[g].offsets.values())
    assert sum(e.broker_offset - e.consumer_offset for e in wide[gb].offsets.values()) == 5
    # the shrunk topic: broker-wide rows up to the write count (2), per-group up to the read count (4)
    assert sorted(mq.queue_id for mq in wide[gc].offsets if mq.topic == shrunk) == [0, 1]
    assert sorted(mq.queue_id for mq in alone[gc].offsets if mq.topic == shrunk) == [0, 1, 2, 3]
    # the back end keeps what equals the per-group answer and leaves the shrunk topic's group out
    assert ga in kept and gb in kept and gc not in kept

    def same_rows() -> list[GroupSummary] | None:
        with_wide = summaries(real_cluster, groups, broker_wide=True)
        return with_wide if with_wide == summaries(real_cluster, groups, broker_wide=False) else None

    rows = wait_until(same_rows, timeout=60, interval=1.0, message="group list the same either way")
    assert [(s.group, s.total_diff) for s in rows] == sorted([(ga, 0), (gb, 5), (gc, 0)])


    async def raw() -> tuple[bytes, bytes, bytes]:
        async with AdminClient([real_cluster.namesrv_addr], timeout=20) as admin:
            wide = await admin.call(real_cluster.broker_addr, RequestCode.GET_BROKER_CONSUME_STATS, {"isOrder": False})
            table = await admin.call(real_cluster.broker_addr, RequestCode.GET_ALL_CONSUMER_OFFSET)
            topics = await admin.call(real_cluster.broker_addr, RequestCode.GET_ALL_TOPIC_CONFIG)
            return wide.body, table.body, topics.body

    wide_body, table_body, topics_body = asyncio.run(raw())
    counts = bodies._topic_queue_counts_as_written(topics_body.decode())
    assert counts is not None and counts[t1] == (2, 2) and counts[shrunk] == (4, 2), topics_body[:300]
    assert counts == {name: (c.read_queue_nums, c.write_queue_nums)
                      for name, c in bodies.topic_configs(topics_body).items()}
    one_pass = bodies._broker_consume_stats_as_written(wide_body.decode())
    assert one_pass is not None and {ga, gb, gc} <= set(one_pass), wide_body[:300]
    assert one_pass == bodies._broker_consume_stats_general(wide_body)
    table = bodies._consumer_offsets_as_written(table_body.decode())
    assert table is not None and (t1, ga) in table, table_body[:300]
    assert table == bodies._consumer_offsets_general(table_body)
