"""The local engine and the Spark job give the same answer: on snapshot sets drawn at random, on the
benchmark's generated dataset, and on every kind of bad input the job's own tests name.

Each comparison is :mod:`tests.analysis.engines`: every queue's whole row (status, rule, reason, numbers,
timestamps) and every group's summary, or for a whole run the warnings, the error, the exit code and the
document. The Spark job is the reference; nothing here is computed by the engine under test.
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

from analysis import stuck
from analysis.rules import Thresholds
from analysis.schema import SCHEMA_VERSION, SNAPSHOT_SCHEMA
from rmqctl.localjob import files as local_files
from rmqctl.localjob import job as local_job
from tests.analysis.conftest import (
    ARROW_SCHEMA,
    ROOT,
    at,
    corrupt_files,
    corrupt_pages,
    incident_rows,
    ms,
    row,
    series,
    write_snapshots,
)
from tests.analysis.engines import diagnose, run_both

# --------------------------------------------------------------------------------------------
# snapshot sets drawn at random: a few queues, each a walk of offsets, owners, pulls and gaps

# PySpark raises the interpreter's recursion limit to 3000 on its first pickling; raised before any example
# runs, Hypothesis sees no test change it (it warns, and warnings are errors here)
sys.setrecursionlimit(max(sys.getrecursionlimit(), 3000))

EVENTS = ("produce", "consume", "both", "idle", "rewind", "catch-up", "owner", "gap", "unsubscribe")


@st.composite
def queue_rows(draw: st.DrawFn, queue_id: int) -> list[dict[str, Any]]:
    group = draw(st.sampled_from(["g", "h"]))
    topic = draw(st.sampled_from(["T", "T", "%RETRY%g", "%DLQ%g"]))
    model = draw(st.sampled_from(["CLUSTERING", "CLUSTERING", "CLUSTERING", "BROADCASTING"]))
    start = draw(st.integers(0, 12))
    bo = draw(st.integers(0, 40))
    co = draw(st.integers(0, bo))
    pull: int | None = draw(st.sampled_from([None, co]))
    owner: str | None = draw(st.sampled_from(["c1", "c2", None]))
    subscribed: bool | None = draw(st.sampled_from([True, True, False, None]))
    rows = []
    for i in range(draw(st.integers(1, 26))):
        event = draw(st.sampled_from(EVENTS))
        if event in ("produce", "both"):
            bo += draw(st.integers(1, 12))
        if event in ("consume", "both"):
            co = min(bo, co + draw(st.integers(1, 12)))
        if event == "rewind":
            co = max(0, co - draw(st.integers(1, 8)))
        if event == "catch-up":
            co = bo
        if event == "owner":
            owner = draw(st.sampled_from(["c1", "c2", "c3", None]))
        if event == "unsubscribe":
            subscribed = draw(st.sampled_from([True, False, None]))
        if pull is not None:
            pull = max(pull, co) + draw(st.integers(0, 3))
        behind = dt.timedelta(milliseconds=draw(st.integers(0, 900_000)))
        consumed = draw(st.sampled_from([None, at(start + i) - behind]))
        newest = draw(st.sampled_from([None, at(start + i)]))
        if event == "gap":
            rows.append(row(start + i, None, None, group=group, topic=topic, queue_id=queue_id, owner=owner,
                            model=model, error=draw(st.sampled_from(["CONNECTION: a", "TIMEOUT: b"]))))
            continue
        rows.append(row(start + i, bo, co, group=group, topic=topic, queue_id=queue_id, owner=owner,
                        subscribed=subscribed, pull_offset=pull, model=model, last_consumed=consumed,
                        broker_last=newest))
    return rows


@st.composite
def snapshot_sets(draw: st.DrawFn) -> tuple[list[dict[str, Any]], int, int, Thresholds]:
    rows = [r for q in range(draw(st.integers(1, 4))) for r in draw(queue_rows(q))]
    since = at(draw(st.integers(0, 20))) + dt.timedelta(seconds=draw(st.sampled_from([0, 0, 15])))
    until = since + dt.timedelta(seconds=30 * draw(st.integers(0, 40)) + draw(st.sampled_from([0, 0, 10])))
    th = Thresholds(
        min_snapshots=draw(st.integers(1, 4)), allowed_lag=draw(st.integers(0, 3)),
        retry_allowed_lag=draw(st.integers(0, 12)), pop_commit_grace_ms=draw(st.sampled_from([30_000, 90_000])),
        min_deliveries=draw(st.integers(1, 4)),
        run_lookback_ms=draw(st.sampled_from([0, 120_000, 3_600_000])),
        consume_timeout_ms=draw(st.sampled_from([90_000, 900_000])))
    return rows, ms(since), ms(until), th


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(case=snapshot_sets())
def test_both_engines_give_every_drawn_queue_the_same_verdict(spark: SparkSession,
                                                             case: tuple[list[dict[str, Any]], int, int,
                                                                         Thresholds]) -> None:
    rows, since_ms, until_ms, th = case
    diagnose(spark.createDataFrame(rows, SNAPSHOT_SCHEMA), since_ms, until_ms, th)


# --------------------------------------------------------------------------------------------
# the benchmark's dataset: 10^4 queues (idle, stalled, orphaned, rotating owners, a broker missing rounds)


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location("gen_snapshots", ROOT / "bench" / "gen_snapshots.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_both_engines_agree_on_the_generated_dataset_queue_by_queue(spark: SparkSession, tmp_path: Path) -> None:
    generated = _generator()
    root = tmp_path / "snap"
    generated.generate(root, 200_000, 10, 100_000)  # 20 rounds of 10^4 queues, two files
    expected = json.loads((root / "expected.json").read_text())
    until = "2026-12-31T00:00:00Z"
    code, document = run_both(spark, [str(root), "--since", "2026-03-01T00:00:00Z", "--until", until, "-o", "json",
                                      "--out", str(tmp_path / "all.json")])
    assert code == 1
    # both engines' verdicts are the job's; the generator's own expectation holds for those it can say
    # (stalled and orphaned queues freeze before the recording starts: frozen since its first row)
    got = {f"{q['group']}|{q['topic']}|{q['broker']}|{q['queue_id']}": q["status"] for q in document["queues"]}
    assert got == expected
    # and over the default window (the last 10 minutes), the hour before it read for frozen runs
    run_both(spark, [str(root), "--window", "3m", "-o", "json", "--out", str(tmp_path / "last.json")])


# --------------------------------------------------------------------------------------------
# bad input: the same warnings, errors and exit codes


def _both(spark: SparkSession, tmp_path: Path, root: Path, *argv: str) -> tuple[int, list[str], dict[str, Any]]:
    warnings: list[str] = []
    code, document = run_both(spark, [str(root), "-o", "json", "--out", str(tmp_path / "r.json"), *argv],
                              on_warning=warnings.append)
    return code, warnings, document


def test_corrupt_truncated_and_half_decodable_files_are_named_alike(spark: SparkSession, tmp_path: Path) -> None:
    root = write_snapshots(tmp_path / "snap", incident_rows(), rows_per_file=30)
    corrupt, truncated = corrupt_files(root / "date=2026-03-01")
    pages = corrupt_pages(root / "date=2026-03-01")
    code, warnings, _ = _both(spark, tmp_path, root)
    assert (code, warnings) == (1, [
        f"skipped {corrupt}: not a whole Parquet file (corrupt or truncated)",
        f"skipped {pages}: corrupt pages: its footer counts 200 rows, 0 could be read",
        f"skipped {truncated}: not a whole Parquet file (corrupt or truncated)",
    ])


def test_nothing_readable_newer_schema_and_an_empty_window_are_the_same_errors(spark: SparkSession,
                                                                              tmp_path: Path) -> None:
    only_bad = tmp_path / "bad"
    corrupt_pages(only_bad / "date=2026-03-01")
    with pytest.raises(stuck.JobError, match="none of the 1 snapshot file"):
        _both(spark, tmp_path, only_bad)
    newer = write_snapshots(tmp_path / "newer", series([1, 2, 3], [1, 2, 3]), version=SCHEMA_VERSION + 1)
    refused = f"has snapshot schema version {SCHEMA_VERSION + 1}; this job knows up to {SCHEMA_VERSION}"
    with pytest.raises(stuck.JobError, match=refused):
        _both(spark, tmp_path, newer)
    root = write_snapshots(tmp_path / "snap", series([1, 2, 3], [1, 2, 3]))
    with pytest.raises(stuck.JobError, match="no snapshots under .* between"):
        _both(spark, tmp_path, root, "--since", "2026-03-01T13:00:00Z", "--until", "2026-03-01T14:00:00Z")


def test_an_empty_file_and_files_of_both_schema_versions(spark: SparkSession, tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = write_snapshots(tmp_path / "snap", incident_rows()[:40], name="v1")
    pq.write_table(pa.Table.from_pylist([], schema=ARROW_SCHEMA), root / "date=2026-03-01" / "empty.parquet")
    added = [pa.field("expression", pa.string()), pa.field("owner_expression_version", pa.int64())]
    schema = pa.schema([*ARROW_SCHEMA, *added], metadata={b"rmqctl.schema_version": b"2"})
    later = [{**r, "schema_version": 2, "expression": "*", "owner_expression_version": 3} for r in incident_rows()[40:]]
    pq.write_table(pa.Table.from_pylist(later, schema=schema), root / "date=2026-03-01" / "v2.parquet")
    code, warnings, document = _both(spark, tmp_path, root)
    assert (code, warnings, len(document["queues"])) == (1, [], 3)


def test_rows_without_required_values_and_partitions_out_of_the_window(spark: SparkSession, tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    old = series([100 + 10 * i for i in range(21)], [100] * 21)
    for r in old:
        r["ts"] -= dt.timedelta(days=1)
    root = write_snapshots(tmp_path / "snap", old + series([100] * 21, [100] * 21))
    (root / "date=2026-02-28" / "part-0-0.parquet").write_bytes(b"never opened: out of the window")
    nulls = pa.schema([f.with_nullable(True) for f in ARROW_SCHEMA])
    holes = [{**row(3, 5, 5), "cluster": None}, row(4, 5, 5)]
    pq.write_table(pa.Table.from_pylist(holes, schema=nulls), root / "date=2026-03-01" / "holes.parquet")
    code, warnings, document = _both(spark, tmp_path, root, "--since", "2026-03-01T12:00:00Z")
    assert code == 0
    assert warnings == [f"skipped {root / 'date=2026-03-01' / 'holes.parquet'}: not a snapshot file (1 rows without a "
                        "value in ts, cluster, group, topic, broker, queue_id, schema_version)"]
    assert [q["status"] for q in document["queues"]] == ["IDLE"]


def test_the_local_plan_refuses_what_the_job_refuses(tmp_path: Path) -> None:
    for argv, kwargs in [(["--window", "ten"], {"window": "ten"}),
                         (["--since", "yesterday"], {"since": "yesterday"}),
                         (["--since", "2026-03-02", "--until", "2026-03-01"],
                          {"since": "2026-03-02", "until": "2026-03-01"})]:
        with pytest.raises(stuck.JobError) as by_job:
            stuck.plan(stuck.build_parser().parse_args([str(tmp_path), *argv]))
        with pytest.raises(local_files.JobError) as by_local:
            local_job.plan(tmp_path, **kwargs)
        assert str(by_local.value) == str(by_job.value)
