"""Serving an emulated cluster until asked to stop: remoting ports, control API, clock driver.

:func:`serve_emulator` is what ``rmqctl emulator serve`` runs; it is a plain coroutine so tests
and other programs can run it too. With the real-time clock the cluster's emulated wall clock
starts at the host's current time and runs ``speed`` times faster; with the virtual clock it
starts at the fixed virtual epoch and moves only when the control API's ``advance`` is called.

A reader on another process learns that clock from the control API
(:func:`~rmqctl.emulator.served_clock.served_clock`, kept light for every command's start-up).

Must not import the CLI, textual or pyspark.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rmqctl.emulator.clock import VIRTUAL_EPOCH_MS, FrozenWorld, RealTimeDriver, Scheduler
from rmqctl.emulator.control import REQUEST_TIMEOUT, ControlServer
from rmqctl.emulator.scenario import Scenario
from rmqctl.emulator.served_clock import ServedClock, served_clock
from rmqctl.emulator.server import AcceptErrors, EmulatorServer, ServerLimits
from rmqctl.emulator.world import EmulatedCluster

__all__ = ["ServeOptions", "Served", "ServedClock", "running_emulator", "serve_emulator", "served_clock"]

if TYPE_CHECKING:
    import ssl


@dataclass(frozen=True, slots=True)
class ServeOptions:
    clock: str = "real"  # "real" or "virtual"
    speed: float = 1.0
    bind: str = "127.0.0.1"
    namesrv_port: int = 0
    control_port: int = 0
    token: str | None = None
    #: with the virtual clock: run the scenario to this many seconds before serving
    at: float = 0.0
    #: bounds on every remoting port (idle timeout, connection cap, frame size, write buffer)
    limits: ServerLimits = field(default_factory=ServerLimits)
    #: seconds a control-API client has to send one whole request
    request_timeout: float = REQUEST_TIMEOUT
    #: serve the remoting ports in TLS only (as a broker in ``tls.server.mode=enforcing``)
    ssl_context: ssl.SSLContext | None = None
    #: the process does nothing but serve this emulator: what each advance of the virtual clock
    #: leaves alive is frozen out of the cyclic collector's passes (:class:`FrozenWorld`)
    own_heap: bool = False


@dataclass(frozen=True, slots=True)
class Served:
    """Where a served emulator listens."""

    scenario: str
    namesrv: str
    brokers: dict[str, str]
    control: str
    clock: str
    speed: float


@contextlib.asynccontextmanager
async def running_emulator(scenario: Scenario, options: ServeOptions) -> AsyncIterator[tuple[Served, EmulatedCluster]]:
    """Start everything, yield where it listens, stop everything on exit."""
    real = options.clock == "real"
    start_ms = int(time.time() * 1000) if real else VIRTUAL_EPOCH_MS
    cluster = EmulatedCluster(scenario, scheduler=Scheduler(start_ms))
    driver = RealTimeDriver(cluster.scheduler, speed=options.speed) if real else None
    control = ControlServer(cluster, driver=driver, host=options.bind, port=options.control_port,
                            token=options.token, request_timeout=options.request_timeout,
                            heap=FrozenWorld() if options.own_heap else None)
    server = EmulatorServer(cluster, host=options.bind, namesrv_port=options.namesrv_port,
                            sync=driver.sync if driver else None, limits=options.limits,
                            ssl_context=options.ssl_context, cache_replies=True)
    loop = asyncio.get_running_loop()
    previous = loop.get_exception_handler()
    accept_errors = AcceptErrors(previous)
    loop.set_exception_handler(accept_errors)
    try:
        await server.start()
    except BaseException:
        loop.set_exception_handler(previous)
        raise
    task: asyncio.Task[None] | None = None
    try:
        await control.start()
        if driver is not None:
            _schedule_housekeeping(cluster)
            task = asyncio.create_task(driver.run(), name="emulator-clock")
        else:
            cluster.run_until(options.at)
        served = Served(scenario.name, server.namesrv_addr, server.broker_addrs(), control.url,
                        options.clock, options.speed)
        yield served, cluster
    finally:
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await control.stop()
        await server.stop()
        accept_errors.flush()
        loop.set_exception_handler(previous)


#: ``ClientHousekeepingService`` scans for silent channels this often
HOUSEKEEPING_INTERVAL_MS = 10_000


def _schedule_housekeeping(cluster: EmulatedCluster) -> None:
    """On the real-time clock, drop channels silent for 120 s (TCP clients that hang); the
    simulated clients always heartbeat in time. Not on the virtual clock, where one ``advance``
    may jump past a live TCP client's next heartbeat."""

    def scan() -> None:
        for broker in cluster.brokers.values():
            broker.expire_channels()
        cluster.scheduler.call_later(HOUSEKEEPING_INTERVAL_MS, scan)

    cluster.scheduler.call_later(HOUSEKEEPING_INTERVAL_MS, scan)


async def serve_emulator(scenario: Scenario, options: ServeOptions, *, stop: asyncio.Event,
                         ready: Callable[[Served], None] | None = None) -> None:
    """Serve until ``stop`` is set; ``ready`` is called once everything listens."""
    async with running_emulator(scenario, options) as (served, _):
        if ready is not None:
            ready(served)
        await stop.wait()
