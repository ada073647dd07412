"""Stuck-queue diagnosis over consumer-offset snapshots: the PySpark job's command line.

Reads the snapshot files described in ``docs/snapshots.md`` (explicit schema, pruned columns, the
time window pushed down to the ``date=`` partitions and the Parquet row groups) and gives every
(group, topic, broker, queue) one verdict over the window, with the rule that fired and its
numbers, plus a summary per group:

``OK``                consumer moving, or caught up
``IDLE``              no new messages in the window and nothing left to consume: never stuck
``LAGGING``           consumer moving but never caught up and lag grew
``STALLED``           owner present, committed offset frozen while there was something to consume
                      (the broker offset advanced, or a backlog stayed untouched), whether or not the
                      owner keeps pulling, however recently the run began (``%RETRY%`` queues included)
``ORPHANED``          same, but nobody owns the queue or the owner does not subscribe the topic (a topic
                      no client of the group subscribes any more, left with its backlog, included)
``REWOUND``           the committed offset went back and has not caught up again, still moving
``INSUFFICIENT_DATA`` fewer snapshots than ``--min-snapshots`` (in the window, or since the owner changed)
``DLQ``               a ``%DLQ%`` queue: reported with its numbers, not judged
``REDELIVERING``      a POP group's retry queue that received copies in the window, whose copies read back
                      were delivered 3 times or more (or none was read)
``DEAD_LETTERING``    a POP group's ``%DLQ%`` queue that received messages in the window

The job is cut in three: :mod:`analysis.rules` (the verdicts), :mod:`analysis.transforms` (the
``DataFrame -> DataFrame`` steps from snapshot rows to verdicts) and :mod:`analysis.files` (which files,
whole or not, which schema version). This module parses the options, builds the session, reads,
judges and writes: only ``main()`` builds a session. Runs as ``python -m analysis.stuck`` or
``spark-submit analysis/stuck.py``.

Imports only pyspark and the standard library so that it ships with spark-submit.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import io
import json
import os
import re
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file by spark-submit: make the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pyspark.sql import DataFrame, SparkSession  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

from analysis.files import (  # noqa: E402
    FUTURE_SLACK_MS,
    JobError,
    SnapshotFile,
    check_files,
    list_snapshot_files,
    read_snapshots,
)
from analysis.rules import POP_STATUSES, STUCK_STATUSES, Thresholds  # noqa: E402
from analysis.schema import QUEUE_KEY  # noqa: E402
from analysis.transforms import SortKey, diagnose, for_output, summarize_groups  # noqa: E402

__all__ = ["JobError", "Plan", "build_parser", "build_session", "main", "plan", "render", "run", "warn"]


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


def _checked_time_ms(text: str) -> int:
    value = parse_time_ms(text)
    try:
        _utc_date(value)
    except (OverflowError, ValueError, OSError):
        raise JobError(f"bad time {text!r}: beyond the calendar") from None
    return value


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
    p.add_argument("--driver-memory", default=AUTO,
                   help="heap of the driver (local mode: the whole job); default auto: 512m, and for a local master "
                        "reading more than 64 MB of snapshot files, 3 times their size up to a quarter of the "
                        "machine's memory")
    p.add_argument("--executor-memory", default="512m")
    p.add_argument("--shuffle-partitions", type=int, default=None,
                   help="default: the local cores for small input in local mode, else 8")
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


SMALL_INPUT_BYTES = 64 << 20
"""Snapshot files up to this size (about 8 million rows) are judged in seconds: a local JVM for them is tuned
to start fast rather than to run long."""

START_FAST_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
"""JVM flags for a short local job: the quick compiler only (Spark's start-up is mostly compiling code that
runs once) and one garbage collector thread."""


SERIAL_GC_INPUT_BYTES = 256 << 20
"""Snapshot files above :data:`SMALL_INPUT_BYTES` and up to this size (about 3·10^7 rows) run long enough for
the full JIT compiler to pay, and still with one garbage-collector thread (:data:`SERIAL_GC_JVM`): at 10^7 rows
on two cores the job then takes 7-14 % less CPU than with the default collector, whose concurrent threads compete
with the tasks. Larger input keeps the JVM's default collector (its heap is sized to the input)."""

SERIAL_GC_JVM = "-XX:+UseSerialGC"
"""The JVM flag for a local job over input up to :data:`SERIAL_GC_INPUT_BYTES`."""


