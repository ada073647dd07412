"""Group views with 5.x proxies, over a fake back end: gRPC clients are listed by proxies only,
the brokers reveal proxies through the heartbeat-sync group, and a POP group has no queue
owners, no known in-flight count and no ownership findings."""

from __future__ import annotations

import asyncio
import dataclasses
import json

import pytest

from rmqctl import errors
from rmqctl.backends import Capabilities
from rmqctl.config import Config, resolve_connection, split_addresses
from rmqctl.doctor import run_checks, skipped_checks
from rmqctl.doctor.checks import OWNERSHIP_CODES
from rmqctl.model import (
    HEARTBEAT_SYNC_GROUP,
    HEARTBEAT_SYNC_TOPIC,
    ClientConnection,
    ConsumerConnection,
    ConsumerRunningInfo,
    ConsumeStats,
    GroupView,
    Message,
    MessageQueue,
    OffsetEntry,
    ProcessQueueInfo,
    QueueProgress,
    SampledMessage,
    TagSample,
    announced_proxy,
    client_sdk,
    parse_tag_expression,
)
from rmqctl.report import group_assignment, group_progress
from rmqctl.service import ClusterService
from tests.fake_source import FakeClock
from tests.unit.test_doctor import G
from tests.unit.test_service import A, B, TwoBrokers

PROXY = "10.0.0.9:8081"
GRPC_ID = "app-host@4242@0@4e1tsla2r"  # rocketmq-client-java's host@pid@index@sequence


class BehindAProxy(TwoBrokers):
    """Brokers that hold no channel of the group (its clients speak gRPC) and one proxy that lists
    them; the heartbeat-sync group lists the proxy's own client on each broker."""

    def __init__(self, capabilities: Capabilities | None = None) -> None:
        super().__init__(capabilities)
        self.proxy_down: errors.RmqctlError | None = None
        self.sync_host = "10.0.0.9"

    async def consumer_connection(self, address: str, group: str) -> ConsumerConnection:
        self.calls.append(f"consumer_connection {address} {group}")
        if group == HEARTBEAT_SYNC_GROUP and address in (A, B):
            return ConsumerConnection((ClientConnection(f"{self.sync_host}@DEFAULT", f"{self.sync_host}:54106",
                                                        "JAVA", 479),), {}, "CONSUME_PASSIVELY",
                                      "BROADCASTING", "CONSUME_FROM_LAST_OFFSET")
        if address in (A, B):
            raise errors.ConsumerNotOnline(206, "not online")
        if self.proxy_down is not None:
            raise self.proxy_down
        return ConsumerConnection((ClientConnection(GRPC_ID, "10.0.0.7:51000", "JAVA", 479),),
                                  {"T": parse_tag_expression("T", "*", 1)},
                                  "CONSUME_PASSIVELY", "CLUSTERING", "CONSUME_FROM_LAST_OFFSET")

    async def consume_stats(self, address: str, group: str) -> ConsumeStats:
        broker = "broker-a" if address == A else "broker-b"
        # POP: the pull offset equals the consumer offset, whatever is in flight
        return ConsumeStats({MessageQueue("T", broker, 0): OffsetEntry(10, 9, 9, 0)}, 2.0)


def view_with(backend: BehindAProxy, proxies: tuple[str, ...] = (PROXY,)) -> GroupView:
    return asyncio.run(ClusterService(backend, FakeClock(), proxies=proxies).group_view(G))


def test_a_grpc_group_is_online_through_its_proxy() -> None:
    view = view_with(BehindAProxy())
    assert view.online
    assert [(c.client_id, c.sdk, c.proxy, c.sdk_version) for c in view.connections] == [
        (GRPC_ID, "grpc", PROXY, None)]
    assert view.consume_type == "CONSUME_PASSIVELY" and view.consumption == "pop"
    named = next(p for p in view.proxies if p.address == PROXY)
    assert named.found_by == "named" and named.error is None
    assert not view.running_infos  # a proxy relays no running info: not asked of the brokers either


