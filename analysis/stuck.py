"""Stuck-queue diagnosis over consumer-offset snapshots: a PySpark job.

Reads the snapshot files described in ``docs/snapshots.md`` (explicit schema, pruned columns, the
time window pushed down to the ``date=`` partitions and the Parquet row groups) and gives every
(group, topic, broker, queue) one verdict over the window, with the rule that fired and its
numbers, plus a summary per group:

``OK``                consumer moving, or caught up
``IDLE``              no new messages in the window and nothing left to consume: never stuck
``LAGGING``           consumer moving but never caught up and lag grew; or its committed offset is held
                      by one in-flight message while pulls continue (heals within consumeTimeout)
``STALLED``           owner present, committed offset frozen while there was something to consume
                      (the broker offset advanced, or a backlog stayed untouched)
``ORPHANED``          same, but nobody owns the queue or the owner does not subscribe the topic
``REWOUND``           the committed offset went back and has not caught up again
``INSUFFICIENT_DATA`` fewer snapshots than ``--min-snapshots`` (in the window, or since the owner changed)
``DLQ``               a ``%DLQ%`` queue: reported with its numbers, not judged

Rows of broadcasting groups are dropped (their broker-side offsets mean nothing); rows a broker
failed to answer (``error`` set) are gaps, counted as missing, never read as zeros. The window is
split where the owner changed and the part under the current owner is judged.

Only ``main()`` builds the session, reads and writes; everything else is a pure
``DataFrame -> DataFrame`` transform of built-in functions (no Python UDFs) composed with
``df.transform``. Runs as ``python -m analysis.stuck`` or ``spark-submit analysis/stuck.py``.

Imports only pyspark and the standard library (never rmqctl) so that it ships with spark-submit.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import io
import json
import os
import re
import struct
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file by spark-submit: make the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pyspark.sql import Column, DataFrame, SparkSession, Window  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

from analysis.schema import QUEUE_KEY, SCHEMA_VERSION, SCHEMA_VERSION_KEY, SNAPSHOT_SCHEMA  # noqa: E402

Transform = Callable[[DataFrame], DataFrame]

STATUS_RANK = {
    "OK": 0, "DLQ": 0, "IDLE": 1, "INSUFFICIENT_DATA": 2, "LAGGING": 3,
    "REWOUND": 4, "ORPHANED": 5, "STALLED": 6,
}
"""Severity of each status; a group's status is its worst queue's."""

STUCK_STATUSES = ("STALLED", "ORPHANED")
"""Statuses that make the command exit 1."""

COLUMNS_READ = ("ts", *QUEUE_KEY, "broker_offset", "consumer_offset", "pull_offset", "last_consumed_ts",
                "broker_last_ts", "owner", "owner_subscribed", "message_model", "error")
"""The only snapshot columns the job reads (Parquet column pruning)."""


@dataclass(frozen=True)
class Thresholds:
    """The knobs of the rules; the defaults are the command's defaults."""

    min_snapshots: int = 3
    """Fewer snapshots than this (in the window, or since the owner changed) gives INSUFFICIENT_DATA."""
    allowed_lag: int = 0
    """Lag at or below this counts as caught up (Burrow's ``allowed-lag``)."""
    retry_allowed_lag: int = 10
    """The same for ``%RETRY%`` queues: a few redelivered messages waiting is normal there."""
    retry_min_stall_ms: int = 5 * 60_000
    """A ``%RETRY%`` queue is STALLED only once frozen this long (redelivery is paced by delay levels)."""
    consume_timeout_ms: int = 15 * 60_000
    """The client's ``consumeTimeout``: a message pinning the committed offset is sent back after this."""


# --------------------------------------------------------------------------------------------
# transforms


def select_window(since_ms: int, until_ms: int) -> Transform:
    """Keep the read columns and the snapshots with ``since <= ts <= until`` (pushed down to Parquet)."""
    since = F.timestamp_millis(F.lit(since_ms))
    until = F.timestamp_millis(F.lit(until_ms))

    def apply(df: DataFrame) -> DataFrame:
        return df.select(*COLUMNS_READ).where((F.col("ts") >= since) & (F.col("ts") <= until))

    return apply


def drop_broadcasting(df: DataFrame) -> DataFrame:
    """Broadcasting groups keep offsets on the clients; the broker's numbers say nothing about them."""
    return df.where(F.coalesce(F.col("message_model"), F.lit("")) != "BROADCASTING")


