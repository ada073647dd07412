"""Time for the emulator: a discrete-event scheduler over emulated wall-clock milliseconds.

Everything that happens inside the emulated cluster (a client's 30 s heartbeat, its 20 s
rebalance, a long-polling pull that times out after 15 s, a scenario's produce step) is an event
on one :class:`Scheduler`. The scheduler's ``now_ms`` is the wall clock every simulated process
reads (``System.currentTimeMillis()`` in the Java code being mirrored), so timestamps, subVersions
and client ids all come from it.

Two drivers move that clock:

- **virtual** (tests, ``emulator run``, embedded ``--emulator``): nothing moves until someone calls
  :meth:`Scheduler.run_until`; the same scenario always gives the same events in the same order,
  starting at the fixed :data:`VIRTUAL_EPOCH_MS`;
- **real time** (``emulator serve``): :class:`RealTimeDriver` maps the host's monotonic clock onto
  emulated time, optionally sped up, and runs due events from an asyncio task.

Events at the same millisecond run in the order they were scheduled. Imports only the standard
library.
"""

from __future__ import annotations

import asyncio
import gc
import heapq
import itertools
import logging
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

#: 2024-01-01T00:00:00Z: scenario time 0 on the virtual clock.
VIRTUAL_EPOCH_MS = 1_704_067_200_000


