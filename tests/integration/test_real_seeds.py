"""The seed incidents, reproduced on a real RocketMQ broker with real Java push consumers.

Each test uses the session-wide ``real_cluster`` (one name server + broker) and its own
``scenario_clients`` JVM, with unique topic/group/instance names, so tests can share the cluster.
Nothing waits with fixed sleeps: every asynchronous step is a poll on a condition with a timeout
(``wait_until`` / ``wait_stable`` in ``tests/harness/realcluster.py``).

Consumers use client IP 127.0.0.1 and explicit instance names, so client ids are
``127.0.0.1@<instance>`` and their sort order (which decides AVG allocation) is known in advance.
The broker runs with 1 s short polling and the clients with 1 s heartbeat/rebalance periods (see
``RealCluster`` / ``ScenarioClientsProcess``); the semantics are those of the defaults, only faster.

Findings pinned here (RocketMQ 5.3.3, see also the harness README in the lead's report):

* tag overwrite: the broker keeps ONE subscription per topic per group, the one with the highest
  ``subVersion``. Which client that is after "B joins A" is a race: both bump their subVersion when
  their allocation changes (4 -> 2 queues for A, 0 -> 2 for B) within a few ms of each other. Usually
  B (started later) wins - then A receives 0 and B receives exactly the 2 tagB messages on its own
  queues 2 and 3 - but sometimes A's bump is later and the mirror image happens (A gets the 2 tagA
  messages on queues 0 and 1, B gets 0). The test determines the winner from the clients' and the
  broker's subVersion and asserts the exact outcome for that winner.
* In both cases every queue's committed offset ends at 2 with diff 0: the lost messages were
  skipped, not left as lag.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest

from tests.harness.realcluster import RealCluster, ScenarioClientsProcess, wait_until

# Redundant once tests/conftest.py lists the plugin; keeps this module runnable on its own.
pytest_plugins = ["tests.harness.plugin"]

pytestmark = [pytest.mark.real_cluster, pytest.mark.timeout(400)]


# ------------------------------------------------------------------------------------------------
# helpers


def _complete_partition(n_queues: int, holders: Sequence[str]) -> Callable[[Mapping[str, list[int]]], bool]:
    """Accept an allocation only if the given consumers hold every queue exactly once."""

    def accept(alloc: Mapping[str, list[int]]) -> bool:
        held = [q for cid in holders for q in alloc.get(cid, [])]
        return sorted(held) == list(range(n_queues))

    return accept


def _settled_allocation(
    sc: ScenarioClientsProcess, topic: str, ids: Sequence[str], n_queues: int, *, all_nonempty: bool
) -> dict[str, list[int]]:
    """Wait until ``ids`` partition the topic's queues and that allocation is unchanged for 3 s."""
    partition = _complete_partition(n_queues, ids)

    def accept(alloc: Mapping[str, list[int]]) -> bool:
        return partition(alloc) and (not all_nonempty or all(alloc.get(i) for i in ids))

    alloc = sc.wait_stable(
        lambda: {i: sc.queue_ids(topic).get(i, []) for i in ids},
        duration=3.0, timeout=90.0, accept=accept, message=f"settled allocation of {topic}",
    )
    return dict(alloc)


def _wait_registered(cluster: RealCluster, group: str, client_ids: Sequence[str]) -> None:
    want = sorted(client_ids)
    wait_until(lambda: cluster.consumer_ids(group) == want, timeout=60,
               message=lambda: f"broker to list {want} in {group} (has {cluster.consumer_ids(group)})")


def _wait_committed(cluster: RealCluster, group: str, topic: str, expected: Mapping[int, int | None],
                    timeout: float = 90.0) -> None:
    """Wait until the broker's committed offsets of ``group`` equal ``expected`` (None = never committed)."""

    def current() -> dict[int, int | None]:
        return {q: cluster.consumer_offset(group, topic, q) for q in expected}

    wait_until(lambda: current() == dict(expected), timeout=timeout,
               message=lambda: f"committed offsets of {group} on {topic} == {dict(expected)} (now {current()})")


def _got(received: Mapping[str, list[dict[str, Any]]], topic: str) -> dict[str, list[tuple[Any, ...]]]:
    """Per consumer, sorted (tag, queue_id, offset) of the messages of ``topic`` it received."""
    return {cid: sorted((m["tag"], m["queue_id"], m["offset"]) for m in msgs if m["topic"] == topic)
            for cid, msgs in received.items()}


_PROGRESS_ROW = re.compile(r"^(\S+)\s+(\S+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(-?\d+)")


