"""Serving an emulated cluster until asked to stop: remoting ports, control API, clock driver.

:func:`serve_emulator` is what ``rmqctl emulator serve`` runs; it is a plain coroutine so tests
and other programs can run it too. With the real-time clock the cluster's emulated wall clock
starts at the host's current time and runs ``speed`` times faster; with the virtual clock it
starts at the fixed virtual epoch and moves only when the control API's ``advance`` is called.

A reader on another process learns that clock from the control API (:func:`served_clock`): the
health answer's ``now_ms`` and ``speed``, found through the registry of served emulators, so the
doctor's "now" is the emulator's and not the host's.

Must not import the CLI, textual or pyspark.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rmqctl import errors
from rmqctl.emulator.clock import VIRTUAL_EPOCH_MS, RealTimeDriver, Scheduler
from rmqctl.emulator.control import REQUEST_TIMEOUT, ControlServer
from rmqctl.emulator.scenario import Scenario
from rmqctl.emulator.server import AcceptErrors, EmulatorServer, ServerLimits
from rmqctl.emulator.world import EmulatedCluster

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
                            token=options.token, request_timeout=options.request_timeout)
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


class ServedClock:
    """A served emulator's clock as an :class:`rmqctl.clock.Clock`, read from its control API
    and run on from there: ``speed`` emulated seconds per host second on the real-time clock,
    standing still on the virtual clock (which only the control API's ``advance`` moves).
    Sleeping waits host seconds, like :class:`~rmqctl.emulator.clock.LiveClock`; with ``url``,
    each sleep ends by reading the clock again, so a watcher that runs for long (the exporter)
    follows a virtual clock that the control API advanced meanwhile."""

    def __init__(self, now_ms: int, speed: float | None, *, url: str | None = None,
                 token: str | None = None) -> None:
        self._start = now_ms / 1000
        self._speed = speed or 0.0
        self._host_start = time.monotonic()
        self._url = url
        self._token = token

    def now(self) -> float:
        return self._start + (time.monotonic() - self._host_start) * self._speed

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)
        if self._url is None:
            return
        from rmqctl.emulator.control_client import HttpControl

        control = HttpControl(self._url, token=self._token, timeout=2.0)
        try:
            now_ms = (await control.health()).get("now_ms")
        except errors.RmqctlError:
            return  # run on from the last reading
        finally:
            await control.close()
        if isinstance(now_ms, int) and not isinstance(now_ms, bool):
            self._start, self._host_start = now_ms / 1000, time.monotonic()


async def served_clock(namesrv: str, token: str | None = None) -> ServedClock | None:
    """The clock of the served emulator whose name server is ``namesrv`` (found in the registry
    or through ``$RMQCTL_EMULATOR_URL``, confirmed by its own health answer), or ``None`` when no
    served emulator answers for it."""
    from rmqctl.emulator.control_client import served_control_for

    control = await served_control_for(namesrv, token=token)
    if control is None:
        return None
    try:
        health = await control.health()
    except errors.RmqctlError:
        return None
    finally:
        await control.close()
    now_ms, speed = health.get("now_ms"), health.get("speed")
    if isinstance(now_ms, bool) or not isinstance(now_ms, int):
        return None
    real = health.get("clock") == "real"
    return ServedClock(now_ms, float(speed) if real and isinstance(speed, (int, float)) else (1.0 if real else None),
                       url=control.url, token=token)
