"""``rebalance simulate --group``: what-if over a live (emulated) group, compared with what the
clients report holding right now."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from rmqctl.cli.app import app


def simulate(scenario: str, *args: str) -> dict:
    result = CliRunner().invoke(app, ["--emulator", scenario, "rebalance", "simulate", *args, "-o", "json"])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_live_group_matches_its_strategy_then_a_new_client_changes_everything() -> None:
    doc = simulate("uneven-allocation", "--group", "lhy-test-consumerGroup")
    assert doc["strategy"] == "AVG" and doc["topic"] == "TopicTest"
    assert [len(q) for q in doc["assignments"].values()] == [6, 5, 5]
    assert doc["mismatches"] == {}
    grown = simulate("uneven-allocation", "--group", "lhy-test-consumerGroup", "--add-client", "10.0.0.4@new")
    assert [len(q) for q in grown["assignments"].values()] == [4, 4, 4, 4]
    assert set(grown["mismatches"]) == set(grown["assignments"])  # everyone would move


def test_topic_overwrite_shows_the_share_its_owner_never_takes() -> None:
    doc = simulate("topic-overwrite", "--group", "g1", "--topic", "topicA")
    # c2 never subscribed topicA but takes part in its allocation (RocketMQ counts every client of
    # the group): its share, queues 2 and 3, is held by nobody -- exactly what the clients show now
    assert doc["not_subscribed"] == ["10.0.0.2@c2"]
    assert [q["queue_id"] for q in doc["unassigned_queues"]] == [2, 3]
    assert doc["assignments"] == {"10.0.0.1@c1": [{"topic": "topicA", "broker": "broker-a", "queue_id": 0},
                                                 {"topic": "topicA", "broker": "broker-a", "queue_id": 1}],
                                  "10.0.0.2@c2": []}
    assert doc["idle_clients"] == [] and doc["mismatches"] == {} and doc["moves"] == []
    table = CliRunner().invoke(app, ["--emulator", "topic-overwrite", "rebalance", "simulate", "-g", "g1",
                                     "-t", "topicA"])
    assert "10.0.0.2@c2 does not subscribe topicA, yet RocketMQ counts it" in table.stdout
    assert "Held by nobody: broker-a/2 broker-a/3" in table.stdout


def test_broadcasting_group_every_client_holds_every_queue() -> None:
    doc = simulate("healthy", "--group", "audit-broadcast")
    assert doc["message_model"] == "BROADCASTING" and doc["strategy"] == "BROADCASTING"
    every = [f"broker-{b}/{i}" for b in "ab" for i in range(4)]
    assert {cid: [f"{q['broker']}/{q['queue_id']}" for q in qs] for cid, qs in doc["assignments"].items()} == {
        "10.0.0.4@DEFAULT": every, "10.0.0.5@DEFAULT": every}
    assert doc["unassigned_queues"] == [] and doc["moves"] == []


def test_what_if_is_shown_as_moves() -> None:
    result = CliRunner().invoke(app, ["--emulator", "healthy", "rebalance", "simulate", "-g", "order-service",
                                      "--add-client", "10.0.0.9@new"])
    assert result.exit_code == 0, result.stderr
    assert "5 queues would move (now → simulated):" in result.stdout
    assert "  broker-b/3: 10.0.0.3@4002#91000000015838 → 10.0.0.9@new" in result.stdout
    assert "should also hold" not in result.stdout


def test_group_with_several_topics_needs_topic() -> None:
    # g1's clients subscribe topicA and topicB: which one to simulate is the user's choice
    result = CliRunner().invoke(app, ["--emulator", "topic-overwrite", "rebalance", "simulate", "--group", "g1"])
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0] == (
        "rmqctl: error: group g1 consumes 2 topics; choose one with --topic")
    assert "topicA, topicB" in result.stderr


def test_unknown_live_group_is_a_usage_error() -> None:
    missing = CliRunner().invoke(app, ["--emulator", "healthy", "rebalance", "simulate", "--group", "nope"])
    assert missing.exit_code == 2 and "not found" in missing.stderr
