"""``group reset`` against a real 5.3.3 broker with real Java push consumers running.

What the plan says is checked against the real parts, never against rmqctl's own read-back alone:
``mqadmin consumerProgress`` shows the planned offsets, and the consumers' listeners (counted in
the Java harness) receive exactly the messages the plan said would be replayed. Server-side reset
is the 5.3.3 default; the broker's ``useServerSideResetOffset`` is switched off with mqadmin
``updateBrokerConfig`` for the cases through the clients and restored afterwards. On 4.9.7
(``RMQCTL_HARNESS_PROFILE=rmq49``), which has no server-side reset, the cases through the clients
and without an online client run as they are and the server-side ones are skipped.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from rmqctl.actions.permission import Writer
from rmqctl.actions.plan import (
    APPLIED,
    CLIENT,
    OFFSET_TABLE,
    OVERWRITTEN,
    SERVER,
    ResetOutcome,
    ResetPlan,
    ResetTarget,
    plan_from_document,
)
from rmqctl.actions.reset import apply_reset, plan_reset
from rmqctl.backends.remoting import RemotingBackend
from rmqctl.remoting.admin import AdminClient
from rmqctl.service import ClusterService
from tests.harness.realcluster import RealCluster, ScenarioClientsProcess, wait_until

pytestmark = [pytest.mark.real_cluster, pytest.mark.slow, pytest.mark.timeout(600)]

WRITER = Writer("tester", None, None)
_PROGRESS_ROW = re.compile(r"^(\S+)\s+(\S+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(-?\d+)")


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))


def consumer_progress(cluster: RealCluster, group: str, topic: str) -> dict[int, int]:
    """``mqadmin consumerProgress -g group``: queue id -> consumer offset, for ``topic``."""
    out = cluster.mqadmin("consumerProgress", "-g", group)
    return {int(m.group(3)): int(m.group(5)) for m in map(_PROGRESS_ROW.match, out.splitlines())
            if m and m.group(1) == topic}


def run_plan(cluster: RealCluster, group: str, target: ResetTarget) -> ResetPlan:
    async def go() -> ResetPlan:
        source = ClusterService(RemotingBackend(AdminClient([cluster.namesrv_addr], timeout=10)))
        try:
            return await plan_reset(source, group, target, cluster=f"namesrv {cluster.namesrv_addr}")
        finally:
            await source.close()

    return asyncio.run(go())


def run_apply(cluster: RealCluster, plan: ResetPlan, **kw: Any) -> ResetOutcome:
    async def go() -> ResetOutcome:
        source = ClusterService(RemotingBackend(AdminClient([cluster.namesrv_addr], timeout=10)))
        try:
            return await apply_reset(source, plan, WRITER, **kw)
        finally:
            await source.close()

    return asyncio.run(go())


def has_server_side_reset(cluster: RealCluster) -> bool:
    """5.x brokers (``useServerSideResetOffset`` came with 5.0; on by default from 5.2.0)."""
    return not (cluster.version or "").startswith("V4")


@pytest.fixture
def server_side_off(real_cluster: RealCluster) -> Iterator[None]:
    if not has_server_side_reset(real_cluster):
        yield  # nothing to switch off
        return

    def set_to(value: str) -> None:
        real_cluster.mqadmin("updateBrokerConfig", "-b", real_cluster.broker_addr, "-k",
                             "useServerSideResetOffset", "-v", value, check=True)

    set_to("false")
    try:
        yield
    finally:
        set_to("true")


def consuming_group(cluster: RealCluster, sc: ScenarioClientsProcess, names: Callable[[str], str],
                    count: int = 8) -> tuple[str, str, str]:
    """A topic of 2 queues, a group with one live consumer that consumed ``count`` messages."""
    topic, group = names("Reset"), names("GReset")
    cluster.create_topic(topic, 2)
    client = sc.start_consumer("A", group, {topic: "*"}, instance_name=names("ra"), persist_offset_interval_ms=1000)
    wait_until(lambda: cluster.consumer_ids(group) == [client], timeout=60, message="consumer registered")
    sc.wait_stable(lambda: sc.queue_ids(topic), duration=2.0, timeout=60,
                   accept=lambda alloc: alloc.get("A") == [0, 1], message="A holds both queues")
    sc.produce(topic, "t", count, queue_ids=[0, 1])
    half = count // 2
    wait_until(lambda: all(cluster.consumer_offset(group, topic, q) == half for q in (0, 1)), timeout=60,
               message="both queues committed")
    wait_until(lambda: len(sc.received("A")["A"]) == count, timeout=30, message="all received")
    sc.clear_received()
    return topic, group, client


def replayed(sc: ScenarioClientsProcess, expected: int) -> list[tuple[int, int]]:
    """The (queue, offset) of each message the consumer received again, once ``expected`` arrived
    and nothing more came for a while."""
    def count() -> int:
        return len(sc.received("A")["A"])

    wait_until(lambda: count() >= expected, timeout=60, message=f"{expected} messages replayed")
    sc.wait_stable(count, duration=3.0, timeout=30, message="no more messages")
    return sorted((m["queue_id"], m["offset"]) for m in sc.received("A")["A"])


@pytest.mark.parametrize(("target", "expected"), [
    (ResetTarget("earliest"), {0: 0, 1: 0}),
    (ResetTarget("offset", 0), {0: 0, 1: 0}),
    (ResetTarget("shift", -3), {0: 1, 1: 1}),
])
def test_server_side_reset_replays_exactly_what_the_plan_said(
        real_cluster: RealCluster, scenario_clients: ScenarioClientsProcess, rmq_names: Callable[[str], str],
        target: ResetTarget, expected: dict[int, int]) -> None:
    if not has_server_side_reset(real_cluster):
        pytest.skip(f"{real_cluster.version} has no server-side reset")
    sc = scenario_clients
    topic, group, _ = consuming_group(real_cluster, sc, rmq_names)
    plan = run_plan(real_cluster, group, target)
    assert [(q.queue.queue_id, q.current, q.target, q.method) for q in plan.queues] == [
        (0, 4, expected[0], SERVER), (1, 4, expected[1], SERVER)]
    outcome = run_apply(real_cluster, plan)
    assert [q.status for q in outcome.queues] == [APPLIED, APPLIED], outcome
    assert plan.replay_total is not None
    got = replayed(sc, plan.replay_total)
    assert got == sorted((q, o) for q in (0, 1) for o in range(expected[q], 4))
    wait_until(lambda: consumer_progress(real_cluster, group, topic) == {0: 4, 1: 4}, timeout=30,
               message="consumed on to the end")


def test_latest_time_offset_zero_and_undo_on_a_group_with_no_online_client(
        real_cluster: RealCluster, scenario_clients: ScenarioClientsProcess, rmq_names: Callable[[str], str]) -> None:
    sc = scenario_clients
    topic, group, _ = consuming_group(real_cluster, sc, rmq_names)
    sc.stop_consumer("A")
    wait_until(lambda: real_cluster.consumer_ids(group) == [], timeout=60, message="consumer gone")
    mark_ms = int(asyncio.run(_broker_now(real_cluster)))
    sc.produce(topic, "late", 6, queue_ids=[0, 1])
    by_time = run_plan(real_cluster, group, ResetTarget("time", mark_ms))
    assert [(q.current, q.target) for q in by_time.queues] == [(4, 4), (4, 4)]
    latest = run_plan(real_cluster, group, ResetTarget("latest"))
    assert [(q.current, q.target, q.skip) for q in latest.queues] == [(4, 7, 3), (4, 7, 3)]
    assert latest.clients == ()
    assert run_apply(real_cluster, latest).all_applied
    assert consumer_progress(real_cluster, group, topic) == {0: 7, 1: 7}
    zero = run_plan(real_cluster, group, ResetTarget("offset", 0))
    outcome = run_apply(real_cluster, zero)
    assert outcome.all_applied
    assert consumer_progress(real_cluster, group, topic) == {0: 0, 1: 0}
    assert outcome.undo_file is not None


    undo = plan_from_document(json.loads(Path(outcome.undo_file).read_text()))
    assert run_apply(real_cluster, undo, from_file=True).all_applied
    assert consumer_progress(real_cluster, group, topic) == {0: 7, 1: 7}


async def _broker_now(cluster: RealCluster) -> float:
    """The store time of a fresh message is the broker's clock; the host's is the same machine's."""
    await asyncio.sleep(1.1)  # messages stored before this are older than the mark
    return time.time() * 1000


def test_without_server_side_reset_an_offset_is_overwritten_and_a_time_target_goes_through_the_client(
        real_cluster: RealCluster, scenario_clients: ScenarioClientsProcess, rmq_names: Callable[[str], str],
        server_side_off: None) -> None:
    sc = scenario_clients
    topic, group, client = consuming_group(real_cluster, sc, rmq_names)
    plan = run_plan(real_cluster, group, ResetTarget("offset", 1))
    assert {q.method for q in plan.queues} == {OFFSET_TABLE}
    assert plan.server_side == {real_cluster.broker_name: False}
    outcome = run_apply(real_cluster, plan)
    assert [(q.status, q.client) for q in outcome.queues] == [(OVERWRITTEN, client)] * 2, outcome
    assert consumer_progress(real_cluster, group, topic) == {0: 4, 1: 4}
    assert sc.received("A")["A"] == []  # the live consumer never moved
    earliest = run_plan(real_cluster, group, ResetTarget("earliest"))
    assert {q.method for q in earliest.queues} == {CLIENT}
    assert run_apply(real_cluster, earliest).all_applied
    got = replayed(sc, 8)
    assert got == sorted((q, o) for q in (0, 1) for o in range(4))
