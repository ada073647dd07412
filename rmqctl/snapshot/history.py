"""Reading recorded snapshots back: who held a queue, and what judged a message it consumed.

``rmqctl msg explain --snapshots DIR`` asks which client held a message's queue and which
expression the broker held when the message was consumed, which the live assignment cannot tell
after a rebalance or a change of the stored expression. The snapshots of that group and queue
(rows of a round whose broker could not be read are skipped) are its expression history
(:class:`~rmqctl.model.ExpressionHistory`); files of schema version 1, which record no
expression, still tell the owner: the last snapshot taken at or before the store time.

Must not import the CLI, textual or pyspark.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from rmqctl import errors
from rmqctl.model import (
    SQL92,
    ExpressionHistory,
    MessageQueue,
    Observation,
    QueueOwnership,
    Reign,
    Subscription,
    parse_tag_expression,
    sql92_subscription,
)
from rmqctl.snapshot.rows import QueueSnapshot
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


def _queue_rows(directory: str | Path, group: str, queue: MessageQueue) -> list[QueueSnapshot]:
    """Every readable row of ``queue`` for ``group`` (not the placeholders), oldest first."""
    filters = [("group", "=", group), ("topic", "=", queue.topic), ("broker", "=", queue.broker_name),
               ("queue_id", "=", queue.queue_id)]
    rows = []
    for path in snapshot_files(directory):
        try:
            table = pq.read_table(path, filters=filters)
        except (OSError, ValueError) as exc:
            raise errors.UsageError(f"cannot read snapshot file {path}: {exc}") from exc
        rows += [r for r in rows_of(table.drop_columns([c for c in table.column_names if c == "date"]))
                 if not r.missing]
    return sorted(rows, key=lambda r: r.ts_ms)


def _subscription(topic: str, expression: str | None, kind: str | None, version: int | None) -> Subscription | None:
    if expression is None:
        return None
    if kind == SQL92:
        return sql92_subscription(topic, expression, version or 0)
    return parse_tag_expression(topic, expression, version or 0)


def ownership_at(directory: str | Path, group: str, queue: MessageQueue, at_ms: int) -> QueueOwnership | None:
    """Who held ``queue`` for ``group`` in the last snapshot at or before ``at_ms``; None when no
    snapshot of that queue was taken by then."""
    best = None
    for row in _queue_rows(directory, group, queue):
        if row.ts_ms <= at_ms:
            best = row
    if best is None:
        return None
    return QueueOwnership(best.owner, best.owner_subscribed, "snapshots", best.ts_ms)


def judged_ownership(directory: str | Path, group: str, queue: MessageQueue, offset: int,
                     stored_at_ms: int) -> QueueOwnership | None:
    """What judged the message at ``offset`` of ``queue`` (stored at ``stored_at_ms``) for
    ``group``, by the expression history the snapshots record: the broker's stored expression,
    the owner and the owner's own expression of the first snapshot taken after the message was
    consumed, when the history places the message there (see
    :meth:`~rmqctl.model.ExpressionHistory.recorded_judge`). When no snapshot was taken after it
    was consumed, or the snapshots record no expression (schema version 1), the owner at the
    store time (:func:`ownership_at`); when they record a change they cannot place the message
    against, that owner with ``undetermined`` saying so."""
    rows = _queue_rows(directory, group, queue)
    by_time = {r.ts_ms: r for r in rows if r.consumer_offset is not None}
    observed = [Observation(r.ts_ms, r.consumer_offset, Reign(
        _subscription(queue.topic, r.expression, r.expression_type, r.expression_version), r.owner,
        _subscription(queue.topic, r.owner_expression, r.owner_expression_type, r.owner_expression_version)))
        for r in by_time.values() if r.consumer_offset is not None]
    history = ExpressionHistory.of_observations(queue, observed)
    consumed, judged = history.recorded_judge(queue, offset, stored_at_ms)
    recorded = any(o.reign.filt is not None for o in observed)
    if consumed and judged is not None and judged.reign.filt is not None:
        row = by_time[judged.at_ms]
        return QueueOwnership(row.owner, row.owner_subscribed, "snapshots", row.ts_ms,
                              stored=judged.reign.filt, owner_subscription=judged.reign.own)
    at_store = ownership_at(directory, group, queue, stored_at_ms)
    if consumed and judged is None and recorded:
        why = ("the snapshots show the broker's stored expression or the queue's owner changing before the "
               "message was consumed, and none of them dates which one judged it")
        base = at_store or QueueOwnership(None, None, "snapshots", None)
        return QueueOwnership(base.owner, base.subscribed, "snapshots", base.at_ms, undetermined=why)
    return at_store
