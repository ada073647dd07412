"""A consumer whose listener hangs before its first commit: consume stats leave its topic out
(the broker lists only topics with a committed offset), yet every message of the queues it holds
waits. Progress, the group list and the doctor must show that backlog, never a healthy 0.

Numbers are worked out by hand from the scenario: 250,000 messages round robin over 2 queues is
125,000 per queue, none consumed, min offset 0.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from rmqctl.cli.app import app

SCENARIO = """\
name = "hung-first-commit"
duration = 60

[[brokers]]
name = "broker-a"

[[topics]]
name = "TopicHung"
queues = 2

[[consumers]]
group = "hung-group"
client_id = "10.0.0.9@hung"
subscriptions = { TopicHung = "*" }
start = 0.0
stall = 1.0

[[produce]]
at = 5.0
topic = "TopicHung"
count = 250000
"""

CLIENT = "10.0.0.9@hung"


def run(tmp_path: Path, *args: str) -> tuple[int, Any]:
    scenario = tmp_path / "hung.toml"
    scenario.write_text(SCENARIO)
    result = CliRunner().invoke(app, ["--emulator", str(scenario), "-o", "json", *args])
    return result.exit_code, json.loads(result.stdout)


def test_progress_shows_the_held_queues_with_their_whole_backlog(tmp_path: Path) -> None:
    code, doc = run(tmp_path, "group", "progress", "hung-group")
    assert code == 0
    rows = {q["queue_id"]: q for q in doc["queues"] if q["topic"] == "TopicHung"}
    assert sorted(rows) == [0, 1]
    for q in rows.values():
        assert (q["broker_offset"], q["consumer_offset"], q["diff"]) == (125_000, 0, 125_000)
        assert q["owner"] == CLIENT
    assert doc["total_diff"] == 250_000


def test_group_list_counts_the_backlog(tmp_path: Path) -> None:
    code, doc = run(tmp_path, "group", "list")
    assert code == 0
    (row,) = [g for g in doc["groups"] if g["group"] == "hung-group"]
    assert row["total_diff"] == 250_000


def test_doctor_names_the_client_the_queues_and_the_backlog(tmp_path: Path) -> None:
    code, doc = run(tmp_path, "doctor", "hung-group")
    assert code == 1
    (finding,) = [f for f in doc["findings"] if f["code"] == "BLOCKED_QUEUE"]
    assert finding["severity"] == "error"
    assert [(q["topic"], q["queue_id"], q["client"], q["reason"], q["backlog"])
            for q in finding["evidence"]["queues"]] == [
        ("TopicHung", 0, CLIENT, "never committed", 125_000),
        ("TopicHung", 1, CLIENT, "never committed", 125_000),
    ]
