"""The clock of a served emulator, for a reader in another process (:func:`served_clock`).

Every command pointed at a name server asks whether a served emulator on this machine answers
for it (the registry of served emulators, plain files), and if so reads its clock from the
control API's health answer (``now_ms`` and ``speed``), so the doctor's "now" is the emulator's
and not the host's. That one read is a plain HTTP/1.1 GET written with the standard library
(the control API answers every request with ``Connection: close``), so a command pays neither
for an HTTP client library nor for the emulator itself; a watcher that reads the clock again
after each sleep reads it the same way.

Must not import the CLI, textual, pyspark, httpx, or the emulator's broker and servers.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from typing import Any
from urllib.parse import urlsplit

from rmqctl.emulator.registry import find_for_namesrv

#: environment variable naming a served emulator's control API (as ``emulator ctl`` reads it)
URL_ENV = "RMQCTL_EMULATOR_URL"
#: seconds the health answer may take
HEALTH_TIMEOUT = 2.0
#: the most of a health answer read
_MAX_ANSWER = 64 * 1024


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
        health = await read_health(self._url, self._token)
        now_ms = health.get("now_ms") if health is not None else None  # none: run on as before
        if isinstance(now_ms, int) and not isinstance(now_ms, bool):
            self._start, self._host_start = now_ms / 1000, time.monotonic()


async def read_health(url: str, token: str | None = None, timeout: float = HEALTH_TIMEOUT) -> dict[str, Any] | None:
    """``GET /v1/health`` of the control API at ``url``: its JSON document, or ``None`` when it
    cannot be reached, does not answer 200 in time, or answers something that is not JSON."""
    parts = urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        return None
    try:
        port = parts.port or 80
    except ValueError:
        return None
    host = parts.hostname
    authority = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    request = f"GET /v1/health HTTP/1.1\r\nHost: {authority}\r\nAccept: application/json\r\nConnection: close\r\n"
    if token:
        request += f"Authorization: Bearer {token}\r\n"
    writer: asyncio.StreamWriter | None = None
    try:
        async with asyncio.timeout(timeout):
            reader, writer = await asyncio.open_connection(host, port)
            writer.write((request + "\r\n").encode("latin-1"))
            answer = await reader.read(_MAX_ANSWER)
            while True:
                more = await reader.read(_MAX_ANSWER)
                if not more or len(answer) > _MAX_ANSWER:
                    break
                answer += more
    except (OSError, TimeoutError, UnicodeError):
        return None
    finally:
        if writer is not None:
            writer.close()
    head, _, body = answer.partition(b"\r\n\r\n")
    status = head.split(b"\r\n", 1)[0].split()
    if len(status) < 2 or status[1] != b"200":
        return None
    try:
        doc = json.loads(body)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


async def served_clock(namesrv: str, token: str | None = None) -> ServedClock | None:
    """The clock of the served emulator whose name server is ``namesrv`` (found in the registry
    or through ``$RMQCTL_EMULATOR_URL``, confirmed by its own health answer), or ``None`` when no
    served emulator answers for it."""
    url = os.environ.get(URL_ENV)
    if not url:
        entry = find_for_namesrv(namesrv)
        if entry is None:
            return None
        url = entry.url
    health = await read_health(url.rstrip("/"), token)
    if health is None:
        return None
    served = str(health.get("namesrv", ""))
    if not served or served not in {part.strip() for part in namesrv.split(";")}:
        return None
    now_ms, speed = health.get("now_ms"), health.get("speed")
    if isinstance(now_ms, bool) or not isinstance(now_ms, int):
        return None
    real = health.get("clock") == "real"
    return ServedClock(now_ms, float(speed) if real and isinstance(speed, (int, float)) else (1.0 if real else None),
                       url=url.rstrip("/"), token=token)
