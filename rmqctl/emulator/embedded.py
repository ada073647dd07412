"""The emulator inside the current process, read through rmqctl's normal client path.

``rmqctl --emulator NAME …`` and the tests use :func:`embedded_source`: it loads a scenario,
runs it on the virtual clock to its end (or to ``at`` seconds), serves the frozen result on
ephemeral loopback ports and hands back a :class:`~rmqctl.source.RemotingSource` over an
:class:`~rmqctl.remoting.admin.AdminClient` pointed at the emulated name server, so every read
goes over the real wire protocol exactly as against a real cluster.

Must not import the CLI, textual or pyspark.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from rmqctl.emulator.scenario import Scenario, load_scenario
from rmqctl.emulator.server import EmulatorServer
from rmqctl.emulator.world import EmulatedCluster
from rmqctl.remoting.admin import DEFAULT_TIMEOUT, AdminClient
from rmqctl.source import RemotingSource


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


@contextlib.asynccontextmanager
async def embedded_source(
    name_or_file: Scenario | str | Path, *, at: float | None = None, timeout: float | None = None
) -> AsyncIterator[RemotingSource]:
    """A :class:`RemotingSource` reading an in-process emulator; everything stops on exit."""
    async with embedded_cluster(name_or_file, at=at) as (cluster, server):
        admin = AdminClient([server.namesrv_addr], timeout=timeout or DEFAULT_TIMEOUT)
        source = RemotingSource(admin)
        source.description = (
            f"emulator {cluster.scenario.name} at {cluster.elapsed:g}s (namesrv {server.namesrv_addr})"
        )
        try:
            yield source
        finally:
            await source.close()
