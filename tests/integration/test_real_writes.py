"""``group delete``, ``group prune`` and ``dlq replay`` against a real 5.3.3 broker, real Java clients.

Each write is run as an operator runs it: through the command line, first as a plan (after which
mqadmin shows nothing changed), then with ``--execute --yes``. What happened is read with the
real ``mqadmin`` (``getConsumerConfig`` for the group's config, ``consumerProgress`` for its
offsets, ``topicList`` for its retry and dead-letter topics) and counted in the Java listeners,
never taken from rmqctl's own read-back alone; the audit log must hold every applied run.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from rmqctl.actions import audit
from rmqctl.cli.app import app
from tests.harness.realcluster import RealCluster, ScenarioClientsProcess, wait_until
from tests.integration.test_real_reset import consumer_progress

pytestmark = [pytest.mark.real_cluster, pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))


def rmqctl(cluster: RealCluster, *args: str, code: int = 0) -> dict[str, Any]:
    """Run ``rmqctl -n NAMESRV ARGS -o json``; assert its exit code; return its document."""
    result: Result = CliRunner().invoke(app, ["-n", cluster.namesrv_addr, *args, "-o", "json"])
    assert result.exit_code == code, (result.exit_code, result.output)
    if code in (0, 9):
        doc: dict[str, Any] = json.loads(result.stdout)
        return doc
    return {"stderr": result.stderr}


def has_config(cluster: RealCluster, group: str) -> bool:
    """``mqadmin getConsumerConfig -g``: does any broker hold the group's subscription config?"""
    out = cluster.mqadmin("getConsumerConfig", "-g", group)
    return any(line.split("=", 1)[0].strip() == "groupName" and line.split("=", 1)[1].strip() == group
               for line in out.splitlines() if "=" in line)


def topic_list(cluster: RealCluster) -> set[str]:
    return {line.strip() for line in cluster.mqadmin("topicList").splitlines() if line.strip()}


def audit_records(action: str, group: str) -> list[dict[str, Any]]:
    return [r for r in audit.read_log() if r["action"] == action and r["group"] == group]


def consumed_group(cluster: RealCluster, sc: ScenarioClientsProcess, names: Callable[[str], str], handle: str,
                   topic: str, group: str, count: int = 4, stored: int = 0) -> str:
    """Start consumer ``handle`` in ``group`` on the 2-queue ``topic`` (holding ``stored`` messages)
    and let it consume them and ``count`` new ones (committed); return its client id."""
    client = sc.start_consumer(handle, group, {topic: "*"}, instance_name=names(handle),
                               persist_offset_interval_ms=1000)
    wait_until(lambda: cluster.consumer_ids(group) == [client], timeout=60, message=f"{group} registered")
    sc.wait_stable(lambda: sc.queue_ids(topic).get(handle), duration=2.0, timeout=60,
                   accept=lambda held: held == [0, 1], message=f"{handle} holds both queues")
    if count:
        sc.produce(topic, "t", count, queue_ids=[0, 1])
    half = (stored + count) // 2
    wait_until(lambda: consumer_progress(cluster, group, topic) == {0: half, 1: half}, timeout=60,
               message=f"{group} committed")
    return client


def stop(cluster: RealCluster, sc: ScenarioClientsProcess, handle: str, group: str) -> None:
    sc.stop_consumer(handle)
    wait_until(lambda: cluster.consumer_ids(group) == [], timeout=60, message=f"{group} offline")


