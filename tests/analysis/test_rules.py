"""Every stuck-queue rule on both sides of each of its thresholds, as one table through one Spark job.

Each row of :data:`CASES` is one queue (its group names the case in words), with the snapshots that
make it and the verdict ``docs/snapshots.md`` gives it: status and rule from the rules table there,
the sentence and the span written out by hand. Snapshots are every 30 s from 12:00:00 UTC
(``at(i)``) under the default thresholds (``--min-snapshots`` 2, allowed lag 0, ``%RETRY%`` allowed
lag 10, ``consumeTimeout`` 15 minutes). All queues are judged together and compared as
whole frames on the shared local[1] session.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.testing import assertDataFrameEqual

from analysis.rules import POP_STATUSES, RULE_STATUS, STATUS_RANK, STUCK_STATUSES, Thresholds
from analysis.schema import SNAPSHOT_SCHEMA
from analysis.transforms import summarize_groups
from tests.analysis.conftest import T0, at, ms, row, series
from tests.analysis.engines import diagnose

SECOND = dt.timedelta(seconds=1)
RISING = [110 + 10 * i for i in range(40)]  # broker offsets: 110, 120, 130, …
FIXED = [100] * 40  # a committed offset that never moves


def frozen(n: int, **kw: Any) -> Callable[[str], list[dict[str, Any]]]:
    """n snapshots: the broker offset rises 110, 120, … while the committed offset stays at 100."""
    return lambda case: series(RISING[:n], FIXED[:n], group=case, **kw)


def offsets(bos: list[int | None], cos: list[int | None], **kw: Any) -> Callable[[str], list[dict[str, Any]]]:
    return lambda case: series(bos, cos, group=case, **kw)


def owners(names: list[str | None], bos: list[int], cos: list[int]) -> Callable[[str], list[dict[str, Any]]]:
    steps = list(enumerate(zip(names, bos, cos, strict=True)))
    return lambda case: [row(i, b, c, group=case, owner=o) for i, (o, b, c) in steps]


def pinned(n: int, topic: str = "T") -> Callable[[str], list[dict[str, Any]]]:
    """n snapshots frozen at 100 while the client keeps pulling (pull offset 100, 101, …)."""
    return lambda case: [row(i, RISING[i], 100, group=case, topic=topic, pull_offset=100 + i) for i in range(n)]


def POP_RETRY(deliveries: int | None) -> Callable[[str], list[dict[str, Any]]]:  # noqa: N802 - reads as a case
    """A POP group's retry queue that received 4 copies over 3 snapshots, all popped at once; the copies read
    back showed ``deliveries`` (None: none read)."""
    return offsets([10, 12, 14], [10, 12, 14], topic="%RETRY%g_T", owner=None, pop=True,
                   retry_deliveries=deliveries)


# frozen at the first snapshot read: the run began then or earlier, and lasted at least what was seen
FROZEN_3 = ("consumer offset frozen at 100 since 12:00:00 or earlier (3 snapshots, at least 1m00s) while broker "
            "offset rose 110 -> 130 under owner c1; lag 10 -> 30, unknown behind")

# case (the queue's group), its snapshots, and: status, rule, reason, snapshots, window_start round, lag_start,
# lag_end, lag_time_ms
CASES: list[tuple[str, Callable[[str], list[dict[str, Any]]], tuple[Any, ...]]] = [
    # min-snapshots
    ("every round failed", offsets([None] * 4, [None] * 4),
     ("INSUFFICIENT_DATA", "min-snapshots",
      "no answered snapshot in the window: 4 missing (last error: CONNECTION: broker unreachable)",
      0, None, None, None, None)),
    ("one answered, two failed", offsets([110, None, None], [100, None, None]),
     ("INSUFFICIENT_DATA", "min-snapshots", "only 1 snapshot(s) in the window (2 missing), 2 needed",
      1, 0, 10, 10, None)),
    # two looks show an offset standing still: what the doctor's two samples have, so enough here too
    ("two answered, one failed", offsets([110, None, 120], [100, None, 100]),
     ("STALLED", "frozen", "consumer offset frozen at 100 since 12:00:00 or earlier (2 snapshots, at least 1m00s) "
      "while broker offset rose 110 -> 120 under owner c1; lag 10 -> 20, unknown behind", 2, 0, 10, 20, None)),
    ("three answered, frozen", frozen(3), ("STALLED", "frozen", FROZEN_3, 3, 0, 10, 30, None)),
    # dlq
    ("dead letters, one snapshot", offsets([120], [100], topic="%DLQ%g"),
     ("DLQ", "dlq", "dead-letter queue, reported not judged: 20 message(s) not consumed, broker offset 120 -> 120",
      1, 0, 20, 20, None)),
    ("%DLQ% inside the name is judged", frozen(3, topic="x%DLQ%"),
     ("STALLED", "frozen", FROZEN_3, 3, 0, 10, 30, None)),
    # rewind
    ("rewound below its high", offsets([300] * 3, [100, 200, 150]),
     ("REWOUND", "rewind", "consumer offset went back from 200 to 150 at 12:01:00 and has not caught up "
      "(now 150, was 200)", 3, 0, 200, 150, None)),
    # went back, then froze there: stuck like any frozen queue (the doctor's two samples see it so)
    ("rewound, then frozen", offsets([300] * 4, [200, 150, 150, 150]),
     ("STALLED", "frozen", "consumer offset frozen at 150, where it went back from 200, since 12:00:30 (3 snapshots, "
      "1m00s) with a backlog of 150 and no new messages under owner c1; lag 150 -> 150, unknown behind",
      3, 1, 150, 150, None)),
    ("rewound, then frozen by nobody", offsets([300] * 4, [200, 150, 150, 150], owner=None),
     ("ORPHANED", "no-owner", "no owner: consumer offset frozen at 150, where it went back from 200, since 12:00:30 "
      "(3 snapshots) with a backlog of 150 and no new messages; lag 150 -> 150, unknown behind", 3, 1, 150, 150, None)),
    ("rewound, then pinned while pulls go on",
     lambda case: [row(i, 300, co, group=case, pull_offset=pull)
                   for i, (co, pull) in enumerate([(200, 200), (150, 150), (150, 160), (150, 170)])],
     ("STALLED", "offset-pinned", "committed offset held at 150, where it went back from 200, since 12:00:30 "
      "(3 snapshots, 1m00s) while its owner c1 keeps pulling (pull offset 150 -> 170); lag 150: one unfinished "
      "message or a hung listener, the offsets cannot tell which (a concurrent consumer sends a message back after "
      "consumeTimeout 15m00s)", 3, 1, 150, 150, None)),
    ("rewound long ago, frozen since it moved on", offsets([300] * 5, [200, 150, 160, 160, 160]),
     ("STALLED", "frozen", "consumer offset frozen at 160 since 12:01:00 (3 snapshots, 1m00s) with a backlog of 140 "
      "and no new messages under owner c1; lag 140 -> 140, unknown behind", 3, 2, 140, 140, None)),
    ("rewound at the last snapshot", offsets([300] * 3, [200, 200, 150]),
     ("REWOUND", "rewind", "consumer offset went back from 200 to 150 at 12:01:00 and has not caught up "
      "(now 150, was 200)", 3, 0, 100, 150, None)),
    ("rewound and back at its high", offsets([300] * 4, [100, 200, 150, 200]),
     ("OK", "moving", "consumer moving: offset 100 -> 200, lag 200 -> 100", 4, 0, 200, 100, None)),
    # no-new-messages
    ("no new messages, nothing left", offsets([500] * 3, [500] * 3),
     ("IDLE", "no-new-messages", "no new messages: broker offset stayed at 500 over 3 snapshots; lag 0",
      3, 0, 0, 0, 0)),
    ("no new messages, one left", offsets([500] * 3, [499] * 3),
     ("STALLED", "frozen", "consumer offset frozen at 499 since 12:00:00 or earlier (3 snapshots, at least 1m00s) "
      "with a backlog of 1 and no new messages under owner c1; lag 1 -> 1, unknown behind", 3, 0, 1, 1, None)),
    ("retry queue, no new messages, ten left", offsets([50] * 3, [40] * 3, topic="%RETRY%g"),
     ("IDLE", "no-new-messages", "no new messages: broker offset stayed at 50 over 3 snapshots; lag 10",
      3, 0, 10, 10, None)),
    # past the allowance of 10, a retry queue is frozen like any other: what waits there is due now
    ("retry queue, no new messages, eleven left", offsets([51] * 3, [40] * 3, topic="%RETRY%g"),
     ("STALLED", "frozen", "consumer offset frozen at 40 since 12:00:00 or earlier (3 snapshots, at least 1m00s) "
      "with a backlog of 11 and no new messages under owner c1; lag 11 -> 11, unknown behind", 3, 0, 11, 11, None)),
    ("retry queue, eleven left after one more message", offsets([50, 51, 51, 51], [40] * 4, topic="%RETRY%g"),
     ("STALLED", "frozen", "consumer offset frozen at 40 since 12:00:30 (3 snapshots, 1m00s) with a backlog of 11 "
      "and no new messages under owner c1; lag 11 -> 11, unknown behind", 3, 1, 11, 11, None)),
    # caught-up
    ("one new message, consumed", offsets([500, 500, 501], [500, 500, 501]),
     ("OK", "caught-up", "caught up: lag 0 <= 0 at the last snapshot; consumer offset 500 -> 501", 3, 0, 0, 0, 0)),
    ("retry queue ten behind while messages arrive", offsets([20, 40, 50], [10, 30, 40], topic="%RETRY%g"),
     ("OK", "caught-up", "caught up: lag 10 <= 10 at the last snapshot; consumer offset 10 -> 40",
      3, 0, 10, 10, None)),
    ("one behind at the end, moving", offsets([100, 110, 121], [100, 110, 120]),
     ("OK", "moving", "consumer moving: offset 100 -> 120, lag 0 -> 1", 3, 0, 0, 1, None)),
    # owner-changed
    ("owner changed one snapshot ago", owners(["c1"] * 3 + ["c2"], RISING[:4], FIXED[:4]),
     ("INSUFFICIENT_DATA", "owner-changed", "owner changed to c2 at 12:01:30; only 1 snapshot(s) since, 2 needed",
      1, 3, 40, 40, None)),
    ("owner changed two snapshots ago", owners(["c1"] * 3 + ["c2"] * 2, RISING[:5], FIXED[:5]),
     ("STALLED", "frozen", "consumer offset frozen at 100 since 12:01:30 (2 snapshots, 30s) while broker offset "
      "rose 140 -> 150 under owner c2 (moved there at 12:01:30); lag 40 -> 50, unknown behind", 2, 3, 40, 50, None)),
    ("owner left one snapshot ago", owners(["c1"] * 3 + [None], RISING[:4], FIXED[:4]),
     ("INSUFFICIENT_DATA", "owner-changed", "owner changed to nobody at 12:01:30; only 1 snapshot(s) since, 2 needed",
      1, 3, 40, 40, None)),
    # no-owner
    ("nobody holds it, frozen three snapshots", frozen(3, owner=None),
     ("ORPHANED", "no-owner", "no owner: consumer offset frozen at 100 since 12:00:00 or earlier (3 snapshots) while "
      "broker offset rose 110 -> 130; lag 10 -> 30, unknown behind", 3, 0, 10, 30, None)),
    ("nobody holds it, moved at the last snapshot", offsets(RISING[:4], [100, 100, 100, 105], owner=None),
     ("LAGGING", "lag-growing", "consumer moving (100 -> 105) but lag grew 10 -> 35 and never got within 0; "
      "unknown behind", 4, 0, 10, 35, None)),
    # owner-not-subscribed
    ("held by a client that does not subscribe",
     frozen(3, subscribed=False, last_consumed=at(0) - dt.timedelta(hours=1), broker_last=at(2)),
     ("ORPHANED", "owner-not-subscribed", "owner c1 does not subscribe T: consumer offset frozen at 100 since "
      "12:00:00 or earlier (3 snapshots) while broker offset rose 110 -> 130; lag 10 -> 30, 1h01m behind",
      3, 0, 10, 30, 3_660_000)),
    ("subscription not known", frozen(3, subscribed=None), ("STALLED", "frozen", FROZEN_3, 3, 0, 10, 30, None)),
    # offset-pinned
    ("pulling, frozen for exactly consumeTimeout", pinned(31),
     ("STALLED", "offset-pinned", "committed offset held at 100 since 12:00:00 or earlier (31 snapshots, at least "
      "15m00s) while its owner c1 keeps pulling (pull offset 100 -> 130); lag 310: one unfinished message or a hung "
      "listener, the offsets cannot tell which (a concurrent consumer sends a message back after consumeTimeout "
      "15m00s)",
      31, 0, 10, 310, None)),
    ("pulling, frozen a round longer than consumeTimeout", pinned(32),
     ("STALLED", "frozen", "consumer offset frozen at 100 since 12:00:00 or earlier (32 snapshots, at least 15m30s) "
      "while broker offset rose 110 -> 420 under owner c1; lag 10 -> 320, unknown behind", 32, 0, 10, 320, None)),
    ("pull offset not moving", frozen(3, pull_offset=100), ("STALLED", "frozen", FROZEN_3, 3, 0, 10, 30, None)),
    # a retry queue gets no minutes of grace: the broker parks a message sent back until its delay level is
    # due, so what waits in %RETRY% is due now (pinned while pulls go on, frozen otherwise, as any queue)
    ("retry queue pulling, frozen 4m00s", pinned(10, topic="%RETRY%g"),
     ("STALLED", "offset-pinned", "committed offset held at 100 since 12:00:30 (9 snapshots, 4m00s) while its owner "
      "c1 keeps pulling (pull offset 101 -> 109); lag 100: one unfinished message or a hung listener, the offsets "
      "cannot tell which (a concurrent consumer sends a message back after consumeTimeout 15m00s)",
      9, 1, 20, 100, None)),
    # (lag 10 at the first snapshot, within the retry allowance; 20 from the second: the frozen run starts there)
    ("retry queue frozen 4m30s", offsets(RISING[:11], FIXED[:11], topic="%RETRY%g"),
     ("STALLED", "frozen", "consumer offset frozen at 100 since 12:00:30 (10 snapshots, 4m30s) while broker offset "
      "rose 120 -> 210 under owner c1; lag 20 -> 110, unknown behind", 10, 1, 20, 110, None)),
    ("retry queue frozen 5m", offsets(RISING[:12], FIXED[:12], topic="%RETRY%g"),
     ("STALLED", "frozen", "consumer offset frozen at 100 since 12:00:30 (11 snapshots, 5m00s) while broker offset "
      "rose 120 -> 220 under owner c1; lag 20 -> 120, unknown behind", 11, 1, 20, 120, None)),
    # (lag 20 from the first snapshot read: frozen then or earlier)
    ("retry queue frozen 4m30s since the first snapshot read", offsets(RISING[1:11], FIXED[:10], topic="%RETRY%g"),
     ("STALLED", "frozen", "consumer offset frozen at 100 since 12:00:00 or earlier (10 snapshots, at least 4m30s) "
      "while broker offset rose 120 -> 210 under owner c1; lag 20 -> 110, unknown behind", 10, 0, 20, 110, None)),
    # frozen: how far behind, at the minute boundary
    ("frozen, a minute behind", frozen(3, last_consumed=at(0), broker_last=at(2)),
     ("STALLED", "frozen", FROZEN_3.replace("unknown behind", "1m00s behind"), 3, 0, 10, 30, 60_000)),
    ("frozen, 59 s behind", frozen(3, last_consumed=at(0) + SECOND, broker_last=at(2)),
     ("STALLED", "frozen", FROZEN_3.replace("unknown behind", "59s behind"), 3, 0, 10, 30, 59_000)),
    ("frozen, an hour behind", frozen(3, last_consumed=at(0), broker_last=at(0) + dt.timedelta(hours=1)),
     ("STALLED", "frozen", FROZEN_3.replace("unknown behind", "1h00m behind"), 3, 0, 10, 30, 3_600_000)),
    ("frozen after one o'clock", lambda case: series(RISING[:3], FIXED[:3], group=case, start=122),
     ("STALLED", "frozen", FROZEN_3.replace("12:00:00", "13:01:00"), 3, 122, 10, 30, None)),
    # lag-growing
    ("lag grew, never caught up", offsets([110, 130, 150], [100, 110, 120]),
     ("LAGGING", "lag-growing", "consumer moving (100 -> 120) but lag grew 10 -> 30 and never got within 0; "
      "unknown behind", 3, 0, 10, 30, None)),
    ("lag back where it started", offsets([110, 130, 140], [100, 110, 130]),
     ("OK", "moving", "consumer moving: offset 100 -> 130, lag 10 -> 10", 3, 0, 10, 10, None)),
    ("caught up only under the previous owner", owners(["c1", "c2", "c2", "c2"], [100, 110, 130, 150],
                                                       [100, 105, 115, 125]),
     ("LAGGING", "lag-growing", "consumer moving (105 -> 125) but lag grew 5 -> 25 and never got within 0; "
      "unknown behind", 3, 1, 5, 25, None)),
    ("caught up under this owner, lag grew since", offsets([100, 110, 130, 150], [100, 105, 115, 125]),
     ("OK", "moving", "consumer moving: offset 100 -> 125, lag 0 -> 25", 4, 0, 0, 25, None)),
    # POP: no owner by design, so a frozen queue is nobody popping it (never ORPHANED)
    ("POP queue frozen three snapshots", frozen(3, owner=None, pop=True),
     ("STALLED", "not-popped", "POP queue: consumer offset frozen at 100 since 12:00:00 or earlier (3 snapshots, "
      "at least 1m00s) while broker offset rose 110 -> 130 and no client popped a message; lag 10 -> 30, unknown "
      "behind", 3, 0, 10, 30, None)),
    ("POP queue moving", offsets([110, 130, 150], [110, 125, 150], owner=None, pop=True),
     ("OK", "caught-up", "caught up: lag 0 <= 0 at the last snapshot; consumer offset 110 -> 150", 3, 0, 0, 0, 0)),
    # retry-growing: copies written to a POP retry queue, delivered 3 times or more (the doctor's threshold)
    ("POP retry queue grew, copies delivered 3 times", POP_RETRY(3),
     ("REDELIVERING", "retry-growing", "4 copies written to this POP retry queue in the window (broker offset 10 -> "
      "14): messages failed or not ACKed come back again and again; copies read back were delivered up to 3 times "
      "(3 or more is redelivery)", 3, 0, 0, 0, 0)),
    ("POP retry queue grew, copies delivered twice", POP_RETRY(2),
     ("OK", "caught-up", "caught up: lag 0 <= 10 at the last snapshot; consumer offset 10 -> 14", 3, 0, 0, 0, 0)),
    ("POP retry queue grew, no copy read back", POP_RETRY(None),
     ("REDELIVERING", "retry-growing", "4 copies written to this POP retry queue in the window (broker offset 10 -> "
      "14): messages failed or not ACKed come back again and again; no copy was read back, so how often each was "
      "delivered is unknown", 3, 0, 0, 0, 0)),
    ("POP retry queue, no new copy", offsets([14] * 3, [14] * 3, topic="%RETRY%g_T", owner=None, pop=True,
                                             retry_deliveries=4),
     ("IDLE", "no-new-messages", "no new messages: broker offset stayed at 14 over 3 snapshots; lag 0", 3, 0, 0, 0, 0)),
    ("push retry queue grew", offsets([10, 12, 14], [10, 12, 14], topic="%RETRY%g", retry_deliveries=5),
     ("OK", "caught-up", "caught up: lag 0 <= 10 at the last snapshot; consumer offset 10 -> 14", 3, 0, 0, 0, 0)),
    # dlq-growing: messages of a POP group reached its dead-letter queue in the window
    ("POP dead letters grew", offsets([2, 3, 4], [0] * 3, topic="%DLQ%g", owner=None, pop=True),
     ("DEAD_LETTERING", "dlq-growing", "2 message(s) of this POP group reached its dead-letter queue in the window: "
      "broker offset 2 -> 4", 3, 0, 2, 4, None)),
    # (no committed offset of the group there, as on a broker: the rows still count, the lag is unknown)
    ("POP dead letters grew, no committed offset", offsets([2, 3, 4], [None] * 3, topic="%DLQ%g", owner=None,
                                                           pop=True),
     ("DEAD_LETTERING", "dlq-growing", "2 message(s) of this POP group reached its dead-letter queue in the window: "
      "broker offset 2 -> 4", 3, 0, None, None, None)),
    ("POP dead letters unchanged", offsets([4] * 3, [0] * 3, topic="%DLQ%g", owner=None, pop=True),
     ("DLQ", "dlq", "dead-letter queue, reported not judged: 4 message(s) not consumed, broker offset 4 -> 4",
      3, 0, 4, 4, None)),
    ("push dead letters grew", offsets([2, 3, 4], [0] * 3, topic="%DLQ%g"),
     ("DLQ", "dlq", "dead-letter queue, reported not judged: 4 message(s) not consumed, broker offset 2 -> 4",
      3, 0, 2, 4, None)),
]

VERDICT = ("group string, status string, rule string, reason string, snapshots int, window_start timestamp, "
           "lag_start long, lag_end long, lag_time_ms long")


def judged(spark: SparkSession) -> DataFrame:
    """Every case's queue through the job (also what the mutation run of analysis/rules.py judges)."""
    rows = [r for case, make, _ in CASES for r in make(case)]
    snapshots = spark.createDataFrame(rows, SNAPSHOT_SCHEMA)
    return diagnose(snapshots, ms(T0), ms(T0 + dt.timedelta(hours=2)), Thresholds())


