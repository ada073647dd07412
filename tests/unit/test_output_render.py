"""The renderer and the documents over hand-built views: held-twice queues, response-code names,
tables that fit a width."""

from __future__ import annotations

import json
import re

from rmqctl import errors, report
from rmqctl.cli.group import assignment_view
from rmqctl.cli.render import OutputFormat, Table, View, emit, format_table
from rmqctl.doctor import run_checks
from tests.unit.test_doctor import C1, C2, C3, conn, info, queues, view


def held_twice_view():  # type: ignore[no-untyped-def]
    from rmqctl.model import parse_tag_expression

    qs = queues("TopicTest", 4)
    sub = parse_tag_expression("TopicTest", "*", 1)
    # C1 and C2 both report queue 1 (C2 still had it when C1 took it over after a rebalance)
    return view([conn(C1), conn(C2), conn(C3)],
                [info(C1, [sub], qs[:2]), info(C2, [sub], qs[1:3]), info(C3, [sub], qs[3:])],
                {"TopicTest": sub}, {"TopicTest": qs})


def test_assignment_marks_queues_held_twice() -> None:
    shown = assignment_view(held_twice_view())
    assert shown.document["held_twice"] == [
        {"topic": "TopicTest", "broker": "broker-a", "queue_id": 1, "clients": [C1, C2]}]
    states = [(r["client_id"], r["queue_id"], r["state"]) for r in shown.records[0].rows]
    assert states == [(C1, 0, "held"), (C1, 1, "held twice"), (C2, 1, "held twice"), (C2, 2, "held"),
                      (C3, 3, "held")]
    assert "held twice: TopicTest@broker-a/1 by 10.0.0.1@consumer1 and 10.0.0.2@consumer2" in shown.footer
    assert shown.footer[0] == "3 clients, 0 queues held by nobody, 1 queue held twice"


def test_doctor_names_queues_held_twice() -> None:
    # one sample: two holders may be a rebalance under way, so the verdict waits
    first = {f.code for f in run_checks(held_twice_view())}
    assert "REBALANCE_IN_PROGRESS" in first and "QUEUE_HELD_TWICE" not in first
    # still held twice after the doctor sampled again: reported
    (finding,) = [f for f in run_checks(held_twice_view(), resampled=True) if f.code == "QUEUE_HELD_TWICE"]
    assert finding.severity == "error"
    assert finding.title == "1 queue of test-consumer is held by two clients at once"
    assert "TopicTest@broker-a/1 by 10.0.0.1@consumer1 and 10.0.0.2@consumer2" in finding.detail
    assert finding.evidence["queues"] == [
        {"topic": "TopicTest", "broker": "broker-a", "queue_id": 1, "clients": [C1, C2], "diff": None}]


def test_broadcasting_holders_are_not_held_twice() -> None:
    from dataclasses import replace

    broadcast = replace(held_twice_view(), message_model="BROADCASTING")
    assert report.group_assignment(broadcast)["held_twice"] == []
    assert not [f for f in run_checks(broadcast) if f.code == "QUEUE_HELD_TWICE"]


def test_response_codes_are_names_with_the_number() -> None:
    assert str(errors.RemoteError.for_code(17, "topic[x] not exist", address="127.0.0.1:10911")) == (
        "TOPIC_NOT_EXIST (17) from 127.0.0.1:10911: topic[x] not exist")
    named = errors.RemoteError.for_code(24, "the consumer's subscription not exist", name="SUBSCRIPTION_NOT_EXIST")
    assert str(named) == "SUBSCRIPTION_NOT_EXIST (24): the consumer's subscription not exist"
    assert str(errors.RemoteError.for_code(9999, "")) == "response code 9999: no remark"


def test_table_fits_a_width_by_its_flexible_columns() -> None:
    rows = [{"client_id": "10.0.0.1@c1", "queues": " ".join(f"broker-a/{i}" for i in range(12))}]
    table = Table(["client_id", "queues"], rows, flexible=("queues",))
    full = format_table(table)
    assert full.splitlines()[1] == "10.0.0.1@c1  " + rows[0]["queues"]
    narrow = format_table(table, width=50)
    assert all(len(line) <= 50 for line in narrow.splitlines())
    assert narrow.splitlines()[1].startswith("10.0.0.1@c1  broker-a/0")  # the fixed column is intact
    assert "".join(narrow.split()).endswith("broker-a/11")  # the flexible one wrapped, nothing lost


