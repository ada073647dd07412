"""Totals under ``group progress`` and ``group list`` on the topic-overwrite scenario: each total
is the sum of the rows shown, ``--match`` included, and a row whose diff is unknown is counted
as unknown, never as 0.

``group list`` reads a topic its consume stats leave out as ``group progress`` does (the offset
table), so both print one total. Expected numbers are worked out by hand from
rmqctl/emulator/scenarios/topic-overwrite.toml:
8 messages each to topicA and topicB (4 queues each, 2 per queue). c1 (topicA) consumes
topicA queues 0-1; queues 2-3 go to c2, which never subscribed topicA: 2 + 2 waiting. c2
(topicB) consumes topicB queues 2-3; queues 0-1 go to c1: 2 + 2 waiting. Total 8, 4 per topic."""

from __future__ import annotations

import json
from typing import Any

from typer.testing import CliRunner

from rmqctl.cli.app import app
from rmqctl.report import retotal_progress
from rmqctl.report.group import GroupProgressDoc

runner = CliRunner()
E = ("--emulator", "topic-overwrite")


def _run(*args: str) -> str:
    result = runner.invoke(app, [*E, *args])
    assert result.exit_code == 0, result.output
    return result.output


def _json(*args: str) -> Any:
    return json.loads(_run(*args, "-o", "json"))


def test_progress_total_is_the_sum_of_every_queue() -> None:
    doc = _json("group", "progress", "g1")
    assert (doc["total_diff"], doc["unknown_diff_queues"]) == (8, 0)
    assert "Total diff: 8\n" in _run("group", "progress", "g1")


def test_match_applies_to_the_progress_totals() -> None:
    doc = _json("group", "progress", "g1", "--match", "topicB")
    assert {q["topic"] for q in doc["queues"]} == {"topicB"}
    # topicB's rows come from the offset table, which keeps no pull offset: inflight unknown, not 0
    assert (doc["total_diff"], doc["unknown_diff_queues"], doc["total_inflight"]) == (4, 0, None)
    out = _run("group", "progress", "g1", "--match", "topicB")
    assert "Total diff: 4\n" in out and "Total diff: 8" not in out
    assert "Total inflight: unknown\n" in out


def test_match_with_no_row_totals_zero() -> None:
    doc = _json("group", "progress", "g1", "--match", "%RETRY%")
    assert [q["diff"] for q in doc["queues"]] == [0]
    assert doc["total_diff"] == 0


def _row(topic: str, diff: int | None, inflight: int | None) -> dict[str, Any]:
    return {"topic": topic, "broker": "broker-a", "queue_id": 0, "diff": diff, "inflight": inflight}


def test_retotal_counts_unknown_rows_apart() -> None:
    doc = GroupProgressDoc(group="g", queues=[_row("A", 3, 1), _row("B", None, None), _row("B", 2, 0)],
                           total_diff=99, unknown_diff_queues=99, total_inflight=99, errors={})
    retotal_progress(doc)
    assert (doc["total_diff"], doc["unknown_diff_queues"], doc["total_inflight"]) == (5, 1, 1)
    doc["queues"] = [_row("A", 3, 1)]
    retotal_progress(doc)
    assert (doc["total_diff"], doc["unknown_diff_queues"], doc["total_inflight"]) == (3, 0, 1)
    doc["unavailable"] = {"inflight": "not in this source"}
    assert retotal_progress(doc)["total_inflight"] is None


def test_inflight_without_a_pull_offset_is_unknown_never_zero() -> None:
    from rmqctl.model import MessageQueue, QueueProgress

    mq = MessageQueue("T", "broker-a", 0)
    assert QueueProgress(mq, 10, 4, None, 0).inflight is None
    assert QueueProgress(mq, 10, 4, 7, 0).inflight == 3
    assert QueueProgress(mq, 0, 0, 7, 0, offsets_from="unknown").inflight is None
    doc = GroupProgressDoc(group="g", queues=[_row("A", 3, None)], total_diff=0, unknown_diff_queues=0,
                           total_inflight=0, errors={})
    assert retotal_progress(doc)["total_inflight"] is None
    doc["queues"] = [_row("A", 3, None), _row("A", 1, 2)]
    assert retotal_progress(doc)["total_inflight"] == 2


def test_group_list_counts_a_left_out_topic_from_the_offset_table() -> None:
    # consume stats list topicA (in the broker's table: c1 heartbeated last) and %RETRY%g1; topicB
    # has committed offsets (c2 consumed its queues 2-3) but is left out of them. Like group
    # progress, the list reads topicB from the offset table: 2 + 2 on topicA, 2 + 2 on topicB.
    (group,) = _json("group", "list")["groups"]
    assert (group["group"], group["total_diff"]) == ("g1", 8)
    assert "unknown_diff_topics" not in group
    table = _run("group", "list")
    assert "unknown" not in table and " 8 " in table


def test_group_list_total_is_the_sum_of_the_progress_rows() -> None:
    (group,) = _json("group", "list")["groups"]
    progress = _json("group", "progress", "g1")
    assert group["total_diff"] == sum(q["diff"] for q in progress["queues"]) == progress["total_diff"] == 8


def test_group_list_without_a_left_out_topic_names_none() -> None:
    result = runner.invoke(app, ["--emulator", "tag-overwrite", "-o", "json", "group", "list"])
    assert result.exit_code == 0, result.output
    assert all("unknown_diff_topics" not in g for g in json.loads(result.output)["groups"])


def test_group_list_csv_has_the_same_total() -> None:
    header, row = _run("-o", "csv", "group", "list").splitlines()
    cells = dict(zip(header.split(","), row.split(","), strict=True))
    assert (cells["total_diff"], cells["unknown_diff_topics"]) == ("8", "")
