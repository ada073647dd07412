"""A topic left behind: the client that subscribed topicB stops after consuming, another client of
the group (topicA only) keeps running, and more messages go to topicB. The broker leaves topicB
out of consume stats (its subscription table no longer names it; mqadmin shows nothing), yet its
offsets stay in the offset table: progress must show its rows, marked, and the doctor its backlog.

Numbers by hand from the scenario: 10 messages to topicB at 5 s, round robin over 2 queues (5
each), all consumed and committed by c2 before it stops at 20 s; 65 more at 30 s, round robin
from queue 0 on: 33 on queue 0 (offset 38) and 32 on queue 1 (offset 37), none consumed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from rmqctl.cli.app import app

SCENARIO = """\
name = "topic-left-behind"
duration = 60

[[brokers]]
name = "broker-a"

[[topics]]
name = "topicA"
queues = 2

[[topics]]
name = "topicB"
queues = 2

[[consumers]]
group = "g"
client_id = "10.0.0.1@c1"
subscriptions = { topicA = "*" }
start = 25.0

[[consumers]]
group = "g"
client_id = "10.0.0.2@c2"
subscriptions = { topicA = "*", topicB = "*" }
stop = 20.0

[[produce]]
at = 5.0
topic = "topicB"
count = 10

[[produce]]
at = 30.0
topic = "topicB"
count = 65

[[produce]]
at = 30.0
topic = "topicA"
count = 8
"""

C1 = "10.0.0.1@c1"


def run(tmp_path: Path, *args: str) -> tuple[int, Any]:
    scenario = tmp_path / "left.toml"
    scenario.write_text(SCENARIO)
    result = CliRunner().invoke(app, ["--emulator", str(scenario), "-o", "json", *args])
    return result.exit_code, json.loads(result.stdout)


def test_progress_shows_the_left_topic_marked_with_its_backlog(tmp_path: Path) -> None:
    code, doc = run(tmp_path, "group", "progress", "g")
    assert code == 0
    rows = [(q["queue_id"], q["broker_offset"], q["consumer_offset"], q["diff"], q["owner"], q.get("subscribed"))
            for q in doc["queues"] if q["topic"] == "topicB"]
    assert rows == [(0, 38, 5, 33, None, False), (1, 37, 5, 32, None, False)]
    assert all("subscribed" not in q for q in doc["queues"] if q["topic"] != "topicB")
    assert doc["total_diff"] == 65


def test_doctor_reports_the_left_topic_with_its_backlog(tmp_path: Path) -> None:
    code, doc = run(tmp_path, "doctor", "g", "--fail-on", "warning")
    assert code == 1
    (f,) = [f for f in doc["findings"] if f["code"] == "ABANDONED_TOPIC_BACKLOG"]
    assert f["severity"] == "warning"
    assert (f["evidence"]["topic"], f["evidence"]["backlog"], f["evidence"]["online_clients"]) == ("topicB", 65, [C1])
    assert f["title"] == "65 messages wait in topicB, which no online client of g subscribes"


def test_group_list_counts_the_left_topics_backlog_as_progress_does(tmp_path: Path) -> None:
    code, doc = run(tmp_path, "group", "list")
    assert code == 0
    (row,) = [g for g in doc["groups"] if g["group"] == "g"]
    # topicA: 8 sent at 30 s, consumed by c1; topicB: 33 + 32 left behind (never 0, never unknown)
    assert row["total_diff"] == 65 and "unknown_diff_topics" not in row
    _, progress = run(tmp_path, "group", "progress", "g")
    assert row["total_diff"] == progress["total_diff"] == sum(q["diff"] for q in progress["queues"])
    _, matched = run(tmp_path, "group", "list", "--match", "^g$")
    assert [g["total_diff"] for g in matched["groups"]] == [65]


def test_an_unreadable_running_info_keeps_the_committed_topic_and_says_why(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whether a client still subscribes topicB cannot be told when its running info fails: the
    rows of the committed topic stay (their backlog is the group's either way), unmarked, and the
    view says what is not known; the total equals the list's."""
    from rmqctl import errors
    from rmqctl.backends.remoting import RemotingBackend

    original = RemotingBackend.consumer_running_info

    async def failing(self: RemotingBackend, address: str, group: str, client_id: str) -> Any:
        if client_id == C1:
            raise errors.TimeoutError("no answer within 3s")
        return await original(self, address, group, client_id)

    monkeypatch.setattr(RemotingBackend, "consumer_running_info", failing)
    code, doc = run(tmp_path, "group", "progress", "g")
    assert code == 5  # a client's running info failed: partial
    rows = [(q["queue_id"], q["diff"], q.get("subscribed")) for q in doc["queues"] if q["topic"] == "topicB"]
    assert rows == [(0, 33, None), (1, 32, None)]
    assert doc["total_diff"] == 65
    assert "topicB" in doc["unavailable"]["topic_subscribers"] and C1 in doc["unavailable"]["topic_subscribers"]
    code, doc = run(tmp_path, "doctor", "g")
    assert "ABANDONED_TOPIC_BACKLOG" not in {f["code"] for f in doc["findings"]}
    (skip,) = [s for s in doc["skipped"] if s["code"] == "ABANDONED_TOPIC_BACKLOG"]
    assert "topicB" in skip["reason"]
