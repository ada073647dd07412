"""The stuck-queue job's file handling: which snapshot files to read, whether they are whole, and their schema.

The window's ``date=YYYY-MM-DD`` partitions are picked from the directory listing alone; Spark then reads
every candidate's ``schema_version`` column (the exporter writes the version there and in the file's
metadata), its required columns and the time range of its rows in one pass that skips files which are
not whole Parquet files. A file newer than :data:`analysis.schema.SCHEMA_VERSION` is refused; every other
file left out is named with its reason: corrupt or truncated, corrupt pages (a whole header and footer, but
fewer rows readable than its footer counts), not a snapshot file (a required column missing, null or of
another type), rows dated outside :data:`EARLIEST_MS` .. now + :data:`FUTURE_SLACK_MS`
(a clock that jumped years ahead would otherwise move the default window there), or a partition or file
that cannot be read.

Imports only pyspark and the standard library so that it ships with spark-submit.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StructType, TimestampType

from analysis.schema import SCHEMA_VERSION, SNAPSHOT_SCHEMA

#: Snapshots older than this (2001-01-01T00:00:00Z) come from a broken clock, not from RocketMQ.
EARLIEST_MS = 978_307_200_000
#: How far past the job's own clock a snapshot may lie (clocks of two machines disagree a little).
FUTURE_SLACK_MS = 86_400_000
#: The columns every snapshot row has (the schema's non-nullable ones).
REQUIRED = tuple(f.name for f in SNAPSHOT_SCHEMA.fields if not f.nullable)


class JobError(Exception):
    """A one-line error for the user; the job exits 2."""


@dataclass(frozen=True)
class SnapshotFile:
    """One snapshot file of a ``date=`` partition, with its schema version once Spark has read it."""

    path: Path
    date: dt.date
    schema_version: int | None = None
    """The highest ``schema_version`` in the file; None before :func:`check_files` (or for a file of no rows)."""
    rows: int | None = None
    """Its rows, as :func:`check_files` read them (None before, or for a file of no rows)."""
    first_ms: int | None = None
    """Its earliest ``ts`` (epoch milliseconds, rounded down), as :func:`check_files` read it."""
    last_ms: int | None = None
    """Its latest ``ts`` (epoch milliseconds, rounded down), as :func:`check_files` read it."""
    whole_ms: bool | None = None
    """Whether every ``ts`` in it is a whole millisecond, as :func:`check_files` read it."""


_DATE_DIR = re.compile(r"^date=(\d{4}-\d{2}-\d{2})$")
_CHECKED = StructType([f for f in SNAPSHOT_SCHEMA.fields if f.name in REQUIRED])


def _quiet(message: str) -> None:
    pass


def list_snapshot_files(root: Path, first_date: dt.date | None, last_date: dt.date | None,
                        warn: Callable[[str], None] = _quiet) -> list[SnapshotFile]:
    """The ``*.parquet`` files under the ``date=`` partitions between two dates (inclusive), by name.

    Other names (``.tmp`` files being written, hidden journals) are ignored and nothing is opened; a
    ``date=`` entry that is not a readable directory, or a file that cannot be read, is named through
    ``warn``.
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


def _local_path(uri: str) -> Path:
    return Path(unquote(urlparse(uri).path))


def _type_problem(spark: SparkSession, path: Path) -> str | None:
    """Why Spark cannot read ``path`` as a snapshot file, or None when it can (a file of no rows)."""
    try:
        schema = spark.read.parquet(str(path)).schema
    except Exception:  # an AnalysisException, or the JVM's error through py4j
        return "not a whole Parquet file (corrupt or truncated)"
    found = {f.name: f.dataType for f in schema.fields}
    missing = [name for name in REQUIRED if name not in found]
    if missing:
        return f"not a snapshot file (no column {', '.join(missing)})"
    wrong = [f"{f.name} is {found[f.name].simpleString()}, not {f.dataType.simpleString()}"
             for f in SNAPSHOT_SCHEMA.fields if f.name in found and not _compatible(found[f.name], f.dataType)]
    if wrong:
        return f"not a snapshot file ({'; '.join(wrong)})"
    return None


def _compatible(found: object, expected: object) -> bool:
    # Parquet integers narrower than the schema's widen on read; timestamps may lack the UTC flag
    if isinstance(expected, TimestampType):
        return type(found).__name__ in ("TimestampType", "TimestampNTZType")
    return found == expected or (type(found).__name__, type(expected).__name__) in {
        ("ByteType", "ShortType"), ("ShortType", "IntegerType"), ("IntegerType", "LongType")}


