"""``rmqctl snapshot export`` as a process: the happy path, bad input, and import hygiene."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rmqctl.cli.durations import parse_duration
from rmqctl.errors import UsageError
from tests.snapshot.helpers import read_dataset

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "rmqctl", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)


def test_export_on_the_emulator_prints_a_summary(tmp_path: Path) -> None:
    out = tmp_path / "snaps"
    proc = _run("--emulator", "stall-and-leave", "snapshot", "export", "payment-service", "--out", str(out),
                "--every", "1m", "--duration", "10m", "-o", "json")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["rounds"] == 10 and summary["rows"] == 100 and summary["missing_rows"] == 0
    assert summary["first_ts"] == 1_704_067_320_000 and summary["last_ts"] == 1_704_067_860_000
    assert summary["schema_version"] == 3 and summary["interrupted"] is None
    assert len(read_dataset(out)) == 100
    assert proc.stderr == ""  # no progress bar when stderr is not a terminal


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "rmqctl: error: name at least one GROUP or pass --all"),
        (["g", "--all"], "rmqctl: error: name GROUPs or pass --all, not both"),
        (["g", "--count", "3", "--duration", "1h"], "rmqctl: error: give --count or --duration, not both"),
        (["g", "--every", "3x"], "rmqctl: error: Invalid value for '--every': '3x' is not a duration: use seconds, "
                                 "or a duration like 30s, 5m, 1h30m, 500ms"),
        (["g", "--duration", "-5"], "rmqctl: error: Invalid value for '--duration': '-5' must be a finite duration "
                                    "above 0"),
        (["g", "--roll", "0"], "rmqctl: error: Invalid value for '--roll': '0' must be a finite duration above 0"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    proc = _run("--emulator", "healthy", "snapshot", "export", "--out", str(tmp_path / "x"), *args)
    assert proc.returncode == 2
    assert proc.stderr.splitlines()[0] == message
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "x").exists()


def test_an_unknown_group_is_an_error_not_an_empty_export(tmp_path: Path) -> None:
    proc = _run("--emulator", "healthy", "snapshot", "export", "nope", "--out", str(tmp_path / "x"), "--count", "1")
    assert proc.returncode == 2
    assert proc.stderr.splitlines()[0] == "rmqctl: error: consumer group 'nope' not found on any broker"
    assert list((tmp_path / "x").rglob("*.parquet")) == []


def test_durations() -> None:
    assert parse_duration("30s") == 30 and parse_duration("15m") == 900 and parse_duration("1h") == 3600
    assert parse_duration("1h30m") == 5400 and parse_duration("45") == 45 and parse_duration("500ms") == 0.5
    for bad in ("", "0", "-1", "1x", "m", "1m2", "inf", "nan"):
        with pytest.raises(UsageError):
            parse_duration(bad)


def test_the_cli_and_the_core_do_not_load_pyarrow_until_an_export_runs() -> None:
    code = (
        "import sys, rmqctl, rmqctl.cli.app, rmqctl.watch, rmqctl.connect\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in {'pyarrow', 'pyspark', 'textual'})\n"
        "assert not bad, bad\n"
        "import rmqctl.snapshot\n"
        "assert 'pyarrow' in sys.modules and 'pyspark' not in sys.modules and 'textual' not in sys.modules\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    helped = _run("snapshot", "export", "--help")
    assert helped.returncode == 0 and "--duration" in helped.stdout
