"""``rmqctl doctor``: explain why a group loses or stalls messages.

Reaches the core through its public modules; must not import textual, pyspark or another
command module.
"""

from __future__ import annotations

import enum
from typing import Annotated

import typer

from rmqctl import errors, report
from rmqctl.cli.common import Failures, Settings, cluster_options, execute
from rmqctl.cli.durations import DURATION, duration_parser
from rmqctl.cli.render import Table, View
from rmqctl.cli.views import format_finding
from rmqctl.doctor import diagnose
from rmqctl.doctor.diagnosis import SAMPLE_ALL
from rmqctl.errors import ExitCode
from rmqctl.model import SEVERITY_RANK, Finding
from rmqctl.source import ClusterSource


class FailOn(str, enum.Enum):
    warning = "warning"
    error = "error"
    never = "never"


def _sample_size(text: str | None) -> int | None:
    """``--sample N|all``: messages per queue, or None for the default."""
    if text is None:
        return None
    if text.strip().lower() == "all":
        return SAMPLE_ALL
    try:
        n = int(text)
    except ValueError:
        n = 0
    if not 1 <= n <= SAMPLE_ALL:
        raise typer.BadParameter(f"expected a count from 1 to {SAMPLE_ALL:,} or 'all', got {text!r}",
                                 param_hint="--sample")
    return n


@cluster_options
def doctor(
    ctx: typer.Context,
    opts: Settings,
    groups: Annotated[list[str] | None, typer.Argument(help="Consumer groups to check.",
                                                       show_default=False)] = None,
    all_: Annotated[bool, typer.Option("--all", "-a", help="Check every consumer group.")] = False,
    interval: Annotated[float | None, typer.Option(
        "--interval", parser=duration_parser(at_least=0.1), metavar=DURATION,
        help="Take two samples this far apart (30, 30s, 5m …; lag checks).", show_default=False)] = None,
    fail_on: Annotated[FailOn, typer.Option("--fail-on", help="Exit 1 when a finding reaches this level.",
                                            case_sensitive=False)] = FailOn.error,
    no_sample: Annotated[bool, typer.Option(
        "--no-sample", help="Do not read back recent messages (read-only) to count real tags.")] = False,
    sample: Annotated[str | None, typer.Option(
        "--sample", metavar="N|all",
        help=f"Read back the newest N messages of each queue (default 32; all: up to {SAMPLE_ALL:,}).",
        show_default=False)] = None,
) -> None:
    """Diagnose consumer groups: findings with codes, evidence, impact and the fix."""
    if not groups and not all_:
        raise typer.BadParameter("name at least one GROUP or pass --all", param_hint="GROUP")
    per_queue = _sample_size(sample)
    if per_queue is not None and no_sample:
        raise typer.BadParameter("--sample and --no-sample exclude each other", param_hint="--sample")
    verdict: dict[str, list[Finding]] = {}

    async def run(source: ClusterSource) -> tuple[View, Failures]:
        names = list(dict.fromkeys(groups or []))
        failures: dict[str, errors.RmqctlError] = {}
        if all_:
            listed = await source.groups()
            unknown = [g for g in names if g not in set(listed.value)]
            if unknown and not listed.errors:
                raise errors.NotFound(
                    f"consumer group {unknown[0]!r} not found on any broker",
                    hint="--all already checks every group; name groups only to check them alone")
            names = sorted(set(names) | set(listed.value))
            failures.update(listed.errors)
        diagnosis = await diagnose(source, names, interval=interval, strict=not all_, sample=not no_sample,
                                   sample_per_queue=per_queue)
        findings = list(diagnosis.findings)
        failures.update(diagnosis.errors)
        verdict["findings"] = findings
        doc = report.doctor(names, findings, diagnosis.skipped, failures)
        rows = [{"severity": f.severity, "code": f.code, "group": f.group, "title": f.title}
                for f in findings]
        footer = [line for f in findings for line in format_finding(f)]
        checked = [g for g in names if g not in diagnosis.errors]
        if not findings:
            footer = [f"No findings for {_count(len(checked), 'group')}."]
        footer += [f"skipped {row['code']} ({row['group']}): {row['reason']}" for row in doc["skipped"]]
        table = Table(["severity", "code", "group", "title"], rows, flexible=("title", "group"))
        return View(doc, [table], footer, report.doctor_rows(doc)), failures

    try:
        execute(opts, run)
    except typer.Exit as exc:
        if exc.exit_code not in (0, None):
            raise
    threshold = None if fail_on is FailOn.never else SEVERITY_RANK[fail_on.value]
    if threshold is not None and any(SEVERITY_RANK[f.severity] >= threshold
                                     for f in verdict.get("findings", [])):
        raise typer.Exit(int(ExitCode.FINDINGS))


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
