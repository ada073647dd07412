"""The broker rules the emulator mirrors, one at a time, on bare BrokerState objects (no I/O)."""

from __future__ import annotations

from rmqctl.emulator.broker import BrokerState
from rmqctl.emulator.clock import Scheduler
from rmqctl.emulator.groups import ConsumerGroupInfo
from rmqctl.emulator.pulls import FLAG_COMMIT_OFFSET, FLAG_SUBSCRIPTION, FLAG_SUSPEND, PullRequestHeader, PullResult
from rmqctl.model import OffsetEntry, SubscriptionGroupConfig, parse_tag_expression
from rmqctl.remoting.bodies import ConsumerData, HeartbeatData
from rmqctl.remoting.codes import ResponseCode
from rmqctl.remoting.frame import RemotingCommand

T0 = 1_000_000


class FakeChannel:
    """A client connection that records what the broker sends it."""

    _ids = 0

    def __init__(self, addr: str = "10.0.0.9:1") -> None:
        FakeChannel._ids += 1
        self.channel_id = FakeChannel._ids
        self.remote_addr = addr
        self.notified: list[str] = []

    def notify_consumer_ids_changed(self, group: str) -> None:
        self.notified.append(group)

    async def invoke(self, request: RemotingCommand, timeout: float) -> RemotingCommand:
        raise AssertionError("not used here")


def sub(topic: str, expr: str, version: int):
    return parse_tag_expression(topic, expr, version)


def consumer(group: str, *subs, model: str = "CLUSTERING") -> ConsumerData:
    return ConsumerData(group, "CONSUME_PASSIVELY", model, "CONSUME_FROM_LAST_OFFSET", tuple(subs))


def make_broker() -> BrokerState:
    broker = BrokerState("broker-a", "DefaultCluster", Scheduler(T0))
    broker.create_topic("T", 4, 4)
    broker.create_topic("T2", 2, 2)
    return broker


def pull(broker: BrokerState, *, offset: int = 0, version: int = 0, expr: str | None = None,
         suspend: bool = False, commit: int = 0, topic: str = "T", queue: int = 0) -> list[PullResult]:
    flag = (FLAG_SUSPEND if suspend else 0) | (FLAG_SUBSCRIPTION if expr is not None else 0)
    flag |= FLAG_COMMIT_OFFSET if commit else 0
    got: list[PullResult] = []
    header = PullRequestHeader("G", topic, queue, offset, flag, version, commit_offset=commit,
                               subscription=expr)
    broker.pull(None, header, got.append)
    return got


# -- ConsumerGroupInfo.updateSubscription ---------------------------------------------------------


def test_update_subscription_adds_replaces_only_on_greater_version_and_removes_missing() -> None:
    info = ConsumerGroupInfo("G", "CONSUME_PASSIVELY", "CLUSTERING", "CONSUME_FROM_LAST_OFFSET")
    assert info.update_subscription([sub("T", "a", 10)], T0) is True  # new topic: an update
    assert info.update_subscription([sub("T", "b", 11)], T0) is False  # replaced, not an update
    assert info.subscriptions["T"].expression == "b"
    assert info.update_subscription([sub("T", "c", 11)], T0) is False  # equal version: kept
    assert info.subscriptions["T"].expression == "b"
    assert info.update_subscription([sub("T", "d", 5)], T0) is False  # older: kept
    assert info.subscriptions["T"].expression == "b"
    # a heartbeat that lacks T removes it for the whole group
    assert info.update_subscription([sub("T2", "*", 1)], T0) is True
    assert list(info.subscriptions) == ["T2"]


def test_channels_are_keyed_by_connection_so_one_client_id_can_appear_twice() -> None:
    broker = make_broker()
    one, two = FakeChannel(), FakeChannel()
    data = HeartbeatData("10.0.0.1@same", (consumer("G", sub("T", "*", 1)),))
    broker.heartbeat(one, data, "JAVA", 479)
    broker.heartbeat(two, data, "JAVA", 479)
    assert broker.consumer_ids("G") == ["10.0.0.1@same", "10.0.0.1@same"]


