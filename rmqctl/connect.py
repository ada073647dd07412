"""One way in: turn what the user named (name servers, a context, a rocketmq-dashboard URL, an
emulator scenario) into a :class:`~rmqctl.source.ClusterSource`.

:func:`open_source` is what every front end calls — each CLI command, the TUI, the snapshot
exporter — so the choice of back end, the config file's contexts and the embedded emulator's
life cycle live in one place. Besides the source it hands out a label for status lines and the
:class:`~rmqctl.watch.Clock` to poll on: the wall clock for a real cluster, the emulator's own
clock for an embedded one (its virtual clock moves only when a watcher sleeps, so an hour of
snapshots takes seconds).

Must not import the CLI, textual or pyspark.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from rmqctl.backends.remoting import RemotingBackend
from rmqctl.config import resolve
from rmqctl.remoting.admin import AdminClient
from rmqctl.remoting.admin import parse_namesrv as parse_namesrv
from rmqctl.service import ClusterService
from rmqctl.source import Opened


@dataclass(frozen=True, slots=True)
class Target:
    """What one invocation reads. ``emulator`` wins over everything else; then ``namesrv``,
    ``context``, ``NAMESRV_ADDR`` and the config file's current context, in that order."""

    namesrv: str | None = None
    context: str | None = None
    timeout: float | None = None
    #: a built-in scenario name or a TOML file: run the embedded emulator
    emulator: str | Path | None = None
    #: with ``emulator``: stop the scenario at this many seconds (default: its duration)
    at: float | None = None
    #: with ``emulator``: keep it running on the host clock, ``speed`` times faster, instead of
    #: freezing it at ``at`` (the TUI's live view)
    live: bool = False
    speed: float = 1.0
    #: a rocketmq-dashboard URL to read through (else a context's ``dashboard`` when it has one
    #: and no name server was named)
    dashboard: str | None = None


@contextlib.asynccontextmanager
async def open_source(target: Target) -> AsyncIterator[Opened]:
    """Open the source ``target`` names; everything it started stops on exit."""
    if target.emulator is not None:
        from rmqctl.emulator.embedded import embedded_opened

        async with embedded_opened(
            target.emulator, at=target.at, timeout=target.timeout, live=target.live,
            speed=target.speed,
        ) as opened:
            yield opened
        return
    web = None
    if target.dashboard or not target.namesrv:  # a name server given on its own is read directly
        from rmqctl.dashboard.settings import resolve_dashboard

        web = resolve_dashboard(dashboard=target.dashboard, namesrv=target.namesrv, context=target.context,
                                timeout=target.timeout)
    if web is not None:
        from rmqctl.backends.dashboard import open_dashboard_backend

        async with open_dashboard_backend(web.url, username=web.username, password=web.password,
                                          timeout=web.timeout) as backend:
            service = ClusterService(backend)
            yield Opened(service, f"dashboard {web.url}", service.clock)
        return
    resolved = resolve(namesrv=target.namesrv, context=target.context, timeout=target.timeout)
    admin = AdminClient(
        parse_namesrv(resolved.namesrv), timeout=resolved.timeout, credentials=resolved.credentials
    )
    source = ClusterService(RemotingBackend(admin))
    label = f"namesrv {resolved.namesrv}"
    if resolved.context:
        label = f"context {resolved.context} ({label})"
    try:
        yield Opened(source, label, source.clock)
    finally:
        await source.close()