def _is_retry(topic: Column) -> Column:
    return topic.startswith("%RETRY%")


def _allowed_lag(th: Thresholds) -> Column:
    return F.when(_is_retry(F.col("topic")), F.lit(th.retry_allowed_lag)).otherwise(F.lit(th.allowed_lag))


def mark_progress(th: Thresholds) -> Transform:
    """Per answered snapshot, in time order per queue: its lag, position and what starts there.

    Adds ``lag``, ``rn`` (position in the window), ``prev_owner``, ``owner_changed``, ``seg_boundary``
    (first snapshot under a new owner), ``run_boundary`` (first snapshot of a frozen run: the consumer
    offset moved, the owner changed, or the previous snapshot was caught up — the consumer had nothing to
    do until then), ``caught_up`` and ``rewind`` (ts, offset before, offset after) where the consumer
    offset went back. Only offset window functions (row_number, lag): one sort per queue, no running frames.
    Rows a broker failed to answer are removed first: a gap, not a zero.
    """

    def apply(df: DataFrame) -> DataFrame:
        by_time = Window.partitionBy(*QUEUE_KEY).orderBy("ts")
        answered = df.where(
            F.col("error").isNull() & F.col("broker_offset").isNotNull() & F.col("consumer_offset").isNotNull()
        ).drop("error").withColumn(
            "lag", F.greatest(F.col("broker_offset") - F.col("consumer_offset"), F.lit(0))
        )
        step = answered.select(
            "*",
            F.row_number().over(by_time).alias("rn"),
            F.lag("owner").over(by_time).alias("prev_owner"),
            F.lag("consumer_offset").over(by_time).alias("prev_co"),
            F.lag("lag").over(by_time).alias("prev_lag"),
        )
        owner_changed = (F.col("rn") > 1) & ~F.col("owner").eqNullSafe(F.col("prev_owner"))
        seg_boundary = (F.col("rn") == 1) | owner_changed
        run_boundary = seg_boundary | (F.col("consumer_offset") != F.col("prev_co")) | (
            F.col("prev_lag") <= _allowed_lag(th))
        rewind = F.struct(F.col("ts"), F.col("prev_co").alias("before"), F.col("consumer_offset").alias("after"))
        return step.select(
            "*",
            owner_changed.alias("owner_changed"),
            seg_boundary.alias("seg_boundary"),
            run_boundary.alias("run_boundary"),
            (F.col("lag") <= _allowed_lag(th)).alias("caught_up"),
            F.when(F.col("consumer_offset") < F.col("prev_co"), rewind).alias("rewind"),
        )

    return apply


def summarize_queues(df: DataFrame) -> DataFrame:
    """One row per queue: first and last snapshot, the start of the last owner segment and of the last frozen
    run (the latest boundary rows), the last caught-up position, the highest consumer offset, the last rewind."""
    first = F.struct(
        F.col("ts"), F.col("broker_offset").alias("bo"), F.col("consumer_offset").alias("co"), F.col("lag"),
    )
    last = F.struct(
        F.col("ts"), F.col("broker_offset").alias("bo"), F.col("consumer_offset").alias("co"),
        F.col("pull_offset").alias("pull"), F.col("lag"), F.col("rn"), F.col("owner"),
        F.col("owner_subscribed").alias("subscribed"), F.col("last_consumed_ts"), F.col("broker_last_ts"),
    )
    seg_start = F.struct(
        F.col("ts"), F.col("broker_offset").alias("bo"), F.col("consumer_offset").alias("co"),
        F.col("lag"), F.col("rn"), F.col("prev_owner"), F.col("owner_changed").alias("changed"),
    )
    run_start = F.struct(
        F.col("ts"), F.col("broker_offset").alias("bo"), F.col("consumer_offset").alias("co"),
        F.col("pull_offset").alias("pull"), F.col("lag"), F.col("rn"),
    )
    return df.groupBy(*QUEUE_KEY).agg(
        F.count(F.lit(1)).alias("n_window"),
        F.min_by(first, F.col("ts")).alias("first"),
        F.max_by(last, F.col("ts")).alias("last"),
        # max_by skips rows whose ordering is null: the latest boundary row wins
        F.max_by(seg_start, F.when(F.col("seg_boundary"), F.col("ts"))).alias("seg_start"),
        F.max_by(run_start, F.when(F.col("run_boundary"), F.col("ts"))).alias("run_start"),
        F.max(F.when(F.col("caught_up"), F.col("rn"))).alias("caught_up_rn"),
        F.max("consumer_offset").alias("co_max"),
        F.max("rewind").alias("rewind"),
    )