def test_without_a_proxy_the_group_is_offline_and_the_brokers_reveal_the_proxy() -> None:
    backend = BehindAProxy()
    backend.proxy_down = errors.ConnectionError("connection refused")
    view = view_with(backend, proxies=())
    assert not view.online
    (found,) = view.proxies
    assert (found.address, found.found_by, found.connection) == ("10.0.0.9:8080", "brokers", None)
    assert found.error is not None and "--proxy" in found.error
    assert not [k for k in view.errors if k.startswith("proxy:")]  # a guess that fails is no partial result


def test_a_revealed_proxy_is_read_on_the_default_port() -> None:
    view = view_with(BehindAProxy(), proxies=())
    assert [(c.client_id, c.proxy) for c in view.connections] == [(GRPC_ID, "10.0.0.9:8080")]


def test_a_named_proxy_that_fails_is_a_partial_result_and_replaces_the_guess_on_its_host() -> None:
    backend = BehindAProxy()
    backend.proxy_down = errors.ConnectionError("connection refused")
    view = view_with(backend)
    assert [p.address for p in view.proxies] == [PROXY]  # not also 10.0.0.9:8080
    assert isinstance(view.errors[f"proxy:{PROXY}"], errors.ConnectionError)


def test_a_back_end_that_reads_no_proxies_asks_none() -> None:
    backend = BehindAProxy(Capabilities(reads_proxies=False))
    view = view_with(backend)
    assert not view.proxies
    assert not [c for c in backend.calls if HEARTBEAT_SYNC_GROUP in c or PROXY in c]


def test_a_pop_group_has_no_owners_no_inflight_and_no_ownership_findings() -> None:
    view = view_with(BehindAProxy())
    assert view.total_inflight is None and "inflight" in view.unavailable
    assert all(p.pull_offset is None for p in view.progress)
    assert run_checks(view) == []
    assert set(OWNERSHIP_CODES) <= set(skipped_checks(view))
    progress = group_progress(view)
    assert {r["owner"] for r in progress["queues"]} == {"POP (1 client)"}
    assert progress["total_inflight"] is None
    assignment = group_assignment(view)
    assert assignment["unassigned_queues"] == [] and assignment["idle_clients"] == []
    assert len(assignment["pop_queues"]) == 2 and assignment["pop_owner"] == "POP (1 client)"


def test_a_group_with_offsets_on_its_pop_retry_topic_is_pop_without_clients() -> None:
    rows = (QueueProgress(MessageQueue("T", "broker-a", 0), 10, 4, 4, 0),
            QueueProgress(MessageQueue(f"%RETRY%{G}_T", "broker-a", 0), 3, 1, 1, 0))
    view = GroupView(G, (), {}, {}, rows)
    assert view.pop_retry_topics == (f"%RETRY%{G}_T",) and view.consumption == "pop"
    classic = GroupView(G, (), {}, {}, (rows[0], dataclasses.replace(rows[1], queue=MessageQueue(
        f"%RETRY%{G}", "broker-a", 0))))
    assert classic.pop_retry_topics == () and classic.consumption is None


@pytest.mark.parametrize(("client_id", "via_proxy", "sdk"), [
    ("app-host@4242@0@4e1tsla2r", True, "grpc"),
    ("10.0.0.1@4242#1234567890", True, "remoting"),  # a remoting client through a proxy
    ("10.0.0.1@instance@unit", True, "remoting"),
    ("app-host@4242@0@4e1tsla2r", False, "remoting"),  # a broker holds remoting channels only
])
def test_client_sdk(client_id: str, via_proxy: bool, sdk: str) -> None:
    assert client_sdk(client_id, via_proxy=via_proxy) == sdk


def test_proxy_addresses_from_the_option_or_the_context() -> None:
    assert split_addresses("a:8080; b:8081;", "--proxy") == ("a:8080", "b:8081")
    assert split_addresses(["a:8080", "a:8080"], "proxy") == ("a:8080",)
    with pytest.raises(errors.UsageError, match="takes host:port"):
        split_addresses("http://a:8080", "--proxy")
    config = Config(contexts={"prod": {"namesrv": "n:9876", "proxy": ["p:8080"]}})
    resolved = resolve_connection(namesrv=None, context="prod", timeout=None, config=config)
    assert resolved.proxies == ("p:8080",)
    named = resolve_connection(namesrv=None, context="prod", timeout=None, config=config, proxy="q:9090")
    assert named.proxies == ("q:9090",)
    with pytest.raises(errors.UsageError, match="dashboard"):
        resolve_connection(namesrv=None, context=None, timeout=None, config=Config(), proxy="q:9090",
                           dashboard="http://d:8082")


