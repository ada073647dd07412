"""The stuck-queue rules: from one summary row per queue to its verdict, status and explanation.

Each rule is a condition over a queue's facts in the window (its first and last answered snapshot,
the start of the part under its current owner and of its frozen run, its highest committed offset,
its last rewind); they are tried in the order of :data:`RULE_STATUS` and the first that holds gives
the verdict. ``docs/snapshots.md`` describes them for users. :class:`Thresholds` holds the knobs;
their defaults, the status names and their order are :mod:`analysis.definition`'s, the one definition of a
stuck queue that the doctor uses too.

Built-in Spark functions only (no Python UDFs). Imports only pyspark, the standard library and
:mod:`analysis.definition` (standard library only itself) so that it ships with spark-submit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, LongType

import analysis.definition as stuck
from analysis.schema import QUEUE_KEY

Transform = Callable[[DataFrame], DataFrame]

STATUS_RANK = stuck.STATUS_RANK
"""Severity of each status; a group's status is its worst queue's."""

STUCK_STATUSES = stuck.STUCK_STATUSES
"""Statuses of a stuck queue (the command exits 1 on them)."""

POP_STATUSES = stuck.POP_STATUSES
"""Statuses of a POP group's retry and dead-letter queues (the command exits 1 on them too)."""

@dataclass(frozen=True)
class Thresholds:
    """The knobs of the rules; the defaults are the command's defaults."""

    min_snapshots: int = stuck.MIN_SNAPSHOTS
    """Fewer snapshots than this (in the window, or since the owner changed) gives INSUFFICIENT_DATA."""
    allowed_lag: int = stuck.ALLOWED_LAG
    """Lag at or below this counts as caught up (Burrow's ``allowed-lag``)."""
    retry_allowed_lag: int = stuck.RETRY_ALLOWED_LAG
    """The same for ``%RETRY%`` queues: a few redelivered messages waiting is normal there."""
    run_lookback_ms: int = stuck.RUN_LOOKBACK_MS
    """How far before the window rows are read to find where a frozen run began (only for that)."""
    consume_timeout_ms: int = stuck.CONSUME_TIMEOUT_MS
    """The client's ``consumeTimeout``: up to this, a committed offset held while pulls go on may be one
    unfinished message; past it the client would have sent that message back."""
    pop_commit_grace_ms: int = stuck.POP_COMMIT_GRACE_MS
    """A POP queue frozen for less than this says nothing yet (POP's commit trails the last message)."""
    min_deliveries: int = stuck.MIN_DELIVERIES
    """A POP retry queue that grew is REDELIVERING when a copy read back was delivered this often (or none was
    read); the doctor's REPEATED_REDELIVERY threshold."""


def is_retry(topic: Column) -> Column:
    """``%RETRY%`` queues: redelivery waits there by design, so they get their own thresholds."""
    return topic.startswith(stuck.RETRY_PREFIX)


def allowed_lag(th: Thresholds) -> Column:
    """The lag at or below which a queue counts as caught up (the retry allowance on ``%RETRY%`` queues)."""
    return F.when(is_retry(F.col("topic")), F.lit(th.retry_allowed_lag)).otherwise(F.lit(th.allowed_lag))


def _duration(ms: Column) -> Column:
    secs = F.floor(ms / 1000).cast(LongType())
    return (
        F.when(ms.isNull(), F.lit("unknown"))
        .when(secs < 60, F.format_string("%ds", secs))
        .when(secs < 3600, F.format_string("%dm%02ds", F.floor(secs / 60).cast(LongType()), secs % 60))
        .otherwise(F.format_string("%dh%02dm", F.floor(secs / 3600).cast(LongType()),
                                   F.floor((secs % 3600) / 60).cast(LongType())))
    )


def _clock(ts: Column) -> Column:
    return F.date_format(ts, "HH:mm:ss")


