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
    missing = {cid: [q["queue_id"] for q in m["missing"]] for cid, m in doc["mismatches"].items()}
    assert missing == {"10.0.0.2@c2": [2, 3]}  # allocated to c2, which never subscribed topicA


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
