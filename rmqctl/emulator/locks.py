"""One emulated broker's queue locks for orderly consumers (``RebalanceLockManager``); no I/O.

An orderly push consumer (``MessageListenerOrderly``, clustering) locks every queue it was
allocated on the queue's broker (LOCK_BATCH_MQ) before it pulls, renews the locks every 20 s and
unlocks queues it gives up (UNLOCK_BATCH_MQ). The broker's rules, mirrored here:

- a lock belongs to one client id per (group, queue) and lives ``lockMaxLiveTime`` (60 s) after
  it was taken or last renewed; the holder renews it by locking again;
- another client gets a queue only when it is free or its lock has expired; otherwise that queue
  is left out of the answer (the request still succeeds);
- unlocking removes only the caller's own locks.

Must not import the CLI, textual or pyspark, nor anything that does I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from rmqctl.emulator.clock import Scheduler
from rmqctl.model import MessageQueue

#: ``rocketmq.broker.rebalance.lockMaxLiveTime``: a lock not renewed for this long is free
LOCK_MAX_LIVE_MS = 60_000


@dataclass(slots=True)
class LockEntry:
    """Who holds one queue's lock, and when it was taken or last renewed."""

    client_id: str
    last_update_ms: int


class RebalanceLockManager:
    """The lock table of one broker: group -> queue -> :class:`LockEntry`."""

    def __init__(self, scheduler: Scheduler, max_live_ms: int = LOCK_MAX_LIVE_MS) -> None:
        self.scheduler = scheduler
        self.max_live_ms = max_live_ms
        self.table: dict[str, dict[MessageQueue, LockEntry]] = {}

    def _expired(self, entry: LockEntry) -> bool:
        return self.scheduler.now_ms - entry.last_update_ms > self.max_live_ms

    def try_lock_batch(self, group: str, queues: Iterable[MessageQueue], client_id: str) -> set[MessageQueue]:
        """``tryLockBatch``: the queues now locked by ``client_id`` (its own renewed, free or
        expired ones taken); queues another live client holds are left out."""
        now = self.scheduler.now_ms
        locks = self.table.setdefault(group, {})
        locked: set[MessageQueue] = set()
        for mq in queues:
            entry = locks.get(mq)
            if entry is None:
                locks[mq] = LockEntry(client_id, now)
            elif entry.client_id == client_id or self._expired(entry):
                # the holder renews; an expired lock passes to whoever asks
                entry.client_id = client_id
                entry.last_update_ms = now
            else:
                continue
            locked.add(mq)
        return locked

    def unlock_batch(self, group: str, queues: Iterable[MessageQueue], client_id: str) -> None:
        """``unlockBatch``: drop the caller's locks among ``queues``; others' stay."""
        locks = self.table.get(group)
        if locks is None:
            return
        for mq in queues:
            entry = locks.get(mq)
            if entry is not None and entry.client_id == client_id:
                del locks[mq]

    def holder(self, group: str, mq: MessageQueue) -> str | None:
        """The client id holding a live lock on ``mq`` for ``group``, or None."""
        entry = self.table.get(group, {}).get(mq)
        if entry is None or self._expired(entry):
            return None
        return entry.client_id