def test_delete_is_a_plan_first_refused_while_online_and_takes_topics_only_when_asked(
        real_cluster: RealCluster, scenario_clients: ScenarioClientsProcess, rmq_names: Callable[[str], str]) -> None:
    cluster, sc = real_cluster, scenario_clients
    topic, group = rmq_names("Del"), rmq_names("GDel")
    retry = "%RETRY%" + group
    cluster.create_topic(topic, 2)
    client = consumed_group(cluster, sc, rmq_names, "A", topic, group)
    online = rmqctl(cluster, "group", "delete", group)
    assert online["online_clients"] == [client]
    assert "online client" in rmqctl(cluster, "group", "delete", group, "--execute", "--yes", code=8)["stderr"]
    assert has_config(cluster, group)

    stop(cluster, sc, "A", group)
    plan = rmqctl(cluster, "group", "delete", group)
    assert plan["online_clients"] == []
    [broker] = plan["brokers"]
    assert (broker["broker"], broker["has_config"]) == (cluster.broker_name, True)
    assert topic in broker["offset_topics"]
    assert retry in plan["topics"]
    # the plan changed nothing: mqadmin still lists the group, its offsets and its retry topic
    assert has_config(cluster, group)
    assert consumer_progress(cluster, group, topic) == {0: 2, 1: 2}
    assert retry in topic_list(cluster)
    assert audit_records("group delete", group) == []

    done = rmqctl(cluster, "group", "delete", group, "--execute", "--yes")
    assert done["all_deleted"] and [b["status"] for b in done["brokers"]] == ["deleted"]
    assert not has_config(cluster, group)
    # not asked for: the committed offsets and the retry topic stay
    assert consumer_progress(cluster, group, topic) == {0: 2, 1: 2}
    assert retry in topic_list(cluster)
    [first] = audit_records("group delete", group)
    assert first["outcome"]["all_deleted"] is True
    assert first["plan"]["clean_offsets"] is False

    assert [cluster.consumer_offset(group, topic, q) for q in (0, 1)] == [2, 2]
    rmqctl(cluster, "group", "delete", group, "--clean-offsets", "--with-retry-dlq", "--execute", "--yes")
    assert retry not in topic_list(cluster)
    # mqadmin consumerProgress needs the retry topic's route: the broker's own answer (14) says it
    assert [cluster.consumer_offset(group, topic, q) for q in (0, 1)] == [None, None]
    assert [r["plan"]["clean_offsets"] for r in audit_records("group delete", group)] == [False, True]


def test_prune_never_takes_a_group_with_an_online_client_and_takes_a_dead_idle_one(
        real_cluster: RealCluster, scenario_clients: ScenarioClientsProcess, rmq_names: Callable[[str], str]) -> None:
    cluster, sc = real_cluster, scenario_clients
    topic, live, dead = rmq_names("Prune"), rmq_names("GLive"), rmq_names("GDead")
    cluster.create_topic(topic, 2)
    live_client = consumed_group(cluster, sc, rmq_names, "L", topic, live)
    consumed_group(cluster, sc, rmq_names, "D", topic, dead, count=0, stored=4)
    # both consumed the same messages, so only the online client tells the two groups apart
    stop(cluster, sc, "D", dead)
    idle_s = 3

    def verdicts() -> dict[str, dict[str, Any]]:
        doc = rmqctl(cluster, "group", "prune", "--idle", f"{idle_s}s")
        return {g["group"]: g for g in doc["groups"] if g["group"] in (live, dead)}

    # the broker's consume TPS of the dead group is a rate over the last minute: it drains first
    found = wait_until(lambda: (v := verdicts()) and v[dead]["verdict"] == "prune" and v, timeout=150,
                       interval=5, message="the dead group is idle")
    assert found[live]["verdict"] == "kept: 1 online client(s)"
    assert found[dead]["online_clients"] == 0
    last = found[dead]["last_consumed_ts"]
    assert last is not None and last < time.time() * 1000 - idle_s * 1000
    # listing is a plan: both groups are still there, their offsets unchanged
    assert has_config(cluster, dead) and has_config(cluster, live)
    assert consumer_progress(cluster, dead, topic) == {0: 2, 1: 2}
    assert audit_records("group delete", dead) == []

    # --execute judges every group again. The broker's consume TPS of a group is a one-minute rate
    # over 10 s samples: it reads 0 until the second sample after the group's first pulls, then
    # 4/10 s, 4/20 s … until the pulls leave the minute ("kept: consuming"). With a 3 s idle period
    # the listing can say "prune" inside that first gap, so apply again until the dead group goes
    # (never the live one), and say how often it was kept
    kept: list[Any] = []
    deadline = time.monotonic() + 150
    while True:
        done = rmqctl(cluster, "group", "prune", "--idle", f"{idle_s}s", "--execute", "--yes")
        pruned = [o["plan"]["group"] for o in done["outcomes"]]
        assert live not in pruned
        if dead in pruned:
            break
        kept.append([g["verdict"] for g in done["groups"] if g["group"] == dead])
        if time.monotonic() > deadline:
            raise AssertionError(f"prune --execute never took {dead}: {kept}")
        time.sleep(5)
    print(f"prune --execute kept {dead} {len(kept)} time(s) first: {kept}")
    assert not has_config(cluster, dead)
    assert has_config(cluster, live)
    assert cluster.consumer_ids(live) == [live_client]
    [record] = audit_records("group delete", dead)
    assert record["outcome"]["all_deleted"] is True
    assert audit_records("group delete", live) == []
    # the live group goes on consuming
    sc.clear_received("L")
    sc.produce(topic, "after", 2, queue_ids=[0, 1])
    wait_until(lambda: len(sc.received("L")["L"]) == 2, timeout=30, message="the live group consumes on")


