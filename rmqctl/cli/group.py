"""``rmqctl group …``: consumer groups, their clients, subscriptions, progress and assignment.

Reaches the core through its public modules; must not import textual, pyspark or another
command module.
"""

from __future__ import annotations

from typing import Annotated

import typer

from rmqctl import report
from rmqctl.cli.common import Failures, Settings, cluster_options, execute
from rmqctl.cli.render import Table, View
from rmqctl.model import format_millis
from rmqctl.source import ClusterSource

app = typer.Typer(help="Consumer groups.", no_args_is_help=True)

GroupArg = Annotated[str, typer.Argument(help="Consumer group name.", show_default=False)]


@app.command("list")
@cluster_options
def list_(
    ctx: typer.Context,
    opts: Settings,
    system: Annotated[bool, typer.Option("--system", help="Include the brokers' built-in groups.")] = False,
) -> None:
    """Every consumer group: online clients, type, model, oldest client version, total lag."""

    async def run(source: ClusterSource) -> tuple[View, Failures]:
        result = await source.group_summaries(include_system=system)
        rows = [report.group_summary(s) for s in result.value]
        columns = [("group", "GROUP"), ("clients", "CLIENTS"), ("consume_type", "TYPE"),
                   ("message_model", "MODEL"), ("version", "VERSION"),
                   ("total_diff", "DIFF_TOTAL"), ("consume_tps", "TPS")]
        return View(rows, [Table(columns, rows)]), dict(result.errors)

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
        doc = report.group_show(view)
        conn_rows = [
            {**c.as_dict(), "strategy": doc["client_strategies"].get(c.client_id),
             **doc["client_consume"].get(c.client_id, {})}
            for c in view.connections
        ]
        sub_rows = [
            {
                "topic": row.topic,
                "source": row.source,
                "expression": row.subscription.expression if row.subscription else "(not subscribed)",
                "sub_version": row.subscription.sub_version if row.subscription else None,
                "mark": "DIFFERS" if row.differs else "",
            }
            for row in report.compare_subscriptions(view)
        ]
        tables = [
            Table([("client_id", "CLIENT_ID"), ("client_addr", "CLIENT_ADDR"),
                   ("language", "LANGUAGE"), ("version", "VERSION"), ("strategy", "STRATEGY"),
                   ("consume_ok_tps", "CONSUME_TPS"), ("consume_failed_tps", "FAILED_TPS")],
                  conn_rows, title=f"Group {group}: {len(conn_rows)} client(s)"),
            Table([("topic", "TOPIC"), ("source", "SOURCE"), ("expression", "EXPRESSION"),
                   ("sub_version", "SUB_VERSION"), ("mark", "")], sub_rows, title="Subscriptions"),
        ]
        footer = [
            f"ConsumeType: {view.consume_type or '-'}",
            f"MessageModel: {view.message_model or '-'}",
            f"ConsumeFromWhere: {view.consume_from_where or '-'}",
        ]
        for conflict in doc["subscription_conflicts"]:
            footer.append(f"[{conflict['severity'].upper()}] {conflict['code']}: {conflict['title']}"
                          f" (details: rmqctl doctor {group})")
        return View(doc, tables, footer), dict(view.errors)

    execute(opts, run)


@app.command("progress")
@cluster_options
def progress(
    ctx: typer.Context,
    opts: Settings,
    group: GroupArg,
) -> None:
    """Per queue: offsets, lag, inflight, last consumed time and the client holding it."""

    async def run(source: ClusterSource) -> tuple[View, Failures]:
        view = await source.group_view(group)
        rows = report.group_progress(view)
        table_rows = [
            {**row, "last_consumed": format_millis(row["last_consumed_ts"]),
             "owner": row["owner"] or "N/A",
             **({"diff": "unknown"} if row["diff"] is None else {}),
             "note": "pulls fail: topic missing from the broker's table" if row.get("unpullable") else ""}
            for row in rows
        ]
        columns = [("topic", "TOPIC"), ("broker", "BROKER"), ("queue_id", "QID"),
                   ("broker_offset", "BROKER_OFFSET"), ("consumer_offset", "CONSUMER_OFFSET"),
                   ("pull_offset", "PULL_OFFSET"), ("diff", "DIFF"), ("inflight", "INFLIGHT"),
                   ("last_consumed", "LAST_CONSUMED"), ("owner", "OWNER"), ("note", "")]
        unknown = view.unknown_lag_queues
        footer = [f"Consume Diff Total: {view.total_diff}"
                  + (f" (unknown for {len(unknown)} queue(s))" if unknown else ""),
                  f"Consume Inflight Total: {view.total_inflight}"]
        return View(rows, [Table(columns, table_rows)], footer), dict(view.errors)

    execute(opts, run)


@app.command("assignment")
@cluster_options
def assignment(
    ctx: typer.Context,
    opts: Settings,
    group: GroupArg,
) -> None:
    """Which client holds which queue, and the queues nobody holds."""

    async def run(source: ClusterSource) -> tuple[View, Failures]:
        view = await source.group_view(group)
        doc = report.group_assignment(view)
        rows = []
        for cid, queues in doc["assignments"].items():
            if not queues:
                rows.append({"client_id": cid, "topic": None, "broker": None, "queue_id": None,
                             "note": "idle"})
            for q in queues:
                rows.append({"client_id": cid, **q, "note": ""})
        for q in doc["unassigned"]:
            rows.append({"client_id": None, **q, "note": "held by nobody"})
        columns = [("client_id", "CLIENT_ID"), ("topic", "TOPIC"), ("broker", "BROKER"),
                   ("queue_id", "QID"), ("note", "NOTE")]
        footer = [f"{len(doc['assignments'])} client(s), {len(doc['unassigned'])} queue(s) held by nobody"]
        moving = doc["rebalance_in_progress"]
        if moving:
            footer.append(f"Rebalance in progress: {len(moving['shared'])} queue(s) held by two clients and "
                          f"{len(moving['unheld'])} by none while clients move to the new allocation; "
                          f"check again in a few seconds.")
        return View(doc, [Table(columns, rows)], footer), dict(view.errors)

    execute(opts, run)
