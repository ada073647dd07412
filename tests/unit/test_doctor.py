"""Doctor checks over hand-built group views (the seed incidents, and the healthy case)."""

from __future__ import annotations

from rmqctl.doctor import run_checks
from rmqctl.model import (
    ClientConnection,
    ConsumerRunningInfo,
    GroupView,
    MessageQueue,
    ProcessQueueInfo,
    QueueProgress,
    Subscription,
    TopicOffset,
    parse_tag_expression,
)

G = "test-consumer"
C1, C2, C3 = "10.0.0.1@consumer1", "10.0.0.2@consumer2", "10.0.0.3@consumer3"
AVG = "org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely@1b2c"


def conn(cid: str, addr: str | None = None) -> ClientConnection:
    return ClientConnection(cid, addr or cid.split("@")[0] + ":5000", "JAVA", 479)


def info(cid: str, subs: list[Subscription], held: list[MessageQueue], **pq: object) -> ConsumerRunningInfo:
    props = {"PROP_CONSUME_TYPE": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
             "allocateMessageQueueStrategy": AVG}
    return ConsumerRunningInfo(cid, props, tuple(subs),
                               {mq: ProcessQueueInfo(**pq) for mq in held})  # type: ignore[arg-type]


def queues(topic: str, n: int, broker: str = "broker-a") -> list[MessageQueue]:
    return [MessageQueue(topic, broker, i) for i in range(n)]


def view(conns: list[ClientConnection], infos: list[ConsumerRunningInfo],
         stored: dict[str, Subscription], topics: dict[str, list[MessageQueue]],
         progress: list[QueueProgress] = (), **extra: object) -> GroupView:  # type: ignore[assignment]
    return GroupView(
        group=G, connections=tuple(conns), broker_subscriptions={"broker-a": stored},
        running_infos={i.client_id: i for i in infos}, progress=tuple(progress),
        message_model="CLUSTERING", consume_type="CONSUME_PASSIVELY",
        topic_queues={t: tuple(q) for t, q in topics.items()}, sampled_at=1_000_000, **extra)  # type: ignore[arg-type]


def tag_overwrite() -> GroupView:
    # seed 004: ConsumerForTagA (earlier subscriber) and ConsumerForTagB (later, higher subVersion)
    qs = queues("TopicTest", 4)
    a = parse_tag_expression("TopicTest", "tagA", 100)
    b = parse_tag_expression("TopicTest", "tagB", 200)
    return view([conn(C1), conn(C2)], [info(C1, [a], qs[:2]), info(C2, [b], qs[2:])],
                {"TopicTest": b}, {"TopicTest": qs})


def codes(findings: list) -> list[str]:
    return sorted(f.code for f in findings)


def test_tag_overwrite_names_the_loser_its_queues_and_the_lost_tags() -> None:
    findings = run_checks(tag_overwrite())
    assert codes(findings) == ["BROKER_SUBSCRIPTION_DIVERGENCE", "SUBSCRIPTION_TAG_CONFLICT"]
    tag = next(f for f in findings if f.code == "SUBSCRIPTION_TAG_CONFLICT")
    assert tag.severity == "error"
    ev = tag.evidence
    assert ev["broker_holds_from"] == [C2]
    assert ev["losing_clients"] == [C1] and ev["starved_clients"] == [C1]
    # without a sample, every tag no client names is counted together (and is lost too)
    assert ev["tags_never_consumed"] == ["tagA", "(any other tag)"]
    by_queue = {q["queue_id"]: q for q in ev["queues"]}
    # C1's queues: the broker passes only tagB, C1 drops tagB -> nothing delivered
    assert by_queue[0]["owner"] == C1
    assert by_queue[0]["filtered_by_broker"] == ["tagA", "(any other tag)"]
    assert by_queue[0]["dropped_by_client"] == ["tagB"]
    assert by_queue[1]["delivered_tags"] == []
    # C2's queues: tagB gets through
    assert by_queue[3]["owner"] == C2 and by_queue[3]["delivered_tags"] == ["tagB"]
    assert "tagA" in tag.detail and C1 in tag.detail


def test_same_tags_written_differently_is_not_a_conflict() -> None:
    qs = queues("T", 2)
    a = parse_tag_expression("T", "x || y", 1)
    b = parse_tag_expression("T", "y||x", 2)
    v = view([conn(C1), conn(C2)], [info(C1, [a], qs[:1]), info(C2, [b], qs[1:])], {"T": b}, {"T": qs})
    assert run_checks(v) == []


def test_topic_overwrite_predicts_the_never_pulled_queues() -> None:
    t1, t2 = queues("T1", 4), queues("T2", 4)
    s1, s2 = parse_tag_expression("T1", "*", 1), parse_tag_expression("T2", "*", 2)
    progress = [QueueProgress(mq, 2, 0, 0, 0) for mq in t1[2:] + t2[:2]]
    v = view([conn(C1), conn(C2)], [info(C1, [s1], t1[:2]), info(C2, [s2], t2[2:])], {"T2": s2},
             {"T1": t1, "T2": t2}, progress)
    findings = run_checks(v)
    assert "SUBSCRIPTION_TOPIC_CONFLICT" in codes(findings)
    assert "ORPHANED_QUEUES" in codes(findings)
    topic = next(f for f in findings if f.code == "SUBSCRIPTION_TOPIC_CONFLICT")
    never = {(t["topic"], q["queue_id"], q["allocated_to"])
             for t in topic.evidence["topics"] for q in t["never_pulled_queues"]}
    assert never == {("T1", 2, C2), ("T1", 3, C2), ("T2", 0, C1), ("T2", 1, C1)}
    orphaned = next(f for f in findings if f.code == "ORPHANED_QUEUES")
    assert orphaned.severity == "error" and orphaned.evidence["total_diff"] == 8


