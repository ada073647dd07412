"""The seed incidents on the virtual clock, asserted as numbers (see shared/seeds/INDEX.md).

Every expected number is worked out by hand from the seed article it cites and RocketMQ's
documented behaviour (AVG allocation over sorted queues and client ids, one stored subscription
per group and topic, the broker's tag filter on that subscription), never read from the code
under test.
"""

from __future__ import annotations

from rmqctl.emulator import running_info
from rmqctl.emulator.client import SimulatedConsumer
from rmqctl.emulator.scenario import load_scenario, parse_scenario
from rmqctl.emulator.world import EmulatedCluster, run_scenario


def by_id(cluster: EmulatedCluster) -> dict[str, SimulatedConsumer]:
    return {c.client_id: c for c in cluster.consumers}


def held(consumer: SimulatedConsumer, topic: str) -> list[int]:
    return [mq.queue_id for mq in consumer.held_queues() if mq.topic == topic]


def test_seed_004_tag_overwrite_with_four_queues() -> None:
    # Seed 004: "消费者ConsumerForTagA消费的队列ID为0、1,消费者ConsumerForTagB消息的队列ID为2、3";
    # 8 messages, 4 tagA then 4 tagB, one of each per queue; "ConsumerForTagA未消费到消息。
    # ConsumerForTagB消费到2条消息" (queueId=2 and 3, queueOffset=1, TAGS=tagB). Lost: the 4 tagA
    # (the stored filter is tagB) and the 2 tagB on ConsumerForTagA's queues (its own filter).
    cluster = run_scenario(load_scenario("tag-overwrite-4q"))
    clients = by_id(cluster)
    tag_a = clients["172.16.0.103@ConsumerForTagA"]
    tag_b = clients["172.16.0.103@ConsumerForTagB"]
    assert held(tag_a, "SUBSCRIBE_TEST") == [0, 1]
    assert held(tag_b, "SUBSCRIBE_TEST") == [2, 3]
    # every queue holds tagA at offset 0 and tagB at offset 1
    broker = cluster.brokers["broker-a"]
    assert [[m.tag for m in broker.queue("SUBSCRIBE_TEST", q)] for q in range(4)] == [["tagA", "tagB"]] * 4
    # the later subscriber's tagB is what the broker stores, so ConsumerForTagA gets nothing
    stored = broker.consumer_table["SUBSCRIBE_TEST_CONSUMER_GROUP"].subscriptions["SUBSCRIBE_TEST"]
    assert stored.expression == "tagB"
    assert tag_a.received_total == 0
    assert tag_b.received_by_tag == {"tagB": 2}
    assert sorted((m.queue_id, m.queue_offset) for m in tag_b.deliveries) == [(2, 1), (3, 1)]
    # and nothing looks stuck: every offset moved past the skipped messages (diff 0)
    rows, _ = broker.consume_stats("SUBSCRIBE_TEST_CONSUMER_GROUP", "SUBSCRIBE_TEST")
    assert [(e.broker_offset, e.consumer_offset) for _, e in rows] == [(2, 2)] * 4
    assert cluster.report()["lost_by_tag"] == {"tagA": 4, "tagB": 2}


def test_seed_000_later_tag_wins_and_the_winner_gets_only_its_own_half() -> None:
    # Seed 000: "只有Consumer2收到了消息，而且只收到了4-6条消息"; the broker keeps the later tag2
    # ("后者肯定会覆盖前者"), and the queues are split between both clients ("一半消息…跑到了
    # Consumer1上"): consumer1 holds q0,q1, consumer2 q2,q3.
    report = run_scenario(load_scenario("tag-overwrite")).report()
    consumers = report["consumers"]
    assert consumers["10.0.0.1@consumer1"]["received_by_tag"] == {}
    # 20 messages round robin over 4 queues: the tag2 half lands 6 on queues 2-3, 4 on 0-1
    assert consumers["10.0.0.2@consumer2"]["received_by_tag"] == {"tag2": 6}
    assert report["produced_by_tag"] == {"tag1": 10, "tag2": 10}
    assert report["lost_by_tag"] == {"tag1": 10, "tag2": 4}
    stored = report["broker_subscriptions"]["broker-a"]["test-consumer"]["TopicTest2"]
    assert stored["expression"] == "tag2"


TAG_OVERWRITE_VARIANT = """
name = "variant"
duration = 60
[[topics]]
name = "TopicTest2"
queues = 4
[[consumers]]
group = "test-consumer"
client_id = "10.0.0.1@consumer1"
subscriptions = {{ TopicTest2 = "tag1" }}
{extra}
[[consumers]]
group = "test-consumer"
client_id = "10.0.0.2@consumer2"
subscriptions = {{ TopicTest2 = "tag2" }}
start = 1.0
{extra}
[[produce]]
at = 5.0
topic = "TopicTest2"
tag = "tag1"
count = 10
[[produce]]
at = 6.0
topic = "TopicTest2"
tag = "tag2"
count = 10
"""


