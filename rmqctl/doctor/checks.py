"""The doctor's checks in report order, and :func:`run_checks`, which runs them on one view.

Each check is a pure function from a :class:`~rmqctl.doctor.context.CheckContext` to findings,
written in the module of its family: :mod:`~rmqctl.doctor.subscriptions`,
:mod:`~rmqctl.doctor.allocation`, :mod:`~rmqctl.doctor.clients`, :mod:`~rmqctl.doctor.stalls`
and :mod:`~rmqctl.doctor.failures`; POP redeliveries in :mod:`~rmqctl.doctor.redelivery`; topics
left behind in :mod:`~rmqctl.doctor.abandoned`.
Codes are documented in ``docs/findings.md``.

Must not do I/O, and must not import the CLI, the TUI or pyspark.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from rmqctl.doctor.abandoned import abandoned_topic_backlog
from rmqctl.doctor.allocation import (
    ALLOCATION_CODES,
    idle_consumers,
    orphaned_queues,
    queue_held_twice,
    rebalance_in_progress,
    uneven_allocation,
)
from rmqctl.doctor.clients import duplicate_client_id, mixed_consumer_settings, mixed_consumption
from rmqctl.doctor.context import Check, CheckContext
from rmqctl.doctor.failures import (
    RETRY_WARNING_DIFF,
    consume_failures,
    dlq_backlog,
    orderly_queue_suspended,
    retry_backlog,
)
from rmqctl.doctor.redelivery import redelivery_topics, repeated_redelivery
from rmqctl.doctor.stalls import blocked_queue, lag_not_advancing, offline_group_backlog
from rmqctl.doctor.subscriptions import (
    OTHER_TAGS,
    broker_subscription_divergence,
    subscription_tag_conflict,
    subscription_topic_conflict,
    tag_conflict_topics,
)
from rmqctl.model import SEVERITY_RANK, ExpressionHistory, Finding, GroupView
from rmqctl.stuck import BLOCKED_AFTER_MS, POP_COMMIT_GRACE_MS

__all__ = [
    "ALLOCATION_CODES", "BLOCKED_AFTER_MS", "CHECKS", "CODES", "NEEDS", "OTHER_TAGS", "RETRY_WARNING_DIFF",
    "TWO_SAMPLE_CODES", "Check", "CheckContext", "run_checks", "skipped_checks", "tag_conflict_topics",
    "two_sample_skips",
]

CHECKS: Sequence[tuple[str, Check]] = (
    ("SUBSCRIPTION_TAG_CONFLICT", subscription_tag_conflict),
    ("SUBSCRIPTION_TOPIC_CONFLICT", subscription_topic_conflict),
    ("BROKER_SUBSCRIPTION_DIVERGENCE", broker_subscription_divergence),
    ("IDLE_CONSUMERS", idle_consumers),
    ("ORPHANED_QUEUES", orphaned_queues),
    ("DUPLICATE_CLIENT_ID", duplicate_client_id),
    ("UNEVEN_ALLOCATION", uneven_allocation),
    ("MIXED_CONSUMER_SETTINGS", mixed_consumer_settings),
    ("MIXED_CONSUMPTION", mixed_consumption),
    ("BLOCKED_QUEUE", blocked_queue),
    ("OFFLINE_GROUP_BACKLOG", offline_group_backlog),
    ("ABANDONED_TOPIC_BACKLOG", abandoned_topic_backlog),
    ("RETRY_BACKLOG", retry_backlog),
    ("DLQ_BACKLOG", dlq_backlog),
    ("LAG_NOT_ADVANCING", lag_not_advancing),
    ("QUEUE_HELD_TWICE", queue_held_twice),
    ("CONSUME_FAILURES", consume_failures),
    ("REPEATED_REDELIVERY", repeated_redelivery),
    ("ORDERLY_QUEUE_SUSPENDED", orderly_queue_suspended),
    ("REBALANCE_IN_PROGRESS", rebalance_in_progress),
)

CODES = tuple(code for code, _ in CHECKS)

#: GroupView fields a check cannot do without; when the source lists one as unavailable
#: (``GroupView.unavailable``) the check is skipped and the skip is reported, never silently passed
NEEDS: Mapping[str, tuple[str, ...]] = {
    "BROKER_SUBSCRIPTION_DIVERGENCE": ("broker_subscriptions",),
    "DUPLICATE_CLIENT_ID": ("duplicate_clients",),
    "SUBSCRIPTION_TAG_CONFLICT": ("running_infos",),
    "SUBSCRIPTION_TOPIC_CONFLICT": ("running_infos",),
    "IDLE_CONSUMERS": ("running_infos",),
    "ORPHANED_QUEUES": ("running_infos",),
    "UNEVEN_ALLOCATION": ("running_infos",),
    "MIXED_CONSUMER_SETTINGS": ("running_infos",),
    "BLOCKED_QUEUE": ("running_infos",),
    "QUEUE_HELD_TWICE": ("running_infos",),
    "ORDERLY_QUEUE_SUSPENDED": ("running_infos",),
    "ABANDONED_TOPIC_BACKLOG": ("running_infos", "offset_topics", "topic_subscribers"),
}


#: checks of who holds which queue: under POP no client holds a queue (the broker hands each
#: message to whichever client pops next), so they do not apply to a POP group
OWNERSHIP_CODES = ("IDLE_CONSUMERS", "ORPHANED_QUEUES", "UNEVEN_ALLOCATION", "QUEUE_HELD_TWICE",
                   "BLOCKED_QUEUE", "REBALANCE_IN_PROGRESS")
POP_SKIP = ("does not apply: the group consumes by POP, where the broker hands each message to "
            "whichever client pops next and no client holds a queue")


NOT_SAMPLED = ("needs the newest copies in the group's POP retry topics, which rmqctl doctor, the TUI, the "
               "exporter and snapshot export read back each round (not with --no-sample; a failed read is "
               "the group's sample error)")


#: checks that judge a group by its queues' progress or holders: a 5.5 lite group consumes its lite
#: topics' light message queues, which no progress row shows (``lite_topics`` unavailable)
LITE_SKIPPED_CODES = ("OFFLINE_GROUP_BACKLOG", "ABANDONED_TOPIC_BACKLOG", "LAG_NOT_ADVANCING", "BLOCKED_QUEUE",
                      "IDLE_CONSUMERS", "ORPHANED_QUEUES", "UNEVEN_ALLOCATION", "QUEUE_HELD_TWICE",
                      "ORDERLY_QUEUE_SUSPENDED", "REBALANCE_IN_PROGRESS")


#: checks that compare two samples of a group: one sample cannot show an offset standing still
TWO_SAMPLE_CODES = ("LAG_NOT_ADVANCING",)
ONE_SAMPLE = ("needs two samples (one cannot show a consumer offset standing still): use --interval, "
              "e.g. --interval 30")
POP_TOO_CLOSE = (f"needs two samples at least {POP_COMMIT_GRACE_MS // 1000} s apart for a POP group (its "
                 f"consumer offset may trail the last popped message by seconds): use a longer --interval")
BROADCAST_SKIP = ("does not apply: a BROADCASTING group keeps its consumer offsets on its clients, so the "
                  "broker's offsets say nothing about its progress")


def two_sample_skips(view: GroupView, previous: GroupView | None) -> dict[str, str]:
    """The checks that compare two samples and why they cannot judge ``view`` after ``previous``
    (None: ``view`` is the only sample)."""
    if (view.message_model or "").upper() == "BROADCASTING":
        return dict.fromkeys(TWO_SAMPLE_CODES, BROADCAST_SKIP)
    if previous is None:
        return dict.fromkeys(TWO_SAMPLE_CODES, ONE_SAMPLE)
    if view.pop and view.sampled_at - previous.sampled_at < POP_COMMIT_GRACE_MS:
        return dict.fromkeys(TWO_SAMPLE_CODES, POP_TOO_CLOSE)
    return {}


def skipped_checks(view: GroupView, previous: GroupView | None = None, *, compared: bool = False) -> dict[str, str]:
    """Check code → why it cannot run on this view (data the source could not supply, or a POP
    group, where queue ownership does not exist). With ``compared`` (the caller runs the checks on
    ``view`` after ``previous``, as ``doctor`` does), the checks that need two samples are listed
    too when ``previous`` is None or cannot be compared (:func:`two_sample_skips`)."""
    out = two_sample_skips(view, previous) if compared else {}
    for code, fields in NEEDS.items():
        missing = [f for f in fields if f in view.unavailable]
        if missing:
            out[code] = "; ".join(f"needs {f}: {view.unavailable[f]}" for f in missing)
    if view.pop:
        for code in OWNERSHIP_CODES:
            out[code] = POP_SKIP
        if redelivery_topics(view) and not view.retry_samples:
            out["REPEATED_REDELIVERY"] = NOT_SAMPLED
    if "lite_topics" in view.unavailable:
        for code in LITE_SKIPPED_CODES:
            out[code] = f"needs lite_topics: {view.unavailable['lite_topics']}"
    return out


def run_checks(view: GroupView, previous: GroupView | None = None, *,
               now_ms: int | None = None, only: Iterable[str] | None = None,
               resampled: bool = False, history: ExpressionHistory | None = None) -> list[Finding]:
    """Every finding for one group, most severe first.

    ``history`` holds what earlier samples of the group observed (the broker's expression and
    each queue's owner, round after round); without it, ``previous`` alone is the history.

    While holdings overlap or leave gaps after a membership change (a rebalance in progress),
    allocation findings are held back and REBALANCE_IN_PROGRESS says why; with ``resampled``
    (the caller already sampled again once) they are reported as they stand.
    """
    if history is None:
        history = ExpressionHistory.of([previous] if previous is not None else [])
    ctx = CheckContext(view, previous, now_ms if now_ms is not None else view.sampled_at, resampled, history)
    wanted = set(only) if only else None
    skipped = skipped_checks(view)
    moving = view.rebalance_in_progress() is not None
    findings: list[Finding] = []
    for code, check in CHECKS:
        if code in skipped or (moving and not resampled and code in ALLOCATION_CODES):
            continue
        if wanted is None or code in wanted:
            findings.extend(check(ctx))
    return sorted(findings, key=lambda f: -SEVERITY_RANK[f.severity])
