"""A topic left behind on a real broker: a real Java consumer that subscribed topicB stops after
committing, another keeps consuming topicA, and more messages go to topicB. The broker drops topicB
from the group's subscription table at the survivor's next heartbeat, so consume stats and mqadmin
``consumerProgress`` stop showing it; rmqctl must still show its rows and backlog.

Expected numbers are the broker's own (its max offsets and committed offsets, read by the harness
with GET_MAX_OFFSET and QUERY_CONSUMER_OFFSET) and the messages the test sent.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from rmqctl.backends.remoting import RemotingBackend
from rmqctl.doctor import run_checks
from rmqctl.model import GroupSummary, GroupView
from rmqctl.remoting.admin import AdminClient
from rmqctl.service import ClusterService
from tests.harness.realcluster import RealCluster, ScenarioClientsProcess, wait_until

pytestmark = [pytest.mark.real_cluster, pytest.mark.timeout(400)]


def group_view(cluster: RealCluster, group: str) -> GroupView:
    async def read() -> GroupView:
        source = ClusterService(RemotingBackend(AdminClient([cluster.namesrv_addr], timeout=10)))
        try:
            return await source.group_view(group)
        finally:
            await source.close()

    return asyncio.run(read())


def group_summary(cluster: RealCluster, group: str) -> GroupSummary:
    async def read() -> GroupSummary:
        source = ClusterService(RemotingBackend(AdminClient([cluster.namesrv_addr], timeout=10)))
        try:
            (summary,) = [s for s in (await source.group_summaries()).value if s.group == group]
            return summary
        finally:
            await source.close()

    return asyncio.run(read())


def test_a_topic_left_behind_shows_the_brokers_backlog(
        real_cluster: RealCluster, scenario_clients: ScenarioClientsProcess,
        rmq_names: Callable[[str], str]) -> None:
    sc = scenario_clients
    topic_a, topic_b, group = rmq_names("LeftA"), rmq_names("LeftB"), rmq_names("GLeft")
    real_cluster.create_topic(topic_a, 2)
    real_cluster.create_topic(topic_b, 2)
    b = sc.start_consumer("B", group, {topic_a: "*", topic_b: "*"}, instance_name=rmq_names("lb"))
    wait_until(lambda: real_cluster.consumer_ids(group) == [b], timeout=60, message="B registered")
    sc.produce(topic_b, "t", 10, queue_ids=[0, 1])
    wait_until(lambda: all(real_cluster.consumer_offset(group, topic_b, q) == 5 for q in (0, 1)),
               timeout=90, message="B committed topicB")
    a = sc.start_consumer("A", group, {topic_a: "*"}, instance_name=rmq_names("la"))
    wait_until(lambda: real_cluster.consumer_ids(group) == sorted([a, b]), timeout=60, message="A registered")
    sc.stop_consumer("B")
    wait_until(lambda: real_cluster.consumer_ids(group) == [a], timeout=60, message="only A online")
    sc.produce(topic_b, "t", 65, queue_ids=[0, 1])  # 33 to queue 0, 32 to queue 1

    def left_behind() -> GroupView | None:
        view = group_view(real_cluster, group)
        rows = [p for p in view.progress if p.queue.topic == topic_b]
        done = len(rows) == 2 and all(not p.subscribed for p in rows) and sum(p.lag or 0 for p in rows) == 65
        return view if done else None

    view = wait_until(left_behind, timeout=90, interval=1.0, message="topicB's rows marked left behind")
    for p in (p for p in view.progress if p.queue.topic == topic_b):
        q = p.queue.queue_id
        assert p.broker_offset == real_cluster.max_offset(topic_b, q) == (38 if q == 0 else 37)
        assert p.consumer_offset == real_cluster.consumer_offset(group, topic_b, q) == 5
        assert p.owner is None
    (finding,) = [f for f in run_checks(view) if f.code == "ABANDONED_TOPIC_BACKLOG"]
    assert (finding.severity, finding.evidence["topic"], finding.evidence["backlog"]) == ("warning", topic_b, 65)
    assert finding.evidence["online_clients"] == [a]
    # the blind spot this covers: mqadmin's progress of the group no longer names topicB
    progress = real_cluster.mqadmin("consumerProgress", "-g", group)
    assert "Diff Total" in progress and topic_b not in progress
    # group list counts the same backlog: its total is the sum of the progress rows, never "unknown"
    summary = group_summary(real_cluster, group)
    assert (summary.total_diff, summary.unknown_diff_topics) == (sum(p.diff for p in view.progress), ())
    assert summary.total_diff >= 65
