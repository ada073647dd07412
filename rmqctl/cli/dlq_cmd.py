"""``rmqctl dlq …``: the dead-letter queues (``%DLQ%GROUP`` topics) of the consumer groups.

``dlq list`` is a read: each dead-letter topic, its queues, how many messages it stores and when
the newest arrived; ``dlq show GROUP`` its dead letters. ``dlq replay GROUP`` plans sending a
group's dead letters back to it through its retry topic; ``--execute`` sends them
(:mod:`rmqctl.actions.dlq`). Reaches the core through its public modules; must not import
textual, pyspark or another command module.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from rmqctl import errors
from rmqctl.cli.common import Failures, Settings, cluster_options, execute
from rmqctl.cli.render import Table, View
from rmqctl.source import ClusterSource

app = typer.Typer(help="Dead-letter queues of consumer groups.", no_args_is_help=True)

DLQ_PREFIX = "%DLQ%"


@app.command("list")
@cluster_options
def list_(ctx: typer.Context, opts: Settings) -> None:
    """Every group's dead-letter topic: queues, messages stored, when the newest arrived."""
    from rmqctl.report.actions import DLQ_COLUMNS, dlq_list, dlq_list_rows

    async def run(source: ClusterSource) -> tuple[View, Failures]:
        failures: dict[str, errors.RmqctlError] = {}
        found: list[tuple[str, Any]] = []
        for topic in sorted(t for t in await source.topics() if t.startswith(DLQ_PREFIX)):
            try:
                stats = await source.topic_status(topic)
            except errors.RmqctlError as exc:  # one topic's failure leaves the others' rows
                failures[topic] = exc
                continue
            failures.update(stats.errors)
            found.append((topic, stats.value))
        doc = dlq_list(found, failures)
        shown = [{**r, "newest": "-" if r["newest_ts"] is None else r["newest_ts"]} for r in doc["dead_letter_queues"]]
        columns = [c if c != "newest_ts" else ("newest", "NEWEST_MS") for c in DLQ_COLUMNS]
        return View(doc, [Table(columns, shown, flexible=("group", "topic"))], records=dlq_list_rows(doc)), failures

    execute(opts, run)


@app.command("show")
@cluster_options
def show(
    ctx: typer.Context,
    opts: Settings,
    group: Annotated[str, typer.Argument(help="Consumer group name.", show_default=False)],
    limit: Annotated[int, typer.Option("--limit", min=1, help="At most this many dead letters, oldest first.")] = 20,
) -> None:
    """A group's dead letters, oldest first: first topic, tag, keys, retries, when stored, the body."""
    from rmqctl.actions.dlq import plan_replay
    from rmqctl.report.actions import DLQ_SHOW_COLUMNS, dlq_show, dlq_show_rows

    async def run(source: ClusterSource) -> View:
        plan = await plan_replay(source, group, cluster="", limit=limit)
        doc = dlq_show(group, plan.letters, plan.left_out)
        shown = [{**r, "origin_topic": r["origin_topic"] or "-", "tag": r["tag"] or "-", "keys": r["keys"] or "-"}
                 for r in doc["dead_letters"]]
        footer = [f"{plan.left_out} more left out by --limit."] if plan.left_out else []
        return View(doc, [Table(list(DLQ_SHOW_COLUMNS), shown, title=f"Dead letters of {group}",
                                flexible=("body", "msg_id"))], footer=footer, records=dlq_show_rows(doc))

    execute(opts, run)


@app.command("replay")
@cluster_options
def replay(
    ctx: typer.Context,
    opts: Settings,
    group: Annotated[str, typer.Argument(help="Consumer group name.", show_default=False)],
    limit: Annotated[int, typer.Option("--limit", min=1, help="At most this many dead letters, oldest first.")] = 100,
    execute: Annotated[bool, typer.Option("--execute", help="Send them (else the plan is only printed).")] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="With --execute: do not ask on the terminal.")] = False,
) -> None:
    """Send a group's dead letters back to it through its retry topic: prints the plan; --execute sends."""
    import asyncio
    import sys

    from rmqctl.actions.dlq import apply_replay, plan_replay, replay_document, replay_outcome_document
    from rmqctl.actions.permission import check_writable
    from rmqctl.cli.common import target
    from rmqctl.cli.render import emit
    from rmqctl.connect import open_source

    if yes and not execute:
        raise errors.UsageError("--yes goes with --execute")
    writer = (check_writable(namesrv=opts.namesrv, context=opts.context, timeout=opts.timeout,
                             emulator=opts.emulator is not None) if execute else None)

    async def main() -> tuple[Any, Any]:
        async with open_source(target(opts)) as opened:
            cluster = f"emulator {opts.emulator}" if opts.emulator is not None else opened.label
            plan = await plan_replay(opened.source, group, cluster=cluster, limit=limit)
            if writer is None or not plan.letters:
                return plan, None
            if not yes:
                if not sys.stdin.isatty():
                    raise errors.WriteRefused("--execute asks for confirmation on a terminal: nothing was sent",
                                              hint="pass --yes to send without asking")
                if not typer.confirm(f"Send {len(plan.letters)} dead letter(s) of {group} back to "
                                     f"{plan.target_topic} on {cluster}?", default=False, err=True):
                    raise errors.WriteRefused("not confirmed: nothing was sent")
            return plan, await apply_replay(opened.source, plan, writer)

    plan, outcome = asyncio.run(main())
    if outcome is None:
        doc = {**replay_document(plan), "errors": {}}
        rows = [{"queue": f"{d['broker']}/{d['queue_id']}", "offset": d["offset"], "msg_id": d["msg_id"],
                 "origin_topic": d["origin_topic"] or "-", "tag": d["tag"] or "-",
                 "reconsume_times": d["reconsume_times"]} for d in doc["dead_letters"]]
        footer = [f"Sends {len(rows)} dead letter(s) to {plan.target_topic}: only {group} consumes them again."]
        if plan.left_out:
            footer.append(f"{plan.left_out} more left out by --limit.")
        footer.append("Plan only: nothing was sent. Send them with --execute.")
        emit(View(doc, [Table(["queue", "offset", "msg_id", "origin_topic", "tag", "reconsume_times"], rows,
                              title=f"Plan: replay the dead letters of {group}", flexible=("msg_id",))],
                  footer=footer), opts.output, options=opts.table_options)
        return
    doc = {**replay_outcome_document(outcome), "errors": {}}
    rows = [{"queue": s["queue"], "offset": s["offset"], "status": s["status"],
             "retry_offset": s.get("retry_offset", "-"), "read_back": s.get("read_back", "-"),
             "code": s.get("code", "-")} for s in doc["sent"]]
    emit(View(doc, [Table(["queue", "offset", "status", "retry_offset", "read_back", "code"], rows,
                          title=f"Replay {group}: outcome")],
              footer=[f"{outcome.stored} of {len(plan.letters)} stored in {plan.target_topic}.",
                      f"Audit log: {outcome.audit_file}"]), opts.output, options=opts.table_options)
    if not outcome.all_sent:
        raise errors.NotApplied(f"{len(plan.letters) - outcome.stored} dead letter(s) not stored again")
