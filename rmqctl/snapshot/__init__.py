"""Offset snapshots: record every queue's offsets and owner over time into Parquet files.

:func:`~rmqctl.snapshot.export.export` is the entry point (``rmqctl snapshot export``); the file
contract (columns, types, partitioning, version) lives in :mod:`rmqctl.snapshot.schema`.
Importing this package loads pyarrow (the ``rmqctl[snapshot]`` extra); nothing else in the core
imports it. Must not import the CLI, textual or pyspark.
"""

from __future__ import annotations

from rmqctl.snapshot.export import ExportProgress, ExportResult, SnapshotSink, export, planned_rounds
from rmqctl.snapshot.rows import QueueSnapshot, failed_group_rows, group_rows, owners
from rmqctl.snapshot.schema import COLUMNS, SCHEMA, SCHEMA_VERSION, VERSION_KEY, partition_of
from rmqctl.snapshot.writer import RollingWriter, table_of

__all__ = [
    "COLUMNS", "SCHEMA", "SCHEMA_VERSION", "VERSION_KEY", "ExportProgress", "ExportResult",
    "QueueSnapshot", "RollingWriter", "SnapshotSink", "export", "failed_group_rows", "group_rows", "owners",
    "partition_of", "planned_rounds", "table_of",
]
