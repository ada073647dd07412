"""The dashboard in a real terminal: tmux runs it, keys go in with send-keys, the screen comes
back with capture-pane. Catches what Pilot cannot: the real driver, stylesheet loading, exit."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = """
import sys
from tests.tui.conftest import billing, orders
from tests.tui.fakesource import FakeSource
from tui.app import TuiSettings, make_app

app = make_app(FakeSource([orders(1), billing(1)]), TuiSettings(interval=3600))
app.run()
print("exited", app.return_code)
"""


class Terminal:
    def __init__(self, socket: str) -> None:
        tmux = shutil.which("tmux")
        if tmux is None:
            pytest.skip("tmux is not installed (apt-get install -y tmux)")
        self.base = [tmux, "-L", socket, "-f", "/dev/null"]

    def tmux(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*self.base, *args], capture_output=True, text=True, check=check,
                              timeout=30)

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "tui").stdout

    def wait_for(self, text: str, timeout: float = 60.0) -> str:
        """Poll the screen until ``text`` shows (bounded; the app starts in its own time)."""
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if text in screen:
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} never appeared; screen:\n{screen}")
            time.sleep(0.05)


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Terminal]:
    term = Terminal(f"rmqctl-tui-{os.getpid()}")
    script = tmp_path / "run_tui.py"
    script.write_text(SCRIPT, encoding="utf-8")
    command = (f"cd {ROOT} && env TZ=UTC TERM=xterm-256color {sys.executable} {script}; "
               "echo done; sleep 30")
    term.tmux("new-session", "-d", "-x", "120", "-y", "40", "-s", "tui", command)
    try:
        yield term
    finally:
        term.tmux("kill-server", check=False)


def test_the_dashboard_runs_navigates_and_quits_in_tmux(terminal: Terminal) -> None:
    screen = terminal.wait_for("Consumer groups (2/2)")
    assert "orders         2  CLUSTERING       4   70" in screen
    terminal.tmux("send-keys", "-t", "tui", "Down", "Enter")
    screen = terminal.wait_for("Group orders | CLUSTERING")
    assert "(nobody)" in screen and "ORPHANED_QUEUES" in screen
    terminal.tmux("send-keys", "-t", "tui", "Escape")
    terminal.wait_for("Consumer groups (2/2)")
    terminal.tmux("send-keys", "-t", "tui", "q")
    screen = terminal.wait_for("done")
    assert "exited 0" in screen
