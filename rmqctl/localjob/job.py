"""``analyze stuck`` on the local engine: options to a plan, the plan to the job's document and exit code.

:func:`plan` checks the options and picks the window's files by name, as the Spark job's ``plan`` does
(the same partitions: the window's and the hour before it; the default window ends at the newest
snapshot, so only the newest days are listed); :func:`run` reads them, judges and returns the document
``{since, until, since_ts, until_ts, queues, groups}`` with the exit code (1 when a queue is STALLED or
ORPHANED, else 0). Bad input raises :class:`~rmqctl.localjob.files.JobError` with the job's own sentence.

Imports pyarrow, the standard library, :mod:`rmqctl.stuck` and :mod:`rmqctl.clock` only.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from rmqctl import stuck
from rmqctl.clock import SystemClock
from rmqctl.localjob.files import (
    FUTURE_SLACK_MS,
    JobError,
    SnapshotFile,
    footer_rows,
    list_snapshot_files,
    read_buckets,
)
from rmqctl.localjob.verdicts import QUEUE_KEY, Thresholds, diagnose, summarize_groups

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


def _checked_time_ms(text: str) -> int:
    value = parse_time_ms(text)
    try:
        _utc_date(value)
    except (OverflowError, ValueError, OSError):
        raise JobError(f"bad time {text!r}: beyond the calendar") from None
    return value


def _utc_date(ms: int) -> dt.date:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc).date()


def iso(ms: int) -> str:
    """The window's ends as the job writes them (milliseconds, ``Z``)."""
    try:
        return dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    except (OverflowError, ValueError, OSError):  # --until far beyond what a calendar holds
        return f"{ms} ms since 1970"


@dataclass(frozen=True)
class Plan:
    """What to read and how to judge it, settled before a file is opened."""

    root: Path
    files: tuple[SnapshotFile, ...]
    since_ms: int | None
    until_ms: int | None
    window_ms: int
    thresholds: Thresholds
    #: what the listing left out and why (named again through the run's warnings)
    skipped: tuple[str, ...] = ()
    #: the engine's clock when it was planned: snapshots after it (plus a day) are refused
    now_ms: int = 0


