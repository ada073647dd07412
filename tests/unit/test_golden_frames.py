"""Frames captured from real RocketMQ 5.3.3 and 4.9.7 name servers and brokers
(see tests/golden/README.md and tests/golden/rmq-4.9.7/README.md).

The expected values come from the capture scenario described there: topic GoldenTopic with 4
queues, group GoldenGroup with one Java push consumer subscribing ``tagA || tagB``; committed
offsets q0=2, q1=2, q2=2, q3=1.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from rmqctl import errors
from rmqctl.model import MessageQueue
from rmqctl.remoting import bodies, frame

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
#: (directory, server version) of each captured set; every test runs against both
SETS = {"5.3.3": (GOLDEN, "V5_3_3"), "4.9.7": (GOLDEN / "rmq-4.9.7", "V4_9_7")}


Loader = Callable[[str], frame.RemotingCommand]


@pytest.fixture(params=sorted(SETS))
def golden_dir(request: pytest.FixtureRequest) -> Path:
    return SETS[request.param][0]


@pytest.fixture
def server_version(golden_dir: Path) -> str:
    return next(version for directory, version in SETS.values() if directory == golden_dir)


@pytest.fixture
def load(golden_dir: Path) -> Loader:
    def read(name: str) -> frame.RemotingCommand:
        cmd = frame.decode((golden_dir / name).read_bytes())
        assert cmd.is_response
        return cmd

    return read


def test_cluster_info_with_unquoted_broker_ids(load: Loader) -> None:
    cmd = load("106_get_broker_cluster_info.bin")
    info = bodies.cluster_info(cmd.body)
    (broker,) = info.brokers.values()
    assert list(broker.addrs) == [0]  # the key came unquoted: {0:"127.0.0.1:port"}
    assert broker.master_addr and broker.master_addr.startswith("127.0.0.1:")
    assert info.clusters[broker.cluster] == (broker.broker_name,)


def test_both_route_dialects_give_the_same_route(load: Loader) -> None:
    legacy = bodies.topic_route("GoldenTopic", load("105_get_routeinfo_by_topic_v399_fastjson.bin").body)
    standard = bodies.topic_route("GoldenTopic", load("105_get_routeinfo_by_topic_v479_standard_json.bin").body)
    assert b'{0:"' in load("105_get_routeinfo_by_topic_v399_fastjson.bin").body
    assert legacy == standard
    (qd,) = legacy.queue_datas
    assert (qd.read_queue_nums, qd.write_queue_nums, qd.perm) == (4, 4, 6)
    assert [mq.queue_id for mq in legacy.read_queues()] == [0, 1, 2, 3]


@pytest.mark.parametrize("name", ["105_error_topic_not_exist.bin",
                                  "105_error_topic_not_exist_rocketmq_header.bin"])
def test_topic_not_exist_error_in_both_header_types(load: Loader, name: str) -> None:
    cmd = load(name)
    assert cmd.code == 17 and cmd.body == b""
    assert "NoSuchGoldenTopic" in (cmd.remark or "")
    assert isinstance(errors.RemoteError.for_code(cmd.code, cmd.remark), errors.TopicNotExist)


def test_binary_header_frames_decode(load: Loader) -> None:
    cmd = load("106_get_broker_cluster_info_rocketmq_header.bin")
    assert cmd.serialize_type == frame.SERIALIZE_ROCKETMQ and cmd.language == "JAVA"
    assert bodies.cluster_info(cmd.body).masters()
    err = load("38_get_consumer_list_by_group_error_rocketmq_header.bin")
    assert err.serialize_type == frame.SERIALIZE_ROCKETMQ and err.code == 1


def test_topic_stats_with_message_queue_keys(load: Loader) -> None:
    stats = bodies.topic_stats("GoldenTopic", load("202_get_topic_stats_info.bin").body)
    assert [(o.queue.queue_id, o.min_offset, o.max_offset) for o in stats.offsets] == [
        (0, 0, 2), (1, 0, 2), (2, 0, 2), (3, 0, 1)]
    assert all(o.last_update_timestamp > 0 for o in stats.offsets)


def test_consumer_connection_and_broker_subscription(load: Loader, server_version: str) -> None:
    cc = bodies.consumer_connection(load("203_get_consumer_connection_list.bin").body)
    (conn,) = cc.connections
    assert conn.client_id == "127.0.0.1@golden_consumer" and conn.language == "JAVA"
    assert conn.version_desc == server_version  # the Java client of the same release
    sub = cc.subscriptions["GoldenTopic"]
    assert sub.tags == ("tagA", "tagB") or set(sub.tags) == {"tagA", "tagB"}
    assert set(sub.codes) == {3552231, 3552232}  # Java "tagA".hashCode(), "tagB".hashCode()
    assert cc.message_model == "CLUSTERING" and cc.consume_type == "CONSUME_PASSIVELY"


def test_consume_stats_offsets(load: Loader, server_version: str) -> None:
    stats = bodies.consume_stats(load("208_get_consume_stats.bin").body)
    topic = {mq.queue_id: e for mq, e in stats.offsets.items() if mq.topic == "GoldenTopic"}
    assert {q: (e.broker_offset, e.consumer_offset) for q, e in topic.items()} == {
        0: (2, 2), 1: (2, 2), 2: (2, 2), 3: (1, 1)}
    if server_version.startswith("V4"):
        assert all(e.pull_offset is None for e in topic.values())  # added in 5.1
    else:
        assert all(e.pull_offset is not None and e.pull_offset >= e.consumer_offset
                   for e in topic.values())
    # the retry topic has no committed offset yet, so the broker leaves it out
    assert {mq.topic for mq in stats.offsets} == {"GoldenTopic"}


def test_running_info_from_a_real_java_consumer(load: Loader) -> None:
    info = bodies.consumer_running_info(
        "127.0.0.1@golden_consumer", load("307_get_consumer_running_info.bin").body)
    assert info.strategy == "AVG"
    assert info.consume_type == "CONSUME_PASSIVELY" and info.message_model == "CLUSTERING"
    assert {mq for mq in info.mq_table if mq.topic == "GoldenTopic"} == {
        MessageQueue("GoldenTopic", mq.broker_name, q) for mq in info.mq_table for q in range(4)}
    assert [s.topic for s in info.user_subscriptions()] == ["GoldenTopic"]
    assert info.start_timestamp > 0
    # statusTable: one row per subscribed topic, retry topic included; an idle client fails nothing
    assert set(info.status) == {"GoldenTopic", "%RETRY%GoldenGroup"}
    assert info.consume_failed_tps == 0 and info.consume_failed_msgs == 0


def test_subscription_groups_runtime_and_lists(load: Loader, server_version: str) -> None:
    groups = bodies.subscription_groups(load("201_get_all_subscriptiongroup_config.bin").body)
    assert "GoldenGroup" in groups and "TOOLS_CONSUMER" in groups
    table = bodies.kv_table(load("28_get_broker_runtime_info.bin").body)
    assert table["brokerVersionDesc"] == server_version
    ids = bodies.string_list(load("38_get_consumer_list_by_group.bin").body, "consumerIdList")
    assert ids == ["127.0.0.1@golden_consumer"]
    assert "GoldenGroup" in bodies.string_list(load("300_query_topic_consume_by_who.bin").body, "groupList")
    topics = bodies.string_list(load("206_get_all_topic_list_from_nameserver.bin").body, "topicList")
    assert "GoldenTopic" in topics and "%RETRY%GoldenGroup" in topics


def test_every_golden_frame_reencodes_to_identical_bytes(golden_dir: Path) -> None:
    for path in sorted(golden_dir.glob("*.bin")):
        raw = path.read_bytes()
        cmd = frame.decode(raw)
        again = frame.decode(frame.encode(cmd))
        assert (again.code, again.opaque, again.ext_fields, again.body, again.remark) == (
            cmd.code, cmd.opaque, cmd.ext_fields, cmd.body, cmd.remark), path.name
