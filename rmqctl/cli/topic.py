"""``rmqctl topic …``: topics, routes and per-queue offsets.

Reaches the core through its public modules; must not import textual, pyspark or another
command module.
"""

from __future__ import annotations

from typing import Annotated

import typer

from rmqctl import report
from rmqctl.cli.common import Failures, MatchOpt, Settings, SortOpt, cluster_options, execute
from rmqctl.cli.render import Table, View, select_rows
from rmqctl.source import ClusterSource

app = typer.Typer(help="Topics, routes and queue offsets.", no_args_is_help=True)

TopicArg = Annotated[str, typer.Argument(help="Topic name.", show_default=False)]


@app.command("list")
@cluster_options
def list_(
    ctx: typer.Context,
    opts: Settings,
    system: Annotated[bool, typer.Option("--system", help="Include retry, DLQ and system topics.")] = False,
    all_: Annotated[bool, typer.Option("--all", "-a", hidden=True, help="Same as --system.")] = False,
    sort: SortOpt = None,
    match: MatchOpt = None,
) -> None:
    """Topics the name servers know, typed as their brokers declare them (normal, fifo, delay,
    transaction, lite, priority) or by name (retry, dlq, system)."""

    async def run(source: ClusterSource) -> View:
        declared = await source.topic_types()
        doc = report.topic_list(await source.cluster(), await source.topics(), system=system or all_,
                                declared=declared.value, unavailable=declared.unavailable)
        doc["topics"] = select_rows(doc["topics"], report.TOPIC_LIST_COLUMNS, name_key="topic", match=match,
                                    sort=sort)
        footer = [f"{key}: unavailable ({why})" for key, why in doc.get("unavailable", {}).items()]
        return View(doc, [Table(["topic", "type", "type_source"], doc["topics"], flexible=("topic",))],
                    footer=footer, records=report.topic_list_rows(doc))

    execute(opts, run)


@app.command("route")
@cluster_options
def route(
    ctx: typer.Context,
    opts: Settings,
    topic: TopicArg,
) -> None:
    """Which brokers serve a topic and with how many queues (like mqadmin topicRoute -l)."""

    async def run(source: ClusterSource) -> View:
        doc = report.topic_route(topic, await source.topic_route(topic))
        rows = doc["brokers"]
        columns = list(report.ROUTE_COLUMNS)
        n = len(rows)
        total = (f"Total: {n} broker{'' if n == 1 else 's'}, {sum(x['read_queues'] for x in rows)} read, "
                 f"{sum(x['write_queues'] for x in rows)} write queues")
        return View(doc, [Table(columns, rows, flexible=("addrs",))], [total], report.topic_route_rows(doc))

    execute(opts, run)


@app.command("status")
@cluster_options
def status(
    ctx: typer.Context,
    opts: Settings,
    topic: TopicArg,
    sort: SortOpt = None,
    match: MatchOpt = None,
) -> None:
    """Min/max offset and last write of every queue (like mqadmin topicStatus); --match selects brokers."""

    async def run(source: ClusterSource) -> tuple[View, Failures]:
        stats = await source.topic_status(topic)
        doc = report.topic_status(topic, stats.value, stats.errors)
        doc["queues"] = rows = select_rows(doc["queues"], report.STATUS_COLUMNS, name_key="broker", match=match,
                                           sort=sort)
        footer = [] if stats.value.put_tps is None else [f"Put TPS: {stats.value.put_tps:.2f}"]
        return View(doc, [Table(list(report.STATUS_COLUMNS), rows)], footer,
                    report.topic_status_rows(doc)), dict(stats.errors)

    execute(opts, run)
