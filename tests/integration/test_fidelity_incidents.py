"""Three incidents, one Java program, two targets: the real 5.x broker and ``rmqctl emulator serve``.

Like ``test_fidelity_differential.py``, the same real Java clients play the same steps against the
session's real broker (``enablePropertyFilter=true``) and against a served emulator, here at the
same time (one thread per target, one set of client JVMs per target, shared by the tests of this
module), and the outcome must be the same:

1. an orderly consumer whose listener answers SUSPEND_CURRENT_QUEUE_A_MOMENT for every message of
   queue 0 (``FilterClients``): the same received messages, committed offsets and locked queues,
   and the same doctor verdict, ORDERLY_QUEUE_SUSPENDED naming the queue and the client; and
   a second orderly client joining, so the first unlocks the queues it gives up and the second
   locks them (well before the 60 s lock expiry) and consumes what was left suspended;
2. a SQL92 client (``p_a > 5``) and a tag client (``tagX || tagY``) in one group, in both start
   orders (so the broker holds the tag expression in one group and the SQL92 one in the other),
   messages with a ``p_a`` property: the same per-client receipts, stored expression and doctor
   loss counts;
3. a listener hung before its first commit (``ScenarioClients``, ``consume_delay_ms``): the same
   progress rows and TOTAL_DIFF though nothing was committed, and the same BLOCKED_QUEUE (client,
   queues, backlog).

Each case also checks the real broker's outcome against numbers worked out from the rules (the
producer's properties and the allocation), so the test does not merely find the same thing twice.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest

from rmqctl.backends.remoting import RemotingBackend
from rmqctl.doctor import diagnose, run_checks
from rmqctl.emulator.serve import ServeOptions
from rmqctl.model import Finding, GroupView
from rmqctl.remoting.admin import AdminClient
from rmqctl.service import ClusterService
from tests.emulator.helpers import served_in_thread
from tests.harness.realcluster import RealCluster, ScenarioClientsProcess, wait_stable, wait_until
from tests.integration.test_fidelity_differential import scenario_text

pytestmark = [pytest.mark.real_cluster, pytest.mark.timeout(600)]

T = TypeVar("T")
TOKEN = uuid.uuid4().hex[:8]


def name(prefix: str) -> str:
    return f"{prefix}_{TOKEN}"


ORDER_T, SQL_T, HUNG_T, HANDOVER_T = name("FxOrder"), name("FxSql"), name("FxHung"), name("FxHandover")
TOPICS = {ORDER_T: 2, SQL_T: 4, HUNG_T: 2, HANDOVER_T: 4}


class FilterClientsProcess(ScenarioClientsProcess):
    main_class = "rmqctl.harness.FilterClients"


@dataclass
class Target:
    """One side of the comparison: where its name server and broker are, and its client JVMs."""

    label: str
    namesrv: str
    broker: str
    filters: FilterClientsProcess
    scenario: ScenarioClientsProcess

    def call(self, work: Callable[[AdminClient], Any]) -> Any:
        """Run one admin coroutine (``work(admin)``) against this target."""
        async def run() -> Any:
            admin = AdminClient([self.namesrv], timeout=10)
            try:
                return await work(admin)
            finally:
                await admin.close()

        return asyncio.run(run())

    def committed(self, group: str, topic: str) -> list[int | None]:
        async def read(admin: AdminClient) -> list[int | None]:
            return [await admin.query_consumer_offset(self.broker, group, topic, q) for q in range(TOPICS[topic])]

        return list(self.call(read))

    def view(self, group: str) -> GroupView:
        async def read(admin: AdminClient) -> GroupView:
            return await ClusterService(RemotingBackend(admin)).group_view(group)

        return self.call(read)  # type: ignore[no-any-return]

    def total_diff(self, group: str) -> int | None:
        """``group list``'s TOTAL_DIFF of one group."""
        async def read(admin: AdminClient) -> int | None:
            summaries = (await ClusterService(RemotingBackend(admin)).group_summaries()).value
            (summary,) = [s for s in summaries if s.group == group]
            return summary.total_diff

        return self.call(read)  # type: ignore[no-any-return]

    def doctor(self, group: str) -> list[Finding]:
        """What ``rmqctl doctor GROUP`` finds (one sample, messages read back where tags conflict)."""
        async def run(admin: AdminClient) -> list[Finding]:
            return list((await diagnose(ClusterService(RemotingBackend(admin)), [group])).findings)

        return self.call(run)  # type: ignore[no-any-return]

    def received(self, key: str) -> list[dict[str, Any]]:
        return list(self.filters.request({"cmd": "received"})["received"].get(key, []))


