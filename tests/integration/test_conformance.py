"""Conformance with the real thing: rmqctl's numbers equal what the real mqadmin prints.

One real name server + broker (the session ``real_cluster``), one consumer group in the
tag-overwrite setup with real Java push consumers, settled (every message consumed or skipped and
committed) before anything is compared, so both tools see the same state. mqadmin is the real
``org.apache.rocketmq.tools.command.MQAdminStartup`` from Maven Central.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from typer.testing import CliRunner

from rmqctl.cli.app import app
from rmqctl.model import format_millis
from rmqctl.remoting import fastjson
from tests.harness.realcluster import RealCluster, ScenarioClientsProcess, run_tag_overwrite

pytestmark = [pytest.mark.real_cluster, pytest.mark.timeout(400)]


@dataclass
class Setup:
    cluster: RealCluster
    clients: ScenarioClientsProcess
    topic: str
    group: str
    client_a: str
    client_b: str


@pytest.fixture(scope="module")
def setup(real_cluster: RealCluster) -> Iterator[Setup]:
    with ScenarioClientsProcess(real_cluster) as clients:
        topic, group, a, b = run_tag_overwrite(real_cluster, clients, "Conf")
        yield Setup(real_cluster, clients, topic, group, a, b)


def rmqctl_json(s: Setup, *args: str) -> Any:
    result = CliRunner().invoke(app, [*args, "-n", s.cluster.namesrv_addr, "-o", "json"])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def table_rows(text: str, header_start: str) -> list[list[str]]:
    """Whitespace-split rows of the table whose header line starts with ``header_start``."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header_start))
    rows = []
    for line in lines[start + 1:]:
        if not line.strip():
            break
        rows.append(line.split())
    return rows


def test_consumer_progress_matches(setup: Setup) -> None:
    out = setup.cluster.mqadmin("consumerProgress", "-g", setup.group, "-s", "true")
    # 4.9 brokers have no #Inflight column (pullOffset arrived in 5.1)
    with_inflight = "#Inflight" in next(line for line in out.splitlines() if line.startswith("#Topic"))
    theirs = {}
    for cells in table_rows(out, "#Topic"):
        topic, broker, qid, b_off, c_off, ip, diff, *rest = cells
        inflight = int(rest.pop(0)) if with_inflight else None
        theirs[(topic, broker, int(qid))] = (int(b_off), int(c_off), ip, int(diff), inflight, " ".join(rest))
    ours = {}
    for row in rmqctl_json(setup, "group", "progress", setup.group)["queues"]:
        ip = row["owner"].split("@")[0] if row["owner"] else "N/A"
        ours[(row["topic"], row["broker"], row["queue_id"])] = (
            row["broker_offset"], row["consumer_offset"], ip, row["diff"],
            row["inflight"] if with_inflight else None, format_millis(row["last_consumed_ts"]))
    assert theirs and ours == theirs
    # "Consume Diff Total: N" (5.x) or "Diff Total: N" (4.9)
    total = re.search(r"Diff Total:\s*(-?\d+)", out)
    assert total and sum(v[3] for v in theirs.values()) == int(total.group(1))


def test_consumer_connection_matches_and_per_client_subscriptions_show_what_it_hides(setup: Setup) -> None:
    out = setup.cluster.mqadmin("consumerConnection", "-g", setup.group)
    # a Java client connected to a broker: remoting SDK, listed by the broker, not a proxy
    conns = {c[0]: {"client_id": c[0], "client_addr": c[1], "language": c[2], "version": c[3],
                    "sdk": "remoting", "proxy": None}
             for c in table_rows(out, "#ClientId")}
    subs = {c[0]: " ".join(c[1:]) for c in table_rows(out, "#Topic")}
    props = dict(line.split(": ", 1) for line in out.splitlines()
                 if line.startswith(("ConsumeType:", "MessageModel:", "ConsumeFromWhere:")))
    doc = rmqctl_json(setup, "group", "show", setup.group)
    # each connection also carries the strategy and consume rates the client reports (mqadmin
    # does not show them)
    extra = {"strategy", "consume_ok_tps", "consume_failed_tps", "consume_failed_msgs"}
    assert {c["client_id"]: {k: v for k, v in c.items() if k not in extra} for c in doc["connections"]} == conns
    assert {c["strategy"] for c in doc["connections"]} == {"AVG"}
    (broker_subs,) = doc["broker_subscriptions"].values()
    assert {s["topic"]: s["expression"] for s in broker_subs} == subs
    # rmqctl says PUSH/PULL/POP where mqadmin prints the enum names
    kind = {"CONSUME_PASSIVELY": "PUSH", "CONSUME_ACTIVELY": "PULL", "CONSUME_POP": "POP"}
    assert (doc["consume_type"], doc["message_model"], doc["consume_from_where"]) == (
        kind[props["ConsumeType"]], props["MessageModel"], props["ConsumeFromWhere"])
    # mqadmin shows ONE expression for the topic; each client's own tells the real story
    assert subs[setup.topic] in ("tagA", "tagB")
    own = {cid: [s["expression"] for s in subs_ if s["topic"] == setup.topic]
           for cid, subs_ in doc["client_subscriptions"].items()}
    assert own == {setup.client_a: ["tagA"], setup.client_b: ["tagB"]}
    assert any(c["code"] == "SUBSCRIPTION_TAG_CONFLICT" for c in doc["subscription_conflicts"])


def test_topic_route_matches(setup: Setup) -> None:
    out = setup.cluster.mqadmin("topicRoute", "-t", setup.topic)
    route = fastjson.loads(out[out.index("{"):out.rindex("}") + 1])
    theirs = sorted(
        (q["brokerName"], q["readQueueNums"], q["writeQueueNums"], q["perm"]) for q in route["queueDatas"])
    addrs = {b["brokerName"]: {str(k): v for k, v in b["brokerAddrs"].items()} for b in route["brokerDatas"]}
    doc = rmqctl_json(setup, "topic", "route", setup.topic)
    assert sorted((b["broker"], b["read_queues"], b["write_queues"], b["perm"]) for b in doc["brokers"]) == theirs
    assert {b["broker"]: b["addrs"] for b in doc["brokers"]} == addrs


def test_topic_status_matches(setup: Setup) -> None:
    out = setup.cluster.mqadmin("topicStatus", "-t", setup.topic)
    theirs = {(c[0], int(c[1])): (int(c[2]), int(c[3]), " ".join(c[4:])) for c in table_rows(out, "#Broker Name")}

    def stamp(ms: int | None) -> str:
        if not ms:
            return ""
        return dt.datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]

    ours = {(r["broker"], r["queue_id"]): (r["min_offset"], r["max_offset"], stamp(r["last_updated_ts"]))
            for r in rmqctl_json(setup, "topic", "status", setup.topic)["queues"]}
    assert theirs and ours == theirs


def test_cluster_list_matches(setup: Setup) -> None:
    out = setup.cluster.mqadmin("clusterList")
    theirs = {(c[0], c[1], int(c[2]), c[3], c[4]) for c in table_rows(out, "#Cluster Name")}
    ours = {(r["cluster"], r["broker"], r["broker_id"], r["addr"], r["version"])
            for r in rmqctl_json(setup, "cluster", "list")["brokers"]}
    assert theirs and ours == theirs
