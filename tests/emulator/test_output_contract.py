"""The output contract (docs/output.md), tried command by command on the embedded emulator.

Golden documents are written out by hand from the scenario files (the emulator is deterministic
on its virtual clock, which starts at 2024-01-01 00:00:00 UTC = 1704067200000 ms); the other
tests check that jsonl and csv are the document's rows, that names and values agree between
commands, and that tables fit the terminal.
"""

from __future__ import annotations

import csv
import io
import json
import re
from typing import Any

import pytest
from typer.testing import CliRunner

from rmqctl.cli.app import app

runner = CliRunner()
EPOCH_MS = 1_704_067_200_000
ANSI = re.compile(r"\x1b\[")


def cli(*args: str, env: dict[str, str] | None = None, code: int = 0) -> str:
    result = runner.invoke(app, list(args), env=env)
    assert result.exit_code == code, (result.stdout, result.stderr)
    return result.stdout


#: each run serves the emulator on fresh loopback ports: the only thing that cannot be pinned
PORT = re.compile(r"127\.0\.0\.1:\d+")


def doc(*args: str) -> Any:
    return json.loads(PORT.sub("127.0.0.1:PORT", cli(*args, "-o", "json")))


def lines(*args: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in PORT.sub("127.0.0.1:PORT", cli(*args, "-o", "jsonl")).splitlines()]


# ---------------------------------------------------------------------------------------------
# Golden documents


def test_group_list_document() -> None:
    # tag-overwrite: one group of two push consumers; 20 messages over 4 queues, all committed
    assert doc("--emulator", "tag-overwrite", "group", "list") == {
        "groups": [{"group": "test-consumer", "clients": 2, "online": True, "consume_type": "PUSH",
                    "message_model": "CLUSTERING", "version": "V5_3_3", "total_diff": 0,
                    "consume_tps": 10 / 60}],
        "errors": {},
    }


def test_group_progress_document() -> None:
    # 10 tag1 at 5 s and 10 tag2 at 6 s, round robin: 5 per queue, the last consumed at 6 s
    def row(topic: str, qid: int, offset: int, owner: str, last: int | None) -> dict[str, Any]:
        return {"topic": topic, "broker": "broker-a", "queue_id": qid, "broker_offset": offset,
                "consumer_offset": offset, "pull_offset": offset, "diff": 0, "inflight": 0,
                "last_consumed_ts": last, "owner": owner, "unpullable": None}

    c1, c2, at6 = "10.0.0.1@consumer1", "10.0.0.2@consumer2", EPOCH_MS + 6000
    assert doc("--emulator", "tag-overwrite", "group", "progress", "test-consumer") == {
        "group": "test-consumer",
        "queues": [row("%RETRY%test-consumer", 0, 0, c1, None),
                   row("TopicTest2", 0, 5, c1, at6), row("TopicTest2", 1, 5, c1, at6),
                   row("TopicTest2", 2, 5, c2, at6), row("TopicTest2", 3, 5, c2, at6)],
        "total_diff": 0,
        "unknown_diff_queues": 0,
        "total_inflight": 0,
        "errors": {},
    }


def test_group_assignment_document() -> None:
    def q(topic: str, qid: int) -> dict[str, Any]:
        return {"topic": topic, "broker": "broker-a", "queue_id": qid}

    assert doc("--emulator", "tag-overwrite", "group", "assignment", "test-consumer") == {
        "group": "test-consumer",
        "message_model": "CLUSTERING",
        "assignments": {"10.0.0.1@consumer1": [q("%RETRY%test-consumer", 0), q("TopicTest2", 0),
                                               q("TopicTest2", 1)],
                        "10.0.0.2@consumer2": [q("TopicTest2", 2), q("TopicTest2", 3)]},
        "unassigned_queues": [],
        "held_twice": [],
        "idle_clients": [],
        "rebalance_in_progress": None,
        "errors": {},
    }


