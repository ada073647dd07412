"""A 5.x group's retry policy and maximum of deliveries, read from its stored config.

The config bodies are written here as a 5.x broker answers GET_SUBSCRIPTIONGROUP_CONFIG (fastjson,
fields alphabetical); a 4.x config has no ``groupRetryPolicy`` at all. The delays are the ones
``CustomizedRetryPolicy`` and ``ExponentialRetryPolicy`` compute."""

from __future__ import annotations

from rmqctl.model import GroupView, RetryPolicy, SubscriptionGroupConfig
from rmqctl.remoting import bodies
from rmqctl.report.group import retry_policy_doc

EXPONENTIAL_5X = (b'{"attributes":{},"brokerId":0,"consumeBroadcastEnable":true,"consumeEnable":true,'
                  b'"consumeFromMinEnable":true,"consumeMessageOrderly":false,"consumeTimeoutMinute":15,'
                  b'"groupName":"G","groupRetryPolicy":{"exponentialRetryPolicy":{"initial":1000,"max":60000,'
                  b'"multiplier":3},"type":"EXPONENTIAL"},"groupSysFlag":0,'
                  b'"notifyConsumerIdsChangedEnable":true,"retryMaxTimes":3,"retryQueueNums":1,'
                  b'"whichBrokerWhenConsumeSlowly":1}')
CUSTOMIZED_5X = (b'{"groupName":"G","groupRetryPolicy":{"customizedRetryPolicy":{"next":[1000,2000,3000,4000]},'
                 b'"type":"CUSTOMIZED"},"retryMaxTimes":16}')
CONFIG_4X = (b'{"brokerId":0,"consumeBroadcastEnable":true,"consumeEnable":true,"consumeFromMinEnable":true,'
             b'"consumeMessageOrderly":false,"groupName":"G","notifyConsumerIdsChangedEnable":true,'
             b'"retryMaxTimes":16,"retryQueueNums":1,"whichBrokerWhenConsumeSlowly":1}')


def test_a_5x_config_carries_its_retry_policy_and_a_4x_one_none() -> None:
    exponential = bodies.subscription_group_config(EXPONENTIAL_5X)
    assert exponential.retry_policy == RetryPolicy("EXPONENTIAL", None, 1000, 60000, 3)
    assert exponential.retry_max_times == 3 and exponential.max_deliveries == 4
    assert bodies.subscription_group_config(CUSTOMIZED_5X).retry_policy == RetryPolicy(
        "CUSTOMIZED", (1000, 2000, 3000, 4000))
    assert bodies.subscription_group_config(CONFIG_4X).retry_policy is None


def test_delays_follow_the_brokers_policies() -> None:
    default = RetryPolicy()
    # the table is read two places on (the old delay levels 3, 4, 5 …), capped at its last entry
    assert [default.delay_ms(r) for r in (0, 1, 2, 15, 16, 40)] == [10_000, 30_000, 60_000, 7_200_000,
                                                                    7_200_000, 7_200_000]
    assert RetryPolicy(delays_ms=(1, 2, 3, 4)).delay_ms(0) == 3 and RetryPolicy(delays_ms=(1, 2, 3, 4)).delay_ms(5) == 4
    assert [RetryPolicy("EXPONENTIAL").delay_ms(r) for r in (0, 1, 3, 20)] == [5_000, 10_000, 40_000, 7_200_000]
    assert [RetryPolicy("EXPONENTIAL", None, 1000, 60000, 3).delay_ms(r) for r in (0, 2, 5)] == [1000, 9000, 60000]
    assert default.describe() == "customized (10s, 30s, 1m … 2h)"
    assert RetryPolicy("EXPONENTIAL", None, 1000, 60000, 3).describe() == "exponential (1s ×3 up to 1m)"


def test_the_view_gives_the_fewest_deliveries_when_brokers_differ() -> None:
    view = GroupView("G", (), {}, {}, (), group_configs={
        "broker-a": SubscriptionGroupConfig("G", retry_max_times=16),
        "broker-b": SubscriptionGroupConfig("G", retry_max_times=2, retry_policy=RetryPolicy("EXPONENTIAL"))})
    assert view.max_deliveries == 3 and view.retry_max_times == 2
    doc = retry_policy_doc(view)
    assert doc is not None
    assert (doc["type"], doc["max_deliveries"], doc["differs_by_broker"]) == ("CUSTOMIZED", 3, True)
    assert retry_policy_doc(GroupView("G", (), {}, {}, ())) is None  # not read: unknown, not a default
    assert GroupView("G", (), {}, {}, ()).max_deliveries is None


def test_the_service_reads_each_brokers_config_and_the_findings_use_it() -> None:
    import asyncio
    import dataclasses

    from rmqctl.doctor import run_checks
    from rmqctl.service import ClusterService
    from tests.fake_source import FakeClock
    from tests.unit.test_doctor import G
    from tests.unit.test_proxy_view import PROXY, BehindAProxy, pop_view_at
    from tests.unit.test_service import A, B

    backend = BehindAProxy()
    backend.configs[A] = {G: SubscriptionGroupConfig(G, retry_max_times=3)}
    assert not backend.configs[B]  # broker-b keeps none: only broker-a's is in the view
    view = asyncio.run(ClusterService(backend, FakeClock(), proxies=(PROXY,)).group_view(G))
    assert view.group_configs == {"broker-a": SubscriptionGroupConfig(G, retry_max_times=3)}
    assert view.max_deliveries == 4

    configs = {"broker-a": SubscriptionGroupConfig(G, retry_max_times=3)}
    before, after = (dataclasses.replace(v, group_configs=configs)
                     for v in (pop_view_at(10, 1_000_000), pop_view_at(55, 1_040_000)))
    (failures,) = [f for f in run_checks(after, before) if f.code == "CONSUME_FAILURES"]
    assert f"after 4 deliveries (retryMaxTimes 3) the group's retry policy sends it to %DLQ%{G}" in failures.detail
    assert failures.evidence["max_deliveries"] == 4
