"""The stuck-queue job over hand-built snapshot histories, one per status and per trap.

Every history has six samples a minute apart (T0 … T0+5 min) and is judged over a five-minute
window, so the whole history is in the window unless a test says otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType
from pyspark.testing import assertDataFrameEqual

from analysis.stuck_queues import (
    GROUP_STATUS_SCHEMA,
    QUEUE_STATUS_SCHEMA,
    SNAPSHOT_SCHEMA,
    Thresholds,
    evaluate,
    summarize_groups,
)

T0 = 1_767_225_600_000
STEP = 60_000
WINDOW = 5 * STEP
END = T0 + WINDOW
TH = Thresholds(window_ms=WINDOW, min_samples=3, min_coverage=0.5, orphan_samples=3)
C1, C2 = "10.0.0.1@c1", "10.0.0.2@c2"
Point = tuple[Any, ...]  # (broker_offset, consumer_offset[, owner])


def series(topic: str, qid: int, points: Sequence[Point], *, group: str = "g",
           owner: str | None = C1, first: int = 0) -> list[tuple[Any, ...]]:
    """Snapshot rows of one queue; sample ``first + i`` is taken at ``T0 + (first + i) min``."""
    rows = []
    for i, (bo, co, *rest) in enumerate(points):
        who = rest[0] if rest else owner
        rows.append((T0 + (first + i) * STEP, "c", group, topic, "broker-a", qid, bo, co,
                     None, None, who))
    return rows


def climb(start: int, step: int, n: int = 6) -> list[int]:
    return [start + step * i for i in range(n)]


def pairs(bos: Sequence[int], cos: Sequence[int], owners: Sequence[str | None] | None = None
          ) -> list[Point]:
    if owners is None:
        return list(zip(bos, cos))
    return list(zip(bos, cos, owners))


def history() -> list[tuple[Any, ...]]:
    rows: list[tuple[Any, ...]] = []
    add = rows.extend
    # q0 consuming; one older sample outside the window must not count
    add(series("TopicTest", 0, [(90, 0)], first=-1))
    add(series("TopicTest", 0, pairs(climb(100, 10), [95, 108, 115, 128, 139, 149])))
    # q1 stalled: offset frozen while messages arrive
    add(series("TopicTest", 1, pairs(climb(100, 10), [90] * 6)))
    # q2 idle with a backlog: nothing arrives, nothing is consumed -> not stuck
    add(series("TopicTest", 2, pairs([100] * 6, [90] * 6)))
    # q3 falling behind: consuming, but lag only grows
    add(series("TopicTest", 3, pairs(climb(100, 30), climb(90, 10))))
    # q4 offset reset backwards that never caught up
    add(series("TopicTest", 4, pairs([200] * 6, [150, 160, 170, 20, 30, 40])))
    # q5 a rewind that recovered
    add(series("TopicTest", 5, pairs([200] * 6, [150, 160, 20, 100, 170, 190])))
    # q6 caught up at the end
    add(series("TopicTest", 6, pairs(climb(100, 10), climb(100, 10))))
    # q7 lost its owner for four samples while the rest of the group is held
    add(series("TopicTest", 7, pairs([60] * 6, [50] * 6, [C1, C1, None, None, None, None])))
    # q8 two samples only; q9 three samples over 40% of the window
    add(series("TopicTest", 8, pairs([100] * 2, [100] * 2), first=4))
    add(series("TopicTest", 9, pairs([100] * 3, [100] * 3), first=3))
    # q10 caught up at the window start, then nothing consumed while messages kept arriving
    add(series("TopicTest", 10, pairs(climb(100, 10), [100] * 6)))
    # q11 messages arrived just before the last sample: a backlog too young to judge
    add(series("TopicTest", 11, pairs([100] * 5 + [110], [100] * 6)))
    # retry queue growing like q3: bursty by design, not judged LAGGING
    add(series("%RETRY%g", 0, pairs(climb(100, 30), climb(90, 10))))
    # dead-letter queue: never consumed by design, dropped
    add(series("%DLQ%g", 0, pairs(climb(100, 10), [0] * 6)))
    # every consumer of 'gone' left
    add(series("Orders", 0, pairs([100] * 6, [80] * 6), group="gone", owner=None))
    add(series("Orders", 1, pairs([50] * 6, [45] * 6), group="gone", owner=None))
    # owner changes split the window
    add(series("Moves", 0, pairs(climb(100, 10), [0, 10, 20, 20, 20, 20],
                                 [C1, C1, C2, C2, C2, C2]), group="moves"))
    add(series("Moves", 1, pairs(climb(100, 10), [50] * 6, [C1, C1, C1, C2, C2, C2]),
               group="moves"))
    add(series("Moves", 2, pairs(climb(100, 10), [0, 10, 20, 30, 40, 40],
                                 [C1, C1, C1, C1, C2, C2]), group="moves"))
    add(series("Moves", 3, pairs([100, 110, 120, 140, 170, 200], [50, 80, 110, 120, 130, 140],
                                 [C1, C1, C1, C2, C2, C2]), group="moves"))
    # whole groups: healthy, lagging only, too new to judge
    add(series("Calm", 0, pairs(climb(100, 10), climb(100, 10)), group="calm"))
    add(series("Slow", 0, pairs(climb(100, 30), climb(90, 10)), group="slow"))
    add(series("Fresh", 0, pairs([10, 10], [5, 5]), group="fresh", first=4))
    return rows


@pytest.fixture(scope="module")
def verdicts(spark: SparkSession) -> DataFrame:
    snapshots = spark.createDataFrame(history(), SNAPSHOT_SCHEMA)
    return evaluate(snapshots, END, TH).cache()


def frame(spark: SparkSession, rows: list[tuple[Any, ...]], columns: Sequence[str],
          schema: StructType = QUEUE_STATUS_SCHEMA) -> DataFrame:
    return spark.createDataFrame(rows, StructType([schema[c] for c in columns]))


KEYS = ("group", "topic", "queue_id", "status", "reason")


def test_full_rows_for_a_stalled_and_a_healthy_queue(spark: SparkSession, verdicts: DataFrame
                                                     ) -> None:
    actual = verdicts.filter("`group` = 'g' AND topic = 'TopicTest' AND queue_id IN (0, 1)")
    expected = spark.createDataFrame([
        ("c", "g", "TopicTest", "broker-a", 0, "normal", "OK",
         "consuming: consumer offset 95 -> 149, lag 1",
         T0, END, 6, 1.0, T0, END, 95, 149, 100, 150, 1, C1, 0, T0, END, 0),
        ("c", "g", "TopicTest", "broker-a", 1, "normal", "STALLED",
         f"consumer offset 90 unchanged for 300 s under {C1} while broker offset rose "
         "100 -> 150; lag 60",
         T0, END, 6, 1.0, T0, END, 90, 90, 100, 150, 60, C1, 0, T0, None, 300_000),
    ], QUEUE_STATUS_SCHEMA)
    assertDataFrameEqual(actual, expected, checkRowOrder=True)
    assert actual.columns == QUEUE_STATUS_SCHEMA.fieldNames()


def test_each_status_on_its_own_history(spark: SparkSession, verdicts: DataFrame) -> None:
    actual = verdicts.filter("`group` = 'g'").select(*KEYS)
    expected = frame(spark, [
        ("g", "%RETRY%g", 0, "OK", "consuming: consumer offset 90 -> 140, lag 110"),
        ("g", "TopicTest", 0, "OK", "consuming: consumer offset 95 -> 149, lag 1"),
        ("g", "TopicTest", 1, "STALLED",
         f"consumer offset 90 unchanged for 300 s under {C1} while broker offset rose "
         "100 -> 150; lag 60"),
        ("g", "TopicTest", 2, "OK", "idle: nothing arrived or was consumed; backlog 10 unchanged"),
        ("g", "TopicTest", 3, "LAGGING",
         "lag grew 10 -> 110 over 300 s while the consumer advanced 90 -> 140"),
        ("g", "TopicTest", 4, "REWIND",
         "consumer offset went back from 170 to 20 and never returned; lag 160"),
        ("g", "TopicTest", 5, "OK", "consuming: consumer offset 150 -> 190, lag 10"),
        ("g", "TopicTest", 6, "OK", "caught up: lag 0 <= allowed 0"),
        ("g", "TopicTest", 7, "ORPHANED",
         "held by no client for 4 sample(s) while other queues of the group are; lag 10"),
        ("g", "TopicTest", 8, "INCOMPLETE",
         "2 sample(s) over 60 s of a 300 s window; need 3 and 50% coverage"),
        ("g", "TopicTest", 9, "INCOMPLETE",
         "3 sample(s) over 120 s of a 300 s window; need 3 and 50% coverage"),
        ("g", "TopicTest", 10, "STALLED",
         f"consumer offset 100 unchanged for 240 s under {C1} while broker offset rose "
         "100 -> 150; lag 50"),
        ("g", "TopicTest", 11, "OK",
         "backlog of 10 for 0 s (1 sample(s)), too recent to call stalled"),
    ], KEYS)
    assertDataFrameEqual(actual, expected, checkRowOrder=True)


def test_a_group_without_any_owner_is_stopped(spark: SparkSession, verdicts: DataFrame) -> None:
    actual = verdicts.filter("`group` = 'gone'").select(*KEYS, "owner", "owner_changes")
    expected = frame(spark, [
        ("gone", "Orders", 0, "STOPPED",
         "no client holds any queue of the group; this one for 6 sample(s), lag 20", None, 0),
        ("gone", "Orders", 1, "STOPPED",
         "no client holds any queue of the group; this one for 6 sample(s), lag 5", None, 0),
    ], (*KEYS, "owner", "owner_changes"))
    assertDataFrameEqual(actual, expected, checkRowOrder=True)


def test_owner_changes_split_the_window(spark: SparkSession, verdicts: DataFrame) -> None:
    cols = (*KEYS, "owner", "owner_changes", "segment_start_ts")
    actual = verdicts.filter("`group` = 'moves'").select(*cols)
    expected = frame(spark, [
        # progressed under c1, then frozen ever since c2 took it: stuck since reassignment
        ("moves", "Moves", 0, "STALLED",
         f"consumer offset 20 unchanged for 180 s since reassignment to {C2} while broker "
         "offset rose 120 -> 150; lag 130", C2, 1, T0 + 2 * STEP),
        # frozen the whole window, whoever held it
        ("moves", "Moves", 1, "STALLED",
         f"consumer offset 50 unchanged for 300 s across 1 owner change(s), now {C2}, while "
         "broker offset rose 100 -> 150; lag 100", C2, 1, T0 + 3 * STEP),
        # c2 took it one sample ago: too early to blame it
        ("moves", "Moves", 2, "OK", "consuming: consumer offset 0 -> 40, lag 110", C2, 1,
         T0 + 4 * STEP),
        # lag fell under c1 and grows under c2: judged on c2's segment only
        ("moves", "Moves", 3, "LAGGING",
         "lag grew 20 -> 60 over 120 s while the consumer advanced 120 -> 140", C2, 1,
         T0 + 3 * STEP),
    ], cols)
    assertDataFrameEqual(actual, expected, checkRowOrder=True)


def test_group_summary(spark: SparkSession, verdicts: DataFrame) -> None:
    expected = spark.createDataFrame([
        ("c", "calm", "OK", 1, 0, 0, 0, 0, 0, 0, 0, 0),
        ("c", "fresh", "INCOMPLETE", 1, 0, 0, 0, 0, 0, 1, 5, 5),
        ("c", "g", "ERR", 13, 2, 0, 1, 1, 1, 2, 531, 160),
        ("c", "gone", "ERR", 2, 0, 2, 0, 0, 0, 0, 25, 20),
        ("c", "moves", "ERR", 4, 2, 0, 0, 0, 1, 0, 400, 130),
        ("c", "slow", "WARN", 1, 0, 0, 0, 0, 1, 0, 110, 110),
    ], GROUP_STATUS_SCHEMA)
    assertDataFrameEqual(summarize_groups(verdicts), expected, checkRowOrder=True)


def test_retry_queues_have_their_own_allowed_lag(spark: SparkSession) -> None:
    rows = (series("%RETRY%g", 0, pairs(climb(100, 1), [95] * 6))
            + series("TopicTest", 0, pairs(climb(100, 1), [95] * 6)))
    th = Thresholds(window_ms=WINDOW, allowed_lag=0, retry_allowed_lag=10)
    actual = evaluate(spark.createDataFrame(rows, SNAPSHOT_SCHEMA), END, th) \
        .select("topic", "kind", "status", "reason")
    expected = frame(spark, [
        ("%RETRY%g", "retry", "OK", "caught up: lag 10 <= allowed 10"),
        ("TopicTest", "normal", "STALLED",
         f"consumer offset 95 unchanged for 300 s under {C1} while broker offset rose "
         "100 -> 105; lag 10"),
    ], ("topic", "kind", "status", "reason"))
    assertDataFrameEqual(actual, expected, checkRowOrder=True)


def test_the_window_end_moves_the_verdict(spark: SparkSession) -> None:
    # progress in the first three minutes, frozen in the last three
    rows = series("TopicTest", 0, pairs(climb(100, 10), [90, 100, 110, 110, 110, 110]))
    snapshots = spark.createDataFrame(rows, SNAPSHOT_SCHEMA)
    th = Thresholds(window_ms=3 * STEP)
    early = evaluate(snapshots, T0 + 2 * STEP, th).select("status", "first_ts", "last_ts")
    late = evaluate(snapshots, END, th).select("status", "first_ts", "last_ts")
    cols = ("status", "first_ts", "last_ts")
    assertDataFrameEqual(early, frame(spark, [("OK", T0, T0 + 2 * STEP)], cols))
    assertDataFrameEqual(late, frame(spark, [("STALLED", T0 + 2 * STEP, END)], cols))


def test_same_input_same_output(spark: SparkSession, verdicts: DataFrame) -> None:
    again = evaluate(spark.createDataFrame(list(reversed(history())), SNAPSHOT_SCHEMA), END, TH)
    assertDataFrameEqual(again, verdicts, checkRowOrder=True)
