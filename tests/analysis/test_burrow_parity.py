"""Burrow's evaluator cases, ported to snapshots, through the real job on a local[1] session.

Source: linkedin/Burrow ``core/internal/evaluator/caching_test.go`` (cases 0–11) and the allowed-lag /
unrecovered-rewind cases listed in ``shared/reference/anchors-stuck-and-tui.md`` 1.5 (12–15, written here
from their description since the stored Burrow snapshot predates them).

Porting rule: each Burrow commit ``{Offset, Timestamp, Lag}`` becomes one snapshot at that time with
``consumer_offset = Offset`` and ``broker_offset = Offset + Lag``; a commit with ``Lag: nil`` (Burrow could
not compute it) becomes a round the broker failed to answer (an ``error`` row). The time after the last
commit becomes snapshots up to ``timeNow`` whose broker offsets are Burrow's ``brokerOffsets`` ring
(oldest first) or ``last offset + currentLag``, and whose consumer offset is the last commit — or, for
case 8 where ``currentLag`` is 0, the broker offset (the consumer caught up). Burrow's first commit sits
at 12:01:40 (t = 100 s).

Statuses map STOP/STALL -> STALLED, WARN -> LAGGING, REWIND -> REWOUND, OK -> OK/IDLE.

Deliberate differences from Burrow (also in docs/snapshots.md, "How the verdicts are reached"):

- cases 0 and 7: Burrow is OK (7: REWIND, newer Burrow OK) with the consumer committing at every snapshot
  but the last, taken one commit interval after it with the same backlog. Two looks at an offset that did
  not move while messages waited are a frozen run here, the evidence the doctor's two samples have: a
  Java client commits every 5 s, far more often than snapshots are taken, so a working consumer moves
  between any two of them. STALLED.
- case 1: Burrow is OK because the time since the last commit equals the window span exactly. Our window is
  time, not commits: a consumer frozen for ``min-snapshots`` snapshots with an untouched backlog is STALLED.
- case 4: Burrow is OK because lag was zero at the first commit. A consumer that stopped right after
  catching up is STALLED here once it has been behind for ``min-snapshots`` snapshots.
- case 7 is not REWOUND either: the rewind recovered (3000 -> 2000 -> 4000).
- case 15: Burrow is REWIND. After the rewind (1250 -> 800) the committed offset stands at 800 for the rest
  of the window while messages wait: a frozen run that began at the rewind, which the doctor's two samples
  see as frozen too. STALLED; REWOUND is a rewound consumer that still moves (test_rules.py).
- Not a case of Burrow's but the root of its best-known false alarm: an idle queue (no new messages,
  nothing to consume) is IDLE, never stuck, however old its last commit (test_stuck_traps.py).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from pyspark.testing import assertDataFrameEqual

from analysis.rules import Thresholds
from analysis.schema import SNAPSHOT_SCHEMA
from tests.analysis.conftest import T0, ms, row, write_snapshots
from tests.analysis.engines import diagnose

Commit = tuple[int, int, int | None]  # (offset, timestamp ms, lag or None)


def _ts(seconds: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)


def port(topic: str, commits: Sequence[Commit], broker_ring: Sequence[int], current_lag: int,
         now_ms: int, caught_up_at_now: bool = False) -> list[dict[str, Any]]:
    """One Burrow case as snapshot rows (see the module docstring)."""
    base = commits[0][1] - 100_000
    rows = []
    for offset, ts, lag in commits:
        r = row(0, None if lag is None else offset + lag, None if lag is None else offset, topic=topic,
                error="CONNECTION: no lag known" if lag is None else None)
        r["ts"] = _ts((ts - base) / 1000)
        rows.append(r)
    last_offset, last_ts = commits[-1][0], commits[-1][1]
    ring = list(reversed(broker_ring)) if len(broker_ring) > 1 else []
    spacing = commits[1][1] - commits[0][1]
    if not ring:
        count = max(1, (now_ms - last_ts) // spacing)
        ring = [last_offset + current_lag] * count
    for k, broker_offset in enumerate(ring, start=1):
        at_ms = last_ts + (now_ms - last_ts) * k // len(ring)
        consumer = broker_offset if (caught_up_at_now and k == len(ring)) else last_offset
        r = row(0, broker_offset, consumer, topic=topic)
        r["ts"] = _ts((at_ms - base) / 1000)
        rows.append(r)
    return rows


def _commits(offsets: Sequence[int], lags: Sequence[int | None], start_ms: int = 100_000,
             step_ms: int = 100_000) -> list[Commit]:
    return [(o, start_ms + k * step_ms, lag) for k, (o, lag) in enumerate(zip(offsets, lags, strict=True))]


_STEADY = [1000, 2000, 3000, 4000, 5000]
_BIG = [792748079 + k for k in range(15)]
_BIG_TS = [1512224618356, 1512224619362, 1512224620366, 1512224621367, 1512224622370, 1512224623373,
           1512224624378, 1512224625379, 1512224626383, 1512224627383, 1512224628383, 1512224629388,
           1512224630391, 1512224631394, 1512224632397]

CASES: dict[str, list[dict[str, Any]]] = {
    "case-00": port("case-00", _commits(_STEADY, [0, 50, 100, 150, 200]), [5200], 200, 600_000),
    "case-01": port("case-01", _commits(_STEADY, [0, 50, 100, 150, 200]), [5200], 200, 900_000),
    "case-02": port("case-02", _commits(_STEADY, [0, 50, 100, 150, 200]), [5200], 200, 1_000_000),
    "case-03": port("case-03", _commits(_STEADY, [50, 100, 150, 200, 250]), [5250], 250, 1_000_000),
    "case-04": port("case-04", _commits([1000] * 5, [0, 50, 100, 150, 200]), [1200], 200, 600_000),
    "case-05": port("case-05", _commits([1000] * 5, [100, 150, 200, 250, 300]), [1300], 300, 600_000),
    "case-06": port("case-06", _commits([1000] * 5, [100] * 5), [1100], 100, 600_000),
    "case-07": port("case-07", _commits([1000, 2000, 3000, 2000, 4000], [100, 150, 200, 1250, 300]),
                    [4300], 300, 600_000),
    "case-08": port("case-08", _commits(_STEADY, [50, 100, 150, 200, 250]), [5250], 0, 1_000_000,
                    caught_up_at_now=True),
    "case-09": port("case-09", [(o, t, 0) for o, t in zip(_BIG, _BIG_TS, strict=True)],
                    [792749024, 792749000, 792748800, 792748600, 792748500], 931, 1512224650_000),
    "case-10": port("case-10", [(o, t, 0) for o, t in zip(_BIG, _BIG_TS, strict=True)],
                    [792748094, 792748093, 792748093, 792748093], 1, 1512224650_000),
    "case-11": port("case-11", _commits([1000, 1500, 2000, 2500, 3000, 3500, 4000, 4500, 5000, 5500],
                                        [0, None, 50, None, 100, None, 150, None, 200, None], step_ms=50_000),
                    [5700], 200, 600_000),
    "case-15": port("case-15", _commits([1000, 2000, 3000, 2000, 2500], [100, 150, 200, 1250, 800]),
                    [3300], 800, 600_000),
}
"""Burrow cases 0–11 and 15, run with allowed lag 0."""

ALLOWED_LAG_CASES: dict[str, list[dict[str, Any]]] = {
    "case-12": port("case-12", _commits([1000] * 5, [0, 10, 20, 30, 40]), [1040], 40, 600_000),
    "case-13": port("case-13", _commits([1000] * 5, [100, 150, 200, 250, 300]), [1300], 300, 600_000),
    "case-14": port("case-14", _commits(_STEADY, [10, 20, 30, 40, 40]), [5040], 40, 600_000),
}
"""The allowed-lag cases, run with allowed lag 50."""

WINDOW = (ms(T0), ms(T0 + dt.timedelta(hours=1)))


def _statuses(spark: SparkSession, root: Path, th: Thresholds) -> Any:
    snapshots = spark.read.schema(SNAPSHOT_SCHEMA).parquet(str(root))
    return diagnose(snapshots, *WINDOW, th).select("topic", "status", "rule", "missing_snapshots")


def test_burrow_cases_as_snapshots(spark: SparkSession, tmp_path: Path) -> None:
    root = write_snapshots(tmp_path, [r for rows in CASES.values() for r in rows])
    expected = spark.createDataFrame([
        ("case-00", "STALLED", "frozen", 0),      # Burrow OK (difference: the last two looks are frozen)
        ("case-01", "STALLED", "frozen", 0),      # Burrow OK (difference: time window)
        ("case-02", "STALLED", "frozen", 0),      # Burrow STOP
        ("case-03", "STALLED", "frozen", 0),      # Burrow STOP
        ("case-04", "STALLED", "frozen", 0),      # Burrow OK (difference: zero lag long ago is no excuse)
        ("case-05", "STALLED", "frozen", 0),      # Burrow STALL
        ("case-06", "STALLED", "frozen", 0),      # Burrow STALL
        ("case-07", "STALLED", "frozen", 0),      # Burrow REWIND, newer Burrow OK (difference: as case 0)
        ("case-08", "OK", "caught-up", 0),        # Burrow OK
        ("case-09", "STALLED", "frozen", 0),      # Burrow STOP (#290)
        ("case-10", "OK", "moving", 0),           # Burrow OK (#303: caught up until the last snapshot)
        ("case-11", "OK", "moving", 5),           # Burrow OK; nil lags are gaps, not zeros
        ("case-15", "STALLED", "frozen", 0),      # Burrow REWIND (difference: frozen since the rewind)
    ], "topic string, status string, rule string, missing_snapshots int")
    assertDataFrameEqual(_statuses(spark, root, Thresholds()), expected)


def test_burrow_allowed_lag_cases(spark: SparkSession, tmp_path: Path) -> None:
    root = write_snapshots(tmp_path, [r for rows in ALLOWED_LAG_CASES.values() for r in rows])
    expected = spark.createDataFrame([
        ("case-12", "OK", "caught-up", 0),    # lag never above the allowed 50
        ("case-13", "STALLED", "frozen", 0),  # frozen, lag 100 -> 300 above the allowed 50
        ("case-14", "OK", "caught-up", 0),    # moving, lag within the allowed 50
    ], "topic string, status string, rule string, missing_snapshots int")
    assertDataFrameEqual(_statuses(spark, root, Thresholds(allowed_lag=50)), expected)
