"""What 5.5 brokers changed in the admin surface rmqctl reads, without Java: the system topics
they create at start, and the lite-topic era's bodies (new topic and group attributes, a new
wrapper key) decoded from literal JSON as a 5.5.0 broker sends it; a group bound to a lite topic is
reported as not read (its progress lives in light message queues), never as caught up."""

from __future__ import annotations

import asyncio

import pytest

from rmqctl.doctor import run_checks, skipped_checks
from rmqctl.model import SubscriptionGroupConfig, topic_kind
from rmqctl.remoting import bodies
from rmqctl.service import ClusterService
from tests.fake_source import FakeClock
from tests.unit.test_doctor import G
from tests.unit.test_service import A, TwoBrokers


@pytest.mark.parametrize(
    "name",
    [
        "RMQ_SYS_ROCKSDB_TRANS_HALF_TOPIC",  # 5.5: the RocksDB transaction store's half topic
        "RMQ_SYS_ROCKSDB_TRANS_OP_HALF_TOPIC",  # and its op topic, created by every 5.5 broker
        "RMQ_SYS_TRANS_HALF_TOPIC",
        "TBW102",
    ],
)
def test_system_topics_of_every_broker_generation_are_system(name: str) -> None:
    assert topic_kind(name) == "system"


def test_a_user_topic_is_still_normal() -> None:
    assert topic_kind("RMQ_SYS_ROCKSDB_TRANS_HALF_TOPIC_orders") == "normal"


#: GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201) of a 5.5.0 broker, two groups kept: the new
#: ``forbiddenTable`` key, and a group bound to the LITE topic L55 by its attributes
GROUP_TABLE_55 = (
    b'{"dataVersion":{"counter":1,"stateVersion":0,"timestamp":1795668841082},"forbiddenTable":{},'
    b'"subscriptionGroupTable":{'
    b'"GL55":{"attributes":{"lite.bind.topic":"L55"},"brokerId":0,"consumeBroadcastEnable":false,'
    b'"consumeEnable":true,"consumeFromMinEnable":false,"consumeMessageOrderly":false,'
    b'"consumeTimeoutMinute":15,"groupName":"GL55","groupRetryPolicy":{"type":"CUSTOMIZED"},"groupSysFlag":0,'
    b'"notifyConsumerIdsChangedEnable":true,"retryMaxTimes":16,"retryQueueNums":1,"whichBrokerWhenConsumeSlowly":1},'
    b'"G55":{"attributes":{},"brokerId":0,"consumeBroadcastEnable":true,"consumeEnable":true,'
    b'"consumeFromMinEnable":true,"consumeMessageOrderly":false,"consumeTimeoutMinute":15,"groupName":"G55",'
    b'"groupRetryPolicy":{"type":"CUSTOMIZED"},"groupSysFlag":0,"notifyConsumerIdsChangedEnable":true,'
    b'"retryMaxTimes":16,"retryQueueNums":1,"whichBrokerWhenConsumeSlowly":1}}}'
)


def test_a_5_5_group_table_decodes_with_its_lite_binding() -> None:
    table = bodies.subscription_groups(GROUP_TABLE_55)
    assert table["GL55"].lite_bind_topic == "L55"
    assert table["G55"].lite_bind_topic is None
    assert table["G55"].retry_max_times == 16


@pytest.mark.parametrize(
    ("attributes", "bound"),
    [
        ('{"lite.bind.topic":"L"}', "L"),
        ('{"+lite.bind.topic":"L"}', "L"),  # the key as an update request names it
        ('{"lite.bind.topic":" "}', None),  # blank binds nothing, as the broker reads it
        ('{"lite.sub.model":"Exclusive","priority.factor":"100"}', None),  # other 5.5 attributes
        ("null", None),
    ],
)
def test_the_lite_binding_is_read_from_the_attributes(attributes: str, bound: str | None) -> None:
    body = f'{{"groupName":"G","attributes":{attributes}}}'.encode()
    assert bodies.subscription_group_config(body).lite_bind_topic == bound


def test_a_lite_binding_survives_the_emulators_encoding() -> None:
    config = SubscriptionGroupConfig("GL", lite_bind_topic="L")
    assert bodies.subscription_group_config(bodies.encode_subscription_group_config(config)) == config
    plain = SubscriptionGroupConfig("G")
    assert bodies.subscription_group_config(bodies.encode_subscription_group_config(plain)) == plain


def test_5_5_topic_attributes_decode() -> None:
    body = (b'{"dataVersion":{"counter":2,"stateVersion":0,"timestamp":1},"topicConfigTable":{'
            b'"L55":{"attributes":{"message.type":"LITE","lite.topic.expiration":"-1"},"order":false,"perm":6,'
            b'"readQueueNums":2,"topicFilterType":"SINGLE_TAG","topicName":"L55","topicSysFlag":0,"writeQueueNums":2},'
            b'"P55":{"attributes":{"message.type":"PRIORITY"},"order":false,"perm":6,"readQueueNums":4,'
            b'"topicFilterType":"SINGLE_TAG","topicName":"P55","topicSysFlag":0,"writeQueueNums":4}}}')
    configs = bodies.topic_configs(body)
    assert (configs["L55"].read_queue_nums, configs["P55"].write_queue_nums) == (2, 4)


def lite_group_view(online: bool):  # type: ignore[no-untyped-def]
    backend = TwoBrokers()
    backend.online = online
    backend.configs[A] = {G: SubscriptionGroupConfig(G, lite_bind_topic="L55")}
    return asyncio.run(ClusterService(backend, FakeClock()).group_view(G))