@pytest.fixture(scope="module")
def verdicts(spark: SparkSession) -> DataFrame:
    return judged(spark).cache()


def expected_verdicts(spark: SparkSession) -> DataFrame:
    expected = [
        (case, status, rule, reason, snapshots, None if start is None else at(start), lag_start, lag_end, behind)
        for case, _, (status, rule, reason, snapshots, start, lag_start, lag_end, behind) in CASES
    ]
    return spark.createDataFrame(expected, VERDICT)


def test_every_rule_at_both_sides_of_its_thresholds(spark: SparkSession, verdicts: DataFrame) -> None:
    expected = expected_verdicts(spark)
    assertDataFrameEqual(verdicts.select(*expected.columns), expected)


SPAN = ("group string, window_end timestamp, window_snapshots int, missing_snapshots int, owner string, "
        "owner_since timestamp, previous_owner string, broker_offset_start long, broker_offset_end long, "
        "consumer_offset_start long, consumer_offset_end long, window_lag_start long, frozen_since timestamp")


def expected_spans(spark: SparkSession) -> DataFrame:
    # whole window (min-snapshots, dlq, rewind), the part under the new owner (owner-changed, lag-growing),
    # the frozen run (frozen, offset-pinned)
    return spark.createDataFrame([
        ("one answered, two failed", at(0), 1, 2, "c1", None, None, 110, 110, 100, 100, 10, at(0)),
        ("dead letters, one snapshot", at(0), 1, 0, "c1", None, None, 120, 120, 100, 100, 20, at(0)),
        ("rewound below its high", at(2), 3, 0, "c1", None, None, 300, 300, 100, 150, 200, at(2)),
        ("owner changed one snapshot ago", at(3), 4, 0, "c2", at(3), "c1", 140, 140, 100, 100, 10, at(3)),
        ("owner changed two snapshots ago", at(4), 5, 0, "c2", at(3), "c1", 140, 150, 100, 100, 10, at(3)),
        ("pulling, frozen for exactly consumeTimeout", at(30), 31, 0, "c1", None, None, 110, 410, 100, 100, 10,
         at(0)),
        ("caught up only under the previous owner", at(3), 4, 0, "c2", at(1), "c1", 110, 150, 105, 125, 0, at(3)),
        ("every round failed", None, 0, 4, None, None, None, None, None, None, None, None, None),
    ], SPAN)