def count_missing(df: DataFrame) -> DataFrame:
    """Per queue, the snapshots in the window its broker failed to answer (Parquet skips the clean row groups)."""
    return (
        df.where(F.col("error").isNotNull())
        .groupBy(*QUEUE_KEY)
        .agg(F.count(F.lit(1)).alias("n_missing"), F.max_by("error", "ts").alias("last_error"))
    )


def _duration(ms: Column) -> Column:
    secs = F.floor(ms / 1000).cast("long")
    return (
        F.when(ms.isNull(), F.lit("unknown"))
        .when(secs < 60, F.format_string("%ds", secs))
        .when(secs < 3600, F.format_string("%dm%02ds", F.floor(secs / 60).cast("long"), secs % 60))
        .otherwise(F.format_string("%dh%02dm", F.floor(secs / 3600).cast("long"),
                                   F.floor((secs % 3600) / 60).cast("long")))
    )


def _clock(ts: Column) -> Column:
    return F.date_format(ts, "HH:mm:ss")


RULE_STATUS = {
    "dlq": "DLQ", "min-snapshots": "INSUFFICIENT_DATA", "rewind": "REWOUND", "no-new-messages": "IDLE",
    "caught-up": "OK", "owner-changed": "INSUFFICIENT_DATA", "no-owner": "ORPHANED",
    "owner-not-subscribed": "ORPHANED", "offset-pinned": "LAGGING", "retry-threshold": "LAGGING",
    "frozen": "STALLED", "lag-growing": "LAGGING", "moving": "OK",
}
"""The status each rule gives; the rules are tried in this order and the first that holds fires."""

_ON_RUN = ("no-owner", "owner-not-subscribed", "offset-pinned", "retry-threshold", "frozen")
_ON_SEGMENT = ("owner-changed", "lag-growing", "moving")