def test_seed_000_broadcasting_gives_the_later_subscriber_everything() -> None:
    # Seed 000: "如果换成BROADCASTING，那绝逼后者会收到全部消息，而不是一半".
    scenario = parse_scenario(TAG_OVERWRITE_VARIANT.format(extra='message_model = "BROADCASTING"'))
    report = run_scenario(scenario).report()
    assert report["consumers"]["10.0.0.2@consumer2"]["received_by_tag"] == {"tag2": 10}
    assert report["consumers"]["10.0.0.1@consumer1"]["received_by_tag"] == {}


def test_post_subscription_when_pull_gives_each_client_its_own_tags_on_its_own_queues() -> None:
    scenario = parse_scenario(TAG_OVERWRITE_VARIANT.format(extra="post_subscription = true"))
    report = run_scenario(scenario).report()
    # tag1 on queues 0-1: m0,m1,m4,m5,m8,m9 ; tag2 on queues 2-3: m10,m11,m14,m15,m18,m19
    assert report["consumers"]["10.0.0.1@consumer1"]["received_by_tag"] == {"tag1": 6}
    assert report["consumers"]["10.0.0.2@consumer2"]["received_by_tag"] == {"tag2": 6}


def test_seed_001_sixteen_queues_three_consumers_is_six_five_five_in_contiguous_blocks() -> None:
    # Seed 001: "mod=16 % 3 = 1": index 0 takes 6 queues "[0,1,2,3,4,5]", the others 5 each,
    # "6,7,8,9,10" and "11,12,13,14,15".
    cluster = run_scenario(load_scenario("uneven-allocation"))
    clients = by_id(cluster)
    blocks = [held(clients[f"10.0.0.{i}@pushConsumer{i}"], "TopicTest") for i in (1, 2, 3)]
    assert blocks == [list(range(6)), list(range(6, 11)), list(range(11, 16))]
    # 32 messages, 2 per queue
    assert [clients[f"10.0.0.{i}@pushConsumer{i}"].received_total for i in (1, 2, 3)] == [12, 10, 10]


def test_seed_001_one_queue_two_consumers_leaves_one_idle_but_registered() -> None:
    # Seed 001: "一个队列只能分配给一个消费者": with one queue the second client gets nothing, yet
    # stays in the group's consumer list.
    cluster = run_scenario(load_scenario("idle-consumers"))
    clients = by_id(cluster)
    busy, idle = clients["10.0.0.1@pushConsumer1"], clients["10.0.0.2@pushConsumer2"]
    assert held(busy, "TopicTest") == [0] and busy.received_total == 10
    assert idle.held_queues() == [] and idle.received_total == 0
    assert cluster.brokers["broker-a"].consumer_ids("lhy-test-consumerGroup") == [
        "10.0.0.1@pushConsumer1", "10.0.0.2@pushConsumer2"]


def test_seed_003_broker_table_flips_and_half_of_each_topics_queues_are_never_pulled() -> None:
    # Seed 003: c1 subscribes topicA, c2 topicB in group g1; each heartbeat overwrites g1's stored
    # subscriptions, so pulls fail with "the consumer's subscription not exist", and "c2 根本没有订阅
    # topicA，但根据分配算法，却要加上 c2 进行分配": half of each topic's queues are never pulled.
    cluster = run_scenario(load_scenario("topic-overwrite"))
    # The stored table of g1, each time it changed: its user topics only.
    sequence = []
    for change in cluster.history:
        if change.group == "g1" and change.table is not None:
            topics = tuple(t for t in change.topics if not t.startswith("%RETRY%"))
            if not sequence or sequence[-1] != topics:
                sequence.append(topics)
    # c2 (topicB) starts first, c1 (topicA) at 10 s; then every heartbeat flips it back and forth
    assert sequence[:4] == [("topicB",), ("topicA",), ("topicB",), ("topicA",)]
    assert len(sequence) >= 8
    assert all(len(topics) == 1 for topics in sequence)  # never both topics at once

    broker = cluster.brokers["broker-a"]
    clients = by_id(cluster)
    c1, c2 = clients["10.0.0.1@c1"], clients["10.0.0.2@c2"]
    # cidAll = [c1, c2] for BOTH topics: topicA's queues 2-3 belong to c2, which never subscribed
    # topicA, and topicB's queues 0-1 to c1; nobody pulls them after the 8+8 messages at 30 s.
    assert held(c1, "topicA") == [0, 1] and held(c1, "topicB") == []
    assert held(c2, "topicB") == [2, 3] and held(c2, "topicA") == []
    assert set(broker.pull_offsets[("topicA", "g1")]) == {0, 1}  # 2 and 3: never pulled at all
    rows, _ = broker.consume_stats("g1", topic_list=["topicA", "topicB"])
    assert [(mq.topic, mq.queue_id, e.broker_offset, e.consumer_offset) for mq, e in rows] == [
        ("topicA", 0, 2, 2), ("topicA", 1, 2, 2), ("topicA", 2, 2, 0), ("topicA", 3, 2, 0),
        ("topicB", 0, 2, 0), ("topicB", 1, 2, 0), ("topicB", 2, 2, 2), ("topicB", 3, 2, 2),
    ]
    # only the topic currently in the table is reported without a topic list (they take turns)
    rows, _ = broker.consume_stats("g1")
    assert {mq.topic for mq, _ in rows} - {"%RETRY%g1"} == {sequence[-1][0]}
    assert c1.received_total == 4 and c2.received_total == 4
    # the flips make pulls fail with 24 "the consumer's subscription not exist"
    assert c1.pull_errors.get(24, 0) > 0 and c2.pull_errors.get(24, 0) > 0
    assert cluster.report()["lost_by_tag"] == {"": 8}


