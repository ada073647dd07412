"""What-if simulation: edits, idle clients, orphaned queues, mismatches and the JSON contract."""

from __future__ import annotations

import json

import pytest

from rmqctl.errors import UsageError
from rmqctl.model import MessageQueue
from rmqctl.rebalance import UnknownStrategyError, java_sorted_ids
from rmqctl.rebalance.simulate import (
    Edits,
    Mismatch,
    queues_from_counts,
    simulate,
    synthetic_client_ids,
)
from rmqctl.report.rebalance import simulation


def q(broker: str, queue_id: int, topic: str = "T") -> MessageQueue:
    return MessageQueue(topic, broker, queue_id)


def qd(broker: str, queue_id: int, topic: str = "T") -> dict[str, object]:
    return {"topic": topic, "broker": broker, "queue_id": queue_id}


def test_one_queue_two_consumers_json_contract() -> None:
    result = simulate("AVG", "T", [q("broker-a", 0)], ["10.0.0.2@c2", "10.0.0.1@c1"])
    assert simulation(result) == {
        "strategy": "AVG",
        "topic": "T",
        "message_model": "CLUSTERING",
        "assignments": {"10.0.0.1@c1": [qd("broker-a", 0)], "10.0.0.2@c2": []},
        "idle_clients": ["10.0.0.2@c2"],
        "unassigned_queues": [],
        "not_subscribed": [],
        "errors": {},
    }


def test_sixteen_queues_three_consumers_6_5_5() -> None:
    result = simulate(
        "AVG", "T", queues_from_counts("T", {"broker-a": 16}), synthetic_client_ids(3)
    )
    assert [[mq.queue_id for mq in qs] for qs in result.assignments.values()] == [
        [0, 1, 2, 3, 4, 5],
        [6, 7, 8, 9, 10],
        [11, 12, 13, 14, 15],
    ]
    assert result.idle_clients == [] and result.unassigned_queues == []
    assert "mismatches" not in simulation(result)


def test_queues_from_counts_in_java_order() -> None:
    assert queues_from_counts("T", {"broker-9": 1, "broker-10": 2}) == [
        q("broker-10", 0),
        q("broker-10", 1),
        q("broker-9", 0),
    ]
    with pytest.raises(UsageError):
        queues_from_counts("T", {"broker-a": -1})


def test_synthetic_client_ids() -> None:
    assert synthetic_client_ids(5) == [f"10.0.0.{i}@client-{i}" for i in range(1, 6)]
    assert synthetic_client_ids(0) == []
    for count in (10, 12, 157, 1000):
        made = synthetic_client_ids(count)
        assert len(set(made)) == count
        assert java_sorted_ids(made) == made  # Java order is creation order
    assert synthetic_client_ids(12)[0] == "10.100.100.100@client-01"
    assert synthetic_client_ids(12)[-1] == "10.100.100.111@client-12"


def test_edits_add_remove_and_resize() -> None:
    topic_queues = queues_from_counts("T", {"broker-a": 4, "broker-b": 4})
    clients = ["c1", "c2", "c2"]
    result = simulate(
        "AVG",
        "T",
        topic_queues,
        clients,
        edits=Edits(
            add_clients=("c3",),
            remove_clients=("c2",),  # both channels of c2 go
            queue_counts={"broker-a": 1, "broker-b": 0, "broker-c": 2},
        ),
    )
    assert result.assignments == {
        "c1": [q("broker-a", 0), q("broker-c", 0)],
        "c3": [q("broker-c", 1)],
    }


def test_removing_an_unknown_client_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="not in the group"):
        simulate("AVG", "T", [q("b", 0)], ["c1"], edits=Edits(remove_clients=("c9",)))


def test_duplicate_client_id_orphans_a_share() -> None:
    # Adding an id that is already there is how a duplicated clientId is simulated: both "a"
    # processes take index 0's share, and index 1's share (queues 2 and 3) is nobody's.
    result = simulate(
        "AVG", "T", queues_from_counts("T", {"b": 6}), ["a", "b"], edits=Edits(add_clients=("a",))
    )
    assert result.assignments == {"a": [q("b", 0), q("b", 1)], "b": [q("b", 4), q("b", 5)]}
    assert result.unassigned_queues == [q("b", 2), q("b", 3)]
    assert result.idle_clients == []


def test_consistent_hash_options_and_zero_vnodes() -> None:
    mqs = queues_from_counts("T", {"broker-a": 4})
    result = simulate("CONSISTENT_HASH", "T", mqs, ["c1", "c2"], strategy_options={"vnodes": 0})
    assert result.idle_clients == ["c1", "c2"]
    assert result.unassigned_queues == mqs


def test_consistent_hash_digest_duplicate_case() -> None:
    mqs = queues_from_counts("TopicTest", {"broker-a": 4, "broker-b": 4})
    result = simulate(
        "CONSISTENT_HASH", "TopicTest", mqs, ["10.0.0.1@c1", "10.0.0.1@c1", "10.0.0.2@c2"]
    )
    assert {
        cid: [(mq.broker_name[-1], mq.queue_id) for mq in qs]
        for cid, qs in result.assignments.items()
    } == {
        "10.0.0.1@c1": [("a", 0), ("a", 1), ("a", 3), ("b", 1), ("b", 2), ("b", 3)],
        "10.0.0.2@c2": [("a", 2), ("b", 0)],
    }
    assert result.unassigned_queues == []


