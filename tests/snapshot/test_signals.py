"""SIGINT/SIGTERM flush every complete buffered round; the CLI exits 130 / 143."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from rmqctl.connect import Target, open_source
from rmqctl.snapshot import ExportProgress, export
from tests.snapshot.helpers import parquet_files, read_dataset

ROOT = Path(__file__).resolve().parents[2]
ROWS_PER_ROUND = 20  # stall-and-leave: 2 groups x (8 + 2 retry) queues


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
async def test_a_signal_flushes_the_buffered_rounds(tmp_path: Path, sig: signal.Signals) -> None:
    out = tmp_path / "snaps"

    def interrupt_after_seven(step: ExportProgress) -> None:
        if step.round == 7:
            # Nothing is on disk yet: 7 rounds are far from the 15-minute roll.
            assert parquet_files(out) == []
            os.kill(os.getpid(), sig)

    async with open_source(Target(emulator="stall-and-leave")) as opened:
        result = await export(opened, None, out, every=30, on_round=interrupt_after_seven)
    assert result.interrupted == sig
    assert result.rounds == 7
    (path,) = parquet_files(out)
    assert pq.read_metadata(path).num_rows == 7 * ROWS_PER_ROUND == result.rows
    # the handlers are gone again: the default SIGTERM/SIGINT behaviour is back
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def _wait_for(condition, timeout: float, what: str):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_the_cli_flushes_and_exits_with_the_signal_code(tmp_path: Path, sig: signal.Signals, code: int) -> None:
    out = tmp_path / "snaps"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "rmqctl", "--emulator", "stall-and-leave", "-o", "json", "snapshot", "export",
         "--all", "--out", str(out), "--every", "30s", "--roll", "10m"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        # Running until stopped on the virtual clock: a file rolls every 20 rounds.
        _wait_for(lambda: parquet_files(out), 60, "the first rolled file")
        rows_before = len(read_dataset(out))
        assert rows_before % (20 * ROWS_PER_ROUND) == 0
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == code, stderr
    assert f"stopped by {sig.name}" in stderr and "Traceback" not in stderr
    summary = json.loads(stdout)
    assert summary["interrupted"] == sig.name
    rows_after = len(read_dataset(out))
    # every complete round is on disk, the buffered ones included, and nothing else
    assert rows_after == summary["rows"] == summary["rounds"] * ROWS_PER_ROUND
    assert rows_after >= rows_before
    assert sorted(summary["files"]) == [str(p) for p in parquet_files(out)]
    assert not [p for p in out.rglob("*.tmp")]
