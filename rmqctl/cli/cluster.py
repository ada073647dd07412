"""``rmqctl cluster …``: brokers of every cluster the name servers know.

Reaches the core through its public modules; must not import textual, pyspark or another
command module.
"""

from __future__ import annotations

import typer

from rmqctl.cli.common import Failures, Settings, cluster_options, execute
from rmqctl.cli.render import Table, View
from rmqctl.source import ClusterSource

app = typer.Typer(help="Clusters and brokers.", no_args_is_help=True)


async def cluster_view(source: ClusterSource) -> tuple[View, Failures]:
    info = await source.cluster()
    runtimes = await source.broker_runtimes(info)
    by_key = {(r.broker_name, r.broker_id): r for r in runtimes.value}
    rows = []
    for cluster_name, broker_names in sorted(info.clusters.items()):
        for broker_name in broker_names:
            data = info.brokers.get(broker_name)
            for broker_id, addr in sorted((data.addrs if data else {}).items()):
                rt = by_key.get((broker_name, broker_id))
                rows.append({
                    "cluster": cluster_name,
                    "broker": broker_name,
                    "broker_id": broker_id,
                    "addr": addr,
                    "version": rt.version if rt else None,
                    "in_tps": rt.in_tps if rt else None,
                    "out_tps": rt.out_tps if rt else None,
                    "disk_ratio": rt.disk_ratio if rt else None,
                })
    columns = [("cluster", "CLUSTER"), ("broker", "BROKER"), ("broker_id", "BID"),
               ("addr", "ADDR"), ("version", "VERSION"), ("in_tps", "IN_TPS"),
               ("out_tps", "OUT_TPS"), ("disk_ratio", "DISK")]
    return View(rows, [Table(columns, rows)]), dict(runtimes.errors)


@app.command("list")
@cluster_options
def list_(
    ctx: typer.Context,
    opts: Settings,
) -> None:
    """Every broker of every cluster, with version, TPS and disk use (like mqadmin clusterList)."""
    execute(opts, cluster_view)
