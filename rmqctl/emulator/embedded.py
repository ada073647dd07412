"""The emulator inside the current process, read through rmqctl's normal client path.

``rmqctl --emulator NAME …`` and the tests use :func:`embedded_opened`: it loads a scenario,
runs it on the virtual clock to its end (or to ``at`` seconds), serves the frozen result on
ephemeral loopback ports and hands back a :class:`~rmqctl.service.ClusterService` over the
remoting back end pointed at the emulated name server, so every read goes over the real wire
protocol exactly as against a real cluster. The emulator back end is that remoting back end with
the emulator's clock: :class:`VirtualClock` when frozen, :class:`~rmqctl.emulator.clock.LiveClock`
when live.

Must not import the CLI, textual or pyspark.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from rmqctl.backends.remoting import RemotingBackend
from rmqctl.emulator.clock import LiveClock
from rmqctl.emulator.scenario import Scenario, load_scenario
from rmqctl.emulator.server import EmulatorServer
from rmqctl.emulator.world import EmulatedCluster
from rmqctl.remoting.admin import DEFAULT_TIMEOUT, AdminClient
from rmqctl.service import ClusterService
from rmqctl.source import Opened


@contextlib.asynccontextmanager
async def embedded_cluster(
    scenario: Scenario | str | Path, *, at: float | None = None, host: str = "127.0.0.1"
) -> AsyncIterator[tuple[EmulatedCluster, EmulatorServer]]:
    """The scenario run to ``at`` (default: its duration) and served on ephemeral ports."""
    spec = scenario if isinstance(scenario, Scenario) else load_scenario(scenario)
    cluster = EmulatedCluster(spec)
    server = EmulatorServer(cluster, host=host)
    await server.start()
    try:
        # Routes and client properties carry the real addresses, so bind before running.
        cluster.run_until(spec.duration if at is None else at)
        yield cluster, server
    finally:
        await server.stop()


class VirtualClock:
    """The embedded emulator's clock as a :class:`~rmqctl.clock.Clock`: reading it gives the
    emulated wall time, sleeping on it runs the scenario forward instantly."""

    def __init__(self, cluster: EmulatedCluster) -> None:
        self.cluster = cluster

    def now(self) -> float:
        return self.cluster.now_ms / 1000

    async def sleep(self, seconds: float) -> None:
        self.cluster.advance(seconds)


@contextlib.asynccontextmanager
async def embedded_opened(
    name_or_file: Scenario | str | Path,
    *,
    at: float | None = None,
    timeout: float | None = None,
    live: bool = False,
    speed: float = 1.0,
) -> AsyncIterator[Opened]:
    """The emulator in this process behind a :class:`ClusterService`; everything stops on exit.

    Frozen (default): the scenario runs on the virtual clock to ``at`` and moves on only when a
    watcher sleeps on the returned clock. ``live``: it runs on the host clock, ``speed`` times
    faster, from the scenario's start, as ``emulator serve`` does.
    """
    spec = name_or_file if isinstance(name_or_file, Scenario) else load_scenario(name_or_file)
    if live:
        from rmqctl.emulator.serve import ServeOptions, running_emulator

        async with running_emulator(spec, ServeOptions(clock="real", speed=speed)) as (served, cluster):
            admin = AdminClient([served.namesrv], timeout=timeout or DEFAULT_TIMEOUT)
            assert cluster.scheduler.driver is not None  # the real-time clock always has one
            source = ClusterService(RemotingBackend(admin), LiveClock(cluster.scheduler.driver))
            label = f"emulator {spec.name} (live, x{speed:g}, namesrv {served.namesrv})"
            try:
                yield Opened(source, label, source.clock, cluster)
            finally:
                await source.close()
        return
    async with embedded_cluster(spec, at=at) as (cluster, server):
        admin = AdminClient([server.namesrv_addr], timeout=timeout or DEFAULT_TIMEOUT)
        source = ClusterService(RemotingBackend(admin), VirtualClock(cluster))
        label = f"emulator {spec.name} at {cluster.elapsed:g}s (namesrv {server.namesrv_addr})"
        try:
            yield Opened(source, label, source.clock, cluster)
        finally:
            await source.close()
