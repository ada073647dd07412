"""A rolling Parquet writer for snapshot rows: buffer rounds, roll files, rename atomically.

Rows are buffered in memory and written out as one file per date partition when the buffer
spans ``roll_seconds`` of snapshot time or holds ``roll_rows`` rows, and on :meth:`close`. Each
file is written under a hidden temporary name (``.<name>.tmp``, which Spark, DuckDB and pyarrow
datasets all skip), synced, and renamed into place, so a reader never sees half a file and an
interrupted export loses nothing already renamed. Names carry the time of their first row and a
random token, so a restarted export adds files next to the old ones and never replaces one.

Imports pyarrow and the snapshot schema only: never the CLI, textual or pyspark.
"""

from __future__ import annotations

import datetime as _dt
import os
import secrets
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from rmqctl import errors
from rmqctl.snapshot.rows import QueueSnapshot
from rmqctl.snapshot.schema import FILE_SUFFIX, SCHEMA, SCHEMA_VERSION, TEMP_SUFFIX, partition_of

#: default roll period, in seconds of snapshot time
ROLL_SECONDS = 15 * 60.0
#: default maximum rows per file
ROLL_ROWS = 1_000_000


def table_of(rows: Sequence[QueueSnapshot]) -> pa.Table:
    """The rows as an Arrow table of exactly :data:`SCHEMA` (metadata included)."""
    columns = {
        "ts": [r.ts_ms for r in rows],
        "cluster": [r.cluster for r in rows],
        "group": [r.group for r in rows],
        "topic": [r.topic for r in rows],
        "broker": [r.broker for r in rows],
        "queue_id": [r.queue_id for r in rows],
        "broker_offset": [r.broker_offset for r in rows],
        "consumer_offset": [r.consumer_offset for r in rows],
        "pull_offset": [r.pull_offset for r in rows],
        "last_consumed_ts": [r.last_consumed_ms for r in rows],
        "broker_last_ts": [r.broker_last_ms for r in rows],
        "owner": [r.owner for r in rows],
        "owner_subscribed": [r.owner_subscribed for r in rows],
        "message_model": [r.message_model for r in rows],
        "error": [r.error for r in rows],
        "schema_version": [SCHEMA_VERSION] * len(rows),
    }
    return pa.Table.from_pydict(columns, schema=SCHEMA)


class RollingWriter:
    """Buffers rounds of rows under ``out_dir`` and rolls them into Parquet files."""

    def __init__(self, out_dir: str | Path, *, roll_seconds: float = ROLL_SECONDS,
                 roll_rows: int = ROLL_ROWS, prefix: str = "snapshots") -> None:
        if not roll_seconds > 0:
            raise errors.UsageError(f"the roll period must be positive, not {roll_seconds}")
        if roll_rows < 1:
            raise errors.UsageError(f"the rows per file must be at least 1, not {roll_rows}")
        self.out_dir = Path(out_dir)
        self.roll_ms = int(roll_seconds * 1000)
        self.roll_rows = roll_rows
        self.prefix = prefix
        self._buffer: list[QueueSnapshot] = []
        self._first_ts: int | None = None
        #: every file renamed into place so far, in order
        self.files: list[Path] = []
        self.rows_written = 0
        try:
            self.out_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise errors.UsageError(f"cannot create the output directory {str(self.out_dir)!r}: {exc}") from exc

    @property
    def buffered(self) -> int:
        return len(self._buffer)

    def add_round(self, ts_ms: int, rows: Sequence[QueueSnapshot]) -> list[Path]:
        """Buffer one round (all rows taken at ``ts_ms``); returns the files this rolled."""
        written: list[Path] = []
        if self._first_ts is not None and ts_ms - self._first_ts >= self.roll_ms:
            written += self.flush()
        if rows:
            if self._first_ts is None:
                self._first_ts = ts_ms
            self._buffer.extend(rows)
        if len(self._buffer) >= self.roll_rows:
            written += self.flush()
        return written

    def flush(self) -> list[Path]:
        """Write everything buffered now: one file per date partition."""
        if not self._buffer:
            return []
        by_partition: dict[str, list[QueueSnapshot]] = {}
        for row in self._buffer:
            by_partition.setdefault(partition_of(row.ts_ms), []).append(row)
        written = [self._write(partition, rows) for partition, rows in sorted(by_partition.items())]
        self._buffer = []
        self._first_ts = None
        return written

    def close(self) -> list[Path]:
        return self.flush()

    def _write(self, partition: str, rows: list[QueueSnapshot]) -> Path:
        directory = self.out_dir / partition
        first = _dt.datetime.fromtimestamp(rows[0].ts_ms / 1000, _dt.UTC).strftime("%Y%m%dT%H%M%SZ")
        try:
            directory.mkdir(parents=True, exist_ok=True)
            while True:
                name = f"{self.prefix}-{first}-{secrets.token_hex(4)}{FILE_SUFFIX}"
                final = directory / name
                if not final.exists():
                    break
            temp = directory / f".{name}{TEMP_SUFFIX}"
            pq.write_table(table_of(rows), temp, compression="zstd")
            with open(temp, "rb+") as handle:
                os.fsync(handle.fileno())
            os.replace(temp, final)
            _sync_dir(directory)
        except OSError as exc:
            raise errors.RmqctlError(f"cannot write snapshot file in {str(directory)!r}: {exc}") from exc
        self.files.append(final)
        self.rows_written += len(rows)
        return final


def _sync_dir(directory: Path) -> None:
    """Make the rename itself durable (a no-op where directories cannot be opened)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
