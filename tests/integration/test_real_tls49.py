"""TLS against a real RocketMQ 4.9.7 name server and broker that enforce it.

A cluster of its own (module scope, small heaps) on the harness built with the ``rmq49`` profile
into ``tests/harness/target/rmq49`` (:func:`build_harness_line`), beside the session's 5.3.3
build. 4.9.7 reads the same ``tls.*`` system properties as 5.3.3 (``TlsSystemConfig``): both
servers run with ``tls.server.mode=enforcing`` and a certificate signed by a CA this module
makes, the broker speaks TLS to the name server (``tls.enable``), and so do the real 4.9.7 push
consumer and producer behind the group. Every read command works with ``--tls``; without it, one
``rmqctl: error:`` line says the server requires TLS (exit 3).

When the 4.9.7 jars cannot be fetched the module is skipped with the reason, or fails under
``RMQCTL_REQUIRE_REAL_CLUSTER=1``.
"""

from __future__ import annotations

import json
import ssl
from collections.abc import Iterator
from typing import Any

import pytest

from tests.harness.plugin import real_part_missing, start_or_missing
from tests.harness.realcluster import (
    HarnessError,
    RealCluster,
    ScenarioClientsProcess,
    ScenarioError,
    build_harness_line,
    wait_until,
)
from tests.integration.test_real_tls import client_tls_args, rmqctl, server_tls_args
from tests.tlsfiles import TlsFiles, make_tls_files

pytestmark = [pytest.mark.real_cluster, pytest.mark.slow, pytest.mark.timeout(500)]

PROFILE, VERSION = "rmq49", "V4_9_7"
TOPIC, GROUP, MESSAGES = "Tls49Topic", "Tls49Group", 8
READ_COMMANDS = [["cluster", "list"], ["topic", "list"], ["topic", "route", TOPIC], ["topic", "status", TOPIC],
                 ["group", "list"], ["group", "show", GROUP], ["group", "progress", GROUP],
                 ["group", "assignment", GROUP], ["doctor", GROUP], ["doctor", "--all"],
                 ["msg", "show", TOPIC, "--queue", "broker-tls49/0", "--offset", "0"]]


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    return make_tls_files(tmp_path_factory.mktemp("real-tls49"))


@pytest.fixture(scope="module")
def tls49_cluster(certs: TlsFiles) -> Iterator[RealCluster]:
    try:
        classpath = build_harness_line(PROFILE)
    except HarnessError as exc:
        real_part_missing(f"cannot build the harness with profile {PROFILE} (RocketMQ 4.9.7): {exc}")
    no_file = certs.ca.parent / "no-tls.properties"
    harness_tls = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    harness_tls.check_hostname = False
    harness_tls.load_verify_locations(certs.ca)
    cluster = RealCluster(
        cluster_name="Tls49Cluster", broker_name="broker-tls49", classpath=classpath, namesrv_heap="128m",
        broker_heap="384m", namesrv_jvm_args=server_tls_args(certs, no_file),
        broker_jvm_args=[*server_tls_args(certs, no_file), *client_tls_args(certs, no_file)[:1]],
        tls_context=harness_tls,
    )
    start_or_missing(cluster, "RocketMQ 4.9.7 TLS cluster")
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def consumed(tls49_cluster: RealCluster, certs: TlsFiles) -> Iterator[ScenarioClientsProcess]:
    """A real 4.9.7 push consumer of GROUP and a producer, both over TLS; MESSAGES consumed."""
    no_file = certs.ca.parent / "no-tls.properties"
    clients = ScenarioClientsProcess(tls49_cluster, heap="256m", jvm_args=client_tls_args(certs, no_file))
    try:
        clients.start()
        # UPDATE_AND_CREATE_TOPIC over TLS (mqadmin here speaks no TLS)
        created = tls49_cluster.request_broker(17, {
            "topic": TOPIC, "defaultTopic": "TBW102", "readQueueNums": 2, "writeQueueNums": 2, "perm": 6,
            "topicFilterType": "SINGLE_TAG", "topicSysFlag": 0, "order": "false"})
        assert created.code == 0, created.remark
        wait_until(lambda: tls49_cluster.topic_route(TOPIC), timeout=60, message="the topic routed")
        clients.produce(TOPIC, tag="tagA", count=MESSAGES, queue_ids=[0, 1])
        clients.start_consumer("c1", group=GROUP, subscriptions={TOPIC: "*"}, client_ip="127.0.0.1")
        clients.wait_until(lambda: len(clients.received().get("c1", [])) >= MESSAGES, timeout=180)
    except (ScenarioError, HarnessError, OSError) as exc:
        clients.close(graceful=False)
        real_part_missing(f"4.9.7 Java clients over TLS did not work: {exc}",
                          clients.stderr_tail() + tls49_cluster.log_tail())
    try:
        yield clients
    finally:
        clients.close()


