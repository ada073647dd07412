"""``rmqctl doctor``: explain why a group loses or stalls messages."""

from __future__ import annotations

import asyncio
import enum
import textwrap
from typing import Annotated

import typer

from rmqctl import errors
from rmqctl.cli.common import Settings, cluster_options, execute
from rmqctl.cli.render import Table, View
from rmqctl.doctor import run_checks, skipped_checks
from rmqctl.errors import ExitCode
from rmqctl.model import Finding, GroupView
from rmqctl.source import ClusterSource


class FailOn(str, enum.Enum):
    warning = "warning"
    error = "error"
    never = "never"


_RANK = {"info": 0, "warning": 1, "error": 2}


def format_finding(f: Finding) -> list[str]:
    wrap = textwrap.TextWrapper(width=100, initial_indent="  ", subsequent_indent="  ")
    lines = [f"[{f.severity.upper()}] {f.code} ({f.group}): {f.title}"]
    lines += wrap.wrap(f.detail)
    lines += textwrap.wrap("fix: " + f.fix, width=100, initial_indent="  ", subsequent_indent="       ")
    return lines + [""]


async def diagnose(source: ClusterSource, groups: list[str], interval: float | None,
                   skipped: dict[str, dict[str, str]] | None = None,
                   ) -> tuple[list[Finding], dict[str, str]]:
    """Findings of every group; ``skipped`` (when given) receives group → check → why it was skipped."""
    failures: dict[str, str] = {}

    async def sample() -> dict[str, GroupView]:
        views: dict[str, GroupView] = {}
        for group in groups:
            try:
                views[group] = await source.group_view(group)
            except errors.NotFound as exc:
                if len(groups) == 1:
                    raise
                failures[f"group:{group}"] = str(exc)
        return views

    first = await sample()
    second = first
    if interval:
        await asyncio.sleep(interval)
        second = await sample()
    findings: list[Finding] = []
    for group, view in second.items():
        findings += run_checks(view, first.get(group) if interval else None)
        if skipped is not None and skipped_checks(view):
            skipped[group] = skipped_checks(view)
        failures.update({f"{group}/{k}": v for k, v in view.errors.items()})
    return findings, failures


@cluster_options
def doctor(
    ctx: typer.Context,
    opts: Settings,
    groups: Annotated[list[str] | None, typer.Argument(help="Consumer groups to check.",
                                                       show_default=False)] = None,
    all_: Annotated[bool, typer.Option("--all", help="Check every consumer group.")] = False,
    interval: Annotated[float | None, typer.Option(
        "--interval", min=0.1, help="Take two samples this many seconds apart (lag checks).",
        show_default=False)] = None,
    fail_on: Annotated[FailOn, typer.Option("--fail-on", help="Exit 1 when a finding reaches this level.",
                                            case_sensitive=False)] = FailOn.error,
) -> None:
    """Diagnose consumer groups: findings with codes, evidence, impact and the fix."""
    if not groups and not all_:
        raise typer.BadParameter("name at least one GROUP or pass --all", param_hint="GROUP")
    verdict: dict[str, list[Finding]] = {}

    async def run(source: ClusterSource) -> tuple[View, dict[str, str]]:
        names = list(groups or [])
        failures: dict[str, str] = {}
        if all_:
            listed = await source.groups()
            names = sorted(set(names) | set(listed.value))
            failures.update(listed.errors)
        skipped: dict[str, dict[str, str]] = {}
        findings, more = await diagnose(source, names, interval, skipped)
        failures.update(more)
        verdict["findings"] = findings
        rows = [{"severity": f.severity, "code": f.code, "group": f.group, "title": f.title}
                for f in findings]
        footer = [line for f in findings for line in format_finding(f)]
        if not findings:
            footer = [f"No findings for {len(names)} group(s)."]
        footer += [f"skipped {code} ({group}): {why}" for group, checks in sorted(skipped.items())
                   for code, why in sorted(checks.items())]
        doc = {"groups": names, "findings": [f.as_dict() for f in findings]}
        if skipped:
            doc["skipped"] = skipped
        table = Table([("severity", "SEVERITY"), ("code", "CODE"), ("group", "GROUP"),
                       ("title", "TITLE")], rows)
        return View(doc, [table], footer), failures

    try:
        execute(opts, run)
    except typer.Exit as exc:
        if exc.exit_code not in (0, None):
            raise
    threshold = None if fail_on is FailOn.never else _RANK[fail_on.value]
    if threshold is not None and any(_RANK[f.severity] >= threshold
                                     for f in verdict.get("findings", [])):
        raise typer.Exit(int(ExitCode.FINDINGS))