def judge(th: Thresholds) -> Transform:
    """Turn per-queue summaries into verdicts: status, rule, reason and the numbers behind them.

    Three steps, so that no expression is repeated inside another: the facts every rule looks at, the
    first rule that holds, then its status (from :data:`RULE_STATUS`) and its explanation.
    """

    def apply(df: DataFrame) -> DataFrame:
        last, first = F.col("last"), F.col("first")
        seg, run = F.col("seg_start"), F.col("run_start")
        facts = df.select(
            *QUEUE_KEY, "first", "last", "seg_start", "run_start", "caught_up_rn", "co_max", "rewind", "last_error",
            F.coalesce(F.col("n_window"), F.lit(0)).cast("int").alias("n_window"),
            F.coalesce(F.col("n_missing"), F.lit(0)).cast("int").alias("n_missing"),
            (last["rn"] - seg["rn"] + 1).alias("seg_n"),
            (last["rn"] - run["rn"] + 1).alias("frozen_n"),
            (F.unix_millis(last["ts"]) - F.unix_millis(run["ts"])).alias("frozen_ms"),
            F.when(last["lag"] == 0, F.lit(0)).otherwise(
                F.unix_millis(last["broker_last_ts"]) - F.unix_millis(last["last_consumed_ts"])
            ).alias("behind_ms"),
            _allowed_lag(th).alias("allowed"),
        )
        c = F.col
        stuck_shape = c("frozen_n") >= th.min_snapshots
        pulled_while_frozen = F.coalesce(last["pull"] > run["pull"], F.lit(False))
        rules: list[tuple[str, Column]] = [
            ("min-snapshots", c("last").isNull()),  # the broker failed every round of the window
            ("dlq", c("topic").startswith("%DLQ%")),
            ("min-snapshots", c("n_window") < th.min_snapshots),
            ("rewind", c("co_max") > last["co"]),
            ("no-new-messages", (last["bo"] == first["bo"]) & (last["lag"] <= c("allowed"))),
            ("caught-up", last["lag"] <= c("allowed")),
            ("owner-changed", c("seg_n") < th.min_snapshots),
            ("no-owner", stuck_shape & last["owner"].isNull()),
            ("owner-not-subscribed", stuck_shape & (last["subscribed"] == F.lit(False))),
            ("offset-pinned", stuck_shape & pulled_while_frozen & (c("frozen_ms") <= th.consume_timeout_ms)),
            ("retry-threshold", stuck_shape & _is_retry(c("topic")) & (c("frozen_ms") < th.retry_min_stall_ms)),
            ("frozen", stuck_shape),
            ("lag-growing", (c("caught_up_rn").isNull() | (c("caught_up_rn") < seg["rn"]))
             & (last["lag"] > seg["lag"])),
        ]
        rule: Any = F
        for rule_id, condition in rules:
            rule = rule.when(condition, F.lit(rule_id))
        ruled = facts.withColumn("rule", rule.otherwise(F.lit("moving")))

        behind = _duration(c("behind_ms"))
        work = F.when(
            last["bo"] > run["bo"], F.format_string("while broker offset rose %d -> %d", run["bo"], last["bo"])
        ).otherwise(F.format_string("with a backlog of %d and no new messages", run["lag"]))
        owner_text = F.coalesce(last["owner"], F.lit("nobody"))
        owner_moved = F.when(
            seg["changed"], F.format_string(" (moved there at %s)", _clock(seg["ts"]))
        ).otherwise(F.lit(""))
        reasons: dict[str, Column] = {
            "dlq": F.format_string(
                "dead-letter queue, reported not judged: %d message(s) not consumed, broker offset %d -> %d",
                last["lag"], first["bo"], last["bo"]),
            "rewind": F.format_string(
                "consumer offset went back from %d to %d at %s and has not caught up (now %d, was %d)",
                c("rewind.before"), c("rewind.after"), _clock(c("rewind.ts")), last["co"], c("co_max")),
            "no-new-messages": F.format_string(
                "no new messages: broker offset stayed at %d over %d snapshots; lag %d",
                last["bo"], c("n_window"), last["lag"]),
            "caught-up": F.format_string(
                "caught up: lag %d <= %d at the last snapshot; consumer offset %d -> %d",
                last["lag"], c("allowed"), first["co"], last["co"]),
            "owner-changed": F.format_string(
                "owner changed to %s at %s; only %d snapshot(s) since, %d needed",
                owner_text, _clock(seg["ts"]), c("seg_n"), F.lit(th.min_snapshots)),
            "no-owner": F.format_string(
                "no owner: consumer offset frozen at %d since %s (%d snapshots) %s; lag %d -> %d, %s behind",
                last["co"], _clock(run["ts"]), c("frozen_n"), work, run["lag"], last["lag"], behind),
            "owner-not-subscribed": F.format_string(
                "owner %s does not subscribe %s: consumer offset frozen at %d since %s (%d snapshots) %s; "
                "lag %d -> %d, %s behind",
                owner_text, c("topic"), last["co"], _clock(run["ts"]), c("frozen_n"), work, run["lag"],
                last["lag"], behind),
            "offset-pinned": F.format_string(
                "committed offset held at %d since %s by an in-flight message while pulls go on "
                "(pull offset %d -> %d); lag %d; heals within consumeTimeout %s",
                last["co"], _clock(run["ts"]), run["pull"], last["pull"], last["lag"],
                _duration(F.lit(th.consume_timeout_ms))),
            "retry-threshold": F.format_string(
                "retry queue frozen at %d for %s (under the %s retry threshold); lag %d",
                last["co"], _duration(c("frozen_ms")), _duration(F.lit(th.retry_min_stall_ms)), last["lag"]),
            "frozen": F.format_string(
                "consumer offset frozen at %d since %s (%d snapshots, %s) %s under owner %s%s; "
                "lag %d -> %d, %s behind",
                last["co"], _clock(run["ts"]), c("frozen_n"), _duration(c("frozen_ms")), work, owner_text,
                owner_moved, run["lag"], last["lag"], behind),
            "lag-growing": F.format_string(
                "consumer moving (%d -> %d) but lag grew %d -> %d and never got within %d; %s behind",
                seg["co"], last["co"], seg["lag"], last["lag"], c("allowed"), behind),
            "moving": F.format_string(
                "consumer moving: offset %d -> %d, lag %d -> %d", seg["co"], last["co"], seg["lag"], last["lag"]),
        }
        min_snapshots_reason = F.when(c("last").isNull(), F.format_string(
            "no answered snapshot in the window: %d missing (last error: %s)", c("n_missing"), c("last_error"),
        )).otherwise(F.format_string(
            "only %d snapshot(s) in the window (%d missing), %d needed",
            c("n_window"), c("n_missing"), F.lit(th.min_snapshots)))
        reason: Any = F.when(c("rule") == "min-snapshots", min_snapshots_reason)
        for rule_id, text in reasons.items():
            reason = reason.when(c("rule") == rule_id, text)
        status = F.create_map(*[F.lit(x) for pair in RULE_STATUS.items() for x in pair])[c("rule")]

        # the span a verdict speaks about: the frozen run for the stuck rules, the part under the current
        # owner for the moving ones, the whole window for the others
        on_run = c("rule").isin(*_ON_RUN)
        on_segment = c("rule").isin(*_ON_SEGMENT)

        def start(field: str) -> Column:
            return F.when(on_run, run[field]).when(on_segment, seg[field]).otherwise(first[field])

        return ruled.select(
            *QUEUE_KEY,
            status.alias("status"),
            "rule",
            reason.alias("reason"),
            start("ts").alias("window_start"),
            last["ts"].alias("window_end"),
            F.when(on_run, c("frozen_n")).when(on_segment, c("seg_n")).otherwise(c("n_window")).cast("int")
            .alias("snapshots"),
            c("n_window").alias("window_snapshots"),
            c("n_missing").alias("missing_snapshots"),
            last["owner"].alias("owner"),
            F.when(seg["changed"], seg["ts"]).alias("owner_since"),
            F.when(seg["changed"], seg["prev_owner"]).alias("previous_owner"),
            start("bo").alias("broker_offset_start"),
            last["bo"].alias("broker_offset_end"),
            start("co").alias("consumer_offset_start"),
            last["co"].alias("consumer_offset_end"),
            start("lag").alias("lag_start"),
            last["lag"].alias("lag_end"),
            c("behind_ms").alias("lag_time_ms"),
            first["lag"].alias("window_lag_start"),
            run["ts"].alias("frozen_since"),
        )

    return apply


