"""Rolling, atomic renames and restarts of the Parquet writer."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from rmqctl import errors
from rmqctl.connect import Target, open_source
from rmqctl.snapshot import QueueSnapshot, RollingWriter, export
from tests.snapshot.helpers import VIRTUAL_EPOCH_MS, parquet_files, read_dataset, read_rows

DAY_MS = 86_400_000


def _round(ts_ms: int, queues: int = 3) -> list[QueueSnapshot]:
    return [QueueSnapshot(ts_ms, "DefaultCluster", "g", "T", "broker-a", q, broker_offset=10 * q,
                          consumer_offset=10 * q) for q in range(queues)]


def test_files_roll_every_period_of_snapshot_time(tmp_path: Path) -> None:
    writer = RollingWriter(tmp_path, roll_seconds=300)
    rolled = []
    for k in range(25):  # one round a minute for 25 minutes
        rolled.append(writer.add_round(VIRTUAL_EPOCH_MS + k * 60_000, _round(VIRTUAL_EPOCH_MS + k * 60_000)))
    # a file after minutes 0-4, 5-9, 10-14, 15-19; minutes 20-24 are still buffered
    assert [i for i, r in enumerate(rolled) if r] == [5, 10, 15, 20]
    assert len(parquet_files(tmp_path)) == 4 and writer.buffered == 15
    writer.close()
    files = parquet_files(tmp_path)
    assert len(files) == 5
    assert [pq.read_metadata(p).num_rows for p in writer.files] == [15, 15, 15, 15, 15]
    assert len(read_rows(tmp_path)) == 75


def test_files_roll_at_the_row_limit(tmp_path: Path) -> None:
    writer = RollingWriter(tmp_path, roll_seconds=3600, roll_rows=7)
    for k in range(5):
        writer.add_round(VIRTUAL_EPOCH_MS + k * 1000, _round(VIRTUAL_EPOCH_MS + k * 1000))
    writer.close()
    # whole rounds stay together: 3 + 3 + 3 = 9 >= 7 rolls, then 6 rows on close
    assert [pq.read_metadata(p).num_rows for p in writer.files] == [9, 6]


def test_a_buffer_spanning_midnight_goes_to_two_partitions(tmp_path: Path) -> None:
    writer = RollingWriter(tmp_path, roll_seconds=3600)
    late = VIRTUAL_EPOCH_MS + DAY_MS - 30_000  # 2024-01-01T23:59:30Z
    writer.add_round(late, _round(late))
    writer.add_round(late + 30_000, _round(late + 30_000))
    writer.close()
    assert sorted(p.parent.name for p in writer.files) == ["date=2024-01-01", "date=2024-01-02"]
    by_date = {r["date"]: r["ts"].isoformat() for r in read_dataset(tmp_path)}
    assert by_date == {"2024-01-01": "2024-01-01T23:59:30+00:00", "2024-01-02": "2024-01-02T00:00:00+00:00"}


def test_a_file_appears_only_complete(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The rename is the commit point: a crash before it leaves only a hidden temp file, which
    readers skip, and never a truncated ``.parquet``."""
    writer = RollingWriter(tmp_path)
    writer.add_round(VIRTUAL_EPOCH_MS, _round(VIRTUAL_EPOCH_MS))
    seen_during_write: list[list[str]] = []

    def crash_on_rename(src: str, dst: str) -> None:
        seen_during_write.append(sorted(p.name for p in tmp_path.rglob("*")
                                        if p.is_file() and not p.name.startswith(".journal-")))
        raise OSError("disk gone")

    monkeypatch.setattr("rmqctl.snapshot.writer.os.replace", crash_on_rename)
    with pytest.raises(errors.RmqctlError, match="cannot write snapshot file"):
        writer.flush()
    (temp,) = seen_during_write[0]
    assert temp.startswith(".snapshots-20240101T000000Z-") and temp.endswith(".parquet.tmp")
    assert parquet_files(tmp_path) == []
    assert read_dataset(tmp_path) == []  # the dataset reader ignores the hidden temp file
    monkeypatch.undo()
    writer.close()  # the disk is back: the round is still buffered and lands
    assert len(read_dataset(tmp_path)) == len(_round(VIRTUAL_EPOCH_MS))


def _digest(paths: list[Path]) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in paths}


async def test_a_restart_appends_new_files_and_leaves_the_old_ones_alone(tmp_path: Path) -> None:
    out = tmp_path / "snaps"
    async with open_source(Target(emulator="stall-and-leave")) as opened:
        first = await export(opened, ["payment-service"], out, every=30, count=3, handle_signals=False)
    before = _digest(parquet_files(out))
    assert len(before) == 1 and first.rows == 3 * 10
    # the same scenario again: the same virtual times, so the same first-row time in the name
    async with open_source(Target(emulator="stall-and-leave")) as opened:
        second = await export(opened, ["payment-service"], out, every=30, count=2, handle_signals=False)
    after = _digest(parquet_files(out))
    assert {k: after[k] for k in before} == before
    assert len(after) == 2
    assert set(after) - set(before) == {p.name for p in second.files}
    assert len(read_dataset(out)) == 3 * 10 + 2 * 10


def test_bad_settings_are_usage_errors(tmp_path: Path) -> None:
    with pytest.raises(errors.UsageError):
        RollingWriter(tmp_path, roll_seconds=0)
    with pytest.raises(errors.UsageError):
        RollingWriter(tmp_path, roll_rows=0)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(errors.UsageError, match="cannot create the output directory"):
        RollingWriter(blocker / "sub")