def test_idle_consumers_with_more_clients_than_queues() -> None:
    q = queues("T", 1)
    s = parse_tag_expression("T", "*", 1)
    v = view([conn(C1), conn(C2)], [info(C1, [s], q), info(C2, [s], [])], {"T": s}, {"T": q})
    (finding,) = run_checks(v)
    assert finding.code == "IDLE_CONSUMERS"
    assert finding.evidence["idle_clients"] == [C2]
    assert (finding.evidence["queues"], finding.evidence["clients"]) == (1, 2)


def test_uneven_allocation_when_clients_do_not_hold_what_the_strategy_gives() -> None:
    q = queues("T", 16)
    s = parse_tag_expression("T", "*", 1)
    # AVG over 16 queues and 3 clients gives 6/5/5; here one client grabbed 7
    v = view([conn(C1), conn(C2), conn(C3)],
             [info(C1, [s], q[:7]), info(C2, [s], q[7:11]), info(C3, [s], q[11:])], {"T": s}, {"T": q})
    (finding,) = run_checks(v)
    assert finding.code == "UNEVEN_ALLOCATION"
    assert [m["queue_id"] for m in finding.evidence["clients"][C1]["expected"]] == list(range(6))


def test_duplicate_client_id_and_mixed_settings() -> None:
    q = queues("T", 2)
    s = parse_tag_expression("T", "*", 1)
    other = info(C2, [s], q[1:])
    other = ConsumerRunningInfo(C2, {**other.properties, "messageModel": "BROADCASTING"},
                                other.subscriptions, other.mq_table)
    v = view([conn(C1, "10.0.0.1:1"), conn(C2)], [info(C1, [s], q[:1]), other],
             {"T": s}, {"T": q}, duplicate_clients={C1: ("10.0.0.1:1", "10.0.0.9:2")})
    found = {f.code: f for f in run_checks(v)}
    assert found["DUPLICATE_CLIENT_ID"].evidence["clients"] == {C1: ["10.0.0.1:1", "10.0.0.9:2"]}
    assert found["MIXED_CONSUMER_SETTINGS"].evidence["message_model"] == {
        C1: "CLUSTERING", C2: "BROADCASTING"}


def test_blocked_offline_retry_dlq_and_lag_not_advancing() -> None:
    q = queues("T", 1)
    s = parse_tag_expression("T", "*", 1)
    blocked = view([conn(C1)], [info(C1, [s], q, cached_msg_count=5, last_consume_timestamp=900_000 - 61_000)],
                   {"T": s}, {"T": q})
    (finding,) = run_checks(blocked, now_ms=900_000)
    assert finding.code == "BLOCKED_QUEUE" and finding.evidence["queues"][0]["idle_ms"] == 61_000

    retry = MessageQueue("%RETRY%" + G, "broker-a", 0)
    offline = view([], [], {}, {}, [QueueProgress(q[0], 10, 4, None, 0), QueueProgress(retry, 3, 1, None, 0)],
                   dlq=(TopicOffset(MessageQueue("%DLQ%" + G, "broker-a", 0), 0, 7, 0),))
    found = {f.code: f for f in run_checks(offline)}
    assert found["OFFLINE_GROUP_BACKLOG"].evidence["total_diff"] == 8
    assert found["RETRY_BACKLOG"].evidence["total_diff"] == 2 and found["RETRY_BACKLOG"].severity == "info"
    assert found["DLQ_BACKLOG"].evidence["messages"] == 7

    before = view([conn(C1)], [info(C1, [s], q)], {"T": s}, {"T": q}, [QueueProgress(q[0], 10, 4, 4, 0, C1)])
    # the client caches messages it does not consume: no broker filter explains the still offset
    after = view([conn(C1)], [info(C1, [s], q, cached_msg_count=2)], {"T": s}, {"T": q},
                 [QueueProgress(q[0], 15, 4, 4, 0, C1)])
    (stalled,) = run_checks(after, before)
    assert stalled.code == "LAG_NOT_ADVANCING"
    assert stalled.evidence["queues"][0]["broker_offset"] == [10, 15]


def test_healthy_group_has_no_findings() -> None:
    q = queues("T", 4)
    s = parse_tag_expression("T", "a || b", 5)
    s2 = parse_tag_expression("T", "a || b", 6)
    v = view([conn(C1), conn(C2)], [info(C1, [s], q[:2]), info(C2, [s2], q[2:])], {"T": s2}, {"T": q},
             [QueueProgress(mq, 5, 5, 5, 0) for mq in q])
    assert run_checks(v) == []
