"""Doctor fidelity on mixed groups, on a real 5.x broker with real Java push consumers.

Every verdict is checked against what the real consumers received (the harness records each
listener call), what was produced to each queue, and the broker's own offsets — never against
numbers the doctor computed. Which client's expression the broker stores is decided by the test:
the chosen client's subVersion is pinned above any clock (``pin_sub_version``), so the race the
seeds describe cannot flip the outcome.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from rmqctl.backends.remoting import RemotingBackend
from rmqctl.doctor import diagnose, run_checks
from rmqctl.doctor.checks import tag_conflict_topics
from rmqctl.model import Finding, GroupView
from rmqctl.remoting.admin import AdminClient
from rmqctl.service import ClusterService
from tests.harness.realcluster import RealCluster, ScenarioClientsProcess, wait_until

pytestmark = [pytest.mark.real_cluster, pytest.mark.timeout(300)]

#: a subVersion later than any clock: the client that sends it keeps its expression stored
PINNED = 4_102_444_800_000
TAGS = ("tagX", "tagY", "tagZ")


def read_view(cluster: RealCluster, group: str, *, sample: bool = False) -> GroupView:
    async def read() -> GroupView:
        source = ClusterService(RemotingBackend(AdminClient([cluster.namesrv_addr], timeout=10)))
        try:
            view = await source.group_view(group)
            if sample:
                view = await source.sample_messages(view, tag_conflict_topics(view))
            return view
        finally:
            await source.close()

    return asyncio.run(read())


def run_diagnose(cluster: RealCluster, group: str, **options: Any) -> list[Finding]:
    async def run() -> list[Finding]:
        source = ClusterService(RemotingBackend(AdminClient([cluster.namesrv_addr], timeout=10)))
        try:
            return list((await diagnose(source, [group], **options)).findings)
        finally:
            await source.close()

    return asyncio.run(run())


def stored_expression(cluster: RealCluster, group: str, topic: str) -> str | None:
    table = (cluster.consumer_connection(group) or {}).get("subscriptionTable", {})
    sub = table.get(topic)
    return str(sub["subString"]) if sub else None


@pytest.mark.parametrize("winner", ["C", "B"])
def test_star_plus_tags_counts_equal_what_real_consumers_received(
        real_cluster: RealCluster, scenario_clients: ScenarioClientsProcess,
        rmq_names: Callable[[str], str], winner: str) -> None:
    sc, cluster = scenario_clients, real_cluster
    topic, group, inst = rmq_names("Star"), rmq_names("GStar"), rmq_names("st")
    cluster.create_topic(topic, 6)
    subs = {"A": "tagX || tagY", "B": "tagX", "C": "*"}
    ids = {}
    for key, expr in subs.items():
        ids[key] = sc.start_consumer(key, group, {topic: expr}, instance_name=f"{inst}_{key.lower()}")
        wait_until(lambda: len(cluster.consumer_ids(group)) == len(ids), timeout=60, message="registered")
    sc.wait_stable(lambda: sc.queue_ids(topic), duration=2.0, timeout=90, message="2 queues each",
                   accept=lambda alloc: sorted(len(alloc.get(k, [])) for k in subs) == [2, 2, 2])
    sc.pin_sub_version(winner, topic, PINNED)
    wait_until(lambda: stored_expression(cluster, group, topic) == subs[winner], timeout=30,
               message="the pinned client's expression stored")
    for tag in TAGS:
        sc.produce(topic, tag, 6, queue_ids=range(6))
    wait_until(lambda: all(cluster.consumer_offset(group, topic, q) == 3 for q in range(6)), timeout=90,
               message="every queue committed past its 3 messages")
    received = sc.wait_stable(lambda: {k: sorted((m["tag"], m["queue_id"]) for m in v if m["topic"] == topic)
                                       for k, v in sc.received().items()}, duration=2.0, timeout=30)
    held = sc.queue_ids(topic)

    view = read_view(cluster, group, sample=True)
    (tag,) = [f for f in run_checks(view) if f.code == "SUBSCRIPTION_TAG_CONFLICT"]
    ev = tag.evidence
    assert ev["sampled"] is True and ev["broker_holds_from"] == [ids[winner]]
    for key in subs:
        got = Counter(t for t, _ in received[key])
        assert ev["counts"]["received_by_client"][ids[key]] == dict(got), key
        # what the broker or the client kept from this consumer: produced on its queues, not received
        missed = Counter({t: 2 for t in TAGS}) - got  # one message of each tag per queue, 2 queues
        rows = [q for q in ev["queues"] if q["queue_id"] in held[key]]
        doctor_missed: Counter[str] = Counter()
        for row in rows:
            for t, kinds in row["sample"]["counts"].items():
                doctor_missed[t] += kinds.get("dropped_by_client", 0) + kinds.get("filtered_by_broker", 0)
        assert doctor_missed == missed, key
    nobody = sorted(set(TAGS) - {t for v in received.values() for t, _ in v})
    assert sorted(ev["tags_never_consumed"]) == nobody
    assert nobody == ([] if winner == "C" else ["tagY", "tagZ"])
    assert "'*'" in tag.fix


def test_flickering_topic_ten_runs_one_verdict_and_the_true_backlog(
        real_cluster: RealCluster, scenario_clients: ScenarioClientsProcess,
        rmq_names: Callable[[str], str]) -> None:
    sc, cluster = scenario_clients, real_cluster
    t1, t2, group, inst = rmq_names("Fl1"), rmq_names("Fl2"), rmq_names("GFl"), rmq_names("fl")
    cluster.create_topic(t1, 2)
    cluster.create_topic(t2, 4)
    sc.start_consumer("X", group, {t1: "*"}, instance_name=f"{inst}_x", pull_delay_on_exception_ms=200)
    wait_until(lambda: len(cluster.consumer_ids(group)) == 1, timeout=60, message="X registered")
    sc.start_consumer("Y", group, {t1: "*", t2: "*"}, instance_name=f"{inst}_y",
                      heartbeat_interval_ms=1300, pull_delay_on_exception_ms=200)
    wait_until(lambda: len(cluster.consumer_ids(group)) == 2, timeout=60, message="Y registered")
    sc.wait_stable(lambda: sc.queue_ids(t2), duration=2.0, timeout=90, message="Y holds q2, q3 of the 2nd topic",
                   accept=lambda alloc: alloc.get("Y") == [2, 3])
    # Y's queues get one message each (so the topic enters the offset table); X's share (q0, q1)
    # is allocated to a client that never subscribed the topic: 9 messages wait there for good
    sc.produce(t2, "m", 2, queue_ids=[2, 3])
    sc.produce(t2, "m", 9, queue_ids=[0, 0, 0, 0, 0, 1, 1, 1, 1])
    wait_until(lambda: all(cluster.consumer_offset(group, t2, q) == 1 for q in (2, 3)), timeout=90,
               message="Y consumed its two messages")
    seen: set[bool] = set()

    def both_states() -> bool:
        seen.add(stored_expression(cluster, group, t2) is not None)
        return seen == {True, False}

    wait_until(both_states, timeout=30, interval=0.1, message="the broker's table to flip")
    true_backlog = sum(cluster.max_offset(t2, q) - (cluster.consumer_offset(group, t2, q) or 0) for q in (0, 1))
    assert true_backlog == 9
    verdicts = set()
    for _ in range(10):
        findings = run_diagnose(cluster, group, sample=False)
        (orphaned,) = [f for f in findings if f.code == "ORPHANED_QUEUES"]
        by_queue = {(q["topic"], q["queue_id"]): q["diff"] for q in orphaned.evidence["queues"]}
        verdicts.add((tuple(sorted((f.code, f.severity) for f in findings)), orphaned.evidence["total_diff"],
                      by_queue[(t2, 0)], by_queue[(t2, 1)]))
    assert len(verdicts) == 1, verdicts
    ((codes, backlog, q0, q1),) = verdicts
    assert ("ORPHANED_QUEUES", "error") in codes and ("SUBSCRIPTION_TOPIC_CONFLICT", "error") in codes
    assert (backlog, q0, q1) == (true_backlog, 5, 4)


def test_reconsume_later_consumer_gives_the_consume_failures_finding(
        real_cluster: RealCluster, scenario_clients: ScenarioClientsProcess,
        rmq_names: Callable[[str], str]) -> None:
    sc, cluster = scenario_clients, real_cluster
    topic, group = rmq_names("Fail"), rmq_names("GFail")
    cluster.create_topic(topic, 1)
    cid = sc.start_consumer("F", group, {topic: "*"}, instance_name=rmq_names("fail"),
                            consume_result="RECONSUME_LATER")
    wait_until(lambda: cluster.consumer_ids(group) == [cid], timeout=60, message="registered")
    sc.wait_stable(lambda: sc.queue_ids(topic), duration=1.0, timeout=60, accept=lambda a: a.get("F") == [0])
    sc.produce(topic, "f", 3, queue_id=0)
    wait_until(lambda: len(sc.received()["F"]) >= 3, timeout=60, message="the listener saw the messages")
    # the client's failed-TPS statistic is sampled every 10 s: wait until its report shows it
    view = wait_until(lambda: (v := read_view(cluster, group)).running_infos[cid].consume_failed_tps > 0 and v,
                      timeout=60, interval=1.0, message="failed TPS in the client's running info")
    (failures,) = [f for f in run_checks(view) if f.code == "CONSUME_FAILURES"]
    (client,) = failures.evidence["clients"]
    assert client["client"] == cid and topic in client["topics"]
    assert {"topic": topic, "broker": cluster.broker_name, "queue_id": 0} in client["queues"]
    assert all(m["reconsume_times"] == 0 for m in sc.received()["F"][:3])
    # the text stands alone: the client, where its numbers come from, its queue, the retry topic and DLQ
    assert failures.title.startswith(f"{cid} of {group} fails to consume messages of ")
    assert f"{cid}'s running info (its consume statistics) counts " in failures.detail
    assert f"{topic}@{cluster.broker_name} queue 0" in failures.detail
    assert f"%RETRY%{group}" in failures.detail and f"%DLQ%{group}" in failures.detail


def test_scale_down_gives_no_false_finding_during_the_rebalance(
        real_cluster: RealCluster, scenario_clients: ScenarioClientsProcess,
        rmq_names: Callable[[str], str]) -> None:
    sc, cluster = scenario_clients, real_cluster
    topic, group, inst = rmq_names("Scale"), rmq_names("GScale"), rmq_names("sd")
    cluster.create_topic(topic, 8)
    for n in range(4):
        sc.start_consumer(f"S{n}", group, {topic: "*"}, instance_name=f"{inst}_{n}")
    wait_until(lambda: len(cluster.consumer_ids(group)) == 4, timeout=60, message="4 registered")
    sc.wait_stable(lambda: sc.queue_ids(topic), duration=2.0, timeout=90, message="2 queues each",
                   accept=lambda a: sorted(len(a.get(f"S{n}", [])) for n in range(4)) == [2, 2, 2, 2])
    sc.stop_consumer("S2")
    sc.stop_consumer("S3")
    findings = run_diagnose(cluster, group, rebalance_wait=3.0)
    assert [f for f in findings if f.severity != "info"] == [], [(f.code, f.title) for f in findings]
    held = sc.wait_stable(lambda: sc.queue_ids(topic), duration=1.0, timeout=30,
                          accept=lambda a: sorted(len(a.get(k, [])) for k in ("S0", "S1")) == [4, 4])
    assert sorted(held["S0"] + held["S1"]) == list(range(8))