def _iso(ms: int) -> str:
    try:
        return dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (OverflowError, ValueError, OSError):
        return f"{ms} ms since 1970"


def check_files(spark: SparkSession, files: Sequence[SnapshotFile], warn: Callable[[str], None],
                now_ms: int | None = None) -> list[SnapshotFile]:
    """The usable files among ``files``, each with its schema version, read by Spark in one pass.

    Every file left out is named through ``warn`` with its reason (see the module's docstring); a file
    newer than the job raises :class:`JobError`.
    """
    if not files:
        return []
    latest_ms = (now_ms if now_ms is not None else int(time.time() * 1000)) + FUTURE_SLACK_MS
    not_null = F.lit(True)
    for name in REQUIRED:
        not_null = not_null & F.col(name).isNotNull()
    paths = [str(f.path) for f in files]
    stats = (
        spark.read.schema(_CHECKED).option("ignoreCorruptFiles", "true")
        .parquet(*paths)
        .groupBy(F.col("_metadata.file_path").alias("file"))
        .agg(F.max("schema_version").alias("version"),
             F.unix_millis(F.min("ts")).alias("first_ms"), F.unix_millis(F.max("ts")).alias("last_ms"),
             F.sum(F.when(not_null, 0).otherwise(1)).alias("incomplete"),
             F.count(F.lit(1)).cast(LongType()).alias("rows"),
             F.max(F.unix_micros("ts") % 1000 != 0).alias("sub_ms"))
        .collect()
    )
    by_path = {_local_path(row["file"]).resolve(): row for row in stats}
    footers = _footer_rows(spark, paths)
    usable: list[SnapshotFile] = []
    for snapshot in files:
        found = by_path.get(snapshot.path.resolve())
        counted = footers.get(snapshot.path.resolve())
        read = int(found["rows"]) if found is not None else 0
        if counted is not None and read < counted:
            # a whole header and footer, but pages that do not decode: Spark would drop the rest silently
            pages = f"corrupt pages: its footer counts {counted} rows, {read} could be read"
            warn(f"skipped {snapshot.path}: {_type_problem(spark, snapshot.path) or pages}")
            continue
        if found is None:  # no row read: corrupt, of another schema, or simply empty
            problem = _type_problem(spark, snapshot.path)
            if problem is not None:
                warn(f"skipped {snapshot.path}: {problem}")
                continue
            usable.append(SnapshotFile(snapshot.path, snapshot.date, None))
            continue
        if found["incomplete"]:
            problem = _type_problem(spark, snapshot.path) or (
                f"not a snapshot file ({found['incomplete']} rows without a value in {', '.join(REQUIRED)})")
            warn(f"skipped {snapshot.path}: {problem}")
            continue
        version = int(found["version"])
        if version > SCHEMA_VERSION:
            raise JobError(
                f"{snapshot.path} has snapshot schema version {version}; this job knows up to {SCHEMA_VERSION}"
                " (upgrade rmqctl)")
        first_ms, last_ms = int(found["first_ms"]), int(found["last_ms"])
        if first_ms < EARLIEST_MS or last_ms > latest_ms:
            bad = first_ms if first_ms < EARLIEST_MS else last_ms
            warn(f"skipped {snapshot.path}: rows dated {_iso(bad)}, outside {_iso(EARLIEST_MS)} .. "
                 f"{_iso(latest_ms)} (a wrong clock?)")
            continue
        usable.append(SnapshotFile(snapshot.path, snapshot.date, version, read, first_ms, last_ms,
                                   not found["sub_ms"]))
    return usable


def _footer_rows(spark: SparkSession, paths: Sequence[str]) -> dict[Path, int]:
    """Each readable file's row count as its footer states it (no page is decoded)."""
    counts = (
        spark.read.schema(StructType([])).option("ignoreCorruptFiles", "true").parquet(*paths)
        .groupBy(F.col("_metadata.file_path").alias("file")).count().collect()
    )
    return {_local_path(row["file"]).resolve(): int(row["count"]) for row in counts}


def read_snapshots(spark: SparkSession, files: Sequence[SnapshotFile]) -> DataFrame:
    """The given files with the explicit schema (no inference)."""
    return spark.read.schema(SNAPSHOT_SCHEMA).parquet(*[str(f.path) for f in files])
