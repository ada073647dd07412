"""The doctor on the seed incidents reproduced on a real broker with real Java consumers.

The verdicts are checked against what the real consumers hold and receive (the harness reports
each consumer's queues and messages), never against the doctor's own output.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from rmqctl.backends.remoting import RemotingBackend
from rmqctl.doctor import run_checks
from rmqctl.doctor.checks import tag_conflict_topics
from rmqctl.model import Finding, GroupView
from rmqctl.remoting.admin import AdminClient
from rmqctl.service import ClusterService
from tests.harness.realcluster import RealCluster, ScenarioClientsProcess, wait_until

pytestmark = [pytest.mark.real_cluster, pytest.mark.timeout(400)]


def group_view(cluster: RealCluster, group: str) -> GroupView:
    async def read() -> GroupView:
        source = ClusterService(RemotingBackend(AdminClient([cluster.namesrv_addr], timeout=10)))
        try:
            view = await source.group_view(group)
            # the doctor reads back conflicting topics' messages (read-only) to count real tags
            return await source.sample_messages(view, tag_conflict_topics(view))
        finally:
            await source.close()

    return asyncio.run(read())


def findings_of(cluster: RealCluster, group: str) -> dict[str, Finding]:
    return {f.code: f for f in run_checks(group_view(cluster, group))}


def start_pair(sc: ScenarioClientsProcess, cluster: RealCluster, group: str, subs_a: dict[str, str],
               subs_b: dict[str, str], inst: str, **options: object) -> tuple[str, str]:
    a = sc.start_consumer("A", group, subs_a, instance_name=f"{inst}_a", **options)
    wait_until(lambda: cluster.consumer_ids(group) == [a], timeout=60, message="A registered")
    b = sc.start_consumer("B", group, subs_b, instance_name=f"{inst}_b", **options)
    wait_until(lambda: cluster.consumer_ids(group) == sorted([a, b]), timeout=60, message="both registered")
    return a, b


def test_tag_overwrite_verdict_matches_what_real_consumers_received(
        real_cluster: RealCluster, scenario_clients: ScenarioClientsProcess,
        rmq_names: Callable[[str], str]) -> None:
    sc = scenario_clients
    topic, group = rmq_names("DocTag"), rmq_names("GDocTag")
    real_cluster.create_topic(topic, 4)
    pair = start_pair(sc, real_cluster, group, {topic: "tagA"}, {topic: "tagB"}, rmq_names("dt"))
    ids = dict(zip("AB", pair, strict=True))
    sc.wait_stable(lambda: sc.queue_ids(topic), duration=3.0, timeout=90,
                   accept=lambda alloc: all(len(alloc.get(k, [])) == 2 for k in "AB"), message="2 queues each")
    sc.produce(topic, "tagA", 4, queue_ids=[0, 1, 2, 3])
    sc.produce(topic, "tagB", 4, queue_ids=[0, 1, 2, 3])
    wait_until(lambda: all(real_cluster.consumer_offset(group, topic, q) == 2 for q in range(4)),
               timeout=90, message="all queues committed")

    found = findings_of(real_cluster, group)
    assert {"SUBSCRIPTION_TAG_CONFLICT", "BROKER_SUBSCRIPTION_DIVERGENCE"} <= set(found)
    ev = found["SUBSCRIPTION_TAG_CONFLICT"].evidence
    (winner,) = ev["broker_holds_from"]  # which client wins is a real race; read it
    (loser,) = ev["losing_clients"]
    assert {winner, loser} == set(ids.values()) and ev["starved_clients"] == [loser]
    key = {cid: k for k, cid in ids.items()}
    held = sc.queue_ids(topic)
    owners = {q["queue_id"]: q["owner"] for q in ev["queues"]}
    assert sorted(q for q, o in owners.items() if o == loser) == held[key[loser]]
    assert sorted(q for q, o in owners.items() if o == winner) == held[key[winner]]
    received = sc.received()
    assert received[key[loser]] == []
    winner_tag = "tagA" if key[winner] == "A" else "tagB"
    assert ev["tags_never_consumed"] == ["tagB" if winner_tag == "tagA" else "tagA"]
    # the winner gets its own tag on exactly the queues it holds, one message each
    assert sorted((m["tag"], m["queue_id"]) for m in received[key[winner]]) == [
        (winner_tag, q) for q in held[key[winner]]]


def test_topic_overwrite_predicts_the_real_orphans(
        real_cluster: RealCluster, scenario_clients: ScenarioClientsProcess,
        rmq_names: Callable[[str], str]) -> None:
    sc = scenario_clients
    tx, ty, group = rmq_names("DocX"), rmq_names("DocY"), rmq_names("GDocTopic")
    real_cluster.create_topic(tx, 4)
    real_cluster.create_topic(ty, 4)
    a = sc.start_consumer("A", group, {tx: "*"}, instance_name=rmq_names("do_a"),
                          heartbeat_interval_ms=1000, pull_delay_on_exception_ms=200)
    b = sc.start_consumer("B", group, {ty: "*"}, instance_name=rmq_names("do_b"),
                          heartbeat_interval_ms=1600, pull_delay_on_exception_ms=200)
    wait_until(lambda: real_cluster.consumer_ids(group) == sorted([a, b]), timeout=60, message="registered")
    sc.wait_stable(lambda: (sc.queue_ids(tx), sc.queue_ids(ty)), duration=3.0, timeout=90,
                   accept=lambda v: bool(v[0].get("A")) and bool(v[1].get("B")), message="allocations")

    found = findings_of(real_cluster, group)
    assert {"SUBSCRIPTION_TOPIC_CONFLICT", "ORPHANED_QUEUES"} <= set(found)
    predicted = {(t["topic"], q["queue_id"])
                 for t in found["SUBSCRIPTION_TOPIC_CONFLICT"].evidence["topics"]
                 for q in t["never_pulled_queues"]}
    held = {(tx, q) for q in sc.queue_ids(tx)["A"]} | {(ty, q) for q in sc.queue_ids(ty)["B"]}
    every = {(t, q) for t in (tx, ty) for q in range(4)}
    assert predicted == every - held == {(tx, 2), (tx, 3), (ty, 0), (ty, 1)}
    orphaned = {(q["topic"], q["queue_id"]) for q in found["ORPHANED_QUEUES"].evidence["queues"]}
    assert predicted <= orphaned


def test_idle_consumer_and_healthy_group(
        real_cluster: RealCluster, scenario_clients: ScenarioClientsProcess,
        rmq_names: Callable[[str], str]) -> None:
    sc = scenario_clients
    one, four = rmq_names("DocOne"), rmq_names("DocFour")
    idle_group, healthy_group = rmq_names("GDocIdle"), rmq_names("GDocHealthy")
    real_cluster.create_topic(one, 1)
    real_cluster.create_topic(four, 4)
    ids = start_pair(sc, real_cluster, idle_group, {one: "*"}, {one: "*"}, rmq_names("di"))
    sc.wait_stable(lambda: sc.queue_ids(one), duration=3.0, timeout=90,
                   accept=lambda alloc: sum(len(v) for v in alloc.values()) == 1, message="one holder")
    found = findings_of(real_cluster, idle_group)
    assert set(found) == {"IDLE_CONSUMERS"}
    holder = next(k for k, qs in sc.queue_ids(one).items() if qs)
    idle_id = ids[1] if holder == "A" else ids[0]
    assert found["IDLE_CONSUMERS"].evidence["idle_clients"] == [idle_id]

    h1 = sc.start_consumer("H1", healthy_group, {four: "x || y"}, instance_name=rmq_names("dh1"))
    h2 = sc.start_consumer("H2", healthy_group, {four: "y || x"}, instance_name=rmq_names("dh2"))
    wait_until(lambda: real_cluster.consumer_ids(healthy_group) == sorted([h1, h2]), timeout=60,
               message="healthy group registered")
    sc.wait_stable(lambda: {k: v for k, v in sc.queue_ids(four).items() if k in ("H1", "H2")},
                   duration=3.0, timeout=90, accept=lambda a: all(len(a.get(k, [])) == 2 for k in ("H1", "H2")),
                   message="2 queues each")
    assert run_checks(group_view(real_cluster, healthy_group)) == []


def test_lag_not_advancing_between_two_samples(
        real_cluster: RealCluster, scenario_clients: ScenarioClientsProcess,
        rmq_names: Callable[[str], str]) -> None:
    sc = scenario_clients
    topic, group = rmq_names("DocSlow"), rmq_names("GDocSlow")
    real_cluster.create_topic(topic, 1)
    # a listener that takes 60 s per message: the committed offset stays put while messages arrive
    cid = sc.start_consumer("S", group, {topic: "*"}, instance_name=rmq_names("ds"),
                            consume_delay_ms=60000, consume_thread_min=1, consume_thread_max=1,
                            persist_offset_interval_ms=1000)
    wait_until(lambda: real_cluster.consumer_ids(group) == [cid], timeout=60, message="registered")
    sc.wait_stable(lambda: sc.queue_ids(topic), duration=2.0, timeout=60,
                   accept=lambda alloc: alloc.get("S") == [0], message="queue held")
    # the broker lists a queue in ConsumeStats only once an offset was committed for it: the client
    # records offset 0 when a pull of the still empty queue comes back with nothing (the harness's
    # broker short-polls, 1 s) and its periodic persist commits it. Wait for that before the first
    # message: once message 0 is in the 60 s listener nothing more is committed for a minute.
    wait_until(lambda: real_cluster.consumer_offset(group, topic, 0) == 0, timeout=60,
               message="offset 0 committed")
    sc.produce(topic, "x", 1, queue_id=0)
    wait_until(lambda: real_cluster.max_offset(topic, 0) == 1, timeout=30, message="message 0 stored")

    def pulled() -> int:  # messages the client holds pulled and not yet consumed (in its listener)
        view = group_view(real_cluster, group)
        return sum(pq.cached_msg_count for info in view.running_infos.values()
                   for mq, pq in info.mq_table.items() if mq.topic == topic)

    # until the client holds message 0, a still offset may be a pull the broker holds back (the
    # doctor gives that the benefit of the doubt); a listener busy on it is the case to find
    wait_until(lambda: pulled() >= 1, timeout=30, message="message 0 in the listener")
    before = group_view(real_cluster, group)
    sc.produce(topic, "x", 3, queue_id=0)
    wait_until(lambda: real_cluster.max_offset(topic, 0) == 4, timeout=30, message="3 more stored")
    after = group_view(real_cluster, group)
    found = {f.code: f for f in run_checks(after, before)}
    assert "LAG_NOT_ADVANCING" in found
    (row,) = [q for q in found["LAG_NOT_ADVANCING"].evidence["queues"] if q["topic"] == topic]
    assert row["queue_id"] == 0 and row["owner"] == cid
    assert row["broker_offset"][1] == 4 and row["broker_offset"][0] < 4
    assert row["consumer_offset"][0] == row["consumer_offset"][1] == 0
    # a single sample cannot tell
    assert "LAG_NOT_ADVANCING" not in {f.code for f in run_checks(after)}