def test_the_cluster_is_4_9_7_enforcing_tls(tls49_cluster: RealCluster, consumed: ScenarioClientsProcess) -> None:
    assert tls49_cluster.version == VERSION and consumed.client_version == VERSION


@pytest.mark.parametrize("command", READ_COMMANDS, ids=" ".join)
def test_every_read_command_works_with_tls(command: list[str], tls49_cluster: RealCluster,
                                           consumed: ScenarioClientsProcess) -> None:
    result = rmqctl("--tls", "-n", tls49_cluster.namesrv_addr, *command, "-o", "json")
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode in (0, 1), result.stderr
    text = json.dumps(json.loads(result.stdout))
    if command[0] in ("topic", "msg"):
        assert TOPIC in text
    if command[0] in ("group", "doctor"):
        assert GROUP in text
    if command[0] == "cluster":
        assert tls49_cluster.broker_addr in text and VERSION in text


def test_the_group_read_over_tls_has_its_client_and_its_offsets(tls49_cluster: RealCluster,
                                                                consumed: ScenarioClientsProcess) -> None:
    def committed() -> dict[str, Any] | None:
        result = rmqctl("--tls", "-n", tls49_cluster.namesrv_addr, "group", "progress", GROUP, "-o", "json")
        doc: dict[str, Any] = json.loads(result.stdout)
        done = sum(int(q.get("consumer_offset") or 0) for q in doc.get("queues") or [])
        return doc if done == MESSAGES else None

    doc = wait_until(committed, timeout=60, interval=1.0, message=f"{MESSAGES} messages committed, read over TLS")
    written = {(q["queue_id"], q["broker_offset"], q["consumer_offset"]) for q in doc["queues"] if q["broker_offset"]}
    assert written == {(0, MESSAGES // 2, MESSAGES // 2), (1, MESSAGES // 2, MESSAGES // 2)}
    show = json.loads(rmqctl("--tls", "-n", tls49_cluster.namesrv_addr, "group", "show", GROUP, "-o", "json").stdout)
    assert [(c["client_id"].split("@")[0], c["version"]) for c in show["connections"]] == [("127.0.0.1", VERSION)]


@pytest.mark.parametrize("command", [["cluster", "list"], ["group", "show", GROUP]], ids=" ".join)
def test_without_tls_one_line_says_the_server_requires_it(command: list[str], tls49_cluster: RealCluster) -> None:
    result = rmqctl("-n", tls49_cluster.namesrv_addr, *command)
    assert result.returncode == 3 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert lines[0].startswith("rmqctl: error: ") and "requires TLS" in lines[0], result.stderr
    assert len(lines) == 2 and "--tls" in lines[1] and "Traceback" not in result.stderr


def test_what_a_4_9_7_broker_does_not_serve_is_unavailable_not_a_failure(tls49_cluster: RealCluster,
                                                                          consumed: ScenarioClientsProcess) -> None:
    # 4.9.7 answers QUERY_TOPICS_BY_CONSUMER (343) "not supported": no partial result (exit 0),
    # the left-behind topics are named unavailable and the check that needs them is skipped
    show = rmqctl("--tls", "-n", tls49_cluster.namesrv_addr, "group", "show", GROUP, "-o", "json")
    assert show.returncode == 0, show.stderr
    doc = json.loads(show.stdout)
    assert doc["errors"] == {} and "QUERY_TOPICS_BY_CONSUMER" in doc["unavailable"]["offset_topics"]
    doctor = rmqctl("--tls", "-n", tls49_cluster.namesrv_addr, "doctor", GROUP, "-o", "json")
    assert doctor.returncode == 0, doctor.stderr
    skipped = {s["code"] for s in json.loads(doctor.stdout)["skipped"] if s["group"] == GROUP}
    assert "ABANDONED_TOPIC_BACKLOG" in skipped
