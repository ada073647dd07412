"""Run the dashboard on a source until the user quits: what ``rmqctl tui`` and ``rmqctl demo`` call.

Opens the target through :func:`rmqctl.connect.open_source`, picks the emulator controls (the
embedded emulator's, or the control API of a served emulator given with ``--control`` or found in
the registry of served emulators by its name server — never anything for a real cluster) and runs
the app :func:`tui.make_app` builds. Imports the core, never the CLI.
"""

from __future__ import annotations

from rmqctl import errors
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
        try:
            app = make_app(opened, TuiSettings(group=group, interval=interval, keys=keys, control=control))
            await app.run_async()
        finally:
            if control is not None:
                await control.close()
