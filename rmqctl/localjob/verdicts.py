"""Snapshot rows in, one verdict per queue and one summary per group out: the Spark job's rules on pyarrow.

The steps are those of ``analysis/transforms.py`` and ``analysis/rules.py``, in the same order and with the
same null rules: the window (and up to :attr:`Thresholds.run_lookback_ms` before it, where frozen runs began),
broadcasting groups left out, failed rounds counted as gaps, then per queue in time order its lag, where its
owner changed and where its frozen run began, one summary per queue and the first rule that holds. The row
work is vectorised: the five queue columns are folded into one 64-bit key (dictionary codes), rows are sorted
once on (key, ts), the previous row of each is the row before it in that order, and one hash aggregation
finds each queue's first and last row in the window and its latest owner and run boundaries. Only the
verdicts themselves, one per queue, are built in Python.

Timestamps travel as integer microseconds (as Spark holds them) and leave as ISO-8601 text with milliseconds
plus epoch milliseconds (``*_ts``), exactly as the job's ``for_output`` writes them.

Imports pyarrow, the standard library and :mod:`rmqctl.stuck` only.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from rmqctl import stuck

QUEUE_KEY = ("cluster", "group", "topic", "broker", "queue_id")
"""Columns that name one queue of one consumer group."""

COLUMNS_READ = ("ts", *QUEUE_KEY, "broker_offset", "consumer_offset", "pull_offset", "last_consumed_ts",
                "broker_last_ts", "owner", "owner_subscribed", "message_model", "error", "pop", "retry_deliveries")
"""The only snapshot columns the engine reads (those the Spark job reads)."""

ROWS = pa.schema([
    ("ts", pa.int64()), ("cluster", pa.string()), ("group", pa.string()), ("topic", pa.string()),
    ("broker", pa.string()), ("queue_id", pa.int64()), ("broker_offset", pa.int64()),
    ("consumer_offset", pa.int64()), ("pull_offset", pa.int64()), ("last_consumed_ts", pa.int64()),
    ("broker_last_ts", pa.int64()), ("owner", pa.string()), ("owner_subscribed", pa.bool_()),
    ("message_model", pa.string()), ("error", pa.string()), ("pop", pa.bool_()), ("retry_deliveries", pa.int64()),
])
"""The rows :func:`diagnose` takes: :data:`COLUMNS_READ` with every timestamp as epoch microseconds."""

TIMESTAMP_COLUMNS = frozenset({"ts", "last_consumed_ts", "broker_last_ts"})

RULE_STATUS = {
    "dlq-growing": stuck.DEAD_LETTERING, "dlq": stuck.DLQ, "min-snapshots": stuck.INSUFFICIENT_DATA,
    "retry-growing": stuck.REDELIVERING, "rewind": stuck.REWOUND,
    "no-new-messages": stuck.IDLE, "caught-up": stuck.OK, "owner-changed": stuck.INSUFFICIENT_DATA,
    "pop-grace": stuck.INSUFFICIENT_DATA, "not-popped": stuck.STALLED,
    "no-owner": stuck.ORPHANED, "owner-not-subscribed": stuck.ORPHANED, "offset-pinned": stuck.STALLED,
    "frozen": stuck.STALLED, "lag-growing": stuck.LAGGING, "moving": stuck.OK,
}
"""The status each rule gives (the job's table, in its order)."""

_ON_RUN = frozenset({"pop-grace", "not-popped", "no-owner", "owner-not-subscribed", "offset-pinned", "frozen"})
_ON_SEGMENT = frozenset({"owner-changed", "lag-growing", "moving"})


@dataclass(frozen=True)
class Thresholds:
    """The knobs of the rules; the defaults are the command's (``rmqctl/stuck.py``)."""

    min_snapshots: int = stuck.MIN_SNAPSHOTS
    allowed_lag: int = stuck.ALLOWED_LAG
    retry_allowed_lag: int = stuck.RETRY_ALLOWED_LAG
    run_lookback_ms: int = stuck.RUN_LOOKBACK_MS
    consume_timeout_ms: int = stuck.CONSUME_TIMEOUT_MS
    pop_commit_grace_ms: int = stuck.POP_COMMIT_GRACE_MS
    min_deliveries: int = stuck.MIN_DELIVERIES


# --------------------------------------------------------------------------------------------
# formatting, as Spark's format_string (Java's Formatter) and date_format write it


def _j(value: Any) -> str:
    """A value as Java's ``%s``/``%d`` prints it: null as ``null``."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    return str(value)


def _ms(us: int | None) -> int | None:
    """Spark's ``unix_millis``: whole milliseconds, rounded down."""
    return None if us is None else us // 1000


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def _datetime(us: int) -> dt.datetime:
    return _EPOCH + dt.timedelta(microseconds=us)


# thousands of queues share the few times of the snapshot rounds: each is formatted once
@functools.lru_cache(maxsize=65536)
def _clock(us: int | None) -> str:
    return "null" if us is None else _datetime(us).strftime("%H:%M:%S")


@functools.lru_cache(maxsize=65536)
def iso_ms(us: int | None) -> str | None:
    """``yyyy-MM-dd'T'HH:mm:ss.SSS'Z'`` in UTC (the job's output form of a timestamp)."""
    if us is None:
        return None
    moment = _datetime(us)
    return f"{moment.year:04d}-{moment:%m-%dT%H:%M:%S}.{moment.microsecond // 1000:03d}Z"


def duration(ms: int | None) -> str:
    """The job's ``_duration``: ``45s``, ``9m30s``, ``2h05m``; ``unknown`` for a missing number."""
    if ms is None:
        return "unknown"
    secs = ms // 1000
    if secs < 60:
        return f"{secs}s"
    if secs < 3600:
        return f"{secs // 60}m{secs % 60:02d}s"
    return f"{secs // 3600}h{secs % 3600 // 60:02d}m"


# --------------------------------------------------------------------------------------------
# rows to per-queue facts


def _array(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column


def _codes(column: pa.Array | pa.ChunkedArray) -> tuple[pa.Array, int]:
    """Dictionary codes of a column (null stays null) and how many distinct values it holds."""
    encoded = pc.dictionary_encode(_array(column))
    return pc.cast(encoded.indices, pa.int64()), max(1, len(encoded.dictionary))


def _queue_order(table: pa.Table) -> tuple[pa.Array, list[pa.Array]]:
    """The row order that keeps each queue's rows together in time order, and the queue's sort key(s) in
    that order: one 64-bit code folded from the dictionary codes of the five queue columns when their
    cardinalities allow it, else the five codes."""
    codes, sizes = zip(*(_codes(table[name]) for name in QUEUE_KEY), strict=True)
    product = 1
    for size in sizes:
        product *= size
    if product < (1 << 62):
        key = codes[0]
        for code, size in zip(codes[1:], sizes[1:], strict=True):
            key = pc.add(pc.multiply(key, size), code)
        keys = [key]
    else:
        keys = list(codes)
    names = [f"k{i}" for i in range(len(keys))]
    sortable = pa.table({**dict(zip(names, keys, strict=True)), "ts": table["ts"]})
    order = pc.sort_indices(sortable, sort_keys=[(k, "ascending") for k in [*names, "ts"]])
    return order, [pc.take(k, order) for k in keys]


def _previous(values: pa.Array, first_of_queue: pa.Array) -> pa.Array:
    """Each row's value on the row before it in the same queue (null on a queue's first row)."""
    if len(values) == 0:
        return values
    shifted = pa.concat_arrays([pa.nulls(1, values.type), values.slice(0, len(values) - 1)])
    return pc.if_else(first_of_queue, pa.scalar(None, values.type), shifted)


@dataclass(frozen=True)
class _Ordered:
    """The answered rows in (queue, time) order: ``order`` maps a position to the row of the input table,
    and the columns computed per position."""

    order: pa.Array
    computed: pa.Table


def _queue_facts(answered: pa.Table, since_us: int, th: Thresholds) -> tuple[_Ordered, list[dict[str, Any]]]:
    """The answered rows in (queue, time) order, and per queue with a row in the window the positions of
    its first and last rows there, its latest owner segment and frozen run starts, its latest rewind, its
    last caught-up row number, its highest committed offset in the window and its count of rows there."""
    n = answered.num_rows
    order, keys = _queue_order(answered)
    if n:
        changed = None
        for column in keys:
            step = pc.not_equal(column.slice(1), column.slice(0, n - 1))
            changed = step if changed is None else pc.or_(changed, step)
        assert changed is not None
        first = pa.concat_arrays([pa.array([True]), changed])
    else:
        first = pa.array([], pa.bool_())
    pos = pa.array(range(n), pa.int64())
    queue = pc.subtract(pc.cumulative_sum(pc.cast(first, pa.int64())), 1)
    start = pc.fill_null_forward(pc.if_else(first, pos, pa.scalar(None, pa.int64())))
    rn = pc.add(pc.subtract(pos, start), 1)

    retry = pc.starts_with(answered["topic"], stuck.RETRY_PREFIX)
    owner_code = _codes(answered["owner"])[0]
    ts = pc.take(answered["ts"], order)
    co = pc.take(answered["consumer_offset"], order)
    owner = pc.take(owner_code, order)
    lag = pc.if_else(pc.is_null(co), pa.scalar(None, pa.int64()),
                     pc.max_element_wise(pc.subtract(pc.take(answered["broker_offset"], order), co), 0))
    allowed = pc.if_else(pc.take(retry, order), th.retry_allowed_lag, th.allowed_lag)
    deliveries = _array(pc.take(answered["retry_deliveries"], order))
    ts, co, owner, lag = _array(ts), _array(co), _array(owner), _array(lag)
    in_window = pc.greater_equal(ts, since_us)
    prev_owner = _previous(owner, first)
    prev_co = _previous(co, first)
    prev_lag = _previous(lag, first)
    prev_in = pc.fill_null(_previous(in_window, first), False)
    same_owner = pc.if_else(pc.and_(pc.is_null(owner), pc.is_null(prev_owner)), True,
                            pc.fill_null(pc.equal(owner, prev_owner), False))
    owner_changed = pc.and_(pc.invert(first), pc.invert(same_owner))
    seg_boundary = pc.and_(in_window, pc.or_(pc.invert(prev_in), owner_changed))
    run_boundary = pc.or_(pc.or_(first, owner_changed),
                          pc.or_(pc.fill_null(pc.not_equal(co, prev_co), False),
                                 pc.fill_null(pc.less_equal(prev_lag, allowed), False)))
    caught_up = pc.and_(in_window, pc.less_equal(lag, allowed))
    rewind = pc.and_(pc.and_(in_window, prev_in), pc.fill_null(pc.less(co, prev_co), False))
    null = pa.scalar(None, pa.int64())
    marks = pa.table({
        "q": queue,
        "w": pc.if_else(in_window, pos, null),
        "seg": pc.if_else(seg_boundary, pos, null),
        "run": pc.if_else(run_boundary, pos, null),
        "cu": pc.if_else(caught_up, rn, null),
        "co": pc.if_else(in_window, co, null),
        "rw": pc.if_else(rewind, pos, null),
        "rd": pc.if_else(in_window, deliveries, null),
    })
    summary = marks.group_by("q").aggregate([
        ("w", "min"), ("w", "max"), ("w", "count"), ("seg", "max"), ("run", "max"), ("cu", "max"), ("co", "max"),
        ("rw", "max"), ("rd", "max")])
    summary = summary.filter(pc.greater(summary["w_count"], 0))
    facts = summary.rename_columns([{"w_min": "first", "w_max": "last", "w_count": "n_window",
                                     "seg_max": "seg", "run_max": "run", "cu_max": "caught_up_rn",
                                     "co_max": "co_max", "rw_max": "rewind",
                                     "rd_max": "retry_deliveries"}.get(c, c)
                                    for c in summary.column_names]).to_pylist()
    computed = pa.table({"lag": lag, "rn": rn, "prev_co": prev_co, "owner_changed": owner_changed})
    return _Ordered(order, computed), facts


def _pick(answered: pa.Table, ordered: _Ordered, positions: Sequence[int | None],
          columns: Sequence[str]) -> list[dict[str, Any] | None]:
    """The given columns (of the input, or computed per position) of the rows at ``positions`` in queue
    order (None where a position is None)."""
    wanted = pa.array([p for p in positions if p is not None], pa.int64())
    own = [c for c in columns if c in ordered.computed.column_names]
    taken = answered.select([c for c in columns if c not in own]).take(pc.take(ordered.order, wanted))
    for name in own:
        taken = taken.append_column(name, pc.take(ordered.computed[name], wanted))
    found = iter(taken.to_pylist())
    return [next(found) if p is not None else None for p in positions]


_FIRST = ("ts", "broker_offset", "consumer_offset", "lag")
_LAST = (*QUEUE_KEY, "ts", "broker_offset", "consumer_offset", "pull_offset", "lag", "rn", "owner",
         "owner_subscribed", "last_consumed_ts", "broker_last_ts", "pop")
_SEG = ("ts", "broker_offset", "consumer_offset", "lag", "rn", "owner_changed")
_RUN = ("ts", "broker_offset", "consumer_offset", "pull_offset", "lag", "rn")
_REWIND = ("ts", "prev_co", "consumer_offset")


# --------------------------------------------------------------------------------------------
# the verdicts


def diagnose(snapshots: pa.Table, since_ms: int, until_ms: int, th: Thresholds | None = None) -> list[dict[str, Any]]:
    """Snapshot rows (:data:`ROWS`) in, one verdict per queue of the window out, ordered by queue, each as the
    job's ``for_output`` writes it (timestamps as text plus ``*_ts`` epoch milliseconds)."""
    th = th or Thresholds()
    ts = snapshots["ts"]
    lower_us, since_us, until_us = (since_ms - th.run_lookback_ms) * 1000, since_ms * 1000, until_ms * 1000
    read = pc.and_(pc.and_(pc.greater_equal(ts, lower_us), pc.less_equal(ts, until_us)),
                   pc.not_equal(pc.fill_null(snapshots["message_model"], ""), "BROADCASTING"))
    read = pc.fill_null(read, False)
    error = snapshots["error"]
    missing_rows = snapshots.filter(pc.and_(read, pc.and_(pc.is_valid(error), pc.greater_equal(ts, since_us))))
    # a POP group's dead-letter queue has no committed offset of the group: its broker offset alone tells
    # the messages that reached it (its lag is unknown)
    pop_dlq = pc.fill_null(pc.and_(pc.starts_with(snapshots["topic"], stuck.DLQ_PREFIX), snapshots["pop"]), False)
    answered = snapshots.filter(pc.and_(read, pc.and_(
        pc.is_null(error), pc.and_(pc.is_valid(snapshots["broker_offset"]),
                                   pc.or_(pc.is_valid(snapshots["consumer_offset"]), pop_dlq)))))

    # gaps: per queue, the rounds of the window its broker failed to answer and the latest error
    missing: dict[tuple[Any, ...], list[Any]] = {}
    for r in missing_rows.select([*QUEUE_KEY, "ts", "error"]).to_pylist():
        key = tuple(r[k] for k in QUEUE_KEY)
        seen = missing.get(key)
        if seen is None:
            missing[key] = [1, r["ts"], r["error"], r["ts"]]
        else:
            seen[0] += 1
            if r["ts"] > seen[1]:
                seen[1], seen[2] = r["ts"], r["error"]
            seen[3] = min(seen[3], r["ts"])

    ordered, facts = _queue_facts(answered, since_us, th)
    firsts = _pick(answered, ordered, [f["first"] for f in facts], _FIRST)
    lasts = _pick(answered, ordered, [f["last"] for f in facts], _LAST)
    _start_new_dead_letters(firsts, lasts, missing)
    segs = _pick(answered, ordered, [f["seg"] for f in facts], _SEG)
    # the owner before a segment that began with an owner change: the row before it, of the same queue
    before_segs = _pick(answered, ordered, [f["seg"] - 1 if f["seg"] else None for f in facts], ("owner",))
    for seg, before in zip(segs, before_segs, strict=True):
        if seg is not None:
            seg["prev_owner"] = before["owner"] if before is not None and seg["rn"] > 1 else None
    runs = _pick(answered, ordered, [f["run"] for f in facts], _RUN)
    rewinds = _pick(answered, ordered, [f["rewind"] for f in facts], _REWIND)
    verdicts: dict[tuple[Any, ...], dict[str, Any]] = {}
    for fact, first, last, seg, run, rewind in zip(facts, firsts, lasts, segs, runs, rewinds, strict=True):
        assert last is not None
        key = tuple(last[k] for k in QUEUE_KEY)
        gap = missing.pop(key, None)
        verdicts[key] = _judge(key, fact, first, last, seg, run, rewind, gap, th)
    for key, gap in missing.items():  # queues whose broker failed every round of the window
        verdicts[key] = _judge(key, {"n_window": 0, "caught_up_rn": None, "co_max": None, "retry_deliveries": None},
                               None, None, None, None, None, gap, th)
    return [verdicts[k] for k in sorted(verdicts)]


def _start_new_dead_letters(firsts: list[dict[str, Any] | None], lasts: list[dict[str, Any] | None],
                            missing: dict[tuple[Any, ...], list[Any]]) -> None:
    """A POP group's ``%DLQ%`` queue that first shows up in the window after a round that recorded the group on
    its broker (an answered row of another queue of the group there, and no row of this queue, not even a
    failed one) did not exist at that round: it starts at broker offset 0 there (``first`` is replaced), so the
    messages that created it count as growth. The job's ``start_new_dead_letters``, row for row."""
    recorded: dict[tuple[Any, ...], int] = {}
    for first, last in zip(firsts, lasts, strict=True):
        if first is None or last is None or last["topic"].startswith(stuck.DLQ_PREFIX):
            continue
        where = (last["cluster"], last["group"], last["broker"])
        recorded[where] = min(recorded.get(where, first["ts"]), first["ts"])
    for i, (first, last) in enumerate(zip(firsts, lasts, strict=True)):
        if first is None or last is None or not (last["topic"].startswith(stuck.DLQ_PREFIX) and last["pop"] is True):
            continue
        since = recorded.get((last["cluster"], last["group"], last["broker"]))
        gap = missing.get(tuple(last[k] for k in QUEUE_KEY))
        appeared = first["ts"] if gap is None else min(first["ts"], gap[3])
        if since is not None and since < appeared:
            firsts[i] = {"ts": since, "broker_offset": 0, "consumer_offset": None, "lag": None}


def _judge(key: tuple[Any, ...], fact: dict[str, Any], first: dict[str, Any] | None, last: dict[str, Any] | None,
           seg: dict[str, Any] | None, run: dict[str, Any] | None, rewind: dict[str, Any] | None,
           gap: list[Any] | None, th: Thresholds) -> dict[str, Any]:
    """One queue's verdict: the first rule that holds, its explanation and the numbers behind it."""
    cluster, group, topic, broker, queue_id = key
    n_window = int(fact["n_window"] or 0)
    n_missing, last_error = (gap[0], gap[2]) if gap else (0, None)
    allowed = th.retry_allowed_lag if topic.startswith(stuck.RETRY_PREFIX) else th.allowed_lag

    def of(row: dict[str, Any] | None, name: str) -> Any:
        return None if row is None else row[name]

    last_lag = of(last, "lag")
    last_rn, seg_rn, run_rn = of(last, "rn"), of(seg, "rn"), of(run, "rn")
    seg_n = None if last_rn is None or seg_rn is None else last_rn - seg_rn + 1
    frozen_n = None if last_rn is None or run_rn is None else last_rn - run_rn + 1
    last_ms, run_ms = _ms(of(last, "ts")), _ms(of(run, "ts"))
    frozen_ms = None if last_ms is None or run_ms is None else last_ms - run_ms
    if last_lag == 0:
        behind_ms: int | None = 0
    else:
        broker_last, consumed = _ms(of(last, "broker_last_ts")), _ms(of(last, "last_consumed_ts"))
        behind_ms = None if broker_last is None or consumed is None else broker_last - consumed
    run_seen = None if run_rn is None else run_rn > 1
    co_max, caught_up_rn = fact["co_max"], fact["caught_up_rn"]

    def holds(value: bool | None) -> bool:
        return value is True

    def gt(a: Any, b: Any) -> bool | None:
        return None if a is None or b is None else a > b

    def le(a: Any, b: Any) -> bool | None:
        return None if a is None or b is None else a <= b

    def negated(value: bool | None) -> bool | None:
        return None if value is None else not value

    def both(*values: bool | None) -> bool | None:
        # SQL's AND: false wins, then null
        if any(v is False for v in values):
            return False
        return None if any(v is None for v in values) else True

    stuck_shape = None if frozen_n is None else frozen_n >= th.min_snapshots
    pulled = gt(of(last, "pull_offset"), of(run, "pull_offset"))
    pulled_while_frozen = False if pulled is None else pulled
    subscribed = of(last, "owner_subscribed")
    # older files say nothing of POP: judged as before
    pop = of(last, "pop") is True
    grew = gt(of(last, "broker_offset"), of(first, "broker_offset"))
    deliveries = fact["retry_deliveries"]
    checks: list[tuple[str, bool | None]] = [
        ("min-snapshots", last is None),
        ("dlq-growing", both(topic.startswith(stuck.DLQ_PREFIX), pop, grew)),
        ("dlq", topic.startswith(stuck.DLQ_PREFIX)),
        ("min-snapshots", n_window < th.min_snapshots),
        ("retry-growing", both(pop, topic.startswith(stuck.RETRY_PREFIX), grew,
                               deliveries is None or deliveries >= th.min_deliveries)),
        # a queue frozen since it went back is judged by the stuck rules below, not called REWOUND
        ("rewind", both(gt(co_max, of(last, "consumer_offset")), negated(both(stuck_shape, gt(last_lag, allowed))))),
        ("no-new-messages", both(None if last is None or first is None else
                                 last["broker_offset"] == first["broker_offset"], le(last_lag, allowed))),
        ("caught-up", le(last_lag, allowed)),
        ("owner-changed", None if seg_n is None else seg_n < th.min_snapshots),
        ("pop-grace", both(stuck_shape, pop, run_seen,
                           None if frozen_ms is None else frozen_ms < th.pop_commit_grace_ms)),
        ("not-popped", both(stuck_shape, pop)),
        ("no-owner", both(stuck_shape, last is not None and last["owner"] is None)),
        ("owner-not-subscribed", both(stuck_shape, None if subscribed is None else subscribed is False)),
        ("offset-pinned", both(stuck_shape, pulled_while_frozen,
                               None if frozen_ms is None else frozen_ms <= th.consume_timeout_ms)),
        ("frozen", stuck_shape),
        ("lag-growing", both(True if caught_up_rn is None else (None if seg_rn is None else caught_up_rn < seg_rn),
                             gt(last_lag, of(seg, "lag")))),
    ]
    rule = next((rule_id for rule_id, condition in checks if holds(condition)), "moving")
    reason = _reason(rule, topic, th, allowed, n_window, n_missing, last_error, first, last, seg, run, rewind,
                     seg_n, frozen_n, frozen_ms, behind_ms, run_seen, co_max, deliveries)
    on_run, on_segment = rule in _ON_RUN, rule in _ON_SEGMENT
    span = run if on_run else seg if on_segment else first
    changed = of(seg, "owner_changed") is True
    verdict: dict[str, Any] = {
        "cluster": cluster, "group": group, "topic": topic, "broker": broker, "queue_id": queue_id,
        "status": RULE_STATUS[rule], "rule": rule, "reason": reason,
    }
    _put_ts(verdict, "window_start", of(span, "ts"))
    _put_ts(verdict, "window_end", of(last, "ts"))
    verdict.update({
        "snapshots": frozen_n if on_run else seg_n if on_segment else n_window,
        "window_snapshots": n_window,
        "missing_snapshots": n_missing,
        "owner": of(last, "owner"),
    })
    _put_ts(verdict, "owner_since", of(seg, "ts") if changed else None)
    verdict.update({
        "previous_owner": of(seg, "prev_owner") if changed else None,
        "broker_offset_start": of(span, "broker_offset"),
        "broker_offset_end": of(last, "broker_offset"),
        "consumer_offset_start": of(span, "consumer_offset"),
        "consumer_offset_end": of(last, "consumer_offset"),
        "lag_start": of(span, "lag"),
        "lag_end": last_lag,
        "lag_time_ms": behind_ms,
        "window_lag_start": of(first, "lag"),
    })
    _put_ts(verdict, "frozen_since", of(run, "ts"))
    verdict["frozen_ms"] = frozen_ms if on_run else None
    verdict["frozen_start_seen"] = run_seen if on_run else None
    return verdict


def _put_ts(verdict: dict[str, Any], name: str, us: int | None) -> None:
    verdict[name] = iso_ms(us)
    verdict[name + "_ts"] = _ms(us)


def _reason(rule: str, topic: str, th: Thresholds, allowed: int, n_window: int, n_missing: int,
            last_error: str | None, first: dict[str, Any] | None, last: dict[str, Any] | None,
            seg: dict[str, Any] | None, run: dict[str, Any] | None, rewind: dict[str, Any] | None,
            seg_n: int | None, frozen_n: int | None, frozen_ms: int | None, behind_ms: int | None,
            run_seen: bool | None, co_max: int | None, deliveries: int | None = None) -> str:
    """The job's sentence for ``rule``, word for word (``analysis/rules.py``)."""
    if rule == "min-snapshots":
        if last is None:
            return f"no answered snapshot in the window: {n_missing} missing (last error: {_j(last_error)})"
        return f"only {n_window} snapshot(s) in the window ({n_missing} missing), {th.min_snapshots} needed"
    assert last is not None
    f = first or {}
    s = seg or {}
    r = run or {}
    lco, lbo, llag = _j(last["consumer_offset"]), _j(last["broker_offset"]), _j(last["lag"])
    owner_text = last["owner"] if last["owner"] is not None else "nobody"
    behind = duration(behind_ms)
    since = _clock(r.get("ts")) if run_seen else _clock(r.get("ts")) + " or earlier"
    frozen_for = duration(frozen_ms) if run_seen else "at least " + duration(frozen_ms)
    rise = None if r.get("broker_offset") is None else last["broker_offset"] > r["broker_offset"]
    work = (f"while broker offset rose {_j(r.get('broker_offset'))} -> {lbo}" if rise
            else f"with a backlog of {_j(r.get('lag'))} and no new messages")
    owner_moved = f" (moved there at {_clock(s.get('ts'))})" if s.get("owner_changed") else ""
    # a frozen run that began where the committed offset went back (a reset) says so
    back = rewind or {}
    went_back = (f", where it went back from {_j(back.get('prev_co'))},"
                 if back.get("ts") is not None and back.get("ts") == r.get("ts") else "")
    if rule == "dlq-growing":
        return (f"{_j(last['broker_offset'] - f['broker_offset'])} message(s) of this POP group reached its "
                f"dead-letter queue in the window: broker offset {_j(f.get('broker_offset'))} -> {lbo}")
    if rule == "retry-growing":
        read = ("no copy was read back, so how often each was delivered is unknown" if deliveries is None else
                f"copies read back were delivered up to {deliveries} times ({th.min_deliveries} or more is "
                f"redelivery)")
        return (f"{_j(last['broker_offset'] - f['broker_offset'])} copies written to this POP retry queue in the "
                f"window (broker offset {_j(f.get('broker_offset'))} -> {lbo}): messages failed or not ACKed "
                f"come back again and again; {read}")
    if rule == "pop-grace":
        return (f"POP queue: consumer offset at {lco} for {duration(frozen_ms)}, under the "
                f"{duration(th.pop_commit_grace_ms)} POP commit grace; lag {llag}")
    if rule == "not-popped":
        return (f"POP queue: consumer offset frozen at {lco} since {since} ({_j(frozen_n)} snapshots, "
                f"{frozen_for}) {work} and no client popped a message; lag {_j(r.get('lag'))} -> {llag}, "
                f"{behind} behind")
    if rule == "dlq":
        return (f"dead-letter queue, reported not judged: {llag} message(s) not consumed, broker offset "
                f"{_j(f.get('broker_offset'))} -> {lbo}")
    if rule == "rewind":
        w = rewind or {}
        return (f"consumer offset went back from {_j(w.get('prev_co'))} to {_j(w.get('consumer_offset'))} at "
                f"{_clock(w.get('ts'))} and has not caught up (now {lco}, was {_j(co_max)})")
    if rule == "no-new-messages":
        return f"no new messages: broker offset stayed at {lbo} over {n_window} snapshots; lag {llag}"
    if rule == "caught-up":
        return (f"caught up: lag {llag} <= {allowed} at the last snapshot; consumer offset "
                f"{_j(f.get('consumer_offset'))} -> {lco}")
    if rule == "owner-changed":
        return (f"owner changed to {owner_text} at {_clock(s.get('ts'))}; only {_j(seg_n)} snapshot(s) since, "
                f"{th.min_snapshots} needed")
    if rule == "no-owner":
        return (f"no owner: consumer offset frozen at {lco}{went_back} since {since} ({_j(frozen_n)} snapshots) "
                f"{work}; "
                f"lag {_j(r.get('lag'))} -> {llag}, {behind} behind")
    if rule == "owner-not-subscribed":
        return (f"owner {owner_text} does not subscribe {topic}: consumer offset frozen at {lco}{went_back} "
                f"since {since} "
                f"({_j(frozen_n)} snapshots) {work}; lag {_j(r.get('lag'))} -> {llag}, {behind} behind")
    if rule == "offset-pinned":
        return (f"committed offset held at {lco}{went_back} since {since} ({_j(frozen_n)} snapshots, "
                f"{frozen_for}) while "
                f"its owner {owner_text} keeps pulling (pull offset {_j(r.get('pull_offset'))} -> "
                f"{_j(last['pull_offset'])}); lag {llag}: one unfinished message or a hung listener, the offsets "
                f"cannot tell which (a concurrent consumer sends a message back after consumeTimeout "
                f"{duration(th.consume_timeout_ms)})")
    if rule == "frozen":
        return (f"consumer offset frozen at {lco}{went_back} since {since} ({_j(frozen_n)} snapshots, "
                f"{frozen_for}) {work} "
                f"under owner {owner_text}{owner_moved}; lag {_j(r.get('lag'))} -> {llag}, {behind} behind")
    if rule == "lag-growing":
        return (f"consumer moving ({_j(s.get('consumer_offset'))} -> {lco}) but lag grew {_j(s.get('lag'))} -> "
                f"{llag} and never got within {allowed}; {behind} behind")
    return (f"consumer moving: offset {_j(s.get('consumer_offset'))} -> {lco}, lag {_j(s.get('lag'))} -> "
            f"{llag}")


def summarize_groups(queues: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per group, ordered: worst status, queue and stuck-queue counts, total lag at the window's start and
    end (``%DLQ%`` queues left out) and its trend, and the span the verdicts cover."""
    by_group: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for q in queues:
        by_group.setdefault((q["cluster"], q["group"]), []).append(q)
    out = []
    for (cluster, group), members in sorted(by_group.items()):
        worst = max((stuck.STATUS_RANK[q["status"]], q["status"]) for q in members)[1]
        judged = [q for q in members if not q["topic"].startswith(stuck.DLQ_PREFIX)]
        lag_start = sum(q["window_lag_start"] for q in judged if q["window_lag_start"] is not None)
        lag_end = sum(q["lag_end"] for q in judged if q["lag_end"] is not None)
        starts = [q["window_start_ts"] for q in members if q["window_start_ts"] is not None]
        ends = [q["window_end_ts"] for q in members if q["window_end_ts"] is not None]
        first_ms, last_ms = (min(starts) if starts else None), (max(ends) if ends else None)
        out.append({
            "cluster": cluster, "group": group, "status": worst, "queues": len(members),
            "stuck_queues": sum(1 for q in members if q["status"] in stuck.STUCK_STATUSES),
            "total_lag_start": lag_start, "total_lag_end": lag_end,
            "lag_trend": "growing" if lag_end > lag_start else "shrinking" if lag_end < lag_start else "flat",
            "window_start": None if first_ms is None else iso_ms(first_ms * 1000), "window_start_ts": first_ms,
            "window_end": None if last_ms is None else iso_ms(last_ms * 1000), "window_end_ts": last_ms,
        })
    return out
