"""``rmqctl tui [GROUP]``: the live dashboard, on any source (``-n``, ``--context``, ``--emulator``).

The command resolves options and hands them to :func:`tui.run.run_dashboard`. ``textual`` and the
``tui`` package are imported inside the command only, so ``import rmqctl.cli.app`` never loads
them; must not import another command module.
"""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer

from rmqctl import errors
from rmqctl.cli.common import ContextOpt, NamesrvOpt, TimeoutOpt, settings
from rmqctl.cli.durations import DURATION, duration_parser
from rmqctl.config import Config
from rmqctl.connect import Target

#: the shortest poll interval: 100 ms
parse_interval = duration_parser(at_least=0.1)


def tui(
    ctx: typer.Context,
    group: Annotated[str | None, typer.Argument(help="Open this group's view and poll only it.",
                                                show_default=False)] = None,
    interval: Annotated[float, typer.Option("--interval", "-i", parser=parse_interval, metavar=DURATION,
                                            help="Time between polls: 2s, 500ms, 1m.", show_default="2s")] = 2.0,
    emulator: Annotated[str | None, typer.Option(
        "--emulator", help="Run the built-in emulator live: a scenario name or TOML file.",
        show_default=False)] = None,
    speed: Annotated[float | None, typer.Option("--speed", min=0.001, show_default="1",
                                                help="With --emulator: run N times faster.")] = None,
    control: Annotated[str | None, typer.Option(
        "--control", help="Control API URL of a served emulator (enables the emulator controls; "
        "default: the served emulator of -n, if 'emulator serve' runs it).",
        show_default=False)] = None,
    token: Annotated[str | None, typer.Option("--token", help="Bearer token of that control API.",
                                              show_default=False)] = None,
    namesrv: NamesrvOpt = None,
    context: ContextOpt = None,
    timeout: TimeoutOpt = None,
) -> None:
    """Live dashboard: who holds which queue, lag and its trend, findings; keys: ? for help."""
    from tui.run import run_dashboard

    opts = settings(ctx, namesrv=namesrv, context=context, timeout=timeout, emulator=emulator)
    if opts.at is not None:
        raise errors.UsageError("--at does not apply to tui (it runs the scenario live; see --speed)")
    if speed is not None and opts.emulator is None:
        raise errors.UsageError("--speed needs --emulator SCENARIO (it runs the emulated scenario faster)")
    seconds = interval
    keys = Config.load().tui_keys
    target = Target(namesrv=opts.namesrv, context=opts.context, timeout=opts.timeout,
                    emulator=opts.emulator, live=True, speed=1.0 if speed is None else speed, dashboard=opts.dashboard,
                    tls=opts.tls)
    asyncio.run(run_dashboard(target, group=group, interval=seconds, keys=keys, control_url=control, token=token))
