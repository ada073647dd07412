"""rmqctl against a real 5.x proxy with real gRPC consumers (rocketmq-client-java): the proxy's
clients make a gRPC group online, each client says which SDK it speaks, and healthy POP groups
draw no finding, sampled again and again while messages flow.

What the consumers received is checked against the harness's own counts, never against rmqctl's
output; the expected client ids are the ones the SDK reports for itself."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

import pytest
from typer.testing import CliRunner

from rmqctl.backends.remoting import RemotingBackend
from rmqctl.cli.app import app
from rmqctl.clock import SystemClock
from rmqctl.connect import Target, open_source
from rmqctl.doctor import diagnose, run_checks, skipped_checks
from rmqctl.model import GroupView
from rmqctl.remoting.admin import AdminClient
from rmqctl.service import ClusterService
from tests.harness.proxycluster import GrpcClientsProcess, RealProxy, create_normal_topic
from tests.harness.realcluster import RealCluster, ScenarioClientsProcess, wait_stable

pytestmark = [pytest.mark.real_cluster, pytest.mark.timeout(600)]


def views(cluster: RealCluster, groups: list[str], proxies: tuple[str, ...] = ()) -> dict[str, GroupView]:
    async def read() -> dict[str, GroupView]:
        source = ClusterService(RemotingBackend(AdminClient([cluster.namesrv_addr], timeout=10)), proxies=proxies)
        try:
            return {g: await source.group_view(g) for g in groups}
        finally:
            await source.close()

    return asyncio.run(read())


def test_grpc_groups_are_online_through_the_proxy_and_healthy_pop_groups_draw_no_finding(
    real_cluster: RealCluster, real_proxy: RealProxy, grpc_clients: GrpcClientsProcess,
    rmq_names: Callable[[str], str],
) -> None:
    topic = rmq_names("PopTopic")
    create_normal_topic(real_cluster, topic, 2)
    push_group, simple_group = rmq_names("GPopPush"), rmq_names("GPopSimple")
    push = grpc_clients.start_push("push", push_group, {topic: "*"})
    simple = grpc_clients.start_simple("simple", simple_group, {topic: "*"}, invisible_s=10)
    base = grpc_clients.warm_up(topic)
    grpc_clients.send(topic, "ok", 10)
    grpc_clients.wait_until(lambda: all(int(c["acked"]) >= base[k]["acked"] + 10
                                        for k, c in grpc_clients.counts().items()),
                            timeout=120, interval=1.0, message=lambda: f"both acked: {grpc_clients.counts()}")
    groups = [push_group, simple_group]

    # without a proxy named, the brokers alone list no client of either group (rmqctl showed them
    # offline before); they list the proxy's host in the heartbeat-sync group, and the proxy
    # announced its remoting port in its heartbeat-sync messages: rmqctl reads it there
    def found_alone() -> dict[str, GroupView] | None:
        seen = views(real_cluster, groups)
        return seen if all(v.online for v in seen.values()) else None

    alone = grpc_clients.wait_until(found_alone, timeout=60, interval=2.0, message="the proxy found alone")
    assert [(p.address, p.found_by) for p in alone[push_group].proxies] == [(real_proxy.remoting_addr, "announced")]

    proxied = (real_proxy.remoting_addr,)
    for round_no in range(3):  # healthy groups stay clean while messages keep flowing
        grpc_clients.send(topic, "ok", 4)
        seen = views(real_cluster, groups, proxied)
        for group, client in ((push_group, push), (simple_group, simple)):
            view = seen[group]
            assert [(c.client_id, c.sdk, c.proxy, c.sdk_version) for c in view.connections] == [
                (client, "grpc", real_proxy.remoting_addr, None)]
            assert view.consumption == "pop"
            assert run_checks(view) == [], (round_no, group, run_checks(view))
            assert "ORPHANED_QUEUES" in skipped_checks(view)
            assert view.total_inflight is None  # POP commits no pull offset: unknown, never 0
        assert seen[push_group].consume_type == "CONSUME_PASSIVELY"
        assert seen[simple_group].consume_type == "CONSUME_ACTIVELY"

    runner = CliRunner()
    base_args = ["-n", real_cluster.namesrv_addr, "--proxy", real_proxy.remoting_addr]
    listed = runner.invoke(app, [*base_args, "group", "list", "-o", "json"])
    assert listed.exit_code == 0, listed.output
    rows = {g["group"]: g for g in json.loads(listed.stdout)["groups"]}
    assert rows[push_group]["clients"] == 1 and rows[push_group]["online"] is True
    assert rows[simple_group]["clients"] == 1 and rows[simple_group]["online"] is True

    shown = runner.invoke(app, [*base_args, "group", "assignment", simple_group, "-o", "json"])
    assert shown.exit_code == 0, shown.output
    doc = json.loads(shown.stdout)
    assert doc["unassigned_queues"] == [] and doc["idle_clients"] == []
    assert doc["pop_owner"] == "POP (1 client)"

    for _ in range(3):  # the doctor samples the POP retry topics too: still nothing, round after round
        grpc_clients.send(topic, "ok", 4)
        doctor = runner.invoke(app, [*base_args, "doctor", push_group, simple_group, "-o", "json"])
        assert doctor.exit_code == 0, doctor.output
        assert json.loads(doctor.stdout)["findings"] == []


def test_a_grpc_consumer_that_fails_messages_shows_consume_failures(
    real_cluster: RealCluster, real_proxy: RealProxy, grpc_clients: GrpcClientsProcess,
    rmq_names: Callable[[str], str],
) -> None:
    topic, group = rmq_names("PopFailTopic"), rmq_names("GPopFail")
    create_normal_topic(real_cluster, topic, 2)
    grpc_clients.start_push("failing", group, {topic: "*"}, fail_tag="bad")
    grpc_clients.warm_up(topic)
    grpc_clients.send(topic, "bad", 5)
    proxied = (real_proxy.remoting_addr,)

    def failed() -> int:
        return int(grpc_clients.counts()["failing"]["failed"])

    grpc_clients.wait_until(lambda: failed() >= 10, timeout=180, interval=1.0,
                            message=lambda: f"failed messages delivered again: {grpc_clients.counts()}")
    first = views(real_cluster, [group], proxied)[group]
    assert first.pop_retry_topics  # the redeliveries went through the group's POP retry topic
    seen = failed()
    grpc_clients.wait_until(lambda: failed() >= seen + 5, timeout=180, interval=1.0,
                            message=lambda: f"five more failures: {grpc_clients.counts()}")
    second = views(real_cluster, [group], proxied)[group]
    findings = {f.code: f for f in run_checks(second, first)}
    assert "CONSUME_FAILURES" in findings, [f.code for f in findings.values()]
    evidence = findings["CONSUME_FAILURES"].evidence
    assert evidence["retry_growth"] > 0 and evidence["pop_retry_topics"] == list(first.pop_retry_topics)
    # in POP's terms: how many redeliveries were written where between the two samples, and why
    detail = findings["CONSUME_FAILURES"].detail
    grown = evidence["retry_growth"]
    assert f"{grown} message{'s were' if grown != 1 else ' was'} written to " in detail
    assert any(t in detail for t in first.pop_retry_topics)
    assert "not ACKed within its invisible time" in detail and f"%DLQ%{group}" in detail
    assert findings["CONSUME_FAILURES"].title == f"Messages of {group} are delivered again: not ACKed in time"


def test_a_dead_pop_group_with_a_backlog_is_offline_not_healthy(
    real_cluster: RealCluster, real_proxy: RealProxy, grpc_clients: GrpcClientsProcess,
    rmq_names: Callable[[str], str],
) -> None:
    topic, group = rmq_names("PopDeadTopic"), rmq_names("GPopDead")
    create_normal_topic(real_cluster, topic, 2)
    grpc_clients.start_simple("simple", group, {topic: "*"}, invisible_s=10)
    grpc_clients.warm_up(topic)
    proxied = (real_proxy.remoting_addr,)
    live = views(real_cluster, [group], proxied)[group]
    assert live.online and live.consumption == "pop"
    grpc_clients.stop("simple")  # it tells the proxy it is going
    grpc_clients.send(topic, "late", 6)

    def dead() -> GroupView | None:
        view = views(real_cluster, [group], proxied)[group]
        return view if not view.online and view.total_diff >= 6 else None

    view = grpc_clients.wait_until(dead, timeout=60, interval=1.0, message="the proxy dropped the client")
    findings = {f.code: f for f in run_checks(view)}
    assert "OFFLINE_GROUP_BACKLOG" in findings and findings["OFFLINE_GROUP_BACKLOG"].evidence["total_diff"] >= 6


#: the groups' retryMaxTimes: a message gets RETRIES + 1 deliveries, then the DLQ
RETRIES = 5


def test_messages_cycling_towards_the_dlq_are_reported_before_they_reach_it(
    real_cluster: RealCluster, real_proxy: RealProxy, grpc_clients: GrpcClientsProcess,
    rmq_names: Callable[[str], str],
) -> None:
    topic = rmq_names("PopLoopTopic")
    create_normal_topic(real_cluster, topic, 2)
    no_ack_group, failing_group = rmq_names("GPopNoAck"), rmq_names("GPopFailing")
    for group in (no_ack_group, failing_group):
        real_cluster.mqadmin("updateSubGroup", "-c", real_cluster.cluster_name, "-g", group, "-r", str(RETRIES),
                             check=True)
    grpc_clients.start_simple("noack", no_ack_group, {topic: "*"}, skip_ack_tag="bad", invisible_s=10)
    grpc_clients.start_push("failing", failing_group, {topic: "*"}, fail_tag="bad")
    grpc_clients.warm_up(topic)
    grpc_clients.send(topic, "bad", 3)

    def attempts(consumer: str) -> int:
        return int(grpc_clients.counts()[consumer]["max_attempt"])

    grpc_clients.wait_until(lambda: attempts("noack") >= 3 and attempts("failing") >= 3, timeout=300,
                            interval=1.0, message=lambda: f"three deliveries each: {grpc_clients.counts()}")
    args = ["-n", real_cluster.namesrv_addr, "--proxy", real_proxy.remoting_addr]
    shown = CliRunner().invoke(app, [*args, "group", "show", no_ack_group, "-o", "json"])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["retry_policy"]["max_deliveries"] == RETRIES + 1

    doctor = CliRunner().invoke(app, [*args, "doctor", no_ack_group, failing_group, "-o", "json", "--fail-on", "never"])
    assert doctor.exit_code == 0, doctor.output
    after = grpc_clients.counts()
    found = {(f["group"], f["code"]): f for f in json.loads(doctor.stdout)["findings"]}
    for group, consumer in ((no_ack_group, "noack"), (failing_group, "failing")):
        assert (group, "DLQ_BACKLOG") not in found, found.keys()  # not there yet: reported before
        loop = found.get((group, "REPEATED_REDELIVERY"))
        assert loop is not None, (group, sorted(found))
        evidence = loop["evidence"]
        assert evidence["max_deliveries"] == RETRIES + 1 and evidence["messages"] <= 3
        # a copy is revived just before it is delivered: at most one ahead of what the client saw
        assert 3 <= evidence["highest_delivery"] <= int(after[consumer]["max_attempt"]) + 1
        assert {e["tag"] for e in evidence["examples"]} == {"bad"}

    # and they do reach it: the never-ACKed ones after RETRIES + 1 deliveries, as the finding said
    def in_dlq() -> GroupView | None:
        view = views(real_cluster, [no_ack_group], (real_proxy.remoting_addr,))[no_ack_group]
        return view if view.dlq_messages >= 3 else None

    grpc_clients.wait_until(in_dlq, timeout=300, interval=2.0,
                            message=lambda: f"the never-ACKed messages in the DLQ: {grpc_clients.counts()}")
    assert attempts("noack") == RETRIES + 1


def test_a_group_of_remoting_and_grpc_consumers_is_mixed_consumption_named_with_counts(
    real_cluster: RealCluster, real_proxy: RealProxy, grpc_clients: GrpcClientsProcess,
    scenario_clients: ScenarioClientsProcess, rmq_names: Callable[[str], str],
) -> None:
    topic, group = rmq_names("MixedTopic"), rmq_names("GMixed")
    create_normal_topic(real_cluster, topic, 2)
    remoting = scenario_clients.start_consumer("remoting", group, {topic: "tagB"}, consume_from="LAST")
    grpc = grpc_clients.start_push("grpc", group, {topic: "tagA"})
    proxied = (real_proxy.remoting_addr,)

    def both() -> GroupView | None:
        view = views(real_cluster, [group], proxied)[group]
        held = [mq for mq in view.assignments().get(remoting, ()) if mq.topic == topic]
        return view if {c.client_id for c in view.connections} == {remoting, grpc} and len(held) == 2 else None

    view = grpc_clients.wait_until(both, timeout=120, interval=1.0, message="both clients listed, queues held")
    assert view.consumption == "mixed"
    assert {c.client_id: c.sdk for c in view.connections} == {remoting: "remoting", grpc: "grpc"}
    doctor = CliRunner().invoke(app, ["-n", real_cluster.namesrv_addr, "--proxy", real_proxy.remoting_addr,
                                      "doctor", group, "-o", "json", "--fail-on", "never"])
    assert doctor.exit_code == 0, doctor.output
    (mixed,) = [f for f in json.loads(doctor.stdout)["findings"] if f["code"] == "MIXED_CONSUMPTION"]
    evidence = mixed["evidence"]
    assert (evidence["remoting_clients"], evidence["grpc_clients"]) == ([remoting], [grpc])
    # the remoting client's running info was read: the offsets were compared and counted, never unknown
    assert isinstance(evidence["popped_past_client"], int) and isinstance(evidence["behind_client"], int)
    assert f"1 remoting client ({remoting})" in mixed["detail"] and f"1 gRPC client ({grpc})" in mixed["detail"]


def test_proxies_are_found_on_their_announced_port_and_a_second_proxy_lists_the_firsts_clients(
    real_cluster: RealCluster, real_proxy: RealProxy, grpc_clients: GrpcClientsProcess,
    rmq_names: Callable[[str], str],
) -> None:
    topic, group = rmq_names("TwoProxyTopic"), rmq_names("GTwoProxies")
    create_normal_topic(real_cluster, topic, 2)
    client = grpc_clients.start_simple("simple", group, {topic: "*"}, invisible_s=10)

    # nothing named: the brokers list the proxy's host in the heartbeat-sync group, and the proxy
    # announced its remoting port (a free port here, never the default 8080) in its messages
    def announced() -> GroupView | None:
        view = views(real_cluster, [group])[group]
        return view if view.online else None

    view = grpc_clients.wait_until(announced, timeout=90, interval=2.0, message="the proxy announced itself")
    assert [(p.address, p.found_by) for p in view.proxies if p.connection] == [
        (real_proxy.remoting_addr, "announced")]
    assert [(c.client_id, c.proxy) for c in view.connections] == [(client, real_proxy.remoting_addr)]

    # a second proxy of the cluster holds no client itself, yet lists the first one's (heartbeat sync)
    with RealProxy(real_cluster, name="proxy2") as second:
        def synced() -> GroupView | None:
            seen = views(real_cluster, [group], (second.remoting_addr,))[group]
            listed = next(p.connection for p in seen.proxies if p.address == second.remoting_addr)
            return seen if listed is not None and [c.client_id for c in listed.connections] == [client] else None

        seen = grpc_clients.wait_until(synced, timeout=120, interval=2.0, message="the second proxy synced")
        assert [c.client_id for c in seen.connections] == [client]  # listed by both, shown once
        shown = CliRunner().invoke(app, ["-n", real_cluster.namesrv_addr, "--proxy", second.remoting_addr,
                                         "group", "show", group, "-o", "json"])
        assert shown.exit_code == 0, shown.output
        doc = json.loads(shown.stdout)
        assert doc["online"] is True and [c["client_id"] for c in doc["connections"]] == [client]
        assert {(p["address"], p["found_by"], tuple(p["clients"])) for p in doc["proxies"]} == {
            (second.remoting_addr, "named", (client,)), (real_proxy.remoting_addr, "announced", (client,))}


class _ActingClock(SystemClock):
    """The host's clock, except that the doctor's wait between its two samples is spent doing ``act``
    (what happens to the group meanwhile), however long that takes."""

    def __init__(self, act: Callable[[], None]) -> None:
        self.act: Callable[[], None] | None = act

    async def sleep(self, seconds: float) -> None:
        act, self.act = self.act, None
        if act is None:
            await asyncio.sleep(seconds)
        else:
            await asyncio.to_thread(act)


def test_a_remoting_client_stopped_in_a_mixed_group_loses_the_messages_pop_passed_over_and_doctor_counts_them(
    real_cluster: RealCluster, real_proxy: RealProxy, grpc_clients: GrpcClientsProcess,
    scenario_clients: ScenarioClientsProcess, rmq_names: Callable[[str], str],
) -> None:
    # the reported incident: a remoting consumer on tagB and a gRPC push consumer on tagA in one group; the
    # remoting consumer stops for about 45 s while both tags are produced, and after it restarts the tagB
    # messages of that time are never delivered to anyone (POP moved the shared offsets past them)
    topic, group = rmq_names("MixedLossTopic"), rmq_names("GMixedLoss")
    create_normal_topic(real_cluster, topic, 2)
    sc = scenario_clients
    remoting = sc.start_consumer("remoting", group, {topic: "tagB"}, consume_from="LAST",
                                 persist_offset_interval_ms=1000)
    grpc_clients.start_push("grpc", group, {topic: "tagA"})
    proxied = (real_proxy.remoting_addr,)

    def both(holder: str) -> GroupView | None:
        view = views(real_cluster, [group], proxied)[group]
        held = [mq for mq in view.assignments().get(holder, ()) if mq.topic == topic]
        return view if view.consumption == "mixed" and len(held) == 2 else None

    grpc_clients.wait_until(lambda: both(remoting), timeout=120, interval=1.0,
                            message="both clients listed, queues held")

    def place(messages: list[dict[str, Any]]) -> set[tuple[int, int]]:
        return {(int(m["queue_id"]), int(m["offset"])) for m in messages}

    def got_b() -> set[tuple[int, int]]:
        return {p for ms in sc.received().values() for p in place([m for m in ms if m.get("tag") == "tagB"])}

    # the remoting client consumes its tag and its commits settle. No tagA is sent while it runs: the two
    # clients share one offset per queue, and its pull scans past tagA messages (its filter skips them) and
    # commits past them, often before POP hands them out - the same loss the other way round, a race this
    # test does not need. The gRPC client's consumption shows below, where POP moves the offsets.
    before_b = place(sc.produce(topic, "tagB", 8))
    sc.wait_until(lambda: before_b <= got_b(), timeout=90, interval=1.0,
                  message=lambda: f"the remoting client to consume tagB: {len(got_b())} of {len(before_b)}")
    wait_stable(lambda: [(p.queue.queue_id, p.consumer_offset) for p in views(real_cluster, [group], proxied)[
        group].progress if p.queue.topic == topic], duration=6.0, timeout=60, interval=1.0,
                message="the shared offsets to settle")

    passed_b: set[tuple[int, int]] = set()

    def remoting_away() -> None:
        # between the doctor's two samples: the remoting client stops, and for 45 s both tags are produced
        sc.stop_consumer("remoting")
        for _ in range(3):
            passed_b.update(place(sc.produce(topic, "tagB", 4)))
            sc.produce(topic, "tagA", 4)
            time.sleep(15)

        # POP hands the tagA messages out and moves the shared offsets past the tagB ones
        def passed() -> bool:
            view = views(real_cluster, [group], proxied)[group]
            rows = [p for p in view.progress if p.queue.topic == topic]
            return bool(rows) and all(p.known and p.consumer_offset == p.broker_offset for p in rows)

        grpc_clients.wait_until(passed, timeout=60, interval=1.0, message="POP passed over the tagB messages")

    async def doctor() -> Any:
        async with open_source(Target(namesrv=real_cluster.namesrv_addr, proxy=real_proxy.remoting_addr)) as opened:
            return await diagnose(opened.source, [group], interval=30, clock=_ActingClock(remoting_away))

    found = {f.code: f for f in asyncio.run(doctor()).findings}
    assert len(passed_b) == 12 and "MIXED_CONSUMPTION" in found, sorted(found)
    evidence = found["MIXED_CONSUMPTION"].evidence
    assert (evidence["left_clients"], evidence["remoting_clients"]) == ([remoting], [])

    # the remoting consumer comes back (a new process of the same group) and consumes tagB from where POP left
    # the offsets: a tagB message sent after it is back arrives, the ones sent while it was away never do
    back = sc.start_consumer("back", group, {topic: "tagB"}, consume_from="LAST")
    grpc_clients.wait_until(lambda: both(back), timeout=120, interval=1.0,
                            message="the remoting consumer back, queues held")
    after = place(sc.produce(topic, "tagB", 4))
    sc.wait_until(lambda: after <= got_b(), timeout=90, interval=1.0, message="the messages sent after it came back")
    never = passed_b - got_b()
    # by the Java clients' own account: every tagB message sent while it was away is lost (nobody else wants
    # tagB); rmqctl counted the same messages from its sample of the offsets POP passed over
    assert never == passed_b, (sorted(never), sorted(passed_b))
    assert evidence["lost_if_restarted"] == len(never), found["MIXED_CONSUMPTION"].detail
    assert evidence["popped_past_client"] >= len(never)
    assert f"at most {len(never)} are lost to it" in found["MIXED_CONSUMPTION"].detail
