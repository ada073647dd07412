"""Reset and skip from the dashboard, on the embedded emulator read through the normal client path.

The modal must show the plan ``rmqctl group reset`` prints for the same cluster state (read from
the command line itself, not from the planner), write nothing before the user says yes, refuse in a
read-only context with the command line's own words, and apply through the same code: the audit
log gets the run, the outcome is shown per queue and the undo plan puts the queues back.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Button, DataTable, Input, Select, Static
from typer.testing import CliRunner, Result

from rmqctl.actions import audit
from rmqctl.actions.permission import Writer
from rmqctl.cli.app import app as cli
from rmqctl.connect import Target, open_source
from rmqctl.source import ClusterSource
from tests.tui.helpers import fake_app, make_view, shown_text, wait_for
from tui import TuiSettings, make_app
from tui.app import RmqctlApp
from tui.reset import ResetScreen
from tui.run import writer_for
from tui.screens import GroupScreen, GroupsScreen

SCENARIO, AT, GROUP = "stall-and-leave", 600, "payment-service"
#: pay-2 hangs at 7 min holding these two queues: at 10 min they are 45 messages behind
HUNG = ("PaymentTopic@broker-a/2", "PaymentTopic@broker-a/3")


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("RMQCTL_CONFIG", str(tmp_path / "config.toml"))


def invoke(*args: str) -> Result:
    """The command line, in a thread of its own (it runs its own event loop)."""
    return CliRunner().invoke(cli, list(args))


async def cli_plan(*args: str) -> tuple[dict[str, Any], str]:
    """``group reset`` of the same scenario at the same time: its JSON plan and its table."""
    base = ["--emulator", SCENARIO, "--at", f"{AT}s", "group", "reset", GROUP, *args]
    as_json = await asyncio.to_thread(invoke, *base, "-o", "json")
    as_table = await asyncio.to_thread(invoke, *base)
    assert as_json.exit_code == 0 and as_table.exit_code == 0, (as_json.output, as_table.output)
    return json.loads(as_json.stdout), as_table.stdout


def rows(screen: ResetScreen) -> list[tuple[str, ...]]:
    table = screen.query_one("#reset-table", DataTable)
    return [tuple(str(c) for c in table.get_row_at(i)) for i in range(table.row_count)]


async def committed(source: ClusterSource) -> dict[str, int | None]:
    """The consumer offsets of the hung client's queues, read from the cluster."""
    view = await source.group_view(GROUP)
    return {name: p.consumer_offset for p in view.progress
            if (name := f"{p.queue.topic}@{p.queue.broker_name}/{p.queue.queue_id}") in HUNG}


def phase(app: RmqctlApp) -> str | None:
    return app.reset.phase if app.reset is not None else None


def as_tester() -> Writer:
    return Writer("tester", None, None)


