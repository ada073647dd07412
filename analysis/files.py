"""The stuck-queue job's file handling: which snapshot files to read, whether they are whole, and their schema.

The window's ``date=YYYY-MM-DD`` partitions are picked from the directory listing alone; Spark then reads
every candidate's ``schema_version`` column (the exporter writes the version there and in the file's
metadata) in one pass that skips files which are not whole Parquet files. A file newer than
:data:`analysis.schema.SCHEMA_VERSION` is refused; a corrupt or truncated one is named and skipped.

Imports only pyspark and the standard library (never rmqctl) so that it ships with spark-submit.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import ShortType, StructField, StructType

from analysis.schema import SCHEMA_VERSION, SNAPSHOT_SCHEMA


class JobError(Exception):
    """A one-line error for the user; the job exits 2."""


@dataclass(frozen=True)
class SnapshotFile:
    """One snapshot file of a ``date=`` partition, with its schema version once Spark has read it."""

    path: Path
    date: dt.date
    schema_version: int | None = None
    """The highest ``schema_version`` in the file; None before :func:`check_files` (or for a file of no rows)."""


_DATE_DIR = re.compile(r"^date=(\d{4}-\d{2}-\d{2})$")
_VERSION_ONLY = StructType([StructField("schema_version", ShortType(), nullable=False)])


def list_snapshot_files(root: Path, first_date: dt.date | None, last_date: dt.date | None) -> list[SnapshotFile]:
    """The ``*.parquet`` files under the ``date=`` partitions between two dates (inclusive), by name.

    Other names (``.tmp`` files being written) are ignored; nothing is opened.
    """
    if not root.is_dir():
        raise JobError(f"{root} is not a directory")
    found: list[SnapshotFile] = []
    for part in sorted(root.iterdir()):
        match = _DATE_DIR.match(part.name)
        if not match or not part.is_dir():
            continue
        date = dt.date.fromisoformat(match.group(1))
        if (first_date and date < first_date) or (last_date and date > last_date):
            continue
        found.extend(SnapshotFile(path, date) for path in sorted(part.glob("*.parquet")))
    return found


def _local_path(uri: str) -> Path:
    return Path(unquote(urlparse(uri).path))


def _is_parquet(spark: SparkSession, path: Path) -> bool:
    """Whether Spark can read the file's footer (a file of no rows is whole, but gave no version)."""
    try:
        spark.read.parquet(str(path)).schema  # noqa: B018 - reading the schema opens the footer
    except Exception:  # an AnalysisException, or the JVM's error through py4j
        return False
    return True


def check_files(spark: SparkSession, files: Sequence[SnapshotFile], warn: Callable[[str], None]) -> list[SnapshotFile]:
    """The whole files among ``files``, each with its schema version, read by Spark in one pass.

    Files Spark cannot read (corrupt or truncated) are named through ``warn`` and left out; a file newer
    than the job raises :class:`JobError`.
    """
    if not files:
        return []
    versions = (
        spark.read.schema(_VERSION_ONLY).option("ignoreCorruptFiles", "true")
        .parquet(*[str(f.path) for f in files])
        .groupBy(F.col("_metadata.file_path").alias("file"))
        .agg(F.max("schema_version").alias("version"))
        .collect()
    )
    by_path = {_local_path(row["file"]).resolve(): int(row["version"]) for row in versions}
    whole: list[SnapshotFile] = []
    for snapshot in files:
        version = by_path.get(snapshot.path.resolve())
        if version is None and not _is_parquet(spark, snapshot.path):
            warn(f"skipped {snapshot.path}: not a whole Parquet file (corrupt or truncated)")
            continue
        if version is not None and version > SCHEMA_VERSION:
            raise JobError(
                f"{snapshot.path} has snapshot schema version {version}; this job knows up to {SCHEMA_VERSION}"
                " (upgrade rmqctl)")
        whole.append(SnapshotFile(snapshot.path, snapshot.date, version))
    return whole


def read_snapshots(spark: SparkSession, files: Sequence[SnapshotFile]) -> DataFrame:
    """The given files with the explicit schema (no inference)."""
    return spark.read.schema(SNAPSHOT_SCHEMA).parquet(*[str(f.path) for f in files])