def test_doctor_document_reads_as_prose() -> None:
    # two-consumers-one-queue: 1 queue, 2 AVG consumers; the second one sorts last and idles
    assert doc("--emulator", "two-consumers-one-queue", "doctor", "--all", "--fail-on", "never") == {
        "groups": ["lhy-test-consumerGroup"],
        "findings": [{
            "code": "IDLE_CONSUMERS",
            "severity": "warning",
            "group": "lhy-test-consumerGroup",
            "title": "1 client of lhy-test-consumerGroup holds no queue of TopicTest",
            "detail": "10.0.0.2@pushConsumer2 subscribes TopicTest but holds none of its queues because the "
                      "topic has 1 readable queue for 2 clients. TopicTest@broker-a queue 0 is held by "
                      "10.0.0.1@pushConsumer1 (backlog: 0 messages now). It stays registered and receives "
                      "nothing; adding consumers beyond the queue count does not add throughput.",
            "evidence": {"topic": "TopicTest", "idle_clients": ["10.0.0.2@pushConsumer2"], "queues": 1,
                         "clients": 2},
            "fix": "To put 10.0.0.2@pushConsumer2 to work, give the topic at least as many queues as the "
                   "group has clients (mqadmin updateTopic -c <cluster> -t TopicTest -r 2 -w 2) or run 1 "
                   "consumer fewer.",
        }],
        # one sample: the check that compares two is named as skipped, with the way to run it
        "skipped": [{"group": "lhy-test-consumerGroup", "code": "LAG_NOT_ADVANCING",
                     "reason": "needs two samples (one cannot show a consumer offset standing still): use "
                               "--interval, e.g. --interval 30"}],
        "errors": {},
    }


def test_doctor_table_names_a_check_one_sample_cannot_run_and_two_samples_run_it() -> None:
    once = cli("--emulator", "two-consumers-one-queue", "doctor", "--all", "--fail-on", "never")
    assert ("skipped LAG_NOT_ADVANCING (lhy-test-consumerGroup): needs two samples (one cannot show a "
            "consumer offset standing still): use --interval, e.g. --interval 30") in " ".join(once.split())
    twice = cli("--emulator", "two-consumers-one-queue", "doctor", "--all", "--fail-on", "never", "--interval", "30")
    assert "skipped" not in twice


def test_emulator_run_names_response_codes() -> None:
    # topic-overwrite: each client's pulls of the topic the broker forgot fail with code 24
    run = doc("emulator", "run", "topic-overwrite")
    assert {cid: c["pull_errors"] for cid, c in run["consumers"].items()} == {
        "10.0.0.2@c2": {"SUBSCRIPTION_NOT_EXIST (24)": 120}, "10.0.0.1@c1": {"SUBSCRIPTION_NOT_EXIST (24)": 2}}
    assert "SUBSCRIPTION_NOT_EXIST (24) x120" in cli("emulator", "run", "topic-overwrite")


# ---------------------------------------------------------------------------------------------
# jsonl and csv are the document's rows, for every command

E = ("--emulator", "tag-overwrite")
ROWS_OF = {  # command → (kind, the document's list those rows are)
    ("cluster", "list"): [("broker", "brokers")],
    ("topic", "list"): [("topic", "topics")],
    ("topic", "route", "TopicTest2"): [("route", "brokers")],
    ("topic", "status", "TopicTest2"): [("queue", "queues")],
    ("group", "list"): [("group", "groups")],
    ("group", "show", "test-consumer"): [("connection", "connections"), ("subscription", "subscriptions"),
                                         ("conflict", "subscription_conflicts")],
    ("group", "progress", "test-consumer"): [("queue", "queues")],
    ("doctor", "--all", "--fail-on", "never"): [("finding", "findings"), ("skipped", "skipped")],
}


