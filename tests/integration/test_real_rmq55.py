"""Every read command against the newest broker generation: a real RocketMQ 5.5.0 name server and
broker, with real Java push consumers, compared with the real 5.5.0 mqadmin.

A cluster of its own (module scope): the harness built with the ``rmq55`` profile into
``tests/harness/target/rmq55`` (:func:`build_harness_line`), beside the session's 5.3.3 build, so
the consumers (``ScenarioClients``) and ``mqadmin`` run on the 5.5.0 client and tools jars. The
broker has LMQ dispatch on (``enableLmq``, ``enableMultiDispatch``), which 5.5's lite topics
need: a topic of ``message.type=LITE`` and a group bound to it (``lite.bind.topic``), fed by
messages that name a lite topic (``__LITE_TOPIC``), whose progress the broker keeps per lite topic
in a light message queue (``%LMQ%$<topic>$<lite topic>``) that rmqctl does not read: it says so
(unavailable, checks skipped) instead of showing the group caught up.

When the 5.5.0 jars cannot be fetched the module is skipped with the reason, or fails under
``RMQCTL_REQUIRE_REAL_CLUSTER=1``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.harness.plugin import real_part_missing, start_or_missing
from tests.harness.realcluster import (
    HarnessError,
    RealCluster,
    ScenarioClientsProcess,
    ScenarioError,
    build_harness_line,
    raw_request,
    wait_until,
)

pytestmark = [pytest.mark.real_cluster, pytest.mark.slow, pytest.mark.timeout(600)]

PROFILE = "rmq55"
VERSION = "V5_5_0"
TOPIC, GROUP, IDLE_GROUP = "Gen55Topic", "Gen55Group", "Gen55Idle"
LITE_TOPIC, LITE_GROUP = "Gen55Lite", "Gen55LiteGroup"
LITE_NAMES = ("order-1", "order-2", "order-1")


@dataclass
class Setup:
    cluster: RealCluster
    clients: ScenarioClientsProcess
    client_ids: tuple[str, str]


@pytest.fixture(scope="module")
def rmq55_cluster() -> Iterator[RealCluster]:
    """A 5.5.0 name server and broker of this module's own (LMQ dispatch on, for lite topics)."""
    try:
        classpath = build_harness_line(PROFILE)
    except HarnessError as exc:
        real_part_missing(f"cannot build the harness with profile {PROFILE} (RocketMQ 5.5.0): {exc}")
    cluster = RealCluster(
        cluster_name="Gen55Cluster", broker_name="broker-55", classpath=classpath, namesrv_heap="128m",
        broker_heap="512m", broker_config={"enableLmq": "true", "enableMultiDispatch": "true"},
    )
    start_or_missing(cluster, "RocketMQ 5.5.0 cluster")
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def setup(rmq55_cluster: RealCluster) -> Iterator[Setup]:
    """Two real 5.5.0 push consumers of GROUP (tagA) have consumed TOPIC's 40 tagA messages and
    skipped its 8 tagB ones; IDLE_GROUP consumed 8 messages, stopped, and 12 more arrived; LITE_GROUP
    is bound to the lite topic LITE_TOPIC, which holds three messages of two lite topics."""
    cluster = rmq55_cluster
    clients = ScenarioClientsProcess(cluster, heap="256m")
    try:
        clients.start()
        cluster.create_topic(TOPIC, 4)
        a = clients.start_consumer("a", GROUP, {TOPIC: "tagA"}, instance_name="gen55_a", client_ip="127.0.0.1")
        b = clients.start_consumer("b", GROUP, {TOPIC: "tagA"}, instance_name="gen55_b", client_ip="127.0.0.1")
        wait_until(lambda: cluster.consumer_ids(GROUP) == sorted([a, b]), timeout=90, message="both registered")
        clients.wait_stable(lambda: clients.queue_ids(TOPIC), duration=3.0, timeout=90,
                            accept=lambda held: sorted(len(held.get(k, [])) for k in "ab") == [2, 2],
                            message="two queues each")
        clients.produce(TOPIC, "tagA", 40, queue_ids=[0, 1, 2, 3])
        clients.produce(TOPIC, "tagB", 8, queue_ids=[0, 1, 2, 3])
        wait_until(lambda: all(cluster.consumer_offset(GROUP, TOPIC, q) == 12 for q in range(4)),
                   timeout=120, message="every queue committed at 12")
        clients.wait_until(lambda: len(clients.received()["a"]) + len(clients.received()["b"]) == 40, timeout=60)

        idle_topic = TOPIC + "Idle"
        cluster.create_topic(idle_topic, 2)
        clients.start_consumer("i", IDLE_GROUP, {idle_topic: "*"}, instance_name="gen55_i", client_ip="127.0.0.1")
        clients.produce(idle_topic, "t", 8, queue_ids=[0, 1])
        wait_until(lambda: all(cluster.consumer_offset(IDLE_GROUP, idle_topic, q) == 4 for q in range(2)),
                   timeout=120, message="the idle group committed its 8 messages")
        clients.stop_consumer("i")
        wait_until(lambda: cluster.consumer_connection(IDLE_GROUP) is None, timeout=60, message="idle group offline")
        clients.produce(idle_topic, "t", 12, queue_ids=[0, 1])

        make_lite_topic_and_group(cluster)
    except (ScenarioError, HarnessError, OSError) as exc:
        clients.close(graceful=False)
        real_part_missing(f"the 5.5.0 clients did not work: {exc}", clients.stderr_tail() + cluster.log_tail())
    try:
        yield Setup(cluster, clients, (a, b))
    finally:
        clients.close()


