"""The shipped scripts in completions/ are what ``rmqctl completion SHELL`` prints today."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.completion.terminal import COMPLETIONS, ROOT

FILES = {"bash": "rmqctl.bash", "zsh": "_rmqctl", "fish": "rmqctl.fish"}
#: a line only that shell's script has
MARKERS = {"bash": "complete -F _rmqctl rmqctl", "zsh": "#compdef rmqctl",
           "fish": "complete -c rmqctl -f -a '(__rmqctl_complete)'"}


def completion(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rmqctl", "completion", *args], cwd=ROOT,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("shell", sorted(FILES))
def test_shipped_script_is_current(shell: str) -> None:
    """Fails when a command or option changed: regenerate with ``python -m rmqctl.cli.completion completions``."""
    printed = completion(shell)
    assert printed.returncode == 0, printed.stderr
    assert MARKERS[shell] in printed.stdout
    assert all(MARKERS[other] not in printed.stdout for other in MARKERS if other != shell)
    shipped = (COMPLETIONS / FILES[shell]).read_text(encoding="utf-8")
    assert printed.stdout == shipped, (
        f"completions/{FILES[shell]} is stale; run: python -m rmqctl.cli.completion completions")


def test_unknown_shell_is_a_usage_error() -> None:
    result = completion("tcsh")
    assert result.returncode == 2
    assert "tcsh" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("shell, check", [
    ("bash", ["bash", "-n"]),
    ("zsh", ["zsh", "-n"]),
    ("fish", ["fish", "--no-execute"]),
])
def test_scripts_parse(shell: str, check: list[str]) -> None:
    proc = subprocess.run([*check, str(COMPLETIONS / FILES[shell])], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