def _consumer_progress(cluster: RealCluster, group: str, topic: str) -> dict[int, tuple[int, int, int]]:
    """``mqadmin consumerProgress -g group`` rows of ``topic``: queue id -> (broker off, consumer off, diff)."""
    out = cluster.mqadmin("consumerProgress", "-g", group)
    rows: dict[int, tuple[int, int, int]] = {}
    for line in out.splitlines():
        m = _PROGRESS_ROW.match(line)
        if m and m.group(1) == topic:
            rows[int(m.group(3))] = (int(m.group(4)), int(m.group(5)), int(m.group(6)))
    return rows


def _subscription_rows(consumer_connection_output: str) -> list[tuple[str, str]]:
    """The (topic, expression) rows under "Below is subscription:" of ``mqadmin consumerConnection``."""
    _, _, tail = consumer_connection_output.partition("Below is subscription:")
    rows = []
    for line in tail.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith(("ConsumeType:", "MessageModel:", "ConsumeFromWhere:")):
            break
        topic, _, expr = line.partition(" ")
        rows.append((topic, expr.strip()))
    return sorted(rows)


# ------------------------------------------------------------------------------------------------
# (a) same group, same topic, different tags


def test_tag_overwrite_same_topic_different_tags(
    real_cluster: RealCluster, scenario_clients: ScenarioClientsProcess, rmq_names: Callable[[str], str],
    record_property: Callable[[str, object], None],
) -> None:
    sc = scenario_clients
    topic, group, inst = rmq_names("TagOverwrite"), rmq_names("GTagOverwrite"), rmq_names("tagow")
    real_cluster.create_topic(topic, 4)

    cid_a = sc.start_consumer("A", group, {topic: "tagA"}, instance_name=f"{inst}_a")
    sc.wait_until(lambda: sc.queue_ids(topic)["A"] == [0, 1, 2, 3], timeout=60,
                  message="A alone to hold all 4 queues")
    cid_b = sc.start_consumer("B", group, {topic: "tagB"}, instance_name=f"{inst}_b")
    assert (cid_a, cid_b) == (f"127.0.0.1@{inst}_a", f"127.0.0.1@{inst}_b")
    _wait_registered(real_cluster, group, [cid_a, cid_b])

    # AVG over sorted client ids: A (sorts first) gets q0,q1, B gets q2,q3.
    assert _settled_allocation(sc, topic, ["A", "B"], 4, all_nonempty=True) == {"A": [0, 1], "B": [2, 3]}

    # The broker keeps one SubscriptionData per topic: the highest subVersion wins.
    subs = sc.subscriptions()
    ver = {cid: subs[cid][topic]["sub_version"] for cid in ("A", "B")}
    assert subs["A"][topic]["tags"] == ["tagA"] and subs["B"][topic]["tags"] == ["tagB"]
    assert ver["A"] != ver["B"]
    winner, loser = ("B", "A") if ver["B"] > ver["A"] else ("A", "B")

    def stored_subscription() -> dict[str, Any] | None:
        table = (real_cluster.consumer_connection(group) or {}).get("subscriptionTable", {})
        sub = table.get(topic)
        return sub if sub and sub.get("subVersion") == ver[winner] else None

    # the winner's last heartbeat may still be on its way (an immediate heartbeat is skipped when a
    # periodic one holds the client's heartbeat lock), so wait for the broker to catch up
    stored = wait_until(stored_subscription, timeout=30,
                        message=f"broker subscription of {topic} to carry the winner's subVersion {ver[winner]}")
    assert stored["subString"] == {"A": "tagA", "B": "tagB"}[winner]
    assert stored["tagsSet"] == [{"A": "tagA", "B": "tagB"}[winner]]
    record_property("tag_overwrite_winner", f"{winner} (subVersion A={ver['A']} B={ver['B']})")
    print(f"tag-overwrite: broker keeps {stored['subString']!r} of {winner}; subVersion A={ver['A']} B={ver['B']}")

    # 4 tagA then 4 tagB, one per queue each: every queue holds A at offset 0 and B at offset 1.
    sent_a = sc.produce(topic, "tagA", 4, queue_ids=[0, 1, 2, 3])
    sent_b = sc.produce(topic, "tagB", 4, queue_ids=[0, 1, 2, 3])
    assert [(m["queue_id"], m["offset"]) for m in sent_a] == [(0, 0), (1, 0), (2, 0), (3, 0)]
    assert [(m["queue_id"], m["offset"]) for m in sent_b] == [(0, 1), (1, 1), (2, 1), (3, 1)]

    # Every queue gets consumed-or-skipped up to offset 2: nothing is left as lag.
    _wait_committed(real_cluster, group, topic, {0: 2, 1: 2, 2: 2, 3: 2})
    got = _got(sc.received(), topic)
    if winner == "B":
        # broker filters by tagB: A's queues deliver only tagB, which A's client-side filter drops
        expected = {"A": [], "B": [("tagB", 2, 1), ("tagB", 3, 1)]}
        expected_ids = {m["msg_id"] for m in sent_b if m["queue_id"] in (2, 3)}
    else:
        expected = {"A": [("tagA", 0, 0), ("tagA", 1, 0)], "B": []}
        expected_ids = {m["msg_id"] for m in sent_a if m["queue_id"] in (0, 1)}
    assert got == expected
    assert {m["msg_id"] for m in sc.received()[winner]} == expected_ids
    assert sc.received()[loser] == []

    # lag is 0 everywhere although 6 of the 8 messages never reached a listener
    assert _consumer_progress(real_cluster, group, topic) == {q: (2, 2, 0) for q in range(4)}
    assert sc.queue_ids(topic) == {"A": [0, 1], "B": [2, 3]}


