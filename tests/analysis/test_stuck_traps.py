"""One fixture per known trap of stuck-queue detection, through the real job on a local[1] session.

Each fixture is a tiny Parquet dataset written with pyarrow (snapshots every 30 s from 12:00:00 UTC);
expected frames are written by hand.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.testing import assertDataFrameEqual

from analysis.rules import Thresholds
from analysis.schema import SNAPSHOT_SCHEMA
from analysis.transforms import summarize_groups
from tests.analysis.conftest import T0, at, ms, row, series, write_snapshots
from tests.analysis.engines import diagnose

SHORT = ("topic string, queue_id int, status string, rule string, snapshots int, lag_start long, lag_end long, "
         "owner string")
ROUNDS = 21  # 12:00:00 .. 12:10:00


def judge(spark: SparkSession, root: Path, th: Thresholds | None = None, minutes: int = 10) -> DataFrame:
    snapshots = spark.read.schema(SNAPSHOT_SCHEMA).parquet(str(root))
    return diagnose(snapshots, ms(T0), ms(T0 + dt.timedelta(minutes=minutes)), th)


def short(df: DataFrame) -> DataFrame:
    return df.select("topic", "queue_id", "status", "rule", "snapshots", "lag_start", "lag_end", "owner")


def test_idle_topic_is_never_stuck(spark: SparkSession, tmp_path: Path) -> None:
    # nothing produced for two days: the last consumed message is old, but there is nothing to consume
    old = T0 - dt.timedelta(days=2)
    rows = series([500] * ROUNDS, [500] * ROUNDS, last_consumed=old, broker_last=old)
    assertDataFrameEqual(
        short(judge(spark, write_snapshots(tmp_path, rows))),
        spark.createDataFrame([("T", 0, "IDLE", "no-new-messages", 21, 0, 0, "c1")], SHORT),
    )


def test_committer_that_commits_every_message_is_ok(spark: SparkSession, tmp_path: Path) -> None:
    # Burrow #237: a per-message committer looks stopped whenever the window spans only seconds
    broker = [1000 + 10 * i for i in range(ROUNDS)]
    consumer = [b - (i % 3) for i, b in enumerate(broker)]
    assertDataFrameEqual(
        short(judge(spark, write_snapshots(tmp_path, series(broker, consumer)))),
        spark.createDataFrame([("T", 0, "OK", "moving", 21, 0, 2, "c1")], SHORT),
    )


def test_owner_change_mid_window_blames_the_new_owner(spark: SparkSession, tmp_path: Path) -> None:
    rows = []
    for i in range(ROUNDS):
        broker = 1000 + 10 * i
        if i < 10:  # c-A consumes everything
            rows.append(row(i, broker, broker, owner="c-A", last_consumed=at(i), broker_last=at(i)))
        else:  # from 12:05 c-B holds the queue and never commits past 1090
            rows.append(row(i, broker, 1090, owner="c-B", last_consumed=at(9), broker_last=at(i)))
    verdicts = judge(spark, write_snapshots(tmp_path, rows)).drop("window_lag_start")
    expected = spark.createDataFrame([{
        "cluster": "c", "group": "g", "topic": "T", "broker": "broker-a", "queue_id": 0,
        "status": "STALLED", "rule": "frozen",
        "reason": "consumer offset frozen at 1090 since 12:05:00 (11 snapshots, 5m00s) while broker offset "
                  "rose 1100 -> 1200 under owner c-B (moved there at 12:05:00); lag 10 -> 110, 5m30s behind",
        "window_start": at(10), "window_end": at(20), "snapshots": 11, "window_snapshots": 21,
        "missing_snapshots": 0, "owner": "c-B", "owner_since": at(10), "previous_owner": "c-A",
        "broker_offset_start": 1100, "broker_offset_end": 1200, "consumer_offset_start": 1090,
        "consumer_offset_end": 1090, "lag_start": 10, "lag_end": 110, "lag_time_ms": 330_000,
        "frozen_since": at(10), "frozen_ms": 300_000, "frozen_start_seen": True,
    }], verdicts.schema)
    assertDataFrameEqual(verdicts, expected)


def test_orphans_after_scale_down_and_owner_not_subscribing(spark: SparkSession, tmp_path: Path) -> None:
    rows = []
    for i in range(ROUNDS):
        broker = 200 + 5 * i
        # queue 0: c2 left at 12:04; nobody took the queue over
        rows.append(row(i, broker, broker if i < 8 else 235, queue_id=0, owner="c2" if i < 8 else None))
        # queue 1: held by a client that does not subscribe the topic (topic overwrite): never pulled
        rows.append(row(i, broker, 0, queue_id=1, owner="c1", subscribed=False))
    verdicts = judge(spark, write_snapshots(tmp_path, rows))
    assertDataFrameEqual(
        short(verdicts),
        spark.createDataFrame([
            ("T", 0, "ORPHANED", "no-owner", 13, 5, 65, None),
            ("T", 1, "ORPHANED", "owner-not-subscribed", 21, 200, 300, "c1"),
        ], SHORT),
    )
    assertDataFrameEqual(
        verdicts.select("queue_id", "previous_owner", "reason"),
        spark.createDataFrame([
            (0, "c2", "no owner: consumer offset frozen at 235 since 12:04:00 (13 snapshots) while broker offset "
                      "rose 240 -> 300; lag 5 -> 65, unknown behind"),
            (1, None, "owner c1 does not subscribe T: consumer offset frozen at 0 since 12:00:00 or earlier "
                      "(21 snapshots) while broker offset rose 200 -> 300; lag 200 -> 300, unknown behind"),
        ], "queue_id int, previous_owner string, reason string"),
    )


def test_rewind_and_reset(spark: SparkSession, tmp_path: Path) -> None:
    # consumed up to 500, reset to 100 at 12:05:30, re-consuming since then (but not back to 500 yet)
    consumer = [100 + 40 * i for i in range(11)] + [100 + 20 * k for k in range(10)]
    rows = series([600 + i for i in range(ROUNDS)], consumer)
    verdicts = judge(spark, write_snapshots(tmp_path, rows))
    assertDataFrameEqual(
        verdicts.select("status", "rule", "snapshots", "consumer_offset_start", "consumer_offset_end", "reason"),
        spark.createDataFrame([(
            "REWOUND", "rewind", 21, 100, 280,
            "consumer offset went back from 500 to 100 at 12:05:30 and has not caught up (now 280, was 500)",
        )], "status string, rule string, snapshots int, consumer_offset_start long, consumer_offset_end long, "
            "reason string"),
    )


def test_broadcasting_groups_are_excluded(spark: SparkSession, tmp_path: Path) -> None:
    frozen = [100] * ROUNDS
    growing = [100 + 10 * i for i in range(ROUNDS)]
    rows = series(growing, frozen, group="bcast", model="BROADCASTING") + series(growing, growing, group="g")
    verdicts = judge(spark, write_snapshots(tmp_path, rows))
    assertDataFrameEqual(
        verdicts.select("group", "status"),
        spark.createDataFrame([("g", "OK")], "group string, status string"),
    )


def test_retry_queues_have_their_own_allowance_and_no_grace_period(spark: SparkSession, tmp_path: Path) -> None:
    retry = "%RETRY%g"
    rows = (
        # nothing new, 5 messages waiting: within the retry allowance (10), so idle
        series([105] * ROUNDS, [100] * ROUNDS, topic=retry, queue_id=0)
        # frozen since 12:07 with lag 10 -> 60; behind the allowance since 12:08: stalled like any
        # queue, however recent the start (what waits in %RETRY% is due: the delay came before)
        + series([100 + 10 * i for i in range(ROUNDS)], [100 + 10 * min(i, 14) for i in range(ROUNDS)],
                 topic=retry, queue_id=1)
        # frozen for the whole window with a growing lag: stalled even for a retry queue
        + series([100 + 5 * i for i in range(ROUNDS)], [100] * ROUNDS, topic=retry, queue_id=2)
        # the first shape on a normal topic: 5 untouched messages are stuck
        + series([105] * ROUNDS, [100] * ROUNDS, topic="T", queue_id=0)
    )
    assertDataFrameEqual(
        short(judge(spark, write_snapshots(tmp_path, rows))),
        spark.createDataFrame([
            (retry, 0, "IDLE", "no-new-messages", 21, 5, 5, "c1"),
            (retry, 1, "STALLED", "frozen", 5, 20, 60, "c1"),
            (retry, 2, "STALLED", "frozen", 18, 15, 100, "c1"),
            ("T", 0, "STALLED", "frozen", 21, 5, 5, "c1"),
        ], SHORT),
    )


def test_a_committed_offset_held_while_pulls_go_on_is_stalled_and_says_what_it_cannot_know(
        spark: SparkSession, tmp_path: Path) -> None:
    # the committed offset is the oldest unfinished message: pulls go on while it is held, whether
    # one message is slow or the listener hangs (the offsets cannot tell which, and nothing says it
    # will heal). queue 0 is pinned since 12:12:30 and behind since 12:13: STALLED, naming both causes;
    # queue 1 has been pinned for 20 min: past consumeTimeout, STALLED as frozen.
    rows = []
    for i in range(41):  # 12:00 .. 12:20
        broker = 1000 + 10 * i
        pinned_0 = broker if i < 25 else 1250
        rows.append(row(i, broker, pinned_0, queue_id=0, pull_offset=broker - 2))
        rows.append(row(i, broker, 1000, queue_id=1, pull_offset=broker - 2))
    verdicts = judge(spark, write_snapshots(tmp_path, rows), minutes=20)
    assertDataFrameEqual(
        verdicts.select("queue_id", "status", "rule", "snapshots", "lag_end"),
        spark.createDataFrame([(0, "STALLED", "offset-pinned", 15, 150), (1, "STALLED", "frozen", 40, 400)],
                              "queue_id int, status string, rule string, snapshots int, lag_end long"),
    )
    reason = verdicts.where("queue_id = 0").select("reason").first()
    assert reason is not None
    assert reason[0] == ("committed offset held at 1250 since 12:13:00 (15 snapshots, 7m00s) while its owner c1 "
                         "keeps pulling (pull offset 1258 -> 1398); lag 150: one unfinished message or a hung "
                         "listener, the offsets cannot tell which (a concurrent consumer sends a message back "
                         "after consumeTimeout 15m00s)")


def test_a_run_frozen_before_the_window_is_measured_from_its_real_start(
        spark: SparkSession, tmp_path: Path) -> None:
    # 12:00 .. 12:30, judged over the last 10 minutes (12:20 .. 12:30). Queue 0 is consumed until 12:05 and
    # frozen from 12:05:30 while its owner keeps pulling: 24m30s frozen, past consumeTimeout, although only
    # 10 minutes of it lie in the window (measured from the window's start it would pass for 10 minutes of
    # one slow message). Queue 1 is frozen at every snapshot ever written: begun at 12:00 or earlier.
    rows = []
    for i in range(61):
        broker = 1000 + 10 * i
        rows.append(row(i, broker, broker if i <= 10 else 1100, queue_id=0, pull_offset=broker - 2))
        rows.append(row(i, broker, 990, queue_id=1))
    root = write_snapshots(tmp_path, rows)
    snapshots = spark.read.schema(SNAPSHOT_SCHEMA).parquet(str(root))
    columns = ("queue_id", "status", "rule", "window_start", "snapshots", "window_snapshots", "lag_start",
               "frozen_since", "frozen_ms", "frozen_start_seen", "reason")
    schema = ("queue_id int, status string, rule string, window_start timestamp, snapshots int, "
              "window_snapshots int, lag_start long, frozen_since timestamp, frozen_ms long, "
              "frozen_start_seen boolean, reason string")
    assertDataFrameEqual(
        diagnose(snapshots, ms(at(40)), ms(at(60))).select(*columns),
        spark.createDataFrame([
            (0, "STALLED", "frozen", at(11), 50, 21, 10, at(11), 1_470_000, True,
             "consumer offset frozen at 1100 since 12:05:30 (50 snapshots, 24m30s) while broker offset rose "
             "1110 -> 1600 under owner c1; lag 10 -> 500, unknown behind"),
            (1, "STALLED", "frozen", at(0), 61, 21, 10, at(0), 1_800_000, False,
             "consumer offset frozen at 990 since 12:00:00 or earlier (61 snapshots, at least 30m00s) while "
             "broker offset rose 1000 -> 1600 under owner c1; lag 10 -> 610, unknown behind"),
        ], schema),
    )
    # read back only 5 minutes: queue 0 was frozen already at the first row read (12:15), so its run is said
    # to have begun then or earlier and to have lasted at least 15 minutes, never just 15 minutes
    short_lookback = Thresholds(run_lookback_ms=5 * 60_000)
    pinned = diagnose(snapshots, ms(at(40)), ms(at(60)), short_lookback).where("queue_id = 0").select(*columns)
    assertDataFrameEqual(pinned, spark.createDataFrame([
        (0, "STALLED", "offset-pinned", at(30), 31, 21, 200, at(30), 900_000, False,
         "committed offset held at 1100 since 12:15:00 or earlier (31 snapshots, at least 15m00s) while its "
         "owner c1 keeps pulling (pull offset 1298 -> 1598); lag 500: one unfinished message or a hung listener, "
         "the offsets cannot tell which (a concurrent consumer sends a message back after consumeTimeout 15m00s)"),
    ], schema))


def test_gap_where_a_broker_was_missing(spark: SparkSession, tmp_path: Path) -> None:
    # broker-b did not answer at 12:04:00 .. 12:05:00: those rounds are gaps, never zero offsets
    # (read as zeros they would look like a rewind to 0 and a jump back)
    broker = [100 + 10 * i for i in range(ROUNDS)]
    gappy: list[int | None] = [None if 8 <= i <= 10 else b for i, b in enumerate(broker)]
    rows = (series(gappy, gappy, broker="broker-b")
            + series([None] * ROUNDS, [None] * ROUNDS, broker="broker-c"))
    verdicts = judge(spark, write_snapshots(tmp_path, rows))
    assertDataFrameEqual(
        verdicts.select("broker", "status", "rule", "window_snapshots", "missing_snapshots", "reason"),
        spark.createDataFrame([
            ("broker-b", "OK", "caught-up", 18, 3,
             "caught up: lag 0 <= 0 at the last snapshot; consumer offset 100 -> 300"),
            ("broker-c", "INSUFFICIENT_DATA", "min-snapshots", 0, 21,
             "no answered snapshot in the window: 21 missing (last error: CONNECTION: broker unreachable)"),
        ], "broker string, status string, rule string, window_snapshots int, missing_snapshots int, "
           "reason string"),
    )


def test_dlq_is_reported_not_judged_and_short_histories_are_insufficient(
    spark: SparkSession, tmp_path: Path,
) -> None:
    rows: list[dict[str, Any]] = (
        series([10 + i for i in range(ROUNDS)], [0] * ROUNDS, topic="%DLQ%g")
        + series([110], [100], topic="T", start=20)
        # owner changed at the last round: one look under the new owner, too little history
        + series([100 + 10 * i for i in range(20)], [100] * 20, topic="U", owner="c-A")
        + series([300], [100], topic="U", owner="c-B", start=20)
    )
    assertDataFrameEqual(
        short(judge(spark, write_snapshots(tmp_path, rows))),
        spark.createDataFrame([
            ("%DLQ%g", 0, "DLQ", "dlq", 21, 10, 30, "c1"),
            ("T", 0, "INSUFFICIENT_DATA", "min-snapshots", 1, 10, 10, "c1"),
            ("U", 0, "INSUFFICIENT_DATA", "owner-changed", 1, 200, 200, "c-B"),
        ], SHORT),
    )


def test_group_summary(spark: SparkSession, tmp_path: Path) -> None:
    growing = [100 + 10 * i for i in range(ROUNDS)]
    rows = (
        series(growing, growing, group="g1", queue_id=0)
        + series(growing, [100] * ROUNDS, group="g1", queue_id=1)
        + series(growing, [100] * ROUNDS, group="g1", queue_id=2, owner=None)
        + series([10 + i for i in range(ROUNDS)], [0] * ROUNDS, group="g1", topic="%DLQ%g1")
        + series([50] * ROUNDS, [50] * ROUNDS, group="g2")
    )
    groups = summarize_groups(judge(spark, write_snapshots(tmp_path, rows)))
    assertDataFrameEqual(
        groups,
        spark.createDataFrame([
            ("c", "g1", "STALLED", 4, 2, 0, 400, "growing", at(0), at(20)),
            ("c", "g2", "IDLE", 1, 0, 0, 0, "flat", at(0), at(20)),
        ], groups.schema),
    )