@pytest.mark.parametrize("command", list(ROWS_OF), ids=" ".join)
def test_jsonl_rows_are_the_document_rows(command: tuple[str, ...]) -> None:
    document = doc(*E, *command)
    assert document["errors"] == {}
    rows = lines(*E, *command)
    for kind, key in ROWS_OF[command]:
        mine = [{k: v for k, v in r.items() if k != "kind"} for r in rows if r["kind"] == kind]
        assert mine == document[key], kind  # nothing dropped, nothing renamed
    assert {r["kind"] for r in rows} <= {kind for kind, _ in ROWS_OF[command]}
    for key, value in _walk(document):
        if key.endswith("_ts"):
            assert value is None or isinstance(value, int), (key, value)  # epoch ms, never text


def _walk(value: Any, key: str = "") -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        return [pair for k, v in value.items() for pair in [(k, v), *_walk(v, k)]]
    if isinstance(value, list):
        return [pair for v in value for pair in _walk(v, key)]
    return []


def test_multi_table_commands_keep_every_kind() -> None:
    kinds = [r["kind"] for r in lines("demo")]
    assert set(kinds) == {"consumer", "tag", "broker_subscription", "subscription", "assignment", "finding"}
    run = lines("emulator", "run", "tag-overwrite-4q")
    assert [r["kind"] for r in run].count("tag") == 2
    findings = [r for r in lines(*E, "doctor", "--all", "--fail-on", "never") if r["kind"] == "finding"]
    assert findings and all({"detail", "evidence", "fix"} <= set(f) for f in findings)


def test_csv_is_one_kind_flattened_explicitly() -> None:
    text = cli(*E, "group", "show", "test-consumer", "-o", "csv", "--table", "subscription")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert list(rows[0]) == ["topic", "source", "expression", "tags", "sub_version", "subscribed", "differs"]
    assert rows[0] == {"topic": "TopicTest2", "source": "broker:broker-a", "expression": "tag2", "tags": "tag2",
                       "sub_version": "1704067201005", "subscribed": "true", "differs": "false"}
    default = list(csv.DictReader(io.StringIO(cli(*E, "group", "show", "test-consumer", "-o", "csv"))))
    assert [r["client_id"] for r in default] == ["10.0.0.1@consumer1", "10.0.0.2@consumer2"]
    doctor = list(csv.DictReader(io.StringIO(cli(*E, "doctor", "--all", "-o", "csv", "--fail-on", "never"))))
    assert json.loads(doctor[0]["evidence"])["topic"] == "TopicTest2"  # nested: compact JSON in the cell
    route = list(csv.DictReader(io.StringIO(cli(*E, "topic", "route", "TopicTest2", "-o", "csv"))))
    assert set(json.loads(route[0]["addrs"])) == {"0"}
    result = runner.invoke(app, [*E, "group", "show", "test-consumer", "-o", "csv", "--table", "nope"])
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0] == "rmqctl: error: no table 'nope' in this command's output"


def test_route_addrs_is_an_object_in_json_and_jsonl() -> None:
    (row,) = lines(*E, "topic", "route", "TopicTest2")
    assert row["addrs"] == {"0": "127.0.0.1:PORT"}
    assert doc(*E, "topic", "route", "TopicTest2")["brokers"][0]["addrs"] == row["addrs"]
    assert re.search(r"0=127\.0\.0\.1:\d+", cli(*E, "topic", "route", "TopicTest2"))


def test_same_name_and_value_everywhere() -> None:
    listed = {g["group"]: g for g in doc("--emulator", "healthy", "group", "list")["groups"]}
    for group, row in listed.items():
        shown = doc("--emulator", "healthy", "group", "show", group)
        assert shown["consume_type"] == row["consume_type"] == "PUSH"
        assert shown["message_model"] == row["message_model"]
    header = cli("--emulator", "healthy", "group", "list").splitlines()[0].split()
    assert header == ["GROUP", "CLIENTS", "CONSUME_TYPE", "MESSAGE_MODEL", "VERSION", "TOTAL_DIFF", "CONSUME_TPS"]
    assignment = doc(*E, "group", "assignment", "test-consumer")
    simulated = doc(*E, "rebalance", "simulate", "-g", "test-consumer")
    assert "unassigned_queues" in assignment and "unassigned_queues" in simulated


