"""``group reset`` on the embedded emulator, with the broker's semantics: plans that change
nothing, every target (offset 0 included), live clients that receive exactly the replayed
messages, the overwrite of a reset that only went to the offset table, stale plans refused, the
audit record and the undo plan."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rmqctl import errors
from rmqctl.actions import audit
from rmqctl.actions.permission import Writer
from rmqctl.actions.plan import (
    APPLIED,
    CLIENT,
    OFFSET_TABLE,
    OVERWRITTEN,
    REFUSED,
    SERVER,
    ResetPlan,
    ResetTarget,
    plan_document,
    plan_from_document,
)
from rmqctl.actions.reset import QueueSelector, apply_reset, plan_reset
from rmqctl.emulator.embedded import embedded_opened
from rmqctl.emulator.scenario import parse_scenario
from rmqctl.emulator.world import EmulatedCluster
from rmqctl.model import MessageQueue

G, T = "orders", "OrderTopic"
WRITER = Writer("tester", None, None)


def scenario(*, server_side: bool = True, consumers: int = 1) -> str:
    return f"""
name = "reset"
duration = 30
[[brokers]]
name = "broker-a"
server_side_reset = {str(server_side).lower()}
[[topics]]
name = "{T}"
queues = 2
[[consumers]]
group = "{G}"
subscriptions = {{ {T} = "*" }}
count = {consumers}
[[produce]]
at = 2.0
topic = "{T}"
tag = "t"
count = 10
"""


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    return tmp_path / "rmqctl"


def committed(cluster: EmulatedCluster) -> dict[int, int]:
    return dict(cluster.brokers["broker-a"].offsets.get((T, G), {}))


def delivered(cluster: EmulatedCluster) -> int:
    return sum(len(c.deliveries) for c in cluster.consumers)


async def test_a_plan_changes_nothing_and_says_what_each_queue_and_client_will_do(state: Path) -> None:
    async with embedded_opened(parse_scenario(scenario()), at=20) as opened:
        cluster: EmulatedCluster = opened.cluster
        before = committed(cluster)
        assert before == {0: 5, 1: 5}
        plan = await plan_reset(opened.source, G, ResetTarget("earliest"), cluster="c")
        assert [(q.queue.queue_id, q.current, q.target, q.replay, q.skip, q.method) for q in plan.queues] == [
            (0, 5, 0, 5, 0, SERVER), (1, 5, 0, 5, 0, SERVER)]
        assert plan.server_side == {"broker-a": True}
        (client,) = plan.clients
        assert client.queues == tuple(MessageQueue(T, "broker-a", i) for i in (0, 1))
        assert "OFFSET_MOVED" in client.effect
        await opened.clock.sleep(10)  # the clients keep committing: still nothing reset
        assert committed(cluster) == before
    assert not audit.audit_path().exists() and not (state / "undo").exists()


@pytest.mark.parametrize(("target", "expected"), [
    (ResetTarget("earliest"), {0: 0, 1: 0}),
    (ResetTarget("offset", 0), {0: 0, 1: 0}),  # mqadmin skips offset 0 (resetOffset > 0): rmqctl must not
    (ResetTarget("offset", 3), {0: 3, 1: 3}),
    (ResetTarget("shift", -4), {0: 1, 1: 1}),
    (ResetTarget("shift", -40), {0: 0, 1: 0}),  # kept within the stored range
])
async def test_each_target_is_applied_and_live_clients_receive_exactly_the_replay(
        target: ResetTarget, expected: dict[int, int]) -> None:
    async with embedded_opened(parse_scenario(scenario()), at=20) as opened:
        cluster: EmulatedCluster = opened.cluster
        plan = await plan_reset(opened.source, G, target, cluster="c")
        assert {q.queue.queue_id: q.target for q in plan.queues} == expected
        before = delivered(cluster)
        outcome = await apply_reset(opened.source, plan, WRITER)
        assert [q.status for q in outcome.queues] == [APPLIED, APPLIED]
        # the owner's pull of each queue is held (long polling) up to 15 s; the next one moves
        await opened.clock.sleep(20)
        assert delivered(cluster) - before == plan.replay_total == sum(5 - v for v in expected.values())
        assert committed(cluster) == {0: 5, 1: 5}  # consumed on to the end again


async def test_latest_and_time_skip_a_backlog_the_stopped_group_left() -> None:
    async with embedded_opened(parse_scenario(scenario()), at=20) as opened:
        cluster: EmulatedCluster = opened.cluster
        (consumer,) = cluster.consumers
        cluster.stop_consumer(consumer.client_id)
        await opened.clock.sleep(1)
        mark_ms = int(opened.clock.now() * 1000)
        cluster.produce(T, 6, "late")
        await opened.clock.sleep(1)
        plan = await plan_reset(opened.source, G, ResetTarget("latest"), cluster="c")
        assert [(q.current, q.target, q.skip) for q in plan.queues] == [(5, 8, 3), (5, 8, 3)]
        assert plan.clients == ()
        by_time = await plan_reset(opened.source, G, ResetTarget("time", mark_ms), cluster="c")
        assert [q.target for q in by_time.queues] == [5, 5]  # the first message stored after the mark
        outcome = await apply_reset(opened.source, plan, WRITER)
        assert outcome.waited_s == 0 and outcome.all_applied
        assert committed(cluster) == {0: 8, 1: 8}


async def test_a_narrowed_plan_touches_only_its_queue() -> None:
    async with embedded_opened(parse_scenario(scenario()), at=20) as opened:
        cluster: EmulatedCluster = opened.cluster
        plan = await plan_reset(opened.source, G, ResetTarget("offset", 0), cluster="c",
                                topics=[T], queues=[QueueSelector.parse("broker-a/1")])
        assert [q.queue.queue_id for q in plan.queues] == [1]
        await apply_reset(opened.source, plan, WRITER, wait_s=0)
        assert committed(cluster)[0] == 5


async def test_an_offset_outside_the_stored_range_is_refused_before_anything_is_sent() -> None:
    async with embedded_opened(parse_scenario(scenario()), at=20) as opened:
        with pytest.raises(errors.UsageError, match=r"outside OrderTopic@broker-a/0's stored range \[0, 5\]"):
            await plan_reset(opened.source, G, ResetTarget("offset", 6), cluster="c")


async def test_without_server_side_reset_an_offset_write_is_overwritten_by_the_live_owner() -> None:
    async with embedded_opened(parse_scenario(scenario(server_side=False)), at=20) as opened:
        cluster: EmulatedCluster = opened.cluster
        (consumer,) = cluster.consumers
        plan = await plan_reset(opened.source, G, ResetTarget("offset", 1), cluster="c")
        assert {q.method for q in plan.queues} == {OFFSET_TABLE}
        assert "overwrites the reset with its next commit" in plan.clients[0].effect
        outcome = await apply_reset(opened.source, plan, WRITER)
        assert [(q.status, q.offset_written, q.offset_after, q.client) for q in outcome.queues] == [
            (OVERWRITTEN, 1, 5, consumer.client_id)] * 2
        assert not outcome.all_applied


async def test_without_server_side_reset_a_time_target_goes_through_the_clients() -> None:
    async with embedded_opened(parse_scenario(scenario(server_side=False)), at=20) as opened:
        cluster: EmulatedCluster = opened.cluster
        plan = await plan_reset(opened.source, G, ResetTarget("earliest"), cluster="c")
        assert {q.method for q in plan.queues} == {CLIENT}
        assert plan.server_side == {"broker-a": False}
        before = delivered(cluster)
        outcome = await apply_reset(opened.source, plan, WRITER)
        assert outcome.all_applied
        assert delivered(cluster) - before == 10


async def test_a_group_with_no_online_client_is_written_to_the_offset_table() -> None:
    async with embedded_opened(parse_scenario(scenario(server_side=False)), at=20) as opened:
        cluster: EmulatedCluster = opened.cluster
        cluster.stop_consumer(cluster.consumers[0].client_id)
        await opened.clock.sleep(1)
        plan = await plan_reset(opened.source, G, ResetTarget("offset", 0), cluster="c")
        assert {q.method for q in plan.queues} == {OFFSET_TABLE} and plan.clients == ()
        outcome = await apply_reset(opened.source, plan, WRITER)
        assert outcome.all_applied and committed(cluster) == {0: 0, 1: 0}


async def test_a_client_side_reset_with_no_client_online_is_refused_with_the_brokers_code() -> None:
    async with embedded_opened(parse_scenario(scenario(server_side=False)), at=20) as opened:
        cluster: EmulatedCluster = opened.cluster
        plan = await plan_reset(opened.source, G, ResetTarget("earliest"), cluster="c")
        cluster.stop_consumer(cluster.consumers[0].client_id)  # gone between the plan and the apply
        await opened.clock.sleep(1)
        outcome = await apply_reset(opened.source, plan, WRITER, wait_s=0)
        assert {(q.status, q.code) for q in outcome.queues} == {(REFUSED, 206)}


async def test_a_stale_plan_from_a_file_is_refused_with_the_difference() -> None:
    async with embedded_opened(parse_scenario(scenario()), at=20) as opened:
        cluster: EmulatedCluster = opened.cluster
        plan = plan_from_document(json.loads(json.dumps(plan_document(
            await plan_reset(opened.source, G, ResetTarget("earliest"), cluster="c")))))
        cluster.produce(T, 2, "t")
        await opened.clock.sleep(10)
        with pytest.raises(errors.WriteRefused, match=r"stale.*OrderTopic@broker-a/0 was 5, is 6"):
            await apply_reset(opened.source, plan, WRITER, from_file=True)
        assert committed(cluster) == {0: 6, 1: 6}
    assert not audit.audit_path().exists()


async def test_the_audit_record_and_the_undo_plan_that_restores(state: Path) -> None:
    async with embedded_opened(parse_scenario(scenario()), at=20) as opened:
        cluster: EmulatedCluster = opened.cluster
        (consumer,) = cluster.consumers
        cluster.stop_consumer(consumer.client_id)
        await opened.clock.sleep(1)
        plan = await plan_reset(opened.source, G, ResetTarget("offset", 0), cluster="emulator reset")
        outcome = await apply_reset(opened.source, plan, Writer("alice", "ak1", "prod"))
        assert committed(cluster) == {0: 0, 1: 0}
        (record,) = audit.read_log()
        assert record["who"] == {"os_user": "alice", "access_key": "ak1"}
        assert record["context"] == "prod" and record["cluster"] == "emulator reset" and record["group"] == G
        assert record["plan"] == plan_document(plan)
        assert record["outcome"]["all_applied"] is True
        assert oct(audit.audit_path().stat().st_mode & 0o777) == "0o600"
        assert outcome.undo_file is not None and Path(outcome.undo_file).parent == state / "undo"
        undo: ResetPlan = plan_from_document(json.loads(Path(outcome.undo_file).read_text()))
        assert [(q.current, q.target) for q in undo.queues] == [(0, 5), (0, 5)]
        again = await apply_reset(opened.source, undo, WRITER, from_file=True)
        assert again.all_applied and committed(cluster) == {0: 5, 1: 5}
        assert len(audit.read_log()) == 2


def test_the_plan_file_round_trips() -> None:
    plan = ResetPlan(G, "c", ResetTarget("shift", -3), 1_700_000_000_000, (), {"broker-a": None})
    from rmqctl.actions.plan import QueueReset

    plan = ResetPlan(G, "c", ResetTarget("shift", -3), 1_700_000_000_000,
                     (QueueReset(MessageQueue(T, "broker-a", 0), "127.0.0.1:1", None, 0, 0, 9, SERVER, None),
                      QueueReset(MessageQueue(T, "broker-b", 1), "127.0.0.1:2", 7, 4, 2, 9, OFFSET_TABLE, "c1")),
                     {"broker-a": True, "broker-b": None})
    assert plan_from_document(json.loads(json.dumps(plan_document(plan)))) == plan
    with pytest.raises(errors.UsageError, match="not a reset plan"):
        plan_from_document({"kind": "something"})


POISON = """
name = "poison"
duration = 60
[[brokers]]
name = "broker-a"
[[topics]]
name = "OrderTopic"
queues = 2
order = true
[[consumers]]
group = "orders"
subscriptions = { OrderTopic = "*" }
orderly = true
suspend_queues = [0]
[[produce]]
at = 2.0
topic = "OrderTopic"
tag = "t"
count = 10
"""


async def test_skipping_the_backlog_unsticks_an_orderly_queue_stuck_on_suspend() -> None:
    """An orderly listener answers SUSPEND for every message of queue 0: the doctor names the
    stuck queue. A reset to latest (the TUI's skip) through the live client moves it past the
    backlog, and two later samples find the queue neither suspended nor frozen."""
    from rmqctl.doctor import run_checks

    async with embedded_opened(parse_scenario(POISON), at=60) as opened:
        cluster: EmulatedCluster = opened.cluster
        first = await opened.source.group_view(G)
        await opened.clock.sleep(30)
        stuck = {f.code for f in run_checks(await opened.source.group_view(G), first)}
        assert {"ORDERLY_QUEUE_SUSPENDED", "LAG_NOT_ADVANCING"} <= stuck
        assert committed(cluster) == {0: 0, 1: 5}
        plan = await plan_reset(opened.source, G, ResetTarget("latest"), cluster="c")
        assert plan.skip_total == 5
        outcome = await apply_reset(opened.source, plan, WRITER)
        assert [q.status for q in outcome.queues] == [APPLIED, APPLIED]
        await opened.clock.sleep(30)
        before = await opened.source.group_view(G)
        await opened.clock.sleep(30)
        after = {f.code for f in run_checks(await opened.source.group_view(G), before)}
        assert not after & {"ORDERLY_QUEUE_SUSPENDED", "LAG_NOT_ADVANCING", "BLOCKED_QUEUE"}, after
        assert committed(cluster) == {0: 5, 1: 5}
