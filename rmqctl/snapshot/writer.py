"""A rolling Parquet writer for snapshot rows: buffer rounds, roll files, rename atomically.

Rows are buffered in memory and written out as one file per date partition when the buffer
spans ``roll_seconds`` of snapshot time or holds ``roll_rows`` rows, and on :meth:`close`. Each
file is written under a hidden temporary name (``.<name>.tmp``, which Spark, DuckDB and pyarrow
datasets all skip), synced, and renamed into place, so a reader never sees half a file and an
interrupted export loses nothing already renamed. Names carry the time of their first row and a
random token, so a restarted export adds files next to the old ones and never replaces one.

Rounds still in the buffer are also appended to a journal (``.journal-<token>.arrows``, an Arrow
IPC stream, synced after every round, locked while its writer lives), so a process killed without
a chance to flush (SIGKILL, a power cut) loses at most the round it was writing: the next writer
opened on the same directory finds journals whose writer is gone and turns their complete rounds
into Parquet files (:func:`recover_journals`).

Imports pyarrow and the snapshot schema only: never the CLI, textual or pyspark.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import fcntl
import os
import secrets
from collections.abc import Sequence
from pathlib import Path
from typing import IO

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
        "expression": [r.expression for r in rows],
        "expression_type": [r.expression_type for r in rows],
        "expression_version": [r.expression_version for r in rows],
        "owner_expression": [r.owner_expression for r in rows],
        "owner_expression_type": [r.owner_expression_type for r in rows],
        "owner_expression_version": [r.owner_expression_version for r in rows],
        "pop": [r.pop for r in rows],
        "max_deliveries": [r.max_deliveries for r in rows],
        "retry_deliveries": [r.retry_deliveries for r in rows],
    }
    return pa.Table.from_pydict(columns, schema=SCHEMA)


def rows_of(table: pa.Table) -> list[QueueSnapshot]:
    """The inverse of :func:`table_of`; columns an older schema version lacks read as null."""
    # timestamps back to the epoch milliseconds the rows carry (to_pylist would make datetimes)
    table = pa.Table.from_arrays(
        [col.cast(pa.int64()) if pa.types.is_timestamp(col.type) else col for col in table.columns],
        names=table.column_names)
    return [
        QueueSnapshot(ts_ms=r["ts"], cluster=r["cluster"], group=r["group"], topic=r["topic"], broker=r["broker"],
                      queue_id=r["queue_id"], broker_offset=r["broker_offset"], consumer_offset=r["consumer_offset"],
                      pull_offset=r["pull_offset"], last_consumed_ms=r["last_consumed_ts"],
                      broker_last_ms=r["broker_last_ts"], owner=r["owner"], owner_subscribed=r["owner_subscribed"],
                      message_model=r["message_model"], error=r["error"],
                      expression=r.get("expression"), expression_type=r.get("expression_type"),
                      expression_version=r.get("expression_version"), owner_expression=r.get("owner_expression"),
                      owner_expression_type=r.get("owner_expression_type"),
                      owner_expression_version=r.get("owner_expression_version"),
                      pop=r.get("pop"), max_deliveries=r.get("max_deliveries"),
                      retry_deliveries=r.get("retry_deliveries"))
        for r in table.to_pylist()
    ]


JOURNAL_PREFIX = ".journal-"
JOURNAL_SUFFIX = ".arrows"


class _Journal:
    """The buffered rounds of one writer, appended and synced round by round: each round is a
    complete Arrow IPC stream behind its 8-byte length, so a round cut short by a kill is known
    as such and dropped."""

    def __init__(self, out_dir: Path) -> None:
        self.path = out_dir / f"{JOURNAL_PREFIX}{secrets.token_hex(6)}{JOURNAL_SUFFIX}"
        self._file: IO[bytes] = open(self.path, "wb")  # noqa: SIM115 - lives as long as the writer
        fcntl.flock(self._file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)

    def append(self, rows: Sequence[QueueSnapshot]) -> None:
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, SCHEMA) as stream:
            stream.write_table(table_of(rows))
        data = sink.getvalue().to_pybytes()
        self._file.write(len(data).to_bytes(8, "big") + data)
        self._file.flush()
        os.fsync(self._file.fileno())

    def clear(self) -> None:
        """Everything journaled is in Parquet files now."""
        self._file.seek(0)
        self._file.truncate()

    def remove(self) -> None:
        with contextlib.suppress(OSError):
            os.unlink(self.path)
        self._file.close()


def _known_schema(schema: pa.Schema) -> bool:
    """:data:`SCHEMA`, or the schema of an earlier version (a leading part of it: versions only
    add columns at the end), as a journal of an older writer holds."""
    names = SCHEMA.names[:len(schema.names)]
    return schema.names == names and "schema_version" in names and all(
        schema.field(n).equals(SCHEMA.field(n)) for n in names)


def _journal_rounds(handle: IO[bytes]) -> list[pa.Table]:
    """The complete rounds of a journal; reading stops at the first incomplete or damaged one."""
    rounds = []
    while len(head := handle.read(8)) == 8:
        data = handle.read(int.from_bytes(head, "big"))
        try:
            table = pa.ipc.open_stream(data).read_all()
        except (pa.ArrowInvalid, OSError):
            break
        if not _known_schema(table.schema):
            break
        rounds.append(table)
    return rounds


def recover_journals(out_dir: str | Path, writer: RollingWriter) -> int:
    """Turn the complete rounds of journals left by dead writers under ``out_dir`` into Parquet
    files through ``writer``; returns how many rows were recovered. A journal still locked by a
    live writer is left alone."""
    recovered = 0
    for path in sorted(Path(out_dir).glob(f"{JOURNAL_PREFIX}*{JOURNAL_SUFFIX}")):
        try:
            handle = open(path, "rb")  # noqa: SIM115
        except OSError:
            continue
        with handle:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # its writer is alive
            by_partition: dict[str, list[QueueSnapshot]] = {}
            for table in _journal_rounds(handle):
                for row in rows_of(table):
                    by_partition.setdefault(partition_of(row.ts_ms), []).append(row)
            for partition, part in sorted(by_partition.items()):
                writer.write_file(partition, part)
                recovered += len(part)
            with contextlib.suppress(OSError):
                os.unlink(path)
    return recovered


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
        #: rows of killed exports' journals turned into files when this writer opened
        self.recovered_rows = recover_journals(self.out_dir, self)
        #: the files those rows went to (``files`` and ``rows_written`` count this writer's own)
        self.recovered_files, self.files, self.rows_written = self.files, [], 0
        self._journal: _Journal | None = None

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
        elif rows:
            self._journal_append(rows)
        return written

    def _journal_append(self, rows: Sequence[QueueSnapshot]) -> None:
        try:
            if self._journal is None:
                self._journal = _Journal(self.out_dir)
            self._journal.append(rows)
        except OSError as exc:
            raise errors.RmqctlError(f"cannot write the snapshot journal in {str(self.out_dir)!r}: {exc}") from exc

    def flush(self) -> list[Path]:
        """Write everything buffered now: one file per date partition."""
        if not self._buffer:
            return []
        by_partition: dict[str, list[QueueSnapshot]] = {}
        for row in self._buffer:
            by_partition.setdefault(partition_of(row.ts_ms), []).append(row)
        written = [self.write_file(partition, rows) for partition, rows in sorted(by_partition.items())]
        self._buffer = []
        self._first_ts = None
        if self._journal is not None:
            self._journal.clear()
        return written

    def close(self) -> list[Path]:
        written = self.flush()
        if self._journal is not None:
            self._journal.remove()
            self._journal = None
        return written

    def write_file(self, partition: str, rows: list[QueueSnapshot]) -> Path:
        """Write ``rows`` (all of ``partition``) as one new file, atomically."""
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
