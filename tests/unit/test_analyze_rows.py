"""``analyze stuck -o jsonl|csv``: the job's document as rows, one per queue (and one per group),
like every other command (docs/output.md), never the whole list in one line or one cell."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from rmqctl.cli.analyze_cmd import stuck_view
from rmqctl.cli.render import OutputFormat, emit
from rmqctl.report import analyze

#: what the Spark job writes for -o json (two queues of one group), trimmed to a few keys
JOB_DOCUMENT: dict[str, Any] = {
    "since": "2026-03-01T11:52:00.000Z", "until": "2026-03-01T12:02:00.000Z",
    "since_ts": 1772365920000, "until_ts": 1772366520000,
    "queues": [
        {"group": "g", "topic": "T", "broker": "broker-a", "queue_id": 0, "status": "STALLED", "owner": "c2",
         "lag_end": 200, "lag_time_ms": None, "reason": "frozen", "window_end_ts": 1772366520000},
        {"group": "g", "topic": "T", "broker": "broker-a", "queue_id": 1, "status": "OK", "owner": "c1",
         "lag_end": 0, "lag_time_ms": 0, "reason": "caught up", "window_end_ts": 1772366520000},
    ],
    "groups": [{"group": "g", "status": "STALLED", "queues": 2, "stuck_queues": 1, "total_lag_start": 10,
                "total_lag_end": 200, "lag_trend": "growing"}],
}


def _emit(fmt: OutputFormat) -> str:
    out = io.StringIO()
    emit(stuck_view(analyze.stuck(JOB_DOCUMENT, engine="local")), fmt, out)
    return out.getvalue()


def test_jsonl_is_a_row_per_queue_then_per_group() -> None:
    rows = [json.loads(line) for line in _emit(OutputFormat.jsonl).splitlines()]
    assert [(r["kind"], r.get("queue_id")) for r in rows] == [("queue", 0), ("queue", 1), ("group", None)]
    assert rows[0] == {"kind": "queue", **JOB_DOCUMENT["queues"][0]}
    assert rows[2] == {"kind": "group", **JOB_DOCUMENT["groups"][0]}


def test_csv_is_the_queues_with_a_header() -> None:
    rows = list(csv.DictReader(io.StringIO(_emit(OutputFormat.csv))))
    assert [(r["queue_id"], r["status"], r["lag_time_ms"]) for r in rows] == [("0", "STALLED", ""), ("1", "OK", "0")]


def test_json_is_the_document_with_errors() -> None:
    assert json.loads(_emit(OutputFormat.json)) == {**JOB_DOCUMENT, "engine": "local", "errors": {}}
