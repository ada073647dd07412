"""``rmqctl snapshot``: record consumer-offset snapshots into Parquet files.

The command parses its options, opens the source and calls
:func:`rmqctl.snapshot.export.export` once; pyarrow is imported only when the command runs, so
``rmqctl --help`` works without the ``snapshot`` extra. Exit codes: 0 done, 5 when some rows
were recorded as missing (a broker or group failed a round), 128 + the signal number when
SIGINT (130) or SIGTERM (143) stopped it after flushing.

Must not import textual or pyspark.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from rmqctl import errors
from rmqctl.cli.common import Settings, cluster_options, console, target
from rmqctl.cli.durations import DURATION, duration_parser
from rmqctl.cli.render import Table, View, emit
from rmqctl.connect import open_source
from rmqctl.errors import ExitCode

if TYPE_CHECKING:
    from rmqctl.snapshot.export import ExportProgress, ExportResult

app = typer.Typer(help="Record consumer-offset snapshots (Parquet) for later analysis.",
                  no_args_is_help=True)


class _ProgressBar:
    """A rich progress bar on stderr, only when stderr is a terminal."""

    def __init__(self) -> None:
        from rich.console import Console as RichConsole
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.progress = Progress(
            TextColumn("snapshots"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            TextColumn("{task.fields[detail]}"),
            console=RichConsole(file=sys.stderr), transient=True,
        )
        self.task = self.progress.add_task("export", total=None, detail="")

    def update(self, step: ExportProgress) -> None:
        missing = f", {step.missing} missing" if step.missing else ""
        self.progress.update(self.task, completed=step.round, total=step.planned,
                             detail=f"{step.rows} rows, {step.files} file(s){missing}")


@app.command("export")
@cluster_options
def export_cmd(
    ctx: typer.Context,
    opts: Settings,
    out: Annotated[Path, typer.Option("--out", help="Directory to write date=YYYY-MM-DD/*.parquet into.",
                                      show_default=False)],
    groups: Annotated[list[str] | None, typer.Argument(help="Consumer groups to record.",
                                                       show_default=False)] = None,
    all_: Annotated[bool, typer.Option("--all", help="Record every consumer group (listed each round).")] = False,
    every: Annotated[float, typer.Option("--every", parser=duration_parser(), metavar=DURATION,
                                         help="Time between snapshots (30, 30s, 1m …).", show_default="30s")]
    = 30.0,
    count: Annotated[int | None, typer.Option("--count", min=1, help="Stop after this many snapshots.",
                                              show_default=False)] = None,
    duration: Annotated[float | None, typer.Option("--duration", parser=duration_parser(), metavar=DURATION,
                                                   help="Stop after this long (e.g. 1h).", show_default=False)]
    = None,
    roll: Annotated[float, typer.Option("--roll", parser=duration_parser(), metavar=DURATION, show_default="15m",
                                        help="Start a new file every this much snapshot time.")] = 900.0,
    roll_rows: Annotated[int, typer.Option("--roll-rows", min=1, help="Start a new file at this many rows.")]
    = 1_000_000,
    broker_times: Annotated[bool, typer.Option(
        "--broker-times/--no-broker-times",
        help="Also read each topic's newest store time (broker_last_ts) every round.")] = True,
) -> None:
    """Snapshot every queue's offsets and owner every --every, for --count or --duration or until
    Ctrl-C; rows go to Hive-partitioned Parquet files (see docs/snapshot-export.md)."""
    if not groups and not all_:
        raise errors.UsageError("name at least one GROUP or pass --all")
    if groups and all_:
        raise errors.UsageError("name GROUPs or pass --all, not both")
    if count is not None and duration is not None:
        raise errors.UsageError("give --count or --duration, not both")
    every_s, duration_s, roll_s = every, duration, roll
    try:
        from rmqctl.snapshot.export import export
    except ImportError as exc:
        raise errors.UsageError(f"the snapshot export needs pyarrow ({exc.name or exc})",
                                hint="install it with: pip install 'rmqctl[snapshot]'") from None

    bar = _ProgressBar() if sys.stderr.isatty() else None

    async def run() -> ExportResult:
        async with open_source(target(opts)) as opened:
            return await export(
                opened, None if all_ else list(groups or []), out, every=every_s, count=count,
                duration=duration_s, roll_seconds=roll_s, roll_rows=roll_rows,
                broker_times=broker_times, on_round=bar.update if bar else None,
            )

    if bar is not None:
        with bar.progress:
            result = asyncio.run(run())
    else:
        result = asyncio.run(run())
    _report(result, out, opts)


def _report(result: ExportResult, out: Path, opts: Settings) -> None:
    from rmqctl.report.snapshot import export_summary
    from rmqctl.snapshot.schema import SCHEMA_VERSION

    doc = export_summary(out=out, rounds=result.rounds, rows=result.rows, missing=result.missing,
                         failed_reads=result.failed_reads, files=result.files, first_ts=result.first_ts_ms,
                         last_ts=result.last_ts_ms, schema_version=SCHEMA_VERSION,
                         interrupted=result.interrupted.name if result.interrupted else None,
                         recovered_rows=result.recovered_rows, unread_groups=result.unread_groups)
    row = {k: doc[k] for k in ("rounds", "rows", "missing_rows", "first_ts", "last_ts")}
    row["files"] = len(result.files)
    table = Table([("rounds", "ROUNDS"), ("rows", "ROWS"), ("missing_rows", "MISSING"), ("files", "FILES"),
                   ("first_ts", "FIRST"), ("last_ts", "LAST")], [row])
    footer = [f"written under {out}"]
    footer += [f"{group}: progress not recorded ({why})" for group, why in doc["unread_groups"].items()]
    emit(View(doc, [table], footer), opts.output)
    if result.interrupted is not None:
        console.error(f"stopped by {result.interrupted.name}: {result.rounds} complete round(s) kept")
        raise typer.Exit(128 + int(result.interrupted))
    if result.missing or result.failed_reads:
        console.error(f"partial result: {result.failed_reads} read(s) failed, {result.missing} row(s) recorded as "
                      "missing (see the warnings above)")
        raise typer.Exit(int(ExitCode.PARTIAL))
