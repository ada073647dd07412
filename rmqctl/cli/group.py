"""``rmqctl group …``: consumer groups, their clients, subscriptions, progress and assignment.

Reaches the core through its public modules; must not import textual, pyspark or another
command module.
"""

from __future__ import annotations

import asyncio
import dataclasses
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from rmqctl import errors, report
from rmqctl.cli.common import Failures, MatchOpt, Settings, SortOpt, cluster_options, execute, target
from rmqctl.cli.durations import duration_parser
from rmqctl.cli.render import Table, View, emit, select_rows
from rmqctl.connect import open_source
from rmqctl.model import GroupView
from rmqctl.source import ClusterSource

app = typer.Typer(help="Consumer groups.", no_args_is_help=True)

#: what a table shows for data the source cannot supply (never a made-up zero)
UNAVAILABLE = "unavailable"

GroupArg = Annotated[str, typer.Argument(help="Consumer group name.", show_default=False)]
WatchOpt = Annotated[
    float | None,
    typer.Option("--watch", "-w", parser=duration_parser(at_least=0.1), metavar="[DURATION]",
                 help="Redraw every DURATION (default 2s; 5, 5s, 1m …) until Ctrl-C, with each queue's "
                 "consume rate.", show_default=False),
]
CountOpt = Annotated[
    int | None,
    typer.Option("--count", min=1, help="With --watch: stop after this many samples.", show_default=False),
]


@app.command("list")
@cluster_options
def list_(
    ctx: typer.Context,
    opts: Settings,
    system: Annotated[bool, typer.Option("--system", help="Include the brokers' built-in groups.")] = False,
    sort: SortOpt = None,
    match: MatchOpt = None,
) -> None:
    """Every consumer group: online clients, type, model, oldest client version, total lag."""

    async def run(source: ClusterSource) -> tuple[View, Failures]:
        result = await source.group_summaries(include_system=system)
        doc = report.group_list(result.value, result.errors, result.unavailable,
                                now_ms=int(source.clock.now() * 1000))
        doc["groups"] = select_rows(doc["groups"], report.GROUP_LIST_COLUMNS, name_key="group", match=match,
                                    sort=sort)
        columns = ["group", "clients", "consume_type", "message_model", "version", "total_diff", "consume_tps"]
        shown = [{**g, "total_diff": _total_shown(g)} if g["total_diff"] is None or g.get("unknown_diff_topics")
                 else g for g in doc["groups"]]
        footer = [f"{name}: {UNAVAILABLE} ({why})" for name, why in sorted(result.unavailable.items())]
        note = report.cached_note(doc)
        return (View(doc, [Table(columns, shown, flexible=("group", "version"))], [*footer, *([note] if note else [])],
                     records=report.group_list_rows(doc)), dict(result.errors))

    execute(opts, run)


