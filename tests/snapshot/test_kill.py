"""A snapshot export killed without a chance to flush (SIGKILL) loses at most the round it was in.

Complete rounds still buffered are in a synced journal; the next export into the same directory
writes them out as ordinary files before its own rounds. A journal whose writer is alive is left
alone, and a round cut short in the journal is dropped, never half-read.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow.parquet as pq

from rmqctl.snapshot.rows import QueueSnapshot
from rmqctl.snapshot.writer import RollingWriter
from tests.snapshot.helpers import parquet_files, read_dataset

ROOT = Path(__file__).resolve().parents[2]
ROWS_PER_ROUND = 20  # stall-and-leave: 2 groups x (8 + 2 retry) queues
T0 = 1_704_067_200_000  # 2024-01-01T00:00:00Z


def killed_writer(out: Path, rounds: int, torn_tail: bool = False) -> None:
    """A child process buffers ``rounds`` rounds of 3 rows each, then dies by SIGKILL."""
    code = textwrap.dedent(f"""
        import os, signal
        from rmqctl.snapshot.rows import QueueSnapshot
        from rmqctl.snapshot.writer import RollingWriter
        w = RollingWriter({str(out)!r})
        for k in range({rounds}):
            ts = {T0} + k * 30_000
            w.add_round(ts, [QueueSnapshot(ts, "c", "g", "T", "broker-a", q, broker_offset=k, consumer_offset=k)
                             for q in range(3)])
        if {torn_tail}:
            (journal,) = [p for p in os.listdir({str(out)!r}) if p.startswith(".journal-")]
            with open(os.path.join({str(out)!r}, journal), "ab") as f:
                f.write((10_000).to_bytes(8, "big") + b"half a round")
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert parquet_files(out) == []  # nothing had rolled: everything was in the buffer


def test_the_next_writer_recovers_every_complete_round(tmp_path: Path) -> None:
    killed_writer(tmp_path, rounds=4, torn_tail=True)
    writer = RollingWriter(tmp_path)
    assert writer.recovered_rows == 4 * 3
    assert (writer.files, writer.rows_written) == ([], 0)  # recovered files are not this writer's own
    rows = sorted((r["ts"].timestamp(), r["queue_id"], r["broker_offset"]) for r in read_dataset(tmp_path))
    assert rows == [(T0 / 1000 + k * 30, q, k) for k in range(4) for q in range(3)]
    writer.close()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".journal-")] == []


def test_a_live_writers_journal_is_left_alone(tmp_path: Path) -> None:
    live = RollingWriter(tmp_path)
    live.add_round(T0, [QueueSnapshot(T0, "c", "g", "T", "broker-a", 0, broker_offset=1)])
    other = RollingWriter(tmp_path)
    assert other.recovered_rows == 0 and parquet_files(tmp_path) == []
    other.close()
    live.close()
    assert len(read_dataset(tmp_path)) == 1


def test_a_sigkilled_cli_export_is_recovered_by_the_next_one(tmp_path: Path) -> None:
    out = tmp_path / "snaps"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "rmqctl", "--emulator", "stall-and-leave", "snapshot", "export",
         "--all", "--out", str(out), "--every", "30s", "--roll", "10m"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        import time

        deadline = time.monotonic() + 60
        # past the first rolled file (20 rounds), with some rounds journaled after it
        while not (parquet_files(out) and any(p.stat().st_size > 0 for p in out.glob(".journal-*"))):
            assert time.monotonic() < deadline and proc.poll() is None, "the export never rolled a file"
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    on_disk = sum(pq.read_metadata(p).num_rows for p in parquet_files(out))
    again = subprocess.run(
        [sys.executable, "-m", "rmqctl", "--emulator", "stall-and-leave", "-o", "json", "snapshot", "export",
         "--all", "--out", str(out), "--every", "30s", "--count", "1"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )
    assert again.returncode == 0, again.stderr
    summary = json.loads(again.stdout)
    recovered = summary["recovered_rows"]
    assert recovered > 0 and recovered % ROWS_PER_ROUND == 0, summary
    assert f"recovered {recovered} rows" in again.stderr
    assert len(read_dataset(out)) == on_disk + recovered + summary["rows"]
    assert summary["rows"] == ROWS_PER_ROUND
    assert list(out.glob(".journal-*")) == []
