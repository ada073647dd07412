"""POP retry topics name their group: ``%RETRY%<group>_<topic>`` and ``%RETRY%<group>+<topic>``
(the two forms of the broker's ``KeyBuilder``) are mapped back to the group and the topic they
retry, so no POP retry topic lists as a consumer group of its own."""

from __future__ import annotations

import asyncio

import pytest

from rmqctl.backends import Capabilities
from rmqctl.model import SubscriptionGroupConfig, retry_topic_groups, retry_topic_owner
from rmqctl.service import ClusterService
from tests.unit.test_service import A, TwoBrokers

TOPICS = {"T2", "T4", "order_created", "created", "TopicA"}


@pytest.mark.parametrize(
    ("name", "groups", "owner"),
    [
        ("%RETRY%G", set(), ("G", None)),  # a remoting group's own retry topic
        ("%RETRY%G_simple_T2", set(), ("G_simple", "T2")),  # V1: what follows the '_' is a topic
        ("%RETRY%G_retry+T4", set(), ("G_retry", "T4")),  # V2: '+' is in no group or topic name
        ("%RETRY%G_retry+unknown", set(), ("G_retry", "unknown")),  # V2 needs no topic list
        ("%RETRY%G_simple_T2", {"G_simple_T2"}, ("G_simple_T2", None)),  # a configured group
        ("%RETRY%order_service", set(), ("order_service", None)),  # 'service' is no topic
        ("%RETRY%G_order_created", set(), ("G", "order_created")),  # the longest topic wins
        ("%RETRY%G_order_created", {"G_order"}, ("G_order", "created")),  # unless a group decides
        ("%RETRY%G_", set(), ("G_", None)),
        ("%RETRY%_T2", set(), ("_T2", None)),
        ("%DLQ%G", set(), None),
        ("T2", set(), None),
    ],
)
def test_retry_topic_owner(name: str, groups: set[str], owner: tuple[str, str | None] | None) -> None:
    assert retry_topic_owner(name, topics=TOPICS, groups=groups) == owner


def test_retry_topic_groups_lists_no_pop_retry_topic_as_a_group() -> None:
    topics = ["T2", "T4", "%RETRY%G_push", "%RETRY%G_simple_T2", "%RETRY%G_retry_T4", "%RETRY%G_x+T2",
              "%DLQ%G_retry"]
    assert retry_topic_groups(topics) == {"G_push", "G_simple", "G_retry", "G_x"}
    assert retry_topic_groups(topics, configured={"G_simple_T2"}) == {"G_push", "G_simple_T2", "G_retry", "G_x"}


class PopBrokers(TwoBrokers):
    """Two brokers whose name server lists POP retry topics beside a remoting group's."""

    async def topic_list(self) -> list[str]:
        return ["T2", "T4", "%RETRY%G_push", "%RETRY%G_simple_T2", "%RETRY%G_retry_T4", "%RETRY%G_retry+T2"]


def test_the_service_lists_the_groups_of_pop_retry_topics_not_the_topics() -> None:
    backend = PopBrokers()
    backend.configs[A] = {"G_simple": SubscriptionGroupConfig("G_simple"),
                          "G_retry": SubscriptionGroupConfig("G_retry")}
    assert asyncio.run(ClusterService(backend).groups()).value == ["G_push", "G_retry", "G_simple"]
    no_configs = PopBrokers(Capabilities(lists_subscription_groups=False))
    assert asyncio.run(ClusterService(no_configs).groups()).value == ["G_push", "G_retry", "G_simple"]
