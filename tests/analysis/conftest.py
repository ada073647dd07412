"""Fixtures for the Spark job's tests: one local[1] session and tiny snapshot datasets written with pyarrow."""

from __future__ import annotations

import datetime as dt
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
        .config("spark.driver.memory", "512m")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
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
) -> dict[str, Any]:
    """One snapshot row at round ``i``; a row with ``error`` is a placeholder with null offsets."""
    return {
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
    """Write rows as the exporter would: date=YYYY-MM-DD/NAME-k.parquet with the schema version in metadata."""
    by_date: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_date.setdefault(r["ts"].astimezone(dt.timezone.utc).date().isoformat(), []).append(r)
    schema = ARROW_SCHEMA.with_metadata({b"rmqctl.schema_version": str(version).encode()})
    for date, part in by_date.items():
        folder = root / f"date={date}"
        folder.mkdir(parents=True, exist_ok=True)
        chunk = rows_per_file or len(part)
        for k in range(0, len(part), chunk):
            table = pa.Table.from_pylist(part[k:k + chunk], schema=schema)
            pq.write_table(table, folder / f"{name}-{k // chunk}.parquet")
    return root
