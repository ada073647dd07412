"""``rmqctl group delete GROUP`` and ``rmqctl group prune --idle DURATION``: plans by default;
``--execute`` deletes, verifies and audits.

The commands and their options are declared in :mod:`rmqctl.cli.group`, which imports this module
only when one of them runs. Must not import textual, pyspark or another command module.
"""

from __future__ import annotations

import asyncio
import sys
from typing import TYPE_CHECKING, Any

import typer

from rmqctl import errors
from rmqctl.cli.common import Settings, console, target
from rmqctl.cli.render import Table, View, emit

if TYPE_CHECKING:
    from rmqctl.actions.delete import DeleteOutcome, DeletePlan, PruneCandidate


def _when(ts: int | None) -> str:
    if ts is None:
        return "never"
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ts / 1000, UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def _confirm(question: str, yes: bool) -> None:
    if yes:
        return
    if not sys.stdin.isatty():
        raise errors.WriteRefused("--execute asks for confirmation on a terminal: nothing was written",
                                  hint="pass --yes to apply without asking")
    if not typer.confirm(question, default=False, err=True):
        raise errors.WriteRefused("not confirmed: nothing was written")


def _plan_view(plan: DeletePlan) -> View:
    from rmqctl.actions.delete import delete_document

    doc = {**delete_document(plan), "errors": {}}
    rows = [{"broker": b["broker"], "address": b["address"], "group_config": "yes" if b["has_config"] else "no",
             "offset_topics": " ".join(b["offset_topics"]) or "-"} for b in doc["brokers"]]
    gone = ["the group's config on every broker"]
    if plan.clean_offsets:
        gone.append("its committed offsets")
    if plan.with_topics:
        gone.append("its topics " + (", ".join(plan.topics) or "(none exist)"))
    footer = [f"Deletes {', '.join(gone)}.", f"Last consumed: {_when(plan.last_consumed_ts)}."]
    if not plan.clean_offsets:
        footer.append("The committed offsets stay (--clean-offsets removes them); a group created again "
                      "goes on from them.")
    if plan.online_clients:
        footer.append(f"REFUSED with --execute: {len(plan.online_clients)} online client(s): "
                      + ", ".join(plan.online_clients))
    return View(doc, [Table(["broker", "address", "group_config", "offset_topics"], rows,
                            title=f"Plan: delete group {plan.group} ({plan.cluster})")], footer=footer)


def _outcome_view(outcome: DeleteOutcome) -> View:
    from rmqctl.actions.delete import delete_outcome_document

    doc = {**delete_outcome_document(outcome), "errors": {}}
    rows = [{"broker": b["broker"], "status": b["status"], "code": "-" if b["code"] is None else b["code"]}
            for b in doc["brokers"]]
    rows += [{"broker": f"topic {t}", "status": s, "code": "-"} for t, s in doc["topics"].items()]
    return View(doc, [Table(["broker", "status", "code"], rows, title=f"Delete {outcome.plan.group}: outcome")],
                footer=[f"Audit log: {outcome.audit_file}"])


def _writer(opts: Settings) -> Any:
    from rmqctl.actions.permission import check_writable

    return check_writable(namesrv=opts.namesrv, context=opts.context, timeout=opts.timeout,
                          emulator=opts.emulator is not None)


def run_delete(opts: Settings, group: str, *, clean_offsets: bool, with_topics: bool, execute: bool,
               yes: bool) -> None:
    """``group delete``'s body."""
    from rmqctl.actions.delete import apply_delete, plan_delete
    from rmqctl.connect import open_source

    if yes and not execute:
        raise errors.UsageError("--yes goes with --execute")
    writer = _writer(opts) if execute else None

    async def main() -> tuple[DeletePlan, DeleteOutcome | None]:
        async with open_source(target(opts)) as opened:
            cluster = f"emulator {opts.emulator}" if opts.emulator is not None else opened.label
            plan = await plan_delete(opened.source, group, cluster=cluster, clean_offsets=clean_offsets,
                                     with_topics=with_topics)
            if writer is None:
                return plan, None
            _confirm(f"Delete group {group} on {cluster}?", yes)
            return plan, await apply_delete(opened.source, plan, writer)

    plan, outcome = asyncio.run(main())
    if outcome is None:
        view = _plan_view(plan)
        view.footer.append("Plan only: nothing was written. Apply it with --execute.")
        emit(view, opts.output, options=opts.table_options)
        return
    emit(_outcome_view(outcome), opts.output, options=opts.table_options)
    if not outcome.all_deleted:
        raise errors.NotApplied(f"group {group} is not deleted everywhere", hint="see the outcome above")


def run_prune(opts: Settings, *, idle_s: float, clean_offsets: bool, with_topics: bool, execute: bool,
              yes: bool) -> None:
    """``group prune``'s body."""
    from rmqctl.actions.delete import apply_delete, plan_prune
    from rmqctl.connect import open_source

    if yes and not execute:
        raise errors.UsageError("--yes goes with --execute")
    writer = _writer(opts) if execute else None

    async def main() -> tuple[list[PruneCandidate], list[DeleteOutcome]]:
        async with open_source(target(opts)) as opened:
            cluster = f"emulator {opts.emulator}" if opts.emulator is not None else opened.label
            found = await plan_prune(opened.source, idle_s=idle_s, cluster=cluster, clean_offsets=clean_offsets,
                                     with_topics=with_topics)
            doomed = [c for c in found if c.plan is not None]
            if writer is None or not doomed:
                return found, []
            _confirm(f"Delete {len(doomed)} group(s) on {cluster}: {', '.join(c.group for c in doomed[:5])}?", yes)
            done = []
            for c in doomed:
                assert c.plan is not None
                done.append(await apply_delete(opened.source, c.plan, writer))
            return found, done

    found, done = asyncio.run(main())
    from rmqctl.actions.delete import delete_outcome_document

    rows: list[dict[str, Any]] = [
        {"group": c.group, "online_clients": c.online_clients, "last_consumed_ts": c.last_consumed_ts,
         "consume_tps": c.consume_tps, "verdict": c.verdict} for c in found]
    doc = {"idle_s": idle_s, "groups": rows, "executed": bool(writer),
           "outcomes": [delete_outcome_document(o) for o in done], "errors": {}}
    # a group kept for its online clients was not read further: its last consumption is not known
    shown = [{**r, "last_consumed": "-" if r["online_clients"] and r["last_consumed_ts"] is None
              else _when(r["last_consumed_ts"])} for r in rows]
    footer = [f"{sum(1 for c in found if c.plan is not None)} group(s) to prune."]
    if writer is None:
        footer.append("Plan only: nothing was written. Delete them with --execute.")
    else:
        footer.append(f"Deleted {sum(1 for o in done if o.all_deleted)} of {len(done)}.")
    emit(View(doc, [Table(["group", "online_clients", "last_consumed", "consume_tps", "verdict"], shown,
                          title=f"Groups idle for {idle_s:g}s", flexible=("group", "verdict"))], footer=footer),
         opts.output, options=opts.table_options)
    failed = [o.plan.group for o in done if not o.all_deleted]
    if failed:
        console.error(f"not deleted everywhere: {', '.join(failed)}")
        raise errors.NotApplied(f"{len(failed)} group(s) not deleted everywhere")
