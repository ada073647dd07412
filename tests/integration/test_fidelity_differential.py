"""One Java scenario, run against the real broker and against the served emulator: same outcome.

The same real Java clients (``ScenarioClients``: push consumers and a producer) play the same
steps twice — once on the real 5.x name server and broker, once on ``rmqctl emulator serve`` —
for the seed incidents (tag overwrite, topic overwrite, idle consumers, uneven allocation) and the
``*``-plus-tags group in both stored orders. Then per-consumer received counts by tag, the queues
each consumer holds, every queue's committed offset and the broker-stored subscriptions must be
equal. Races are made deterministic: consumers of a group start one after the other, and the
client whose expression must be stored gets a subVersion above any clock.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from rmqctl.emulator.serve import ServeOptions
from rmqctl.remoting.admin import AdminClient
from tests.emulator.helpers import served_in_thread
from tests.harness.realcluster import RealCluster, ScenarioClientsProcess, wait_until

pytestmark = [pytest.mark.real_cluster, pytest.mark.timeout(400)]

PINNED = 4_102_444_800_000


@dataclass(frozen=True)
class GroupCase:
    """One consumer group of the scenario: consumers in start order, who is pinned, what to send."""

    name: str
    #: (consumer key, {topic: expression}) in start order
    consumers: tuple[tuple[str, dict[str, str]], ...]
    #: consumer key whose subVersion is pinned (its expression stays stored), or None
    pinned: str | None
    #: (topic, tag, queue ids) - one message per listed queue id
    produce: tuple[tuple[str, str, tuple[int, ...]], ...]
    #: how many messages each consumer's listener receives in the end (the seed's own outcome)
    expected: dict[str, int]
    #: the table of this group flips with every heartbeat: its stored subscription is not compared
    flips: bool = False
    #: extra consumer options per consumer key (e.g. heartbeat periods that drift apart)
    options: dict[str, dict[str, Any]] | None = None


def cases(n: Callable[[str], str]) -> tuple[dict[str, int], list[GroupCase]]:
    ts, ts2, tt, ti, tu, tp1, tp2 = (n(x) for x in ("DStar", "DStarB", "DTag", "DIdle", "DUneven", "DTp1", "DTp2"))
    topics = {ts: 6, ts2: 6, tt: 4, ti: 1, tu: 16, tp1: 4, tp2: 4}
    star = (("A", "tagX || tagY"), ("B", "tagX"), ("C", "*"))
    six = tuple(range(6))
    groups = [
        # C's "*" stored: A gets tagX and tagY of its 2 queues, B tagX, C everything
        GroupCase(n("GStarC"), tuple((f"c{k}", {ts: e}) for k, e in star), "cC",
                  tuple((ts, t, six) for t in ("tagX", "tagY", "tagZ")), {"cA": 4, "cB": 2, "cC": 6}),
        # B's "tagX" stored: only tagX passes the broker, on every queue
        GroupCase(n("GStarB"), tuple((f"b{k}", {ts2: e}) for k, e in star), "bB",
                  tuple((ts2, t, six) for t in ("tagX", "tagY", "tagZ")), {"bA": 2, "bB": 2, "bC": 2}),
        # seed 000/004: the later subscriber's tagB stored, the other receives nothing
        GroupCase(n("GTag"), (("t1", {tt: "tagA"}), ("t2", {tt: "tagB"})), "t2",
                  ((tt, "tagA", (0, 1, 2, 3)), (tt, "tagB", (0, 1, 2, 3))), {"t1": 0, "t2": 2}),
        # seed 001: one queue, two consumers: the first in client-id order gets everything
        GroupCase(n("GIdle"), (("i1", {ti: "*"}), ("i2", {ti: "*"})), None, ((ti, "m", (0, 0, 0, 0)),),
                  {"i1": 4, "i2": 0}),
        # seed 001: 16 queues over 3 consumers in contiguous blocks of 6, 5, 5
        GroupCase(n("GUneven"), (("u1", {tu: "*"}), ("u2", {tu: "*"}), ("u3", {tu: "*"})), None,
                  ((tu, "m", tuple(range(16))),), {"u1": 6, "u2": 5, "u3": 5}),
        # seed 003: each consumer gets its half of its own topic; heartbeats drift so both get turns
        GroupCase(n("GTopic"), (("p1", {tp1: "*"}), ("p2", {tp2: "*"})), None,
                  ((tp1, "m", (0, 1, 2, 3, 0, 1, 2, 3)), (tp2, "m", (0, 1, 2, 3, 0, 1, 2, 3))),
                  {"p1": 4, "p2": 4}, flips=True,
                  options={"p1": {"heartbeat_interval_ms": 1000}, "p2": {"heartbeat_interval_ms": 1700}}),
    ]
    return topics, groups


def play(sc: ScenarioClientsProcess, namesrv: str, broker: str, topics: dict[str, int],
         groups: list[GroupCase], inst: str) -> dict[str, Any]:
    """Run every group's steps with the given Java clients; return what happened."""
    admin_loop = asyncio.new_event_loop()
    admin = AdminClient([namesrv], timeout=10)

    def ask(coro: Any) -> Any:
        return admin_loop.run_until_complete(coro)

    try:
        for group in groups:
            for i, (key, subs) in enumerate(group.consumers):
                sc.start_consumer(key, group.name, subs, instance_name=f"{inst}_{key}", namesrv=namesrv,
                                  pull_delay_on_exception_ms=200, **(group.options or {}).get(key, {}))
                wait_until(lambda group=group, i=i: len(ask(admin.consumer_ids(broker, group.name))) == i + 1,
                           timeout=60, message=f"{key} registered in {group.name}")
            if group.pinned:
                (topic,) = dict(group.consumers)[group.pinned]
                sc.pin_sub_version(group.pinned, topic, PINNED)
                want = dict(group.consumers)[group.pinned][topic]
                wait_until(lambda group=group, topic=topic, want=want:
                           (s := ask(admin.consumer_connection(broker, group.name)).subscriptions
                            .get(topic)) is not None and s.expression == want,
                           timeout=30, message=f"{want!r} stored for {group.name}")
        keys = [k for g in groups for k, _ in g.consumers]
        sc.wait_stable(lambda: sc.assignments(), duration=2.0, timeout=90, message="allocations settled",
                       accept=lambda a: all(k in a for k in keys))
        for group in groups:
            for topic, tag, queues in group.produce:
                sc.produce(topic, tag, len(queues), queue_ids=queues, namesrv=namesrv)

        def offsets() -> dict[str, list[int | None]]:
            return {g.name + "/" + t: [ask(admin.query_consumer_offset(broker, g.name, t, q)) for q in range(n)]
                    for g in groups for t, n in topics.items()
                    if any(t in subs for _, subs in g.consumers)}

        def received() -> dict[str, dict[str, int]]:
            out: dict[str, dict[str, int]] = {}
            for key, messages in sc.received().items():
                for m in messages:
                    slot = out.setdefault(key, {})
                    name = f"{m['topic']}/{m['tag']}"
                    slot[name] = slot.get(name, 0) + 1
            return out

        expected = {k: n for g in groups for k, n in g.expected.items()}

        def totals() -> dict[str, int]:
            got = {k: sum(v.values()) for k, v in received().items()}
            return {k: got.get(k, 0) for k in expected}

        wait_until(lambda: totals() == expected, timeout=120, interval=0.5,
                   message=lambda: f"every consumer to receive its share ({totals()} vs {expected})")

        def committed_as_held() -> bool:
            # every held queue's committed offset has caught up with the client's in-memory one
            mine = {(g.name, q["topic"], q["queue_id"]): q["offset"]
                    for g in groups for k, _ in g.consumers for q in sc.assignments().get(k, [])}
            return all(ask(admin.query_consumer_offset(broker, g, t, q)) == off
                       for (g, t, q), off in mine.items() if off >= 0)

        settled = sc.wait_stable(lambda: (received(), offsets()), duration=3.0, timeout=120,
                                 accept=lambda _: committed_as_held(),
                                 message="received messages and committed offsets settled")
        stored = {}
        for group in groups:
            if not group.flips:
                conn = ask(admin.consumer_connection(broker, group.name))
                stored[group.name] = {t: s.expression for t, s in sorted(conn.subscriptions.items())
                                      if not t.startswith("%")}
        held = {k: sorted((q["topic"], q["queue_id"]) for q in v) for k, v in sc.assignments().items()}
        return {"received": settled[0], "offsets": settled[1], "stored": stored, "held": held}
    finally:
        admin_loop.run_until_complete(admin.close())
        admin_loop.close()


