"""Snapshot directories that are not what they claim: every file left out is named with its reason,
no clock gone wrong moves the window, and a failing Spark is exit 7, never "stuck found".

Runs the job's plan + run on the shared local[1] session, and the command for the exit codes.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import SparkSession

from tests.analysis.conftest import (
    ARROW_SCHEMA,
    INCIDENT_VERDICTS,
    T0,
    incident_rows,
    ms,
    row,
    run_cli,
    verdict_tuples,
    write_snapshots,
)
from tests.analysis.engines import run_both

NOW = ms(T0 + dt.timedelta(minutes=30))  # the job's clock in these tests: half an hour after the incident


def run_job(spark: SparkSession, root: Path, tmp_path: Path, *argv: str) -> tuple[int, list[str], dict]:
    """The job's plan + run, and the local engine on the same options (the same warnings and document)."""
    out = tmp_path / "result.json"
    warnings: list[str] = []
    code, document = run_both(spark, [str(root), "-o", "json", "--out", str(out), *argv], now_ms=NOW,
                              on_warning=warnings.append)
    return code, warnings, document


def incident(tmp_path: Path) -> Path:
    return write_snapshots(tmp_path / "snap", incident_rows(), rows_per_file=30)


def test_files_of_another_schema_are_named_and_left_out(spark: SparkSession, tmp_path: Path) -> None:
    root = incident(tmp_path)
    folder = root / "date=2026-03-01"
    pq.write_table(pa.table({"name": ["a"], "value": [1]}), folder / "other.parquet")
    pq.write_table(pa.table({"ts": ["2026-03-01T12:00:00Z"], "cluster": ["c"], "group": ["orders"],
                             "topic": ["TopicA"], "broker": ["broker-a"], "queue_id": pa.array([0], pa.int32()),
                             "schema_version": pa.array([1], pa.int16())}), folder / "text-times.parquet")
    code, warnings, document = run_job(spark, root, tmp_path)
    assert code == 1
    assert warnings == [
        f"skipped {folder / 'other.parquet'}: not a snapshot file (no column ts, cluster, group, topic, broker, "
        "queue_id, schema_version)",
        f"skipped {folder / 'text-times.parquet'}: not a snapshot file (ts is string, not timestamp)",
    ]
    assert verdict_tuples(document["queues"]) == INCIDENT_VERDICTS


def test_a_clock_years_ahead_neither_moves_the_window_nor_hides_today(spark: SparkSession, tmp_path: Path) -> None:
    root = incident(tmp_path)
    ahead = [row(i, 5, 5, group="orders", topic="TopicA", queue_id=7) for i in range(3)]
    for r in ahead:
        r["ts"] = r["ts"].replace(year=2100)
    write_snapshots(root, ahead, name="ahead")
    # and a file of today's partition holding one row dated in year 20000
    far = pa.Table.from_pylist([row(0, 1, 1, group="orders", topic="TopicA", queue_id=8)], schema=ARROW_SCHEMA)
    ts_field = ARROW_SCHEMA.field("ts")
    far = far.set_column(0, ts_field, pa.array([568_000_000_000_000], ts_field.type))  # in year 19969
    pq.write_table(far, root / "date=2026-03-01" / "far.parquet")
    code, warnings, document = run_job(spark, root, tmp_path)
    assert code == 1
    assert warnings == [
        f"skipped {root / 'date=2100-03-01'}: dated after 2026-03-02 (a wrong clock?)",
        f"skipped {root / 'date=2026-03-01' / 'far.parquet'}: rows dated 568000000000000 ms since 1970, outside "
        "2001-01-01T00:00:00Z .. 2026-03-02T12:30:00Z (a wrong clock?)",
    ]
    # the window still ends at today's newest snapshot, and every verdict is today's
    assert document["until"] == "2026-03-01T12:10:00.000Z"
    assert verdict_tuples(document["queues"]) == INCIDENT_VERDICTS


def test_a_date_partition_that_is_not_a_directory_is_named(spark: SparkSession, tmp_path: Path) -> None:
    root = incident(tmp_path)
    (root / "date=2026-02-28").symlink_to(tmp_path / "gone")  # a partition on a volume no longer mounted
    (root / "date=2026-13-45").mkdir()
    code, warnings, document = run_job(spark, root, tmp_path, "--since", "2026-02-28T00:00:00Z")
    assert code == 1
    assert warnings == [f"skipped {root / 'date=2026-02-28'}: not a directory",
                        f"skipped {root / 'date=2026-13-45'}: not a date"]
    assert [q["queue_id"] for q in document["queues"]] == [0, 1, 2]


def test_a_spark_that_cannot_start_is_exit_7_not_stuck_found(tmp_path: Path) -> None:
    root = incident(tmp_path)
    result = run_cli("analyze", "stuck", str(root), "--master", "local[1]", "--driver-memory", "200m")
    lines = result.stderr.splitlines()
    assert result.returncode == 7, result.stderr
    assert [line for line in lines if line.startswith("rmqctl: error:")] == [lines[-1]]
    assert lines[-1].startswith("rmqctl: error: the Spark job failed: ")
    assert "Traceback" not in result.stderr and result.stdout == ""