@app.command("show")
@cluster_options
def show(
    ctx: typer.Context,
    opts: Settings,
    group: GroupArg,
) -> None:
    """Connections, and the broker-stored subscriptions beside each client's own (differences marked)."""

    async def run(source: ClusterSource) -> tuple[View, Failures]:
        view = await source.group_view(group)
        from rmqctl.doctor import run_checks  # here: the other group commands never load the doctor

        doc = report.group_show(view, run_checks(view, only=report.SUBSCRIPTION_CODES))
        sub_rows = [
            {**row, "expression": row["expression"] if row["subscribed"] else "(not subscribed)",
             "mark": "DIFFERS" if row["differs"] else "unknown" if row["differs"] is None else ""}
            for row in doc["subscriptions"]
        ]
        tables = [
            Table(["client_id", "client_addr", "language", "version", "sdk", "strategy", "consume_ok_tps",
                   "consume_failed_tps"], doc["connections"],
                  title=f"Group {group}: {_count(len(doc['connections']), 'client')}",
                  flexible=("client_id", "version")),
            Table(["topic", "source", "expression", "sub_version", ("mark", "")], sub_rows,
                  title="Subscriptions", flexible=("expression", "source", "topic")),
        ]
        footer = [
            f"Consume type: {doc['consume_type'] or '-'}",
            f"Message model: {doc['message_model'] or '-'}",
            f"Consume from where: {doc['consume_from_where'] or '-'}",
        ]
        if doc["consumption"] in ("pop", "mixed"):
            footer.append(f"Consumption: {doc['consumption'].upper()} (the broker hands each message to whichever "
                          "client pops next: no client owns a queue)")
        footer.append(_retry_line(doc))
        if "lite_topics" in doc.get("unavailable", {}):
            footer.append(f"Lite topics: {UNAVAILABLE} ({doc['unavailable']['lite_topics']})")
        for proxy in doc["proxies"]:
            how = {"named": "named", "announced": "announced in the proxies' heartbeat-sync messages"}.get(
                proxy["found_by"], "found through the brokers' heartbeat-sync group, default port")
            state = proxy["error"] or _count(len(proxy["clients"]), "client")
            footer.append(f"Proxy {proxy['address']} ({how}): {state}")
        for conflict in doc["subscription_conflicts"]:
            footer.append(f"[{conflict['severity'].upper()}] {conflict['code']}: {conflict['title']}"
                          f" (details: rmqctl doctor {group})")
        return View(doc, tables, footer, report.group_show_rows(doc)), dict(view.errors)

    execute(opts, run)


def _retry_line(doc: report.GroupShowDoc) -> str:
    """``Retry policy: customized (10s, 30s, 1m … 2h); 17 deliveries at most, then %DLQ%G``."""
    policy = doc["retry_policy"]
    if policy is None:
        return "Retry policy: unknown (the group's config was not read)"
    what = policy["description"] or "none in the config (a 4.x broker: the delay levels)"
    line = f"Retry policy: {what}; retryMaxTimes {policy['retry_max_times']}"
    if doc["consumption"] != "push":
        line += (f": a POP consumer gets a message {_count(policy['max_deliveries'], 'time')} at most, "
                 f"then it goes to %DLQ%{doc['group']}")
    if doc["consumption"] != "pop":
        line += " (remoting clients send their own maxReconsumeTimes, 16 by default)"
    if policy["differs_by_broker"]:
        line += " (the brokers' configs differ: the fewest shown)"
    return line


def _count(n: int, noun: str, plural: str | None = None) -> str:
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def _progress_totals(doc: report.GroupProgressDoc) -> list[str]:
    """The two total lines under ``group progress``: sums of the rows the document holds."""
    inflight = doc["total_inflight"]
    unknown = doc["unknown_diff_queues"]
    if inflight is None:
        inflight_text = UNAVAILABLE if "inflight" in doc.get("unavailable", {}) else "unknown"
    else:
        no_pull = sum(1 for r in doc["queues"] if r["inflight"] is None)
        inflight_text = str(inflight) + (f" (unknown for {_count(no_pull, 'queue')})" if no_pull else "")
    diff_text = str(doc["total_diff"]) + (f" (unknown for {_count(unknown, 'queue')})" if unknown else "")
    if "lite_topics" in doc.get("unavailable", {}):
        # a lite group's offsets live in its lite topics' queues, which no row shows
        diff_text = f"unknown (lite topics {UNAVAILABLE})"
    return [f"Total diff: {diff_text}", f"Total inflight: {inflight_text}"]


