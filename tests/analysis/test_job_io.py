"""The job's reading and writing on the shared local[1] session: file checks, the window, formats, exit codes.

Drives ``analysis.stuck.plan`` + ``run`` (what ``main`` does between building and stopping its session).
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from analysis import stuck
from tests.analysis.conftest import (
    INCIDENT_VERDICTS,
    corrupt_files,
    corrupt_pages,
    incident_rows,
    row,
    series,
    verdict_tuples,
    write_snapshots,
)


def _plan(*argv: str) -> stuck.Plan:
    return stuck.plan(stuck.build_parser().parse_args(list(argv)))


def test_corrupt_and_truncated_files_are_skipped_and_named(spark: SparkSession, tmp_path: Path) -> None:
    root = write_snapshots(tmp_path / "snap", incident_rows(), rows_per_file=30)
    corrupt, truncated = corrupt_files(root / "date=2026-03-01")
    warnings: list[str] = []
    out = tmp_path / "result.json"
    job = _plan(str(root), "-o", "json", "--out", str(out))
    # 84 rows in files of 30, and the two bad ones; the .tmp file is not even looked at
    assert [f.path.name for f in job.files] == [
        "corrupt.parquet", "part-0-0.parquet", "part-0-1.parquet", "part-0-2.parquet", "truncated.parquet"]
    assert stuck.run(spark, job, warnings.append) == 1
    assert warnings == [
        f"skipped {corrupt}: not a whole Parquet file (corrupt or truncated)",
        f"skipped {truncated}: not a whole Parquet file (corrupt or truncated)",
    ]
    document = json.loads(out.read_text())
    assert verdict_tuples(document["queues"]) == INCIDENT_VERDICTS
    assert document["groups"] == [{
        "cluster": "c", "group": "orders", "status": "STALLED", "queues": 3, "stuck_queues": 2,
        "total_lag_start": 0, "total_lag_end": 360, "lag_trend": "growing",
        "window_start": "2026-03-01T12:00:00.000Z", "window_start_ts": 1772366400000,
        "window_end": "2026-03-01T12:10:00.000Z", "window_end_ts": 1772367000000,
    }]
    assert (document["since"], document["until"]) == ("2026-03-01T12:00:00.000Z", "2026-03-01T12:10:00.000Z")


def test_window_is_pushed_down_to_the_date_partitions(spark: SparkSession, tmp_path: Path) -> None:
    # a day-old partition holding a stalled queue, and today's healthy one: only today is read
    old = series([100 + 10 * i for i in range(21)], [100] * 21)
    for r in old:
        r["ts"] -= dt.timedelta(days=1)
    root = write_snapshots(tmp_path / "snap", old + series([100] * 21, [100] * 21))
    (root / "date=2026-02-28" / "part-0-0.parquet").write_bytes(b"unreadable, but never opened")
    warnings: list[str] = []
    out = tmp_path / "r.json"
    job = _plan(str(root), "--since", "2026-03-01T12:00:00Z", "-o", "json", "--out", str(out))
    assert [f.path.parent.name for f in job.files] == ["date=2026-03-01"]
    assert stuck.run(spark, job, warnings.append) == 0
    assert warnings == []
    assert [q["status"] for q in json.loads(out.read_text())["queues"]] == ["IDLE"]


def test_a_file_with_corrupt_pages_is_skipped_and_named(spark: SparkSession, tmp_path: Path) -> None:
    # header and footer whole, a data page not: Spark would read it as a file of no rows (or of fewer
    # rows), silently; alone in its directory it left "no snapshots under ..." and nothing else
    root = tmp_path / "snap"
    bad = corrupt_pages(root / "date=2026-03-01")
    warnings: list[str] = []
    with pytest.raises(stuck.JobError) as caught:
        stuck.run(spark, _plan(str(root), "-o", "json", "--out", str(tmp_path / "r.json")), warnings.append)
    assert warnings == [f"skipped {bad}: corrupt pages: its footer counts 200 rows, 0 could be read"]
    assert str(caught.value) == (f"none of the 1 snapshot file(s) under {root} for the requested window could be "
                                 "read (each is named above with its reason)")
    # beside whole files it is left out by name, and the others are judged
    write_snapshots(root, series([1, 2, 3], [1, 2, 3]))
    warnings.clear()
    assert stuck.run(spark, _plan(str(root), "-o", "json", "--out", str(tmp_path / "r.json")), warnings.append) == 0
    assert warnings == [f"skipped {bad}: corrupt pages: its footer counts 200 rows, 0 could be read"]


def test_schema_newer_than_the_job_is_one_line_error(spark: SparkSession, tmp_path: Path) -> None:
    root = write_snapshots(tmp_path, series([1, 2, 3], [1, 2, 3]), version=4)
    with pytest.raises(stuck.JobError) as caught:
        stuck.run(spark, _plan(str(root)))
    assert str(caught.value) == (
        f"{root}/date=2026-03-01/part-0-0.parquet has snapshot schema version 4; this job knows up to 3"
        " (upgrade rmqctl)")


def test_no_snapshots_in_the_window(spark: SparkSession, tmp_path: Path) -> None:
    with pytest.raises(stuck.JobError, match="no snapshot files under"):
        _plan(str(tmp_path))
    root = write_snapshots(tmp_path / "snap", series([1, 2, 3], [1, 2, 3]))
    job = _plan(str(root), "--since", "2026-03-01T13:00:00Z", "--until", "2026-03-01T14:00:00Z")
    with pytest.raises(stuck.JobError, match="no snapshots under .* between 2026-03-01T13:00:00.000Z and"):
        stuck.run(spark, job)


@pytest.mark.parametrize("argv, message", [
    (["--window", "ten"], "bad duration 'ten': use e.g. 30s, 10m, 2h, 1d"),
    (["--since", "yesterday"], "bad time 'yesterday': use ISO-8601 (2026-01-31T12:00:00Z) or epoch milliseconds"),
    (["--since", "2026-03-02", "--until", "2026-03-01"], "--since is after --until"),
    (["-o", "parquet"], "-o parquet needs --out DIR"),
])
def test_bad_options(tmp_path: Path, argv: list[str], message: str) -> None:
    with pytest.raises(stuck.JobError) as caught:
        _plan(str(tmp_path), *argv)
    assert str(caught.value) == message


def test_jsonl_csv_and_parquet_outputs(spark: SparkSession, tmp_path: Path) -> None:
    root = write_snapshots(tmp_path / "snap", [row(i, 100 + i, 100, owner=None) for i in range(5)])
    jsonl, csv_out, parquet_out = tmp_path / "r.jsonl", tmp_path / "r.csv", tmp_path / "pq"
    assert stuck.run(spark, _plan(str(root), "-o", "jsonl", "--out", str(jsonl))) == 1
    (record,) = [json.loads(line) for line in jsonl.read_text().splitlines()]
    assert (record["status"], record["rule"], record["owner"], record["lag_end"]) == ("ORPHANED", "no-owner", None, 4)
    assert stuck.run(spark, _plan(str(root), "-o", "csv", "--out", str(csv_out))) == 1
    header, line = csv_out.read_text().splitlines()
    assert header.startswith("cluster,group,topic,broker,queue_id,status,rule,reason,window_start,window_start_ts,")
    assert ",ORPHANED,no-owner," in line
    assert stuck.run(spark, _plan(str(root), "-o", "parquet", "--out", str(parquet_out))) == 1
    back = spark.read.parquet(str(parquet_out / "queues")).select("status", "window_end_ts").collect()
    assert [tuple(r) for r in back] == [("ORPHANED", 1772366520000)]


def test_files_of_schema_versions_1_and_2_are_read_together(spark: SparkSession, tmp_path: Path) -> None:
    # the same incident, its first rounds in files of version 1 and the rest in version 2 (the
    # expression columns added at the end): the verdicts are those of the incident
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tests.analysis.conftest import ARROW_SCHEMA

    rows = incident_rows()
    cut = len(rows) // 2
    root = write_snapshots(tmp_path / "snap", rows[:cut], name="v1")
    added = [("expression", pa.string()), ("expression_type", pa.string()), ("expression_version", pa.int64()),
             ("owner_expression", pa.string()), ("owner_expression_type", pa.string()),
             ("owner_expression_version", pa.int64())]
    schema = pa.schema([*ARROW_SCHEMA, *[pa.field(n, t) for n, t in added]],
                       metadata={b"rmqctl.schema_version": b"2"})
    later = [{**r, "schema_version": 2, "expression": "*", "expression_type": "TAG", "expression_version": 1,
              "owner_expression": "*", "owner_expression_type": "TAG", "owner_expression_version": 1}
             for r in rows[cut:]]
    pq.write_table(pa.Table.from_pylist(later, schema=schema), root / "date=2026-03-01" / "v2-0.parquet")
    out = tmp_path / "result.json"
    job = _plan(str(root), "-o", "json", "--out", str(out))
    assert sorted(f.path.name for f in job.files) == ["v1-0.parquet", "v2-0.parquet"]
    assert stuck.run(spark, job, lambda _: None) == 1
    assert verdict_tuples(json.loads(out.read_text())["queues"]) == INCIDENT_VERDICTS


def test_a_pop_group_recorded_across_schema_versions_1_and_3_is_judged_by_its_retry_growth(
        spark: SparkSession, tmp_path: Path) -> None:
    # a POP group's retry queue received 6 copies over four rounds: the first two in a file of version 1
    # (no pop column), the last two in one of version 3 that says the group consumes by POP and that the
    # copies read back were delivered up to 4 times; beside it, a queue nobody holds, frozen, recorded only
    # in version 1, is judged by ownership as before
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tests.analysis.conftest import ARROW_SCHEMA

    retry = [row(i, 10 + 2 * i, 10 + 2 * i, group="gp", topic="%RETRY%gp_T", owner=None) for i in range(4)]
    old = [row(i, 110 + 10 * i, 100, group="g1", owner=None) for i in range(4)]
    root = write_snapshots(tmp_path / "snap", [*retry[:2], *old], name="v1")
    added = [("expression", pa.string()), ("expression_type", pa.string()), ("expression_version", pa.int64()),
             ("owner_expression", pa.string()), ("owner_expression_type", pa.string()),
             ("owner_expression_version", pa.int64()), ("pop", pa.bool_()), ("max_deliveries", pa.int32()),
             ("retry_deliveries", pa.int32())]
    schema = pa.schema([*ARROW_SCHEMA, *[pa.field(n, t) for n, t in added]],
                       metadata={b"rmqctl.schema_version": b"3"})
    later = [{**r, "schema_version": 3, "pop": True, "max_deliveries": 5, "retry_deliveries": 4} for r in retry[2:]]
    pq.write_table(pa.Table.from_pylist(later, schema=schema), root / "date=2026-03-01" / "v3-0.parquet")
    out = tmp_path / "result.json"
    job = _plan(str(root), "-o", "json", "--out", str(out))
    assert sorted(f.path.name for f in job.files) == ["v1-0.parquet", "v3-0.parquet"]
    assert stuck.run(spark, job, lambda _: None) == 1
    queues = {q["group"]: (q["status"], q["rule"], q["reason"]) for q in json.loads(out.read_text())["queues"]}
    assert queues == {
        "gp": ("REDELIVERING", "retry-growing",
               "6 copies written to this POP retry queue in the window (broker offset 10 -> 16): messages failed "
               "or not ACKed come back again and again; copies read back were delivered up to 4 times (3 or more "
               "is redelivery)"),
        "g1": ("ORPHANED", "no-owner",
               "no owner: consumer offset frozen at 100 since 12:00:00 or earlier (4 snapshots) while broker "
               "offset rose 110 -> 140; lag 10 -> 40, unknown behind"),
    }
