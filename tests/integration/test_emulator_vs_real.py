"""The real mqadmin prints the same tables for the emulator as for a real broker.

The same tag-overwrite scenario runs twice: on the real broker with real Java push consumers, and
on the emulator (served over the real protocol). Then the real mqadmin reads both, and its
consumerProgress, consumerConnection and topicRoute output must agree once addresses and
timestamps are masked. rmqctl reads both through the same code, so its JSON must agree too.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rmqctl.cli.app import app
from rmqctl.remoting import fastjson
from tests.harness.realcluster import RealCluster, ScenarioClientsProcess, run_tag_overwrite, wait_until

pytestmark = [pytest.mark.real_cluster, pytest.mark.timeout(600)]

ADDR = re.compile(r"\d+\.\d+\.\d+\.\d+:\d+")
TIME = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}")


def normalized(text: str) -> list[str]:
    """Table lines only: logging and TPS (a rate over wall time) dropped, addresses and times masked.

    The client rows of consumerConnection come from a Java HashSet whose order depends on the
    client addresses, so each block of consecutive client rows is sorted.
    """
    out: list[str] = []
    block: list[str] = []
    for line in text.splitlines():
        if "|-" in line or line.startswith("Consume TPS") or not line.strip():
            continue
        line = TIME.sub("<time>", ADDR.sub("<addr>", line)).rstrip()
        if "@" in line.split(maxsplit=1)[0]:  # a row that starts with a client id
            block.append(line)
            continue
        out.extend(sorted(block))
        block = []
        out.append(line)
    return out + sorted(block)


def run_real(cluster: RealCluster, sc: ScenarioClientsProcess,
             names: Callable[[str], str]) -> tuple[str, str, str, str]:
    """Tag overwrite on the real broker; returns (topic, group, instance A, instance B) once B won."""
    for _ in range(3):
        handles = (names("evr_a"), names("evr_b"))
        topic, group, a, b = run_tag_overwrite(cluster, sc, "Evr", handles)
        wait_until(lambda group=group, topic=topic: (cluster.consumer_connection(group) or {})
                   .get("subscriptionTable", {}).get(topic, {}).get("subString") in ("tagA", "tagB"),
                   timeout=30, message="stored sub")
        stored = cluster.consumer_connection(group)["subscriptionTable"][topic]["subString"]  # type: ignore[index]
        if stored == "tagB":  # the later subscriber won the subVersion race, as it usually does
            return topic, group, a.split("@", 1)[1], b.split("@", 1)[1]
        for handle in handles:
            sc.stop_consumer(handle)
    pytest.fail("the earlier subscriber won the subVersion race three times in a row")


def scenario_toml(cluster: RealCluster, topic: str, group: str, inst_a: str, inst_b: str) -> str:
    produce = "".join(
        f'[[produce]]\nat = {at}\ntopic = "{topic}"\ntag = "{tag}"\nqueue = {q}\n'
        for at, tag in ((5.0, "tagA"), (6.0, "tagB")) for q in range(4))
    consumers = "".join(
        f'[[consumers]]\ngroup = "{group}"\nclient_id = "127.0.0.1@{inst}"\nsubscriptions = {{ {topic} = "{expr}" }}\n'
        f'consume_from_where = "CONSUME_FROM_FIRST_OFFSET"\nstart = {start}\n'
        for inst, expr, start in ((inst_a, "tagA", 0.0), (inst_b, "tagB", 1.0)))
    return (f'name = "evr"\nduration = 60\n[[brokers]]\nname = "{cluster.broker_name}"\n'
            f'cluster = "{cluster.cluster_name}"\n[[topics]]\nname = "{topic}"\nqueues = 4\n'
            + consumers + produce)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Callable[[Path], str]]:
    procs: list[subprocess.Popen[str]] = []

    def serve(scenario: Path) -> str:
        proc = subprocess.Popen(
            [sys.executable, "-m", "rmqctl.cli.app", "emulator", "serve", "--scenario", str(scenario),
             "--clock", "virtual", "--at", "60"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        procs.append(proc)
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("namesrv "), (line, proc.stderr.read() if proc.poll() is not None else "")
        return line.split()[1]

    yield serve
    for proc in procs:
        proc.terminate()
        proc.communicate(timeout=10)  # reaps the process and closes its pipes


def test_mqadmin_sees_the_same_incident_on_both(real_cluster: RealCluster, scenario_clients: ScenarioClientsProcess,
                                                rmq_names: Callable[[str], str], served, tmp_path: Path) -> None:
    topic, group, inst_a, inst_b = run_real(real_cluster, scenario_clients, rmq_names)
    scenario = tmp_path / "evr.toml"
    scenario.write_text(scenario_toml(real_cluster, topic, group, inst_a, inst_b))
    emulator = served(scenario)

    def mqadmin(namesrv: str, *args: str) -> str:
        proc = real_cluster.mqadmin_run(*args, "-n", namesrv, namesrv=False)
        assert "Exception" not in proc.stderr, proc.stderr[-2000:]
        return proc.stdout

    for command in (("consumerProgress", "-g", group, "-s", "true"), ("consumerConnection", "-g", group)):
        real = normalized(mqadmin(real_cluster.namesrv_addr, *command))
        emulated = normalized(mqadmin(emulator, *command))
        assert any(topic in line for line in real)
        if command[0] == "consumerConnection":
            # mqadmin prints the subscription table from its own hash map: two topics sharing a
            # bucket keep the order the server sent them in, which the broker takes from the
            # client's HashSet; compare the rows, not that order
            assert sorted(emulated) == sorted(real), command[0]
        else:
            assert emulated == real, command[0]

    routes = []
    for namesrv in (real_cluster.namesrv_addr, emulator):
        out = mqadmin(namesrv, "topicRoute", "-t", topic)
        route = fastjson.loads(ADDR.sub("<addr>", out[out.index("{"):out.rindex("}") + 1]))
        routes.append(route)
    assert routes[0]["queueDatas"] == routes[1]["queueDatas"]
    assert [{k: v for k, v in b.items()} for b in routes[0]["brokerDatas"]] == routes[1]["brokerDatas"]

    # rmqctl reads both through the same client path and sees the same per-client story
    def show(namesrv: str) -> dict[str, object]:
        result = CliRunner().invoke(app, ["group", "show", group, "-n", namesrv, "-o", "json"])
        assert result.exit_code == 0, result.stderr
        doc = json.loads(result.stdout)
        return {"broker": doc["broker_subscriptions"], "clients": doc["client_subscriptions"],
                "conflicts": [c["code"] for c in doc["subscription_conflicts"]]}

    real_doc, emulated_doc = show(real_cluster.namesrv_addr), show(emulator)

    def strip_versions(doc: dict[str, object]) -> str:
        return re.sub(r'"sub_version": \d+', '"sub_version": 0', json.dumps(doc, sort_keys=True))

    assert strip_versions(real_doc) == strip_versions(emulated_doc)