def progress_view(view: GroupView, rates: dict[tuple[str, str, int], float] | None = None) -> View:
    """The ``group progress`` view; ``rates`` (queue → messages consumed per second between two
    samples) adds a RATE column (``--watch``)."""
    doc = report.group_progress(view)
    table_rows = []
    for row in doc["queues"]:
        shown: dict[str, Any] = {**row, "owner": row["owner"] or "N/A"}
        for name in report.PROGRESS_FIELDS:
            if name in view.unavailable:
                shown[name] = UNAVAILABLE
        if row["diff"] is None:
            shown["diff"] = "unknown"
        shown["note"] = ("pulls fail: topic missing from the broker's table" if row["unpullable"]
                         else "not subscribed by any online client" if row.get("subscribed") is False else "")
        if rates is not None:
            shown["consume_rate"] = rates.get((row["topic"], row["broker"], row["queue_id"]))
        table_rows.append(shown)
    columns: list[Any] = ["topic", "broker", "queue_id", "broker_offset", "consumer_offset", "pull_offset",
                          "diff", "inflight", "last_consumed_ts", "owner", ("note", "")]
    if rates is not None:
        columns.insert(7, "consume_rate")
    footer = _progress_totals(doc)
    by_reason: dict[str, list[str]] = {}
    for name, why in sorted(view.unavailable.items()):
        by_reason.setdefault(why, []).append(name)
    footer += [f"{', '.join(names)}: {UNAVAILABLE} ({why})" for why, names in by_reason.items()]
    return View(doc, [Table(columns, table_rows, flexible=("owner", "topic"))], footer,
                report.group_progress_rows(doc))


@app.command("progress")
@cluster_options
def progress(
    ctx: typer.Context,
    opts: Settings,
    group: GroupArg,
    watch: WatchOpt = None,
    count: CountOpt = None,
    sort: SortOpt = None,
    match: MatchOpt = None,
) -> None:
    """Per queue: offsets, lag, inflight, last consumed time and the client holding it."""

    def build(view: GroupView, rates: dict[tuple[str, str, int], float] | None) -> View:
        shown = progress_view(view, rates)
        doc = shown.document
        if rates is None:
            doc["queues"] = select_rows(doc["queues"], report.PROGRESS_COLUMNS, name_key="topic", match=match,
                                        sort=sort)
        else:  # --watch: the rate since the previous sample sorts too (the document keeps it apart)
            rated = [{**q, "consume_rate": rates.get((q["topic"], q["broker"], q["queue_id"]))} for q in doc["queues"]]
            picked = select_rows(rated, (*report.PROGRESS_COLUMNS, "consume_rate"), name_key="topic", match=match,
                                 sort=sort)
            doc["queues"] = [{k: v for k, v in q.items() if k != "consume_rate"} for q in picked]
        report.retotal_progress(doc)  # the totals count the rows --match kept
        shown.footer[:2] = _progress_totals(doc)
        keep = {(q["topic"], q["broker"], q["queue_id"]) for q in doc["queues"]}
        table = shown.tables[0]
        rows = [r for r in table.rows if (r["topic"], r["broker"], r["queue_id"]) in keep]
        order = {key: i for i, key in enumerate((q["topic"], q["broker"], q["queue_id"]) for q in doc["queues"])}
        table.rows = sorted(rows, key=lambda r: order[(r["topic"], r["broker"], r["queue_id"])])
        shown.records = report.group_progress_rows(doc)
        return shown

    if watch is not None:
        watch_group(opts, group, watch, count, build)
        return

    async def run(source: ClusterSource) -> tuple[View, Failures]:
        view = await source.group_view(group)
        return build(view, None), dict(view.errors)

    execute(opts, run)


def assignment_view(view: GroupView, rates: dict[tuple[str, str, int], float] | None = None) -> View:
    doc = report.group_assignment(view)
    rows = report.assignment_rows(doc)
    columns: list[str] = ["client_id", "topic", "broker", "queue_id", "state"]
    if rates is not None:
        rows = [{**r, "consume_rate": rates.get((r["topic"], r["broker"], r["queue_id"]))} for r in rows]
        columns.append("consume_rate")
    n_clients, n_nobody, n_twice = len(doc["assignments"]), len(doc["unassigned_queues"]), len(doc["held_twice"])
    footer = [f"{_count(n_clients, 'client')}, {_count(n_nobody, 'queue')} held by nobody"
              + (f", {_count(n_twice, 'queue')} held twice" if n_twice else "")]
    if doc.get("pop_owner"):
        footer = [f"{doc.get('pop_owner')}: the broker hands each message to whichever client pops next; "
                  "no client holds a queue"]
    for q in doc["held_twice"]:
        footer.append(f"held twice: {q['topic']}@{q['broker']}/{q['queue_id']} by {' and '.join(q['clients'])}")
    moving = doc["rebalance_in_progress"]
    if moving:
        footer.append(f"Rebalance in progress: {_count(len(moving['shared']), 'queue')} held by two clients and "
                      f"{len(moving['unheld'])} by none while clients move to the new allocation; "
                      "check again in a few seconds.")
    return View(doc, [Table(columns, rows, flexible=("client_id", "topic"))], footer,
                report.group_assignment_rows(doc))


