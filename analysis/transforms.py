"""The stuck-queue job's transforms: snapshot rows in, one verdict per queue and one summary per group out.

Pure ``DataFrame -> DataFrame`` functions of built-in Spark functions (no Python UDFs), composed with
``df.transform``: the window (and up to an hour before it, where frozen runs began) and the columns read,
broadcasting groups left out, queues and owners numbered, progress marked per snapshot, one summary per queue
(of numbers only, the owners' ids looked up after), gaps counted, then
:func:`analysis.rules.judge`. They read and write nothing; :mod:`analysis.files` and
:mod:`analysis.stuck` do.

Imports only pyspark and the standard library so that it ships with spark-submit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from analysis.rules import STATUS_RANK, STUCK_STATUSES, Thresholds, Transform, allowed_lag, judge
from analysis.schema import QUEUE_KEY

COLUMNS_READ = ("ts", *QUEUE_KEY, "broker_offset", "consumer_offset", "pull_offset", "last_consumed_ts",
                "broker_last_ts", "owner", "owner_subscribed", "message_model", "error", "pop", "retry_deliveries")
"""The only snapshot columns the job reads (Parquet column pruning)."""

QUEUE_NO = "queue_no"
"""A queue's number among the queues read (1, 2, …, in the order of :data:`~analysis.schema.QUEUE_KEY`): each
queue's rows are shuffled, sorted and aggregated on it alone, so that the five key columns (four of them strings)
are neither carried through the shuffle nor compared in the sort; they are joined back to the one summary row of
each queue."""

OWNER_NO = "owner_no"
"""An owner's number among the owners read (1, 2, … in the order of the client ids; null: no owner)."""

ROW_COLUMNS = ("ts", "broker_offset", "consumer_offset", "pull_offset", OWNER_NO, "owner_subscribed", "pop",
               "retry_deliveries")
"""What :func:`mark_progress` and :func:`summarize_queues` read of an answered snapshot row besides its queue (and
``behind``, see :func:`answered_rows`)."""


SORT_KEY = "sort_key"
"""A row's queue number and time packed into one long (see :class:`SortKey`)."""