def make_lite_topic_and_group(cluster: RealCluster) -> None:
    """LITE_TOPIC (``message.type=LITE``), LITE_GROUP bound to it, and messages of two lite topics,
    sent over remoting with the lite-topic property (what a 5.5 producer sets)."""
    cluster.mqadmin("updateTopic", "-c", cluster.cluster_name, "-t", LITE_TOPIC, "-r", "2", "-w", "2",
                    "-a", "+message.type=LITE", check=True)
    cluster.mqadmin("updateSubGroup", "-c", cluster.cluster_name, "-g", LITE_GROUP,
                    "--attributes", f"+lite.bind.topic={LITE_TOPIC}", check=True)
    wait_until(lambda: cluster.topic_route(LITE_TOPIC), timeout=60, message="lite topic routed")
    for n, lite in enumerate(LITE_NAMES):
        ext = {"producerGroup": "Gen55LiteProducer", "topic": LITE_TOPIC, "defaultTopic": "TBW102",
               "defaultTopicQueueNums": "4", "queueId": "0", "sysFlag": "0",
               "bornTimestamp": str(int(time.time() * 1000)), "flag": "0",
               "properties": f"__LITE_TOPIC\x01{lite}\x02TAGS\x01lite\x02", "reconsumeTimes": "0",
               "unitMode": "false", "batch": "false"}
        response = cluster.request_broker(10, ext, f"lite {n}".encode())
        if response.code != 0:
            raise HarnessError(f"sending a lite message failed: {response.code} {response.remark}")


def rmqctl(cluster: RealCluster, *args: str) -> subprocess.CompletedProcess[str]:
    """``rmqctl -n <namesrv> <args>`` in a process of its own (no NAMESRV_ADDR or context leaks in)."""
    env = {k: v for k, v in os.environ.items() if k not in ("NAMESRV_ADDR", "RMQCTL_TLS")}
    env["RMQCTL_CONFIG"] = "/nonexistent/rmqctl-config.toml"
    return subprocess.run([sys.executable, "-m", "rmqctl", "-n", cluster.namesrv_addr, *args],
                          capture_output=True, text=True, timeout=120, check=False, env=env)


def rmqctl_json(cluster: RealCluster, *args: str, exit_code: int = 0) -> Any:
    result = rmqctl(cluster, *args, "-o", "json")
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == exit_code, result.stderr
    return json.loads(result.stdout)