def test_timestamps_are_formatted_only_in_tables(capsys) -> None:  # type: ignore[no-untyped-def]
    rows = [{"queue_id": 0, "last_updated_ts": 1_704_067_206_000}]
    document = {"queues": rows, "errors": {}}
    emitted = View(document, [Table(["queue_id", "last_updated_ts"], rows)],
                   records=[report.RowSet("queue", ("queue_id", "last_updated_ts"), rows)])
    emit(emitted, OutputFormat.table)
    text = capsys.readouterr().out
    assert text.splitlines()[0].split() == ["QUEUE_ID", "LAST_UPDATED"]
    assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:06", text) and "1704067206000" not in text
    emit(emitted, OutputFormat.jsonl)
    assert json.loads(capsys.readouterr().out) == {"kind": "queue", "queue_id": 0, "last_updated_ts": 1704067206000}


def test_long_commands_show_progress_on_a_terminal_only(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import asyncio
    import io

    from rmqctl.cli.common import progress_after

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    async def run(stream: io.StringIO, delay: float) -> None:
        monkeypatch.setattr("sys.stderr", stream)
        async with progress_after(delay, "emulator healthy"):
            async def shown() -> None:
                while "reading emulator healthy" not in stream.getvalue():
                    await asyncio.sleep(0.01)
            if delay == 0 and stream.isatty():
                await asyncio.wait_for(shown(), 5)

    terminal = Terminal()
    asyncio.run(run(terminal, 0))
    assert "reading emulator healthy" in terminal.getvalue()
    quick = Terminal()
    asyncio.run(run(quick, 60))  # finished long before the delay: nothing shown
    assert quick.getvalue().strip("\x1b[?25lh\r\n ") == ""
    piped = io.StringIO()
    asyncio.run(run(piped, 0))
    assert piped.getvalue() == ""


def test_drawing_a_table_does_not_load_rich() -> None:
    import subprocess
    import sys
    from pathlib import Path

    code = ("import sys; from rmqctl.cli.render import Table, format_table; "
            "format_table(Table(['a'], [{'a': 'x' * 50}], flexible=('a',)), width=20, colour=True); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'rich'))")
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root, check=True,
                          timeout=60)
    assert proc.stdout.strip() == "[]"


def test_an_80_column_table_never_cuts_a_number_or_a_header() -> None:
    columns = ["topic", "broker", "queue_id", "broker_offset", "consumer_offset", "diff", "last_consumed_ts", "owner"]
    rows = [{"topic": "OrderTopic", "broker": "broker-a", "queue_id": q, "broker_offset": 123_456_789 + q,
             "consumer_offset": 123_456_000 + q, "diff": 789, "last_consumed_ts": 1_704_067_206_000,
             "owner": "172.16.0.103@ConsumerForTagA"} for q in range(3)]
    text = format_table(Table(columns, rows), width=80)
    lines = text.splitlines()
    assert all(len(line) <= 80 for line in lines)
    assert "…" not in text
    words = text.split()
    for q in range(3):  # every number whole
        assert str(123_456_789 + q) in words and str(123_456_000 + q) in words
    # headers wrap after "_" rather than being cut: BROKER_ / OFFSET
    assert "BROKER_" in words and "BROKER" in words and "BRO" not in words
    # whatever does not fit is left out whole, and the table says which
    assert lines[-1].startswith("(") and "left out at 80 columns" in lines[-1]
    left = lines[-1].split(": ", 1)[1].split(";")[0].split(", ")
    assert left and all(name in {"LAST_CONSUMED", "OWNER", "DIFF"} for name in left)
    assert all(name not in " ".join(lines[:2]) for name in left)


def test_group_list_csv_carries_the_cache_columns() -> None:
    import csv
    import io

    from rmqctl.model import GroupSummary

    built = 1_700_000_000_000
    doc = report.group_list([GroupSummary("g-cached", 2, "PUSH", "CLUSTERING", "V4_9_7", 12, cached=True,
                                          cached_at=built),
                             GroupSummary("g-live", 1, "PUSH", "CLUSTERING", "V4_9_7", 3)],
                            {}, now_ms=built + 90_000)
    out = io.StringIO()
    emit(View(doc, [], records=report.group_list_rows(doc)), OutputFormat.csv, out)
    rows = list(csv.DictReader(io.StringIO(out.getvalue())))
    assert {k: rows[0][k] for k in ("group", "cached", "cached_at_ts", "cache_age_ms")} == {
        "group": "g-cached", "cached": "true", "cached_at_ts": str(built), "cache_age_ms": "90000"}
    # a line read now carries no cache columns: empty cells, as in JSON, where the keys are absent
    assert {k: rows[1][k] for k in ("group", "cached", "cached_at_ts", "cache_age_ms")} == {
        "group": "g-live", "cached": "", "cached_at_ts": "", "cache_age_ms": ""}