RULE_STATUS = {
    "dlq-growing": stuck.DEAD_LETTERING, "dlq": stuck.DLQ, "min-snapshots": stuck.INSUFFICIENT_DATA,
    "retry-growing": stuck.REDELIVERING, "rewind": stuck.REWOUND,
    "no-new-messages": stuck.IDLE, "caught-up": stuck.OK, "owner-changed": stuck.INSUFFICIENT_DATA,
    "pop-grace": stuck.INSUFFICIENT_DATA, "not-popped": stuck.STALLED,
    "no-owner": stuck.ORPHANED, "owner-not-subscribed": stuck.ORPHANED, "offset-pinned": stuck.STALLED,
    "frozen": stuck.STALLED, "lag-growing": stuck.LAGGING, "moving": stuck.OK,
}
"""The status each rule gives; the rules are tried in this order and the first that holds fires."""

_ON_RUN = ("pop-grace", "not-popped", "no-owner", "owner-not-subscribed", "offset-pinned", "frozen")
_ON_SEGMENT = ("owner-changed", "lag-growing", "moving")


def judge(th: Thresholds) -> Transform:
    """Turn per-queue summaries into verdicts: status, rule, reason and the numbers behind them.

    Three steps, so that no expression is repeated inside another: the facts every rule looks at, the
    first rule that holds, then its status (from :data:`RULE_STATUS`) and its explanation.
    """

    def apply(df: DataFrame) -> DataFrame:
        last, first = F.col("last"), F.col("first")
        seg, run = F.col("seg_start"), F.col("run_start")
        facts = df.select(
            *QUEUE_KEY, "first", "last", "seg_start", "run_start", "caught_up_rn", "co_max", "rewind", "last_error",
            "retry_deliveries",
            F.coalesce(F.col("n_window"), F.lit(0)).cast(IntegerType()).alias("n_window"),
            F.coalesce(F.col("n_missing"), F.lit(0)).cast(IntegerType()).alias("n_missing"),
            (last["rn"] - seg["rn"] + 1).alias("seg_n"),
            (last["rn"] - run["rn"] + 1).alias("frozen_n"),
            (F.unix_millis(last["ts"]) - F.unix_millis(run["ts"])).alias("frozen_ms"),
            # the broker's newest message time less the last consumed one's, at the last snapshot
            F.when(last["lag"] == 0, F.lit(0)).otherwise(last["behind"]).alias("behind_ms"),
            allowed_lag(th).alias("allowed"),
        )
        c = F.col
        stuck_shape = c("frozen_n") >= th.min_snapshots
        pulled_while_frozen = F.coalesce(last["pull"] > run["pull"], F.lit(False))
        pop = last["pop"]
        grew = last["bo"] > first["bo"]
        rules: list[tuple[str, Column]] = [
            ("min-snapshots", c("last").isNull()),  # the broker failed every round of the window
            # a POP group's failures show in its retry and dead-letter queues, not in ownership
            ("dlq-growing", c("topic").startswith(stuck.DLQ_PREFIX) & pop & grew),
            ("dlq", c("topic").startswith(stuck.DLQ_PREFIX)),
            ("min-snapshots", c("n_window") < th.min_snapshots),
            ("retry-growing", pop & is_retry(c("topic")) & grew
             & (c("retry_deliveries").isNull() | (c("retry_deliveries") >= th.min_deliveries))),
            # a queue frozen since it went back is judged by the stuck rules below, not called REWOUND
            ("rewind", (c("co_max") > last["co"]) & ~(stuck_shape & (last["lag"] > c("allowed")))),
            ("no-new-messages", (last["bo"] == first["bo"]) & (last["lag"] <= c("allowed"))),
            ("caught-up", last["lag"] <= c("allowed")),
            ("owner-changed", c("seg_n") < th.min_snapshots),
            # no client owns a POP queue: frozen is nobody popping it, once past POP's lazy commit
            ("pop-grace", stuck_shape & pop & run["seen"] & (c("frozen_ms") < th.pop_commit_grace_ms)),
            ("not-popped", stuck_shape & pop),
            ("no-owner", stuck_shape & last["owner"].isNull()),
            ("owner-not-subscribed", stuck_shape & (last["subscribed"] == F.lit(False))),
            ("offset-pinned", stuck_shape & pulled_while_frozen & (c("frozen_ms") <= th.consume_timeout_ms)),
            ("frozen", stuck_shape),
            ("lag-growing", (c("caught_up_rn").isNull() | (c("caught_up_rn") < seg["rn"]))
             & (last["lag"] > seg["lag"])),
        ]
        rule: Any = F
        for rule_id, condition in rules:
            rule = rule.when(condition, F.lit(rule_id))
        ruled = facts.withColumn("rule", rule.otherwise(F.lit("moving")))

        behind = _duration(c("behind_ms"))
        # a run frozen already at the first row read began then or earlier: say so, never a shorter run as whole
        since = F.when(run["seen"], _clock(run["ts"])).otherwise(F.concat(_clock(run["ts"]), F.lit(" or earlier")))
        frozen_for = F.when(run["seen"], _duration(c("frozen_ms"))).otherwise(
            F.concat(F.lit("at least "), _duration(c("frozen_ms"))))
        work = F.when(
            last["bo"] > run["bo"], F.format_string("while broker offset rose %d -> %d", run["bo"], last["bo"])
        ).otherwise(F.format_string("with a backlog of %d and no new messages", run["lag"]))
        owner_text = F.coalesce(last["owner"], F.lit("nobody"))
        # a frozen run that began where the committed offset went back (a reset) says so
        went_back = F.when(c("rewind").isNotNull() & (c("rewind.ts") == run["ts"]),
                           F.format_string(", where it went back from %d,", c("rewind.before"))).otherwise(F.lit(""))
        owner_moved = F.when(
            seg["changed"], F.format_string(" (moved there at %s)", _clock(seg["ts"]))
        ).otherwise(F.lit(""))
        reasons: dict[str, Column] = {
            "dlq-growing": F.format_string(
                "%d message(s) of this POP group reached its dead-letter queue in the window: broker offset "
                "%d -> %d", last["bo"] - first["bo"], first["bo"], last["bo"]),
            "retry-growing": F.format_string(
                "%d copies written to this POP retry queue in the window (broker offset %d -> %d): messages "
                "failed or not ACKed come back again and again; %s", last["bo"] - first["bo"], first["bo"],
                last["bo"], F.when(c("retry_deliveries").isNull(), F.lit(
                    "no copy was read back, so how often each was delivered is unknown")).otherwise(
                    F.format_string("copies read back were delivered up to %d times (%d or more is redelivery)",
                                    c("retry_deliveries"), F.lit(th.min_deliveries)))),
            "pop-grace": F.format_string(
                "POP queue: consumer offset at %d for %s, under the %s POP commit grace; lag %d",
                last["co"], _duration(c("frozen_ms")), _duration(F.lit(th.pop_commit_grace_ms)), last["lag"]),
            "not-popped": F.format_string(
                "POP queue: consumer offset frozen at %d since %s (%d snapshots, %s) %s and no client popped a "
                "message; lag %d -> %d, %s behind",
                last["co"], since, c("frozen_n"), frozen_for, work, run["lag"], last["lag"], behind),
            "dlq": F.format_string(
                "dead-letter queue, reported not judged: %d message(s) not consumed, broker offset %d -> %d",
                last["lag"], first["bo"], last["bo"]),
            "rewind": F.format_string(
                "consumer offset went back from %d to %d at %s and has not caught up (now %d, was %d)",
                c("rewind.before"), c("rewind.after"), _clock(c("rewind.ts")), last["co"], c("co_max")),
            "no-new-messages": F.format_string(
                "no new messages: broker offset stayed at %d over %d snapshots; lag %d",
                last["bo"], c("n_window"), last["lag"]),
            "caught-up": F.format_string(
                "caught up: lag %d <= %d at the last snapshot; consumer offset %d -> %d",
                last["lag"], c("allowed"), first["co"], last["co"]),
            "owner-changed": F.format_string(
                "owner changed to %s at %s; only %d snapshot(s) since, %d needed",
                owner_text, _clock(seg["ts"]), c("seg_n"), F.lit(th.min_snapshots)),
            "no-owner": F.format_string(
                "no owner: consumer offset frozen at %d%s since %s (%d snapshots) %s; lag %d -> %d, %s behind",
                last["co"], went_back, since, c("frozen_n"), work, run["lag"], last["lag"], behind),
            "owner-not-subscribed": F.format_string(
                "owner %s does not subscribe %s: consumer offset frozen at %d%s since %s (%d snapshots) %s; "
                "lag %d -> %d, %s behind",
                owner_text, c("topic"), last["co"], went_back, since, c("frozen_n"), work, run["lag"],
                last["lag"], behind),
            "offset-pinned": F.format_string(
                "committed offset held at %d%s since %s (%d snapshots, %s) while its owner %s keeps pulling "
                "(pull offset %d -> %d); lag %d: one unfinished message or a hung listener, the offsets "
                "cannot tell which (a concurrent consumer sends a message back after consumeTimeout %s)",
                last["co"], went_back, since, c("frozen_n"), frozen_for, owner_text,
                run["pull"], last["pull"], last["lag"], _duration(F.lit(th.consume_timeout_ms))),
            "frozen": F.format_string(
                "consumer offset frozen at %d%s since %s (%d snapshots, %s) %s under owner %s%s; "
                "lag %d -> %d, %s behind",
                last["co"], went_back, since, c("frozen_n"), frozen_for, work, owner_text,
                owner_moved, run["lag"], last["lag"], behind),
            "lag-growing": F.format_string(
                "consumer moving (%d -> %d) but lag grew %d -> %d and never got within %d; %s behind",
                seg["co"], last["co"], seg["lag"], last["lag"], c("allowed"), behind),
            "moving": F.format_string(
                "consumer moving: offset %d -> %d, lag %d -> %d", seg["co"], last["co"], seg["lag"], last["lag"]),
        }
        min_snapshots_reason = F.when(c("last").isNull(), F.format_string(
            "no answered snapshot in the window: %d missing (last error: %s)", c("n_missing"), c("last_error"),
        )).otherwise(F.format_string(
            "only %d snapshot(s) in the window (%d missing), %d needed",
            c("n_window"), c("n_missing"), F.lit(th.min_snapshots)))
        reason: Any = F.when(c("rule") == "min-snapshots", min_snapshots_reason)
        for rule_id, text in reasons.items():
            reason = reason.when(c("rule") == rule_id, text)
        status = F.create_map(*[F.lit(x) for pair in RULE_STATUS.items() for x in pair])[c("rule")]

        # the span a verdict speaks about: the frozen run for the stuck rules, the part under the current
        # owner for the moving ones, the whole window for the others
        on_run = c("rule").isin(*_ON_RUN)
        on_segment = c("rule").isin(*_ON_SEGMENT)

        def start(field: str) -> Column:
            return F.when(on_run, run[field]).when(on_segment, seg[field]).otherwise(first[field])

        return ruled.select(
            *QUEUE_KEY,
            status.alias("status"),
            "rule",
            reason.alias("reason"),
            start("ts").alias("window_start"),
            last["ts"].alias("window_end"),
            F.when(on_run, c("frozen_n")).when(on_segment, c("seg_n")).otherwise(c("n_window")).cast(IntegerType())
            .alias("snapshots"),
            c("n_window").alias("window_snapshots"),
            c("n_missing").alias("missing_snapshots"),
            last["owner"].alias("owner"),
            F.when(seg["changed"], seg["ts"]).alias("owner_since"),
            F.when(seg["changed"], seg["prev_owner"]).alias("previous_owner"),
            start("bo").alias("broker_offset_start"),
            last["bo"].alias("broker_offset_end"),
            start("co").alias("consumer_offset_start"),
            last["co"].alias("consumer_offset_end"),
            start("lag").alias("lag_start"),
            last["lag"].alias("lag_end"),
            c("behind_ms").alias("lag_time_ms"),
            first["lag"].alias("window_lag_start"),
            run["ts"].alias("frozen_since"),
            # how long the frozen run has lasted, and whether it began where it looks (false: it was frozen
            # already at the first snapshot read, so it began then or earlier and lasted at least frozen_ms)
            F.when(on_run, c("frozen_ms")).alias("frozen_ms"),
            F.when(on_run, run["seen"]).alias("frozen_start_seen"),
        )

    return apply