# ------------------------------------------------------------------------------------------------
# (c) more consumers than queues; AVG contiguous blocks


def test_idle_consumer_one_queue_two_consumers(
    real_cluster: RealCluster, scenario_clients: ScenarioClientsProcess, rmq_names: Callable[[str], str],
) -> None:
    sc = scenario_clients
    topic, group, inst = rmq_names("IdleOneQueue"), rmq_names("GIdleOneQueue"), rmq_names("idle")
    real_cluster.create_topic(topic, 1)
    # start the one that sorts LAST first, to show the holder is chosen by sorted client id
    cid_2 = sc.start_consumer("c2", group, {topic: "*"}, instance_name=f"{inst}_2")
    cid_1 = sc.start_consumer("c1", group, {topic: "*"}, instance_name=f"{inst}_1")
    assert cid_1 < cid_2
    _wait_registered(real_cluster, group, [cid_1, cid_2])

    alloc = _settled_allocation(sc, topic, ["c1", "c2"], 1, all_nonempty=False)
    assert alloc == {"c1": [0], "c2": []}

    sent = sc.produce(topic, "t", 4)
    assert [m["queue_id"] for m in sent] == [0, 0, 0, 0]
    _wait_committed(real_cluster, group, topic, {0: 4})
    got = _got(sc.received(), topic)
    assert got == {"c1": [("t", 0, 0), ("t", 0, 1), ("t", 0, 2), ("t", 0, 3)], "c2": []}
    # the idle consumer is registered and heartbeating, it just holds nothing
    assert real_cluster.consumer_ids(group) == sorted([cid_1, cid_2])
    assert sc.queue_ids(topic) == {"c1": [0], "c2": []}


def test_avg_sixteen_queues_three_consumers_contiguous_blocks(
    real_cluster: RealCluster, scenario_clients: ScenarioClientsProcess, rmq_names: Callable[[str], str],
) -> None:
    sc = scenario_clients
    topic, group, inst = rmq_names("Avg16"), rmq_names("GAvg16"), rmq_names("avg")
    real_cluster.create_topic(topic, 16)
    cids = {}
    for cid in ("k3", "k1", "k2"):  # start order differs from sort order on purpose
        cids[cid] = sc.start_consumer(cid, group, {topic: "*"}, instance_name=f"{inst}_{cid}", strategy="AVG")
    assert sorted(cids, key=cids.__getitem__) == ["k1", "k2", "k3"]
    _wait_registered(real_cluster, group, list(cids.values()))

    alloc = _settled_allocation(sc, topic, ["k1", "k2", "k3"], 16, all_nonempty=True)
    assert alloc == {"k1": list(range(6)), "k2": list(range(6, 11)), "k3": list(range(11, 16))}
    assert [len(alloc[k]) for k in ("k1", "k2", "k3")] == [6, 5, 5]

    sc.produce(topic, "t", 16, queue_ids=range(16))
    _wait_committed(real_cluster, group, topic, {q: 1 for q in range(16)})
    got = {cid: sorted(m["queue_id"] for m in msgs) for cid, msgs in sc.received().items()}
    assert got == alloc


# ------------------------------------------------------------------------------------------------
# (b) same group, different topics