def test_notify_only_on_new_channel_or_topic_set_change_never_on_replaced_tags() -> None:
    broker = make_broker()
    a, b = FakeChannel(), FakeChannel()
    broker.heartbeat(a, HeartbeatData("A", (consumer("G", sub("T", "tagA", 1)),)), "JAVA", 479)
    assert a.notified == ["G"]  # a's own registration is a new channel
    broker.heartbeat(b, HeartbeatData("B", (consumer("G", sub("T", "tagB", 2)),)), "JAVA", 479)
    assert a.notified == ["G", "G"] and b.notified == ["G"]
    assert broker.consumer_table["G"].subscriptions["T"].expression == "tagB"
    # a re-heartbeats with a newer version: the tags are replaced, nobody is told
    broker.heartbeat(a, HeartbeatData("A", (consumer("G", sub("T", "tagA", 3)),)), "JAVA", 479)
    assert broker.consumer_table["G"].subscriptions["T"].expression == "tagA"
    assert a.notified == ["G", "G"] and b.notified == ["G"]
    # b heartbeats another topic set: T removed, T2 added -> everyone is notified
    broker.heartbeat(b, HeartbeatData("B", (consumer("G", sub("T2", "*", 4)),)), "JAVA", 479)
    assert list(broker.consumer_table["G"].subscriptions) == ["T2"]
    assert a.notified == ["G", "G", "G"] and b.notified == ["G", "G"]


def test_broadcasting_groups_are_never_notified() -> None:
    broker = make_broker()
    a, b = FakeChannel(), FakeChannel()
    broker.heartbeat(a, HeartbeatData("A", (consumer("B", sub("T", "*", 1), model="BROADCASTING"),)), "JAVA", 479)
    broker.heartbeat(b, HeartbeatData("B", (consumer("B", sub("T", "*", 1), model="BROADCASTING"),)), "JAVA", 479)
    assert a.notified == [] and b.notified == []


def test_heartbeat_creates_the_retry_topic_with_the_groups_retry_queue_count() -> None:
    broker = make_broker()
    broker.set_group_config(SubscriptionGroupConfig("G", retry_queue_nums=3))
    broker.heartbeat(FakeChannel(), HeartbeatData("A", (consumer("G", sub("T", "*", 1)),)), "JAVA", 479)
    assert broker.topics["%RETRY%G"].read_queue_nums == 3
    broker.heartbeat(FakeChannel(), HeartbeatData("B", (consumer("H", sub("T", "*", 1)),)), "JAVA", 479)
    assert broker.topics["%RETRY%H"].read_queue_nums == 1  # auto-created group, default config
    assert "H" in broker.group_configs


def test_the_table_lives_only_while_the_group_has_a_channel() -> None:
    broker = make_broker()
    a, b = FakeChannel(), FakeChannel()
    broker.heartbeat(a, HeartbeatData("A", (consumer("G", sub("T", "x", 1)),)), "JAVA", 479)
    broker.heartbeat(b, HeartbeatData("B", (consumer("G", sub("T", "y", 2)),)), "JAVA", 479)
    broker.unregister_client(b, "B", "G", None)
    assert a.notified[-1] == "G"  # unregister notifies the rest
    assert broker.consumer_table["G"].subscriptions["T"].expression == "y"  # survives b leaving
    broker.channel_closed(a)
    assert "G" not in broker.consumer_table


# -- pulls ------------------------------------------------------------------------------------------


def registered(broker: BrokerState, expr: str, version: int) -> None:
    broker.heartbeat(FakeChannel(), HeartbeatData("C", (consumer("G", sub("T", expr, version)),)), "JAVA", 479)


def test_tag_codes_are_java_string_hash_codes_and_untagged_messages_get_zero() -> None:
    broker = make_broker()
    broker.put_message("T", 0, "TagA", seq=1, msg_id="m1")
    broker.put_message("T", 0, None, seq=2, msg_id="m2")
    assert [m.tags_code for m in broker.queue("T", 0)] == [2598919, 0]


def test_pull_uses_the_groups_stored_subscription_and_skips_non_matching_offsets() -> None:
    broker = make_broker()
    registered(broker, "tagB", 5)
    for i, tag in enumerate(["tagA", "tagB", "tagA"]):
        broker.put_message("T", 0, tag, seq=i, msg_id=f"m{i}")
    # the caller subscribes tagA itself, but the stored entry (tagB) decides
    (result,) = pull(broker, version=1)
    assert result.code == ResponseCode.SUCCESS
    assert [m.tag for m in result.messages] == ["tagB"]
    assert result.next_begin_offset == 3  # skipped past both tagA entries
    # the request's own expression is used only with the SUBSCRIPTION sys flag
    (own,) = pull(broker, version=1, expr="tagA")
    assert [m.queue_offset for m in own.messages] == [0, 2]