async def test_skip_shows_the_clis_plan_asks_first_then_applies_audits_and_undoes() -> None:
    expected, table_text = await cli_plan("--to-latest")
    async with open_source(Target(emulator=SCENARIO, at=AT)) as opened:
        app = make_app(opened, TuiSettings(group=GROUP, interval=3600, writer=as_tester,
                                           cluster=f"emulator {SCENARIO}"))
        async with app.run_test(size=(200, 50)) as pilot:
            await wait_for(pilot, lambda: app.polls_done == 1 and isinstance(app.screen, GroupScreen))
            cursor = app.screen.selected_queue()
            assert cursor is not None
            await pilot.press("X")
            await wait_for(pilot, lambda: isinstance(app.screen, ResetScreen))
            screen = app.screen
            assert isinstance(screen, ResetScreen)
            # skip: to the latest offset, on the queue under the cursor until the user widens it
            assert screen.query_one("#reset-kind", Select).value == "latest"
            assert screen.query_one("#reset-queues", Input).value == f"{cursor.broker_name}/{cursor.queue_id}"
            assert screen.query_one("#reset-topic", Input).value == cursor.topic
            screen.query_one("#reset-queues", Input).value = ""
            screen.query_one("#reset-topic", Input).value = ""
            screen.query_one("#reset-plan", Button).press()
            await wait_for(pilot, lambda: phase(app) == "planned", what="the plan")
            assert rows(screen) == [
                (f"{q['topic']}@{q['broker']}/{q['queue_id']}", q["owner"], str(q["current"]), str(q["target"]),
                 str(q["replay"]), str(q["skip"]), q["method"]) for q in expected["queues"]]
            lines = shown_text(screen.query_one("#reset-lines", Static), width=190)
            summary = [line for line in table_text.splitlines() if line.startswith(("Reset of group", "Brokers:"))]
            assert len(summary) == 2 and all(line in lines for line in summary)
            assert "skips 90 message(s)" in lines

            # asked first: "no" writes nothing
            screen.query_one("#reset-apply", Button).press()
            await pilot.pause()
            ask = shown_text(screen.query_one("#reset-ask", Static), width=190)
            assert f"Reset 8 queue(s) of {GROUP} on emulator {SCENARIO} (replay 0, skip 90)?" in ask
            assert audit.read_log() == []
            screen.query_one("#reset-no", Button).press()
            await pilot.pause()
            assert audit.read_log() == []
            assert "nothing was written" in shown_text(screen.query_one("#reset-ask", Static), width=190)
            assert await committed(opened.source) == {q: 105 for q in HUNG}

            screen.query_one("#reset-apply", Button).press()
            await pilot.pause()
            screen.query_one("#reset-yes", Button).press()
            await wait_for(pilot, lambda: phase(app) == "applied", timeout=30, what="the outcome")
            outcome = {r[0]: r for r in rows(screen)}
            assert set(outcome) == {f"{q['topic']}@{q['broker']}/{q['queue_id']}" for q in expected["queues"]}
            for queue in HUNG:
                assert outcome[queue][1:4] == ("150", "applied", "150")
            [record] = audit.read_log()
            assert (record["action"], record["group"], record["cluster"]) == ("group reset", GROUP,
                                                                              f"emulator {SCENARIO}")
            assert record["who"]["os_user"] == "tester"
            assert Path(record["undo_file"]).is_file()
            assert f"Undo plan: {record['undo_file']}" in shown_text(screen.query_one("#reset-lines", Static),
                                                                    width=300)

            # undo: a plan like any other (shown, asked), back to where the skip found the hung queues
            screen.query_one("#reset-undo", Button).press()
            await wait_for(pilot, lambda: phase(app) == "planned" and app.reset is not None and app.reset.from_file)
            undo = {r[0]: r for r in rows(screen)}
            assert [undo[q][2:4] for q in HUNG] == [("150", "105"), ("150", "105")]
            screen.query_one("#reset-apply", Button).press()
            await pilot.pause()
            screen.query_one("#reset-yes", Button).press()
            await wait_for(pilot, lambda: phase(app) == "applied", timeout=30, what="the undo")
            back = {r[0]: r for r in rows(screen)}
            assert [back[q][2:4] for q in HUNG] == [("applied", "105"), ("applied", "105")]
            assert [r["plan"]["target"]["kind"] for r in audit.read_log()] == ["latest", "undo"]


async def test_a_read_only_context_refuses_with_the_clis_words_and_writes_nothing() -> None:
    made = await asyncio.to_thread(invoke, "config", "set-context", "prod", "-n", "127.0.0.1:1")
    assert made.exit_code == 0, made.output
    refused = await asyncio.to_thread(invoke, "--context", "prod", "group", "reset", GROUP, "--to-latest",
                                      "--execute", "--yes")
    assert refused.exit_code == 8
    cli_words = [line for line in refused.stderr.splitlines() if line.strip()]
    assert cli_words and "read-only" in cli_words[0]
    async with open_source(Target(emulator=SCENARIO, at=AT)) as opened:
        app = make_app(opened, TuiSettings(interval=3600, writer=writer_for(Target(context="prod")),
                                           cluster=f"emulator {SCENARIO}"))
        async with app.run_test(size=(200, 50)) as pilot:
            await wait_for(pilot, lambda: app.polls_done == 1 and isinstance(app.screen, GroupsScreen))
            while app.screen.selected_group() != GROUP:
                await pilot.press("j")
            await pilot.press("R")
            await wait_for(pilot, lambda: isinstance(app.screen, ResetScreen))
            screen = app.screen
            assert isinstance(screen, ResetScreen)
            # reset from the groups view: the whole group, to the earliest offset unless changed
            assert screen.query_one("#reset-kind", Select).value == "earliest"
            assert screen.query_one("#reset-queues", Input).value == ""
            screen.query_one("#reset-plan", Button).press()
            await wait_for(pilot, lambda: phase(app) == "planned", what="the plan")
            screen.query_one("#reset-apply", Button).press()
            await pilot.pause()
            screen.query_one("#reset-yes", Button).press()
            await wait_for(pilot, lambda: phase(app) == "failed", what="the refusal")
            shown = shown_text(screen.query_one("#reset-ask", Static), width=300).splitlines()
            assert [line.strip() for line in shown if line.strip()] == [w.strip() for w in cli_words]
            assert audit.read_log() == []
            assert not (audit.state_dir() / audit.UNDO_DIR).exists()