def test_healthy_delivers_everything() -> None:
    cluster = run_scenario(load_scenario("healthy"))
    report = cluster.report()
    assert report["produced_by_tag"] == {"order_created": 24, "order_paid": 24}
    assert report["lost_by_tag"] == {"order_created": 0, "order_paid": 0}
    service = [c for c in cluster.consumers if c.group == "order-service"]
    assert sum(c.received_total for c in service) == 48
    seqs = [m.seq for c in service for m in c.deliveries]
    assert len(seqs) == len(set(seqs)) == 48  # each message exactly once in the clustering group
    audit = [c for c in cluster.consumers if c.group == "audit-broadcast"]
    assert [c.received_total for c in audit] == [48, 48]  # broadcasting: everyone gets everything
    for c in service:
        assert c.pull_errors == {}


def test_a_stopped_consumer_hands_its_queues_over() -> None:
    scenario = parse_scenario("""
duration = 60
[[topics]]
name = "T"
queues = 4
[[consumers]]
group = "G"
client_id = "10.0.0.1@a"
subscriptions = { T = "*" }
stop = 20.0
[[consumers]]
group = "G"
client_id = "10.0.0.2@b"
subscriptions = { T = "*" }
[[produce]]
at = 30.0
topic = "T"
count = 8
""")
    cluster = run_scenario(scenario)
    clients = by_id(cluster)
    assert clients["10.0.0.1@a"].held_queues() == []
    assert held(clients["10.0.0.2@b"], "T") == [0, 1, 2, 3]
    assert clients["10.0.0.2@b"].received_total == 8
    assert cluster.brokers["broker-a"].consumer_ids("G") == ["10.0.0.2@b"]


SLOW = """
duration = 60
[[topics]]
name = "T"
queues = 1
[[consumers]]
group = "G"
client_id = "10.0.0.1@slow"
subscriptions = { T = "*" }
consume_ms = 1000
consume_threads = 1
[[consumers]]
group = "G"
client_id = "10.0.0.2@other"
subscriptions = { T = "*" }
[[produce]]
at = 5.0
topic = "T"
count = 10
"""


def test_a_slow_listener_keeps_messages_cached_and_the_offset_at_the_first_unconsumed() -> None:
    cluster = EmulatedCluster(parse_scenario(SLOW))
    cluster.run_until(7.5)
    slow = by_id(cluster)["10.0.0.1@slow"]
    assert slow.received_total == 2  # one thread, 1 s per message, since 5.0 s
    (pq,) = [pq for mq, pq in running_info.running_mq_table(slow) if mq.topic == "T"]
    assert (pq.cached_msg_count, pq.cached_msg_min_offset, pq.cached_msg_max_offset) == (8, 2, 9)
    assert pq.commit_offset == 2  # the first offset still in flight
    cluster.run_until(30)
    assert slow.received_total == 10
    rows, _ = cluster.brokers["broker-a"].consume_stats("G", "T")
    assert [(e.broker_offset, e.consumer_offset, e.pull_offset) for _, e in rows] == [(10, 10, 10)]


def test_a_killed_consumer_is_replaced_at_once_because_the_broker_sees_the_socket_close() -> None:
    cluster = run_scenario(load_scenario("idle-consumers"), at=20)
    clients = by_id(cluster)
    cluster.stop_consumer("10.0.0.1@pushConsumer1", kill=True)
    cluster.advance(1)  # well before the next 20 s periodic rebalance
    assert held(clients["10.0.0.2@pushConsumer2"], "TopicTest") == [0]
    # killed: nothing unregistered nor persisted by the client, but the channel close removed it
    assert cluster.brokers["broker-a"].consumer_ids("lhy-test-consumerGroup") == ["10.0.0.2@pushConsumer2"]