def test_the_numbers_behind_each_kind_of_span(spark: SparkSession, verdicts: DataFrame) -> None:
    expected = expected_spans(spark)
    names = [r["group"] for r in expected.select("group").collect()]
    assertDataFrameEqual(verdicts.where(verdicts["group"].isin(*names)).select(*expected.columns), expected)


def test_thresholds_default_to_the_documented_values() -> None:
    assert Thresholds() == Thresholds(min_snapshots=2, allowed_lag=0, retry_allowed_lag=10,
                                      consume_timeout_ms=900_000)


def test_rules_give_the_documented_statuses() -> None:
    # docs/snapshots.md, the rules table from top to bottom
    assert RULE_STATUS == {
        "dlq-growing": "DEAD_LETTERING", "min-snapshots": "INSUFFICIENT_DATA", "dlq": "DLQ",
        "retry-growing": "REDELIVERING", "rewind": "REWOUND", "no-new-messages": "IDLE",
        "caught-up": "OK", "owner-changed": "INSUFFICIENT_DATA", "pop-grace": "INSUFFICIENT_DATA",
        "not-popped": "STALLED", "no-owner": "ORPHANED", "owner-not-subscribed": "ORPHANED", "offset-pinned": "STALLED",
        "frozen": "STALLED", "lag-growing": "LAGGING", "moving": "OK",
    }
    assert STUCK_STATUSES == ("STALLED", "ORPHANED")
    assert POP_STATUSES == ("REDELIVERING", "DEAD_LETTERING")