async def test_bad_input_is_one_line_and_plans_nothing() -> None:
    async with open_source(Target(emulator=SCENARIO, at=AT)) as opened:
        app = make_app(opened, TuiSettings(group=GROUP, interval=3600, writer=as_tester))
        async with app.run_test(size=(200, 50)) as pilot:
            await wait_for(pilot, lambda: app.polls_done == 1 and isinstance(app.screen, GroupScreen))
            await pilot.press("R")
            await wait_for(pilot, lambda: isinstance(app.screen, ResetScreen))
            screen = app.screen
            assert isinstance(screen, ResetScreen)
            screen.query_one("#reset-kind", Select).value = "offset"
            screen.query_one("#reset-value", Input).value = "ten"
            screen.query_one("#reset-plan", Button).press()
            await pilot.pause()
            assert app.reset is None
            assert screen.query_one("#reset-apply", Button).disabled
            # an offset outside a queue's stored range: the planner's refusal, as the CLI says it
            screen.query_one("#reset-value", Input).value = "100000"
            screen.query_one("#reset-plan", Button).press()
            await wait_for(pilot, lambda: phase(app) == "failed")
            assert "outside" in shown_text(screen.query_one("#reset-ask", Static), width=300)
            assert screen.query_one("#reset-apply", Button).disabled
            await pilot.press("escape")
            await wait_for(pilot, lambda: isinstance(app.screen, GroupScreen))


async def test_an_undo_plan_the_group_has_moved_past_is_refused_as_stale() -> None:
    async with open_source(Target(emulator=SCENARIO, at=AT)) as opened:
        app = make_app(opened, TuiSettings(group=GROUP, interval=3600, writer=as_tester))
        async with app.run_test(size=(200, 50)) as pilot:
            await wait_for(pilot, lambda: app.polls_done == 1 and isinstance(app.screen, GroupScreen))
            await pilot.press("X")
            await wait_for(pilot, lambda: isinstance(app.screen, ResetScreen))
            screen = app.screen
            assert isinstance(screen, ResetScreen)
            screen.query_one("#reset-queues", Input).value = ""
            screen.query_one("#reset-topic", Input).value = ""
            screen.query_one("#reset-plan", Button).press()
            await wait_for(pilot, lambda: phase(app) == "planned")
            screen.query_one("#reset-apply", Button).press()
            await pilot.pause()
            screen.query_one("#reset-yes", Button).press()
            await wait_for(pilot, lambda: phase(app) == "applied", timeout=30)
            # the healthy clients consume on (a steady producer): their queues move past the undo plan
            await opened.clock.sleep(30)
            screen.query_one("#reset-undo", Button).press()
            await wait_for(pilot, lambda: phase(app) == "planned")
            screen.query_one("#reset-apply", Button).press()
            await pilot.pause()
            screen.query_one("#reset-yes", Button).press()
            await wait_for(pilot, lambda: phase(app) == "failed")
            assert "the plan is stale, nothing was written" in shown_text(screen.query_one("#reset-ask", Static),
                                                                          width=300)
            # the refused undo is not a write: only the skip is in the audit log
            assert [r["plan"]["target"]["kind"] for r in audit.read_log()] == ["latest"]


async def test_a_source_that_cannot_write_says_so_when_asked_for_a_plan() -> None:
    app, _, _ = fake_app([make_view("orders", held={"10.0.0.1@a": [0, 1]})],
                         settings=TuiSettings(interval=3600, writer=as_tester))
    async with app.run_test(size=(200, 50)) as pilot:
        await wait_for(pilot, lambda: app.polls_done == 1 and isinstance(app.screen, GroupsScreen))
        await pilot.press("X")
        await wait_for(pilot, lambda: isinstance(app.screen, ResetScreen))
        screen = app.screen
        assert isinstance(screen, ResetScreen)
        screen.query_one("#reset-plan", Button).press()
        await wait_for(pilot, lambda: phase(app) == "failed")
        assert "this source cannot write" in shown_text(screen.query_one("#reset-ask", Static), width=300)
        assert screen.query_one("#reset-apply", Button).disabled
