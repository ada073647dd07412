"""The rows of a queue sorted on one 64-bit key: the queue number in the high bits, the time in the low ones.

Spark's sort compares a 64-bit prefix of its first column; with one long column the prefix is the whole key and
the rows are put in order by radix, comparing none of them. The window per queue must then see the same rows in
the same order as with the two-column order, and the job must fall back to it where the numbers do not fit."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from pyspark.sql import DataFrame, SparkSession
from pyspark.testing import assertDataFrameEqual

from analysis.files import check_files, list_snapshot_files
from analysis.rules import Thresholds
from analysis.schema import SNAPSHOT_SCHEMA
from analysis.stuck import sort_key_for
from analysis.transforms import SortKey, diagnose
from tests.analysis.conftest import ARROW_SCHEMA, T0, at, incident_rows, ms, pa, pq, row, series, write_snapshots
from tests.analysis.test_engines import snapshot_sets

UNTIL = T0 + dt.timedelta(minutes=10)


def _plan(df: DataFrame) -> str:
    return str(df._jdf.queryExecution().executedPlan().toString())


def _key(rows: int = 1000, whole_ms: bool = True) -> SortKey:
    key = SortKey.fit(rows, ms(T0) - Thresholds().run_lookback_ms, ms(UNTIL), whole_ms)
    assert key is not None
    return key


def test_one_long_key_is_sorted_alone_and_the_window_and_aggregate_reuse_its_order(spark: SparkSession) -> None:
    snapshots = spark.createDataFrame(incident_rows(), SNAPSHOT_SCHEMA)
    verdicts = diagnose(snapshots, ms(T0), ms(UNTIL), Thresholds(), _key())
    plan = _plan(verdicts)
    # the sort on the one key (a radix sort), under the window's own sort, which then finds its rows in order
    single = re.search(r"Sort \[sort_key#\d+L ASC NULLS FIRST\], false", plan)
    window_sort = re.search(r"Sort \[queue_no#\d+ ASC NULLS FIRST, sort_key#\d+L ASC NULLS FIRST\], false", plan)
    assert single is not None and window_sort is not None and window_sort.start() < single.start(), plan
    assert not re.search(r"Sort \[queue_no#\d+ ASC NULLS FIRST, ts#", plan), plan
    # one shuffle of the rows by queue number, none between the window and the aggregate per queue
    assert len(re.findall(r"Exchange hashpartitioning\(queue_no#\d+, \d+\)", plan)) == 1, plan
    above_window = r"SortAggregate\(key=\[queue_no#\d+\][^\n]*\n([\s:]*\+- Project[^\n]*\n)*[\s:]*\+- Window"
    assert re.search(above_window, plan), plan
    assert [(r["queue_id"], r["status"]) for r in verdicts.orderBy("queue_id").collect()] == [
        (0, "OK"), (1, "STALLED"), (2, "ORPHANED")]


def test_the_packed_key_gives_every_queue_the_verdict_of_the_two_column_order(spark: SparkSession) -> None:
    # queues that change owner, rewind, catch up and freeze, some rows before the window (a frozen run's start)
    rows = [*incident_rows(),
            *series([10, 20, 30, 40, 50, 60, 70, 80], [10, 15, 15, 15, 12, 20, 20, 20], start=-4, topic="U",
                    owner="c1"),
            *series([5, 9, 9, 9, 9, 9, 9], [5, 5, 5, 5, 5, 5, 5], start=10, topic="V", queue_id=3),
            *[row(i, 100 + i, 90, topic="W", owner="c1" if i % 3 else "c2") for i in range(0, 20)]]
    snapshots = spark.createDataFrame(rows, SNAPSHOT_SCHEMA)
    two_columns = diagnose(snapshots, ms(T0), ms(UNTIL), Thresholds())
    assert "sort_key" not in _plan(two_columns)
    for key in (_key(), _key(whole_ms=False)):
        assertDataFrameEqual(diagnose(snapshots, ms(T0), ms(UNTIL), Thresholds(), key), two_columns)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(case=snapshot_sets())
def test_drawn_snapshot_sets_get_the_same_verdicts_on_the_packed_key(
        spark: SparkSession, case: tuple[list[dict[str, Any]], int, int, Thresholds]) -> None:
    rows, since_ms, until_ms, th = case
    snapshots = spark.createDataFrame(rows, SNAPSHOT_SCHEMA)
    key = SortKey.fit(len(rows), since_ms - th.run_lookback_ms, until_ms, True)
    assert key is not None
    assertDataFrameEqual(diagnose(snapshots, since_ms, until_ms, th, key), diagnose(snapshots, since_ms, until_ms, th))


def test_times_apart_by_less_than_a_millisecond_keep_their_order(spark: SparkSession) -> None:
    # the consumer offset moved back 0.4 ms after a snapshot and on again 0.3 ms later: only microseconds tell
    # which came first (REWOUND, not OK)
    rows = [row(i, 100 + 10 * i, 100 + 10 * i) for i in range(10)]
    late = at(10)
    rows += [{**row(10, 300, 250), "ts": late + dt.timedelta(microseconds=700)},
             {**row(10, 300, 200), "ts": late + dt.timedelta(microseconds=400)},
             {**row(10, 300, 260), "ts": late}]
    snapshots = spark.createDataFrame(rows, SNAPSHOT_SCHEMA)
    expected = diagnose(snapshots, ms(T0), ms(UNTIL), Thresholds())
    assert [r["status"] for r in expected.collect()] == ["REWOUND"]
    assertDataFrameEqual(diagnose(snapshots, ms(T0), ms(UNTIL), Thresholds(), _key(whole_ms=False)), expected)


def test_the_key_counts_the_bits_it_needs_and_gives_up_beyond_63() -> None:
    day = 86_400_000
    ms_key = SortKey.fit(10_000, ms(T0), ms(T0) + day, True)
    assert ms_key == SortKey(ms(T0), 1000, day.bit_length())
    us_key = SortKey.fit(10_000, ms(T0), ms(T0) + day, False)
    # a time of the last millisecond may be 999 microseconds later
    assert us_key == SortKey(ms(T0) * 1000, 1, (day * 1000 + 999).bit_length())
    # 2^36 - 1 milliseconds need 36 bits: 27 bits of queues fit beside them, 28 do not
    assert SortKey.fit(2**27 - 1, 0, 2**36 - 1, True) == SortKey(0, 1000, 36)
    assert SortKey.fit(2**27, 0, 2**36 - 1, True) is None
    assert SortKey.fit(10, 5, 4, True) is None


def test_the_job_takes_milliseconds_only_when_every_file_holds_whole_ones(spark: SparkSession, tmp_path: Path) -> None:
    write_snapshots(tmp_path / "ms", incident_rows())
    checked = check_files(spark, list_snapshot_files(tmp_path / "ms", None, None), lambda m: None)
    key = sort_key_for(checked, ms(T0) - 3_600_000, ms(UNTIL))
    # 84 rows (7 bits of queues at most), 12:00:00 to 12:10:00 in milliseconds
    assert key == SortKey(ms(T0), 1000, 600_000 .bit_length())
    # a file with a time between two milliseconds: microseconds; no file looked at: the two-column order
    odd = [{**r, "ts": r["ts"] + dt.timedelta(microseconds=1)} if k == 5 else r for k, r in enumerate(incident_rows())]
    schema = ARROW_SCHEMA.set(0, pa.field("ts", pa.timestamp("us", tz="UTC"))).with_metadata(
        {b"rmqctl.schema_version": b"1"})
    (tmp_path / "us" / "date=2026-03-01").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(odd, schema=schema), tmp_path / "us" / "date=2026-03-01" / "us.parquet")
    checked = check_files(spark, list_snapshot_files(tmp_path / "us", None, None), lambda m: None)
    key = sort_key_for(checked, ms(T0) - 3_600_000, ms(UNTIL))
    assert key is not None and key.unit_us == 1 and key.base == ms(T0) * 1000
    assert sort_key_for(list_snapshot_files(tmp_path / "us", None, None), ms(T0), ms(UNTIL)) is None
