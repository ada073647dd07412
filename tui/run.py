"""Run the dashboard on a source until the user quits: what ``rmqctl tui`` and ``rmqctl demo`` call.

Opens the target through :func:`rmqctl.connect.open_source`, picks the emulator controls (the
embedded emulator's, or the control API of a served emulator given with ``--control`` or found in
the registry of served emulators by its name server — never anything for a real cluster) and runs
the app :func:`tui.make_app` builds. Imports the core, never the CLI.
"""

from __future__ import annotations

from collections.abc import Callable

from rmqctl import errors
from rmqctl.actions.permission import Writer, check_writable
from rmqctl.config import resolve
from rmqctl.connect import Target, open_source
from rmqctl.emulator.control_client import EmbeddedControl, EmulatorControl, served_control_for
from tui.app import TuiSettings, make_app
from tui.keys import DEFAULT_KEYS


def check_keys(keys: dict[str, str]) -> None:
    """Every remapped binding id must be one the app has."""
    unknown = sorted(set(keys) - set(DEFAULT_KEYS))
    if unknown:
        raise errors.ConfigError(f"[tui.keys]: unknown binding id {unknown[0]!r}",
                                 hint="binding ids: " + ", ".join(DEFAULT_KEYS))


def writer_for(target: Target) -> Callable[[], Writer]:
    """Who writes a reset applied from the dashboard opened on ``target``, asked when it is
    applied: ``group reset --execute``'s check, so a read-only context refuses it the same way."""

    def writer() -> Writer:
        return check_writable(namesrv=target.namesrv, context=target.context, timeout=target.timeout,
                              emulator=target.emulator is not None)

    return writer


async def run_dashboard(target: Target, *, group: str | None, interval: float, keys: dict[str, str],
                        control_url: str | None = None, token: str | None = None) -> None:
    """Open ``target`` and run the dashboard until the user quits."""
    check_keys(keys)
    async with open_source(target) as opened:
        control: EmulatorControl | None
        if opened.cluster is not None:
            control = EmbeddedControl(opened.cluster)
        else:
            namesrv = None
            if control_url is None and target.dashboard is None:
                namesrv = resolve(namesrv=target.namesrv, context=target.context, timeout=target.timeout).namesrv
            control = await served_control_for(namesrv, control_url, token)
        cluster = f"emulator {target.emulator}" if target.emulator is not None else opened.label
        try:
            app = make_app(opened, TuiSettings(group=group, interval=interval, keys=keys, control=control,
                                               writer=writer_for(target), cluster=cluster))
            await app.run_async()
        finally:
            if control is not None:
                await control.close()
