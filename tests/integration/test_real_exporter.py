"""The exporter against the real broker with real Java consumers agrees with ``group progress``
and ``doctor`` taken in the same round (the cluster is left still between them), and its lag in
seconds matches when the real producer sent the oldest unconsumed message."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.harness.realcluster import RealCluster, ScenarioClientsProcess, wait_until

pytestmark = [pytest.mark.real_cluster, pytest.mark.timeout(400)]
ROOT = Path(__file__).resolve().parents[2]


def rmqctl(*args: str) -> subprocess.CompletedProcess[str]:
    code = "from rmqctl.cli.app import main; main()"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120, cwd=ROOT)


def samples(text: str) -> list[tuple[str, dict[str, str], float]]:
    return [(s.name, s.labels, s.value) for f in text_string_to_metric_families(text) for s in f.samples]


def test_exporter_agrees_with_group_progress_and_doctor_on_a_real_broker(
        real_cluster: RealCluster, scenario_clients: ScenarioClientsProcess,
        rmq_names: Callable[[str], str]) -> None:
    sc, cluster = scenario_clients, real_cluster
    topic, conflict, offline = rmq_names("ExpT"), rmq_names("GExpConflict"), rmq_names("GExpOffline")
    cluster.create_topic(topic, 4)
    # a group whose two clients subscribe different tags (the tag-overwrite incident)
    a = sc.start_consumer("A", conflict, {topic: "tagA"}, instance_name=rmq_names("ea"))
    wait_until(lambda: cluster.consumer_ids(conflict) == [a], timeout=60, message="A registered")
    b = sc.start_consumer("B", conflict, {topic: "tagB"}, instance_name=rmq_names("eb"))
    wait_until(lambda: cluster.consumer_ids(conflict) == sorted([a, b]), timeout=60, message="both registered")
    # a group that consumed, committed and went away: the messages sent after it left wait
    sc.start_consumer("C", offline, {topic: "*"}, instance_name=rmq_names("ec"), persist_offset_interval_ms=500)
    sc.wait_stable(lambda: sc.queue_ids(topic), duration=3.0, timeout=90,
                   accept=lambda alloc: len(alloc.get("C", [])) == 4 and all(len(alloc.get(k, [])) == 2 for k in "AB"),
                   message="C holds 4 queues, A and B 2 each")
    sc.produce(topic, "tagA", 4, queue_ids=[0, 1, 2, 3])
    wait_until(lambda: all(cluster.consumer_offset(offline, topic, q) == 1 for q in range(4)),
               timeout=90, message="C committed every queue")
    wait_until(lambda: all(cluster.consumer_offset(conflict, topic, q) == 1 for q in range(4)),
               timeout=90, message="the conflict group committed every queue")
    sc.stop_consumer("C")
    wait_until(lambda: cluster.consumer_ids(offline) == [], timeout=60, message="C left")
    sent_after = time.time()
    sc.produce(topic, "tagB", 2, queue_ids=[1, 3])  # lands on C's old queues 1 and 3 only
    sent_before = time.time()
    wait_until(lambda: all(cluster.consumer_offset(conflict, topic, q) == cluster.max_offset(topic, q)
                           for q in range(4)), timeout=90, message="the conflict group caught up")

    n = ["-n", cluster.namesrv_addr]
    export_start = time.time()
    exported = rmqctl(*n, "exporter", "--once", "--per-queue", conflict, offline)
    progress = rmqctl(*n, "group", "progress", offline, "-o", "json")
    doctor = rmqctl(*n, "doctor", conflict, offline, "-o", "json", "--fail-on", "never")
    assert exported.returncode == 0, exported.stderr
    assert progress.returncode == 0 and doctor.returncode == 0, progress.stderr + doctor.stderr
    rows = samples(exported.stdout)
    done_at = time.time()

    # per-queue lag: the same numbers as group progress
    lags = {(lb["topic"], lb["broker"], int(lb["queue"])): v for name, lb, v in rows
            if name == "rmqctl_queue_lag_messages" and lb["group"] == offline}
    table = {(q["topic"], q["broker"], q["queue_id"]): q["diff"] for q in json.loads(progress.stdout)["queues"]}
    assert lags == table
    assert {k[2]: v for k, v in lags.items() if k[0] == topic} == {0: 0, 1: 1, 2: 0, 3: 1}
    totals = {lb["topic"]: v for name, lb, v in rows if name == "rmqctl_group_lag_messages" and lb["group"] == offline}
    assert totals[topic] == json.loads(progress.stdout)["total_diff"] == 2

    # the findings: the same codes per group as doctor
    doc = json.loads(doctor.stdout)
    want = {(f["group"], f["code"], f["severity"], f["title"]) for f in doc["findings"]}
    got = {(lb["group"], lb["code"], lb["severity"], lb["title"]) for name, lb, _ in rows
           if name == "rmqctl_finding_info"}
    assert got == want
    assert ("SUBSCRIPTION_TAG_CONFLICT" in {c for g, c, _, _ in got if g == conflict})
    assert ("OFFLINE_GROUP_BACKLOG" in {c for g, c, _, _ in got if g == offline})
    clients = {lb["group"]: v for name, lb, v in rows if name == "rmqctl_group_clients_online"}
    assert clients == {conflict: 2, offline: 0}

    # lag in seconds: the age of the message sent after C left, read back from the broker
    ages = {int(lb["queue"]): v for name, lb, v in rows
            if name == "rmqctl_queue_lag_seconds" and lb["group"] == offline and lb["topic"] == topic}
    assert ages[0] == ages[2] == 0
    for q in (1, 3):  # stored between sent_after and sent_before, judged between export_start and done_at
        assert export_start - sent_before - 1 <= ages[q] <= done_at - sent_after + 1, ages