def pop_view_at(retry_max: int, at: int) -> GroupView:
    rows = (QueueProgress(MessageQueue("T", "broker-a", 0), 50, 50, None, 0),
            QueueProgress(MessageQueue(f"%RETRY%{G}_T", "broker-a", 0), retry_max, retry_max, None, 0))
    grpc = ClientConnection(GRPC_ID, "10.0.0.7:51000", "JAVA", 479, proxy=PROXY, sdk="grpc")
    return GroupView(G, (grpc,), {}, {}, rows, consume_type="CONSUME_PASSIVELY", sampled_at=at)


def test_redeliveries_through_a_pop_retry_topic_are_consume_failures() -> None:
    """A gRPC consumer that fails (or never ACKs) messages: the broker revives each into the POP
    retry topic of its topic; the classic %RETRY%<group> never moves."""
    before, after = pop_view_at(10, 1_000_000), pop_view_at(55, 1_040_000)
    (finding,) = [f for f in run_checks(after, before) if f.code == "CONSUME_FAILURES"]
    assert finding.evidence["retry_growth"] == 45
    assert finding.evidence["pop_retry_topics"] == [f"%RETRY%{G}_T"]
    assert f"%RETRY%{G}_T" in finding.detail
    # the redelivery traffic in POP's own terms: how many, over what interval, what happens next
    assert finding.title == f"Messages of {G} are delivered again: not ACKed in time"
    assert f"45 messages were written to %RETRY%{G}_T between the two samples (40 s apart)." in finding.detail
    assert "not ACKed within its invisible time" in finding.detail
    assert "count comes from the retry topics' offsets" in finding.detail
    assert f"%DLQ%{G}" in finding.detail and "retry policy" in finding.detail
    assert "RECONSUME_LATER" not in finding.fix and "invisible duration" in finding.fix
    assert [f.code for f in run_checks(pop_view_at(10, 1_040_000), before)] == []


def test_remoting_and_grpc_clients_in_one_group_are_mixed_consumption() -> None:
    remoting = ClientConnection("10.0.0.1@4242#1234567890", "10.0.0.1:50000", "JAVA", 479, sdk="remoting")
    grpc = ClientConnection(GRPC_ID, "10.0.0.7:51000", "JAVA", 479, proxy=PROXY, sdk="grpc")
    rows = (QueueProgress(MessageQueue("T", "broker-a", 0), 50, 50, 50, 0),)
    view = GroupView(G, (remoting, grpc), {}, {}, rows, consume_type="CONSUME_PASSIVELY")
    assert view.consumption == "mixed"
    (finding,) = [f for f in run_checks(view) if f.code == "MIXED_CONSUMPTION"]
    assert finding.severity == "error"
    # no running info of the remoting client: its offsets were not compared, the counts are unknown
    assert finding.evidence == {"remoting_clients": [remoting.client_id], "grpc_clients": [GRPC_ID],
                                "queues": [], "popped_past_client": None, "behind_client": None}
    assert "No remoting client's running info was read, so the offsets cannot be compared." in finding.detail
    assert f"1 remoting client ({remoting.client_id}) holds the group's queues and commits" in finding.detail
    assert f"1 gRPC client ({GRPC_ID}) pops from the same queues" in finding.detail
    alone = GroupView(G, (remoting,), {}, {}, rows, consume_type="CONSUME_PASSIVELY")
    assert alone.consumption == "push" and "MIXED_CONSUMPTION" not in [f.code for f in run_checks(alone)]


