"""A real Java consumer whose listener hangs before its first commit: the broker's consume stats
(and mqadmin ``consumerProgress``) leave its topic out, since the group has no committed offset
there. The view must still show the held queues with their backlog, the group list count it, and
the doctor raise BLOCKED_QUEUE once the client has consumed nothing for over 60 s.

Expected numbers are the broker's own max offsets (GET_MAX_OFFSET through the harness) and the
10 messages the test sent, 5 to each queue.
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


def read(cluster: RealCluster, group: str) -> tuple[GroupView, GroupSummary]:
    async def both() -> tuple[GroupView, GroupSummary]:
        source = ClusterService(RemotingBackend(AdminClient([cluster.namesrv_addr], timeout=10)))
        try:
            view = await source.group_view(group)
            (summary,) = [s for s in (await source.group_summaries()).value if s.group == group]
            return view, summary
        finally:
            await source.close()

    return asyncio.run(both())


def test_a_listener_hung_before_its_first_commit_is_never_healthy(
        real_cluster: RealCluster, scenario_clients: ScenarioClientsProcess,
        rmq_names: Callable[[str], str]) -> None:
    sc = scenario_clients
    topic, group = rmq_names("Hung"), rmq_names("GHung")
    real_cluster.create_topic(topic, 2)
    client = sc.start_consumer("H", group, {topic: "*"}, instance_name=rmq_names("hung"),
                               consume_delay_ms=150_000)
    wait_until(lambda: real_cluster.consumer_ids(group) == [client], timeout=60, message="registered")
    sc.produce(topic, "t", 10, queue_ids=[0, 1])
    wait_until(lambda: len(sc.received().get("H", [])) == 10, timeout=60, message="all 10 in the listener")
    assert [real_cluster.consumer_offset(group, topic, q) for q in (0, 1)] == [None, None]  # no commit

    view, summary = read(real_cluster, group)
    rows = [(p.queue.queue_id, p.broker_offset, p.consumer_offset, p.offsets_from, p.owner)
            for p in view.progress if p.queue.topic == topic]
    assert rows == [(q, real_cluster.max_offset(topic, q), 0, "no_commit", client) for q in (0, 1)]
    assert [r[1] for r in rows] == [5, 5]
    assert summary.total_diff == 10

    def blocked() -> list[dict[str, object]] | None:
        found = [f for f in run_checks(read(real_cluster, group)[0]) if f.code == "BLOCKED_QUEUE"]
        return found[0].evidence["queues"] if found else None  # type: ignore[no-any-return]

    queues = wait_until(blocked, timeout=150, interval=5.0, message="BLOCKED_QUEUE after 60 s")
    # Reading a client's running info makes it fetch its offset, which a 5.x broker answers with 0
    # for a never-committed queue whose messages are still in memory, and the client then commits
    # that 0: from the second read on consume stats list the topic. Either way the queue is
    # blocked with its client named, and the lag shows all 5 messages of each queue.
    assert [(q["queue_id"], q["client"]) for q in queues if q["topic"] == topic] == [(0, client), (1, client)]
    assert {q["reason"] for q in queues if q["topic"] == topic} <= {"never committed", "no consumption"}
    view = read(real_cluster, group)[0]
    assert [(p.queue.queue_id, p.lag) for p in view.progress if p.queue.topic == topic] == [(0, 5), (1, 5)]
