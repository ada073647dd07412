"""``config set-context`` takes the secret key from a no-echo prompt, from stdin, or (with a warning)
from an argument; the secret never shows in what the command prints, nor on the terminal."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.completion.terminal import ROOT, Terminal

SECRET = "Zq7-s3cret-VALUE"


def stored(config_home: Path) -> dict[str, object]:
    path = config_home / "rmqctl" / "config.toml"
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    return tomllib.loads(path.read_text())["contexts"]["prod"]  # type: ignore[no-any-return]


def rmqctl(config_home: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_CONFIG_HOME": str(config_home), "PYTHONPATH": str(ROOT)}
    env.pop("RMQCTL_CONFIG", None)
    return subprocess.run([sys.executable, "-m", "rmqctl", *args], cwd=ROOT, env=env, input=stdin or "",
                          capture_output=True, text=True, timeout=60)


def test_secret_from_stdin(tmp_path: Path) -> None:
    result = rmqctl(tmp_path, "config", "set-context", "prod", "-n", "10.0.0.1:9876", "--access-key", "ak",
                    "--secret-key-stdin", stdin=SECRET + "\n")
    assert result.returncode == 0, result.stderr
    assert SECRET not in result.stdout + result.stderr
    assert stored(tmp_path) == {"namesrv": "10.0.0.1:9876", "access_key": "ak", "secret_key": SECRET, "read_only": True}


def test_empty_stdin_is_a_usage_error(tmp_path: Path) -> None:
    result = rmqctl(tmp_path, "config", "set-context", "prod", "-n", "10.0.0.1:9876", "--secret-key-stdin")
    assert result.returncode == 2
    assert result.stderr.startswith("rmqctl: error: --secret-key-stdin read no secret key")


def test_secret_as_an_argument_still_works_but_warns(tmp_path: Path) -> None:
    result = rmqctl(tmp_path, "config", "set-context", "prod", "-n", "10.0.0.1:9876", "--access-key", "ak",
                    "--secret-key", SECRET)
    assert result.returncode == 0, result.stderr
    assert "rmqctl: warning: --secret-key shows the secret in 'ps' and the shell history" in result.stderr
    assert SECRET not in result.stdout + result.stderr
    assert stored(tmp_path)["secret_key"] == SECRET


def test_two_ways_at_once_is_a_usage_error(tmp_path: Path) -> None:
    result = rmqctl(tmp_path, "config", "set-context", "prod", "-n", "10.0.0.1:9876", "--secret-key", SECRET,
                    "--secret-key-stdin", stdin="other\n")
    assert result.returncode == 2
    assert "--secret-key and --secret-key-stdin cannot be combined" in result.stderr
    assert SECRET not in result.stdout + result.stderr
    assert not (tmp_path / "rmqctl" / "config.toml").exists()


def test_no_terminal_no_prompt(tmp_path: Path) -> None:
    """Scripts keep working: --access-key alone without a terminal saves no secret and asks nothing."""
    result = rmqctl(tmp_path, "config", "set-context", "prod", "-n", "10.0.0.1:9876", "--access-key", "ak")
    assert result.returncode == 0, result.stderr
    assert stored(tmp_path) == {"namesrv": "10.0.0.1:9876", "access_key": "ak", "read_only": True}
    asked = rmqctl(tmp_path, "config", "set-context", "prod", "--secret-key-prompt")
    assert asked.returncode == 2 and "stdin is not a terminal" in asked.stderr


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Terminal]:
    home = tmp_path / "home"
    home.mkdir()
    term = Terminal("bash", home, {"XDG_CONFIG_HOME": str(tmp_path), "PYTHONPATH": str(ROOT)})
    yield term
    term.close()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("flags", [["--access-key", "ak"], ["--access-key", "ak", "--secret-key-prompt"]])
def test_secret_from_the_prompt_is_not_echoed(terminal: Terminal, tmp_path: Path, flags: list[str]) -> None:
    command = [sys.executable, "-m", "rmqctl", "config", "set-context", "prod", "-n", "10.0.0.1:9876", *flags]
    terminal.type(shlex.join(command) + '; echo "EXIT=$?"')
    terminal.key("Enter")
    terminal.wait_for(lambda s: "Secret key for context 'prod':" in s, timeout=60, what="the prompt")
    terminal.type(SECRET)
    terminal.key("Enter")
    screen = terminal.wait_for(lambda s: any(line.startswith("EXIT=") for line in s.splitlines()),
                               timeout=60, what="the command to finish")
    assert "\nEXIT=0\n" in screen, screen
    assert SECRET not in screen
    assert stored(tmp_path) == {"namesrv": "10.0.0.1:9876", "access_key": "ak", "secret_key": SECRET, "read_only": True}
