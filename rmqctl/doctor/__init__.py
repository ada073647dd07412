"""``rmqctl doctor``: findings with stable codes, evidence, impact and the fix.

Checks are pure functions over a :class:`~rmqctl.model.GroupView` (and optionally an earlier
sample of the same group); :func:`run_checks` runs them on one view and :func:`diagnose` samples
many groups through the watch service and checks each. Codes are documented in
``docs/findings.md``. Must not import the CLI, the TUI or pyspark.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from rmqctl import errors
from rmqctl.clock import Clock
from rmqctl.doctor.checks import CODES, run_checks, skipped_checks
from rmqctl.model import SEVERITY_RANK, Finding
from rmqctl.source import ClusterSource
from rmqctl.watch import Watcher

__all__ = ["CODES", "SEVERITY_RANK", "Diagnosis", "diagnose", "run_checks", "skipped_checks"]


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
) -> Diagnosis:
    """Check ``groups``; with ``interval``, take two samples that far apart (the lag checks).

    A group that does not exist raises :class:`~rmqctl.errors.NotFound` (with ``strict=False``,
    for groups just listed from the cluster, it is reported among the errors instead); any other
    error of one group among several is reported and the others are still checked.
    """
    watcher = Watcher(source, groups, interval=interval or 1.0, clock=clock)
    rounds = [r async for r in watcher.rounds(2 if interval else 1)]
    last = rounds[-1]
    first = last.previous
    for group, exc in last.current.errors.items():
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
        findings += run_checks(view, before)
        if skips := skipped_checks(view):
            skipped[group] = skips
        failures.update({f"{group}/{k}": v for k, v in view.errors.items()})
    return Diagnosis(tuple(groups), tuple(findings), failures, skipped)