# ---------------------------------------------------------------------------------------------
# Tables a person reads


def test_tables_fit_columns_and_pipes_get_everything() -> None:
    wide = cli("--emulator", "healthy", "rebalance", "simulate", "-g", "audit-broadcast")
    longest = max(len(line) for line in wide.splitlines() if "broker-a/0" in line)
    assert longest > 80 and "broker-b/3" in wide  # piped, no COLUMNS: full width
    narrow = cli("--emulator", "healthy", "rebalance", "simulate", "-g", "audit-broadcast",
                 env={"COLUMNS": "60"})
    table = narrow.split("\n\n")[0].splitlines()
    assert all(len(line) <= 60 for line in table), table
    assert "10.0.0.4@DEFAULT" in narrow and "broker-b/3" in narrow  # the ASSIGNED column wraps


def test_colour_on_a_terminal_only_and_never_with_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    from rmqctl.cli.render import OutputFormat as F
    from rmqctl.cli.render import Table, View, emit

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    view = View({}, [Table(["severity", "code"], [{"severity": "error", "code": "X"}])])
    monkeypatch.delenv("NO_COLOR", raising=False)
    tty = Terminal()
    emit(view, F.table, tty)
    assert ANSI.search(tty.getvalue())
    piped = io.StringIO()
    emit(view, F.table, piped)
    assert not ANSI.search(piped.getvalue())
    monkeypatch.setenv("NO_COLOR", "1")
    plain = Terminal()
    emit(view, F.table, plain)
    assert not ANSI.search(plain.getvalue()) and "error" in plain.getvalue()


def test_no_headers_sort_and_match() -> None:
    H = ("--emulator", "healthy")
    assert cli(*H, "group", "list", "--no-headers").split() [::7] == ["audit-broadcast", "order-service"]
    by_tps = cli(*H, "group", "list", "--sort", "CONSUME_TPS", "--no-headers").splitlines()
    assert [line.split()[0] for line in by_tps] == ["audit-broadcast", "order-service"]  # 0.00 < 0.80
    by_clients = doc(*H, "group", "list", "--sort", "clients")["groups"]
    assert [g["clients"] for g in by_clients] == [2, 3]
    matched = doc(*H, "group", "list", "--match", "^order")
    assert [g["group"] for g in matched["groups"]] == ["order-service"]
    assert cli(*H, "group", "list", "-o", "csv", "--no-headers").splitlines()[0].startswith("audit-broadcast,")
    bad = runner.invoke(app, [*H, "group", "list", "--sort", "nope"])
    assert bad.exit_code == 2 and bad.stderr.startswith("rmqctl: error: --sort: no column 'nope'")
    bad = runner.invoke(app, [*H, "group", "list", "--match", "("])
    assert bad.exit_code == 2 and "invalid regular expression" in bad.stderr
    # a filter that leaves nothing is an empty answer, whatever the sort column: not a usage error
    for command in (["group", "list"], ["topic", "list"], ["cluster", "list"]):
        column = {"group": "clients", "topic": "type", "cluster": "disk_ratio"}[command[0]]
        empty = runner.invoke(app, [*H, *command, "--match", "^nomatch$", "--sort", column, "-o", "json"])
        assert empty.exit_code == 0, empty.stderr
        assert next(v for k, v in json.loads(empty.stdout).items() if k != "errors") == []
    # topic status: --match on the broker, --sort by any column (numbers as numbers)
    every = doc("--emulator", "stall-and-leave", "--at", "300", "topic", "status", "PaymentTopic")["queues"]
    assert len({q["max_offset"] for q in every}) > 1 and {q["broker"] for q in every} == {"broker-a", "broker-b"}
    ranked = doc("--emulator", "stall-and-leave", "--at", "300", "topic", "status", "PaymentTopic",
                 "--sort", "MAX_OFFSET", "--match", "-b$")["queues"]
    assert ranked == sorted((q for q in every if q["broker"] == "broker-b"), key=lambda q: q["max_offset"])
    bad = runner.invoke(app, [*H, "group", "list", "--match", "^nomatch$", "--sort", "nope"])
    assert bad.exit_code == 2 and "columns: group, clients," in bad.stderr