@pytest.fixture(scope="module")
def targets(real_cluster: RealCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Target, Target]]:
    for topic, queues in TOPICS.items():
        real_cluster.create_topic(topic, queues)
    work = tmp_path_factory.mktemp("incidents")
    path = work / "incidents.toml"
    path.write_text(scenario_text(real_cluster, TOPICS))
    with served_in_thread(str(path), ServeOptions(clock="real", speed=1.0)) as served, ExitStack() as stack:
        real = Target("real", real_cluster.namesrv_addr, real_cluster.broker_addr,
                      stack.enter_context(FilterClientsProcess(real_cluster)),
                      stack.enter_context(ScenarioClientsProcess(real_cluster)))
        emulated = Target("emulator", served.namesrv, served.brokers[real_cluster.broker_name],
                          stack.enter_context(FilterClientsProcess(namesrv_addr=served.namesrv,
                                                                   work_dir=work / "filters")),
                          stack.enter_context(ScenarioClientsProcess(namesrv_addr=served.namesrv,
                                                                     work_dir=work / "scenario")))
        yield real, emulated


def on_both(targets: tuple[Target, Target], play: Callable[[Target], T]) -> tuple[T, T]:
    """``play`` on the real broker and on the emulator at the same time: (real, emulated)."""
    with ThreadPoolExecutor(2, thread_name_prefix="target") as pool:
        real, emulated = (pool.submit(play, t) for t in targets)
        return real.result(), emulated.result()


def only(findings: list[Finding], code: str) -> Finding | None:
    found = [f for f in findings if f.code == code]
    assert len(found) <= 1, found
    return found[0] if found else None


# --- 1. orderly SUSPEND --------------------------------------------------------------------------

ORDER_G = name("fx-order")


def play_orderly(t: Target) -> dict[str, Any]:
    ns = t.namesrv
    cid = t.filters.request({"cmd": "start_consumer", "id": "ord", "namesrv": ns, "group": ORDER_G,
                             "topic": ORDER_T, "expression": "*", "orderly": True, "suspend_queues": [0],
                             "instance_name": name("ord")})["client_id"]

    def locked() -> list[tuple[str, int]]:
        info = t.view(ORDER_G).running_infos.get(cid)
        return sorted((mq.topic, mq.queue_id) for mq, pq in (info.mq_table.items() if info else ())
                      if pq.locked and mq.topic == ORDER_T)

    wait_until(lambda: len(locked()) == 2, timeout=60, message=f"{t.label}: both queues locked by {cid}")
    for q in (0, 1):
        t.filters.request({"cmd": "produce", "namesrv": ns, "topic": ORDER_T, "tag": "o", "count": 20, "queue": q})
    wait_until(lambda: len(t.received("ord")) == 20, timeout=60, message=f"{t.label}: queue 1's 20 received")
    wait_until(lambda: t.committed(ORDER_G, ORDER_T)[1] == 20, timeout=30, message=f"{t.label}: queue 1 committed")

    def suspended() -> dict[str, Any] | None:
        f = only(t.doctor(ORDER_G), "ORDERLY_QUEUE_SUSPENDED")
        # the client's failure statistics are a one-minute rate sampled every 10 s: wait for them
        if f is None or not all(r["listener_fails"] for r in f.evidence["queues"]):
            return None
        return {"severity": f.severity, "samples": f.evidence["samples"],
                "queues": [{k: v for k, v in r.items() if k != "last_consume_timestamp"}
                           for r in f.evidence["queues"]]}

    verdict = wait_until(suspended, timeout=90, interval=3.0, message=f"{t.label}: ORDERLY_QUEUE_SUSPENDED")
    return {"client": cid, "verdict": verdict, "locked": locked(),
            "received": sorted(Counter(m["queue_id"] for m in t.received("ord")).items()),
            "committed": t.committed(ORDER_G, ORDER_T)}


