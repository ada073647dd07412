"""Run ``rmqctl tui`` in a real terminal: a private tmux server, read back with capture-pane."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from tests.harness.plugin import require_program

ROOT = Path(__file__).resolve().parents[2]
DONE = "TUI-EXITED"


class Terminal:
    """One tmux pane running one command on its own tmux server socket."""

    def __init__(self, socket_name: str) -> None:
        self.socket = socket_name

    def tmux(self, *args: str) -> str:
        proc = subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=20)
        if proc.returncode != 0:
            raise AssertionError(f"tmux {' '.join(args)} failed: {proc.stderr.strip()}")
        return proc.stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "tui")

    def send(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "tui", *keys)

    def wait_for(self, predicate: Callable[[str], bool], *, timeout: float = 60.0, what: str = "text") -> str:
        """Capture the pane until ``predicate(screen)`` holds (bounded)."""
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()
            if predicate(screen):
                return screen
            time.sleep(0.2)  # polling a separate process's screen: there is no event to await
        raise AssertionError(f"timed out waiting for {what}; the screen was:\n{screen}")


@contextmanager
def tmux_running(command: Sequence[str], *, size: tuple[int, int] = (160, 45),
                 env: dict[str, str] | None = None) -> Iterator[Terminal]:
    """Run ``command`` in a fresh tmux server; on exit the pane prints a marker and stays."""
    require_program("tmux", hint="apt-get install tmux")
    term = Terminal(f"rmqctl-test-{uuid.uuid4().hex[:8]}")
    values = {"PYTHONPATH": str(ROOT), "TERM": "xterm-256color", "COLORTERM": "truecolor",
              "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", **(env or {})}
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in values.items())
    script = (f"cd {shlex.quote(str(ROOT))} && env -u COLUMNS -u LINES {exports} {shlex.join(command)}; "
              f"echo {DONE} $?; exec sleep 600")
    # Start on a placeholder and respawn the pane with the command once the window has its
    # size, so the program never starts at tmux's 80x24 default and misses the resize.
    term.tmux("-f", "/dev/null", "new-session", "-d", "-s", "tui", "-x", str(size[0]), "-y", str(size[1]),
              "sleep", "600")
    term.tmux("resize-window", "-t", "tui", "-x", str(size[0]), "-y", str(size[1]))
    term.tmux("respawn-pane", "-k", "-t", "tui", "bash", "--norc", "--noprofile", "-c", script)
    try:
        yield term
    finally:
        subprocess.run(["tmux", "-L", term.socket, "kill-server"], capture_output=True, timeout=20)


def tui_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "rmqctl", "tui", *args]


def clean_exit(screen: str) -> bool:
    """After ``q``: the pane shows only the exit marker with status 0 — no traceback, no
    leftover escape sequences or mouse reports printed as text."""
    lines = [line for line in screen.splitlines() if line.strip()]
    return lines == [f"{DONE} 0"]


def base_env(tmp: Path) -> dict[str, str]:
    """Keep the user's config and the noted served emulator out of the test."""
    return {"RMQCTL_CONFIG": str(tmp / "config.toml"), "XDG_STATE_HOME": str(tmp / "state"),
            "HOME": os.environ.get("HOME", str(tmp))}