def diagnose(snapshots: DataFrame, since_ms: int, until_ms: int, th: Thresholds | None = None) -> DataFrame:
    """Snapshot rows in, one verdict per queue out (see the module docstring for the statuses)."""
    th = th or Thresholds()
    window = snapshots.transform(select_window(since_ms, until_ms)).transform(drop_broadcasting)
    summaries = window.transform(mark_progress(th)).transform(summarize_queues)
    missing = count_missing(window)
    return summaries.join(missing, list(QUEUE_KEY), "full_outer").transform(judge(th))


def summarize_groups(verdicts: DataFrame) -> DataFrame:
    """Per group: worst status, stuck queue count, total lag at the start and end of the window and its trend.

    ``%DLQ%`` queues are left out of the lag totals (they are not judged).
    """
    rank = F.create_map(*[x for name, r in STATUS_RANK.items() for x in (F.lit(name), F.lit(r))])
    judged = ~F.col("topic").startswith("%DLQ%")
    summary = verdicts.groupBy("cluster", "group").agg(
        F.max(F.struct(rank[F.col("status")], F.col("status"))).alias("worst"),
        F.count(F.lit(1)).cast("int").alias("queues"),
        F.count_if(F.col("status").isin(*STUCK_STATUSES)).cast("int").alias("stuck_queues"),
        F.coalesce(F.sum(F.when(judged, F.col("window_lag_start"))), F.lit(0)).cast("long").alias("total_lag_start"),
        F.coalesce(F.sum(F.when(judged, F.col("lag_end"))), F.lit(0)).cast("long").alias("total_lag_end"),
        F.min("window_start").alias("window_start"),
        F.max("window_end").alias("window_end"),
    )
    trend = (
        F.when(F.col("total_lag_end") > F.col("total_lag_start"), F.lit("growing"))
        .when(F.col("total_lag_end") < F.col("total_lag_start"), F.lit("shrinking"))
        .otherwise(F.lit("flat"))
    )
    return summary.select(
        "cluster", "group", F.col("worst.status").alias("status"), "queues", "stuck_queues",
        "total_lag_start", "total_lag_end", trend.alias("lag_trend"), "window_start", "window_end",
    )


