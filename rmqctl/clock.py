"""Where front ends read the time and wait: the host's wall clock, or an emulator's.

A :class:`Clock` is injected wherever something polls (the watch service, the exporter), so the
embedded emulator's virtual clock — and a test's fake clock — drive the same loops as real time.

Imports only the standard library.
"""

from __future__ import annotations

import asyncio
import time
from typing import Protocol


class Clock(Protocol):
    """Where a watcher reads the time and waits between rounds."""

    def now(self) -> float:
        """Seconds since the epoch (the cluster's wall clock)."""
        ...

    async def sleep(self, seconds: float) -> None: ...


class SystemClock:
    """The host's wall clock and ``asyncio.sleep``."""

    def now(self) -> float:
        return time.time()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)
