"""``rmqctl cluster …``: brokers of every cluster the name servers know.

Reaches the core through its public modules; must not import textual, pyspark or another
command module.
"""

from __future__ import annotations

import typer

from rmqctl import report
from rmqctl.cli.common import Failures, MatchOpt, Settings, SortOpt, cluster_options, execute
from rmqctl.cli.render import Table, View, select_rows
from rmqctl.source import ClusterSource

app = typer.Typer(help="Clusters and brokers.", no_args_is_help=True)


async def cluster_view(source: ClusterSource, match: str | None = None,
                       sort: str | None = None) -> tuple[View, Failures]:
    info = await source.cluster()
    runtimes = await source.broker_runtimes(info)
    doc = report.cluster_list(info, runtimes.value, runtimes.errors)
    doc["brokers"] = select_rows(doc["brokers"], report.CLUSTER_COLUMNS, name_key="broker", match=match, sort=sort)
    return (View(doc, [Table(list(report.CLUSTER_COLUMNS), doc["brokers"])], records=report.cluster_list_rows(doc)),
            dict(runtimes.errors))


@app.command("list")
@cluster_options
def list_(
    ctx: typer.Context,
    opts: Settings,
    sort: SortOpt = None,
    match: MatchOpt = None,
) -> None:
    """Every broker of every cluster, with version, TPS and disk use (like mqadmin clusterList)."""

    async def run(source: ClusterSource) -> tuple[View, Failures]:
        return await cluster_view(source, match, sort)

    execute(opts, run)
