"""Fixtures for the Spark job's tests: one local[1] session and tiny snapshot datasets written with pyarrow."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

pyspark = pytest.importorskip("pyspark")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from pyspark.sql import SparkSession  # noqa: E402

ARROW_SCHEMA = pa.schema([
    ("ts", pa.timestamp("ms", tz="UTC")),
    ("cluster", pa.string()),
    ("group", pa.string()),
    ("topic", pa.string()),
    ("broker", pa.string()),
    ("queue_id", pa.int32()),
    ("broker_offset", pa.int64()),
    ("consumer_offset", pa.int64()),
    ("pull_offset", pa.int64()),
    ("last_consumed_ts", pa.timestamp("ms", tz="UTC")),
    ("broker_last_ts", pa.timestamp("ms", tz="UTC")),
    ("owner", pa.string()),
    ("owner_subscribed", pa.bool_()),
    ("message_model", pa.string()),
    ("error", pa.string()),
    ("schema_version", pa.int16()),
])
"""The snapshot contract (docs/snapshots.md), written out independently of analysis/schema.py."""

T0 = dt.datetime(2026, 3, 1, 12, 0, 0, tzinfo=dt.timezone.utc)
STEP = dt.timedelta(seconds=30)


def at(i: int) -> dt.datetime:
    """The i-th snapshot round: every 30 s from 12:00:00 UTC."""
    return T0 + i * STEP


def ms(t: dt.datetime) -> int:
    return int(t.timestamp() * 1000)


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = (
        SparkSession.builder.master("local[1]")
        .appName("rmqctl-analysis-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        # one session runs thousands of small jobs: keep a heap with room for the sorts' buffers,
        # and only the last executions' records (the status store keeps 1,000 by default)
        .config("spark.driver.memory", "1g")
        .config("spark.sql.ui.retainedExecutions", "50")
        .config("spark.ui.retainedJobs", "100").config("spark.ui.retainedStages", "100")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC").config("spark.sql.caseSensitive", "true")
        .config("spark.default.parallelism", "1")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def row(
    i: int, broker_offset: int | None, consumer_offset: int | None, *, group: str = "g", topic: str = "T",
    broker: str = "broker-a", queue_id: int = 0, owner: str | None = "c1", subscribed: bool | None = True,
    pull_offset: int | None = None, model: str = "CLUSTERING", error: str | None = None,
    last_consumed: dt.datetime | None = None, broker_last: dt.datetime | None = None,
    pop: bool | None = None, retry_deliveries: int | None = None,
) -> dict[str, Any]:
    """One snapshot row at round ``i``; a row with ``error`` is a placeholder with null offsets. ``pop`` and
    ``retry_deliveries`` (schema version 3) are set only when given."""
    added = {k: v for k, v in (("pop", pop), ("retry_deliveries", retry_deliveries)) if v is not None}
    return {**added,
        "ts": at(i), "cluster": "c", "group": group, "topic": topic, "broker": broker, "queue_id": queue_id,
        "broker_offset": broker_offset, "consumer_offset": consumer_offset, "pull_offset": pull_offset,
        "last_consumed_ts": last_consumed, "broker_last_ts": broker_last,
        "owner": owner, "owner_subscribed": subscribed if owner is not None else None,
        "message_model": model, "error": error, "schema_version": 1,
    }


def series(
    broker_offsets: Sequence[int | None], consumer_offsets: Sequence[int | None], start: int = 0, **kw: Any,
) -> list[dict[str, Any]]:
    """Rows for consecutive rounds from two offset series (None in both = the broker failed that round)."""
    rows = []
    for k, (b, c) in enumerate(zip(broker_offsets, consumer_offsets, strict=True)):
        if b is None and c is None:
            rows.append(row(start + k, None, None, error="CONNECTION: broker unreachable", **kw))
        else:
            rows.append(row(start + k, b, c, **kw))
    return rows


def write_snapshots(root: Path, rows: Sequence[dict[str, Any]], *, name: str = "part-0",
                    version: int = 1, rows_per_file: int | None = None) -> Path:
    """Write rows as the exporter would: date=YYYY-MM-DD/NAME-k.parquet, the schema version in metadata and column."""
    by_date: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_date.setdefault(r["ts"].astimezone(dt.timezone.utc).date().isoformat(), []).append(r)
    schema = ARROW_SCHEMA.with_metadata({b"rmqctl.schema_version": str(version).encode()})
    for date, part in by_date.items():
        folder = root / f"date={date}"
        folder.mkdir(parents=True, exist_ok=True)
        chunk = rows_per_file or len(part)
        for k in range(0, len(part), chunk):
            rows_of_file = [{**r, "schema_version": version} for r in part[k:k + chunk]]
            table = pa.Table.from_pylist(rows_of_file, schema=schema)
            pq.write_table(table, folder / f"{name}-{k // chunk}.parquet")
    return root


ROOT = Path(__file__).resolve().parents[2]


def incident_rows() -> list[dict[str, Any]]:
    """Group ``orders`` on TopicA@broker-a over 12:00–12:10: queue 0 healthy, queue 1 stalled under c2,
    queue 2 orphaned when c3 left at 12:02:30; plus a broadcasting group that must not show up."""
    rows: list[dict[str, Any]] = []
    for i in range(21):
        broker = 100 + 10 * i
        rows.append(row(i, broker, broker, group="orders", topic="TopicA", queue_id=0, owner="c1"))
        rows.append(row(i, broker, 100, group="orders", topic="TopicA", queue_id=1, owner="c2"))
        rows.append(row(i, broker, broker if i < 5 else 140, group="orders", topic="TopicA", queue_id=2,
                        owner="c3" if i < 5 else None))
        rows.append(row(i, broker, 100, group="audit", topic="TopicA", queue_id=0, model="BROADCASTING"))
    return rows


INCIDENT_VERDICTS = [
    # group, topic, broker, queue_id, status, owner, snapshots, lag_start, lag_end, window_start, window_start_ts
    ("orders", "TopicA", "broker-a", 0, "OK", "c1", 21, 0, 0, "2026-03-01T12:00:00.000Z", 1772366400000),
    ("orders", "TopicA", "broker-a", 1, "STALLED", "c2", 20, 10, 200, "2026-03-01T12:00:30.000Z", 1772366430000),
    ("orders", "TopicA", "broker-a", 2, "ORPHANED", None, 16, 10, 160, "2026-03-01T12:02:30.000Z", 1772366550000),
]
"""The verdicts for :func:`incident_rows`, by hand; every window ends at 12:10:00 (1772367000000)."""


def verdict_tuples(queues: Sequence[dict[str, Any]]) -> list[tuple[Any, ...]]:
    keys = ("group", "topic", "broker", "queue_id", "status", "owner", "snapshots", "lag_start", "lag_end",
            "window_start", "window_start_ts")
    return [tuple(q[k] for k in keys) for q in queues]


def corrupt_files(folder: Path) -> tuple[Path, Path]:
    """Drop a corrupt and a truncated Parquet file (and a temp file being written) into a partition."""
    good = sorted(folder.glob("*.parquet"))[0].read_bytes()
    corrupt = folder / "corrupt.parquet"
    corrupt.write_bytes(b"this is not parquet at all, just bytes" * 10)
    truncated = folder / "truncated.parquet"
    truncated.write_bytes(good[: len(good) // 2])
    (folder / "part-9.parquet.tmp").write_bytes(good[:100])
    return corrupt, truncated


def corrupt_pages(folder: Path, name: str = "pages.parquet") -> Path:
    """A snapshot file of 200 rows whose header and footer are whole but whose ``ts`` data page is not:
    its footer still reads (pyarrow counts the rows), its pages do not decode."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    rows = [{**row(i, 100 + i, 100 + i), "schema_version": 1} for i in range(200)]
    pq.write_table(pa.Table.from_pylist(rows, schema=ARROW_SCHEMA), path)
    column = pq.ParquetFile(path).metadata.row_group(0).column(0)  # ts
    data = bytearray(path.read_bytes())
    start = column.data_page_offset + 40  # inside the page, past the page header's first fields
    data[start:start + 400] = b"\xab" * 400
    path.write_bytes(bytes(data))
    assert pq.ParquetFile(path).metadata.num_rows == 200  # the footer is whole
    with pytest.raises(Exception):  # noqa: B017 - pyarrow raises OSError or ArrowInvalid by version
        pq.read_table(path)
    return path


def run_cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``python -m rmqctl ARGS`` from the repository root."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "rmqctl", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture(scope="session")
def incident_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = write_snapshots(tmp_path_factory.mktemp("incident"), incident_rows(), rows_per_file=30)
    corrupt_files(root / "date=2026-03-01")
    return root


@pytest.fixture(scope="session")
def local_run(incident_dir: Path) -> subprocess.CompletedProcess[str]:
    """``rmqctl analyze stuck`` on the incident in local mode, once per session."""
    return run_cli("analyze", "stuck", str(incident_dir), "-o", "json", "--master", "local[1]")
