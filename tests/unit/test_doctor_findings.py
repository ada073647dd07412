"""Every finding code: its severity, what triggers it and what does not (both sides of each
threshold), its evidence and its place in the output — tables of small hand-built views.

Expected values come from docs/findings.md and RocketMQ's rules (a blocked queue is one idle for
*over* 60 s, a retry backlog is a warning *from* 1,000 messages …), never from the doctor's own
constants.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import pytest

from rmqctl.doctor import CODES, run_checks, skipped_checks
from rmqctl.doctor.context import and_list, are, backlog_text, expression_of, n_of
from rmqctl.model import (
    ConsumeStatus,
    GroupView,
    MessageQueue,
    ProcessQueueInfo,
    ProxyClients,
    QueueProgress,
    TopicOffset,
)
from tests.unit.doctor_views import (
    CONFIG_CLASS,
    DLQ,
    NOW,
    RETRY,
    ROOM_CLASS,
    A,
    B,
    C,
    client,
    codes,
    group,
    one,
    qids,
    qs,
    row,
    sub,
)


@dataclass(frozen=True)
class Case:
    """One row of a table: the situation in words, the view, and what the doctor must say."""

    case: str
    view: Callable[[], GroupView]
    #: None: the code must not be reported; else the severity it must have
    severity: str | None
    #: evidence fields that must have exactly these values
    evidence: dict[str, Any] | None = None
    now_ms: int | None = None
    previous: Callable[[], GroupView] | None = None


def check(code: str, c: Case) -> None:
    findings = run_checks(c.view(), c.previous() if c.previous else None, now_ms=c.now_ms)
    if c.severity is None:
        assert code not in codes(findings), c.case
        return
    f = one(findings, code)
    assert f.severity == c.severity, c.case
    assert f.group == "orders-consumer"
    for key, value in (c.evidence or {}).items():
        assert f.evidence[key] == value, f"{c.case}: evidence {key}"


def table(cases: list[Case]) -> Any:
    return pytest.mark.parametrize("c", cases, ids=[c.case for c in cases])


T = qs("T", 4)
S = sub("T")


# --- DUPLICATE_CLIENT_ID: error --------------------------------------------------------------------

@table([
    Case("two processes share one client id: error, with both addresses",
         lambda: group([client(A, [S], T[:2]), client(B, [S], T[2:])], {"T": T},
                       duplicate_clients={A: ("10.0.0.1:5000", "10.0.0.9:5000")}),
         "error", {"clients": {A: ["10.0.0.1:5000", "10.0.0.9:5000"]}}),
    Case("every client id is used by one process only: nothing",
         lambda: group([client(A, [S], T[:2]), client(B, [S], T[2:])], {"T": T}), None),
])
def test_duplicate_client_id(c: Case) -> None:
    check("DUPLICATE_CLIENT_ID", c)


# --- MIXED_CONSUMER_SETTINGS: warning --------------------------------------------------------------

@table([
    Case("one client BROADCASTING, the other CLUSTERING",
         lambda: group([client(A, [S], T[:2]), client(B, [S], T[2:], model="BROADCASTING")], {"T": T}),
         "warning", {"message_model": {A: "CLUSTERING", B: "BROADCASTING"}}),
    Case("one client pulls (CONSUME_ACTIVELY), the other is pushed",
         lambda: group([client(A, [S], T[:2], consume_type="CONSUME_ACTIVELY"), client(B, [S], T[2:])], {"T": T}),
         "warning", {"consume_type": {A: "CONSUME_ACTIVELY", B: "CONSUME_PASSIVELY"}}),
    Case("one client orderly, the other concurrent",
         lambda: group([client(A, [S], T[:2], orderly=True), client(B, [S], T[2:])], {"T": T}),
         "warning", {"consume_orderly": {A: True, B: False}}),
    Case("one client allocates by CONFIG, the other averagely",
         lambda: group([client(A, [S], T[:2], strategy=CONFIG_CLASS), client(B, [S], T[2:])], {"T": T}),
         "warning", {"strategy": {A: "CONFIG", B: "AVG"}}),
    Case("two clients configured identically: nothing",
         lambda: group([client(A, [S], T[:2]), client(B, [S], T[2:])], {"T": T}), None),
    Case("a single client has nobody to differ from: nothing",
         lambda: group([client(A, [S], T, orderly=True)], {"T": T}), None),
])
def test_mixed_consumer_settings(c: Case) -> None:
    check("MIXED_CONSUMER_SETTINGS", c)


def test_mixed_settings_names_only_the_settings_that_differ() -> None:
    v = group([client(A, [S], T[:2], orderly=True), client(B, [S], T[2:])], {"T": T})
    f = one(run_checks(v), "MIXED_CONSUMER_SETTINGS")
    assert list(f.evidence) == ["consume_orderly"]


# --- BLOCKED_QUEUE: error; over 60 s without consumption, or an orderly queue's lock --------------

def blocked(pq: ProcessQueueInfo, *, orderly: bool = False, consume_type: str = "CONSUME_PASSIVELY") -> GroupView:
    return group([client(A, [S], pq={T[0]: pq}, orderly=orderly, consume_type=consume_type)], {"T": T[:1]})


@table([
    Case("5 cached messages, last consumed 60.001 s ago: blocked",
         lambda: blocked(ProcessQueueInfo(cached_msg_count=5, last_consume_timestamp=NOW - 60_001)), "error",
         {"queues": [{"topic": "T", "broker": "broker-a", "queue_id": 0, "client": A, "reason": "no consumption",
                      "idle_ms": 60_001, "cached_msg_count": 5}]}),
    Case("last consumed exactly 60 s ago is not yet over 60 s",
         lambda: blocked(ProcessQueueInfo(cached_msg_count=5, last_consume_timestamp=NOW - 60_000)), None),
    Case("one cached message is enough",
         lambda: blocked(ProcessQueueInfo(cached_msg_count=1, last_consume_timestamp=NOW - 120_000)), "error"),
    Case("nothing cached: the client waits for messages, it is not stuck",
         lambda: blocked(ProcessQueueInfo(cached_msg_count=0, last_consume_timestamp=NOW - 120_000)), None),
    Case("never consumed anything yet (no timestamp): not judged",
         lambda: blocked(ProcessQueueInfo(cached_msg_count=5, last_consume_timestamp=0)), None),
    Case("a dropped queue of a concurrent consumer is being released: not blocked",
         lambda: blocked(ProcessQueueInfo(cached_msg_count=5, last_consume_timestamp=NOW - 120_000, dropped=True)),
         None),
    Case("a pull consumer manages its own queues: not judged",
         lambda: blocked(ProcessQueueInfo(cached_msg_count=5, last_consume_timestamp=NOW - 120_000),
                         consume_type="CONSUME_ACTIVELY"), None),
    Case("orderly consumer without its broker lock cannot consume",
         lambda: blocked(ProcessQueueInfo(locked=False), orderly=True), "error",
         {"queues": [{"topic": "T", "broker": "broker-a", "queue_id": 0, "client": A, "reason": "not locked"}]}),
    Case("orderly queue dropped after 3 failed unlocks",
         lambda: blocked(ProcessQueueInfo(locked=True, dropped=True, try_unlock_times=3), orderly=True), "error",
         {"queues": [{"topic": "T", "broker": "broker-a", "queue_id": 0, "client": A,
                      "reason": "unlock failed 3 times"}]}),
    Case("orderly queue dropped after 1 failed unlock",
         lambda: blocked(ProcessQueueInfo(locked=True, dropped=True, try_unlock_times=1), orderly=True), "error",
         {"queues": [{"topic": "T", "broker": "broker-a", "queue_id": 0, "client": A,
                      "reason": "unlock failed 1 times"}]}),
    Case("orderly queue dropped with no failed unlock yet: nothing",
         lambda: blocked(ProcessQueueInfo(locked=True, dropped=True, try_unlock_times=0), orderly=True), None),
    Case("orderly queue locked and still held: nothing",
         lambda: blocked(ProcessQueueInfo(locked=True, try_unlock_times=2), orderly=True), None),
    Case("orderly queue locked with cached messages idle for minutes is judged by its lock only",
         lambda: blocked(ProcessQueueInfo(locked=True, cached_msg_count=5, last_consume_timestamp=NOW - 600_000),
                         orderly=True), None),
])
def test_blocked_queue(c: Case) -> None:
    check("BLOCKED_QUEUE", c)


def never_committed(pq: ProcessQueueInfo, broker_offset: int, consumer_offset: int, *,
                    offsets_from: str = "no_commit", orderly: bool = False) -> GroupView:
    """One held queue whose row says the group has no committed offset for it (or, with
    ``offsets_from``, where else its offsets came from)."""
    p = QueueProgress(T[0], broker_offset, consumer_offset, None, 0, A, offsets_from)
    return group([client(A, [S], pq={T[0]: pq}, orderly=orderly)], {"T": T[:1]}, progress=[p])


@table([
    Case("no commit, 125,000 messages waiting, nothing consumed ever: blocked",
         lambda: never_committed(ProcessQueueInfo(cached_msg_count=1024), 125_000, 0), "error",
         {"queues": [{"topic": "T", "broker": "broker-a", "queue_id": 0, "client": A,
                      "reason": "never committed", "backlog": 125_000, "cached_msg_count": 1024}]}),
    Case("no commit, backlog counted from the min offset 40 up to 50",
         lambda: never_committed(ProcessQueueInfo(), 50, 40), "error",
         {"queues": [{"topic": "T", "broker": "broker-a", "queue_id": 0, "client": A,
                      "reason": "never committed", "backlog": 10, "cached_msg_count": 0}]}),
    Case("no commit and nothing beyond the min offset: the client waits for messages",
         lambda: never_committed(ProcessQueueInfo(), 40, 40), None),
    Case("no commit, last consumed 60.001 s ago: blocked",
         lambda: never_committed(ProcessQueueInfo(last_consume_timestamp=NOW - 60_001), 7, 0), "error"),
    Case("no commit, its listener stuck on its first messages for 61 s: never committed, idle time kept",
         lambda: never_committed(ProcessQueueInfo(cached_msg_count=5, last_consume_timestamp=NOW - 61_000), 7, 0),
         "error", {"queues": [{"topic": "T", "broker": "broker-a", "queue_id": 0, "client": A,
                               "reason": "never committed", "idle_ms": 61_000, "cached_msg_count": 5,
                               "backlog": 7}]}),
    Case("no commit, last consumed exactly 60 s ago: its first commit may still come",
         lambda: never_committed(ProcessQueueInfo(last_consume_timestamp=NOW - 60_000), 7, 0), None),
    Case("the same numbers from consume stats are ordinary lag, not a missing commit",
         lambda: never_committed(ProcessQueueInfo(), 7, 0, offsets_from="consume_stats"), None),
    Case("unknown offsets are no backlog to report",
         lambda: never_committed(ProcessQueueInfo(), 0, 0, offsets_from="unknown"), None),
    Case("a dropped queue is being released: not blocked",
         lambda: never_committed(ProcessQueueInfo(dropped=True), 7, 0), None),
])
def test_blocked_queue_never_committed(c: Case) -> None:
    check("BLOCKED_QUEUE", c)


def test_blocked_queue_text_names_the_client_the_queues_and_the_backlog() -> None:
    f = one(run_checks(never_committed(ProcessQueueInfo(cached_msg_count=1024), 125_000, 0)), "BLOCKED_QUEUE")
    assert f.detail.startswith(f"{A} holds T@broker-a queue 0, with 125000 messages waiting beyond an offset "
                               "the group never committed, none of them finished.")
    assert "consumerStatus -g orders-consumer -i <client id> -s" in f.fix and A in f.fix
    assert "resetOffsetByTime -g orders-consumer" in f.fix and "orderly" not in f.fix.lower()

    stuck = ProcessQueueInfo(cached_msg_count=2, last_consume_timestamp=NOW - 90_000)
    two = group([client(A, [S], pq={T[0]: stuck, T[1]: stuck}), client(B, [S], pq={T[3]: stuck})], {"T": T})
    f = one(run_checks(two, resampled=True), "BLOCKED_QUEUE")
    assert f.title == "3 queues of orders-consumer are blocked in their clients"
    assert f.detail.startswith(
        f"{A} holds T@broker-a queues 0 and 1, with 4 cached messages unconsumed for up to 90 s. "
        f"{B} holds T@broker-a queue 3, with 2 cached messages unconsumed for up to 90 s. ")
    assert f"{A} and {B}" in f.fix and "resetOffsetByTime" not in f.fix

    unlocked = group([client(A, [S], pq={T[0]: ProcessQueueInfo(locked=False)}, orderly=True)], {"T": T[:1]})
    f = one(run_checks(unlocked), "BLOCKED_QUEUE")
    assert "T@broker-a queue 0, orderly, without the broker lock" in f.detail
    assert "the lock goes 60 s without renewal" in f.fix


# --- ABANDONED_TOPIC_BACKLOG: warning with a backlog; a topic no online client subscribes ---------

U = qs("U", 2)


def left_behind(*rows: tuple[int, int] | None) -> GroupView:
    """A client of T online; U's rows (broker offset, consumer offset; None: unreadable) are
    marked as subscribed by no online client."""
    progress = [replace(row(mq, *r) if r else row(mq, 0, 0, known=False), subscribed=False)
                for mq, r in zip(U, rows, strict=False)]
    return group([client(A, [S], T)], {"T": T}, progress=[*(row(q, 5, 5, A) for q in T), *progress])


@table([
    Case("65 messages behind a topic nobody online subscribes: warning, per queue",
         lambda: left_behind((38, 5), (37, 5)), "warning",
         {"topic": "U", "backlog": 65, "unknown_diff_queues": 0, "online_clients": [A],
          "queues": [{"topic": "U", "broker": "broker-a", "queue_id": 0, "broker_offset": 38,
                      "consumer_offset": 5, "diff": 33},
                     {"topic": "U", "broker": "broker-a", "queue_id": 1, "broker_offset": 37,
                      "consumer_offset": 5, "diff": 32}]}),
    Case("one message is a backlog", lambda: left_behind((6, 5), (5, 5)), "warning", {"backlog": 1}),
    Case("offsets kept, nothing waits: information", lambda: left_behind((5, 5), (5, 5)), "info",
         {"backlog": 0}),
    Case("an unreadable queue is an unknown backlog, never none", lambda: left_behind((5, 5), None), "warning",
         {"backlog": 0, "unknown_diff_queues": 1}),
    Case("the same rows, subscribed: ordinary progress",
         lambda: group([client(A, [S], T)], {"T": T}, progress=[row(q, 5, 0, A) for q in T]), None),
])
def test_abandoned_topic_backlog(c: Case) -> None:
    check("ABANDONED_TOPIC_BACKLOG", c)


def test_abandoned_topic_text_names_the_topic_the_backlog_and_the_fix() -> None:
    f = one(run_checks(left_behind((38, 5), (37, 5))), "ABANDONED_TOPIC_BACKLOG")
    assert f.title == "65 messages wait in U, which no online client of orders-consumer subscribes"
    assert f.detail.startswith(f"orders-consumer has committed offsets for U (U@broker-a queues 0 and 1), but "
                               f"none of its online clients ({A}) subscribes it")
    assert "65 messages now wait there" in f.detail and "consumerProgress" in f.detail
    assert "start a client of the group that subscribes it" in f.fix and "consumes the 65 waiting messages" in f.fix
    unknown = one(run_checks(left_behind(None, None)), "ABANDONED_TOPIC_BACKLOG")
    assert unknown.title == "An unknown backlog waits in U, which no online client of orders-consumer subscribes"
    assert "unknown for 2 queues wait there" in unknown.detail


def test_blocked_queue_idle_time_is_measured_from_now_ms_when_given() -> None:
    v = blocked(ProcessQueueInfo(cached_msg_count=2, last_consume_timestamp=NOW - 1_000))
    assert "BLOCKED_QUEUE" not in codes(run_checks(v))
    f = one(run_checks(v, now_ms=NOW + 60_000), "BLOCKED_QUEUE")
    assert f.evidence["queues"][0]["idle_ms"] == 61_000


def test_blocked_queue_lists_every_client_in_client_order() -> None:
    stuck = ProcessQueueInfo(cached_msg_count=1, last_consume_timestamp=NOW - 90_000)
    v = group([client(B, [S], pq={T[1]: stuck}), client(A, [S], pq={T[0]: stuck, T[2]: ProcessQueueInfo()})],
              {"T": T[:3]})
    f = one(run_checks(v), "BLOCKED_QUEUE")
    assert [(q["client"], q["queue_id"]) for q in f.evidence["queues"]] == [(A, 0), (B, 1)]
    assert f.title.startswith("2 queues")


# --- OFFLINE_GROUP_BACKLOG: warning ----------------------------------------------------------------

def offline(*progress: tuple[int, int]) -> GroupView:
    return group([], {"T": T}, progress=[row(T[i], b, c) for i, (b, c) in enumerate(progress)], stored={})


@table([
    Case("no client online and 1 message waits on one queue",
         lambda: offline((10, 9)), "warning",
         {"total_diff": 1, "queues": [{"topic": "T", "broker": "broker-a", "queue_id": 0, "diff": 1}]}),
    Case("no client online, two queues wait 3 and 5: total 8, caught-up queue left out",
         lambda: offline((10, 7), (5, 5), (9, 4)), "warning",
         {"total_diff": 8, "queues": [{"topic": "T", "broker": "broker-a", "queue_id": 0, "diff": 3},
                                       {"topic": "T", "broker": "broker-a", "queue_id": 2, "diff": 5}]}),
    Case("no client online but nothing waits: nothing", lambda: offline((10, 10)), None),
    Case("no client online and a queue's offsets unreadable: an unknown backlog, never none",
         lambda: group([], {"T": T}, progress=[row(T[0], 10, 10), row(T[1], 0, 0, known=False)], stored={}),
         "warning", {"total_diff": 0, "queues": [],
                     "unknown_diff_queues": [{"topic": "T", "broker": "broker-a", "queue_id": 1}]}),
    Case("a client is online: not offline",
         lambda: group([client(A, [S], T)], {"T": T}, progress=[row(T[0], 10, 2, A)]), None),
])
def test_offline_group_backlog(c: Case) -> None:
    check("OFFLINE_GROUP_BACKLOG", c)


def test_offline_group_backlog_text_names_the_queues_and_the_fix() -> None:
    f = one(run_checks(offline((10, 7), (5, 5), (9, 4))), "OFFLINE_GROUP_BACKLOG")
    assert f.detail.startswith("No client of orders-consumer is connected, and T@broker-a queues 0 and 2 hold "
                               "8 unconsumed messages: nothing is consumed until a consumer starts")
    assert "mqadmin deleteSubscriptionGroup -g orders-consumer" in f.fix
    unknown = group([], {"T": T}, progress=[row(T[1], 0, 0, known=False)], stored={})
    f = one(run_checks(unknown), "OFFLINE_GROUP_BACKLOG")
    assert f.title == "orders-consumer has no online client and an unknown backlog"
    assert "the offsets of T@broker-a queue 1 could not be read" in f.detail


@pytest.mark.parametrize(("case", "versions", "proxies", "hinted"), [
    ("a 5.3.3 broker and no proxy read: gRPC clients may be invisible", {"broker-a": "V5_3_3"}, (), True),
    ("a 4.9.7 broker: no proxy exists to ask", {"broker-a": "V4_9_7"}, (), False),
    ("the brokers' release was not read: nothing claimed", {}, (), False),
    ("a proxy was read and lists nobody: the group is offline indeed", {"broker-a": "V5_3_3"},
     (ProxyClients("10.0.0.9:8080", "named"),), False),
    ("the proxy the brokers revealed did not answer: still unread, and said so", {"broker-a": "V5_3_3"},
     (ProxyClients("10.0.0.9:8080", "brokers", None, "connection refused"),), True),
])
def test_an_offline_group_on_5x_without_a_proxy_says_grpc_clients_may_be_unseen(
        case: str, versions: dict[str, str], proxies: tuple[ProxyClients, ...], hinted: bool) -> None:
    v = replace(offline((10, 7)), broker_versions=versions, proxies=proxies)
    f = one(run_checks(v), "OFFLINE_GROUP_BACKLOG")
    assert f.severity == "warning", case
    if not hinted:
        assert "--proxy" not in f.fix and "gRPC" not in f.detail, case
        assert "unread_proxy_brokers" not in f.evidence, case
        return
    assert f.detail.startswith("No broker lists a client of orders-consumer, and T@broker-a queue 0 holds 3 "
                               "unconsumed messages. The brokers run RocketMQ 5.x (broker-a V5_3_3) and no proxy "
                               "was read"), case
    assert "gRPC clients" in f.detail and "connect to a rocketmq-proxy, never to a broker" in f.detail, case
    assert f.fix.startswith("Read the group through its proxies: rmqctl --proxy host:port doctor orders-consumer"), case
    assert "8080 by default" in f.fix and "If no proxy lists a client either, start a consumer" in f.fix, case
    assert "mqadmin deleteSubscriptionGroup" in f.fix, case
    assert f.evidence["unread_proxy_brokers"] == {"broker-a": "V5_3_3"}, case
    for p in proxies:
        assert f"(tried: {p.address} ({p.error}))" in f.detail, case


# --- RETRY_BACKLOG: info, a warning from 1,000 messages --------------------------------------------

def retrying(*diffs: int) -> GroupView:
    rq = qs(RETRY, len(diffs))
    return group([client(A, [S], T + rq)], {"T": T, RETRY: rq},
                 progress=[row(q, 5_000 + d, 5_000, A) for q, d in zip(rq, diffs, strict=True)])


@table([
    Case("1 message waits in the retry topic: info", lambda: retrying(1), "info", {"total_diff": 1}),
    Case("999 messages is still information", lambda: retrying(999), "info", {"total_diff": 999}),
    Case("1,000 messages is a warning", lambda: retrying(1_000), "warning", {"total_diff": 1_000}),
    Case("600 and 400 on two retry queues add up to a warning", lambda: retrying(600, 400), "warning",
         {"total_diff": 1_000}),
    Case("the retry topic is caught up: nothing", lambda: retrying(0), None),
    Case("lag on an ordinary topic is not retry traffic",
         lambda: group([client(A, [S], T)], {"T": T}, progress=[row(T[0], 9_000, 10, A)]), None),
])
def test_retry_backlog(c: Case) -> None:
    check("RETRY_BACKLOG", c)


def test_retry_backlog_lists_the_waiting_queues_only() -> None:
    f = one(run_checks(retrying(3, 0, 2)), "RETRY_BACKLOG")
    assert f.evidence["queues"] == [{"topic": RETRY, "broker": "broker-a", "queue_id": 0, "diff": 3},
                                    {"topic": RETRY, "broker": "broker-a", "queue_id": 2, "diff": 2}]


# --- DLQ_BACKLOG: warning --------------------------------------------------------------------------

def with_dlq(*ranges: tuple[int, int]) -> GroupView:
    dlq = tuple(TopicOffset(MessageQueue(DLQ, "broker-a", i), lo, hi, 0) for i, (lo, hi) in enumerate(ranges))
    return group([client(A, [S], T)], {"T": T}, dlq=dlq)


@table([
    Case("one message in the DLQ", lambda: with_dlq((0, 1)), "warning",
         {"messages": 1, "queues": [{"topic": DLQ, "broker": "broker-a", "queue_id": 0, "messages": 1}]}),
    Case("messages 4 to 9 kept on one DLQ queue, 2 on another: 7", lambda: with_dlq((4, 9), (0, 2)), "warning",
         {"messages": 7}),
    Case("an empty DLQ (min = max offset): nothing", lambda: with_dlq((5, 5)), None),
    Case("no DLQ topic at all: nothing", lambda: with_dlq(), None),
])
def test_dlq_backlog(c: Case) -> None:
    check("DLQ_BACKLOG", c)


# --- LAG_NOT_ADVANCING: error; two samples, messages waiting at both, consumer offset did not move ---

def sampled(broker: int, consumer: int, *, at: int = NOW, known: bool = True, cached: int = 0) -> GroupView:
    return group([client(A, [S], T[:1], pq={T[0]: ProcessQueueInfo(cached_msg_count=cached)})], {"T": T[:1]},
                 progress=[row(T[0], broker, consumer, A, known=known)], sampled_at=at)


@table([
    Case("30 s apart, 5 new messages arrived and none was consumed",
         lambda: sampled(105, 40, at=NOW + 30_000), "error",
         {"interval_seconds": 30.0,
          "queues": [{"topic": "T", "broker": "broker-a", "queue_id": 0, "broker_offset": [100, 105],
                      "consumer_offset": [40, 40], "diff": 65, "owner": A, "verdict": "STALLED"}]},
         previous=lambda: sampled(100, 40)),
    Case("one new message is enough", lambda: sampled(101, 40, at=NOW + 30_000), "error",
         previous=lambda: sampled(100, 40)),
    Case("normal consumption: new messages and the consumer offset moved on (lag still > 0)",
         lambda: sampled(105, 41, at=NOW + 30_000), None, previous=lambda: sampled(100, 40)),
    Case("consumer caught up with everything that arrived", lambda: sampled(105, 105, at=NOW + 30_000), None,
         previous=lambda: sampled(100, 40)),
    Case("no new message: a backlog nobody consumes is stuck as well (rmqctl.stuck, as analyze stuck says)",
         lambda: sampled(100, 40, at=NOW + 30_000), "error",
         {"queues": [{"topic": "T", "broker": "broker-a", "queue_id": 0, "broker_offset": [100, 100],
                      "consumer_offset": [40, 40], "diff": 60, "owner": A, "verdict": "STALLED"}]},
         previous=lambda: sampled(100, 40)),
    Case("caught up at the first sample: the new messages may have come just before the second",
         lambda: sampled(105, 100, at=NOW + 30_000), None, previous=lambda: sampled(100, 100)),
    Case("no new message and nothing waiting: idle", lambda: sampled(100, 100, at=NOW + 30_000), None,
         previous=lambda: sampled(100, 100)),
    Case("the consumer offset went back: a rewind, not a frozen queue",
         lambda: sampled(105, 30, at=NOW + 30_000), None, previous=lambda: sampled(100, 40)),
    Case("a single sample cannot tell", lambda: sampled(105, 40), None),
])
def test_lag_not_advancing(c: Case) -> None:
    check("LAG_NOT_ADVANCING", c)


def retry_sampled(broker: int, consumer: int, *, at: int = NOW) -> GroupView:
    retry = qs(RETRY, 1)
    return group([client(A, [S, sub(RETRY)], [*T[:1], *retry])], {"T": T[:1], RETRY: retry},
                 progress=[row(retry[0], broker, consumer, A)], sampled_at=at)


def test_lag_not_advancing_gives_each_queue_the_shared_verdict() -> None:
    # rmqctl.stuck: frozen under an owner is STALLED, under nobody or a client not subscribing the topic
    # ORPHANED; a %RETRY% queue within its allowance of 10 is caught up, past it at both samples STALLED at once
    # (the job says the same whenever the run began: no retry queue waits out a grace period)
    def verdicts(after: GroupView, before: GroupView) -> list[Any]:
        found = [f for f in run_checks(after, before) if f.code == "LAG_NOT_ADVANCING"]
        return [q["verdict"] for f in found for q in f.evidence["queues"]]

    def owned(owner: str | None, subscribed: bool, broker: int, at: int = NOW) -> GroupView:
        held = T[:1] if owner is not None else []
        return group([client(A, [S] if subscribed else [sub("Other")], held)], {"T": T[:1]},
                     progress=[row(T[0], broker, 40, owner)], sampled_at=at)

    assert verdicts(owned(A, True, 105, NOW + 30_000), owned(A, True, 100)) == ["STALLED"]
    assert verdicts(owned(None, True, 105, NOW + 30_000), owned(None, True, 100)) == ["ORPHANED"]
    assert verdicts(owned(A, False, 105, NOW + 30_000), owned(A, False, 100)) == ["ORPHANED"]
    assert verdicts(retry_sampled(110, 100, at=NOW + 30_000), retry_sampled(105, 100)) == []
    # within its allowance at the first sample: the run starts at the second, one look is not a frozen run
    assert verdicts(retry_sampled(111, 100, at=NOW + 30_000), retry_sampled(105, 100)) == []
    assert verdicts(retry_sampled(112, 100, at=NOW + 30_000), retry_sampled(111, 100)) == ["STALLED"]


def test_lag_not_advancing_interval_is_later_minus_earlier_sample() -> None:
    f = one(run_checks(sampled(110, 40, at=NOW + 45_000), sampled(100, 40, at=NOW + 5_000)), "LAG_NOT_ADVANCING")
    assert f.evidence["interval_seconds"] == 40.0
    assert "40 s apart" in f.detail


def test_lag_not_advancing_skips_queues_new_in_the_second_sample() -> None:
    before = group([client(A, [S], T[:1])], {"T": T[:1]}, progress=[row(T[0], 100, 40, A)])
    after = group([client(A, [S], T[:2])], {"T": T[:2]}, sampled_at=NOW + 30_000,
                  progress=[row(T[0], 100, 100, A), row(T[1], 50, 0, A)])
    assert "LAG_NOT_ADVANCING" not in codes(run_checks(after, before))


# --- CONSUME_FAILURES: warning ---------------------------------------------------------------------

def failing(status: ConsumeStatus, *, retry: tuple[int, int] | None = None, at: int = NOW) -> GroupView:
    rq = qs(RETRY, 1)
    progress = [row(rq[0], retry[1], retry[1], A)] if retry else []
    return group([client(A, [S], T + rq, status={"T": status})], {"T": T, RETRY: rq}, progress=progress,
                 sampled_at=at)


@table([
    Case("the client reports failed consumptions per second",
         lambda: failing(ConsumeStatus(consume_ok_tps=2.0, consume_failed_tps=0.5)), "warning"),
    Case("the client reports failed messages over the last hour only",
         lambda: failing(ConsumeStatus(consume_failed_msgs=1)), "warning"),
    Case("everything consumed fine: nothing", lambda: failing(ConsumeStatus(consume_ok_tps=9.0)), None),
    Case("between two samples 12 messages were written to the retry topic",
         lambda: failing(ConsumeStatus(), retry=(0, 112), at=NOW + 30_000), "warning",
         {"clients": [], "retry_growth": 12, "retry_messages_written": 112, "retry_topic": RETRY},
         previous=lambda: failing(ConsumeStatus(), retry=(0, 100))),
    Case("the retry topic did not grow between two samples: nothing",
         lambda: failing(ConsumeStatus(), retry=(0, 100), at=NOW + 30_000), None,
         previous=lambda: failing(ConsumeStatus(), retry=(0, 100))),
])
def test_consume_failures(c: Case) -> None:
    check("CONSUME_FAILURES", c)


def test_consume_failures_evidence_names_the_client_its_rates_and_queues() -> None:
    v = failing(ConsumeStatus(consume_ok_tps=2.004, consume_failed_tps=0.5, consume_failed_msgs=30))
    f = one(run_checks(v), "CONSUME_FAILURES")
    assert f.evidence["clients"] == [{
        "client": A, "consume_ok_tps": 2.0, "consume_failed_tps": 0.5, "consume_failed_msgs": 30,
        "topics": {"T": {"consume_ok_tps": 2.0, "consume_failed_tps": 0.5, "consume_failed_msgs": 30}},
        "queues": [{"topic": "T", "broker": "broker-a", "queue_id": i} for i in range(4)],
        "orderly": False,
    }]
    assert f.evidence["retry_growth"] is None  # one sample: the growth is unknown, not 0
    assert A in f.detail


def failing_with_backlog(*, orderly: bool = False) -> GroupView:
    """A holds T queues 0-1 (5 and 3 messages waiting) and fails 30 messages of T in the last hour;
    4 failed messages wait in the retry topic, 2 sit in the DLQ."""
    rq = qs(RETRY, 1)
    status = {"T": ConsumeStatus(consume_ok_tps=2.0, consume_failed_tps=0.5, consume_failed_msgs=30)}
    return group([client(A, [S], T[:2] + rq, status=status, orderly=orderly), client(B, [S], T[2:])],
                 {"T": T, RETRY: rq},
                 progress=[row(T[0], 15, 10, A), row(T[1], 13, 10, A), row(T[2], 9, 9, B), row(T[3], 9, 9, B),
                           row(rq[0], 10, 6, A)],
                 dlq=(TopicOffset(MessageQueue(DLQ, "broker-a", 0), 0, 2, 0),))


def test_consume_failures_text_stands_alone() -> None:
    """Which client, how many failures in what window and where the count comes from, which queues
    and how much waits there, the retry topic and the DLQ with what they hold, the fix."""
    f = one(run_checks(failing_with_backlog()), "CONSUME_FAILURES")
    assert f.title == f"{A} of orders-consumer fails to consume messages of T"
    assert (f"{A}'s running info (its consume statistics) counts 30 failed consumptions in the last hour "
            f"(0.5 failed and 2 consumed per second over the last minute) on T, where it holds T@broker-a "
            f"queues 0 and 1 (8 messages waiting).") in f.detail
    assert B not in f.detail
    assert f"the client writes it to {RETRY}" in f.detail
    assert f"after maxReconsumeTimes failures (16 by default) moves it to {DLQ}" in f.detail
    assert f"Now 4 messages wait in {RETRY} and 2 messages sit in {DLQ}." in f.detail
    assert "RECONSUME_LATER" in f.fix and "setMaxReconsumeTimes" in f.fix
    assert "rmqctl dlq replay orders-consumer" in f.fix
    assert qids(f.evidence["queues"]) == [("T", "broker-a", 0), ("T", "broker-a", 1)]
    assert [(q["client"], q["diff"]) for q in f.evidence["queues"]] == [(A, 5), (A, 3)]
    assert (f.evidence["retry_waiting"], f.evidence["dlq_topic"], f.evidence["dlq_messages"],
            f.evidence["failed_msgs_window"]) == (4, DLQ, 2, "1h")


def test_consume_failures_of_an_orderly_client_name_no_retry_topic_and_no_dlq() -> None:
    f = one(run_checks(failing_with_backlog(orderly=True)), "CONSUME_FAILURES")
    assert "T@broker-a queues 0 and 1 (8 messages waiting)" in f.detail
    assert "SUSPEND_CURRENT_QUEUE_A_MOMENT" in f.detail and "retries it a second later" in f.detail
    assert "%RETRY%" not in f.detail and "%DLQ%" not in f.detail and "dead-letter" not in f.detail
    assert f.evidence["dlq_topic"] is None
    assert "orderly listener" in f.fix and "RECONSUME_LATER" not in f.fix


def test_a_retry_topic_without_offsets_has_an_unknown_backlog_not_zero() -> None:
    v = failing(ConsumeStatus(consume_failed_msgs=3))
    f = one(run_checks(v), "CONSUME_FAILURES")
    assert f.evidence["retry_waiting"] is None
    assert f"the backlog of {RETRY} is unknown" in f.detail and f"0 messages wait in {RETRY}" not in f.detail


def test_retry_growth_says_how_many_in_what_interval() -> None:
    f = one(run_checks(failing(ConsumeStatus(), retry=(0, 112), at=NOW + 30_000),
                       failing(ConsumeStatus(), retry=(0, 100))), "CONSUME_FAILURES")
    assert f"12 messages were written to {RETRY} between the two samples (30 s apart)." in f.detail
    assert f.evidence["interval_seconds"] == 30


# --- QUEUE_HELD_TWICE: error -----------------------------------------------------------------------

@table([
    Case("two clients of a CLUSTERING group both hold queue 1",
         lambda: group([client(A, [S], T[:2]), client(B, [S], T[1:])], {"T": T},
                       progress=[row(T[1], 9, 4)]),
         "error", {"queues": [{"topic": "T", "broker": "broker-a", "queue_id": 1, "clients": [A, B], "diff": 5}]}),
    Case("every queue held once: nothing",
         lambda: group([client(A, [S], T[:2]), client(B, [S], T[2:])], {"T": T}), None),
    Case("BROADCASTING: every client holds every queue by design",
         lambda: group([client(A, [S], T, model="BROADCASTING"), client(B, [S], T, model="BROADCASTING")],
                       {"T": T}, model="BROADCASTING"), None),
])
def test_queue_held_twice(c: Case) -> None:
    # the held-back rule (rebalance in progress) does not apply to an orderly-free AVG group when
    # the overlap is reported with resampled=True; here the plain verdict is checked
    findings = run_checks(c.view(), resampled=True)
    if c.severity is None:
        assert "QUEUE_HELD_TWICE" not in codes(findings), c.case
        return
    f = one(findings, "QUEUE_HELD_TWICE")
    assert f.severity == c.severity
    assert f.evidence == c.evidence


# --- IDLE_CONSUMERS: warning -----------------------------------------------------------------------

@table([
    Case("2 clients, 1 queue: one client holds nothing",
         lambda: group([client(A, [S], T[:1]), client(B, [S])], {"T": T[:1]}), "warning",
         {"topic": "T", "idle_clients": [B], "queues": 1, "clients": 2}),
    Case("3 clients, 2 queues: the third is idle",
         lambda: group([client(A, [S], T[:1]), client(B, [S], T[1:2]), client(C, [S])], {"T": T[:2]}),
         "warning", {"idle_clients": [C], "queues": 2, "clients": 3}),
    Case("2 clients, 2 queues: each holds one",
         lambda: group([client(A, [S], T[:1]), client(B, [S], T[1:2])], {"T": T[:2]}), None),
    Case("BROADCASTING clients are never idle in this sense",
         lambda: group([client(A, [S], T[:1], model="BROADCASTING"), client(B, [S], model="BROADCASTING")],
                       {"T": T[:1]}, model="BROADCASTING"), None),
])
def test_idle_consumers(c: Case) -> None:
    check("IDLE_CONSUMERS", c)


def test_idle_consumers_says_why_when_queues_suffice() -> None:
    # 4 queues for 2 clients, yet B holds none: not the queue count; AVG gives B queues 2 and 3
    v = group([client(A, [S], T), client(B, [S])], {"T": T})
    f = one(run_checks(v, resampled=True), "IDLE_CONSUMERS")
    assert f.evidence["idle_clients"] == [B]
    assert "because its own strategy computes queues for it that it does not hold" in f.detail
    v2 = group([client(A, [S], T[:1]), client(B, [S])], {"T": T[:1]})
    assert "1 readable queue for 2 clients" in one(run_checks(v2), "IDLE_CONSUMERS").detail


def test_idle_consumers_one_finding_per_topic_in_topic_order() -> None:
    u = qs("U", 1)
    su = sub("U")
    v = group([client(A, [S, su], T[:1] + u), client(B, [S, su])], {"T": T[:1], "U": u})
    found = [f for f in run_checks(v) if f.code == "IDLE_CONSUMERS"]
    assert [f.evidence["topic"] for f in found] == ["T", "U"]


# --- ORPHANED_QUEUES: error, a warning when no message waits ---------------------------------------

def orphan(diff: int | None, topic_queues: list[MessageQueue] = T, **kw: Any) -> GroupView:
    progress = [row(T[3], 50 + (diff or 0), 50, known=diff is not None)]
    return group([client(A, [S], T[:2]), client(B, [S], T[2:3])], {"T": topic_queues}, progress=progress, **kw)


@table([
    Case("queue 3 is held by nobody and 1 message waits on it: error",
         lambda: orphan(1), "error",
         {"queues": [{"topic": "T", "broker": "broker-a", "queue_id": 3, "diff": 1}], "total_diff": 1,
          "unknown_diff_queues": []}),
    Case("held by nobody but nothing waits: warning",
         lambda: orphan(0), "warning", {"total_diff": 0}),
    Case("held by nobody and its lag could not be read: error (unknown is never milder)",
         lambda: orphan(None), "error",
         {"queues": [{"topic": "T", "broker": "broker-a", "queue_id": 3, "diff": None}], "total_diff": 0,
          "unknown_diff_queues": [{"topic": "T", "broker": "broker-a", "queue_id": 3}]}),
    Case("no client online: that is OFFLINE_GROUP_BACKLOG's case", lambda: orphan(5, online=[]), None),
    Case("a client's own report is missing: nobody can tell who holds what",
         lambda: orphan(5, errors={"client:" + B: RuntimeError("timeout")}), None),
])
def test_orphaned_queues(c: Case) -> None:
    findings = run_checks(c.view(), resampled=True)
    if c.severity is None:
        assert "ORPHANED_QUEUES" not in codes(findings), c.case
        return
    f = one(findings, "ORPHANED_QUEUES")
    assert f.severity == c.severity, c.case
    for key, value in (c.evidence or {}).items():
        assert f.evidence[key] == value, c.case


def test_a_new_groups_retry_queue_without_an_offset_is_not_orphaned() -> None:
    rq = qs(RETRY, 1)
    v = group([client(A, [S], T)], {"T": T, RETRY: rq})
    assert "ORPHANED_QUEUES" not in codes(run_checks(v))
    # once an offset exists for it, a retry queue nobody holds is orphaned like any other
    # (the first sample calls that a rebalance gap; the second reports it as it stands)
    v2 = group([client(A, [S], T)], {"T": T, RETRY: rq}, progress=[row(rq[0], 3, 1)])
    assert codes(run_checks(v2)) == ["RETRY_BACKLOG", "REBALANCE_IN_PROGRESS"]
    f = one(run_checks(v2, resampled=True), "ORPHANED_QUEUES")
    assert qids(f.evidence["queues"]) == [(RETRY, "broker-a", 0)] and f.severity == "error"


def test_orphaned_queues_of_a_topic_only_the_broker_keeps() -> None:
    # no client subscribes U any more, but the broker's table still holds it: its queues are orphaned
    u = qs("U", 1)
    v = group([client(A, [S], T)], {"T": T, "U": u}, stored={"broker-a": {"T": S, "U": sub("U")}},
              progress=[row(u[0], 10, 10)])
    f = one(run_checks(v), "ORPHANED_QUEUES")
    assert qids(f.evidence["queues"]) == [("U", "broker-a", 0)] and f.severity == "warning"


# --- UNEVEN_ALLOCATION: warning --------------------------------------------------------------------

@table([
    Case("AVG over 4 queues and 2 clients gives 2 each; A holds 3",
         lambda: group([client(A, [S], T[:3]), client(B, [S], T[3:])], {"T": T}), "warning",
         {"topic": "T", "clients": {
             A: {"holds": [{"topic": "T", "broker": "broker-a", "queue_id": i} for i in range(3)],
                 "expected": [{"topic": "T", "broker": "broker-a", "queue_id": i} for i in range(2)]},
             B: {"holds": [{"topic": "T", "broker": "broker-a", "queue_id": 3}],
                 "expected": [{"topic": "T", "broker": "broker-a", "queue_id": i} for i in (2, 3)]}}}),
    Case("AVG's own split (A: 0-1, B: 2-3): nothing",
         lambda: group([client(A, [S], T[:2]), client(B, [S], T[2:])], {"T": T}), None),
    Case("the right counts but swapped queues are still uneven",
         lambda: group([client(A, [S], T[2:]), client(B, [S], T[:2])], {"T": T}), "warning"),
    Case("CONFIG: each client's configured list is its own, so nothing can be recomputed: nothing",
         lambda: group([client(A, [S], T[:3], strategy=CONFIG_CLASS), client(B, [S], T[3:], strategy=CONFIG_CLASS)],
                       {"T": T}), None),
    Case("MACHINE_ROOM: the clients' rooms are not in their reports: nothing",
         lambda: group([client(A, [S], T[:3], strategy=ROOM_CLASS), client(B, [S], T[3:], strategy=ROOM_CLASS)],
                       {"T": T}), None),
    Case("a client's report is missing: nothing",
         lambda: group([client(A, [S], T[:3]), client(B, [S], T[3:])], {"T": T},
                       errors={"client:" + B: RuntimeError("timeout")}), None),
])
def test_uneven_allocation(c: Case) -> None:
    findings = run_checks(c.view(), resampled=True)
    if c.severity is None:
        assert "UNEVEN_ALLOCATION" not in codes(findings), c.case
        return
    f = one(findings, "UNEVEN_ALLOCATION")
    assert f.severity == c.severity
    for key, value in (c.evidence or {}).items():
        assert f.evidence[key] == value, c.case


# --- REBALANCE_IN_PROGRESS: info, and the allocation findings it holds back ------------------------

def moving() -> GroupView:
    # A still holds queue 2 that B has already taken: an overlap in a topic both subscribe
    return group([client(A, [S], T[:3]), client(B, [S], T[2:])], {"T": T}, progress=[row(q, 5, 5) for q in T])


def test_rebalance_in_progress_is_information_and_holds_allocation_findings_back() -> None:
    findings = run_checks(moving())
    assert codes(findings) == ["REBALANCE_IN_PROGRESS"]
    f = findings[0]
    assert f.severity == "info"
    assert f.evidence == {"shared_queues": [{"topic": "T", "broker": "broker-a", "queue_id": 2, "holders": [A, B]}],
                          "unheld_queues": [], "resampled": False}


def test_after_the_second_sample_allocation_findings_are_reported_as_they_stand() -> None:
    findings = run_checks(moving(), resampled=True)
    assert codes(findings) == ["QUEUE_HELD_TWICE", "UNEVEN_ALLOCATION", "REBALANCE_IN_PROGRESS"]
    assert one(findings, "REBALANCE_IN_PROGRESS").evidence["resampled"] is True


def test_a_queue_nobody_holds_in_a_common_topic_is_a_rebalance_gap() -> None:
    v = group([client(A, [S], T[:2]), client(B, [S], T[2:3])], {"T": T}, progress=[row(q, 5, 5) for q in T])
    f = one(run_checks(v), "REBALANCE_IN_PROGRESS")
    assert f.evidence["unheld_queues"] == [{"topic": "T", "broker": "broker-a", "queue_id": 3}]
    assert "ORPHANED_QUEUES" not in codes(run_checks(v))


# --- ordering: most severe first, then the order of docs/findings.md's table -----------------------

def test_findings_come_most_severe_first_then_in_the_documented_order() -> None:
    rq = qs(RETRY, 1)
    stuck = ProcessQueueInfo(cached_msg_count=1, last_consume_timestamp=NOW - 61_000)
    v = group([client(A, [S], T[:2] + rq, pq={T[2]: stuck}, status={"T": ConsumeStatus(consume_failed_msgs=1)}),
               client(B, [S], T[3:], orderly=True, pq={T[3]: ProcessQueueInfo(locked=True)})],
              {"T": T, RETRY: rq}, progress=[row(rq[0], 4, 1)],
              duplicate_clients={A: ("10.0.0.1:5000", "10.0.0.7:5000")},
              dlq=(TopicOffset(MessageQueue(DLQ, "broker-a", 0), 0, 2, 0),))
    assert codes(run_checks(v)) == [
        "DUPLICATE_CLIENT_ID", "BLOCKED_QUEUE",  # errors
        "UNEVEN_ALLOCATION", "MIXED_CONSUMER_SETTINGS", "DLQ_BACKLOG", "CONSUME_FAILURES",  # warnings
        "RETRY_BACKLOG",  # information
    ]


def test_every_code_is_documented_in_order() -> None:
    assert CODES == (
        "SUBSCRIPTION_TAG_CONFLICT", "SUBSCRIPTION_TOPIC_CONFLICT", "BROKER_SUBSCRIPTION_DIVERGENCE",
        "IDLE_CONSUMERS", "ORPHANED_QUEUES", "DUPLICATE_CLIENT_ID", "UNEVEN_ALLOCATION",
        "MIXED_CONSUMER_SETTINGS", "MIXED_CONSUMPTION", "BLOCKED_QUEUE", "OFFLINE_GROUP_BACKLOG",
        "ABANDONED_TOPIC_BACKLOG",
        "RETRY_BACKLOG", "DLQ_BACKLOG", "LAG_NOT_ADVANCING", "QUEUE_HELD_TWICE", "CONSUME_FAILURES",
        "REPEATED_REDELIVERY", "ORDERLY_QUEUE_SUSPENDED",
        "REBALANCE_IN_PROGRESS",
    )


def test_only_runs_the_named_checks() -> None:
    v = replace(retrying(2), dlq=(TopicOffset(MessageQueue(DLQ, "broker-a", 0), 0, 2, 0),))
    assert codes(run_checks(v)) == ["DLQ_BACKLOG", "RETRY_BACKLOG"]
    assert codes(run_checks(v, only=["RETRY_BACKLOG"])) == ["RETRY_BACKLOG"]


# --- skipped checks: data the source could not supply is never read as healthy ---------------------

def test_checks_without_their_data_are_skipped_and_said_so() -> None:
    v = group([client(A, [S], T[:3]), client(B, [S], T[3:])], {"T": T},
              duplicate_clients={A: ("10.0.0.1:5000", "10.0.0.9:5000")},
              unavailable={"running_infos": "the dashboard does not relay it"})
    skipped = skipped_checks(v)
    assert sorted(skipped) == sorted([
        "SUBSCRIPTION_TAG_CONFLICT", "SUBSCRIPTION_TOPIC_CONFLICT", "IDLE_CONSUMERS", "ORPHANED_QUEUES",
        "UNEVEN_ALLOCATION", "MIXED_CONSUMER_SETTINGS", "BLOCKED_QUEUE", "QUEUE_HELD_TWICE",
        "ORDERLY_QUEUE_SUSPENDED", "ABANDONED_TOPIC_BACKLOG"])
    assert skipped["BLOCKED_QUEUE"] == "needs running_infos: the dashboard does not relay it"
    # the uneven split is not reported (its data is declared missing); the duplicate id still is
    assert codes(run_checks(v, resampled=True)) == ["DUPLICATE_CLIENT_ID"]
    dup_missing = replace(v, unavailable={"duplicate_clients": "not listed"})
    assert "DUPLICATE_CLIENT_ID" in skipped_checks(dup_missing)
    # a source that cannot list the topics the group has offsets for cannot find topics left behind
    assert list(skipped_checks(replace(v, unavailable={"offset_topics": "not listed"}))) == [
        "ABANDONED_TOPIC_BACKLOG"]
    assert "DUPLICATE_CLIENT_ID" not in codes(run_checks(dup_missing))


# --- findings read as prose: counts, lists and unknown backlogs ------------------------------------

@pytest.mark.parametrize(("words", "got", "want"), [
    ("one of a noun", lambda: n_of(1, "queue"), "1 queue"),
    ("none of a noun is plural", lambda: n_of(0, "queue"), "0 queues"),
    ("two of a noun", lambda: n_of(2, "client id"), "2 client ids"),
    ("one is", lambda: are(1), "is"),
    ("two are", lambda: are(2), "are"),
    ("a list of one", lambda: and_list(["a"]), "a"),
    ("a list of two", lambda: and_list(["a", "b"]), "a and b"),
    ("a list of three", lambda: and_list(["a", "b", "c"]), "a, b and c"),
    ("a known backlog", lambda: backlog_text(5, 0), "5 messages now"),
    ("a known backlog and unknown queues", lambda: backlog_text(1, 2), "1 message now, unknown for 2 queues"),
    ("only unknown queues: never read as 0", lambda: backlog_text(0, 1), "unknown for 1 queue"),
    ("a subscription's expression", lambda: expression_of(sub("T", "a || b")), "a || b"),
    ("no subscription", lambda: expression_of(None), "(not subscribed)"),
])
def test_prose_helpers(words: str, got: Callable[[], str], want: str) -> None:
    assert got() == want, words


def test_titles_count_what_they_name() -> None:
    stuck = ProcessQueueInfo(cached_msg_count=1, last_consume_timestamp=NOW - 90_000)
    one_q = group([client(A, [S], pq={T[0]: stuck})], {"T": T[:1]})
    assert one(run_checks(one_q), "BLOCKED_QUEUE").title == f"1 queue of orders-consumer is blocked in {A}"
    assert one(run_checks(offline((10, 9))), "OFFLINE_GROUP_BACKLOG").title == (
        "orders-consumer has no online client and 1 message waiting")
    assert one(run_checks(retrying(1_000)), "RETRY_BACKLOG").title == f"1000 messages wait in {RETRY}"
    assert one(run_checks(with_dlq((0, 1))), "DLQ_BACKLOG").title == f"1 message sits in {DLQ}"
    idle3 = group([client(A, [S], T[:1]), client(B, [S]), client(C, [S])], {"T": T[:1]})
    f = one(run_checks(idle3), "IDLE_CONSUMERS")
    assert f.title == "2 clients of orders-consumer hold no queue of T"
    assert f.detail.startswith(f"{B} and {C} subscribe T but hold none of its queues")


# --- one check, several topics or clients: an entry that does not qualify never hides the next ------

def test_idle_clients_of_a_later_topic_are_found() -> None:
    u = qs("U", 1)
    v = group([client(A, [S, sub("U")], T[:2] + u), client(B, [S, sub("U")], T[2:])], {"T": T, "U": u})
    f = one(run_checks(v), "IDLE_CONSUMERS")
    assert f.evidence["topic"] == "U" and f.evidence["idle_clients"] == [B]


def test_as_many_queues_as_clients_and_one_idle_blames_the_strategy() -> None:
    # CONSISTENT_HASH over 3 queues and A, B, C: A gets queue 1, B 0 and 2, C none — its own answer
    h = "org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueConsistentHash@4d1"
    v = group([client(A, [S], T[1:2], strategy=h), client(B, [S], [T[0], T[2]], strategy=h),
               client(C, [S], strategy=h)], {"T": T[:3]})
    f = one(run_checks(v, resampled=True), "IDLE_CONSUMERS")
    assert "because the allocation strategy gave it none (CONSISTENT_HASH over 3 clients and 3 queues)" in f.detail
    assert "restart" not in f.fix and "allocate with AVG or AVG_BY_CIRCLE" in f.fix


def test_uneven_topics_after_a_retry_topic_or_an_even_topic_are_found() -> None:
    u, rq = qs("U", 2), qs(RETRY, 1)
    v = group([client(A, [S, sub("U")], T[:2] + u + rq), client(B, [S, sub("U")], T[2:])],
              {"T": T, "U": u, RETRY: rq, "V": []})
    f = one(run_checks(v, resampled=True), "UNEVEN_ALLOCATION")
    assert f.evidence["topic"] == "U"


def test_broadcasting_clients_holding_every_queue_are_neither_uneven_nor_held_twice() -> None:
    # the view's own model is unknown (a source that does not report it); the clients say BROADCASTING
    v = group([client(A, [S], T, model="BROADCASTING"), client(B, [S], T, model="BROADCASTING")], {"T": T},
              model=None)
    found = codes(run_checks(v, resampled=True))
    assert "UNEVEN_ALLOCATION" not in found and "QUEUE_HELD_TWICE" not in found


def test_a_pull_consumer_listed_first_does_not_hide_a_blocked_push_consumer() -> None:
    stuck = ProcessQueueInfo(cached_msg_count=1, last_consume_timestamp=NOW - 90_000)
    v = group([client(A, [S], pq={T[0]: stuck}, consume_type="CONSUME_ACTIVELY"), client(B, [S], pq={T[1]: stuck})],
              {"T": T[:2]})
    f = one(run_checks(v, resampled=True), "BLOCKED_QUEUE")
    assert [q["client"] for q in f.evidence["queues"]] == [B]


def test_lag_not_advancing_text_names_the_owner_the_queues_and_the_messages() -> None:
    f = one(run_checks(sampled(105, 40, at=NOW + 30_000), sampled(100, 40)), "LAG_NOT_ADVANCING")
    assert f.detail == (f"Between two samples 30 s apart, {A} holds T@broker-a queue 0: 5 new messages arrived "
                        f"and none was consumed (65 messages now wait).")
    assert f"thread dump of {A} (mqadmin consumerStatus -g orders-consumer -i <client id> -s)" in f.fix
    assert "owner column" not in f.fix and "ORPHANED_QUEUES" not in f.fix
    before = group([client(A, [S], T[:1])], {"T": T[:2]}, progress=[row(T[0], 10, 0, A), row(T[1], 10, 0)])
    after = group([client(A, [S], T[:1])], {"T": T[:2]}, sampled_at=NOW + 30_000,
                  progress=[row(T[0], 12, 0, A), row(T[1], 13, 0)])
    f = one(run_checks(after, before, resampled=True), "LAG_NOT_ADVANCING")
    assert f.detail.endswith(f"{A} holds T@broker-a queue 0: 2 new messages arrived and none was consumed "
                             "(12 messages now wait); no client holds T@broker-a queue 1: 3 new messages "
                             "arrived and none was consumed (13 messages now wait).")
    assert "mqadmin consumerConnection -g orders-consumer" in f.fix


@table([
    Case("2 s apart, nothing cached: a pull the broker holds for its filter may explain it",
         lambda: sampled(105, 40, at=NOW + 2_000), None, previous=lambda: sampled(100, 40)),
    Case("20 s apart, nothing cached: still within the broker's 15 s hold and the 5 s commit",
         lambda: sampled(105, 40, at=NOW + 20_000), None, previous=lambda: sampled(100, 40)),
    Case("20.001 s apart, nothing cached: no filter explains it any more",
         lambda: sampled(105, 40, at=NOW + 20_001), "error", previous=lambda: sampled(100, 40)),
    Case("2 s apart, messages cached and not consumed: the listener, not the filter",
         lambda: sampled(105, 40, at=NOW + 2_000, cached=5), "error", previous=lambda: sampled(100, 40)),
])
def test_lag_not_advancing_waits_out_a_broker_filtered_pull(c: Case) -> None:
    check("LAG_NOT_ADVANCING", c)


def test_a_topic_left_behind_is_orphaned_as_analyze_stuck_says_and_sends_to_its_own_finding() -> None:
    # nobody subscribes U, so nobody holds its queues: frozen with a backlog, stuck (ORPHANED) as the
    # job judges the same snapshots; ABANDONED_TOPIC_BACKLOG says why
    before = left_behind((30, 5), (30, 5))
    after = replace(left_behind((38, 5), (37, 5)), sampled_at=NOW + 30_000)
    findings = run_checks(after, before)
    assert "ABANDONED_TOPIC_BACKLOG" in codes(findings)
    f = one(findings, "LAG_NOT_ADVANCING")
    assert [(q["queue_id"], q["owner"], q["verdict"], q["topic_subscribed"]) for q in f.evidence["queues"]] == [
        (0, None, "ORPHANED", False), (1, None, "ORPHANED", False)]
    assert f.detail == ("Between two samples 30 s apart, no client holds U@broker-a queues 0 and 1 (no online "
                        "client subscribes U: see ABANDONED_TOPIC_BACKLOG): 15 new messages arrived and none "
                        "was consumed (65 messages now wait).")
    assert f.fix == ("A topic no online client of orders-consumer subscribes is consumed by nobody until a client "
                     "of the group subscribes it again; dropped on purpose, its offsets and backlog stay on the "
                     "brokers (see ABANDONED_TOPIC_BACKLOG).")


def test_a_retry_queue_frozen_past_its_allowance_is_stalled_by_two_samples() -> None:
    r = MessageQueue("%RETRY%orders-consumer", "broker-a", 0)

    def retry(broker: int, at: int) -> GroupView:
        # a push consumer subscribes its group's retry topic itself
        return group([client(A, [S, sub(r.topic)], [r])], {"T": T}, sampled_at=at, progress=[row(r, broker, 100, A)])

    f = one(run_checks(retry(111, NOW + 30_000), retry(111, NOW)), "LAG_NOT_ADVANCING")
    assert [q["verdict"] for q in f.evidence["queues"]] == ["STALLED"]
    assert "LAG_NOT_ADVANCING" not in codes(run_checks(retry(110, NOW + 30_000), retry(110, NOW)))


def test_lag_not_advancing_with_one_message_waiting() -> None:
    f = one(run_checks(sampled(101, 100, at=NOW + 30_000), sampled(101, 100)), "LAG_NOT_ADVANCING")
    assert f.evidence["queues"][0]["diff"] == 1
    assert f.title == "1 queue of orders-consumer consumed none of the messages waiting"
    assert f.detail == (f"Between two samples 30 s apart, {A} holds T@broker-a queue 0: none of 1 waiting "
                        f"message was consumed and no new message arrived.")


def test_lag_not_advancing_leaves_a_broadcasting_group_alone() -> None:
    # its offsets live on the clients (analyze stuck leaves such groups out for the same reason)
    def broadcast(broker: int, at: int = NOW) -> GroupView:
        return replace(sampled(broker, 40, at=at), message_model="BROADCASTING")

    assert "LAG_NOT_ADVANCING" not in codes(run_checks(broadcast(105, NOW + 30_000), broadcast(100)))
    assert "LAG_NOT_ADVANCING" in codes(run_checks(sampled(105, 40, at=NOW + 30_000), sampled(100, 40)))


def test_lag_not_advancing_needs_the_same_holder_at_both_samples() -> None:
    # the owner changed between the samples: its new holder has had no time of its own (analyze stuck:
    # owner-changed, INSUFFICIENT_DATA), so nothing is said about it yet
    def held_by(owner: str, at: int = NOW) -> GroupView:
        return group([client(A, [S], T[:1] if owner == A else []), client(B, [S], T[:1] if owner == B else [])],
                     {"T": T[:1]}, progress=[row(T[0], 100, 40, owner)], sampled_at=at)

    assert "LAG_NOT_ADVANCING" not in codes(run_checks(held_by(B, NOW + 30_000), held_by(A), resampled=True))
    assert "LAG_NOT_ADVANCING" in codes(run_checks(held_by(B, NOW + 30_000), held_by(B), resampled=True))


def test_lag_not_advancing_past_a_queue_new_in_the_second_sample() -> None:
    before = group([client(A, [S], T[:2])], {"T": T[:2]}, progress=[row(T[1], 100, 40, A)])
    after = group([client(A, [S], T[:2])], {"T": T[:2]}, sampled_at=NOW + 30_000,
                  progress=[row(T[0], 50, 0, A), row(T[1], 110, 40, A)])
    f = one(run_checks(after, before), "LAG_NOT_ADVANCING")
    assert [q["queue_id"] for q in f.evidence["queues"]] == [1]


@pytest.mark.parametrize(("case", "earlier", "later"), [
    ("two samples stamped at the same instant", NOW, NOW),
    ("a clock that went back between the samples", NOW + 5_000, NOW),
])
def test_lag_not_advancing_interval_is_never_negative(case: str, earlier: int, later: int) -> None:
    f = one(run_checks(sampled(110, 40, at=later, cached=3), sampled(100, 40, at=earlier)), "LAG_NOT_ADVANCING")
    assert f.evidence["interval_seconds"] == 0.0, case


def test_orphaned_and_held_twice_details_name_the_backlog_and_every_pair() -> None:
    assert "the backlog (1 message now) grows" in one(run_checks(orphan(1), resampled=True), "ORPHANED_QUEUES").detail
    v = group([client(A, [S], T[:3]), client(B, [S], T[1:])], {"T": T})
    f = one(run_checks(v, resampled=True), "QUEUE_HELD_TWICE")
    assert f"yet T@broker-a/1 by {A} and {B}; T@broker-a/2 by {A} and {B}. Both" in f.detail


# --- texts that stand alone: which client, which queues, how many messages, the fix in RocketMQ's terms

HASH_CLASS = "org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueConsistentHash@4d1"
CIRCLE_CLASS = "org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragelyByCircle@6f3"


def test_a_client_holding_what_its_own_strategy_computes_is_not_uneven() -> None:
    # A allocates with AVG_BY_CIRCLE (first of 2 clients: queues 0 and 2), B with AVG (second: 2
    # and 3). Each holds exactly its own strategy's answer: no client is told to restart, and the
    # overlap and the gap are the mixed strategies' doing, which other findings name
    v = group([client(A, [S], T[0::2], strategy=CIRCLE_CLASS), client(B, [S], T[2:])], {"T": T})
    found = run_checks(v, resampled=True)
    assert "UNEVEN_ALLOCATION" not in codes(found)
    assert one(found, "MIXED_CONSUMER_SETTINGS").evidence["strategy"] == {A: "AVG_BY_CIRCLE", B: "AVG"}
    # B alone deviating from its own AVG share is still reported, against AVG, naming only B
    v2 = group([client(A, [S], T[0::2], strategy=CIRCLE_CLASS), client(B, [S], T[3:])], {"T": T})
    f = one(run_checks(v2, resampled=True), "UNEVEN_ALLOCATION")
    assert list(f.evidence["clients"]) == [B]
    assert f.evidence["strategies"] == {A: "AVG_BY_CIRCLE", B: "AVG"}
    assert f"{B} does not hold T@broker-a queue 2 that AVG computes for it" in f.detail


def test_an_imbalance_the_strategy_itself_produces_is_information_not_a_restart() -> None:
    # CONSISTENT_HASH (10 virtual nodes) over T's 4 queues and clients A, B: A gets queue 1, B 0, 2, 3
    v = group([client(A, [S], T[1:2], strategy=HASH_CLASS),
               client(B, [S], [T[0], T[2], T[3]], strategy=HASH_CLASS)], {"T": T})
    f = one(run_checks(v, resampled=True), "UNEVEN_ALLOCATION")
    assert f.severity == "info"
    assert f.evidence["strategies"] == {A: "CONSISTENT_HASH", B: "CONSISTENT_HASH"}
    assert f"{A} holds T@broker-a queue 1 (1 queue); {B} holds T@broker-a queues 0, 2 and 3 (3 queues)" in f.detail
    assert "restart" not in f.fix
    assert "mqadmin updateTopic -t T" in f.fix and "AVG or AVG_BY_CIRCLE" in f.fix
    assert "setAllocateMessageQueueStrategy" in f.fix


def test_uneven_allocation_names_the_deviating_client_its_queues_and_their_backlog() -> None:
    # AVG gives A queues 0-1 and B 2-3; A holds 0-2 and B only 3: both deviate over queue 2
    v = group([client(A, [S], T[:3]), client(B, [S], T[3:])], {"T": T}, progress=[row(T[2], 10, 4, A)])
    f = one(run_checks(v, resampled=True), "UNEVEN_ALLOCATION")
    assert f.severity == "warning"
    assert f.evidence["strategies"] == {A: "AVG", B: "AVG"}
    assert f"{A} holds T@broker-a queue 2 that its strategy AVG gives to another client" in f.detail
    assert f"{B} does not hold T@broker-a queue 2 that AVG computes for it (backlog there: 6 messages now)" in f.detail
    assert f"restart {A} and {B} only" in f.fix and "mqadmin topicRoute -t T" in f.fix


def test_uneven_allocation_restarts_only_the_client_that_deviates() -> None:
    # three clients, AVG over 4 queues: A 0-1, B 2, C 3. A and B agree; C holds nothing
    v = group([client(A, [S], T[:2]), client(B, [S], T[2:3]), client(C, [S])], {"T": T},
              progress=[row(T[3], 5, 5)])
    f = one(run_checks(v, resampled=True), "UNEVEN_ALLOCATION")
    assert list(f.evidence["clients"]) == [C]
    assert f.fix.endswith(f"restart {C} only.")
    assert "backlog there: 0 messages now" in f.detail


def test_an_unknown_backlog_on_the_missing_queue_is_unknown() -> None:
    v = group([client(A, [S], T[:3]), client(B, [S], T[3:])], {"T": T},
              progress=[row(T[2], 10, 4, known=False)])
    f = one(run_checks(v, resampled=True), "UNEVEN_ALLOCATION")
    assert "(backlog there: unknown for 1 queue)" in f.detail


def test_idle_consumers_names_the_queues_their_holder_and_the_backlog() -> None:
    v = group([client(A, [S], T[:1]), client(B, [S]), client(C, [S])], {"T": T[:1]}, progress=[row(T[0], 10, 4, A)])
    f = one(run_checks(v), "IDLE_CONSUMERS")
    assert f"T@broker-a queue 0 is held by {A} (backlog: 6 messages now)." in f.detail
    assert f.fix == (f"To put {B} and {C} to work, give the topic at least as many queues as the group has "
                     "clients (mqadmin updateTopic -c <cluster> -t T -r 3 -w 3) or run 2 consumers fewer.")


def test_an_idle_client_its_strategy_gives_queues_to_is_not_blamed_on_the_strategy() -> None:
    # AVG over 4 queues and 2 clients gives B queues 2 and 3: holding none is B's deviation
    v = group([client(A, [S], T), client(B, [S])], {"T": T})
    f = one(run_checks(v, resampled=True), "IDLE_CONSUMERS")
    assert "strategy gave" not in f.detail
    assert f"({B}: AVG over 2 clients and 4 queues gives T@broker-a queues 2 and 3)" in f.detail
    assert "Raise" not in f.fix and f"restart {B}" in f.fix


def test_retry_backlog_names_its_queues_holder_and_unknown_rows() -> None:
    rq = qs(RETRY, 3)
    v = group([client(A, [S], T + rq)], {"T": T, RETRY: rq},
              progress=[row(rq[0], 13, 10, A), row(rq[1], 5, 5, A), row(rq[2], 9, 2, A, known=False)])
    f = one(run_checks(v), "RETRY_BACKLOG")
    assert f.detail.startswith(f"{RETRY}@broker-a queue 0 holds 3 messages the listener of orders-consumer "
                               "failed to consume (ConsumeConcurrentlyStatus.RECONSUME_LATER")
    assert f"{A} holds it and pulls each retry" in f.detail
    assert f"The backlog of {RETRY}@broker-a queue 2 could not be read: unknown" in f.detail
    assert f.evidence["unknown_diff_queues"] == [{"topic": RETRY, "broker": "broker-a", "queue_id": 2}]
    assert f.evidence["total_diff"] == 3
    assert f"listener of {A} returns RECONSUME_LATER" in f.fix and "setMaxReconsumeTimes" in f.fix
    assert "mqadmin consumerStatus -g orders-consumer" in f.fix


def test_dlq_backlog_names_its_queues_clients_and_the_replay() -> None:
    f = one(run_checks(with_dlq((4, 9), (0, 2), (3, 3))), "DLQ_BACKLOG")
    assert f.detail.startswith(f"{DLQ}@broker-a queues 0 and 1 hold 7 messages the listener of orders-consumer "
                               "failed maxReconsumeTimes times")
    assert f"its client online now is {A}" in f.detail
    assert "rmqctl dlq replay orders-consumer" in f.fix and f"mqadmin queryMsgByOffset -t {DLQ}" in f.fix
    assert "rmqctl dlq show orders-consumer" in f.fix


def test_rebalance_in_progress_names_the_queues_and_their_holders() -> None:
    f = one(run_checks(moving()), "REBALANCE_IN_PROGRESS")
    assert f.detail.startswith(f"Held by two clients at once: T@broker-a queue 2 by {A} and {B}. All are in "
                               f"topics every client of orders-consumer ({A} and {B}) subscribes")
    gap = group([client(A, [S], T[:2]), client(B, [S], T[2:3])], {"T": T}, progress=[row(q, 5, 5) for q in T])
    assert one(run_checks(gap), "REBALANCE_IN_PROGRESS").detail.startswith("Held by no client: T@broker-a queue 3.")
    assert "rmqctl doctor orders-consumer again" in f.fix


def test_duplicate_client_id_names_the_id_and_its_addresses() -> None:
    v = group([client(A, [S], T[:2]), client(B, [S], T[2:])], {"T": T},
              duplicate_clients={A: ("10.0.0.9:5000", "10.0.0.1:5000")})
    f = one(run_checks(v), "DUPLICATE_CLIENT_ID")
    assert f.detail.startswith(f"{A} is used by 2 connections (10.0.0.1:5000 and 10.0.0.9:5000).")
    assert "setInstanceName" in f.fix and "mqadmin consumerConnection -g orders-consumer" in f.fix


def test_mixed_consumer_settings_names_each_clients_value_and_the_setter() -> None:
    v = group([client(A, [S], T[:2], strategy=CONFIG_CLASS), client(B, [S], T[2:], orderly=True)], {"T": T})
    f = one(run_checks(v), "MIXED_CONSUMER_SETTINGS")
    assert f"strategy ({A}: CONFIG and {B}: AVG)" in f.detail
    assert f"consume_orderly ({A}: false and {B}: true)" in f.detail
    assert "setAllocateMessageQueueStrategy" in f.fix and "MessageListenerOrderly" in f.fix
    assert "message model" not in f.fix.lower()


def test_queue_held_twice_counts_the_messages_and_names_whom_to_restart() -> None:
    v = group([client(A, [S], T[:3]), client(B, [S], T[1:])], {"T": T},
              progress=[row(T[1], 9, 5), row(T[2], 9, 9, known=False)])
    f = one(run_checks(v, resampled=True), "QUEUE_HELD_TWICE")
    assert "Both pull the same messages (backlog there: 4 messages now, unknown for 1 queue)" in f.detail
    assert f.fix.endswith(f"restart {A} and {B}.")


def test_the_expected_allocation_is_each_clients_own_strategys() -> None:
    # A (AVG_BY_CIRCLE, first of 2) computes queues 0 and 2 for itself, B (AVG, second) 2 and 3:
    # what each one's own rebalance takes, not AVG for both (which would give A 0 and 1)
    from rmqctl.doctor.context import expected_allocation

    v = group([client(A, [S], T[0::2], strategy=CIRCLE_CLASS), client(B, [S], T[2:])], {"T": T})
    assert expected_allocation(v, "T") == {A: [T[0], T[2]], B: [T[2], T[3]]}
    # one client on CONFIG: its share depends on its own configured list, so nothing is computed
    v2 = group([client(A, [S], T[:2], strategy=CONFIG_CLASS), client(B, [S], T[2:])], {"T": T})
    assert expected_allocation(v2, "T") is None
