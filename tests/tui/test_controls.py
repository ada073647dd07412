"""Emulator controls: the two EmulatorControl back ends, and the controls view on a real
embedded emulator read through the normal client path."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import sys
from pathlib import Path

import pytest
from textual.widgets import Button, Input

from rmqctl import errors
from rmqctl.connect import Target, open_source
from rmqctl.emulator.control_client import (
    ConsumerRequest,
    EmbeddedControl,
    HttpControl,
    Produce,
    StopConsumer,
    served_control_for,
)
from rmqctl.emulator.scenario import load_scenario
from rmqctl.emulator.serve import ServeOptions, running_emulator
from tests.tui.helpers import fake_app, make_view, poll_now, wait_for
from tui import TuiSettings, make_app
from tui.messages import ControlFinished
from tui.screens import ControlsScreen, GroupScreen
from tui.widgets import KeyedTable, Timeline


async def test_http_control_drives_a_served_emulator_and_translates_errors() -> None:
    async with running_emulator(load_scenario("idle-consumers"), ServeOptions(clock="virtual", at=10)) as (served, _):
        control = HttpControl(served.control)
        try:
            started = await control.start_consumer(ConsumerRequest("g2", "TopicTest", "TagB", "AVG", "10.0.0.9@n"))
            assert started["client_id"] == "10.0.0.9@n" and started["subscriptions"] == {"TopicTest": "TagB"}
            assert (await control.produce("TopicTest", 3, "TagB"))["sent"] == 3
            stopped = await control.stop_consumer("10.0.0.9@n", kill=True)
            assert stopped == {"client_id": "10.0.0.9@n", "running": False}
            ids = [c["client_id"] for c in await control.clients()]
            assert "10.0.0.9@n" in ids
            with pytest.raises(errors.NotFound, match="no running simulated consumer"):
                await control.stop_consumer("10.0.0.9@n")
            with pytest.raises(errors.UsageError, match="strategy"):
                await control.start_consumer(ConsumerRequest("g2", "TopicTest", strategy="NOPE"))
        finally:
            await control.close()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    dead = HttpControl(f"http://127.0.0.1:{port}")
    try:
        with pytest.raises(errors.ConnectionError, match="cannot reach"):
            await dead.clients()
    finally:
        await dead.close()


async def test_the_noted_served_emulator_gets_controls_only_for_its_own_name_server(
        monkeypatch: pytest.MonkeyPatch) -> None:
    async with running_emulator(load_scenario("healthy"), ServeOptions(clock="virtual")) as (served, _):
        monkeypatch.setenv("RMQCTL_EMULATOR_URL", served.control)
        control = await served_control_for(served.namesrv)
        assert isinstance(control, HttpControl) and control.url == served.control
        await control.close()
        # a real cluster's name server never gets the emulator's controls
        assert await served_control_for("10.1.2.3:9876") is None
        assert await served_control_for(None) is None


async def test_the_dashboard_finds_a_served_emulator_in_the_registry(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``rmqctl emulator serve`` notes itself in the registry; the dashboard's controls find it
    there by the name server given with ``-n`` (no --control, no RMQCTL_EMULATOR_URL)."""
    root = Path(__file__).resolve().parents[2]
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    monkeypatch.delenv("RMQCTL_EMULATOR_URL", raising=False)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "rmqctl", "emulator", "serve", "--scenario", "healthy", "--clock", "virtual",
        "-o", "json", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)})
    try:
        assert proc.stdout is not None
        line = await asyncio.wait_for(proc.stdout.readline(), 60)
        assert line, "serve printed nothing"
        served = json.loads(line)
        control = await served_control_for(served["namesrv"])
        assert isinstance(control, HttpControl) and control.url == served["control"]
        try:
            assert any(c["group"] == "order-service" for c in await control.clients())
        finally:
            await control.close()
        # another cluster's name server never gets this emulator's controls
        assert await served_control_for("10.1.2.3:9876") is None
        proc.send_signal(signal.SIGINT)
        assert await asyncio.wait_for(proc.wait(), 30) == 130
        # the server removed its entry on the way out: nothing is found any more
        assert await served_control_for(served["namesrv"]) is None
    finally:
        if proc.returncode is None:
            proc.kill()
        await proc.communicate()


async def test_embedded_control_rejects_bad_input() -> None:
    async with open_source(Target(emulator="healthy")) as opened:
        control = EmbeddedControl(opened.cluster)
        with pytest.raises(errors.UsageError, match="group and a topic"):
            await control.start_consumer(ConsumerRequest("", "OrderTopic"))
        with pytest.raises(errors.NotFound, match="does not exist"):
            await control.start_consumer(ConsumerRequest("g", "NoSuchTopic"))
        with pytest.raises(errors.UsageError, match="count"):
            await control.produce("OrderTopic", 0)


