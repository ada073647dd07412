"""The README's completion install lines, run as written on a fresh account in each real shell.

Each shell starts from an empty ``HOME``: no ``~/.zshrc`` calling ``compinit``, no
``~/.config/fish`` directory. The line must succeed, and the next interactive shell must have
rmqctl's completion loaded without an error on its start.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.completion.terminal import ROOT
from tests.harness.plugin import require_program

pytestmark = pytest.mark.timeout(120)


def install_lines(text: str) -> dict[str, str]:
    """``{shell: line}`` for each ``rmqctl completion SHELL`` line of a ```sh block."""
    lines: dict[str, str] = {}
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        for line in block.splitlines():
            found = re.search(r"rmqctl completion (bash|zsh|fish)\b", line)
            if found:
                lines[found.group(1)] = line
    return lines


README_LINES = install_lines((ROOT / "README.md").read_text(encoding="utf-8"))


def test_the_readmes_agree() -> None:
    assert set(README_LINES) == {"bash", "zsh", "fish"}
    assert install_lines((ROOT / "completions" / "README.md").read_text(encoding="utf-8")) == README_LINES


def _fresh_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "ZDOTDIR", "fish_", "BASH_ENV"))}
    env.update(HOME=str(home), TERM="dumb", PATH=f"{Path(sys.executable).parent}:{env.get('PATH', '')}")
    return env


def _run(argv: list[str], home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=home, env=_fresh_env(home), capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=60)


CHECKS = {
    # the interactive start reads ~/.bashrc, ~/.zshrc, ~/.config/fish/completions
    "bash": (["-i", "-c", "complete -p rmqctl"], "complete -F _rmqctl rmqctl"),
    "zsh": (["-i", "-c", "print -r -- ${_comps[rmqctl]}"], "_rmqctl"),
    "fish": (["-i", "-c", "complete -C 'rmqctl gr'"], "group"),
}


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_install_line_works_on_a_fresh_account(shell: str, tmp_path: Path) -> None:
    exe = require_program(shell, path="/usr/bin:/bin:/usr/local/bin", hint=f"apt-get install {shell}")
    home = tmp_path / "home"
    home.mkdir()
    installed = _run([exe, "-c", README_LINES[shell]], home)
    assert installed.returncode == 0, installed.stderr
    argv, expected = CHECKS[shell]
    started = _run([exe, *argv], home)
    assert started.returncode == 0, started.stderr
    assert expected in started.stdout.split("\n")[0].split("\t")[0].strip() or expected in started.stdout
    assert "compdef" not in started.stderr and "not found" not in started.stderr, started.stderr