def test_a_pop_queue_frozen_within_the_commit_grace_says_nothing_yet(spark: SparkSession) -> None:
    # a grace of 60 s: frozen for 30 s (two snapshots) is under it, 60 s (three) is not; the run's start must
    # be seen (lag 0 at the first snapshot) for the grace to apply
    rows = [*offsets([100, 110, 120], [100, 100, 100], owner=None, pop=True)("thirty seconds"),
            *offsets([100, 110, 120, 130], [100, 100, 100, 100], owner=None, pop=True)("a minute")]
    got = diagnose(spark.createDataFrame(rows, SNAPSHOT_SCHEMA), ms(T0), ms(T0 + dt.timedelta(hours=1)),
                   Thresholds(pop_commit_grace_ms=60_000))
    assert {r["group"]: (r["status"], r["rule"], r["reason"]) for r in got.collect()} == {
        "thirty seconds": ("INSUFFICIENT_DATA", "pop-grace",
                           "POP queue: consumer offset at 100 for 30s, under the 1m00s POP commit grace; lag 20"),
        "a minute": ("STALLED", "not-popped",
                     "POP queue: consumer offset frozen at 100 since 12:00:30 (3 snapshots, 1m00s) while broker "
                     "offset rose 110 -> 130 and no client popped a message; lag 10 -> 30, unknown behind"),
    }