def for_output(df: DataFrame) -> DataFrame:
    """Timestamps as ISO-8601 UTC strings, each also as epoch milliseconds in a ``*_ts`` column."""
    columns: list[Column] = []
    for field in df.schema.fields:
        if field.dataType.typeName() == "timestamp":
            columns.append(F.date_format(F.col(field.name), "yyyy-MM-dd'T'HH:mm:ss.SSS'Z'").alias(field.name))
            columns.append(F.unix_millis(F.col(field.name)).alias(field.name + "_ts"))
        else:
            columns.append(F.col(field.name))
    return df.select(*columns)


# --------------------------------------------------------------------------------------------
# files: listing, validation, the window's partitions (standard library only)


class JobError(Exception):
    """A one-line error for the user; the job exits 2."""


@dataclass(frozen=True)
class SnapshotFile:
    path: Path
    date: dt.date
    schema_version: int | None


def _parquet_footer(path: Path) -> bytes | None:
    """The footer of a Parquet file, or None when the file is not a whole Parquet file."""
    try:
        size = path.stat().st_size
        if size < 12:
            return None
        with path.open("rb") as fh:
            if fh.read(4) != b"PAR1":
                return None
            fh.seek(size - 8)
            tail = fh.read(8)
            if tail[4:] != b"PAR1":
                return None
            (length,) = struct.unpack("<I", tail[:4])
            if length <= 0 or length > size - 12:
                return None
            fh.seek(size - 8 - length)
            return fh.read(length)
    except OSError:
        return None


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while pos < len(data):
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
    raise ValueError("truncated varint")


def _schema_version(footer: bytes) -> int | None:
    """The ``rmqctl.schema_version`` value from the footer's key-value metadata (Thrift compact encoding).

    A KeyValue is field 1 (binary key) then field 2 (binary value): after the key's bytes comes the
    field header 0x18 and the value's varint length.
    """
    key = SCHEMA_VERSION_KEY.encode()
    at = footer.find(key)
    if at < 0:
        return None
    pos = at + len(key)
    if pos >= len(footer) or footer[pos] != 0x18:
        return None
    try:
        length, pos = _varint(footer, pos + 1)
        return int(footer[pos:pos + length].decode("ascii"))
    except (ValueError, UnicodeDecodeError):
        return None


_DATE_DIR = re.compile(r"^date=(\d{4}-\d{2}-\d{2})$")


def list_snapshot_files(
    root: Path, first_date: dt.date | None, last_date: dt.date | None, warn: Callable[[str], None],
) -> list[SnapshotFile]:
    """Whole ``*.parquet`` files under the ``date=`` partitions between two dates (inclusive).

    Other names (``.tmp`` files being written) are ignored; corrupt or truncated files are named
    through ``warn`` and skipped.
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
        for path in sorted(part.glob("*.parquet")):
            footer = _parquet_footer(path)
            if footer is None:
                warn(f"skipped {path}: not a whole Parquet file (corrupt or truncated)")
                continue
            version = _schema_version(footer)
            if version is not None and version > SCHEMA_VERSION:
                raise JobError(
                    f"{path} has snapshot schema version {version}; this job knows up to {SCHEMA_VERSION}"
                    " (upgrade rmqctl)")
            found.append(SnapshotFile(path, date, version))
    return found


# --------------------------------------------------------------------------------------------
# command line


_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h|d)$")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_duration_ms(text: str) -> int:
    """``90s``, ``10m``, ``1.5h``, ``2d`` in milliseconds."""
    match = _DURATION.match(text.strip())
    if not match or float(match.group(1)) <= 0:
        raise JobError(f"bad duration {text!r}: use e.g. 30s, 10m, 2h, 1d")
    return int(float(match.group(1)) * _UNIT_MS[match.group(2)])


def parse_time_ms(text: str) -> int:
    """An ISO-8601 time (UTC unless it says otherwise) or epoch milliseconds."""
    value = text.strip()
    if value.isdigit():
        return int(value)
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise JobError(f"bad time {text!r}: use ISO-8601 (2026-01-31T12:00:00Z) or epoch milliseconds") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.timezone.utc)
    return int(parsed.timestamp() * 1000)


def _utc_date(ms: int) -> dt.date:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc).date()


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:
        sys.stderr.write(f"rmqctl: error: {message}\n")
        raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="analysis.stuck", description="Diagnose stuck queues from consumer-offset snapshots.")
    p.add_argument("directory", help="snapshot directory (date=YYYY-MM-DD/*.parquet)")
    p.add_argument("--window", default="10m", help="length of the window ending at --until (default 10m)")
    p.add_argument("--since", help="window start: ISO-8601 or epoch ms (default: --until minus --window)")
    p.add_argument("--until", help="window end: ISO-8601 or epoch ms (default: the newest snapshot)")
    p.add_argument("--min-snapshots", type=int, default=Thresholds.min_snapshots)
    p.add_argument("--allowed-lag", type=int, default=Thresholds.allowed_lag)
    p.add_argument("--retry-allowed-lag", type=int, default=Thresholds.retry_allowed_lag)
    p.add_argument("--master", default="local[*]", help="local[*] or spark://HOST:PORT")
    p.add_argument("--driver-memory", default="512m")
    p.add_argument("--executor-memory", default="512m")
    p.add_argument("--shuffle-partitions", type=int, default=8)
    p.add_argument("-o", "--output", default="table", choices=["table", "json", "jsonl", "csv", "parquet"])
    p.add_argument("--out", help="write here instead of stdout (a directory for parquet)")
    return p


_LOG4J = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = spark: %p %c{1}: %m%n
logger.repl.name = org.apache.spark.repl.Main
logger.repl.level = error
"""