def jvm_flags_for(master: str, input_bytes: int | None) -> str:
    """The JVM flags of a local driver for ``input_bytes`` of snapshot files: :data:`START_FAST_JVM` up to
    :data:`SMALL_INPUT_BYTES`, :data:`SERIAL_GC_JVM` up to :data:`SERIAL_GC_INPUT_BYTES`, else none (nor for
    another master, or input of unknown size)."""
    if local_cores(master) is None or input_bytes is None:
        return ""
    if input_bytes <= SMALL_INPUT_BYTES:
        return START_FAST_JVM
    return SERIAL_GC_JVM if input_bytes <= SERIAL_GC_INPUT_BYTES else ""


AUTO = "auto"
"""The default ``--driver-memory``: sized by :func:`driver_memory_for`."""

LARGE_PARTITION_BYTES = 32 << 20
"""Above :data:`SMALL_INPUT_BYTES`, one shuffle partition per this much snapshot files (at least 8): each task's
sort then holds a few million rows, instead of a heap's worth spilled to disk many times over and merged back."""


def driver_memory_for(requested: str, master: str, input_bytes: int | None) -> str:
    """The driver heap for ``--driver-memory`` (``auto``: 512m, and for a local master reading more than
    :data:`SMALL_INPUT_BYTES` of files, 3 times their size up to a quarter of the machine's memory)."""
    if requested != AUTO:
        return requested
    if local_cores(master) is None or input_bytes is None or input_bytes <= SMALL_INPUT_BYTES:
        return "512m"
    try:
        quarter_mib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 4 >> 20
    except (ValueError, OSError):
        quarter_mib = 2048
    return f"{max(512, min(3 * input_bytes >> 20, quarter_mib))}m"