def test_dlq_replay_delivers_each_dead_letter_once_to_the_fixed_consumer(
        real_cluster: RealCluster, scenario_clients: ScenarioClientsProcess, rmq_names: Callable[[str], str]) -> None:
    cluster, sc = real_cluster, scenario_clients
    topic, group = rmq_names("Dlq"), rmq_names("GDlq")
    dlq, retry = "%DLQ%" + group, "%RETRY%" + group
    cluster.create_topic(topic, 2)
    failing = sc.start_consumer("F", group, {topic: "*"}, instance_name=rmq_names("f"),
                                consume_result="RECONSUME_LATER", max_reconsume_times=1)
    wait_until(lambda: cluster.consumer_ids(group) == [failing], timeout=60, message="failing consumer registered")
    sent = [m for i in range(4) for m in sc.produce(topic, f"tag{i}", 1, queue_id=i % 2, keys=f"k{i}",
                                                     body=f"letter {i}")]

    def shown() -> list[dict[str, Any]]:
        if dlq not in topic_list(cluster):
            return []
        return list(rmqctl(cluster, "dlq", "show", group)["dead_letters"])

    wait_until(lambda: len(shown()) == 4, timeout=120, interval=2, message="four dead letters")
    # the first delivery and the one retry (maxReconsumeTimes 1), then the broker's DLQ
    tries = Counter((m["msg_id"], m["reconsume_times"]) for m in sc.received("F")["F"])
    assert tries == Counter({(m["msg_id"], n): 1 for m in sent for n in (0, 1)})
    stop(cluster, sc, "F", group)

    [listed] = [r for r in rmqctl(cluster, "dlq", "list")["dead_letter_queues"] if r["group"] == group]
    assert (listed["topic"], listed["messages"]) == (dlq, 4)
    retry_high = cluster.max_offset(retry, 0)
    limited = rmqctl(cluster, "dlq", "replay", group, "--limit", "3")
    assert (len(limited["dead_letters"]), limited["left_out"]) == (3, 1)
    plan = rmqctl(cluster, "dlq", "replay", group)
    assert sorted(d["msg_id"] for d in plan["dead_letters"]) == sorted(m["msg_id"] for m in sent)
    assert {d["origin_topic"] for d in plan["dead_letters"]} == {topic}
    assert plan["target_topic"] == retry
    # the plan sent nothing
    assert cluster.max_offset(retry, 0) == retry_high
    assert audit_records("dlq replay", group) == []

    fixed = sc.start_consumer("OK", group, {topic: "*"}, instance_name=rmq_names("ok"))
    wait_until(lambda: cluster.consumer_ids(group) == [fixed], timeout=60, message="fixed consumer registered")
    sc.wait_stable(lambda: sc.queue_ids(retry).get("OK"), duration=2.0, timeout=60,
                   accept=lambda held: held == [0], message="the fixed consumer holds the retry queue")
    sc.wait_stable(lambda: len(sc.received("OK")["OK"]), duration=3.0, timeout=30, message="nothing pending")
    assert sc.received("OK")["OK"] == []

    done = rmqctl(cluster, "dlq", "replay", group, "--execute", "--yes")
    assert done["all_sent"] and done["stored"] == 4
    wait_until(lambda: len(sc.received("OK")["OK"]) >= 4, timeout=60, message="the replayed letters arrive")
    sc.wait_stable(lambda: len(sc.received("OK")["OK"]), duration=3.0, timeout=30, message="no more letters")
    got = sc.received("OK")["OK"]
    assert Counter(m["msg_id"] for m in got) == Counter(m["msg_id"] for m in sent)
    assert sorted((m["topic"], m["tag"], m["keys"], m["body"]) for m in got) == [
        (topic, f"tag{i}", f"k{i}", f"letter {i}") for i in range(4)]
    [record] = audit_records("dlq replay", group)
    assert record["outcome"]["all_sent"] is True and record["outcome"]["stored"] == 4
    assert sorted(s["msg_id"] for s in record["outcome"]["sent"]) == sorted(m["msg_id"] for m in sent)
    assert [s["read_back"] for s in done["sent"]] == ["same"] * 4

    # the dead letters stay; deleting the group with its topics asked removes both
    stop(cluster, sc, "OK", group)
    rmqctl(cluster, "group", "delete", group, "--with-retry-dlq", "--execute", "--yes")
    assert not {dlq, retry} & topic_list(cluster)
