"""``rmqctl topic …``: topics, routes and per-queue offsets.

Reaches the core through its public modules; must not import textual, pyspark or another
command module.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from rmqctl.cli.common import Failures, Settings, cluster_options, execute
from rmqctl.cli.render import Table, View
from rmqctl.model import format_millis, topic_kind
from rmqctl.source import ClusterSource

app = typer.Typer(help="Topics, routes and queue offsets.", no_args_is_help=True)

TopicArg = Annotated[str, typer.Argument(help="Topic name.", show_default=False)]


@app.command("list")
@cluster_options
def list_(
    ctx: typer.Context,
    opts: Settings,
    all_: Annotated[bool, typer.Option("--all", "-a", help="Include retry, DLQ and system topics.")] = False,
) -> None:
    """Topics the name servers know."""

    async def run(source: ClusterSource) -> View:
        info = await source.cluster()
        rows = [{"topic": t, "kind": topic_kind(t, info)} for t in await source.topics()]
        if not all_:
            rows = [r for r in rows if r["kind"] == "normal"]
        return View(rows, [Table([("topic", "TOPIC"), ("kind", "KIND")], rows)])

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
        table_rows = [{**row, "addrs": ",".join(f"{k}={v}" for k, v in row["addrs"].items())}
                      for row in rows]
        doc = {"topic": topic, "brokers": rows, "order_topic_conf": r.order_topic_conf}
        columns = [("cluster", "CLUSTER"), ("broker", "BROKER"), ("addrs", "ADDRS"),
                   ("read_queues", "READ"), ("write_queues", "WRITE"), ("perm", "PERM")]
        total = (f"Total: {len(rows)} broker(s), {sum(x['read_queues'] for x in rows)} read, "
                 f"{sum(x['write_queues'] for x in rows)} write queues")
        return View(doc, [Table(columns, table_rows)], footer=[total])

    execute(opts, run)


@app.command("status")
@cluster_options
def status(
    ctx: typer.Context,
    opts: Settings,
    topic: TopicArg,
) -> None:
    """Min/max offset and last write of every queue (like mqadmin topicStatus)."""

    async def run(source: ClusterSource) -> tuple[View, Failures]:
        stats = await source.topic_status(topic)
        rows = [{
            "broker": o.queue.broker_name,
            "queue_id": o.queue.queue_id,
            "min_offset": o.min_offset,
            "max_offset": o.max_offset,
            "last_updated_ts": o.last_update_timestamp or None,
            "last_updated": format_millis(o.last_update_timestamp),
        } for o in stats.value.offsets]
        columns = [("broker", "BROKER"), ("queue_id", "QID"), ("min_offset", "MIN_OFFSET"),
                   ("max_offset", "MAX_OFFSET"), ("last_updated", "LAST_UPDATED")]
        footer = [] if stats.value.put_tps is None else [f"Topic Put TPS: {stats.value.put_tps:.2f}"]
        return View(rows, [Table(columns, rows)], footer), dict(stats.errors)

    execute(opts, run)
