"""Diagnosing groups through a source: sample each group (twice with an interval), read back
message tags where clients disagree, and run the checks on every view.

:func:`diagnose` is what ``rmqctl doctor`` calls; :func:`~rmqctl.doctor.checks.run_checks` is the
pure part it applies to each view. Must not import the CLI, the TUI or pyspark.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import field

from rmqctl import errors
from rmqctl.clock import Clock
from rmqctl.doctor.checks import run_checks, skipped_checks, tag_conflict_topics
from rmqctl.doctor.failures import orderly_candidates
from rmqctl.model import RETRY_PREFIX, SEVERITY_RANK, Finding, GroupView
from rmqctl.records import dataclass
from rmqctl.source import ClusterSource
from rmqctl.watch import REDELIVERY_SAMPLE, sample_retry_copies

__all__ = ["ORDERLY_WAIT", "REBALANCE_WAIT", "REDELIVERY_SAMPLE", "SAMPLE_ALL", "Diagnosis", "diagnose",
           "sample_retry_copies"]

#: seconds between the sample that showed a rebalance in progress and the one taken again
REBALANCE_WAIT = 3.0
#: seconds between a single sample that showed an orderly queue standing still and the one taken
#: again to see whether it moves (the client retries a suspended message every second)
ORDERLY_WAIT = 3.0
#: what ``doctor --sample all`` reads back per queue at most
SAMPLE_ALL = 100_000


async def _sampled(source: ClusterSource, view: GroupView, per_queue: int | None,
                   before: GroupView | None = None) -> GroupView:
    """``view`` with tag samples of its conflicting topics (and, in a group consumed by remoting
    and POP clients at once, of every topic its remoting clients hold, or held at the previous
    sample ``before`` when they have left since), when the source can read messages."""
    topics = tag_conflict_topics(view)
    held_by = view if view.consumption == "mixed" else before if (
        before is not None and before.consumption == "mixed" and view.consumption == "pop") else None
    if held_by is not None:
        held = {mq.topic for queues in held_by.assignments().values() for mq in queues
                if not mq.topic.startswith(RETRY_PREFIX)}
        topics = sorted(set(topics) | held)
    if not topics:
        return view
    try:
        sampled: GroupView = (await source.sample_messages(view, topics, per_queue=per_queue)
                              if per_queue is not None else await source.sample_messages(view, topics))
    except errors.RmqctlError as exc:
        return dataclasses.replace(view, errors={**view.errors, "sample": exc})
    return sampled


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """The findings for every group checked, and what could not be read."""

    groups: tuple[str, ...]
    findings: tuple[Finding, ...]
    #: ``group`` (the group could not be read) or ``group/broker`` (a partial view) → error
    errors: dict[str, errors.RmqctlError] = field(default_factory=dict)
    #: group → check code → why it was skipped (the source could not supply its data)
    skipped: dict[str, dict[str, str]] = field(default_factory=dict)


async def diagnose(
    source: ClusterSource,
    groups: Sequence[str],
    *,
    interval: float | None = None,
    clock: Clock | None = None,
    strict: bool = True,
    sample: bool = True,
    sample_per_queue: int | None = None,
    rebalance_wait: float = REBALANCE_WAIT,
) -> Diagnosis:
    """Check ``groups``; with ``interval``, take two samples that far apart (the lag checks).

    A group that does not exist raises :class:`~rmqctl.errors.NotFound` (with ``strict=False``,
    for groups just listed from the cluster, it is reported among the errors instead); any other
    error of one group among several is reported and the others are still checked.

    When a group's holdings show a rebalance in progress, every group is sampled once more
    ``rebalance_wait`` seconds later before allocation findings are reported. With ``sample``
    (and a source that can), the recent messages of topics whose clients subscribe different
    tags are read back by offset, read-only, so tag findings count real tags:
    ``sample_per_queue`` of the newest messages of each queue (default: one pull's 32).
    """
    from rmqctl.watch import Watcher  # not needed by run_checks (group show's conflict column)

    watcher = Watcher(source, groups, interval=interval or 1.0, clock=clock)
    rounds = [r async for r in watcher.rounds(2 if interval else 1)]
    last = rounds[-1]
    first = last.previous
    resampled = False
    if any(v.rebalance_in_progress() is not None for v in last.current.views.values()):
        await watcher.clock.sleep(rebalance_wait)
        last = await watcher.poll()  # lag checks still compare with the first sample
        resampled = True
    # One sample cannot show that an orderly queue does not move: look again a little later.
    orderly_again: dict[str, GroupView] = {}
    if interval is None and any(orderly_candidates(v) for v in last.current.views.values()):
        await watcher.clock.sleep(ORDERLY_WAIT)
        again = await watcher.poll()
        orderly_again = {g: v for g, v in again.current.views.items() if g in last.current.views}
    for exc in last.current.errors.values():
        if len(groups) == 1 or (strict and isinstance(exc, errors.NotFound)):
            raise exc
    failures: dict[str, errors.RmqctlError] = dict(last.current.errors)
    findings: list[Finding] = []
    skipped: dict[str, dict[str, str]] = {}
    for group in groups:
        view = last.current.views.get(group)
        if view is None:
            continue
        before = first.views.get(group) if first is not None else None
        # what the earlier samples saw of the broker's expression and the owners (the first
        # sample with --interval; the first two when a rebalance made us look again)
        history = last.history.get(group)
        if sample:
            view = await sample_retry_copies(source, await _sampled(source, view, sample_per_queue, before))
        if group in orderly_again:
            mine = [f for f in run_checks(view, before, resampled=resampled, history=history)
                    if f.code != "ORDERLY_QUEUE_SUSPENDED"]
            mine += run_checks(orderly_again[group], last.current.views[group], only=("ORDERLY_QUEUE_SUSPENDED",))
            findings += sorted(mine, key=lambda f: -SEVERITY_RANK[f.severity])
        else:
            findings += run_checks(view, before, resampled=resampled, history=history)
        if skips := skipped_checks(view, before, compared=True):
            skipped[group] = skips
        failures.update({f"{group}/{k}": v for k, v in view.errors.items()})
    return Diagnosis(tuple(groups), tuple(findings), failures, skipped)