GROUP = ("group string, status string, queues int, stuck_queues int, total_lag_start long, total_lag_end long, "
         "lag_trend string")

# group: its queues as (status, lag at the window's start, lag at its end); then the summary by hand.
# A group's status is its worst queue's: STALLED, ORPHANED, REWOUND, LAGGING, INSUFFICIENT_DATA, IDLE, then
# OK and DLQ (a dead-letter queue is not judged, and its lag is left out of the totals).
GROUPS = [
    ("STALLED over ORPHANED", [("ORPHANED", 5, 7), ("STALLED", 10, 3)], ("STALLED", 2, 2, 15, 10, "shrinking")),
    ("ORPHANED over REWOUND", [("REWOUND", 5, 7), ("ORPHANED", 10, 3)], ("ORPHANED", 2, 1, 15, 10, "shrinking")),
    ("REWOUND over LAGGING", [("LAGGING", 5, 7), ("REWOUND", 1, 3)], ("REWOUND", 2, 0, 6, 10, "growing")),
    ("LAGGING over INSUFFICIENT_DATA", [("INSUFFICIENT_DATA", 5, 7), ("LAGGING", 2, 0)],
     ("LAGGING", 2, 0, 7, 7, "flat")),
    ("INSUFFICIENT_DATA over IDLE", [("IDLE", 0, 0), ("INSUFFICIENT_DATA", 4, 4)],
     ("INSUFFICIENT_DATA", 2, 0, 4, 4, "flat")),
    ("IDLE over OK", [("OK", 3, 0), ("IDLE", 0, 0)], ("IDLE", 2, 0, 3, 0, "shrinking")),
    ("OK over DLQ", [("DLQ", 50, 70), ("OK", 3, 1)], ("OK", 2, 0, 3, 1, "shrinking")),
    ("DLQ under IDLE", [("IDLE", 0, 0), ("DLQ", 50, 70)], ("IDLE", 2, 0, 0, 0, "flat")),
    ("DLQ only", [("DLQ", 50, 70)], ("DLQ", 1, 0, 0, 0, "flat")),
    ("two stalled, one lagging", [("STALLED", 1, 2), ("LAGGING", 1, 2), ("STALLED", 1, 2)],
     ("STALLED", 3, 2, 3, 6, "growing")),
]


