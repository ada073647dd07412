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
from collections.abc import Callable, Sequence
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


def _readable_rows(parquet: pq.ParquetFile, columns: Sequence[str]) -> int:
    """Rows of the row groups that decode, up to the first that does not (where a reader stops)."""
    readable = 0
    for i in range(parquet.metadata.num_row_groups):
        try:
            readable += parquet.read_row_group(i, columns=list(columns)).num_rows
        except Exception:  # noqa: BLE001 - pyarrow raises OSError or ArrowInvalid by version
            break
    return readable


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


def read_files(files: Sequence[SnapshotFile], warn: Callable[[str], None],
               now_ms: int) -> tuple[list[ReadFile], pa.Table]:
    """The usable files among ``files`` and their rows (:data:`~rmqctl.localjob.verdicts.ROWS`), each file
    opened once; every file left out is named through ``warn`` with its reason, and a file newer than the
    engine raises :class:`JobError`. Rows dated after ``now_ms`` (the engine's clock) plus a day are refused."""
    latest_ms = now_ms + FUTURE_SLACK_MS
    usable: list[ReadFile] = []
    tables: list[pa.Table] = []
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
        columns = [c for c in (*COLUMNS_READ, "schema_version") if c in schema.names]
        try:
            table = parquet.read(columns=columns)
        except Exception:  # noqa: BLE001 - a page that does not decode
            readable = _readable_rows(parquet, columns)
            warn(f"skipped {snapshot.path}: corrupt pages: its footer counts {counted} rows, {readable} could be read")
            continue
        if table.num_rows < counted:
            warn(f"skipped {snapshot.path}: corrupt pages: its footer counts {counted} rows, "
                 f"{table.num_rows} could be read")
            continue
        if table.num_rows == 0:
            usable.append(ReadFile(snapshot, None, None))
            continue
        incomplete = 0
        for name in REQUIRED:
            incomplete_here = table[name].null_count
            incomplete = max(incomplete, incomplete_here)
        if incomplete:
            nulls = pc.is_null(table[REQUIRED[0]])
            for name in REQUIRED[1:]:
                nulls = pc.or_(nulls, pc.is_null(table[name]))
            count = pc.sum(pc.cast(nulls, pa.int64())).as_py()
            warn(f"skipped {snapshot.path}: not a snapshot file ({count} rows without a value in "
                 f"{', '.join(REQUIRED)})")
            continue
        version = int(pc.max(table["schema_version"]).as_py())
        if version > SCHEMA_VERSION:
            raise JobError(f"{snapshot.path} has snapshot schema version {version}; this job knows up to "
                           f"{SCHEMA_VERSION} (upgrade rmqctl)")
        rows = normalized(table)
        bounds = pc.min_max(rows["ts"]).as_py()
        first_ms, last_ms = bounds["min"] // 1000, bounds["max"] // 1000
        if first_ms < EARLIEST_MS or last_ms > latest_ms:
            bad = first_ms if first_ms < EARLIEST_MS else last_ms
            warn(f"skipped {snapshot.path}: rows dated {_iso(bad)}, outside {_iso(EARLIEST_MS)} .. "
                 f"{_iso(latest_ms)} (a wrong clock?)")
            continue
        usable.append(ReadFile(snapshot, version, bounds["max"]))
        tables.append(rows)
    rows_read = pa.concat_tables(tables) if tables else ROWS.empty_table()
    return usable, rows_read
