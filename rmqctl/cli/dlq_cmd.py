"""``rmqctl dlq …``: the dead-letter queues (``%DLQ%GROUP`` topics) of the consumer groups.

``dlq list`` is a read: each dead-letter topic, its queues, how many messages it stores and when
the newest arrived. Reaches the core through its public modules; must not import textual, pyspark
or another command module.
"""

from __future__ import annotations

from typing import Any

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
