"""Reading recorded snapshots back: who held a queue at a given time.

``rmqctl msg explain --snapshots DIR`` asks which client held a message's queue when the message
was stored, which the live assignment cannot tell after a rebalance. The answer is the last
snapshot row of that group and queue taken at or before the time (rows of a round whose broker
could not be read are skipped).

Must not import the CLI, textual or pyspark.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from rmqctl import errors
from rmqctl.model import MessageQueue, QueueOwnership
from rmqctl.snapshot.schema import FILE_SUFFIX
from rmqctl.snapshot.writer import rows_of


def snapshot_files(directory: str | Path) -> list[Path]:
    """Every snapshot file under ``directory`` (its date partitions included); a directory without
    any is a usage error."""
    root = Path(directory)
    if not root.is_dir():
        raise errors.UsageError(f"--snapshots {directory}: not a directory")
    files = sorted(p for p in root.rglob(f"*{FILE_SUFFIX}") if not p.name.startswith("."))
    if not files:
        raise errors.UsageError(f"--snapshots {directory}: no snapshot files (*{FILE_SUFFIX}) found",
                                hint="record them with: rmqctl snapshot export --out DIR")
    return files


def ownership_at(directory: str | Path, group: str, queue: MessageQueue, at_ms: int) -> QueueOwnership | None:
    """Who held ``queue`` for ``group`` in the last snapshot at or before ``at_ms``; None when no
    snapshot of that queue was taken by then."""
    filters = [("group", "=", group), ("topic", "=", queue.topic), ("broker", "=", queue.broker_name),
               ("queue_id", "=", queue.queue_id)]
    best = None
    for path in snapshot_files(directory):
        try:
            table = pq.read_table(path, filters=filters)
        except (OSError, ValueError) as exc:
            raise errors.UsageError(f"cannot read snapshot file {path}: {exc}") from exc
        for row in rows_of(table.drop_columns([c for c in table.column_names if c == "date"])):
            if row.missing or row.ts_ms > at_ms:
                continue
            if best is None or row.ts_ms > best.ts_ms:
                best = row
    if best is None:
        return None
    return QueueOwnership(best.owner, best.owner_subscribed, "snapshots", best.ts_ms)
