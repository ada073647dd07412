"""Offset snapshots: one row per (group, queue) per sample, written as Parquet for history jobs.

:mod:`rmqctl.snapshot.schema` is the explicit column contract that ``analysis/stuck_queues.py``
mirrors as a Spark ``StructType``; :mod:`rmqctl.snapshot.export` turns group views into rows and
writes one Parquet file per sample atomically. pyarrow is imported lazily by the writer only, so
importing this package stays light. Must not import textual, pyspark or the CLI.
"""

from __future__ import annotations

from rmqctl.snapshot.export import (
    ExportResult,
    export_snapshots,
    prepare_out_dir,
    snapshot_path,
    snapshot_rows,
    write_snapshot,
)
from rmqctl.snapshot.schema import SNAPSHOT_COLUMNS, SNAPSHOT_FIELD_NAMES, Column

__all__ = [
    "SNAPSHOT_COLUMNS",
    "SNAPSHOT_FIELD_NAMES",
    "Column",
    "ExportResult",
    "export_snapshots",
    "prepare_out_dir",
    "snapshot_path",
    "snapshot_rows",
    "write_snapshot",
]
