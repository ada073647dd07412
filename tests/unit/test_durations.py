"""One duration grammar for every time option and config value: ``30``, ``30s``, ``5m``, ``1h30m``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer.main
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from rmqctl.cli.app import app
from rmqctl.config import Config, resolve
from rmqctl.durations import duration_seconds, format_duration, parse_duration
from rmqctl.errors import ConfigError, UsageError

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()


@pytest.mark.parametrize(("text", "seconds"), [
    ("30", 30.0), ("30s", 30.0), ("5m", 300.0), ("1h30m", 5400.0), ("500ms", 0.5), ("1.5h", 5400.0),
    ("2d", 172_800.0), (" 1M30S ", 90.0), ("1h0m5s", 3605.0), ("0.25", 0.25),
])
def test_the_grammar(text: str, seconds: float) -> None:
    assert duration_seconds(text) == seconds
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "m", "5x", "1h 30m", "1m2", "h1", "--5s", "1.h", "5 s"])
def test_what_is_not_a_duration(text: str) -> None:
    with pytest.raises(ValueError, match="is not a duration"):
        duration_seconds(text)
    with pytest.raises(UsageError):
        parse_duration(text, "--every")


@pytest.mark.parametrize("text", ["0", "-1", "inf", "nan", "0s", "0ms"])
def test_a_duration_is_positive_and_finite(text: str) -> None:
    with pytest.raises(UsageError, match=f"invalid --roll {text!r}"):
        parse_duration(text, "--roll")


@pytest.mark.parametrize(("seconds", "text"), [
    (5400, "90m"), (1800, "30m"), (600, "10m"), (86400, "1d"), (7200, "2h"), (45, "45s"), (0.5, "500ms"),
    (2.25, "2250ms"),
])
def test_written_in_one_unit(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


@given(st.integers(min_value=1, max_value=10**10))
def test_written_form_reads_back_exactly(ms: int) -> None:
    seconds = ms / 1000
    assert duration_seconds(format_duration(seconds)) == pytest.approx(seconds, rel=1e-12)


# ---------------------------------------------------------------------------------------------
# Every time option of every command reads it

#: every time option of the CLI (a new one belongs here)
TIME_OPTIONS = {"--timeout", "--interval", "--watch", "--every", "--duration", "--roll", "--window", "--at",
                "--idle-timeout", "--request-timeout"}
#: time arguments (not options), by command
TIME_ARGUMENTS = {"emulator ctl advance": "seconds"}


def _time_params() -> list[tuple[str, str, Any]]:
    root = typer.main.get_command(app)
    ctx = root.context_class(root)
    found: list[tuple[str, str, Any]] = []

    def walk(command: Any, path: tuple[str, ...]) -> None:
        for param in command.params:
            if set(param.opts) & TIME_OPTIONS or TIME_ARGUMENTS.get(" ".join(path)) == param.name:
                found.append((" ".join(path) or "rmqctl", param.opts[0], param))
        if hasattr(command, "list_commands"):
            for name in command.list_commands(ctx):
                walk(command.get_command(ctx, name), (*path, name))

    walk(root, ())
    return found


def test_every_time_option_takes_the_one_grammar() -> None:
    params = _time_params()
    assert {opt for _, opt, _ in params} >= TIME_OPTIONS | {"seconds"}
    accepted = {}
    for command, opt, param in params:
        try:
            accepted[f"{command} {opt}"] = param.type.convert("1h30m", param, None)
        except Exception as exc:  # noqa: BLE001 -- the name of every option that refuses it is the answer
            accepted[f"{command} {opt}"] = type(exc).__name__
    assert accepted == {name: 5400.0 for name in accepted}


def test_timeout_5s_is_accepted() -> None:
    for args in (["--timeout", "5s", "group", "list"], ["group", "list", "--timeout", "1m"]):
        result = runner.invoke(app, ["--emulator", "healthy", *args, "-o", "json"])
        assert result.exit_code == 0, result.stderr


def test_watch_and_interval_take_units() -> None:
    result = runner.invoke(app, ["--emulator", "stall-and-leave", "--at", "30s", "group", "progress", "payment-service",
                                 "-w", "30s", "--count", "2", "-o", "jsonl"])
    assert result.exit_code == 0, result.stderr
    assert {'"sample": 1', '"sample": 2'} <= {part for line in result.stdout.splitlines()
                                              for part in line.split(", ") if part.startswith('"sample"')}


def test_a_bad_duration_is_a_command_line_mistake() -> None:
    result = runner.invoke(app, ["--emulator", "healthy", "group", "list", "--timeout", "5x"])
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0] == (
        "rmqctl: error: Invalid value for '--timeout': '5x' is not a duration: use seconds, or a duration like "
        "30s, 5m, 1h30m, 500ms")


def test_window_1h30m_reaches_the_job_in_its_own_spelling(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "rmqctl", "analyze", "stuck", str(tmp_path), "--window", "1h30m",
                           "--print-submit"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert " --window 90m " in proc.stdout


# ---------------------------------------------------------------------------------------------
# Config values


def _config(tmp_path: Path, timeout: str) -> Config:
    path = tmp_path / "config.toml"
    path.write_text(f'current-context = "lab"\n[contexts.lab]\nnamesrv = "127.0.0.1:9876"\ntimeout = {timeout}\n',
                    encoding="utf-8")
    return Config.load(path)


@pytest.mark.parametrize(("value", "seconds"), [('"5s"', 5.0), ('"1m30s"', 90.0), ("7", 7.0), ("2.5", 2.5)])
def test_a_context_timeout_is_a_duration(tmp_path: Path, value: str, seconds: float,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NAMESRV_ADDR", raising=False)
    assert resolve(namesrv=None, context=None, timeout=None, config=_config(tmp_path, value)).timeout == seconds


@pytest.mark.parametrize("value", ['"soon"', '"0s"', '"2d"'])
def test_a_bad_context_timeout_is_a_config_error(tmp_path: Path, value: str) -> None:
    with pytest.raises(ConfigError, match="contexts.lab.timeout"):
        _config(tmp_path, value)
