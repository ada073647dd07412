"""``rmqctl topic …``: topics, routes and per-queue offsets.

Reaches the core through its public modules; must not import textual, pyspark or another
command module.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from rmqctl import report
from rmqctl.cli.common import Failures, MatchOpt, Settings, SortOpt, cluster_options, execute
from rmqctl.cli.render import Table, View, select_rows
from rmqctl.model import topic_kind
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
    """Topics the name servers know (their type: normal, retry, dlq or system)."""

    async def run(source: ClusterSource) -> View:
        info = await source.cluster()
        rows = [{"topic": t, "type": topic_kind(t, info)} for t in await source.topics()]
        if not (system or all_):
            rows = [r for r in rows if r["type"] == "normal"]
        rows = select_rows(rows, report.TOPIC_LIST_COLUMNS, name_key="topic", match=match, sort=sort)
        doc = report.TopicListDoc(topics=rows, errors={})
        return View(doc, [Table(["topic", "type"], doc["topics"], flexible=("topic",))],
                    records=report.topic_list_rows(doc))

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
        r = await source.topic_route(topic)
        brokers = {b.broker_name: b for b in r.broker_datas}
        rows: list[dict[str, Any]] = []
        for qd in sorted(r.queue_datas, key=lambda q: q.broker_name):
            bd = brokers.get(qd.broker_name)
            rows.append({
                "cluster": bd.cluster if bd else None,
                "broker": qd.broker_name,
                "addrs": {str(k): v for k, v in sorted(bd.addrs.items())} if bd else {},
                "read_queues": qd.read_queue_nums,
                "write_queues": qd.write_queue_nums,
                "perm": qd.perm,
            })
        doc = report.TopicRouteDoc(topic=topic, brokers=rows, order_topic_conf=r.order_topic_conf, errors={})
        columns = ["cluster", "broker", "addrs", "read_queues", "write_queues", "perm"]
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
        rows: list[dict[str, Any]] = [{
            "broker": o.queue.broker_name,
            "queue_id": o.queue.queue_id,
            "min_offset": o.min_offset,
            "max_offset": o.max_offset,
            "last_updated_ts": o.last_update_timestamp or None,
        } for o in stats.value.offsets]
        rows = select_rows(rows, report.STATUS_COLUMNS, name_key="broker", match=match, sort=sort)
        doc = report.TopicStatusDoc(topic=topic, queues=rows, put_tps=stats.value.put_tps,
                                    errors=report.errors_doc(stats.errors))
        footer = [] if stats.value.put_tps is None else [f"Put TPS: {stats.value.put_tps:.2f}"]
        return View(doc, [Table(list(report.STATUS_COLUMNS), rows)], footer,
                    report.topic_status_rows(doc)), dict(stats.errors)

    execute(opts, run)