def plan(directory: Path, window: str = "10m", since: str | None = None, until: str | None = None,
         thresholds: Thresholds | None = None, now_ms: int | None = None,
         warn: Callable[[str], None] | None = None) -> Plan:
    """Check the options and pick the snapshot files of the window's date partitions (by name only).

    Partitions dated after ``now_ms`` plus a day are left out and named. With no file left, what was left
    out is named through ``warn`` and :class:`JobError` says so."""
    th = thresholds or Thresholds()
    th = Thresholds(min_snapshots=max(1, th.min_snapshots), allowed_lag=th.allowed_lag,
                    retry_allowed_lag=th.retry_allowed_lag, run_lookback_ms=th.run_lookback_ms,
                    consume_timeout_ms=th.consume_timeout_ms)
    window_ms = parse_duration_ms(window)
    until_ms = _checked_time_ms(until) if until else None
    since_ms = _checked_time_ms(since) if since else None
    if since_ms is not None and until_ms is not None and since_ms > until_ms:
        raise JobError("--since is after --until")
    first_date = _utc_date(since_ms - th.run_lookback_ms) if since_ms is not None else (
        _utc_date(until_ms - window_ms - th.run_lookback_ms) if until_ms is not None else None)
    now_ms = now_ms if now_ms is not None else int(SystemClock().now() * 1000)
    skipped: list[str] = []
    files = list_snapshot_files(directory, first_date, _utc_date(until_ms) if until_ms is not None else None,
                                skipped.append)
    latest_date = _utc_date(now_ms + FUTURE_SLACK_MS)
    future = sorted({f.path.parent for f in files if f.date > latest_date})
    skipped += [f"skipped {part}: dated after {latest_date} (a wrong clock?)" for part in future]
    files = [f for f in files if f.date <= latest_date]
    if since_ms is None and until_ms is None and files:
        newest = max(f.date for f in files)
        reach_ms = window_ms + th.run_lookback_ms
        files = [f for f in files if f.date >= newest - dt.timedelta(days=1 + reach_ms // 86_400_000)]
    if not files:
        for message in skipped:
            (warn or _quiet)(message)
        raise JobError(f"no snapshot files under {directory} for the requested window")
    return Plan(directory, tuple(files), since_ms, until_ms, window_ms, th, tuple(skipped), now_ms)


def _quiet(message: str) -> None:
    pass


BUCKET_ROWS = 1_000_000
"""Input of more rows than this (counted from the footers) is judged in buckets of about this many rows, cut by
queue and spilled to a temporary directory as it is read (:func:`~rmqctl.localjob.files.read_buckets`), so that
memory holds one bucket: about 600 MB at this size, whatever the input's."""


def run(job: Plan, warn: Callable[[str], None], bucket_rows: int = BUCKET_ROWS) -> tuple[int, dict[str, Any]]:
    """Read, judge and return ``(exit code, document)``: 1 when a queue is STALLED or ORPHANED, else 0.

    More than ``bucket_rows`` rows (counted from the footers) are judged in buckets of about that many."""
    for message in job.skipped:
        warn(message)
    buckets = max(1, -(-footer_rows(job.files) // max(1, bucket_rows)))
    with tempfile.TemporaryDirectory(prefix="rmqctl-stuck-") if buckets > 1 else contextlib.nullcontext() as spill:
        return _judge_buckets(job, warn, buckets, Path(spill) if spill else None)


def _judge_buckets(job: Plan, warn: Callable[[str], None], buckets: int,
                   spill: Path | None) -> tuple[int, dict[str, Any]]:
    usable, tables = read_buckets(job.files, warn, job.now_ms, buckets, spill)
    if not usable:
        raise JobError(f"none of the {len(job.files)} snapshot file(s) under {job.root} for the requested window "
                       "could be read (each is named above with its reason)")
    until_ms = job.until_ms
    if until_ms is None:
        newest = max(f.file.date for f in usable)
        lasts = [f.last_us for f in usable if f.file.date == newest and f.last_us is not None]
        if not lasts:
            raise JobError(f"no snapshots under {job.root}")
        until_ms = max(lasts) // 1000
    since_ms = job.since_ms if job.since_ms is not None else until_ms - job.window_ms
    queues = [verdict for rows in tables for verdict in diagnose(rows, since_ms, until_ms, job.thresholds)]
    if buckets > 1:
        queues.sort(key=lambda q: tuple(q[k] for k in QUEUE_KEY))
    if not queues:
        raise JobError(f"no snapshots under {job.root} between {iso(since_ms)} and {iso(until_ms)}")
    document = {"since": iso(since_ms), "until": iso(until_ms), "since_ts": since_ms, "until_ts": until_ms,
                "queues": queues, "groups": summarize_groups(queues)}
    code = 1 if any(q["status"] in (*stuck.STUCK_STATUSES, *stuck.POP_STATUSES) for q in queues) else 0
    return code, document


_QUEUE_TYPES = {
    "queue_id": pa.int32(), "snapshots": pa.int32(), "window_snapshots": pa.int32(),
    "missing_snapshots": pa.int32(), "frozen_start_seen": pa.bool_(), "queues": pa.int32(),
    "stuck_queues": pa.int32(),
}
_STRINGS = {"cluster", "group", "topic", "broker", "status", "rule", "reason", "owner", "previous_owner",
            "window_start", "window_end", "owner_since", "frozen_since", "lag_trend"}


def _table(rows: list[dict[str, Any]], columns: list[str]) -> pa.Table:
    fields = [pa.field(c, _QUEUE_TYPES.get(c, pa.string() if c in _STRINGS else pa.int64())) for c in columns]
    return pa.Table.from_pylist(rows, schema=pa.schema(fields))


def write_parquet(document: dict[str, Any], out: Path) -> None:
    """``-o parquet``: the verdicts under ``OUT/queues`` and the group summaries under ``OUT/groups``, each
    replaced whole (the job's layout: a directory of part files)."""
    for name in ("queues", "groups"):
        rows = document[name]
        folder = out / name
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        columns = list(rows[0]) if rows else []
        pq.write_table(_table(rows, columns), folder / "part-00000.parquet")