def test_a_group_takes_its_worst_queues_status(spark: SparkSession) -> None:
    verdict_rows = [
        ("c", group, "%DLQ%g" if status == "DLQ" else "T", k, status, lag_start, lag_end, at(k), at(20 - k))
        for group, queues, _ in GROUPS for k, (status, lag_start, lag_end) in enumerate(queues)
    ]
    verdict_frame = spark.createDataFrame(
        verdict_rows, "cluster string, group string, topic string, queue_id int, status string, "
        "window_lag_start long, lag_end long, window_start timestamp, window_end timestamp")
    got = summarize_groups(verdict_frame)
    assertDataFrameEqual(got.select(*[f.split()[0] for f in GROUP.split(", ")]),
                         spark.createDataFrame([(group, *summary) for group, _, summary in GROUPS], GROUP))
    # the span of the group: its earliest start and latest end
    spans = {r["group"]: (r["window_start"], r["window_end"]) for r in got.collect()}
    assert spans["two stalled, one lagging"] == (at(0).replace(tzinfo=None), at(20).replace(tzinfo=None))
    assert STATUS_RANK["OK"] == STATUS_RANK["DLQ"] == 0


def _pop_group(case: str, rounds: range, broker: str = "broker-a",
               failed: tuple[int, ...] = ()) -> list[dict[str, Any]]:
    """A POP group's queue of ``T`` over ``rounds``, caught up; the rounds in ``failed`` could not read the group."""
    return [row(i, None, None, group=case, broker=broker, owner=None, pop=True, error="TIMEOUT: group")
            if i in failed else row(i, 10 + i, 10 + i, group=case, broker=broker, owner=None, pop=True)
            for i in rounds]