def test_machine_room_leaves_foreign_idcs_unassigned() -> None:
    mqs = [q("room1@a", 0), q("room2@b", 0), q("room1@", 0)]
    result = simulate(
        "MACHINE_ROOM", "T", mqs, ["c1"], strategy_options={"consumer_idcs": {"room1"}}
    )
    assert result.assignments == {"c1": [q("room1@a", 0)]}
    assert result.unassigned_queues == [q("room1@", 0), q("room2@b", 0)]


def test_pop_entries_cover_their_broker() -> None:
    mqs = queues_from_counts("T", {"broker-a": 3, "broker-b": 2})
    result = simulate("POP-AVG", "T", mqs, ["c1", "c2"])
    # The broker's list holds one -1 entry per queue; as a set it is one per broker.
    assert result.assignments == {
        "c1": [q("broker-a", -1), q("broker-b", -1)],
        "c2": [q("broker-a", -1), q("broker-b", -1)],
    }
    assert result.unassigned_queues == [] and result.idle_clients == []


def test_topic_without_queues_leaves_everyone_idle() -> None:
    result = simulate("AVG", "T", [], ["c1", "c2"])
    assert result.assignments == {"c1": [], "c2": []}
    assert result.idle_clients == ["c1", "c2"]


def test_config_is_the_same_for_everyone() -> None:
    config = [q("broker-b", 1), q("broker-a", 0)]
    result = simulate(
        "CONFIG",
        "T",
        queues_from_counts("T", {"broker-a": 2, "broker-b": 2}),
        ["c1", "c2"],
        strategy_options={"queues": config},
    )
    assert result.assignments == {
        "c1": [q("broker-a", 0), q("broker-b", 1)],
        "c2": [q("broker-a", 0), q("broker-b", 1)],
    }
    assert result.unassigned_queues == [q("broker-a", 1), q("broker-b", 0)]


def test_mismatches_against_actual_assignment() -> None:
    mqs = queues_from_counts("T", {"broker-a": 4})
    actual = {
        "c1": [q("broker-a", 0), q("broker-a", 1), q("broker-x", 0, topic="Other")],  # as expected
        "c2": [q("broker-a", 2)],  # lost broker-a/3
        "ghost": [q("broker-a", 3)],  # not in the group at all
    }
    result = simulate("AVG", "T", mqs, ["c1", "c2"], actual=actual)
    assert result.mismatches == {
        "c2": Mismatch(missing=(q("broker-a", 3),), unexpected=()),
        "ghost": Mismatch(missing=(), unexpected=(q("broker-a", 3),)),
    }
    assert simulation(result)["mismatches"] == {
        "c2": {"missing": [qd("broker-a", 3)], "unexpected": []},
        "ghost": {"missing": [], "unexpected": [qd("broker-a", 3)]},
    }


def test_no_mismatch_gives_an_empty_mapping() -> None:
    mqs = queues_from_counts("T", {"broker-a": 2})
    result = simulate(
        "AVG_BY_CIRCLE",
        "T",
        mqs,
        ["c1", "c2"],
        actual={"c1": [q("broker-a", 0)], "c2": [q("broker-a", 1)]},
    )
    assert simulation(result)["mismatches"] == {}


def test_queues_of_another_topic_are_refused() -> None:
    with pytest.raises(UsageError, match="queues of topic 'Other'"):
        simulate("AVG", "T", [q("b", 0, topic="Other")], ["c1"])


def test_unknown_strategy() -> None:
    with pytest.raises(UnknownStrategyError, match="valid names"):
        simulate("ROUND_ROBIN", "T", [q("b", 0)], ["c1"])


def test_json_round_trip_with_odd_characters() -> None:
    result = simulate(
        "AVG",
        "t\U0001f600",
        queues_from_counts("t\U0001f600", {"br\u00f8ker": 1}),
        ["c\uffff", "c\U0001f600"],
    )
    # Java order: the emoji (D83D DE00) sorts before U+FFFF, so it gets the queue.
    assert list(result.assignments) == ["c\U0001f600", "c\uffff"]
    assert result.idle_clients == ["c\uffff"]
    # the document survives JSON intact: surrogate pairs and non-ASCII names as written
    queue = {"topic": "t\U0001f600", "broker": "br\u00f8ker", "queue_id": 0}
    assert json.loads(json.dumps(simulation(result), ensure_ascii=True)) == {
        "strategy": "AVG", "topic": "t\U0001f600", "message_model": "CLUSTERING",
        "assignments": {"c\U0001f600": [queue], "c\uffff": []},
        "idle_clients": ["c\uffff"], "unassigned_queues": [], "not_subscribed": [], "errors": {},
    }
