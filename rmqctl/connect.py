"""One way in: turn what the user named (name servers, a context, a rocketmq-dashboard URL, an
emulator scenario) into a :class:`~rmqctl.source.ClusterSource`.

:func:`open_source` is what every front end calls — each CLI command, the TUI, the snapshot
exporter — so the choice of back end, the config file's contexts and the embedded emulator's
life cycle live in one place. Besides the source it hands out a label for status lines and the
source's :class:`~rmqctl.clock.Clock`: the wall clock for a real cluster or a dashboard, the
emulator's own clock for an embedded one (its virtual clock moves only when a watcher sleeps, so
an hour of snapshots takes seconds) and for a served one (read from its control API, found in
the registry of served emulators).

Must not import the CLI, textual or pyspark.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path

from rmqctl import errors
from rmqctl.backends.remoting import RemotingBackend
from rmqctl.clock import Clock
from rmqctl.config import TlsFiles, resolve
from rmqctl.records import dataclass
from rmqctl.remoting.acl import Credentials
from rmqctl.remoting.admin import AdminClient
from rmqctl.remoting.admin import parse_namesrv as parse_namesrv
from rmqctl.remoting.tls import TlsOptions
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
    #: 5.x proxies' remoting addresses, ``'host:8080;host2:8080'`` (else the context's ``proxy``)
    proxy: str | None = None
    #: ``--tls``: TLS on every remoting connection (``None``: as ``RMQCTL_TLS`` and the context say)
    tls: bool | None = None


async def served_emulator_clock(namesrv: str) -> Clock | None:
    """The clock of the served emulator behind ``namesrv`` (its emulated time, sped up or
    virtual), or ``None`` for anything else: the host's clock then applies. Asked only when a
    served emulator registered on this machine serves ``namesrv``, or one is named by
    ``$RMQCTL_EMULATOR_URL``; the registry and the clock's reader are light modules, so a
    command against a real cluster loads neither the emulator nor an HTTP client."""
    from rmqctl.emulator.served_clock import served_clock

    return await served_clock(namesrv, token=os.environ.get("RMQCTL_EMULATOR_TOKEN"))


def tls_options(files: TlsFiles | None) -> TlsOptions | None:
    """The remoting layer's TLS options for what the config resolved (``None``: plain)."""
    if files is None:
        return None
    return TlsOptions(files.ca_file, files.cert_file, files.key_file, files.key_password, files.verify)


@contextlib.asynccontextmanager
async def open_source(target: Target) -> AsyncIterator[Opened]:
    """Open the source ``target`` names; everything it started stops on exit."""
    if target.emulator is not None:
        from rmqctl.emulator.embedded import embedded_opened

        if target.tls:
            raise errors.UsageError("--tls does not apply to the embedded emulator (it listens in plain on loopback)")

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

        if target.proxy:
            raise errors.UsageError("--proxy reads proxies over the native protocol; a dashboard cannot",
                                    hint="name the name servers with -n instead of a dashboard")
        if target.tls:
            raise errors.UsageError("--tls is for the native protocol; a dashboard's URL says https:// itself",
                                    hint="name the name servers with -n, or drop --tls")

        async with open_dashboard_backend(web.url, username=web.username, password=web.password,
                                          timeout=web.timeout) as backend:
            service = ClusterService(backend)
            yield Opened(service, f"dashboard {web.url}", service.clock)
        return
    resolved = resolve(namesrv=target.namesrv, context=target.context, timeout=target.timeout,
                       proxy=target.proxy, tls=target.tls)
    keys = resolved.credentials
    admin = AdminClient(
        parse_namesrv(resolved.namesrv), timeout=resolved.timeout,
        credentials=Credentials(keys.access_key, keys.secret_key, keys.security_token) if keys else None,
        tls=tls_options(resolved.tls),
    )
    clock = await served_emulator_clock(resolved.namesrv)
    source = ClusterService(RemotingBackend(admin), clock, proxies=resolved.proxies)
    label = f"namesrv {resolved.namesrv}" + (" (TLS)" if resolved.tls else "")
    if resolved.proxies:
        label += f", proxy {';'.join(resolved.proxies)}"
    if resolved.context:
        label = f"context {resolved.context} ({label})"
    if clock is not None:
        label += " (served emulator)"
    try:
        yield Opened(source, label, source.clock)
    finally:
        await source.close()