def _dead_letters(case: str, bos: list[int | None], start: int, pop: bool | None = True) -> list[dict[str, Any]]:
    """The group's ``%DLQ%`` queue from round ``start`` (None: a round that could not read it); a POP group has no
    committed offset there, a push group 0."""
    return [row(start + k, None, None, group=case, topic="%DLQ%" + case, owner=None, pop=pop,
                error="TIMEOUT: dlq") if b is None else
            row(start + k, b, None if pop else 0, group=case, topic="%DLQ%" + case, owner=None, pop=pop)
            for k, b in enumerate(bos)]


# a POP group's %DLQ% queue is created with the first message the broker gives up on: absent from an earlier
# round that recorded the group on its broker, it did not exist then, and its messages count from 0
DLQ_APPEARS = [
    ("appeared after rounds that read the group", [*_pop_group("a", range(5)), *_dead_letters("a", [4, 4], 3)],
     ("DEAD_LETTERING", "dlq-growing", 0, 4, at(0),
      "4 message(s) of this POP group reached its dead-letter queue in the window: broker offset 0 -> 4")),
    ("appeared after a round where its own read failed, the group read before", [
        *_pop_group("b", range(5)), *_dead_letters("b", [None, 4, 4], 2)],
     ("DEAD_LETTERING", "dlq-growing", 0, 4, at(0),
      "4 message(s) of this POP group reached its dead-letter queue in the window: broker offset 0 -> 4")),
    # unknown is not 0: rounds that did not read the group, or not this queue, say nothing of it
    ("appeared after rounds that failed to read the group", [
        *_pop_group("c", range(5), failed=(0, 1, 2)), *_dead_letters("c", [4, 4], 3)],
     ("DLQ", "dlq", 4, 4, at(3), None)),
    ("its own read failed at the first round", [
        *_pop_group("d", range(5)), *_dead_letters("d", [None, None, None, 4, 4], 0)],
     ("DLQ", "dlq", 4, 4, at(3), None)),
    ("the group read on another broker only", [
        *_pop_group("e", range(5), broker="broker-b"), *_dead_letters("e", [4, 4], 3)],
     ("DLQ", "dlq", 4, 4, at(3), None)),
    # a push group's DLQ is reported, not judged: its first look stays what it is
    ("a push group's", [*series([10] * 5, [10] * 5, group="f"), *_dead_letters("f", [4, 4], 3, pop=None)],
     ("DLQ", "dlq", 4, 4, at(3), None)),
]


def test_a_pop_dlq_absent_from_a_round_that_read_the_group_started_at_zero(spark: SparkSession) -> None:
    rows = [r for _, made, _ in DLQ_APPEARS for r in made]
    got = diagnose(spark.createDataFrame(rows, SNAPSHOT_SCHEMA), ms(T0), ms(T0 + dt.timedelta(hours=1)))
    judged = {r["group"]: r for r in got.where(got["topic"].startswith("%DLQ%")).collect()}
    for (case, _, (status, rule, start, end, since, reason)), group in zip(DLQ_APPEARS, "abcdef", strict=True):
        v = judged[group]
        assert (v["status"], v["rule"], v["broker_offset_start"], v["broker_offset_end"]) == (
            status, rule, start, end), case
        assert v["window_start"] == since.replace(tzinfo=None), case
        if reason is not None:
            assert v["reason"] == reason, case
