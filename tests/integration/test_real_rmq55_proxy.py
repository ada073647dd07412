"""A RocketMQ 5.5.0 rocketmq-proxy (cluster mode) and real gRPC consumers behind it.

A cluster of its own (module scope, small heaps): a 5.5.0 name server and broker from the harness
built with the ``rmq55`` profile (:func:`build_harness_line`), a 5.5.0 proxy copied into
``tests/harness/proxy/target/5.5.0`` (:func:`build_proxy_line`), and rocketmq-client-java 5.0.8
(the newest 5.0.x that resolves) push and simple consumers, each of its own group, that acked
every message sent. rmqctl reads them through the proxy: online with their gRPC client, POP
groups with no owner findings, progress, assignment and a doctor with nothing to say, round after
round; and the proxy is found without being named, from the brokers' heartbeat-sync topic.

When the 5.5.0 jars cannot be fetched the module is skipped with the reason, or fails under
``RMQCTL_REQUIRE_REAL_CLUSTER=1``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.harness.plugin import real_part_missing, start_or_missing
from tests.harness.proxycluster import GrpcClientsProcess, RealProxy, build_proxy_line, create_normal_topic
from tests.harness.realcluster import (
    ClusterStartError,
    HarnessError,
    RealCluster,
    ScenarioError,
    build_harness_line,
    wait_until,
)

pytestmark = [pytest.mark.real_cluster, pytest.mark.slow, pytest.mark.timeout(600)]

PROFILE, RELEASE, VERSION = "rmq55", "5.5.0", "V5_5_0"
TOPIC, PUSH_GROUP, SIMPLE_GROUP = "Proxy55Topic", "GPush55", "GSimple55"
MESSAGES = 10


@dataclass
class Setup:
    cluster: RealCluster
    proxy: RealProxy
    clients: GrpcClientsProcess
    push_id: str
    simple_id: str


def make_topic(cluster: RealCluster) -> None:
    """TOPIC for gRPC clients; mqadmin asked again once when it timed out on a loaded machine."""
    try:
        create_normal_topic(cluster, TOPIC, 2)
    except HarnessError:
        create_normal_topic(cluster, TOPIC, 2)


@pytest.fixture(scope="module")
def setup() -> Iterator[Setup]:
    try:
        classpath = build_harness_line(PROFILE)
        proxy_classpath = build_proxy_line(RELEASE)
    except HarnessError as exc:
        real_part_missing(f"cannot build the RocketMQ {RELEASE} harness or proxy: {exc}")
    cluster = RealCluster(cluster_name="Proxy55Cluster", broker_name="broker-p55", classpath=classpath,
                          namesrv_heap="128m", broker_heap="512m")
    start_or_missing(cluster, f"RocketMQ {RELEASE} cluster", make_topic)
    proxy = RealProxy(cluster, name="proxy55", classpath=proxy_classpath)
    clients = GrpcClientsProcess("unset")
    try:
        try:
            proxy.start()
        except (ClusterStartError, HarnessError) as exc:
            real_part_missing(f"the {RELEASE} proxy did not start: {exc}", getattr(exc, "log_tail", ""))
        clients = GrpcClientsProcess(proxy.grpc_endpoint)
        try:
            clients.start()
            push_id = clients.start_push("push", PUSH_GROUP, {TOPIC: "*"})
            simple_id = clients.start_simple("simple", SIMPLE_GROUP, {TOPIC: "*"}, invisible_s=10)
            base = clients.warm_up(TOPIC)
            clients.send(TOPIC, "ok", MESSAGES)
            clients.wait_until(lambda: all(int(c["acked"]) >= base[k]["acked"] + MESSAGES
                                           for k, c in clients.counts().items()),
                               timeout=120, interval=1.0, message=lambda: f"both acked: {clients.counts()}")
        except (ScenarioError, HarnessError, OSError) as exc:
            real_part_missing(f"gRPC clients through the {RELEASE} proxy did not work: {exc}",
                              clients.stderr_tail() + proxy.log_tail())
        yield Setup(cluster, proxy, clients, push_id, simple_id)
    finally:
        clients.close(graceful=False)
        proxy.stop()
        cluster.stop()


def rmqctl(setup: Setup, *args: str, named: bool = True) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NAMESRV_ADDR", "RMQCTL_TLS")}
    env["RMQCTL_CONFIG"] = "/nonexistent/rmqctl-config.toml"
    proxy = ["--proxy", setup.proxy.remoting_addr] if named else []
    return subprocess.run([sys.executable, "-m", "rmqctl", "-n", setup.cluster.namesrv_addr, *proxy, *args],
                          capture_output=True, text=True, timeout=120, check=False, env=env)


def rmqctl_json(setup: Setup, *args: str, named: bool = True) -> Any:
    result = rmqctl(setup, *args, "-o", "json", named=named)
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_the_broker_and_the_proxy_are_5_5_0(setup: Setup) -> None:
    assert setup.cluster.version == VERSION
    assert f"rocketmq-proxy-{RELEASE}.jar" in os.listdir(setup.proxy.classpath.rstrip("*").rstrip(os.sep))
    (broker,) = rmqctl_json(setup, "cluster", "list")["brokers"]
    assert broker["version"] == VERSION


def test_group_list_shows_both_pop_groups_online_through_the_proxy(setup: Setup) -> None:
    rows = {g["group"]: g for g in rmqctl_json(setup, "group", "list")["groups"]}
    for group in (PUSH_GROUP, SIMPLE_GROUP):
        assert rows[group]["online"] is True and rows[group]["clients"] == 1, rows[group]


def test_group_show_lists_the_grpc_client_and_the_proxy(setup: Setup) -> None:
    # the proxy lists a push consumer as CONSUME_PASSIVELY (PUSH), a simple one as CONSUME_ACTIVELY (PULL)
    for group, client, consume_type in ((PUSH_GROUP, setup.push_id, "PUSH"),
                                        (SIMPLE_GROUP, setup.simple_id, "PULL")):
        doc = rmqctl_json(setup, "group", "show", group)
        assert doc["online"] is True and doc["consume_type"] == consume_type, doc
        assert [(c["client_id"], c["sdk"], c["proxy"], c["version"]) for c in doc["connections"]] == [
            (client, "grpc", setup.proxy.remoting_addr, None)]
        proxies = {p["address"]: p for p in doc["proxies"]}
        assert proxies[setup.proxy.remoting_addr]["error"] is None


def test_group_progress_of_a_pop_group_is_caught_up_with_inflight_unknown(setup: Setup) -> None:
    def caught_up() -> Any:
        doc = rmqctl_json(setup, "group", "progress", PUSH_GROUP)
        rows = [q for q in doc["queues"] if q["topic"] == TOPIC]
        return doc if rows and all(q["diff"] == 0 for q in rows) else None

    # POP moves the consumer offset when it pops, lazily: wait for the commits to land
    doc = wait_until(caught_up, timeout=60, interval=2.0, message="the push group's offsets caught up")
    assert all(q["inflight"] is None for q in doc["queues"])  # POP commits no pull offset: unknown
    assert doc["total_diff"] == 0


def test_group_assignment_says_pop_and_holds_no_queue_by_nobody(setup: Setup) -> None:
    doc = rmqctl_json(setup, "group", "assignment", SIMPLE_GROUP)
    assert doc["pop_owner"] == "POP (1 client)"
    assert doc["unassigned_queues"] == [] and doc["idle_clients"] == []


def test_doctor_has_nothing_to_say_about_the_healthy_pop_groups_round_after_round(setup: Setup) -> None:
    for _ in range(3):
        setup.clients.send(TOPIC, "ok", 4)
        doc = rmqctl_json(setup, "doctor", PUSH_GROUP, SIMPLE_GROUP)
        assert doc["findings"] == [], doc["findings"]
        skipped = {s["code"] for s in doc["skipped"] if s["group"] == PUSH_GROUP}
        assert "ORPHANED_QUEUES" in skipped  # an ownership check: does not apply to POP


def test_the_5_5_proxy_is_found_without_being_named(setup: Setup) -> None:
    def found() -> Any:
        doc = rmqctl_json(setup, "group", "show", SIMPLE_GROUP, named=False)
        return doc if doc["online"] else None

    doc = wait_until(found, timeout=90, interval=3.0, message="the proxy found from the heartbeat-sync topic")
    assert [(p["address"], p["found_by"]) for p in doc["proxies"] if p["error"] is None] == [
        (setup.proxy.remoting_addr, "announced")]
    assert [c["client_id"] for c in doc["connections"]] == [setup.simple_id]