def test_orderly_suspend_same_offsets_locks_and_verdict(targets: tuple[Target, Target]) -> None:
    real, emulated = on_both(targets, play_orderly)
    cid = real["client"]
    # the real broker's own outcome: queue 1 consumed and committed, queue 0 stuck at 0 with all
    # 20 messages cached in the client, which holds both queues locked
    assert real["received"] == [(1, 20)]
    assert real["locked"] == [(ORDER_T, 0), (ORDER_T, 1)]
    assert real["committed"][1] == 20 and real["committed"][0] in (0, None)
    assert real["verdict"]["severity"] == "error"
    (row,) = real["verdict"]["queues"]
    assert (row["topic"], row["queue_id"], row["client"], row["consumer_offset"], row["diff"]) == (
        ORDER_T, 0, cid, 0, 20)
    assert row["cached_msg_count"] == 20 and row["locked"] is True
    assert emulated == real


# --- 1b. an orderly queue handed over: locks and unlocks ----------------------------------------

HANDOVER_G = name("fx-handover")


def play_handover(t: Target) -> dict[str, Any]:
    """Orderly A alone holds all four queues and suspends queue 2; B joins and AVG gives it queues
    2 and 3. A 5.3 client unlocks a queue it gives up (UNLOCK_BATCH_MQ) as soon as no listener
    call runs on it (``tryRemoveOrderMessageQueue``), its suspended queue 2 included, so B locks
    both within a rebalance or two, long before A's locks would expire (60 s), and consumes the
    two messages A kept suspending."""
    ns = t.namesrv

    def start(key: str, suspend: list[int]) -> str:
        return str(t.filters.request({
            "cmd": "start_consumer", "id": key, "namesrv": ns, "group": HANDOVER_G, "topic": HANDOVER_T,
            "expression": "*", "orderly": True, "suspend_queues": suspend, "instance_name": name(key)})["client_id"])

    def locks() -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for cid, info in t.view(HANDOVER_G).running_infos.items():
            out[cid] = sorted(mq.queue_id for mq, pq in info.mq_table.items()
                              if mq.topic == HANDOVER_T and pq.locked and not pq.dropped)
        return out

    a = start("ha", [2])
    wait_until(lambda: locks() == {a: [0, 1, 2, 3]}, timeout=60, message=f"{t.label}: A locked all four")
    for q in range(4):
        t.filters.request({"cmd": "produce", "namesrv": ns, "topic": HANDOVER_T, "tag": "h", "count": 2, "queue": q})
    wait_until(lambda: len(t.received("ha")) == 6, timeout=60, message=f"{t.label}: A consumed 0, 1 and 3")
    b = start("hb", [])
    # without an unlock, B would wait for A's locks to expire: 40 to 60 s (which of B's two locks
    # comes first races with A's two unlocks, so only the end is compared)
    final = wait_until(lambda: (held := locks()) == {a: [0, 1], b: [2, 3]} and held, timeout=30,
                       message=f"{t.label}: A kept queues 0 and 1, B locked 2 and 3")
    wait_until(lambda: len(t.received("hb")) == 2, timeout=30, message=f"{t.label}: B consumed queue 2")
    wait_until(lambda: t.committed(HANDOVER_G, HANDOVER_T) == [2, 2, 2, 2], timeout=30,
               message=f"{t.label}: every queue committed")
    return {"a": a, "b": b, "final": final,
            "received": {k: sorted(Counter(m["queue_id"] for m in t.received(k)).items()) for k in ("ha", "hb")}}


def test_orderly_handover_same_locks_and_unlocks(targets: tuple[Target, Target]) -> None:
    real, emulated = on_both(targets, play_handover)
    assert real["final"] == {real["a"]: [0, 1], real["b"]: [2, 3]}
    assert real["received"] == {"ha": [(0, 2), (1, 2), (3, 2)], "hb": [(2, 2)]}
    assert emulated == real


# --- 2. SQL92 and tag clients in one group ------------------------------------------------------

#: group -> (consumer key, SQL92?) in start order: the later subscriber's expression is stored
SQL_GROUPS = {
    name("fx-sql-tagheld"): (("sa", True), ("ta", False)),
    name("fx-sql-sqlheld"): (("tb", False), ("sb", True)),
}
SQL_EXPR, TAG_EXPR = "p_a > 5", "tagX || tagY"
TAGS = ("tagX", "tagY", "tagZ")


