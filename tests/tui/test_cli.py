"""The ``rmqctl tui`` and ``rmqctl demo`` commands as processes: options, errors, the non-TTY path."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from rmqctl import errors
from rmqctl.cli.tui_cmd import parse_interval
from rmqctl.config import Config

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rmqctl", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
                          stdin=subprocess.DEVNULL)


@pytest.mark.parametrize(("text", "seconds"), [("2s", 2.0), ("500ms", 0.5), ("1m", 60.0), ("3", 3.0),
                                               (" 1.5s ", 1.5)])
def test_interval_accepts_durations(text: str, seconds: float) -> None:
    assert parse_interval(text) == seconds


@pytest.mark.parametrize("text", ["fast", "2x", "-1s", "10ms", ""])
def test_interval_rejects_nonsense(text: str) -> None:
    with pytest.raises(typer.BadParameter):
        parse_interval(text)


def test_bad_interval_is_a_one_line_usage_error() -> None:
    proc = run("tui", "--emulator", "healthy", "--interval", "soon")
    assert proc.returncode == 2
    assert proc.stderr.startswith("rmqctl: error: Invalid value for '--interval' / '-i': 'soon' is not a duration")
    assert "Traceback" not in proc.stderr


def test_unknown_binding_id_in_the_config_is_a_config_error(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[tui.keys]\npuase = "space"\n', encoding="utf-8")
    proc = run("tui", "--emulator", "healthy", env={"RMQCTL_CONFIG": str(config)})
    assert proc.returncode == 2
    assert "unknown binding id 'puase'" in proc.stderr and "Traceback" not in proc.stderr


def test_tui_keys_are_read_validated_and_kept_on_save(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('current-context = "x"\n[contexts.x]\nnamesrv = "h:9876"\n[tui.keys]\npause = "space"\n',
                    encoding="utf-8")
    config = Config.load(path)
    assert config.tui_keys == {"pause": "space"}
    config.save()
    assert Config.load(path).tui_keys == {"pause": "space"}
    path.write_text('[tui.keys]\npause = 3\n', encoding="utf-8")
    with pytest.raises(errors.ConfigError, match="tui.keys.pause"):
        Config.load(path)
    path.write_text('[tui]\ncolors = "x"\n', encoding="utf-8")
    with pytest.raises(errors.ConfigError, match="unknown key 'colors'"):
        Config.load(path)


def test_demo_prints_the_report_when_not_in_a_terminal() -> None:
    proc = run("demo")
    assert proc.returncode == 0, proc.stderr
    assert "Doctor for SUBSCRIBE_TEST_CONSUMER_GROUP" in proc.stdout


def test_tui_without_a_name_server_says_how_to_give_one(tmp_path: Path) -> None:
    env = {"RMQCTL_CONFIG": str(tmp_path / "none.toml"), "NAMESRV_ADDR": ""}
    proc = run("tui", env=env)
    assert proc.returncode == 2 and proc.stderr.startswith("rmqctl: error: no name server address")