def mixed_view(*, sampled: bool) -> GroupView:
    """A remoting client R (tagB) holds T queues 0 and 1; a gRPC client (tagA) pops through a proxy.
    Queue 0: the broker's consumer offset 120, R's own 100 (POP moved it 20 ahead: offsets 100-119
    alternate tagA, tagB, so 10 are R's tagB). Queue 1: the broker's 40, R's own 50 (R consumed 10
    that POP will hand out again)."""
    remoting_id = "10.0.0.1@4242#1234567890"
    q0, q1 = MessageQueue("T", "broker-a", 0), MessageQueue("T", "broker-a", 1)
    remoting = ClientConnection(remoting_id, "10.0.0.1:50000", "JAVA", 479, sdk="remoting")
    grpc = ClientConnection(GRPC_ID, "10.0.0.7:51000", "JAVA", 479, proxy=PROXY, sdk="grpc")
    own = parse_tag_expression("T", "tagB", 1)
    info = ConsumerRunningInfo(remoting_id, {"PROP_CONSUME_TYPE": "CONSUME_PASSIVELY"}, (own,),
                               {q0: ProcessQueueInfo(commit_offset=100), q1: ProcessQueueInfo(commit_offset=50)})
    rows = (QueueProgress(q0, 130, 120, None, 0), QueueProgress(q1, 60, 40, None, 0))
    samples = {}
    if sampled:
        messages = tuple(SampledMessage(q0, o, "tagA" if o % 2 == 0 else "tagB") for o in range(98, 130))
        samples = {q0: TagSample(q0, 98, 130, messages)}
    return GroupView(G, (remoting, grpc), {}, {remoting_id: info}, rows, consume_type="CONSUME_PASSIVELY",
                     tag_samples=samples)


def test_mixed_consumption_counts_the_offsets_the_two_kinds_fight_over() -> None:
    (f,) = [f for f in run_checks(mixed_view(sampled=True)) if f.code == "MIXED_CONSUMPTION"]
    # what happens: duplicates, and the loss on restart
    assert "POP hands those messages out again (duplicates)" in f.detail
    assert ("a remoting client that restarts or takes the queue over in a rebalance starts from that offset, "
            "and those messages are never delivered to anyone") in f.detail
    # with counts
    assert ("the broker's offset is ahead of the holding remoting client's own on 1 queue, by 20 messages "
            "(T@broker-a queue 0: 120 against 10.0.0.1@4242#1234567890's 100)") in f.detail
    assert ("10 of those messages match the holding client's own subscription (T@broker-a queue 0: tagA 10, "
            "tagB 10), and are lost to it if it restarts now") in f.detail
    assert ("the holding remoting client has consumed beyond the broker's offset, by 10 messages "
            "(T@broker-a queue 1: 40 against 10.0.0.1@4242#1234567890's 50)") in f.detail
    assert (f.evidence["popped_past_client"], f.evidence["behind_client"]) == (20, 10)
    assert [(q["queue_id"], q.get("holder_wants")) for q in f.evidence["queues"]] == [(0, 10), (1, None)]
    assert "consumer groups of their own" in f.fix and "resetOffsetByTime" in f.fix
    assert "do not restart the remoting clients" in f.fix


def test_mixed_consumption_without_a_sample_says_the_tags_are_unknown() -> None:
    (f,) = [f for f in run_checks(mixed_view(sampled=False)) if f.code == "MIXED_CONSUMPTION"]
    assert "by 20 messages" in f.detail
    assert "No message sample was read, so their tags are unknown." in f.detail
    assert "holder_wants" not in f.evidence["queues"][0]


def left_view(*, sampled: bool) -> tuple[GroupView, GroupView]:
    """:func:`mixed_view` as the previous sample, then the remoting client gone: the gRPC client alone pops,
    and POP has moved queue 0's offset to 130 (past R's 100: offsets 100-129 alternate tagA, tagB, so 15 are
    tagB) and queue 1's to 60 (past R's 50)."""
    before = mixed_view(sampled=False)
    grpc = next(c for c in before.connections if c.sdk == "grpc")
    q0, q1 = MessageQueue("T", "broker-a", 0), MessageQueue("T", "broker-a", 1)
    rows = (QueueProgress(q0, 130, 130, None, 0), QueueProgress(q1, 60, 60, None, 0))
    samples = {}
    if sampled:
        samples = {q: TagSample(q, start, end, tuple(SampledMessage(q, o, "tagA" if o % 2 == 0 else "tagB")
                                                    for o in range(start, end)))
                   for q, start, end in ((q0, 98, 130), (q1, 28, 60))}
    now = GroupView(G, (grpc,), {}, {}, rows, consume_type="CONSUME_PASSIVELY", tag_samples=samples,
                    sampled_at=before.sampled_at + 45_000)
    return before, now