class Timer:
    """A scheduled call; :meth:`cancel` keeps it from running."""

    __slots__ = ("args", "cancelled", "fn", "when")

    def __init__(self, when: int, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self.when = when
        self.fn = fn
        self.args = args
        self.cancelled = False

    def cancel(self) -> None:
        # drop what the call would have used: a cancelled timer may wait in the heap until its
        # time comes, and must not keep a closed client's requests alive until then
        self.cancelled = True
        self.fn = _nothing
        self.args = ()


def _nothing(*args: Any) -> None:
    pass


#: every this many advances of the virtual clock, :class:`FrozenWorld` thaws the frozen world
#: and collects it in full
FULL_COLLECTION_EVERY = 100


class FrozenWorld:
    """How a process that only serves an emulator treats the cyclic collector while the virtual
    clock advances (``emulator serve``).

    An advance runs its events with the collector off (:meth:`Scheduler.run_until`), so what the
    events leave alive lands in the youngest generation at once; the next collection, set off by
    the requests that follow, scanned all of it, and the older generations' passes scanned it
    again later: at 2,000 groups each such pass held every answer for 0.12-0.25 s. So an advance
    runs with the collector off to its end, and what it leaves alive is then frozen out of the
    collector's passes (:func:`gc.freeze` moves it without a scan), as the process froze the
    world it built before serving. Every :data:`FULL_COLLECTION_EVERY` advances the frozen
    objects are thawed and collected in full, which bounds any cyclic garbage frozen with them."""

    def __init__(self, full_every: int = FULL_COLLECTION_EVERY) -> None:
        self.full_every = max(1, full_every)
        self.advances = 0

    def advance(self, step: Callable[[], None]) -> None:
        """Run ``step`` (one advance of the clock) as the class says."""
        enabled = gc.isenabled()
        gc.disable()
        try:
            step()
        finally:
            self.advances += 1
            if self.advances % self.full_every == 0:
                gc.unfreeze()
                gc.collect()
            gc.freeze()
            if enabled:
                gc.enable()


class Scheduler:
    """Events ordered by (time, insertion order); ``now_ms`` only moves forward."""

    def __init__(self, start_ms: int = VIRTUAL_EPOCH_MS) -> None:
        self.now_ms = start_ms
        self._heap: list[tuple[int, int, Timer]] = []
        self._seq = itertools.count()
        #: called instead of raising when an event fails (the real-time driver logs and goes on)
        self.on_error: Callable[[BaseException], None] | None = None
        #: the real-time driver moving this scheduler, if one does (``emulator serve``, live mode)
        self.driver: RealTimeDriver | None = None
        self.events_run = 0

    def call_at(self, when_ms: int, fn: Callable[..., Any], *args: Any) -> Timer:
        when = int(when_ms)
        when = max(when, self.now_ms)
        timer = Timer(when, fn, args)
        heapq.heappush(self._heap, (when, next(self._seq), timer))
        return timer

    def call_later(self, delay_ms: int, fn: Callable[..., Any], *args: Any) -> Timer:
        when = self.now_ms + delay_ms if delay_ms > 0 else self.now_ms
        timer = Timer(when, fn, args)
        heapq.heappush(self._heap, (when, next(self._seq), timer))
        return timer

    def next_time(self) -> int | None:
        """When the next live event is due, or None when nothing is scheduled."""
        heap = self._heap
        while heap and heap[0][2].cancelled:
            heapq.heappop(heap)
        return heap[0][0] if heap else None

    def run_until(self, until_ms: int) -> int:
        """Run every event due at or before ``until_ms``; leave ``now_ms`` there. Returns the count."""
        heap = self._heap
        count = 0
        # A batch of events allocates many short-lived objects and no garbage cycles that matter;
        # the cyclic collector would rescan the whole (large) world over and over, so it is
        # paused for the batch and runs normally afterwards.
        gc_was_enabled = gc.isenabled()
        if gc_was_enabled:
            gc.disable()
        try:
            while heap and heap[0][0] <= until_ms:
                when, _, timer = heapq.heappop(heap)
                if timer.cancelled:
                    continue
                self.now_ms = when
                count += 1
                try:
                    timer.fn(*timer.args)
                except Exception as exc:
                    if self.on_error is None:
                        raise
                    self.on_error(exc)
        finally:
            if gc_was_enabled:
                gc.enable()
        self.now_ms = max(self.now_ms, until_ms)
        self.events_run += count
        return count

    def pending(self) -> int:
        return sum(1 for _, _, t in self._heap if not t.cancelled)

    def compact(self) -> None:
        """Drop cancelled timers from the heap (they are otherwise dropped when their time comes)."""
        heap = self._heap
        live = [entry for entry in heap if not entry[2].cancelled]
        if len(live) < len(heap):
            heapq.heapify(live)
            # in place: a run in progress (``run_until``) holds this very list, and must neither
            # run an event twice nor miss one scheduled after the compaction
            heap[:] = live

    def scheduled(self) -> int:
        """Timers in the heap, cancelled ones included (what it holds in memory)."""
        return len(self._heap)


class RealTimeDriver:
    """Runs a scheduler against the host clock: emulated ms = start + elapsed × speed.

    :meth:`sync` brings the emulated world up to "now" (call it before reading state, e.g. at
    the top of every request handler); :meth:`run` is the background task that fires events as
    they fall due. :meth:`poke` wakes that task after something was scheduled from outside.
    """

    def __init__(self, scheduler: Scheduler, *, speed: float = 1.0) -> None:
        if speed <= 0:
            raise ValueError("speed must be positive")
        self.scheduler = scheduler
        self.speed = speed
        self._real0 = time.monotonic()
        self._virtual0 = scheduler.now_ms
        self._wake = asyncio.Event()
        scheduler.on_error = self._log_error
        scheduler.driver = self

    @staticmethod
    def _log_error(exc: BaseException) -> None:
        log.error("emulator event failed", exc_info=exc)

    def virtual_now(self) -> int:
        return self._virtual0 + int((time.monotonic() - self._real0) * 1000 * self.speed)

    def sync(self) -> None:
        self.scheduler.run_until(self.virtual_now())

    def poke(self) -> None:
        self._wake.set()

    async def run(self) -> None:
        while True:
            self.sync()
            due = self.scheduler.next_time()
            delay = 0.5
            if due is not None:
                delay = min(delay, max(0.0, (due - self.virtual_now()) / 1000 / self.speed))
            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), timeout=max(delay, 0.001))
            except TimeoutError:
                pass


class LiveClock:
    """A real-time emulator's clock as an :class:`rmqctl.clock.Clock`: reading it gives the
    emulated wall time (which runs ``speed`` times faster than the host's); sleeping on it waits
    host seconds, as a refresh period or ``--interval`` means (the emulated cluster moves
    ``seconds * speed`` meanwhile)."""

    def __init__(self, driver: RealTimeDriver) -> None:
        self.driver = driver

    def now(self) -> float:
        return self.driver.virtual_now() / 1000

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)