def test_watch_redraws_with_the_consume_rate_between_samples() -> None:
    # stall-and-leave at 30 s: a steady ~8 messages per 30 s per queue on PaymentTopic
    out = cli("--emulator", "stall-and-leave", "--at", "30", "group", "progress", "payment-service",
              "--watch", "30", "--count", "2")
    blocks = [b for b in out.split("Every 30s: ") if b]
    assert len(blocks) == 2 and "sample 2" in blocks[1]

    def row(block: str) -> list[str]:
        wanted = ["PaymentTopic", "broker-a", "0"]
        return next(line.split() for line in block.splitlines() if line.split()[:3] == wanted)

    first, second = row(blocks[0]), row(blocks[1])
    header = next(line.split() for line in blocks[1].splitlines() if line.startswith("TOPIC"))
    offset, rate = header.index("CONSUMER_OFFSET"), header.index("CONSUME_RATE")
    assert (first[offset], second[offset]) == ("8", "15")
    assert second[rate] == "0.23"  # (15 - 8) / 30 s
    assert first[rate] == "-"  # no earlier sample
    # the same samples as rows: every row carries its sample, rows of a queue their rate
    rows = lines("--emulator", "stall-and-leave", "--at", "30", "-o", "jsonl", "group", "progress",
                 "payment-service", "--watch", "30", "--count", "2")
    mine = [r for r in rows if (r["topic"], r["broker"], r["queue_id"]) == ("PaymentTopic", "broker-a", 0)]
    assert [(r["kind"], r["sample"], r["consumer_offset"]) for r in mine] == [
        ("queue", 1, 8), ("queue", 2, 15)]
    assert mine[0]["consume_rate"] is None and mine[1]["consume_rate"] == pytest.approx(7 / 30)
    assert {r["sample"] for r in rows} == {1, 2} and all("consume_rate" in r for r in rows)
    # --sort consume_rate orders each sample by the rate since the previous one, unknown rates last
    by_rate = lines("--emulator", "stall-and-leave", "--at", "30", "-o", "jsonl", "group", "progress",
                    "payment-service", "--watch", "30", "--count", "2", "--sort", "consume_rate")
    second = [r for r in by_rate if r["kind"] == "queue" and r["sample"] == 2]
    expected = sorted((r for r in rows if r["kind"] == "queue" and r["sample"] == 2),
                      key=lambda r: (r["consume_rate"] is None, r["consume_rate"] or 0))
    assert [(r["topic"], r["broker"], r["queue_id"]) for r in second] == [
        (r["topic"], r["broker"], r["queue_id"]) for r in expected]
    assert len({r["consume_rate"] for r in second}) >= 3  # stalled, steady and unknown queues
    docs = [json.loads(block) for block in cli(
        "--emulator", "stall-and-leave", "--at", "30", "-o", "json", "group", "assignment", "payment-service",
        "-w", "30", "--count", "2").split("\n\n")]
    assert [d["sample"] for d in docs] == [1, 2] and docs[0]["consume_rates"] == []
    assert docs[1]["taken_at_ts"] - docs[0]["taken_at_ts"] == 30_000
    rate = {(q["topic"], q["broker"], q["queue_id"]): q["consume_rate"] for q in docs[1]["consume_rates"]}
    assert rate[("PaymentTopic", "broker-a", 0)] == pytest.approx(7 / 30)
    csv_rows = cli("--emulator", "stall-and-leave", "--at", "30", "-o", "csv", "group", "assignment",
                   "payment-service", "-w", "30", "--count", "2").splitlines()
    assert csv_rows[0].split(",")[0] == "sample" and csv_rows[0].split(",")[-1] == "consume_rate"
    assert [r.split(",")[0] for r in csv_rows].count("sample") == 1  # one header for the whole stream
    held = cli("--emulator", "stall-and-leave", "--at", "30", "group", "assignment", "payment-service",
               "-w", "30", "--count", "2")
    assert held.count("CONSUME_RATE") == 2
    bare = cli("--emulator", "stall-and-leave", "group", "assignment", "payment-service", "-w", "--count", "1")
    assert bare.startswith("Every 2s: ")  # --watch without a value: every 2 s