def play_sql92(t: Target) -> dict[str, Any]:
    ns = t.namesrv
    ids: dict[str, str] = {}
    for group, members in SQL_GROUPS.items():
        for key, sql in members:
            ids[key] = t.filters.request({
                "cmd": "start_consumer", "id": key, "namesrv": ns, "group": group, "topic": SQL_T,
                "expression": SQL_EXPR if sql else TAG_EXPR, "sql": sql, "instance_name": name(key)})["client_id"]

    def holdings() -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for group in SQL_GROUPS:
            for cid, queues in t.view(group).assignments().items():
                out[cid] = sorted(q.queue_id for q in queues if q.topic == SQL_T)
        return out

    wait_until(lambda: sorted(map(len, holdings().values())) == [2, 2, 2, 2], timeout=90,
               message=f"{t.label}: every client holds two queues")

    # Which client stamped the newest subVersion is a race on a real broker: the one that gained
    # queues and the one that gave some up both bump it in the same second. Subscribing the later
    # member again makes it the newest, so its expression is the one stored before anything is sent.
    def stored() -> dict[str, tuple[str, str] | None]:
        out: dict[str, tuple[str, str] | None] = {}
        for group in SQL_GROUPS:
            subs = [s[SQL_T] for s in t.view(group).broker_subscriptions.values() if SQL_T in s]
            out[group] = (subs[0].expression, subs[0].expression_type) if len(subs) == 1 else None
        return out

    for members in SQL_GROUPS.values():
        t.filters.request({"cmd": "resubscribe", "id": members[-1][0]})
    intended = {group: (SQL_EXPR, "SQL92") if members[-1][1] else (TAG_EXPR, "TAG")
                for group, members in SQL_GROUPS.items()}
    wait_stable(stored, duration=3.0, timeout=60, interval=0.5, accept=lambda s: s == intended,
                message=f"{t.label}: the later member's expression is stored")
    # each queue gets one message of each p_a value per tag
    for q in range(4):
        for tag in TAGS:
            t.filters.request({"cmd": "produce", "namesrv": ns, "topic": SQL_T, "tag": tag, "count": 2,
                               "queue": q, "properties": {"p_a": ["1", "9"]}})
    for group in SQL_GROUPS:
        wait_until(lambda group=group: t.committed(group, SQL_T) == [6, 6, 6, 6], timeout=90,
                   message=f"{t.label}: {group} committed every queue to its end")

    def receipts() -> dict[str, list[tuple[int, str, str]]]:
        got = t.filters.request({"cmd": "received"})["received"]
        return {key: sorted((m["queue_id"], m["tag"], m["properties"].get("p_a", "")) for m in got.get(key, []))
                for key in ids}

    received = wait_stable(receipts, duration=3.0, timeout=60, interval=0.5, message=f"{t.label}: receipts settled")
    out: dict[str, Any] = {"ids": ids, "received": received, "held": holdings(), "stored": {}, "doctor": {}}
    for group in SQL_GROUPS:
        stored = t.view(group).broker_subscriptions
        out["stored"][group] = {b: (s[SQL_T].expression, s[SQL_T].expression_type) for b, s in stored.items()}
        f = only(t.doctor(group), "SUBSCRIPTION_TAG_CONFLICT")
        out["doctor"][group] = None if f is None else {
            k: f.evidence.get(k) for k in ("lost_in_sample", "counts", "delivered_outside_own_filter",
                                           "consumed_before_current_expression", "unjudged_in_sample")}
    return out