def test_topic_overwrite_same_group_different_topics(
    real_cluster: RealCluster, scenario_clients: ScenarioClientsProcess, rmq_names: Callable[[str], str],
    record_property: Callable[[str, object], None],
) -> None:
    sc = scenario_clients
    tx, ty = rmq_names("TopicX"), rmq_names("TopicY")
    group, inst = rmq_names("GTopicOverwrite"), rmq_names("topow")
    retry = f"%RETRY%{group}"
    real_cluster.create_topic(tx, 4)
    real_cluster.create_topic(ty, 4)
    # Different heartbeat periods keep the two clients' heartbeats from phase-locking with the
    # 1 s pull retry (with equal periods a client can miss its "window" forever); a 200 ms retry
    # after "subscription not exist" makes the windows easy to hit. Semantics are unchanged.
    cid_a = sc.start_consumer("A", group, {tx: "*"}, instance_name=f"{inst}_a",
                              heartbeat_interval_ms=1000, pull_delay_on_exception_ms=200)
    cid_b = sc.start_consumer("B", group, {ty: "*"}, instance_name=f"{inst}_b",
                              heartbeat_interval_ms=1600, pull_delay_on_exception_ms=200)
    assert cid_a < cid_b
    _wait_registered(real_cluster, group, [cid_a, cid_b])

    # cidAll = [A, B] for BOTH topics, but each client only rebalances the topic it subscribes.
    def both() -> tuple[dict[str, list[int]], dict[str, list[int]]]:
        return sc.queue_ids(tx), sc.queue_ids(ty)

    x_alloc, y_alloc = sc.wait_stable(both, duration=3.0, timeout=90,
                                      accept=lambda v: bool(v[0]["A"]) and bool(v[1]["B"]),
                                      message="allocation of both topics")
    assert x_alloc == {"A": [0, 1], "B": []}  # TopicX q2,q3 belong to B, which never pulls TopicX
    assert y_alloc == {"A": [], "B": [2, 3]}  # TopicY q0,q1 belong to A, which never pulls TopicY

    # The group's subscription table flips with every heartbeat: it only ever holds the last
    # heartbeating client's topic (+ the retry topic), never both.
    seen: set[frozenset[str]] = set()

    def flipped() -> bool:
        conn = real_cluster.consumer_connection(group)
        if conn:
            seen.add(frozenset(conn["subscriptionTable"]))
        return len(seen) >= 2

    wait_until(flipped, timeout=30, interval=0.05, message="the subscription table to flip between topics")
    assert seen == {frozenset({tx, retry}), frozenset({ty, retry})}

    cc_out = real_cluster.mqadmin("consumerConnection", "-g", group)
    record_property("consumerConnection", cc_out)
    print("mqadmin consumerConnection -g", group, "\n" + cc_out)
    assert sorted(re.findall(r"127\.0\.0\.1@\S+", cc_out)) == sorted([cid_a, cid_b])
    assert _subscription_rows(cc_out) in ([(retry, "*"), (tx, "*")], [(retry, "*"), (ty, "*")])

    sent_x = sc.produce(tx, "t", 8, queue_ids=[0, 1, 2, 3])
    sent_y = sc.produce(ty, "t", 8, queue_ids=[0, 1, 2, 3])
    assert sorted(m["queue_id"] for m in sent_x) == [0, 0, 1, 1, 2, 2, 3, 3]

    # the held halves get consumed (in the windows where the table carries their topic) ...
    _wait_committed(real_cluster, group, tx, {0: 2, 1: 2})
    _wait_committed(real_cluster, group, ty, {2: 2, 3: 2})
    got_x = _got(sc.received(), tx)
    got_y = _got(sc.received(), ty)
    assert got_x == {"A": [("t", q, o) for q in (0, 1) for o in (0, 1)], "B": []}
    assert got_y == {"A": [], "B": [("t", q, o) for q in (2, 3) for o in (0, 1)]}
    assert {m["msg_id"] for m in sc.received()["A"]} == {m["msg_id"] for m in sent_x if m["queue_id"] in (0, 1)}
    assert {m["msg_id"] for m in sc.received()["B"]} == {m["msg_id"] for m in sent_y if m["queue_id"] in (2, 3)}

    # ... the other halves are orphaned: nobody holds them, no offset was ever committed, 2 msgs wait.
    # (5.x answers QUERY_CONSUMER_OFFSET with "not found" thanks to setZeroIfNotFound=false; 4.9
    # ignores that field and reports 0 for a queue whose offset 0 is still in memory.)
    never_committed = None if (real_cluster.version or "").startswith("V5") else 0
    assert (sc.queue_ids(tx), sc.queue_ids(ty)) == (x_alloc, y_alloc)
    for topic, orphans in ((tx, (2, 3)), (ty, (0, 1))):
        for q in orphans:
            assert real_cluster.consumer_offset(group, topic, q) == never_committed
            assert real_cluster.max_offset(topic, q) == 2