def topics_of(groups: list[GroupCase], key: str) -> str:
    (topic,) = next(subs for g in groups for k, subs in g.consumers if k == key)
    return str(topic)


def scenario_text(cluster: RealCluster, topics: dict[str, int]) -> str:
    # the harness's real broker short-polls (longPollingEnable=false): so does the emulated one
    text = (f'name = "differential"\nduration = 3600\n[[brokers]]\nname = "{cluster.broker_name}"\n'
            f'cluster = "{cluster.cluster_name}"\nlong_polling = {"true" if cluster.long_polling else "false"}\n')
    for topic, queues in topics.items():
        text += f'[[topics]]\nname = "{topic}"\nqueues = {queues}\n'
    return text


@pytest.fixture
def emulator_clients(tmp_path: Path) -> Iterator[Callable[[str], ScenarioClientsProcess]]:
    procs: list[ScenarioClientsProcess] = []

    def make(namesrv: str) -> ScenarioClientsProcess:
        proc = ScenarioClientsProcess(namesrv_addr=namesrv, work_dir=tmp_path / f"java{len(procs)}")
        procs.append(proc)
        return proc.start()

    yield make
    for proc in procs:
        proc.close()


def test_same_java_scenario_same_outcome_on_real_broker_and_emulator(
        real_cluster: RealCluster, scenario_clients: ScenarioClientsProcess,
        rmq_names: Callable[[str], str], emulator_clients: Callable[[str], ScenarioClientsProcess],
        tmp_path: Path) -> None:
    topics, groups = cases(rmq_names)
    inst = rmq_names("dx")
    for topic, queues in topics.items():
        real_cluster.create_topic(topic, queues)
    real = play(scenario_clients, real_cluster.namesrv_addr, real_cluster.broker_addr, topics, groups, inst)

    path = tmp_path / "differential.toml"
    path.write_text(scenario_text(real_cluster, topics))
    with served_in_thread(str(path), ServeOptions(clock="real", speed=1.0)) as served:
        sc = emulator_clients(served.namesrv)
        emulated = play(sc, served.namesrv, served.brokers[real_cluster.broker_name], topics, groups, inst)

    # both reached the seeds' own outcome (play waits for it), not merely the same thing twice
    assert {k: sum(v.values()) for k, v in real["received"].items()} == {
        k: n for g in groups for k, n in g.expected.items() if n}
    assert real["received"]["cA"] == {f"{topics_of(groups, 'cA')}/tagX": 2, f"{topics_of(groups, 'cA')}/tagY": 2}

    assert emulated["stored"] == real["stored"]
    assert emulated["held"] == real["held"]
    assert emulated["offsets"] == real["offsets"]
    assert emulated["received"] == real["received"]