def test_nothing_matching_answers_retry_immediately_with_the_next_offset_moved() -> None:
    broker = make_broker()
    registered(broker, "tagB", 5)
    broker.put_message("T", 0, "tagA", seq=1, msg_id="m1")
    (result,) = pull(broker)
    assert result.code == ResponseCode.PULL_RETRY_IMMEDIATELY and result.next_begin_offset == 1


def test_missing_topic_answers_24_and_an_older_stored_version_answers_25() -> None:
    broker = make_broker()
    (no_group,) = pull(broker)
    assert no_group.code == ResponseCode.SUBSCRIPTION_NOT_EXIST
    assert no_group.remark.startswith("the consumer's group info not exist")
    registered(broker, "*", 5)
    (no_topic,) = pull(broker, topic="T2")
    assert no_topic.code == ResponseCode.SUBSCRIPTION_NOT_EXIST
    assert no_topic.remark.startswith("the consumer's subscription not exist")
    (stale,) = pull(broker, version=6)
    assert stale.code == ResponseCode.SUBSCRIPTION_NOT_LATEST
    (fine,) = pull(broker, version=5)
    assert fine.code == ResponseCode.PULL_NOT_FOUND  # empty queue at offset 0


def test_long_polling_wakes_only_for_a_matching_message_or_the_timeout() -> None:
    broker = make_broker()
    registered(broker, "tagB", 5)
    got = pull(broker, suspend=True)
    assert got == [] and broker.suspended_pulls() == 1
    broker.put_message("T", 0, "tagA", seq=1, msg_id="m1")  # does not match the filter
    broker.scheduler.run_until(T0 + 1000)
    assert got == []
    broker.put_message("T", 0, "tagB", seq=2, msg_id="m2")
    broker.scheduler.run_until(T0 + 1001)
    assert [r.code for r in got] == [ResponseCode.SUCCESS]
    assert [m.tag for m in got[0].messages] == ["tagB"]

    later = pull(broker, offset=2, suspend=True)
    broker.scheduler.run_until(T0 + 15_000)
    assert later == []
    broker.scheduler.run_until(T0 + 16_002)
    assert [r.code for r in later] == [ResponseCode.PULL_NOT_FOUND]


def test_a_woken_pull_rechecks_the_subscription() -> None:
    broker = make_broker()
    registered(broker, "*", 5)
    got = pull(broker, suspend=True, version=5)
    # the group's table loses T before the message arrives (another client's heartbeat)
    broker.heartbeat(FakeChannel(), HeartbeatData("D", (consumer("G", sub("T2", "*", 9)),)), "JAVA", 479)
    broker.put_message("T", 0, "x", seq=1, msg_id="m1")
    broker.scheduler.run_until(T0 + 1)
    assert [r.code for r in got] == [ResponseCode.SUBSCRIPTION_NOT_EXIST]


def test_commit_offset_piggybacks_on_pulls_and_consume_stats_reports_last_timestamp() -> None:
    broker = make_broker()
    registered(broker, "*", 5)
    for i in range(3):
        broker.scheduler.run_until(T0 + 1000 * (i + 1))
        broker.put_message("T", 1, "x", seq=i, msg_id=f"m{i}")
    pull(broker, queue=1, offset=3, commit=2)
    assert broker.stored_offset("G", "T", 1) == 2
    rows, _ = broker.consume_stats("G")
    by_queue = {(mq.topic, mq.broker_name, mq.queue_id): entry for mq, entry in rows}
    # lastTimestamp is the store time of the message at consumerOffset - 1 (offset 1, stored at +2 s)
    assert by_queue[("T", "broker-a", 1)] == OffsetEntry(broker_offset=3, consumer_offset=2, pull_offset=3,
                                                         last_timestamp=T0 + 2000)
    # never committed: shown as 0, lastTimestamp 0
    assert by_queue[("T", "broker-a", 0)] == OffsetEntry(broker_offset=0, consumer_offset=0, pull_offset=0,
                                                         last_timestamp=0)


def test_consume_stats_drops_topics_missing_from_the_subscription_table() -> None:
    broker = make_broker()
    registered(broker, "*", 5)
    broker.commit_offset("G", "T", 0, 0)
    broker.commit_offset("G", "T2", 0, 0)
    rows, _ = broker.consume_stats("G")
    assert {mq.topic for mq, _ in rows} == {"T"}  # T2 has offsets but is not subscribed right now
    rows, _ = broker.consume_stats("G", topic_list=["T2"])
    assert {mq.topic for mq, _ in rows} == {"T2"}