async def test_stopping_a_consumer_from_the_controls_view_shows_the_rebalance() -> None:
    async with open_source(Target(emulator="healthy", at=20)) as opened:
        control = EmbeddedControl(opened.cluster)
        app = make_app(opened, TuiSettings(group="order-service", interval=3600, control=control))
        finished: list[ControlFinished] = []
        async with app.run_test(size=(200, 50),
                                message_hook=lambda m: finished.append(m) if isinstance(m, ControlFinished) else None
                                ) as pilot:
            await wait_for(pilot, lambda: app.polls_done == 1 and isinstance(app.screen, GroupScreen))
            view = app.dashboard.view("order-service")
            assert view is not None and len(view.client_ids) == 3
            victim = view.client_ids[0]
            victims_queues = {q.queue_id for q in view.assignments()[victim] if q.topic == "OrderTopic"}
            assert victims_queues
            await pilot.press("e")
            await wait_for(pilot, lambda: isinstance(app.screen, ControlsScreen))
            app.screen.query_one("#stop-client", Input).value = victim
            app.screen.query_one("#stop", Button).press()
            await wait_for(pilot, lambda: finished, what="the stop to finish")
            assert finished[0].error is None and finished[0].result == {"client_id": victim, "running": False}
            await pilot.press("escape")
            await wait_for(pilot, lambda: isinstance(app.screen, GroupScreen))
            await opened.clock.sleep(25)  # the emulated cluster rebalances on its own clock
            await poll_now(pilot, app)
            table = app.screen.query_one("#queues", KeyedTable)
            owners = {key: table.get_row(key)[3] for key in table.rows_by_key if key.startswith("OrderTopic|")}
            assert owners and all(victim not in str(o) and str(o) != "(nobody)" for o in owners.values())
            timeline = app.screen.query_one(Timeline)
            assert any(f"{victim} left" in line for line in timeline.entries)


class RecordingControl:
    """An EmulatorControl that records what it is asked to do."""

    label = "recording"

    def __init__(self) -> None:
        self.calls: list[tuple[object, ...]] = []

    async def clients(self) -> list[dict[str, object]]:
        return []

    async def start_consumer(self, request: ConsumerRequest) -> dict[str, object]:
        self.calls.append(("start", request))
        return {"client_id": request.client_id or "10.0.0.9@new"}

    async def stop_consumer(self, client_id: str, *, kill: bool = False) -> dict[str, object]:
        self.calls.append(("stop", client_id, kill))
        return {"client_id": client_id, "running": False}

    async def produce(self, topic: str, count: int, tag: str | None = None) -> dict[str, object]:
        self.calls.append(("produce", topic, count, tag))
        return {"sent": count}

    async def close(self) -> None:
        return None


async def test_the_controls_form_sends_typed_actions_and_refuses_bad_input() -> None:
    control = RecordingControl()
    app, _, _ = fake_app([make_view("orders")], settings=TuiSettings(group="orders", interval=3600,
                                                                     control=control))  # type: ignore[arg-type]
    finished: list[ControlFinished] = []
    async with app.run_test(size=(200, 50), message_hook=lambda m: finished.append(m)
                            if isinstance(m, ControlFinished) else None) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, GroupScreen) and app.polls_done == 1)
        await pilot.press("j")  # cursor on queue 1, held by 10.0.0.1@a
        await pilot.press("e")
        await wait_for(pilot, lambda: isinstance(app.screen, ControlsScreen))
        screen = app.screen
        # the form starts from the group, its topic and the client under the cursor
        assert [screen.query_one(f"#{i}", Input).value for i in ("start-group", "start-topic", "stop-client")] \
            == ["orders", "Orders", "10.0.0.1@a"]
        screen.query_one("#produce-count", Input).value = "ten"
        screen.query_one("#produce", Button).press()
        await pilot.pause()
        assert control.calls == []  # refused in the form: nothing was sent
        screen.query_one("#produce-count", Input).value = "3"
        screen.query_one("#produce", Button).press()
        screen.query_one("#kill", Button).press()
        await wait_for(pilot, lambda: len(finished) == 2, what="both actions")
        assert sorted(control.calls, key=str) == [("produce", "Orders", 3, None), ("stop", "10.0.0.1@a", True)]
        assert {type(m.action) for m in finished} == {Produce, StopConsumer}
        assert all(m.error is None for m in finished)
