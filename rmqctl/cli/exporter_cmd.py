"""``rmqctl exporter``: lag, findings and stuck verdicts as Prometheus metrics, continuously.

Parses the options, opens the source and calls :func:`rmqctl.exporter.run.run_exporter` once.
Without ``--once`` it runs until SIGINT or SIGTERM and exits 0 after flushing; ``--once`` takes
one round, prints the metrics on stdout (classic text format, or OpenMetrics with
``--openmetrics``), writes the snapshot files and exits 0, or 5 when a group or broker could not
be read. Must not import textual, pyspark or another command module.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Annotated

import typer

from rmqctl import errors
from rmqctl.cli.common import Settings, cluster_options, console
from rmqctl.cli.durations import DURATION, duration_parser
from rmqctl.errors import ExitCode


@cluster_options
def exporter(
    ctx: typer.Context,
    opts: Settings,
    groups: Annotated[list[str] | None, typer.Argument(
        help="Consumer groups to export (default: every group, listed each round).", show_default=False)] = None,
    listen: Annotated[str | None, typer.Option(
        "--listen", help="Serve /metrics on HOST:PORT (default 127.0.0.1:9464 when no --snapshots is given).",
        show_default=False)] = None,
    snapshots: Annotated[Path | None, typer.Option(
        "--snapshots", help="Also write each round as Parquet snapshots into this directory "
        "(as snapshot export).", show_default=False)] = None,
    interval: Annotated[float, typer.Option(
        "--interval", parser=duration_parser(at_least=0.1), metavar=DURATION, show_default="30s",
        help="Time between rounds (30, 30s, 1m …).")] = 30.0,
    once: Annotated[bool, typer.Option(
        "--once", help="One round: print the metrics, write the snapshots, exit (for cron).")] = False,
    openmetrics: Annotated[bool, typer.Option(
        "--openmetrics", help="With --once: print OpenMetrics instead of the classic text format.")] = False,
    concurrency: Annotated[int, typer.Option(
        "--concurrency", min=1, max=256,
        help="Groups read at the same time (the requests in flight stay bounded whatever it is: 16 at once "
        "over the native protocol).")] = 64,
    per_queue: Annotated[bool, typer.Option(
        "--per-queue", help="Also export lag, lag in seconds and in-flight per queue.")] = False,
    max_queue_series: Annotated[int, typer.Option(
        "--max-queue-series", min=0, help="At most this many per-queue series per scrape (findings, "
        "verdicts and --per-queue together).")] = 10_000,
    lag_time: Annotated[bool, typer.Option(
        "--lag-seconds/--no-lag-seconds",
        help="Read back each backlog's oldest message for the lag in seconds.")] = True,
    no_sample: Annotated[bool, typer.Option(
        "--no-sample", help="Do not read back recent messages to count real tags (as doctor --no-sample).")]
    = False,
    stuck_window: Annotated[float, typer.Option(
        "--stuck-window", parser=duration_parser(), metavar=DURATION, show_default="10m",
        help="Rounds the stuck verdicts look back over (as analyze stuck --window).")] = 600.0,
) -> None:
    """Export lag (messages and seconds), rates, doctor findings and stuck verdicts as Prometheus
    metrics: serve /metrics, write Parquet snapshots, or both (see docs/metrics.md)."""
    from rmqctl.connect import Target, open_source
    from rmqctl.exporter import ExporterOptions, MetricOptions, RoundCollector, parse_listen, run_exporter
    from rmqctl.exporter.metrics import exposition, registry_for

    if opts.at is not None and not once:
        raise errors.UsageError("--at applies to exporter --once (without it the scenario runs live)")
    if once and listen is not None:
        raise errors.UsageError("--once prints the metrics once: it serves no --listen endpoint")
    if openmetrics and not once:
        raise errors.UsageError("--openmetrics applies to --once (the endpoint negotiates its format)")
    address = parse_listen(listen) if listen is not None else None
    if address is None and snapshots is None and not once:
        address = parse_listen("127.0.0.1:9464")
    if address is not None and address[0] not in ("127.0.0.1", "localhost", "::1") \
            and not address[0].startswith("127."):
        console.error(f"warning: /metrics is served on {address[0]}, beyond this machine")
    if snapshots is not None:
        try:
            import pyarrow  # noqa: F401 - checked before the first round
        except ImportError as exc:
            raise errors.UsageError(f"--snapshots needs pyarrow ({exc.name or exc})",
                                    hint="install it with: pip install 'rmqctl[snapshot]'") from None
    options = ExporterOptions(
        interval=interval, listen=address, snapshots=snapshots, once=once, concurrency=concurrency,
        lag_time=lag_time, sample_tags=not no_sample, stuck_window=stuck_window,
        metrics=MetricOptions(per_queue=per_queue, max_queue_series=max_queue_series))
    collector = RoundCollector(options.metrics)
    target = Target(namesrv=opts.namesrv, context=opts.context, timeout=opts.timeout, emulator=opts.emulator,
                    at=opts.at, live=not once, dashboard=opts.dashboard, tls=opts.tls)

    async def run() -> object:
        async with open_source(target) as opened:
            return await run_exporter(opened, list(dict.fromkeys(groups)) if groups else None, options,
                                      collector=collector)

    asyncio.run(run())
    if once:
        body, _ = exposition(registry_for(collector),
                             "application/openmetrics-text; version=1.0.0" if openmetrics else None)
        sys.stdout.buffer.write(body)
        sys.stdout.flush()
        current = collector.current
        if current is not None and current.partial:
            console.error(f"partial result: {len(current.failed_groups)} group(s) unreadable, "
                          f"{sum(1 for b in current.brokers.values() if not b.up)} broker(s) down")
            raise typer.Exit(int(ExitCode.PARTIAL))
