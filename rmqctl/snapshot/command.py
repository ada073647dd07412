"""``rmqctl snapshot export``: sample consumer offsets into Parquet files for history jobs.

A thin command: it checks the output directory before connecting (a bad ``--out`` is a one-line
usage error, exit 2), then hands the work to :func:`rmqctl.snapshot.export_snapshots` and the
result to the one renderer. Must not import textual or pyspark.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rmqctl import errors
from rmqctl.cli.common import (
    ContextOpt,
    NamesrvOpt,
    OutputOpt,
    TimeoutOpt,
    console,
    execute,
    fail,
    settings,
)
from rmqctl.cli.render import Table, View
from rmqctl.snapshot.export import export_snapshots, prepare_out_dir
from rmqctl.source import ClusterSource


def snapshot_export(
    ctx: typer.Context,
    out: Annotated[Path, typer.Option("--out", "-O", help="Directory for the Parquet files "
                                      "(date=YYYY-MM-DD/snapshot-<ts>.parquet).",
                                      show_default=False)],
    groups: Annotated[list[str] | None, typer.Argument(help="Consumer groups to sample.",
                                                       show_default=False)] = None,
    all_: Annotated[bool, typer.Option("--all", help="Sample every consumer group.")] = False,
    interval: Annotated[float, typer.Option("--interval", min=0.0,
                                            help="Seconds between samples.")] = 60.0,
    count: Annotated[int, typer.Option("--count", min=0,
                                       help="Number of samples; 0 runs until interrupted.")] = 1,
    cluster: Annotated[str | None, typer.Option("--cluster", help="Cluster label for every row "
                                                "(default: each broker's cluster).",
                                                show_default=False)] = None,
    namesrv: NamesrvOpt = None,
    context: ContextOpt = None,
    output: OutputOpt = None,
    timeout: TimeoutOpt = None,
) -> None:
    """Sample per-queue offsets and owners of consumer groups into Parquet snapshots."""
    opts = settings(ctx, namesrv=namesrv, context=context, output=output, timeout=timeout)
    if not groups and not all_:
        raise typer.BadParameter("name at least one GROUP or pass --all", param_hint="GROUP")
    try:
        prepare_out_dir(out)
    except errors.RmqctlError as exc:
        fail(exc, opts.debug)

    def progress(path: Path | None, rows: int) -> None:
        console.note(f"{rows} row(s) -> {path}" if path else "sample had no rows; nothing written")

    async def run(source: ClusterSource) -> tuple[View, dict[str, str]]:
        result = await export_snapshots(source, None if all_ else groups, out, interval, count,
                                        cluster=cluster or "", on_sample=progress)
        rows = [{"file": str(p)} for p in result.files]
        footer = [f"{result.samples} sample(s), {result.rows} row(s), {len(result.files)} file(s)"]
        if result.skipped:
            footer.append("skipped BROADCASTING group(s): " + ", ".join(result.skipped))
        return View(result.as_dict(), [Table([("file", "FILE")], rows)], footer), result.errors

    execute(opts, run)