def table_rows(text: str, header_start: str) -> list[list[str]]:
    """Whitespace-split rows of mqadmin's table whose header line starts with ``header_start``."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header_start))
    rows = []
    for line in lines[start + 1:]:
        if not line.strip():
            break
        rows.append(line.split())
    return rows


def test_the_harness_runs_5_5_clients_against_a_5_5_broker(setup: Setup) -> None:
    assert setup.cluster.version == VERSION
    assert setup.clients.client_version == VERSION
    assert "rmq55" in setup.cluster.classpath and "/target/lib" not in setup.cluster.classpath


def test_cluster_list_matches_mqadmin(setup: Setup) -> None:
    out = setup.cluster.mqadmin("clusterList")
    theirs = {(c[0], c[1], int(c[2]), c[3], c[4]) for c in table_rows(out, "#Cluster Name")}
    ours = {(r["cluster"], r["broker"], r["broker_id"], r["addr"], r["version"])
            for r in rmqctl_json(setup.cluster, "cluster", "list")["brokers"]}
    assert ours == theirs == {("Gen55Cluster", "broker-55", 0, setup.cluster.broker_addr, VERSION)}


def test_topic_list_knows_the_5_5_system_topics(setup: Setup) -> None:
    doc = rmqctl_json(setup.cluster, "topic", "list")
    kinds = {t["topic"]: t["type"] for t in doc["topics"]}
    # each topic as the broker's topic config declares it: the LITE topic is lite, not normal
    assert kinds[TOPIC] == "normal" and kinds[LITE_TOPIC] == "lite"
    assert {t["type_source"] for t in doc["topics"] if t["topic"] in (TOPIC, LITE_TOPIC)} == {"broker"}
    # every 5.5 broker creates its RocksDB transaction store's topics: system ones, not users'
    listed = set(setup.cluster.mqadmin("topicList").split())
    assert "RMQ_SYS_ROCKSDB_TRANS_HALF_TOPIC" in listed
    assert kinds.get("RMQ_SYS_ROCKSDB_TRANS_HALF_TOPIC", "system") == "system"
    assert kinds.get("RMQ_SYS_ROCKSDB_TRANS_OP_HALF_TOPIC", "system") == "system"


def test_topic_route_and_status_match_mqadmin(setup: Setup) -> None:
    route = rmqctl_json(setup.cluster, "topic", "route", TOPIC)
    assert [(b["broker"], b["read_queues"], b["write_queues"], b["perm"]) for b in route["brokers"]] == [
        ("broker-55", 4, 4, 6)]
    out = setup.cluster.mqadmin("topicStatus", "-t", TOPIC)
    theirs = {(c[0], int(c[1])): (int(c[2]), int(c[3])) for c in table_rows(out, "#Broker Name")}
    ours = {(r["broker"], r["queue_id"]): (r["min_offset"], r["max_offset"])
            for r in rmqctl_json(setup.cluster, "topic", "status", TOPIC)["queues"]}
    assert ours == theirs == {("broker-55", q): (0, 12) for q in range(4)}


def test_group_list_shows_both_groups_with_mqadmins_diff(setup: Setup) -> None:
    groups = {g["group"]: g for g in rmqctl_json(setup.cluster, "group", "list")["groups"]}
    assert groups[GROUP]["clients"] == 2 and groups[GROUP]["version"] == VERSION
    assert groups[GROUP]["total_diff"] == 0
    idle = setup.cluster.mqadmin("consumerProgress", "-g", IDLE_GROUP)
    total = re.search(r"Diff Total:\s*(-?\d+)", idle)
    assert total and groups[IDLE_GROUP]["total_diff"] == int(total.group(1)) == 12
    assert groups[IDLE_GROUP]["clients"] == 0


def test_group_show_lists_the_5_5_clients_and_their_subscriptions(setup: Setup) -> None:
    doc = rmqctl_json(setup.cluster, "group", "show", GROUP)
    out = setup.cluster.mqadmin("consumerConnection", "-g", GROUP)
    theirs = {c[0]: (c[1], c[2], c[3]) for c in table_rows(out, "#ClientId")}
    ours = {c["client_id"]: (c["client_addr"], c["language"], c["version"]) for c in doc["connections"]}
    assert ours == theirs and set(ours) == set(setup.client_ids)
    assert {c["version"] for c in doc["connections"]} == {VERSION}
    own = {cid: [s["expression"] for s in subs if s["topic"] == TOPIC]
           for cid, subs in doc["client_subscriptions"].items()}
    assert own == {cid: ["tagA"] for cid in setup.client_ids}
    assert doc["subscription_conflicts"] == []
    assert "lite_topics" not in doc.get("unavailable", {})


def test_group_progress_matches_mqadmin_consumer_progress(setup: Setup) -> None:
    out = setup.cluster.mqadmin("consumerProgress", "-g", GROUP, "-s", "true")
    theirs = {}
    for cells in table_rows(out, "#Topic"):
        topic, broker, qid, b_off, c_off, _ip, diff, inflight, *_ = cells
        theirs[(topic, broker, int(qid))] = (int(b_off), int(c_off), int(diff), int(inflight))
    doc = rmqctl_json(setup.cluster, "group", "progress", GROUP)
    ours = {(r["topic"], r["broker"], r["queue_id"]):
            (r["broker_offset"], r["consumer_offset"], r["diff"], r["inflight"]) for r in doc["queues"]}
    assert ours == theirs
    caught_up = {(TOPIC, "broker-55", q): (12, 12, 0, 0) for q in range(4)}
    assert {k: v for k, v in ours.items() if k[0] == TOPIC} == caught_up


def test_group_assignment_is_what_the_real_consumers_hold(setup: Setup) -> None:
    doc = rmqctl_json(setup.cluster, "group", "assignment", GROUP)
    held = {cid: sorted(q["queue_id"] for q in queues if q["topic"] == TOPIC)
            for cid, queues in doc["assignments"].items()}
    key = dict(zip("ab", setup.client_ids, strict=True))
    theirs = setup.clients.queue_ids(TOPIC)
    assert held == {key[k]: sorted(v) for k, v in theirs.items()}
    assert doc["unassigned_queues"] == [] and doc["held_twice"] == [] and doc["idle_clients"] == []


def test_doctor_finds_nothing_on_the_healthy_group_and_the_idle_groups_backlog(setup: Setup) -> None:
    healthy = rmqctl_json(setup.cluster, "doctor", GROUP)
    assert healthy["findings"] == []
    idle = rmqctl_json(setup.cluster, "doctor", IDLE_GROUP, "--fail-on", "warning", exit_code=1)
    (finding,) = idle["findings"]
    assert (finding["code"], finding["group"], finding["severity"]) == ("OFFLINE_GROUP_BACKLOG", IDLE_GROUP, "warning")


def test_snapshot_export_records_the_5_5_groups(setup: Setup, tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    doc = rmqctl_json(setup.cluster, "snapshot", "export", GROUP, IDLE_GROUP, "--count", "1", "--every", "1s",
                      "--out", str(tmp_path))
    assert doc["rounds"] == 1 and doc["errors"] == {} and doc["failed_reads"] == 0
    rows = [r for f in doc["files"] for r in pq.read_table(f).to_pylist()]
    offsets = {(r["group"], r["topic"], r["queue_id"]): (r["broker_offset"], r["consumer_offset"]) for r in rows}
    assert {k: v for k, v in offsets.items() if k[1] == TOPIC} == {(GROUP, TOPIC, q): (12, 12) for q in range(4)}
    assert {k: v for k, v in offsets.items() if k[1] == TOPIC + "Idle"} == {
        (IDLE_GROUP, TOPIC + "Idle", q): (10, 4) for q in range(2)}


def test_a_lite_group_is_reported_as_not_read_never_as_caught_up(setup: Setup) -> None:
    cluster = setup.cluster
    # the broker keeps the lite topics apart: mqadmin of 5.5 names the bound group and counts them
    parent = cluster.mqadmin("getParentTopicInfo", "-p", LITE_TOPIC)
    assert LITE_GROUP in parent, parent
    info = raw_request(cluster.broker_addr, 200074)  # GET_BROKER_LITE_INFO
    assert info.code == 0 and json.loads(info.text)["groupMeta"] == {LITE_TOPIC: [LITE_GROUP]}, info.text
    topic_info = raw_request(cluster.broker_addr, 200075, {"topic": LITE_TOPIC})  # GET_PARENT_TOPIC_INFO
    assert topic_info.code == 0, topic_info.remark
    assert json.loads(topic_info.text)["liteTopicCount"] == len(set(LITE_NAMES)), topic_info.text

    for command in (("group", "show"), ("group", "progress"), ("group", "assignment")):
        doc = rmqctl_json(cluster, *command, LITE_GROUP)
        why = doc["unavailable"]["lite_topics"]
        assert LITE_TOPIC in why and "lite" in why, command
    progress = rmqctl_json(cluster, "group", "progress", LITE_GROUP)
    assert progress["queues"] == []
    table = rmqctl(cluster, "group", "progress", LITE_GROUP)
    assert table.returncode == 0 and "Total diff: unknown (lite topics unavailable)" in table.stdout
    assert "lite_topics: unavailable" in table.stdout

    listed = rmqctl_json(cluster, "group", "list")
    (row,) = [g for g in listed["groups"] if g["group"] == LITE_GROUP]
    assert row["total_diff"] is None and f"{LITE_GROUP} to {LITE_TOPIC}" in listed["unavailable"]["lite_topics"]

    doctor = rmqctl_json(cluster, "doctor", LITE_GROUP)
    assert doctor["findings"] == []
    skipped = {s["code"]: s["reason"] for s in doctor["skipped"] if s["group"] == LITE_GROUP}
    assert {"OFFLINE_GROUP_BACKLOG", "LAG_NOT_ADVANCING", "ORPHANED_QUEUES"} <= set(skipped)
    assert LITE_TOPIC in skipped["OFFLINE_GROUP_BACKLOG"]

    everything = rmqctl(cluster, "doctor", "--all", "-o", "json")
    assert "Traceback" not in everything.stderr and everything.returncode in (0, 1), everything.stderr
    assert LITE_GROUP in json.loads(everything.stdout)["groups"]


def test_msg_show_reads_5_5_messages_as_mqadmin_does_and_names_the_lite_topic(setup: Setup) -> None:
    cluster = setup.cluster
    (msg,) = rmqctl_json(cluster, "msg", "show", TOPIC, "--queue", "broker-55/1", "--offset", "0")["messages"]
    out = cluster.mqadmin("queryMsgById", "-i", msg["offset_msg_id"], "-t", TOPIC)  # 5.5 needs the topic
    theirs = dict(re.findall(r"^(Topic|Tags|Queue ID|Queue Offset|CommitLog Offset|Reconsume Times):\s*(.*?)\s*$",
                             out, re.M))
    assert theirs == {"Topic": TOPIC, "Tags": f"[{msg['tags']}]", "Queue ID": "1", "Queue Offset": "0",
                      "CommitLog Offset": str(msg["physical_offset"]), "Reconsume Times": "0"}, out
    assert (msg["topic"], msg["queue_id"], msg["queue_offset"], msg["tags"]) == (TOPIC, 1, 0, "tagA")
    # a lite message is stored in its parent topic's queue and carries the lite topic it names
    (lite,) = rmqctl_json(cluster, "msg", "show", LITE_TOPIC, "--queue", "broker-55/0", "--offset", "0")["messages"]
    assert lite["topic"] == LITE_TOPIC and lite["properties"]["__LITE_TOPIC"] == LITE_NAMES[0]