def test_sql92_and_tag_clients_same_receipts_stored_expression_and_losses(
        targets: tuple[Target, Target], real_cluster: RealCluster) -> None:
    real, emulated = on_both(targets, play_sql92)
    tagheld, sqlheld = SQL_GROUPS
    broker = real_cluster.broker_name
    assert real["stored"] == {tagheld: {broker: (TAG_EXPR, "TAG")}, sqlheld: {broker: (SQL_EXPR, "SQL92")}}
    # AVG over the sorted client ids: the SQL92 clients (s…) sort first and hold queues 0 and 1
    assert {real["ids"][k]: [0, 1] if k.startswith("s") else [2, 3] for k in real["ids"]} == real["held"]

    def want(queues: tuple[int, ...], tags: tuple[str, ...], values: tuple[str, ...]) -> list[tuple[int, str, str]]:
        return sorted((q, tag, v) for q in queues for tag in tags for v in values)

    # tag expression held: the broker passes tagX and tagY to both clients, whatever p_a says
    assert real["received"]["sa"] == want((0, 1), ("tagX", "tagY"), ("1", "9"))
    assert real["received"]["ta"] == want((2, 3), ("tagX", "tagY"), ("1", "9"))
    # SQL92 held: the broker passes p_a = 9 only; the tag client drops tagZ itself
    assert real["received"]["sb"] == want((0, 1), TAGS, ("9",))
    assert real["received"]["tb"] == want((2, 3), ("tagX", "tagY"), ("9",))

    # the doctor's loss counts are the listeners' truth: produced (8 per tag) minus received
    for group, members in SQL_GROUPS.items():
        doc = real["doctor"][group]
        assert doc is not None, group
        got = Counter(tag for key, _ in members for _, tag, _ in real["received"][key])
        assert doc["lost_in_sample"] == {tag: 8 - got[tag] for tag in TAGS if got[tag] < 8}, group
        truth = {real["ids"][key]: dict(Counter(tag for _, tag, _ in real["received"][key])) for key, _ in members}
        assert doc["counts"]["received_by_client"] == truth, group
    sa = real["ids"]["sa"]
    assert real["doctor"][tagheld]["delivered_outside_own_filter"] == {sa: {"tagX": 2, "tagY": 2}}
    assert real["doctor"][sqlheld]["delivered_outside_own_filter"] == {}

    assert emulated == real


# --- 3. a listener hung before its first commit -------------------------------------------------

HUNG_G = name("fx-hung")


def play_hung(t: Target) -> dict[str, Any]:
    sc = t.scenario
    client = sc.start_consumer("H", HUNG_G, {HUNG_T: "*"}, instance_name=name("hung"), namesrv=t.namesrv,
                               consume_delay_ms=150_000)
    try:
        # read the client's own state, not its running info: that read makes it fetch (and
        # later commit) an offset, and the point is a group that never committed
        wait_until(lambda: sorted(q["queue_id"] for q in sc.assignments().get("H", []) if q["topic"] == HUNG_T)
                   == [0, 1], timeout=60, message=f"{t.label}: the hung client holds the topic")
        sc.produce(HUNG_T, "t", 10, queue_ids=[0, 1], namesrv=t.namesrv)
        wait_until(lambda: len(sc.received().get("H", [])) == 10, timeout=60,
                   message=f"{t.label}: all 10 in the listener")
        before = t.committed(HUNG_G, HUNG_T)
        # what the first read shows: the held queues and their backlog, though nothing was committed
        view = t.view(HUNG_G)
        progress = [(p.queue.queue_id, p.broker_offset, p.consumer_offset, p.offsets_from, p.owner)
                    for p in view.progress if p.queue.topic == HUNG_T]
        total = t.total_diff(HUNG_G)

        def blocked() -> list[dict[str, Any]] | None:
            view = t.view(HUNG_G)
            f = only(run_checks(view), "BLOCKED_QUEUE")
            if f is None:
                return None
            rows = [{k: v for k, v in r.items() if k != "idle_ms"} for r in f.evidence["queues"]
                    if r["topic"] == HUNG_T]
            lag = {p.queue.queue_id: p.lag for p in view.progress if p.queue.topic == HUNG_T}
            return [{**r, "lag": lag.get(r["queue_id"])} for r in rows]

        # over 60 s without a finished message; the rows settle once the client's offset store
        # has answered the running-info read (see test_real_hung_first_commit)
        wait_until(blocked, timeout=150, interval=5.0, message=f"{t.label}: BLOCKED_QUEUE")
        rows = wait_stable(blocked, duration=6.0, timeout=60, interval=2.0, accept=lambda b: b is not None,
                           message=f"{t.label}: BLOCKED_QUEUE settled")
        return {"client": client, "committed_before_the_doctor": before, "first_progress": progress,
                "first_total_diff": total, "blocked": rows}
    finally:
        sc.stop_consumer("H")


def test_listener_hung_before_first_commit_same_blocked_queue(targets: tuple[Target, Target]) -> None:
    real, emulated = on_both(targets, play_hung)
    client = real["client"]
    assert real["committed_before_the_doctor"] == [None, None]
    assert real["first_progress"] == [(q, 5, 0, "no_commit", client) for q in (0, 1)]
    assert real["first_total_diff"] == 10
    assert [(r["queue_id"], r["client"], r["lag"]) for r in real["blocked"]] == [(0, client, 5), (1, client, 5)]
    assert emulated == real