def build_session(master: str, driver_memory: str, executor_memory: str, shuffle_partitions: int) -> SparkSession:
    """A session with small, quiet defaults; the JVM log goes to stderr at ERROR only."""
    log4j = Path(tempfile.gettempdir()) / f"rmqctl-spark-log4j2-{os.getuid()}.properties"
    if not log4j.exists() or log4j.read_text(encoding="utf-8") != _LOG4J:
        log4j.write_text(_LOG4J, encoding="utf-8")
    java_opts = f"-Dlog4j2.configurationFile={log4j}"
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if master.startswith("local") or "://127.0.0.1:" in master or "://localhost:" in master:
        # everything on this machine: keep the driver on loopback instead of the first interface
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    return (
        SparkSession.builder.master(master)
        .appName("rmqctl-analyze-stuck")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", driver_memory)
        .config("spark.executor.memory", executor_memory)
        .config("spark.driver.extraJavaOptions", java_opts)
        .config("spark.executor.extraJavaOptions", java_opts)
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.sql.files.ignoreCorruptFiles", "true")
        .getOrCreate()
    )


def read_snapshots(spark: SparkSession, files: Sequence[SnapshotFile]) -> DataFrame:
    """The given files with the explicit schema (no inference)."""
    return spark.read.schema(SNAPSHOT_SCHEMA).parquet(*[str(f.path) for f in files])


def _rows(df: DataFrame) -> list[dict[str, Any]]:
    return [row.asDict() for row in df.collect()]


def _write_text(out: str | None, text: str) -> None:
    if out:
        Path(out).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
        sys.stdout.flush()


def _table(rows: list[dict[str, Any]], columns: Sequence[str]) -> str:
    cells = [[("-" if r.get(c) is None else str(r.get(c))) for c in columns] for r in rows]
    widths = [max([len(c)] + [len(line[i]) for line in cells]) for i, c in enumerate(columns)]
    lines = ["  ".join(c.upper().ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip()]
    lines += ["  ".join(v.ljust(w) for v, w in zip(line, widths, strict=True)).rstrip() for line in cells]
    return "\n".join(lines) + "\n"


TABLE_COLUMNS = ("group", "topic", "broker", "queue_id", "status", "owner", "lag_end", "reason")


def render(document: dict[str, Any], fmt: str) -> str:
    """The job's own text output (the rmqctl command renders the json document itself)."""
    queues = document["queues"]
    if fmt == "json":
        return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    if fmt == "jsonl":
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in queues)
    if fmt == "csv":
        buf = io.StringIO()
        keys = list(queues[0]) if queues else []
        writer = csv.DictWriter(buf, fieldnames=keys, lineterminator="\n")
        writer.writeheader()
        writer.writerows(queues)
        return buf.getvalue()
    return (_table(queues, TABLE_COLUMNS) + "\n"
            + _table(document["groups"], ("group", "status", "queues", "stuck_queues", "total_lag_start",
                                          "total_lag_end", "lag_trend")))