def test_watch_on_a_terminal_redraws_once_a_period_on_the_emulator() -> None:
    # piped, the emulator's samples come at once (above); on a terminal a person reads them: with
    # a 30 s period the first screen stays up, where a busy loop drew hundreds in the same look
    import os
    import pty
    import select
    import signal
    import subprocess
    import sys

    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "rmqctl", "--emulator", "stall-and-leave", "--at", "30", "group", "progress",
         "payment-service", "--watch", "30"],
        stdin=subprocess.DEVNULL, stdout=slave, stderr=subprocess.PIPE, env={**os.environ, "COLUMNS": "200"})
    os.close(slave)
    screen = b""

    def read_for(polls: int) -> None:
        """Read what the pane shows over ``polls`` quarter-second looks (output only adds)."""
        nonlocal screen
        for _ in range(polls):
            ready, _, _ = select.select([master], [], [], 0.25)
            if ready:
                try:
                    screen += os.read(master, 65536)
                except OSError:  # the process closed the terminal
                    return

    try:
        for _ in range(240):  # up to a minute for the interpreter and the first poll
            read_for(1)
            if b", sample 1\r\n" in screen:
                break
        assert b", sample 1\r\n" in screen, screen[-2000:]
        read_for(8)  # another look, far shorter than the period
        assert screen.count(b", sample ") == 1, screen[-2000:]
    finally:
        proc.send_signal(signal.SIGINT)
        for _ in range(120):  # keep the terminal drained so the exit never blocks on a write
            read_for(1)
            if proc.poll() is not None:
                break
        _, err = proc.communicate(timeout=30)
        os.close(master)
    assert proc.returncode == 130 and err.decode().strip() == "rmqctl: error: interrupted"


# ---------------------------------------------------------------------------------------------
# Correctness found by trying it


def test_cluster_options_after_the_subcommand() -> None:
    assert doc("group", "list", "--emulator", "healthy")["groups"][0]["group"] == "audit-broadcast"
    early = doc("topic", "status", "TopicTest2", "--emulator", "tag-overwrite", "--at", "3")
    assert [q["max_offset"] for q in early["queues"]] == [0, 0, 0, 0]


def test_doctor_unknown_group_is_a_usage_error_never_checked() -> None:
    for args in (["doctor", "test-consumer", "nosuch"], ["doctor", "--all", "true"]):
        result = runner.invoke(app, [*E, *args])
        assert result.exit_code == 2, result.stdout
        assert result.stdout == "" and "No findings" not in result.stdout
        assert result.stderr.splitlines()[0].startswith("rmqctl: error: consumer group ")
        assert "Traceback" not in result.stderr


def test_a_group_that_just_started_has_no_orphaned_retry_queue() -> None:
    early = doc("--emulator", "two-consumers-one-queue", "--at", "0.5", "doctor", "--all")
    assert early["findings"] == []


def test_strategy_names_any_case_and_machine_room_needs_idcs() -> None:
    base = ("rebalance", "simulate", "--topic", "T", "--brokers", "a=4", "--clients", "2")
    assert doc(*base, "--strategy", "avg_by_circle") == doc(*base, "--strategy", "AVG_BY_CIRCLE")
    result = runner.invoke(app, [*base, "--strategy", "machine_room"])
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0].startswith("rmqctl: error: MACHINE_ROOM needs the consumers' machine rooms")
