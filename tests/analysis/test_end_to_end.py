"""rmqctl's exporter writes real Parquet snapshots from a fake cluster; the job reads them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql.types import StructType
from pyspark.testing import assertDataFrameEqual

from analysis.stuck_queues import (
    GROUP_STATUS_SCHEMA,
    QUEUE_STATUS_SCHEMA,
    build_parser,
    run_job,
)
from rmqctl.snapshot import export_snapshots
from tests.tui.fakesource import FakeSource, make_view, queues

ROOT = Path(__file__).resolve().parents[2]
C1, C2 = "10.0.0.1@c1", "10.0.0.2@c2"
T0_S = 1_767_225_600  # 2026-01-01T00:00:00Z
Q = queues("TopicTest", 3)


def views_at(minute: int) -> list[object]:
    """q0 keeps up, q1 is frozen under c2, q2 is held by nobody; 'idle' gets no traffic."""
    arrived = 100 + 10 * minute
    orders = make_view(
        "orders",
        {Q[0]: (arrived, arrived - 1), Q[1]: (arrived, 90), Q[2]: (arrived, 80)},
        {C1: [Q[0]], C2: [Q[1]]},
        sampled_at=(T0_S + 60 * minute) * 1000,
    )
    idle = make_view("idle", {Q[0]: (500, 500)}, {C1: [Q[0]]},
                     sampled_at=(T0_S + 60 * minute) * 1000)
    return [orders, idle]


async def test_exported_snapshots_through_the_job(spark: SparkSession, tmp_path: Path) -> None:
    source = FakeSource(views_at(0))
    now = [float(T0_S)]
    minute = [0]

    async def next_minute(seconds: float) -> None:
        now[0] += seconds
        minute[0] += 1
        source.set_views(views_at(minute[0]))

    snapshots = tmp_path / "snapshots"
    result = await export_snapshots(source, None, snapshots, 60.0, 6, clock=lambda: now[0],
                                    sleep=next_minute)
    assert result.rows == 24 and len(result.files) == 6
    days = sorted(p.relative_to(snapshots).parts[0] for p in result.files)
    assert days == ["date=2026-01-01"] * 6

    out = tmp_path / "verdicts"
    counts = run_job(spark, build_parser().parse_args(
        [str(snapshots), str(out), "--window", "5m", "--master", "local[1]"]))
    assert counts == {"OK": 2, "ORPHANED": 1, "STALLED": 1}

    queues_out = spark.read.schema(QUEUE_STATUS_SCHEMA).parquet(str(out / "queues"))
    cols = ("group", "topic", "queue_id", "status", "owner", "current_lag", "samples",
            "window_start", "window_end")
    end = (T0_S + 300) * 1000
    expected = spark.createDataFrame([
        ("idle", "TopicTest", 0, "OK", C1, 0, 6, end - 300_000, end),
        ("orders", "TopicTest", 0, "OK", C1, 1, 6, end - 300_000, end),
        ("orders", "TopicTest", 1, "STALLED", C2, 60, 6, end - 300_000, end),
        ("orders", "TopicTest", 2, "ORPHANED", None, 70, 6, end - 300_000, end),
    ], StructType([QUEUE_STATUS_SCHEMA[c] for c in cols]))
    assertDataFrameEqual(queues_out.select(*cols), expected)

    groups_out = spark.read.schema(GROUP_STATUS_SCHEMA).parquet(str(out / "groups"))
    assertDataFrameEqual(groups_out, spark.createDataFrame([
        ("DefaultCluster", "idle", "OK", 1, 0, 0, 0, 0, 0, 0, 0, 0),
        ("DefaultCluster", "orders", "ERR", 3, 1, 0, 1, 0, 0, 0, 131, 70),
    ], GROUP_STATUS_SCHEMA))


def test_the_job_file_runs_standalone_with_its_own_help() -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "analysis" / "stuck_queues.py"), "--help"],
                          capture_output=True, text=True, cwd=ROOT / "analysis", timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: stuck_queues [-h] [--window WINDOW]")