def test_remoting_clients_gone_while_pop_goes_on_are_mixed_consumption_with_what_they_lost() -> None:
    before, now = left_view(sampled=True)
    assert now.consumption == "pop"
    (f,) = [f for f in run_checks(now, before) if f.code == "MIXED_CONSUMPTION"]
    remoting_id = "10.0.0.1@4242#1234567890"
    assert f.title == f"The remoting clients of {G} left while gRPC (POP) clients pop its queues"
    assert (f.evidence["left_clients"], f.evidence["remoting_clients"], f.evidence["grpc_clients"]) == (
        [remoting_id], [], [GRPC_ID])
    # queue 0: 30 passed over, 15 tagB; queue 1: 10 passed over, 5 tagB
    assert (f.evidence["popped_past_client"], f.evidence["lost_if_restarted"]) == (40, 20)
    assert [(q["queue_id"], q["client_offset"], q["consumer_offset"], q["holder_wants"])
            for q in f.evidence["queues"]] == [(0, 100, 130, 15), (1, 50, 60, 5)]
    assert (f"POP has moved the offsets past 40 messages on 2 queues (T@broker-a queue 0: {remoting_id}'s 100 -> "
            f"130; T@broker-a queue 1: {remoting_id}'s 50 -> 60)") in f.detail
    assert "20 messages of them match the subscription the remoting client had" in f.detail
    assert "at most 20 are lost to it, fewer only by those it consumed itself" in f.detail
    assert "Do not restart the remoting clients" in f.fix
    # one sample alone shows nothing of the clients that left
    assert "MIXED_CONSUMPTION" not in [f.code for f in run_checks(now)]


def test_remoting_clients_gone_without_a_sample_give_only_a_bound() -> None:
    before, now = left_view(sampled=False)
    (f,) = [f for f in run_checks(now, before) if f.code == "MIXED_CONSUMPTION"]
    assert (f.evidence["popped_past_client"], f.evidence["lost_if_restarted"]) == (40, None)
    assert "up to 40 messages may be lost to it; how many it wanted is unknown" in f.detail
def announcement(proxy_id: str, offset: int, stored_ms: int) -> Message:
    body = json.dumps({"heartbeatType": "REGISTER", "clientId": GRPC_ID, "group": G,
                       "localProxyId": proxy_id}).encode()
    return Message(MessageQueue(HEARTBEAT_SYNC_TOPIC, "broker-a", 0), offset, 0, "", 0, stored_ms, "", "",
                   body=body)


def test_a_proxy_that_announced_its_remoting_port_is_read_there_not_on_the_guess() -> None:
    """A proxy sends each heartbeat of its clients to the heartbeat-sync topic, naming itself
    (``localProxyId``: address, remoting port, gRPC port): no need to guess port 8080."""
    backend = BehindAProxy()
    now_ms = int(FakeClock().now() * 1000)
    backend.messages = [announcement("10.0.0.9%8081%8082", 0, now_ms - 5_000),
                        announcement("10.0.0.7%9080%9081", 1, now_ms - 3_600_000),  # long gone
                        Message(MessageQueue(HEARTBEAT_SYNC_TOPIC, "broker-a", 0), 2, 0, "", 0, now_ms, "", "",
                                body=b"not json")]
    view = view_with(backend, proxies=())
    assert [(p.address, p.found_by) for p in view.proxies] == [("10.0.0.9:8081", "announced")]
    assert [(c.client_id, c.proxy) for c in view.connections] == [(GRPC_ID, "10.0.0.9:8081")]
    assert announced_proxy(b'{"localProxyId":"10.0.0.9%8081%8082"}') == "10.0.0.9:8081"
    assert announced_proxy(b'{"localProxyId":"10.0.0.9"}') is None and announced_proxy(b"\xff") is None