def shuffle_partitions_for(cores: int | None, input_bytes: int | None) -> int:
    """Shuffle partitions when not given: as many as the local cores for small input, else 8, and one per
    :data:`LARGE_PARTITION_BYTES` of files above that."""
    if cores is not None and input_bytes is not None and input_bytes <= SMALL_INPUT_BYTES:
        return cores
    return max(8, -(-(input_bytes or 0) // LARGE_PARTITION_BYTES))


def local_cores(master: str) -> int | None:
    """The cores of a ``local``, ``local[N]`` or ``local[*]`` master; None for any other master."""
    match = re.fullmatch(r"local(?:\[(\d+|\*)(?:,\d+)?\])?", master.strip())
    if match is None:
        return None
    if match.group(1) is None:
        return 1
    if match.group(1) == "*":
        return os.cpu_count() or 1
    return max(1, int(match.group(1)))


def build_session(master: str, driver_memory: str, executor_memory: str, shuffle_partitions: int | None = None,
                  input_bytes: int | None = None, tuned: bool = True) -> SparkSession:
    """A session with small, quiet defaults; the JVM log goes to stderr at ERROR only.

    ``tuned`` (the default) fits a local master to input up to :data:`SMALL_INPUT_BYTES`: as many shuffle
    partitions as cores (unless ``shuffle_partitions`` says otherwise) and a JVM that starts fast
    (:data:`START_FAST_JVM`, also for the launcher JVM that spark-submit starts first), and up to
    :data:`SERIAL_GC_INPUT_BYTES` one garbage-collector thread (:func:`jvm_flags_for`). Larger input and other
    masters get at least 8 shuffle partitions by default (:func:`shuffle_partitions_for`) and the JVM as it is;
    a ``driver_memory`` of ``auto`` is sized by :func:`driver_memory_for`.
    """
    log4j = Path(tempfile.gettempdir()) / f"rmqctl-spark-log4j2-{os.getuid()}.properties"
    if not log4j.exists() or log4j.read_text(encoding="utf-8") != _LOG4J:
        log4j.write_text(_LOG4J, encoding="utf-8")
    java_opts = f"-Dlog4j2.configurationFile={log4j}"
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if master.startswith("local") or "://127.0.0.1:" in master or "://localhost:" in master:
        # everything on this machine: keep the driver on loopback instead of the first interface
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    cores = local_cores(master) if tuned else None
    small = cores is not None and input_bytes is not None and input_bytes <= SMALL_INPUT_BYTES
    if shuffle_partitions is None:
        shuffle_partitions = shuffle_partitions_for(cores if small else None, input_bytes)
    flags = jvm_flags_for(master, input_bytes) if tuned else ""
    if flags:
        java_opts += " " + flags
    if small:
        os.environ.setdefault("SPARK_LAUNCHER_OPTS", START_FAST_JVM)
    return (
        SparkSession.builder.master(master)
        .appName("rmqctl-analyze-stuck")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", driver_memory_for(driver_memory, master, input_bytes))
        .config("spark.executor.memory", executor_memory)
        .config("spark.driver.extraJavaOptions", java_opts)
        .config("spark.executor.extraJavaOptions", java_opts)
        .config("spark.sql.session.timeZone", "UTC")
        # column names are exact: a misspelt name in a rule is an error, never a match by case
        .config("spark.sql.caseSensitive", "true")
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .getOrCreate()
    )


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
    #: what the listing left out and why (named again through the run's warnings)
    skipped: tuple[str, ...] = ()
    #: the job's clock when it was planned: snapshots after it (plus a day) are refused
    now_ms: int | None = None


def plan(args: argparse.Namespace, now_ms: int | None = None) -> Plan:
    """Check the options and pick the snapshot files of the window's date partitions (by name only).

    Partitions dated after ``now_ms`` (the job's clock) plus a day are left out and named."""
    th = Thresholds(min_snapshots=max(1, args.min_snapshots), allowed_lag=args.allowed_lag,
                    retry_allowed_lag=args.retry_allowed_lag)
    window_ms = parse_duration_ms(args.window)
    until_ms = _checked_time_ms(args.until) if args.until else None
    since_ms = _checked_time_ms(args.since) if args.since else None
    if since_ms is not None and until_ms is not None and since_ms > until_ms:
        raise JobError("--since is after --until")
    if args.output == "parquet" and not args.out:
        raise JobError("-o parquet needs --out DIR")
    root = Path(args.directory)
    # the window's partitions, and those of the hour before it where a frozen run may have begun
    first_date = _utc_date(since_ms - th.run_lookback_ms) if since_ms is not None else (
        _utc_date(until_ms - window_ms - th.run_lookback_ms) if until_ms is not None else None)
    now_ms = now_ms if now_ms is not None else int(time.time() * 1000)
    skipped: list[str] = []
    files = list_snapshot_files(root, first_date, _utc_date(until_ms) if until_ms is not None else None,
                                skipped.append)
    latest_date = _utc_date(now_ms + FUTURE_SLACK_MS)
    future = sorted({f.path.parent for f in files if f.date > latest_date})
    skipped += [f"skipped {part}: dated after {latest_date} (a wrong clock?)" for part in future]
    files = [f for f in files if f.date <= latest_date]
    if since_ms is None and until_ms is None and files:
        # the default window ends at the newest snapshot: only the newest days can hold it
        newest = max(f.date for f in files)
        reach_ms = window_ms + th.run_lookback_ms
        files = [f for f in files if f.date >= newest - dt.timedelta(days=1 + reach_ms // 86_400_000)]
    if not files:
        for message in skipped:
            warn(message)
        raise JobError(f"no snapshot files under {root} for the requested window")
    return Plan(root, tuple(files), since_ms, until_ms, window_ms, th, args.output, args.out, tuple(skipped), now_ms)


def run(spark: SparkSession, job: Plan, on_warning: Callable[[str], None] | None = None) -> int:
    """Check the files, read, judge and write; 1 when a queue is STALLED, ORPHANED, REDELIVERING or
    DEAD_LETTERING, else 0.

    Files that are not whole Parquet files are named through ``on_warning`` (default: :func:`warn`).
    """
    for message in job.skipped:
        (on_warning or warn)(message)
    files = check_files(spark, job.files, on_warning or warn, job.now_ms)
    if not files:
        raise JobError(f"none of the {len(job.files)} snapshot file(s) under {job.root} for the requested window "
                       "could be read (each is named above with its reason)")
    until_ms = job.until_ms
    if until_ms is None:
        newest = max(f.date for f in files)
        latest = read_snapshots(spark, [f for f in files if f.date == newest]).select(
            F.unix_millis(F.max("ts"))).first()
        if latest is None or latest[0] is None:
            raise JobError(f"no snapshots under {job.root}")
        until_ms = int(latest[0])
    since_ms = job.since_ms if job.since_ms is not None else until_ms - job.window_ms
    key = sort_key_for(files, since_ms - job.thresholds.run_lookback_ms, until_ms)
    verdicts = diagnose(read_snapshots(spark, files), since_ms, until_ms, job.thresholds, key).cache()
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
    return 1 if statuses & {*STUCK_STATUSES, *POP_STATUSES} else 0


def sort_key_for(files: Sequence[SnapshotFile], since_ms: int, until_ms: int) -> SortKey | None:
    """The one-long sort key for the rows of ``files`` (checked by :func:`~analysis.files.check_files`) from
    ``since_ms`` to ``until_ms``: as many queues at most as the files have rows, times within both the files' and
    the window's; None when a file was not looked at or the numbers need more than 63 bits (the rows are then
    sorted on the queue number and the time, two columns)."""
    read = [f for f in files if f.rows]
    if any(f.first_ms is None or f.last_ms is None or f.whole_ms is None for f in read):
        return None
    if not read:
        return None
    first_ms = max(since_ms, min(f.first_ms for f in read if f.first_ms is not None))
    last_ms = min(until_ms, max(f.last_ms for f in read if f.last_ms is not None))
    return SortKey.fit(sum(f.rows or 0 for f in read), first_ms, last_ms, all(f.whole_ms for f in read))


def warn(message: str) -> None:
    """A one-line warning on stderr (the rmqctl command forwards these)."""
    sys.stderr.write(f"rmqctl: warning: {message}\n")
    sys.stderr.flush()


def progress(message: str) -> None:
    """A progress line on stderr (the rmqctl command shows these only on a terminal)."""
    sys.stderr.write(f"rmqctl: progress: {message}\n")
    sys.stderr.flush()


def report_stages(spark: SparkSession, stop: threading.Event) -> None:
    """Every second, the active stages' finished and total tasks, as progress lines."""
    tracker = spark.sparkContext.statusTracker()
    last = ""
    while not stop.wait(1.0):
        stages = [tracker.getStageInfo(s) for s in tracker.getActiveStageIds()]
        done = sum(s.numCompletedTasks for s in stages if s is not None)
        total = sum(s.numTasks for s in stages if s is not None)
        line = f"Spark job running: {done}/{total} tasks of {len(stages)} stage(s)" if stages else ""
        if line and line != last:
            progress(line)
            last = line


#: The job's exit code when Spark or the JVM failed (distinct from 1, "a queue is stuck", which is
#: also what Python exits with on an uncaught exception: hence the catch-all in :func:`main`).
EXIT_JOB_FAILED = 7


def main(argv: Sequence[str] | None = None) -> int:
    """Run the job; exit 0 (nothing stuck), 1 (a queue is STALLED or ORPHANED), 2 (bad input, no
    snapshots) or :data:`EXIT_JOB_FAILED` (Spark or the JVM failed: out of memory, too small a heap …)."""
    args = build_parser().parse_args(argv)
    try:
        job = plan(args)
        progress(f"starting Spark ({args.master}) to read {len(job.files)} snapshot file(s)")
        spark = build_session(args.master, args.driver_memory, args.executor_memory, args.shuffle_partitions,
                              input_bytes=_input_bytes(job.files))
        progress(f"Spark started; reading {len(job.files)} snapshot file(s)")
        stop = threading.Event()
        watcher = threading.Thread(target=report_stages, args=(spark, stop), daemon=True)
        watcher.start()
        try:
            return run(spark, job)
        finally:
            stop.set()
            watcher.join(2.0)
            spark.stop()
    except JobError as exc:
        sys.stderr.write(f"rmqctl: error: {exc}\n")
        return 2
    except Exception as exc:  # Spark's and py4j's errors: one line, the whole story with --debug
        first = next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
        sys.stderr.write(f"rmqctl: error: the Spark job failed: {first[:300]}\n")
        import traceback

        traceback.print_exc()  # not an rmqctl: line, so the command shows it only with --debug
        return EXIT_JOB_FAILED


def _input_bytes(files: Sequence[SnapshotFile]) -> int | None:
    """The size of the files to read (None when one cannot be looked at)."""
    try:
        return sum(f.path.stat().st_size for f in files)
    except OSError:
        return None


def _iso(ms: int) -> str:
    try:
        return dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    except (OverflowError, ValueError, OSError):  # --until far beyond what a calendar holds
        return f"{ms} ms since 1970"


if __name__ == "__main__":
    sys.exit(main())