@app.command("assignment")
@cluster_options
def assignment(
    ctx: typer.Context,
    opts: Settings,
    group: GroupArg,
    watch: WatchOpt = None,
    count: CountOpt = None,
) -> None:
    """Which client holds which queue, the queues nobody holds and those two clients hold at once."""
    if watch is not None:
        watch_group(opts, group, watch, count, assignment_view)
        return

    async def run(source: ClusterSource) -> tuple[View, Failures]:
        view = await source.group_view(group)
        return assignment_view(view), dict(view.errors)

    execute(opts, run)


def watch_group(opts: Settings, group: str, interval: float, count: int | None,
                build: Callable[[GroupView, dict[tuple[str, str, int], float] | None], View]) -> None:
    """Sample the group every ``interval`` seconds (on the source's clock) and print each sample.

    A table is redrawn in place on a terminal (the screen is cleared) and printed as one block per
    sample, after a blank line, otherwise; ``json`` prints one document per sample, a blank line
    between them; ``jsonl`` and ``csv`` stream rows that say their sample (csv's header once)."""
    from rmqctl.clock import SystemClock
    from rmqctl.watch import Watcher, consume_rates

    out = sys.stdout
    fmt = opts.output.value
    redraw = fmt == "table" and hasattr(out, "isatty") and out.isatty()

    async def main() -> None:
        async with open_source(target(opts)) as opened:
            watcher = Watcher(opened.source, [group], interval=interval, clock=opened.clock)
            async for rnd in watcher.rounds(count):
                current = rnd.current.views.get(group)
                if current is None:
                    raise rnd.current.errors.get(group) or errors.NotFound(f"consumer group {group!r} not found")
                previous = rnd.previous.views.get(group) if rnd.previous else None
                rates = {}
                if previous is not None and rnd.previous is not None:
                    rates = consume_rates(previous, current, rnd.current.taken_at - rnd.previous.taken_at)
                shown = build(current, rates)
                shown.records = report.watched(shown.document, shown.records, sample=rnd.number,
                                               taken_at_ts=round(rnd.current.taken_at * 1000), rates=rates)
                options = opts.table_options
                if redraw:
                    out.write("\x1b[H\x1b[2J")
                elif rnd.number > 1 and fmt in ("table", "json"):
                    out.write("\n")
                elif rnd.number > 1 and fmt == "csv":
                    options = dataclasses.replace(options, no_headers=True)
                if not opts.no_headers and fmt == "table":
                    out.write(f"Every {interval:g}s: {opened.label}, sample {rnd.number}\n\n")
                emit(shown, opts.output, out, options=options)
                out.flush()
                if redraw and not isinstance(opened.clock, SystemClock) and rnd.number != count:
                    # the emulator's clock moves on at once; a person watching gets one redraw a period
                    await asyncio.sleep(interval)

    asyncio.run(main())  # Ctrl-C ends the watch like any command: exit 130