@dataclass(frozen=True)
class SortKey:
    """How a row's :data:`QUEUE_NO` and ``ts`` are packed into one long, :data:`SORT_KEY`: the queue number in the
    high bits, the time since ``base`` (in ``unit_us`` microseconds) in the low ``ts_bits``. Ordered by that one
    long, the rows are in the order of (queue number, ts) exactly, equal times tying exactly where they tied before.

    Spark sorts on a 64-bit prefix of the first sort column; with one long column the prefix is the whole key and
    the sort compares no rows, it orders the keys by radix (``spark.sql.sort.enableRadixSort``). Built by
    :meth:`fit` from what the job knows before reading: an upper bound of the queues (the rows of the files) and
    the time span read."""

    base: int
    """The earliest time that can be read, in units of ``unit_us`` since the epoch."""
    unit_us: int
    """1000 (every time read is a whole millisecond) or 1 (some are not)."""
    ts_bits: int
    """Bits of the time since ``base``; the queue number has the ``63 - ts_bits`` above them."""

    @classmethod
    def fit(cls, max_queues: int, first_ms: int, last_ms: int, whole_ms: bool) -> SortKey | None:
        """The key for at most ``max_queues`` queues numbered 1, 2, … and times from ``first_ms`` to ``last_ms``
        (in whole milliseconds when ``whole_ms``, else in microseconds); None when they do not fit in 63 bits."""
        unit_us = 1000 if whole_ms else 1
        base = first_ms * 1000 // unit_us
        # a time of ``last_ms`` rounded down may be up to 999 microseconds later
        ts_bits = max(1, ((last_ms * 1000 + 999) // unit_us - base).bit_length())
        if max_queues < 0 or last_ms < first_ms or max_queues.bit_length() + ts_bits > 63:
            return None
        return cls(base, unit_us, ts_bits)

    def column(self) -> Column:
        """:data:`SORT_KEY` of a row with :data:`QUEUE_NO` and ``ts`` inside the span :meth:`fit` was given."""
        ts = F.unix_millis(F.col("ts")) if self.unit_us == 1000 else F.unix_micros(F.col("ts"))
        return F.shiftleft(F.col(QUEUE_NO).cast("long"), self.ts_bits) + (ts - F.lit(self.base))


def select_window(since_ms: int, until_ms: int) -> Transform:
    """Keep the read columns and the snapshots with ``since <= ts <= until`` (pushed down to Parquet)."""
    since = F.timestamp_millis(F.lit(since_ms))
    until = F.timestamp_millis(F.lit(until_ms))

    def apply(df: DataFrame) -> DataFrame:
        return df.select(*COLUMNS_READ).where((F.col("ts") >= since) & (F.col("ts") <= until))

    return apply


def drop_broadcasting(df: DataFrame) -> DataFrame:
    """Broadcasting groups keep offsets on the clients; the broker's numbers say nothing about them."""
    return df.where(F.coalesce(F.col("message_model"), F.lit("")) != "BROADCASTING")


def number_queues(df: DataFrame) -> DataFrame:
    """One row per queue of ``df``: its :data:`~analysis.schema.QUEUE_KEY` and its :data:`QUEUE_NO` (dense, in
    the order of the key: the same numbers however often the plan computes them)."""
    return df.select(*QUEUE_KEY).distinct().select(
        "*", F.row_number().over(Window.orderBy(*QUEUE_KEY)).alias(QUEUE_NO))


def number_owners(df: DataFrame) -> DataFrame:
    """One row per owner of ``df`` (a client id): the owner and its :data:`OWNER_NO` (dense, in the order of the
    ids). The rows of a queue carry the number instead of the string: the shuffle and the sort carry less, the window
    compares two numbers, and the aggregate per queue holds only fixed-width values, which Spark compiles into
    generated code (an aggregate over structs or strings it interprets, row at a time)."""
    return df.select("owner").where(F.col("owner").isNotNull()).distinct().select(
        "*", F.row_number().over(Window.orderBy("owner")).alias(OWNER_NO))


def answered_rows(queues: DataFrame, owners: DataFrame, th: Thresholds) -> Transform:
    """The rows a broker answered, each named by its queue's number (``queues``, from :func:`number_queues`)
    instead of the five key columns and by its owner's number (``owners``, from :func:`number_owners`; null: no
    owner), with what :func:`mark_progress` needs of the topic: ``allowed``, the lag counted as caught up there,
    and ``behind``: the broker's newest message time less the last consumed message's, in milliseconds (only the
    last row's is read: one number through the shuffle instead of two times). Rows a broker failed to answer are
    removed: a gap, not a zero."""

    def apply(df: DataFrame) -> DataFrame:
        # a POP group's dead-letter queue has no committed offset of the group: its broker offset alone tells
        # the messages that reached it (its lag is unknown)
        dlq = F.col("topic").startswith("%DLQ%")
        pop_dlq = dlq & F.coalesce(F.col("pop"), F.lit(False))
        answered = df.where(
            F.col("error").isNull() & F.col("broker_offset").isNotNull()
            & (F.col("consumer_offset").isNotNull() | pop_dlq))
        return (answered.join(F.broadcast(queues), list(QUEUE_KEY)).join(F.broadcast(owners), "owner", "left")
                .select(QUEUE_NO, *ROW_COLUMNS, allowed_lag(th).alias("allowed"),
                        (F.unix_millis(F.col("broker_last_ts")) - F.unix_millis(F.col("last_consumed_ts")))
                        .alias("behind")))

    return apply


def mark_progress(th: Thresholds, since_ms: int | None = None, key: SortKey | None = None) -> Transform:
    """Per answered snapshot, in time order per queue: its lag, position and what starts there.

    The rows may begin before the window (``since_ms``; None: every row is in it), read back only to find
    where a frozen run began. Adds ``in_window``, ``lag``, ``rn`` (position among the rows read),
    ``prev_owner`` (the previous row's owner number), ``owner_changed``, ``seg_boundary`` (first snapshot of the
    window or under a new owner in it), ``run_boundary`` (first snapshot of a frozen run: the first row read,
    the consumer offset moved, the owner changed, or the previous snapshot was caught up — the consumer had
    nothing to do until then; the window's start is no boundary), ``caught_up`` (in the window) and ``rewind``
    (the consumer offset went back since the previous snapshot of the window). Only offset window functions
    (row_number, lag): one sort per queue, no running frames. Reads the rows of :func:`answered_rows`: they are
    shuffled on :data:`QUEUE_NO` and sorted on it and ``ts`` (with ``key``: on :data:`SORT_KEY` alone first), an
    order the aggregate after it reuses.
    """

    def apply(df: DataFrame) -> DataFrame:
        by_time = Window.partitionBy(QUEUE_NO).orderBy("ts")
        if key is not None:
            # sorted on the one long first (a radix sort), the window's sort on (queue number, key) finds its
            # rows in order already and only checks it
            df = df.select("*", key.column().alias(SORT_KEY)).repartition(QUEUE_NO).sortWithinPartitions(SORT_KEY)
            by_time = Window.partitionBy(QUEUE_NO).orderBy(SORT_KEY)
        in_window = F.lit(True) if since_ms is None else F.col("ts") >= F.timestamp_millis(F.lit(since_ms))
        answered = df.select(
            "*", in_window.alias("in_window"),
            F.when(F.col("consumer_offset").isNotNull(),
                   F.greatest(F.col("broker_offset") - F.col("consumer_offset"), F.lit(0))).alias("lag"),
        )
        step = answered.select(
            "*",
            F.row_number().over(by_time).alias("rn"),
            F.lag(OWNER_NO).over(by_time).alias("prev_owner"),
            F.lag("consumer_offset").over(by_time).alias("prev_co"),
            F.lag("lag").over(by_time).alias("prev_lag"),
            F.coalesce(F.lag("in_window").over(by_time), F.lit(False)).alias("prev_in_window"),
        )
        window_row = F.col("in_window")
        owner_changed = (F.col("rn") > 1) & ~F.col(OWNER_NO).eqNullSafe(F.col("prev_owner"))
        seg_boundary = window_row & (~F.col("prev_in_window") | owner_changed)
        run_boundary = (F.col("rn") == 1) | owner_changed | (F.col("consumer_offset") != F.col("prev_co")) | (
            F.col("prev_lag") <= F.col("allowed"))
        return step.select(
            "*",
            owner_changed.alias("owner_changed"),
            seg_boundary.alias("seg_boundary"),
            run_boundary.alias("run_boundary"),
            (window_row & (F.col("lag") <= F.col("allowed"))).alias("caught_up"),
            (window_row & F.col("prev_in_window") & (F.col("consumer_offset") < F.col("prev_co"))).alias("rewind"),
        )

    return apply


_FIRST = {"ts": "ts", "bo": "broker_offset", "co": "consumer_offset", "lag": "lag"}
_LAST = {"ts": "ts", "bo": "broker_offset", "co": "consumer_offset", "pull": "pull_offset", "lag": "lag", "rn": "rn",
         "owner": OWNER_NO, "subscribed": "owner_subscribed", "behind": "behind", "pop": "pop"}
_SEG_START = {"ts": "ts", "bo": "broker_offset", "co": "consumer_offset", "lag": "lag", "rn": "rn",
              "prev_owner": "prev_owner", "changed": "owner_changed"}
_RUN_START = {"ts": "ts", "bo": "broker_offset", "co": "consumer_offset", "pull": "pull_offset", "lag": "lag",
              "rn": "rn"}
_REWIND = {"ts": "ts", "before": "prev_co", "after": "consumer_offset"}


def _pick(name: str, fields: dict[str, str], at: Column, pick: Callable[[Column, Column], Column]) -> list[Column]:
    """``fields`` of the row where ``at`` is least or greatest (``pick``: min_by or max_by), each as its own
    column ``name__field`` (fixed-width buffers: a compiled aggregate), and ``name`` itself: that ``at`` (null: no
    row has one)."""
    found = F.min(at) if pick is F.min_by else F.max(at)
    return [found.alias(name), *(pick(F.col(column), at).alias(f"{name}__{field}") for field, column in fields.items())]


def _struct(name: str, fields: Sequence[str], **computed: Column) -> Column:
    """The struct of the columns :func:`_pick` made (null when no row had one), with ``computed`` fields."""
    made = [computed[f].alias(f) if f in computed else F.col(f"{name}__{f}").alias(f) for f in fields]
    return F.when(F.col(name).isNotNull(), F.struct(*made)).alias(name)


def summarize_queues(owners: DataFrame) -> Transform:
    """One row per queue with a snapshot in the window: its first and last snapshot there, the start of the last
    owner segment and of the last frozen run (the latest boundary rows; a run may have begun before the window,
    and ``run_start.seen`` is false when it was frozen already at the first row read), the last caught-up
    position, the highest consumer offset, the last rewind and the most deliveries retry copies showed in the
    window, per :data:`QUEUE_NO` (the rows of :func:`mark_progress`: no second shuffle). Rows are picked by their
    position ``rn``; the owners' numbers are turned back into their ids (``owners``, from :func:`number_owners`)
    on the one row per queue."""

    def apply(df: DataFrame) -> DataFrame:
        rn = F.col("rn")
        in_window = F.col("in_window")
        # older snapshot files do not say: not known to be POP, judged as before
        rows = df.withColumn("pop", F.coalesce(F.col("pop"), F.lit(False)))
        agg = rows.groupBy(QUEUE_NO).agg(
            F.count(F.when(in_window, rn)).alias("n_window"),
            # rows before the window, and rows that start nothing, have no position to pick them by
            *_pick("first", _FIRST, F.when(in_window, rn), F.min_by),
            *_pick("last", _LAST, F.when(in_window, rn), F.max_by),
            *_pick("seg_start", _SEG_START, F.when(F.col("seg_boundary"), rn), F.max_by),
            *_pick("run_start", _RUN_START, F.when(F.col("run_boundary"), rn), F.max_by),
            *_pick("rewind", _REWIND, F.when(F.col("rewind"), rn), F.max_by),
            F.max(F.when(F.col("caught_up"), rn)).alias("caught_up_rn"),
            F.max(F.when(in_window, F.col("consumer_offset"))).alias("co_max"),
            # the most deliveries the retry copies read back in the window showed (null: none read)
            F.max(F.when(in_window, F.col("retry_deliveries"))).alias("retry_deliveries"),
        ).where(F.col("n_window") > 0)
        # the two lookups read the same broadcast table (the plan reuses it)
        last_owner = owners.select(F.col(OWNER_NO).alias("last__owner"), F.col("owner").alias("last_owner"))
        prev_owner = owners.select(F.col(OWNER_NO).alias("seg_start__prev_owner"),
                                   F.col("owner").alias("seg_prev_owner"))
        named = (agg.join(F.broadcast(last_owner), "last__owner", "left")
                 .join(F.broadcast(prev_owner), "seg_start__prev_owner", "left"))
        return named.select(
            QUEUE_NO, "n_window",
            _struct("first", list(_FIRST)),
            _struct("last", list(_LAST), owner=F.col("last_owner")),
            _struct("seg_start", list(_SEG_START), prev_owner=F.col("seg_prev_owner")),
            _struct("run_start", [*_RUN_START, "seen"], seen=F.col("run_start__rn") > 1),
            "caught_up_rn", "co_max",
            _struct("rewind", list(_REWIND)),
            "retry_deliveries",
        )

    return apply


def count_missing(df: DataFrame) -> DataFrame:
    """Per queue, the snapshots in the window its broker failed to answer (Parquet skips the clean row groups)."""
    return (
        df.where(F.col("error").isNotNull())
        .groupBy(*QUEUE_KEY)
        .agg(F.count(F.lit(1)).alias("n_missing"), F.max_by("error", "ts").alias("last_error"),
             F.min("ts").alias("first_missing_ts"))
    )


def start_new_dead_letters(df: DataFrame) -> DataFrame:
    """A POP group's ``%DLQ%`` queue that first shows up in the window after a round that recorded the group on
    its broker (an answered row of another queue of the group there, and no row of this queue, not even a failed
    one) did not exist at that round: its ``first`` becomes broker offset 0 at that round, so the messages that
    created it count as growth. A round that did not read the group (only failed rows) makes nothing appear."""
    dlq = F.col("topic").startswith("%DLQ%")
    on_broker = Window.partitionBy("cluster", "group", "broker")
    recorded = F.min(F.when(~dlq, F.col("first.ts"))).over(on_broker)
    appeared = F.least(F.col("first.ts"), F.col("first_missing_ts"))
    born = dlq & F.coalesce(F.col("last.pop"), F.lit(False)) & (F.col("recorded_ts") < appeared)
    empty = F.struct(F.col("recorded_ts").alias("ts"), F.lit(0).cast("long").alias("bo"),
                     F.lit(None).cast("long").alias("co"), F.lit(None).cast("long").alias("lag"))
    return (df.withColumn("recorded_ts", recorded)
            .withColumn("first", F.when(born, empty).otherwise(F.col("first")))
            .drop("recorded_ts"))


def diagnose(snapshots: DataFrame, since_ms: int, until_ms: int, th: Thresholds | None = None,
             key: SortKey | None = None) -> DataFrame:
    """Snapshot rows in, one verdict per queue of the window out (see the module docstring for the statuses).

    Rows up to ``th.run_lookback_ms`` before the window are read too, only to find where a frozen run began.
    """
    th = th or Thresholds()
    read = snapshots.transform(select_window(since_ms - th.run_lookback_ms, until_ms)).transform(drop_broadcasting)
    queues = number_queues(read)
    owners = number_owners(read)
    summaries = (read.transform(answered_rows(queues, owners, th)).transform(mark_progress(th, since_ms, key))
                 .transform(summarize_queues(owners)).join(F.broadcast(queues), QUEUE_NO).drop(QUEUE_NO))
    missing = count_missing(read.where(F.col("ts") >= F.timestamp_millis(F.lit(since_ms))))
    return (summaries.join(missing, list(QUEUE_KEY), "full_outer").transform(start_new_dead_letters)
            .transform(judge(th)))


def summarize_groups(verdicts: DataFrame) -> DataFrame:
    """Per group: worst status, stuck queue count, total lag at the start and end of the window and its trend.

    ``%DLQ%`` queues are left out of the lag totals (they are not judged).
    """
    rank = F.create_map(*[x for name, r in STATUS_RANK.items() for x in (F.lit(name), F.lit(r))])
    judged = ~F.col("topic").startswith("%DLQ%")
    summary = verdicts.groupBy("cluster", "group").agg(
        F.max(F.struct(rank[F.col("status")], F.col("status"))).alias("worst"),
        F.count(F.lit(1)).cast("int").alias("queues"),
        F.count_if(F.col("status").isin(*STUCK_STATUSES)).cast("int").alias("stuck_queues"),
        F.coalesce(F.sum(F.when(judged, F.col("window_lag_start"))), F.lit(0)).cast("long").alias("total_lag_start"),
        F.coalesce(F.sum(F.when(judged, F.col("lag_end"))), F.lit(0)).cast("long").alias("total_lag_end"),
        F.min("window_start").alias("window_start"),
        F.max("window_end").alias("window_end"),
    )
    trend = (
        F.when(F.col("total_lag_end") > F.col("total_lag_start"), F.lit("growing"))
        .when(F.col("total_lag_end") < F.col("total_lag_start"), F.lit("shrinking"))
        .otherwise(F.lit("flat"))
    )
    return summary.select(
        "cluster", "group", F.col("worst.status").alias("status"), "queues", "stuck_queues",
        "total_lag_start", "total_lag_end", trend.alias("lag_trend"), "window_start", "window_end",
    )


def for_output(df: DataFrame) -> DataFrame:
    """Timestamps as ISO-8601 UTC strings, each also as epoch milliseconds in a ``*_ts`` column."""
    columns: list[Column] = []
    for field in df.schema.fields:
        if field.dataType.typeName() == "timestamp":
            columns.append(F.date_format(F.col(field.name), "yyyy-MM-dd'T'HH:mm:ss.SSS'Z'").alias(field.name))
            columns.append(F.unix_millis(F.col(field.name)).alias(field.name + "_ts"))
        else:
            columns.append(F.col(field.name))
    return df.select(*columns)
