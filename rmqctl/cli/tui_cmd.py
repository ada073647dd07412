"""``rmqctl tui [GROUP]``: the live dashboard, on any source (``-n``, ``--context``, ``--emulator``).

The command resolves options, opens the source, picks the emulator controls (the embedded
emulator's, or a served emulator's control API — never anything for a real cluster) and runs
the app :func:`tui.make_app` builds. ``textual`` and the ``tui`` package are imported inside the
command only, so ``import rmqctl.cli.app`` never loads them.
"""

from __future__ import annotations

import asyncio
import re
from typing import TYPE_CHECKING, Annotated

import typer

from rmqctl import errors
from rmqctl.cli.common import ContextOpt, NamesrvOpt, TimeoutOpt, fail, settings
from rmqctl.config import Config, resolve
from rmqctl.connect import Target, open_source
from rmqctl.errors import ExitCode

if TYPE_CHECKING:
    from rmqctl.emulator.control_client import EmulatorControl

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m)?\s*$")


def parse_interval(text: str) -> float:
    """``2s``, ``500ms``, ``1m`` or a plain number of seconds → seconds (at least 0.1)."""
    match = _DURATION.match(text)
    if not match:
        raise errors.UsageError(f"invalid --interval {text!r}", hint="use e.g. 2s, 500ms or 1m")
    value = float(match.group(1)) * {"ms": 0.001, "s": 1.0, "m": 60.0, None: 1.0}[match.group(2)]
    if value < 0.1:
        raise errors.UsageError(f"--interval {text!r} is too short; the minimum is 100ms")
    return value


async def run_dashboard(target: Target, *, group: str | None, interval: float, keys: dict[str, str],
                        control_url: str | None = None, token: str | None = None) -> None:
    """Open ``target`` and run the dashboard until the user quits."""
    from rmqctl.emulator.control_client import EmbeddedControl, served_control_for
    from tui import TuiSettings, make_app

    async with open_source(target) as opened:
        control: EmulatorControl | None
        if opened.cluster is not None:
            control = EmbeddedControl(opened.cluster)
        else:
            namesrv = None
            if control_url is None:
                namesrv = resolve(namesrv=target.namesrv, context=target.context, timeout=target.timeout).namesrv
            control = await served_control_for(namesrv, control_url, token)
        try:
            app = make_app(opened, TuiSettings(group=group, interval=interval, keys=keys, control=control))
            await app.run_async()
        finally:
            if control is not None:
                await control.close()


def check_keys(keys: dict[str, str]) -> None:
    from tui.keys import DEFAULT_KEYS

    unknown = sorted(set(keys) - set(DEFAULT_KEYS))
    if unknown:
        raise errors.ConfigError(f"[tui.keys]: unknown binding id {unknown[0]!r}",
                                 hint="binding ids: " + ", ".join(DEFAULT_KEYS))


def tui(
    ctx: typer.Context,
    group: Annotated[str | None, typer.Argument(help="Open this group's view and poll only it.",
                                                show_default=False)] = None,
    interval: Annotated[str, typer.Option("--interval", "-i", help="Time between polls: 2s, 500ms, 1m.")] = "2s",
    emulator: Annotated[str | None, typer.Option(
        "--emulator", help="Run the built-in emulator live: a scenario name or TOML file.",
        show_default=False)] = None,
    speed: Annotated[float, typer.Option("--speed", min=0.001, help="With --emulator: run N times faster.")] = 1.0,
    control: Annotated[str | None, typer.Option(
        "--control", help="Control API URL of a served emulator (enables the emulator controls).",
        show_default=False)] = None,
    token: Annotated[str | None, typer.Option("--token", help="Bearer token of that control API.",
                                              show_default=False)] = None,
    namesrv: NamesrvOpt = None,
    context: ContextOpt = None,
    timeout: TimeoutOpt = None,
) -> None:
    """Live dashboard: who holds which queue, lag and its trend, findings; keys: ? for help."""
    opts = settings(ctx, namesrv=namesrv, context=context, timeout=timeout, emulator=emulator)
    try:
        seconds = parse_interval(interval)
        keys = Config.load().tui_keys
        check_keys(keys)
    except errors.RmqctlError as exc:
        fail(exc, opts.debug)
    target = Target(namesrv=opts.namesrv, context=opts.context, timeout=opts.timeout,
                    emulator=opts.emulator, live=True, speed=speed)
    try:
        asyncio.run(run_dashboard(target, group=group, interval=seconds, keys=keys,
                                  control_url=control, token=token))
    except errors.RmqctlError as exc:
        fail(exc, opts.debug)
    except KeyboardInterrupt:
        raise typer.Exit(int(ExitCode.INTERRUPTED)) from None
