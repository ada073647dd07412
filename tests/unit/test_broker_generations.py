"""What 5.5 brokers changed in the admin surface rmqctl reads, without Java: the system topics
they create at start, and the bodies of the lite-topic era (new topic and group attributes,
new wrapper keys), decoded from literal JSON as a 5.5.0 broker sends it."""

from __future__ import annotations

import pytest

from rmqctl.model import topic_kind


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