def test_a_lite_groups_progress_is_unavailable_and_says_why() -> None:
    view = lite_group_view(online=False)
    why = view.unavailable["lite_topics"]
    assert "L55" in why and "%LMQ%$L55$" in why
    assert view.lite_bind_topic == "L55"


def test_the_doctor_skips_what_a_lite_groups_progress_would_decide() -> None:
    view = lite_group_view(online=True)
    skipped = skipped_checks(view)
    for code in ("OFFLINE_GROUP_BACKLOG", "LAG_NOT_ADVANCING", "ORPHANED_QUEUES", "IDLE_CONSUMERS"):
        assert "L55" in skipped[code]
    assert not {f.code for f in run_checks(view)} & set(skipped)
    # a group bound to no lite topic keeps every check
    assert "lite_topics" not in asyncio.run(ClusterService(TwoBrokers(), FakeClock()).group_view(G)).unavailable


def test_group_progress_calls_a_lite_groups_totals_unknown_not_zero() -> None:
    from rmqctl.cli.group import progress_view

    shown = progress_view(lite_group_view(online=False))
    assert shown.document["total_inflight"] is None
    assert "Total diff: unknown (lite topics unavailable)" in shown.footer
    assert "Total inflight: unavailable" in shown.footer


def test_group_list_calls_a_lite_groups_total_diff_unknown() -> None:
    backend = TwoBrokers()
    backend.configs[A] = {G: SubscriptionGroupConfig(G, lite_bind_topic="L55")}
    listed = asyncio.run(ClusterService(backend, FakeClock()).group_summaries())
    (summary,) = listed.value
    # the consume stats of the fake say 12; a lite group's own offsets are not among them
    assert (summary.group, summary.clients, summary.total_diff) == (G, 1, None)
    assert f"{G} to L55" in listed.unavailable["lite_topics"]
    plain = TwoBrokers()
    plain.configs[A] = {G: SubscriptionGroupConfig(G)}
    listed = asyncio.run(ClusterService(plain, FakeClock()).group_summaries())
    assert listed.value[0].total_diff == 12 and "lite_topics" not in listed.unavailable


def test_group_progress_json_gives_a_lite_groups_total_diff_as_null() -> None:
    from rmqctl.report import group_progress, retotal_progress

    doc = group_progress(lite_group_view(online=False))
    # the fake's consume stats hold 12 messages of the group's other queues; the lite topics are unread
    assert doc["total_diff"] is None and "L55" in doc["unavailable"]["lite_topics"]
    assert retotal_progress(doc)["total_diff"] is None  # --match retotals the rows it kept
    plain = group_progress(asyncio.run(ClusterService(TwoBrokers(), FakeClock()).group_view(G)))
    assert plain["total_diff"] == 12


def test_snapshot_export_names_a_lite_group_as_not_recorded(tmp_path) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("pyarrow")
    from rmqctl.snapshot.export import export
    from rmqctl.source import Opened

    backend = TwoBrokers()
    backend.configs[A] = {G: SubscriptionGroupConfig(G, lite_bind_topic="L55")}
    clock = FakeClock()
    opened = Opened(ClusterService(backend, clock), "fake", clock)
    warnings: list[str] = []
    result = asyncio.run(export(opened, [G], tmp_path, count=1, every=1, broker_times=False,
                                handle_signals=False, warn=warnings.append))
    assert "L55" in result.unread_groups[G] and "%LMQ%$L55$" in result.unread_groups[G]
    assert [w for w in warnings if G in w and "L55" in w]


def test_a_topics_message_type_is_read_from_its_attributes() -> None:
    body = (b'{"dataVersion":{"counter":2,"stateVersion":0,"timestamp":1},"topicConfigTable":{'
            b'"L55":{"attributes":{"message.type":"LITE","lite.topic.expiration":"-1"},"order":false,"perm":6,'
            b'"readQueueNums":2,"topicFilterType":"SINGLE_TAG","topicName":"L55","topicSysFlag":0,"writeQueueNums":2},'
            b'"P55":{"attributes":{"+message.type":"PRIORITY"},"order":false,"perm":6,"readQueueNums":4,'
            b'"topicFilterType":"SINGLE_TAG","topicName":"P55","topicSysFlag":0,"writeQueueNums":4},'
            b'"T49":{"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"T49",'
            b'"topicSysFlag":0,"writeQueueNums":4}}}')
    configs = bodies.topic_configs(body)
    assert {name: c.message_type for name, c in configs.items()} == {"L55": "LITE", "P55": "PRIORITY", "T49": None}
    lite = configs["L55"]
    assert bodies.topic_config(bodies.encode_topic_config(lite)) == lite
    assert bodies.topic_config(bodies.encode_topic_config(configs["T49"])) == configs["T49"]


def test_the_tui_calls_a_lite_groups_lag_a_lower_bound_not_a_total() -> None:
    from tui.columns import show_group_lag
    from tui.state import GroupLag, group_summary

    view = lite_group_view(online=False)
    line = group_summary(view)
    assert not view.progress and line.endswith("│ lag unknown (lite topics not read)")
    plain = group_summary(asyncio.run(ClusterService(TwoBrokers(), FakeClock()).group_view(G)))
    assert plain.endswith("lag 12")
    assert show_group_lag(GroupLag(12, 4, 0, unread_part=True)) == "≥12"
    assert str(show_group_lag(GroupLag(0, 0, 0, unread_part=True))) == str(show_group_lag(GroupLag(0, 0, 3)))
    assert GroupLag(0, 0, 0, unread_part=True).sort_value is None
    assert show_group_lag(GroupLag(12, 4, 0)) == "12"