@dataclass(frozen=True)
class Plan:
    """What to read and how to judge it, settled before any Spark session exists."""

    root: Path
    files: tuple[SnapshotFile, ...]
    since_ms: int | None
    until_ms: int | None
    window_ms: int
    thresholds: Thresholds
    output: str
    out: str | None


def plan(args: argparse.Namespace, warn: Callable[[str], None]) -> Plan:
    """Check the options and pick the whole snapshot files of the window's date partitions."""
    th = Thresholds(min_snapshots=max(1, args.min_snapshots), allowed_lag=args.allowed_lag,
                    retry_allowed_lag=args.retry_allowed_lag)
    window_ms = parse_duration_ms(args.window)
    until_ms = parse_time_ms(args.until) if args.until else None
    since_ms = parse_time_ms(args.since) if args.since else None
    if since_ms is not None and until_ms is not None and since_ms > until_ms:
        raise JobError("--since is after --until")
    if args.output == "parquet" and not args.out:
        raise JobError("-o parquet needs --out DIR")
    root = Path(args.directory)
    first_date = _utc_date(since_ms) if since_ms is not None else (
        _utc_date(until_ms - window_ms) if until_ms is not None else None)
    files = list_snapshot_files(root, first_date, _utc_date(until_ms) if until_ms is not None else None, warn)
    if since_ms is None and until_ms is None and files:
        # the default window ends at the newest snapshot: only the newest days can hold it
        newest = max(f.date for f in files)
        files = [f for f in files if f.date >= newest - dt.timedelta(days=1 + window_ms // 86_400_000)]
    if not files:
        raise JobError(f"no snapshot files under {root} for the requested window")
    return Plan(root, tuple(files), since_ms, until_ms, window_ms, th, args.output, args.out)


def run(spark: SparkSession, job: Plan) -> int:
    """Read, judge and write; 1 when a queue is STALLED or ORPHANED, else 0."""
    until_ms = job.until_ms
    if until_ms is None:
        newest = max(f.date for f in job.files)
        latest = read_snapshots(spark, [f for f in job.files if f.date == newest]).select(
            F.unix_millis(F.max("ts"))).first()
        if latest is None or latest[0] is None:
            raise JobError(f"no snapshots under {job.root}")
        until_ms = int(latest[0])
    since_ms = job.since_ms if job.since_ms is not None else until_ms - job.window_ms
    verdicts = diagnose(read_snapshots(spark, job.files), since_ms, until_ms, job.thresholds).cache()
    try:
        groups = summarize_groups(verdicts)
        document: dict[str, Any] | None = None
        if job.output == "parquet":
            assert job.out is not None
            for_output(verdicts).write.mode("overwrite").parquet(str(Path(job.out) / "queues"))
            for_output(groups).write.mode("overwrite").parquet(str(Path(job.out) / "groups"))
            statuses = {r[0] for r in verdicts.select("status").distinct().collect()}
        else:
            queues = _rows(for_output(verdicts).orderBy(*QUEUE_KEY))
            document = {
                "since": _iso(since_ms), "until": _iso(until_ms), "since_ts": since_ms, "until_ts": until_ms,
                "queues": queues, "groups": _rows(for_output(groups).orderBy("cluster", "group")),
            }
            statuses = {q["status"] for q in queues}
    finally:
        verdicts.unpersist()
    if not statuses:
        raise JobError(f"no snapshots under {job.root} between {_iso(since_ms)} and {_iso(until_ms)}")
    if document is not None:
        _write_text(job.out, render(document, job.output))
    return 1 if statuses & set(STUCK_STATUSES) else 0


def warn(message: str) -> None:
    """A one-line warning on stderr (the rmqctl command forwards these)."""
    sys.stderr.write(f"rmqctl: warning: {message}\n")
    sys.stderr.flush()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the job; exit 0 (nothing stuck), 1 (a queue is STALLED or ORPHANED) or 2 (bad input, no snapshots)."""
    args = build_parser().parse_args(argv)
    try:
        job = plan(args, warn)
        spark = build_session(args.master, args.driver_memory, args.executor_memory, args.shuffle_partitions)
        try:
            return run(spark, job)
        finally:
            spark.stop()
    except JobError as exc:
        sys.stderr.write(f"rmqctl: error: {exc}\n")
        return 2


def _iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


if __name__ == "__main__":
    sys.exit(main())
