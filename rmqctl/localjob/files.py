"""The local engine's file handling: which snapshot files to read, whether they are whole, read once.

The same choices and the same words as the Spark job's ``analysis/files.py``: the window's ``date=YYYY-MM-DD``
partitions are picked from the directory listing alone; each candidate is then opened once, its footer and
schema checked and its columns read, and every file left out is named with its reason: not a whole Parquet
file (corrupt or truncated), corrupt pages (a whole header and footer, but fewer rows readable than its
footer counts), not a snapshot file (a required column missing, null or of another type, named in Spark's
type names), rows dated outside :data:`EARLIEST_MS` .. now + :data:`FUTURE_SLACK_MS`, or a partition or file
that cannot be read. A file newer than :data:`SCHEMA_VERSION` is refused. :func:`footer_rows` counts rows
from the footers alone (the engine choice of ``analyze stuck --engine auto``).

Imports pyarrow, the standard library and :mod:`rmqctl.localjob.verdicts` only.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from rmqctl.localjob.verdicts import COLUMNS_READ, ROWS, TIMESTAMP_COLUMNS

SCHEMA_VERSION = 3
"""The newest snapshot schema version this engine understands (the Spark job's)."""

#: Snapshots older than this (2001-01-01T00:00:00Z) come from a broken clock, not from RocketMQ.
EARLIEST_MS = 978_307_200_000
#: How far past the engine's own clock a snapshot may lie (clocks of two machines disagree a little).
FUTURE_SLACK_MS = 86_400_000

SNAPSHOT_TYPES = {
    "ts": "timestamp", "cluster": "string", "group": "string", "topic": "string", "broker": "string",
    "queue_id": "int", "broker_offset": "bigint", "consumer_offset": "bigint", "pull_offset": "bigint",
    "last_consumed_ts": "timestamp", "broker_last_ts": "timestamp", "owner": "string",
    "owner_subscribed": "boolean", "message_model": "string", "error": "string", "schema_version": "smallint",
    "expression": "string", "expression_type": "string", "expression_version": "bigint",
    "owner_expression": "string", "owner_expression_type": "string", "owner_expression_version": "bigint",
}
"""Schema version 2 column by column, in the type names the Spark job's messages use (docs/snapshots.md)."""

REQUIRED = ("ts", "cluster", "group", "topic", "broker", "queue_id", "schema_version")
"""The columns every snapshot row has (the schema's non-nullable ones)."""

_WIDENS = {("tinyint", "smallint"), ("smallint", "int"), ("int", "bigint")}


class JobError(Exception):
    """A one-line error for the user; the command exits 2."""


@dataclass(frozen=True)
class SnapshotFile:
    """One snapshot file of a ``date=`` partition."""

    path: Path
    date: dt.date


@dataclass(frozen=True)
class ReadFile:
    """A usable snapshot file once read: its schema version and its newest row (None: a file of no rows)."""

    file: SnapshotFile
    schema_version: int | None
    last_us: int | None


_DATE_DIR = re.compile(r"^date=(\d{4}-\d{2}-\d{2})$")


def _quiet(message: str) -> None:
    pass


def list_snapshot_files(root: Path, first_date: dt.date | None, last_date: dt.date | None,
                        warn: Callable[[str], None] = _quiet) -> list[SnapshotFile]:
    """The ``*.parquet`` files under the ``date=`` partitions between two dates (inclusive), by name.

    Other names (``.tmp`` files being written, hidden journals) are ignored and nothing is opened; a
    ``date=`` entry that is not a readable directory, or a file that cannot be read, is named through ``warn``.
    """
    if not root.is_dir():
        raise JobError(f"{root} is not a directory")
    found: list[SnapshotFile] = []
    try:
        entries = sorted(root.iterdir())
    except OSError as exc:
        raise JobError(f"cannot list {root}: {exc.strerror or exc}") from exc
    for part in entries:
        match = _DATE_DIR.match(part.name)
        if not match:
            continue
        try:
            date = dt.date.fromisoformat(match.group(1))
        except ValueError:
            warn(f"skipped {part}: not a date")
            continue
        if (first_date and date < first_date) or (last_date and date > last_date):
            continue
        if not part.is_dir():
            warn(f"skipped {part}: not a directory")
            continue
        try:
            names = sorted(p for p in part.iterdir() if p.name.endswith(".parquet") and not p.name.startswith("."))
        except OSError as exc:
            warn(f"skipped {part}: cannot read the partition ({exc.strerror or exc})")
            continue
        for path in names:
            if not os.access(path, os.R_OK):
                warn(f"skipped {path}: cannot read the file (permission denied)")
                continue
            found.append(SnapshotFile(path, date))
    return found


def footer_rows(files: Sequence[SnapshotFile]) -> int:
    """The rows the files' footers count (no page is read; a file whose footer cannot be read counts 0)."""
    total = 0
    for snapshot in files:
        try:
            total += pq.ParquetFile(snapshot.path).metadata.num_rows
        except Exception:  # noqa: BLE001 - a corrupt footer is named later, when the file is read
            continue
    return total


def spark_type(t: pa.DataType) -> str:
    """The Spark type name a Parquet column of Arrow type ``t`` is read as (for the messages)."""
    if pa.types.is_dictionary(t):
        return spark_type(t.value_type)
    names = {pa.int8(): "tinyint", pa.int16(): "smallint", pa.int32(): "int", pa.int64(): "bigint",
             pa.uint8(): "smallint", pa.uint16(): "int", pa.uint32(): "bigint", pa.uint64(): "decimal(20,0)",
             pa.float16(): "float", pa.float32(): "float", pa.float64(): "double", pa.bool_(): "boolean",
             pa.date32(): "date", pa.date64(): "date", pa.null(): "void"}
    if t in names:
        return names[t]
    if pa.types.is_string(t) or pa.types.is_large_string(t) or str(t) == "string_view":
        return "string"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return "binary"
    if pa.types.is_timestamp(t):
        return "timestamp" if t.tz else "timestamp_ntz"
    if pa.types.is_decimal(t):
        return f"decimal({t.precision},{t.scale})"
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return f"array<{spark_type(t.value_type)}>"
    if pa.types.is_struct(t):
        return "struct<" + ",".join(f"{f.name}:{spark_type(f.type)}" for f in t) + ">"
    if pa.types.is_map(t):
        return f"map<{spark_type(t.key_type)},{spark_type(t.item_type)}>"
    return str(t)


def _compatible(found: str, expected: str) -> bool:
    # Parquet integers narrower than the schema's widen on read; timestamps may lack the UTC flag
    if expected == "timestamp":
        return found in ("timestamp", "timestamp_ntz")
    return found == expected or (found, expected) in _WIDENS


def type_problem(schema: pa.Schema) -> str | None:
    """Why a file of this schema is not a snapshot file, or None when it is one."""
    found = {f.name: spark_type(f.type) for f in schema}
    missing = [name for name in REQUIRED if name not in found]
    if missing:
        return f"not a snapshot file (no column {', '.join(missing)})"
    wrong = [f"{name} is {found[name]}, not {expected}" for name, expected in SNAPSHOT_TYPES.items()
             if name in found and not _compatible(found[name], expected)]
    if wrong:
        return f"not a snapshot file ({'; '.join(wrong)})"
    return None


def _iso(ms: int) -> str:
    try:
        return dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (OverflowError, ValueError, OSError):
        return f"{ms} ms since 1970"


def normalized(table: pa.Table) -> pa.Table:
    """The file's columns as :data:`~rmqctl.localjob.verdicts.ROWS` (timestamps in microseconds, absent
    columns null, narrower integers widened)."""
    arrays = []
    for field in ROWS:
        if field.name not in table.column_names:
            arrays.append(pa.nulls(table.num_rows, field.type))
            continue
        column = table[field.name]
        if pa.types.is_dictionary(column.type):
            column = column.cast(column.type.value_type)
        if field.name in TIMESTAMP_COLUMNS:
            unit_us = pa.timestamp("us", tz=column.type.tz)
            column = pc.cast(column, unit_us, safe=False).cast(pa.int64())
        else:
            column = column.cast(field.type)
        arrays.append(column)
    return pa.Table.from_arrays(arrays, schema=ROWS)


class _Rows:
    """Where the rows of the usable files go, bucket by bucket: each file's rows are held apart until the file
    is known to be whole (a corrupt page or a bad row at its end leaves out the whole file, as before), then
    kept. One bucket is kept in memory; more are written to Arrow files in ``spill`` and read back one at a
    time, so that only one bucket's rows are in memory while it is judged."""

    def __init__(self, buckets: int, spill: Path | None) -> None:
        self.buckets = buckets
        self.spill = spill
        self.kept: list[list[pa.Table]] = [[] for _ in range(buckets)]
        self.files: list[list[Path]] = [[] for _ in range(buckets)]
        self.pending: list[list[pa.Table]] = [[] for _ in range(buckets)]
        self.pending_rows = 0
        self.writers: dict[int, tuple[Path, pa.ipc.RecordBatchWriter]] = {}
        self.serial = 0

    def add(self, rows: pa.Table) -> None:
        """Rows of the file being read (not yet known to be whole)."""
        if self.buckets == 1:
            self.pending[0].append(rows)
            return
        bucket = queue_buckets(rows, self.buckets)
        for b in range(self.buckets):
            part = rows.filter(pc.equal(bucket, b))
            if part.num_rows:
                self._writer(b).write_table(part)

    def _writer(self, bucket: int) -> pa.ipc.RecordBatchWriter:
        if bucket not in self.writers:
            assert self.spill is not None
            self.serial += 1
            path = self.spill / f"rows-{self.serial}-{bucket}.arrow"
            options = pa.ipc.IpcWriteOptions(compression="lz4" if pa.Codec.is_available("lz4") else None)
            self.writers[bucket] = (path, pa.ipc.new_file(path, ROWS, options=options))
        return self.writers[bucket][1]

    def end_file(self, keep: bool) -> None:
        """The file read is whole (``keep``) or left out."""
        for b, pending in enumerate(self.pending):
            if keep:
                self.kept[b].extend(pending)
            pending.clear()
        for b, (path, writer) in self.writers.items():
            writer.close()
            if keep:
                self.files[b].append(path)
            else:
                path.unlink()
        self.writers.clear()

    def tables(self) -> Iterator[pa.Table]:
        """Each bucket's rows, one bucket at a time (spilled files deleted once read)."""
        for b in range(self.buckets):
            parts = self.kept[b]
            for path in self.files[b]:
                with pa.memory_map(str(path)) as source:
                    parts.append(pa.ipc.open_file(source).read_all().combine_chunks())
                path.unlink()
            self.kept[b] = []
            yield pa.concat_tables(parts) if parts else ROWS.empty_table()


BUCKET_KEY = ("cluster", "group", "broker")
"""What puts rows in one bucket: a group's queues on one broker are judged together (a POP group's dead-letter
queue that appears in the window is judged against the group's other queues on its broker)."""


def queue_buckets(rows: pa.Table, buckets: int) -> pa.Array:
    """A bucket in ``0 .. buckets - 1`` per row that depends on the row's :data:`BUCKET_KEY` columns alone: the
    same for every row of a group's queues on a broker, in every file and row group (of this process: Python's
    string hash)."""
    total: pa.Array | None = None
    for name in BUCKET_KEY:
        column = rows[name]
        encoded = pc.dictionary_encode(column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column)
        # each distinct value hashed once, then spread over the rows by its dictionary code
        value_hash = pa.array([hash(v) % buckets for v in encoded.dictionary.to_pylist()], pa.int64())
        part = pc.fill_null(pc.take(value_hash, encoded.indices), 0)
        total = part if total is None else pc.add(total, part)
    assert total is not None
    # the sum is below len(BUCKET_KEY) * buckets: its remainder, looked up
    remainder = pa.array([i % buckets for i in range(len(BUCKET_KEY) * buckets)], pa.int64())
    return pc.take(remainder, total)


def read_files(files: Sequence[SnapshotFile], warn: Callable[[str], None],
               now_ms: int) -> tuple[list[ReadFile], pa.Table]:
    """The usable files among ``files`` and their rows (:data:`~rmqctl.localjob.verdicts.ROWS`), each file
    opened once; every file left out is named through ``warn`` with its reason, and a file newer than the
    engine raises :class:`JobError`. Rows dated after ``now_ms`` (the engine's clock) plus a day are refused."""
    usable, tables = read_buckets(files, warn, now_ms, 1, None)
    return usable, next(iter(tables))


def read_buckets(files: Sequence[SnapshotFile], warn: Callable[[str], None], now_ms: int, buckets: int,
                 spill: Path | None) -> tuple[list[ReadFile], Iterator[pa.Table]]:
    """:func:`read_files` with the rows cut into ``buckets`` (:func:`queue_buckets`): every row of a group's
    queues on a broker in one bucket, the buckets read back one at a time. With more than one bucket the rows
    are written to Arrow files under ``spill`` as each row group is read, so memory holds one row group while
    reading and one bucket while judging."""
    latest_ms = now_ms + FUTURE_SLACK_MS
    usable: list[ReadFile] = []
    rows_out = _Rows(buckets, spill)
    for snapshot in files:
        try:
            parquet = pq.ParquetFile(snapshot.path)
            schema = parquet.schema_arrow
            counted = parquet.metadata.num_rows
        except Exception:  # noqa: BLE001 - pyarrow's error for a file that is not Parquet varies by version
            warn(f"skipped {snapshot.path}: not a whole Parquet file (corrupt or truncated)")
            continue
        problem = type_problem(schema)
        if problem is not None:
            warn(f"skipped {snapshot.path}: {problem}")
            continue
        found = _read_file(parquet, snapshot, rows_out)
        if found.readable < counted:
            # a whole header and footer, but pages that do not decode: the rest of the file is not read
            warn(f"skipped {snapshot.path}: corrupt pages: its footer counts {counted} rows, {found.readable} could "
                 "be read")
            rows_out.end_file(keep=False)
            continue
        if found.readable == 0:
            rows_out.end_file(keep=True)
            usable.append(ReadFile(snapshot, None, None))
            continue
        if found.incomplete:
            warn(f"skipped {snapshot.path}: not a snapshot file ({found.incomplete} rows without a value in "
                 f"{', '.join(REQUIRED)})")
            rows_out.end_file(keep=False)
            continue
        if found.version > SCHEMA_VERSION:
            rows_out.end_file(keep=False)
            raise JobError(f"{snapshot.path} has snapshot schema version {found.version}; this job knows up to "
                           f"{SCHEMA_VERSION} (upgrade rmqctl)")
        first_ms, last_ms = found.first_us // 1000, found.last_us // 1000
        if first_ms < EARLIEST_MS or last_ms > latest_ms:
            bad = first_ms if first_ms < EARLIEST_MS else last_ms
            warn(f"skipped {snapshot.path}: rows dated {_iso(bad)}, outside {_iso(EARLIEST_MS)} .. "
                 f"{_iso(latest_ms)} (a wrong clock?)")
            rows_out.end_file(keep=False)
            continue
        rows_out.end_file(keep=True)
        usable.append(ReadFile(snapshot, found.version, found.last_us))
    return usable, rows_out.tables()


@dataclass
class _FileRead:
    """What reading one file's row groups found."""

    readable: int = 0
    incomplete: int = 0
    version: int = 0
    first_us: int = 0
    last_us: int = 0


def _read_file(parquet: pq.ParquetFile, snapshot: SnapshotFile, rows_out: _Rows) -> _FileRead:
    """Read the file row group by row group into ``rows_out``, up to the first row group that does not decode;
    rows of a file with a row lacking a required value are not normalized (the file is left out)."""
    columns = [c for c in (*COLUMNS_READ, "schema_version") if c in parquet.schema_arrow.names]
    found = _FileRead()
    bounds: list[int] = []
    for i in range(parquet.metadata.num_row_groups):
        try:
            table = parquet.read_row_group(i, columns=columns)
        except Exception:  # noqa: BLE001 - a page that does not decode (pyarrow raises OSError or ArrowInvalid)
            break
        found.readable += table.num_rows
        if table.num_rows == 0:
            continue
        nulls = pc.is_null(table[REQUIRED[0]])
        for name in REQUIRED[1:]:
            nulls = pc.or_(nulls, pc.is_null(table[name]))
        missing = pc.sum(pc.cast(nulls, pa.int64())).as_py() or 0
        found.incomplete += missing
        if found.incomplete:
            continue
        found.version = max(found.version, int(pc.max(table["schema_version"]).as_py()))
        rows = normalized(table)
        ts = pc.min_max(rows["ts"]).as_py()
        bounds += [ts["min"], ts["max"]]
        rows_out.add(rows)
    if bounds:
        found.first_us, found.last_us = min(bounds), max(bounds)
    return found
