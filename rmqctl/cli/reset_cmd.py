"""``rmqctl group reset GROUP``: plan a reset of a group's offsets; ``--execute`` applies it.

The command and its options are declared in :mod:`rmqctl.cli.group`, which imports this module
only when the command runs; the plan, the apply, the verification and
the audit are :mod:`rmqctl.actions`'. Without ``--execute`` nothing is written, whatever the
context. Must not import textual, pyspark or another command module.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from rmqctl import errors
from rmqctl.cli.common import Settings, console, target
from rmqctl.cli.render import Table, View, emit

if TYPE_CHECKING:
    from rmqctl.actions.plan import ResetOutcome, ResetPlan, ResetTarget
    from rmqctl.clock import Clock

def parse_time(text: str, clock: Clock) -> int:
    """``--to-time``: an ISO 8601 time (UTC when it names no zone) or a duration ago (``2h``,
    ``30m``, ``90``), on the source's clock; epoch ms."""
    from rmqctl.actions.plan import time_target

    return time_target(text, clock.now())


def _one_target(earliest: bool, latest: bool, to_time: str | None, to_offset: int | None,
                shift_by: int | None, from_file: Path | None) -> str:
    given = [name for name, on in (("--to-earliest", earliest), ("--to-latest", latest),
                                   ("--to-time", to_time is not None), ("--to-offset", to_offset is not None),
                                   ("--shift-by", shift_by is not None), ("--from-file", from_file is not None))
             if on]
    if len(given) != 1:
        raise errors.UsageError("give exactly one target" + (f", not {' and '.join(given)}" if given else ""),
                                hint="--to-earliest, --to-latest, --to-time, --to-offset, --shift-by or --from-file")
    return given[0]


def _read_plan(path: Path) -> Any:
    try:
        text = sys.stdin.read() if str(path) == "-" else path.read_text(encoding="utf-8")
        return json.loads(text)
    except OSError as exc:
        raise errors.UsageError(f"cannot read plan file {path}: {exc.strerror or exc}") from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise errors.UsageError(f"plan file {path} is not JSON: {exc}") from exc


def plan_view(plan: ResetPlan) -> View:
    from rmqctl.report.actions import reset_plan, reset_plan_rows, reset_plan_text

    doc = reset_plan(plan)
    rows, clients, footer = reset_plan_text(plan)
    tables = [Table(["queue", "owner", "current", "target", "replay", "skip", "method"], rows,
                    title=f"Plan: reset {plan.group} ({plan.cluster})", flexible=("queue", "owner"))]
    if clients:
        tables.append(Table(["client_id", "effect"], clients, title="Online clients", flexible=("effect",)))
    return View(doc, tables, footer=footer, records=reset_plan_rows(doc))


def _total(value: int | None) -> str:
    return "an unknown number of" if value is None else str(value)


def outcome_view(outcome: ResetOutcome) -> View:
    from rmqctl.report.actions import reset_outcome, reset_outcome_rows, reset_outcome_text

    doc = reset_outcome(outcome)
    rows, footer = reset_outcome_text(outcome)
    return View(doc, [Table(["queue", "target", "status", "offset_after", "client", "code"], rows,
                            title=f"Reset {outcome.plan.group}: outcome", flexible=("queue",))],
                footer=footer, records=reset_outcome_rows(doc))


def _confirm(plan: ResetPlan, yes: bool) -> None:
    if yes:
        return
    if not sys.stdin.isatty():
        raise errors.WriteRefused("--execute asks for confirmation on a terminal: nothing was written",
                                  hint="pass --yes to apply without asking")
    replay, skip = plan.replay_total, plan.skip_total
    question = (f"Reset {len(plan.queues)} queue(s) of {plan.group} on {plan.cluster} "
                f"(replay {_total(replay)}, skip {_total(skip)})?")
    if not typer.confirm(question, default=False, err=True):
        raise errors.WriteRefused("not confirmed: nothing was written")


def _target(name: str, to_offset: int | None, shift_by: int | None) -> ResetTarget:
    from rmqctl.actions.plan import ResetTarget

    kinds = {"--to-earliest": "earliest", "--to-latest": "latest", "--to-offset": "offset", "--shift-by": "shift"}
    return ResetTarget(kinds[name], to_offset if name == "--to-offset" else shift_by if name == "--shift-by" else None)


def run_reset(opts: Settings, group: str, *, to_earliest: bool, to_latest: bool, to_time: str | None,
              to_offset: int | None, shift_by: int | None, from_file: Path | None, topic: list[str] | None,
              queue: list[str] | None, execute: bool, yes: bool) -> None:
    """``group reset``'s body: plan, or apply with ``execute`` (the options are declared in
    :mod:`rmqctl.cli.group`)."""
    from rmqctl.actions.permission import check_writable
    from rmqctl.actions.plan import ResetTarget, plan_from_document
    from rmqctl.actions.reset import QueueSelector, apply_reset, plan_reset
    from rmqctl.connect import open_source

    name = _one_target(to_earliest, to_latest, to_time, to_offset, shift_by, from_file)
    selectors = [QueueSelector.parse(q) for q in queue or []]
    if from_file is not None and (topic or queue):
        raise errors.UsageError("--from-file applies the plan as it is: --topic and --queue do not narrow it")
    if yes and not execute:
        raise errors.UsageError("--yes goes with --execute")
    saved = plan_from_document(_read_plan(from_file)) if from_file is not None else None
    if saved is not None and saved.group != group:
        raise errors.UsageError(f"the plan is for group {saved.group!r}, not {group!r}")
    writer = (check_writable(namesrv=opts.namesrv, context=opts.context, timeout=opts.timeout,
                             emulator=opts.emulator is not None) if execute else None)

    async def main() -> tuple[ResetPlan, ResetOutcome | None]:
        async with open_source(target(opts)) as opened:
            cluster = f"emulator {opts.emulator}" if opts.emulator is not None else opened.label
            if saved is not None:
                if saved.cluster != cluster:
                    raise errors.WriteRefused(f"the plan was made on {saved.cluster}, not {cluster}: "
                                              "nothing was written")
                plan = saved
            else:
                goal = (ResetTarget("time", parse_time(to_time, opened.clock)) if to_time is not None
                        else _target(name, to_offset, shift_by))
                plan = await plan_reset(opened.source, group, goal, cluster=cluster, topics=topic or (),
                                        queues=selectors)
            if writer is None:
                return plan, None
            _confirm(plan, yes)
            return plan, await apply_reset(opened.source, plan, writer, from_file=saved is not None)

    plan, outcome = asyncio.run(main())
    if outcome is None:
        view = plan_view(plan)
        view.footer.append("Plan only: nothing was written. Apply it with --execute (or save it with -o json "
                           "and apply it with --from-file).")
        emit(view, opts.output, options=opts.table_options)
        return
    emit(outcome_view(outcome), opts.output, options=opts.table_options)
    failed = [q for q in outcome.queues if q.status != "applied"]
    if failed:
        from rmqctl.actions.plan import queue_name

        console.error("; ".join(f"{queue_name(q.queue)}: {q.status}"
                                + (f" by {q.client}" if q.client else "") + (f" ({q.remark})" if q.remark else "")
                                for q in failed[:5]))
        raise errors.NotApplied(f"{len(failed)} of {len(outcome.queues)} queue(s) are not at their targets",
                                hint="see the outcome above; the undo plan restores the others")
