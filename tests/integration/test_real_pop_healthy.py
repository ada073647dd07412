"""Healthy POP groups on a real 5.x broker + proxy draw no finding, run after run.

Each run makes a fresh topic, a gRPC push group and a gRPC simple group (rocketmq-client-java through
the session's proxy), lets them consume, and then reads them the way an operator would while messages
keep flowing: ``doctor`` on one sample and with ``--interval 30`` (two samples past POP's commit grace),
``group assignment`` and ``group progress``, and the verdicts of the TUI (queue statuses and findings of
its dashboard) and of the exporter (its stuck-queue judge) over three rounds 15 s apart. None may report
anything: a healthy POP group has no queue owner, commits lazily and redelivers nothing.

``RMQCTL_POP_HEALTHY_RUNS`` sets how many independent runs (fresh groups each, one shared cluster and
proxy) the test makes; the suite makes one (about a minute and a half), the record in
``docs/versions.md`` was made with ten. The consumers' own counts (every message sent was ACKed) say the
groups really were healthy.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from rmqctl.cli.app import app
from rmqctl.connect import Target, open_source
from rmqctl.exporter.stuck import StuckJudge, Verdict
from rmqctl.model import Finding
from rmqctl.watch import Watcher
from tests.harness.proxycluster import GrpcClientsProcess, RealProxy, create_normal_topic
from tests.harness.realcluster import RealCluster
from tui.state import Board, Dashboard, queue_rows

pytestmark = [pytest.mark.real_cluster, pytest.mark.slow, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[2]
RUNS = int(os.environ.get("RMQCTL_POP_HEALTHY_RUNS", "1"))

#: TUI queue statuses that say something is wrong (``?`` is a first poll, ``waiting`` POP's grace)
TUI_ALARMS = {"held twice", "unknown", "orphaned", "stalled"}
#: exporter statuses ``rmqctl_queue_stuck`` reports
EXPORTER_ALARMS = {"STALLED", "ORPHANED", "LAGGING", "REWOUND"}


class _Sender(threading.Thread):
    """Sends two messages a second while the two-sample reads run: the groups are read busy, not idle."""

    def __init__(self, clients: GrpcClientsProcess, topic: str) -> None:
        super().__init__(name="pop-healthy-sender", daemon=True)
        self.clients, self.topic = clients, topic
        self.sent = 0
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.wait(1.0):
            self.clients.send(self.topic, "ok", 2)
            self.sent += 2


def _watch(namesrv: str, proxy: str, groups: list[str]) -> tuple[Dashboard, dict[str, list[Verdict]]]:
    """Three rounds 15 s apart, each read with the POP groups' retry copies, into the TUI's dashboard
    and the exporter's stuck judge."""
    async def run() -> tuple[Dashboard, dict[str, list[Verdict]]]:
        dash, judge = Dashboard(), StuckJudge()
        verdicts: dict[str, list[Verdict]] = {}
        async with open_source(Target(namesrv=namesrv, proxy=proxy)) as opened:
            watcher = Watcher(opened.source, groups, interval=15.0, clock=opened.clock, retry_copies=True)
            async for rnd in watcher.rounds(3):
                dash.apply(rnd)
                verdicts = judge.add(rnd.current.views.values(), int(rnd.current.taken_at * 1000))
        return dash, verdicts

    return asyncio.run(run())


def _codes(findings: list[Finding]) -> list[tuple[str, str]]:
    return [(f.code, f.title) for f in findings]


@pytest.mark.parametrize("run", range(RUNS))
def test_healthy_push_and_simple_pop_groups_draw_no_finding_anywhere(
    run: int, real_cluster: RealCluster, real_proxy: RealProxy, grpc_clients: GrpcClientsProcess,
    rmq_names: Callable[[str], str],
) -> None:
    topic = rmq_names("PopHealthy")
    create_normal_topic(real_cluster, topic, 2)
    push_group, simple_group = rmq_names("GHealthyPush"), rmq_names("GHealthySimple")
    groups = [push_group, simple_group]
    grpc_clients.start_push("push", push_group, {topic: "*"})
    grpc_clients.start_simple("simple", simple_group, {topic: "*"}, invisible_s=10)
    base = grpc_clients.warm_up(topic)
    grpc_clients.send(topic, "ok", 10)
    grpc_clients.wait_until(lambda: all(int(c["acked"]) >= base[k]["acked"] + 10
                                        for k, c in grpc_clients.counts().items()),
                            timeout=120, interval=1.0, message=lambda: f"both acked: {grpc_clients.counts()}")
    args = ["-n", real_cluster.namesrv_addr, "--proxy", real_proxy.remoting_addr]
    runner = CliRunner()

    # one sample
    doctor = runner.invoke(app, [*args, "doctor", *groups, "-o", "json"])
    assert doctor.exit_code == 0, (run, doctor.output)
    assert json.loads(doctor.stdout)["findings"] == [], run
    for group in groups:
        shown = runner.invoke(app, [*args, "group", "assignment", group, "-o", "json"])
        assert shown.exit_code == 0, (run, shown.output)
        doc = json.loads(shown.stdout)
        assert (doc["unassigned_queues"], doc["idle_clients"], doc["pop_owner"]) == ([], [], "POP (1 client)"), run
        progress = runner.invoke(app, [*args, "group", "progress", group, "-o", "json"])
        assert progress.exit_code == 0, (run, progress.output)
        doc = json.loads(progress.stdout)
        assert doc["queues"] and (doc["errors"], doc["unknown_diff_queues"]) == ({}, 0), (run, doc)
        # every queue popped by the group's one client, none held by nobody, in-flight unknown (never 0)
        assert {(r["owner"], r["inflight"], r.get("subscribed", True), r["unpullable"]) for r in doc["queues"]} == {
            ("POP (1 client)", None, True, None)}, (run, doc["queues"])

    # two samples and three rounds while messages flow
    sender = _Sender(grpc_clients, topic)
    sender.start()
    try:
        doctor_two = subprocess.Popen(
            [sys.executable, "-c", "from rmqctl.cli.app import main; main()", *args, "doctor", *groups,
             "--interval", "30", "-o", "json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
        dash, verdicts = _watch(real_cluster.namesrv_addr, real_proxy.remoting_addr, groups)
        out, err = doctor_two.communicate(timeout=180)
    finally:
        sender.halt.set()
        sender.join(timeout=30)
    assert doctor_two.returncode == 0, (run, out, err)
    two = json.loads(out)
    assert two["findings"] == [], run
    board = Board(dash.rounds_applied, dash, dash.sample.taken_at if dash.sample else 0.0)
    for group in groups:
        assert _codes(dash.findings[group]) == [], (run, group)
        statuses = {key: row.status for key, row in queue_rows(board, group).items()}
        assert statuses and not set(statuses.values()) & TUI_ALARMS, (run, group, statuses)
        judged: list[Any] = verdicts.get(group, [])
        assert judged and not {v.status for v in judged} & EXPORTER_ALARMS, (run, group, judged)

    # and the groups were healthy by their clients' own account: every message sent was ACKed
    sent = sender.sent
    grpc_clients.wait_until(lambda: all(int(c["acked"]) >= base[k]["acked"] + 10 + sent
                                        for k, c in grpc_clients.counts().items()),
                            timeout=120, interval=1.0, message=lambda: f"all acked: {grpc_clients.counts()}")
