"""``rmqctl tui`` in a real terminal (tmux) against a served emulator, end to end.

The emulator runs as its own process (``python -m rmqctl emulator serve``) on ephemeral ports; the
TUI reads it over the wire like any cluster. The test stops a consumer through the control API
and reads the reassignment off the screen, then quits with ``q`` and checks the terminal is clean.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.tui.terminal import ROOT, base_env, clean_exit, tmux_running, tui_command

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[dict[str, str]]:
    env = {**os.environ, **base_env(tmp_path), "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}
    log = tmp_path / "serve.log"
    with log.open("w") as stderr, subprocess.Popen(
            [sys.executable, "-m", "rmqctl", "emulator", "serve", "--scenario", "tag-overwrite", "--speed", "10",
             "-o", "json"],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=stderr, text=True) as proc:
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()  # serve prints one JSON line once everything listens
            assert line, log.read_text()
            yield json.loads(line)
        finally:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def test_tui_shows_a_reassignment_after_a_consumer_stops_and_quits_cleanly(
        served: dict[str, str], tmp_path: Path) -> None:
    command = tui_command("-n", served["namesrv"], "--control", served["control"], "--interval", "500ms",
                          "test-consumer")
    with tmux_running(command, env=base_env(tmp_path)) as term:
        term.wait_for(lambda s: "10.0.0.1@consumer1" in s and "10.0.0.2@consumer2" in s
                      and "updated" in s, what="both consumers on screen")
        screen = term.screen()
        assert "controls: " + served["control"] in screen
        response = httpx.post(served["control"] + "/v1/consumers/stop",
                              json={"client_id": "10.0.0.2@consumer2"}, timeout=10)
        assert response.status_code == 200, response.text

        def reassigned(s: str) -> bool:
            rows = [line for line in s.splitlines() if line.lstrip().startswith("TopicTest2 ")]
            return (len(rows) == 4 and all("10.0.0.1@consumer1" in r for r in rows)
                    and "10.0.0.2@consumer2 left" in s)

        screen = term.wait_for(reassigned, what="consumer1 holding every queue and the timeline entry")
        assert "Traceback" not in screen
        term.send("q")
        final = term.wait_for(lambda s: "TUI-EXITED" in s, timeout=20, what="the TUI to exit")
        assert clean_exit(final), final


def test_tui_finds_the_served_emulator_of_its_name_server_without_control(
        served: dict[str, str], tmp_path: Path) -> None:
    """No --control: the dashboard finds the emulator 'serve' noted in the registry for -n."""
    command = tui_command("-n", served["namesrv"], "--interval", "500ms", "test-consumer")
    with tmux_running(command, env=base_env(tmp_path)) as term:
        screen = term.wait_for(lambda s: "controls: " + served["control"] in s and "10.0.0.1@consumer1" in s,
                               what="the served emulator's controls in the status line")
        assert "Traceback" not in screen
        term.send("q")
        final = term.wait_for(lambda s: "TUI-EXITED" in s, timeout=20, what="the TUI to exit")
        assert clean_exit(final), final


def test_a_dead_name_server_is_a_status_not_a_crash(tmp_path: Path) -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    command = tui_command("-n", f"127.0.0.1:{port}", "--interval", "500ms", "--timeout", "1")
    with tmux_running(command, size=(100, 24), env=base_env(tmp_path)) as term:
        screen = term.wait_for(lambda s: "errors: poll:" in s, what="the error in the status line")
        assert f"namesrv 127.0.0.1:{port}" in screen and "TUI-EXITED" not in screen
        term.send("q")
        final = term.wait_for(lambda s: "TUI-EXITED" in s, timeout=20, what="the TUI to exit")
        assert clean_exit(final), final


def test_demo_in_a_terminal_opens_the_dashboard_and_the_incident_unfolds(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "rmqctl", "demo"]
    with tmux_running(command, size=(160, 45), env=base_env(tmp_path)) as term:
        # ConsumerForTagB starts 2 s into the scenario (1 s at x2) and takes half the queues
        screen = term.wait_for(lambda s: sum(line.count("172.16.0.103@ConsumerForTagB") for line in s.splitlines()
                                             if line.lstrip().startswith("SUBSCRIBE_TEST ")) == 2,
                               timeout=60, what="the second consumer holding two queues")
        assert "Group SUBSCRIBE_TEST_CONSUMER_GROUP" in screen and "controls: embedded" in screen
        term.send("q")
        final = term.wait_for(lambda s: "TUI-EXITED" in s, timeout=20, what="the demo to exit")
        assert clean_exit(final), final


def test_demo_at_80x24_names_the_loss_and_ctrl_c_quits(tmp_path: Path) -> None:
    """In a real 80×24 terminal the demo's title says how many messages are lost (wrapped, not
    cut) and ctrl+c ends the program cleanly, as in every terminal program."""
    command = [sys.executable, "-m", "rmqctl", "demo"]
    with tmux_running(command, size=(80, 24), env=base_env(tmp_path)) as term:
        screen = term.wait_for(lambda s: "messages will never be consumed" in " ".join(s.split()),
                               timeout=90, what="the loss in the group's title")
        assert "press f" in " ".join(screen.split()) and "Traceback" not in screen
        term.send("C-c")
        final = term.wait_for(lambda s: "TUI-EXITED" in s, timeout=20, what="the demo to exit on ctrl+c")
        assert clean_exit(final), final
