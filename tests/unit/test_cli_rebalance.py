"""``rmqctl rebalance simulate`` from flags (no cluster needed)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from rmqctl.cli.app import app


def run(*args: str):
    return CliRunner().invoke(app, ["rebalance", "simulate", *args])


def test_seed_001_uneven_split_and_idle_consumer() -> None:
    result = run("--topic", "T", "--brokers", "broker-a=16", "--clients", "3", "-o", "json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    counts = [len(qs) for qs in doc["assignments"].values()]
    assert counts == [6, 5, 5]
    first = doc["assignments"]["10.0.0.1@client-1"]
    assert [q["queue_id"] for q in first] == [0, 1, 2, 3, 4, 5]  # one contiguous block

    idle = run("--topic", "T", "--brokers", "broker-a=1", "--clients", "2", "-o", "json")
    assert json.loads(idle.stdout)["idle_clients"] == ["10.0.0.2@client-2"]


def test_edits_add_remove_and_queue_count() -> None:
    result = run("--topic", "T", "--brokers", "a=2,b=2", "--clients", "x@1,y@2",
                 "--add-client", "z@3", "--remove-client", "x@1", "--queues", "3", "-o", "json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert sorted(doc["assignments"]) == ["y@2", "z@3"]
    assert sum(len(v) for v in doc["assignments"].values()) == 6  # 3 queues on each broker


def test_duplicate_client_leaves_a_share_to_nobody() -> None:
    doc = json.loads(run("--topic", "T", "--brokers", "a=4", "--clients", "c@1,c@1", "-o", "json").stdout)
    assert [q["queue_id"] for q in doc["assignments"]["c@1"]] == [0, 1]
    assert [q["queue_id"] for q in doc["unassigned_queues"]] == [2, 3]


def test_bad_inputs_are_usage_errors() -> None:
    assert run("--topic", "T", "--brokers", "a=4", "--clients", "2", "--strategy", "NOPE").exit_code == 2
    assert run("--topic", "T", "--brokers", "a=4", "--clients", "2", "--vnodes", "3").exit_code == 2
    missing = run("--topic", "T")
    assert missing.exit_code == 2 and "--brokers" in missing.stderr
    negative = run("--topic", "T", "--brokers", "a=4", "--clients", "-1")
    assert negative.exit_code == 2 and negative.stdout == ""
    assert negative.stderr.startswith("rmqctl: error: --clients -1: a count of clients cannot be negative")
    assert "Traceback" not in missing.stderr


def test_machine_room_options() -> None:
    nearby = json.loads(run("--topic", "T", "--brokers", "room1@a=2,room2@b=2",
                            "--clients", "room1-x@1,room2-y@2,room2-z@3", "--strategy", "MACHINE_ROOM_NEARBY-AVG",
                            "--broker-room", r"^(\w+)@", "--client-room", r"^(\w+)-", "-o", "json").stdout)
    # each room's queues stay with that room's clients
    assert {c: [q["broker"] for q in qs] for c, qs in nearby["assignments"].items()} == {
        "room1-x@1": ["room1@a", "room1@a"], "room2-y@2": ["room2@b"], "room2-z@3": ["room2@b"]}
    rooms = json.loads(run("--topic", "T", "--brokers", "room1@a=2,room2@b=2", "--clients", "2",
                           "--strategy", "MACHINE_ROOM", "--idcs", "room1", "-o", "json").stdout)
    assert [q["broker"] for q in rooms["unassigned_queues"]] == ["room2@b", "room2@b"]
    assert run("--topic", "T", "--brokers", "a=4", "--clients", "2",
               "--strategy", "MACHINE_ROOM_NEARBY-AVG").exit_code == 2
