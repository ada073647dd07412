"""The one source of "now": the host's wall clock, or an emulator's.

Every source carries a :class:`Clock` (:attr:`rmqctl.source.ClusterSource.clock`): the cluster
service stamps each group view with it (the "now" the doctor compares client timestamps with)
and the watch service waits on it, so the embedded emulator's virtual clock, a served emulator's
sped-up one and a test's fake clock drive the same checks and loops as real time. The
implementations besides :class:`SystemClock` live with the emulator (``VirtualClock``,
``LiveClock``, ``ServedClock``) and the tests.

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
