"""Driving an emulator from a front end: one :class:`EmulatorControl` protocol, two back ends.

The TUI's emulator controls (start, stop or kill a consumer, produce messages) talk to either
the emulator running in this process (:class:`EmbeddedControl`, over ``opened.cluster``) or a
served one (:class:`HttpControl`, over the HTTP control API of ``rmqctl emulator serve``, see
:mod:`rmqctl.emulator.control`). Both answer with the same plain documents the control API
returns, and both raise only :mod:`rmqctl.errors`: httpx errors are translated here, once.

Nothing here touches a real cluster. Must not import the CLI, textual or pyspark.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import httpx

from rmqctl import errors
from rmqctl.emulator import report as emulator_report
from rmqctl.emulator.clock import RealTimeDriver
from rmqctl.emulator.registry import find_for_namesrv
from rmqctl.emulator.scenario import ConsumerSpec
from rmqctl.emulator.world import EmulatedCluster
from rmqctl.rebalance.strategies import get_strategy

#: environment variable naming a served emulator's control API (as ``emulator ctl`` reads it)
URL_ENV = "RMQCTL_EMULATOR_URL"


@dataclass(frozen=True, slots=True)
class ConsumerRequest:
    """A consumer to start: group, one subscription and the allocation strategy."""

    group: str
    topic: str
    expression: str = "*"
    strategy: str = "AVG"
    client_id: str | None = None

    def as_body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"group": self.group, "topic": self.topic,
                                "expr": self.expression or "*", "strategy": self.strategy}
        if self.client_id:
            body["client_id"] = self.client_id
        return body


@dataclass(frozen=True, slots=True)
class StartConsumer:
    """Start a simulated consumer."""

    request: ConsumerRequest
    verb = "start"


@dataclass(frozen=True, slots=True)
class StopConsumer:
    """Shut a simulated consumer down (``kill``: die without unregistering)."""

    client_id: str
    kill: bool = False

    @property
    def verb(self) -> str:
        return "kill" if self.kill else "stop"


@dataclass(frozen=True, slots=True)
class Produce:
    """Send ``count`` messages to ``topic`` (with ``tag``, or none)."""

    topic: str
    count: int
    tag: str | None = None
    verb = "produce"


#: what a front end may ask of an emulator's controls
ControlAction = StartConsumer | StopConsumer | Produce


@runtime_checkable
class EmulatorControl(Protocol):
    """What a front end may do to an emulated cluster."""

    #: one line for status bars: ``embedded`` or the control URL
    label: str

    async def clients(self) -> list[dict[str, Any]]:
        """Every simulated consumer, running or stopped (``GET /v1/clients``)."""
        ...

    async def start_consumer(self, request: ConsumerRequest) -> dict[str, Any]: ...

    async def stop_consumer(self, client_id: str, *, kill: bool = False) -> dict[str, Any]: ...

    async def produce(self, topic: str, count: int, tag: str | None = None) -> dict[str, Any]: ...

    async def close(self) -> None: ...


async def perform(control: EmulatorControl, action: ControlAction) -> dict[str, Any]:
    """Carry ``action`` out on ``control``; its answer (the control API's document)."""
    if isinstance(action, StartConsumer):
        return await control.start_consumer(action.request)
    if isinstance(action, StopConsumer):
        return await control.stop_consumer(action.client_id, kill=action.kill)
    return await control.produce(action.topic, action.count, action.tag)


def describe_result(action: ControlAction, result: dict[str, Any]) -> str:
    """One line saying what ``action`` did: ``started …``, ``sent 10 message(s)``, ``stop …``."""
    if isinstance(action, StartConsumer):
        return f"started {result.get('client_id', '')}"
    if isinstance(action, Produce):
        return f"sent {result.get('sent', 0)} message(s)"
    return f"{action.verb} {result.get('client_id', '')}"


class EmbeddedControl:
    """Controls of the emulator running in this process."""

    label = "embedded"

    def __init__(self, cluster: EmulatedCluster, driver: RealTimeDriver | None = None) -> None:
        self.cluster = cluster
        #: the real-time driver of a live cluster (its background task also catches up within
        #: half a second on its own; with it, an action lands at the current instant)
        self.driver = driver

    def _sync(self) -> None:
        if self.driver is not None:
            self.driver.sync()

    def _poke(self) -> None:
        if self.driver is not None:
            self.driver.poke()

    async def clients(self) -> list[dict[str, Any]]:
        return emulator_report.clients(self.cluster)

    async def start_consumer(self, request: ConsumerRequest) -> dict[str, Any]:
        if not request.group.strip() or not request.topic.strip():
            raise errors.UsageError("a consumer needs a group and a topic")
        if request.client_id is not None and "@" not in request.client_id:
            raise errors.UsageError(f"{request.client_id!r} does not look like a client id (ip@instance)")
        get_strategy(request.strategy)
        self._sync()
        consumer = self.cluster.start_consumer(ConsumerSpec(
            group=request.group, subscriptions=((request.topic, request.expression or "*"),),
            client_id=request.client_id, strategy=request.strategy))
        self._poke()
        return next(c for c in emulator_report.clients(self.cluster)
                    if c["client_id"] == consumer.client_id and c["running"])

    async def stop_consumer(self, client_id: str, *, kill: bool = False) -> dict[str, Any]:
        self._sync()
        consumer = self.cluster.stop_consumer(client_id, kill=kill)
        self._poke()
        return {"client_id": consumer.client_id, "running": consumer.running}

    async def produce(self, topic: str, count: int, tag: str | None = None) -> dict[str, Any]:
        if not 1 <= count <= 1_000_000:
            raise errors.UsageError("count must be between 1 and 1000000")
        self._sync()
        sent = self.cluster.produce(topic, count, tag or None)
        self._poke()
        return {"sent": len(sent)}

    async def close(self) -> None:
        return None


class HttpControl:
    """Controls of a served emulator, over its HTTP control API."""

    def __init__(self, url: str, *, token: str | None = None, timeout: float = 10.0,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.url = url.rstrip("/")
        self.label = self.url
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.AsyncClient(base_url=self.url, headers=headers, timeout=timeout,
                                       transport=transport)

    async def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """One control-API call; its JSON answer, or the error translated into rmqctl's tree."""
        try:
            response = await self._http.request(method, path, json=body)
        except httpx.ConnectError as exc:
            raise errors.ConnectionError(f"cannot reach the emulator control API at {self.url}",
                                         hint="is 'rmqctl emulator serve' running? pass its --url") from exc
        except httpx.TimeoutException as exc:
            raise errors.TimeoutError(f"the emulator control API at {self.url} did not answer") from exc
        except httpx.HTTPError as exc:
            raise errors.ConnectionError(f"control API request failed: {exc}") from exc
        try:
            doc = response.json()
        except ValueError:
            doc = {"error": response.text.strip()}
        if response.status_code >= 400:
            message = doc.get("error") if isinstance(doc, dict) else str(doc)
            if response.status_code == 401:
                raise errors.UsageError(f"control API: {message}", hint="pass the server's --token")
            if response.status_code == 404:
                raise errors.NotFound(f"control API: {message}")
            if response.status_code < 500:
                raise errors.UsageError(f"control API: {message}")
            raise errors.ServiceError(f"control API failed ({response.status_code}): {message}")
        return doc

    async def health(self) -> dict[str, Any]:
        doc: dict[str, Any] = await self.request("GET", "/v1/health")
        return doc

    async def clients(self) -> list[dict[str, Any]]:
        doc = await self.request("GET", "/v1/clients")
        return list(doc.get("clients", []))

    async def start_consumer(self, request: ConsumerRequest) -> dict[str, Any]:
        doc: dict[str, Any] = await self.request("POST", "/v1/consumers", request.as_body())
        return doc

    async def stop_consumer(self, client_id: str, *, kill: bool = False) -> dict[str, Any]:
        doc: dict[str, Any] = await self.request("POST", "/v1/consumers/stop",
                                               {"client_id": client_id, "kill": kill})
        return doc

    async def produce(self, topic: str, count: int, tag: str | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"topic": topic, "count": count}
        if tag:
            body["tag"] = tag
        doc: dict[str, Any] = await self.request("POST", "/v1/produce", body)
        return doc

    async def close(self) -> None:
        await self._http.aclose()


async def served_control_for(namesrv: str | None, url: str | None = None,
                             token: str | None = None) -> HttpControl | None:
    """An :class:`HttpControl` for ``url``; without one, for the served emulator named by
    ``$RMQCTL_EMULATOR_URL`` or found in the registry of served emulators
    (:mod:`rmqctl.emulator.registry`), but only when it serves the name server ``namesrv``, as
    its own health answer confirms (so a real cluster never gets controls)."""
    if url:
        return HttpControl(url, token=token)
    if not namesrv:
        return None
    explicit = os.environ.get(URL_ENV)
    if explicit:
        candidate = explicit
    else:
        entry = find_for_namesrv(namesrv)
        if entry is None:
            return None
        candidate = entry.url
    control = HttpControl(candidate, token=token, timeout=2.0)
    try:
        health = await control.health()
    except errors.RmqctlError:
        await control.close()
        return None
    served = str(health.get("namesrv", ""))
    if served and served in {part.strip() for part in namesrv.split(";")}:
        return control
    await control.close()
    return None