@app.command("reset")
@cluster_options
def reset(
    ctx: typer.Context,
    opts: Settings,
    group: GroupArg,
    to_earliest: Annotated[bool, typer.Option("--to-earliest",
                                              help="To the oldest stored message: replay all.")] = False,
    to_latest: Annotated[bool, typer.Option("--to-latest", help="To the newest offset: skip the backlog.")] = False,
    to_time: Annotated[str | None, typer.Option(
        "--to-time", help="To the first message stored at or after this ISO time (UTC unless it names a zone) "
                          "or this long ago (2h, 30m).", show_default=False)] = None,
    to_offset: Annotated[int | None, typer.Option("--to-offset", min=0, help="To this offset (0 included).",
                                                  show_default=False)] = None,
    shift_by: Annotated[int | None, typer.Option(
        "--shift-by", help="Move each queue by ±N from its committed offset (kept within the stored range).",
        show_default=False)] = None,
    from_file: Annotated[Path | None, typer.Option(
        "--from-file", help="Apply a plan saved with -o json (refused when the offsets moved since); - reads stdin.",
        show_default=False)] = None,
    topic: Annotated[list[str] | None, typer.Option("--topic", "-t", help="Only this topic (repeatable).",
                                                    show_default=False)] = None,
    queue: Annotated[list[str] | None, typer.Option("--queue", "-q", help="Only this queue, BROKER/ID (repeatable).",
                                                    show_default=False)] = None,
    execute: Annotated[bool, typer.Option("--execute", help="Apply the plan (else it is only printed).")] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="With --execute: do not ask on the terminal.")] = False,
) -> None:
    """Reset a group's offsets: prints the plan; --execute applies, verifies and audits it (docs/actions.md)."""
    from rmqctl.cli.reset_cmd import run_reset  # only when it runs: the other group commands never load it

    run_reset(opts, group, to_earliest=to_earliest, to_latest=to_latest, to_time=to_time, to_offset=to_offset,
              shift_by=shift_by, from_file=from_file, topic=topic, queue=queue, execute=execute, yes=yes)


@app.command("delete")
@cluster_options
def delete(
    ctx: typer.Context,
    opts: Settings,
    group: GroupArg,
    clean_offsets: Annotated[bool, typer.Option("--clean-offsets", help="Also remove its committed offsets.")] = False,
    with_topics: Annotated[bool, typer.Option("--with-retry-dlq",
                                              help="Also delete its retry and DLQ topics.")] = False,
    execute: Annotated[bool, typer.Option("--execute", help="Delete (else the plan is only printed).")] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="With --execute: do not ask on the terminal.")] = False,
) -> None:
    """Delete a group with no online client from every broker: prints the plan; --execute deletes."""
    from rmqctl.cli.delete_cmd import run_delete  # only when it runs

    run_delete(opts, group, clean_offsets=clean_offsets, with_topics=with_topics, execute=execute, yes=yes)


@app.command("prune")
@cluster_options
def prune(
    ctx: typer.Context,
    opts: Settings,
    idle: Annotated[float, typer.Option("--idle", parser=duration_parser(at_least=1), metavar="DURATION",
                                        help="Groups with no online client and nothing consumed for this long "
                                             "(7d, 12h …).", show_default=False)],
    clean_offsets: Annotated[bool, typer.Option("--clean-offsets",
                                                help="Also remove their committed offsets.")] = False,
    with_topics: Annotated[bool, typer.Option("--with-retry-dlq",
                                              help="Also delete their retry and DLQ topics.")] = False,
    execute: Annotated[bool, typer.Option("--execute", help="Delete them (else they are only listed).")] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="With --execute: do not ask on the terminal.")] = False,
) -> None:
    """List idle groups with the evidence; --execute deletes them (never one with an online client)."""
    from rmqctl.cli.delete_cmd import run_prune  # only when it runs

    run_prune(opts, idle_s=idle, clean_offsets=clean_offsets, with_topics=with_topics, execute=execute, yes=yes)


def _total_shown(group: dict[str, Any]) -> str:
    """A ``group list`` total that is not a plain number: unknown, or a sum that leaves topics out."""
    if group["total_diff"] is None:
        return "unknown"
    return f"{group['total_diff']} + unknown ({', '.join(group['unknown_diff_topics'])})"
