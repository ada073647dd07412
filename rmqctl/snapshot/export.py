"""Record consumer-offset snapshots of a cluster into Parquet files, round after round.

:func:`export` polls the groups with a :class:`~rmqctl.watch.Watcher` on the source's own clock
(so on the embedded emulator an hour of 30 s snapshots takes seconds), turns every round into
rows (:mod:`rmqctl.snapshot.rows`) and hands them to a :class:`RollingWriter`. Rounds start on a
fixed cadence (``start + k × every``); a round that overruns its slot skips the missed ticks
rather than bunching polls. A broker or group that fails a round is recorded as missing and
said through ``warn``. A group whose progress no row can hold (a 5.5 lite group: its offsets
live in light message queues rmqctl does not read) is named with why in
:attr:`ExportResult.unread_groups` and warned about once, never silently left out. SIGINT and
SIGTERM (when ``handle_signals``) stop the loop after cancelling the round in progress, flush
every complete buffered round and return with :attr:`ExportResult.interrupted` set; nothing
renamed into place is ever touched again.

Must not import the CLI, textual or pyspark.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as _dt
import math
import signal
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rmqctl import errors
from rmqctl.model import MessageQueue, TopicOffset
from rmqctl.snapshot.rows import QueueSnapshot, failed_group_rows, group_rows
from rmqctl.snapshot.writer import ROLL_ROWS, ROLL_SECONDS, RollingWriter
from rmqctl.source import ClusterSource, Opened
from rmqctl.watch import DEFAULT_CONCURRENCY, Round, Watcher


@dataclass(frozen=True, slots=True)
class ExportProgress:
    """Where an export stands after a round (for progress bars)."""

    round: int
    #: rounds planned (``count``, or what ``duration`` allows); None when running until stopped
    planned: int | None
    ts_ms: int
    rows: int
    files: int
    missing: int


@dataclass(frozen=True, slots=True)
class ExportResult:
    rounds: int
    rows: int
    files: tuple[Path, ...]
    #: rows recorded as missing (a broker or group that failed its round)
    missing: int
    first_ts_ms: int | None
    last_ts_ms: int | None
    #: the signal that stopped the export early (None: it ran to its count or duration)
    interrupted: signal.Signals | None = None
    #: reads that failed, one per (round, broker or group); their rows are in ``missing``
    failed_reads: int = 0
    #: rows of killed exports' journals found in ``out_dir`` and written as files at the start
    recovered_rows: int = 0
    #: group → why its progress is not recorded (a 5.5 lite group); rows its consume stats
    #: did list are still written
    unread_groups: Mapping[str, str] = field(default_factory=dict)


def _stderr_warning(message: str) -> None:
    sys.stderr.write(f"rmqctl: warning: {message}\n")
    sys.stderr.flush()


def _iso(ts_ms: int) -> str:
    return _dt.datetime.fromtimestamp(ts_ms / 1000, _dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class _Stopper:
    """Turns SIGINT/SIGTERM into a cancellation of the exporting task (remembering which)."""

    def __init__(self) -> None:
        self.signal: signal.Signals | None = None
        self._task: asyncio.Task[object] | None = None

    def _on_signal(self, sig: signal.Signals) -> None:
        if self.signal is None:
            self.signal = sig
            if self._task is not None:
                self._task.cancel()

    @contextlib.contextmanager
    def installed(self, enabled: bool) -> Iterator[None]:
        if not enabled:
            yield
            return
        loop = asyncio.get_running_loop()
        self._task = asyncio.current_task()
        added = []
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, self._on_signal, sig)
                added.append(sig)
            except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, Windows
                pass
        try:
            yield
        finally:
            for sig in added:
                loop.remove_signal_handler(sig)


async def _newest_offsets(source: ClusterSource, topics: Sequence[str],
                          concurrency: int) -> dict[MessageQueue, TopicOffset]:
    """The topic offsets of ``topics`` (each broker's newest store time); unreadable ones are
    simply absent, which leaves ``broker_last_ts`` null."""
    limit = asyncio.Semaphore(max(1, concurrency))

    async def one(topic: str) -> tuple[TopicOffset, ...]:
        async with limit:
            try:
                return (await source.topic_status(topic)).value.offsets
            except errors.RmqctlError:
                return ()

    found = await asyncio.gather(*(one(t) for t in topics))
    return {o.queue: o for offsets in found for o in offsets}


class _Recorder:
    """Turns rounds into rows, remembering each group's last rows for placeholders."""

    def __init__(self, source: ClusterSource, *, broker_times: bool, concurrency: int,
                 warn: Callable[[str], None]) -> None:
        self.source = source
        self.broker_times = broker_times
        self.concurrency = concurrency
        self.warn = warn
        self.cluster_of: dict[str, str] = {}
        self.last_rows: dict[str, list[QueueSnapshot]] = {}
        self.failed_reads = 0
        #: groups whose progress no row holds, and why (warned about once each)
        self.unread: dict[str, str] = {}

    async def refresh_clusters(self) -> None:
        try:
            info = await self.source.cluster()
        except errors.RmqctlError as exc:
            if not self.cluster_of:
                self.warn(f"cannot read the cluster names ({exc}); the cluster column stays empty")
            return
        self.cluster_of = {name: data.cluster for name, data in info.brokers.items()}

    async def rows(self, rnd: Round) -> list[QueueSnapshot]:
        sample = rnd.current
        ts_ms = int(round(sample.taken_at * 1000))
        await self.refresh_clusters()
        newest: dict[MessageQueue, TopicOffset] = {}
        if self.broker_times:
            topics = sorted({mq.topic for view in sample.views.values() for mq in view.known_queues()})
            newest = await _newest_offsets(self.source, topics, self.concurrency)
        out: list[QueueSnapshot] = []
        for group in sorted({*sample.views, *sample.errors}):
            view = sample.views.get(group)
            previous = self.last_rows.get(group, [])
            if view is None:
                error = sample.errors[group]
                self.failed_reads += 1
                rows = failed_group_rows(ts_ms, group, error, previous)
                self.warn(f"round {rnd.number} at {_iso(ts_ms)}: group {group} could not be read "
                          f"({error}); {len(rows)} queue(s) recorded as missing")
            else:
                lite = view.unavailable.get("lite_topics")
                if lite is not None and group not in self.unread:
                    self.unread[group] = lite
                    self.warn(f"group {group}: progress not recorded ({lite})")
                rows = group_rows(ts_ms, view, cluster_of=self.cluster_of, newest=newest,
                                  previous=[r.queue for r in previous])
                for broker, error in view.failed_brokers.items():
                    self.failed_reads += 1
                    lost = sum(1 for r in rows if r.missing and r.broker == broker)
                    self.warn(f"round {rnd.number} at {_iso(ts_ms)}: broker {broker} failed for group "
                              f"{group} ({error}); {lost} queue(s) recorded as missing")
            if rows:
                self.last_rows[group] = rows
            out.extend(rows)
        return out


class SnapshotSink:
    """Rounds taken elsewhere (the metrics exporter's) written as snapshot rows, like ``export``
    writes its own: the same rows, placeholders, warnings and rolling files."""

    def __init__(self, source: ClusterSource, out_dir: str | Path, *, broker_times: bool = True,
                 concurrency: int = DEFAULT_CONCURRENCY, roll_seconds: float = ROLL_SECONDS,
                 roll_rows: int = ROLL_ROWS, warn: Callable[[str], None] | None = None) -> None:
        self.writer = RollingWriter(out_dir, roll_seconds=roll_seconds, roll_rows=roll_rows)
        self.recorder = _Recorder(source, broker_times=broker_times, concurrency=concurrency,
                                  warn=warn or _stderr_warning)
        if self.writer.recovered_rows:
            self.recorder.warn(f"recovered {self.writer.recovered_rows} rows of an export that was killed "
                               f"before it could write them")

    async def add(self, rnd: Round) -> int:
        """Record one round; the number of rows it gave."""
        rows = await self.recorder.rows(rnd)
        self.writer.add_round(int(round(rnd.current.taken_at * 1000)), rows)
        return len(rows)

    def close(self) -> None:
        """Write every buffered round (idempotent)."""
        self.writer.close()

    @property
    def files(self) -> list[Path]:
        return list(self.writer.files)


def planned_rounds(every: float, count: int | None, duration: float | None) -> int | None:
    """Rounds an export takes: ``count``, or one per ``every`` that starts within ``duration``."""
    if count is not None:
        return count
    if duration is not None:
        return max(1, math.ceil(duration / every - 1e-9))
    return None


async def export(
    opened: Opened,
    groups: Sequence[str] | None,
    out_dir: str | Path,
    *,
    every: float = 30.0,
    count: int | None = None,
    duration: float | None = None,
    roll_seconds: float = ROLL_SECONDS,
    roll_rows: int = ROLL_ROWS,
    broker_times: bool = True,
    concurrency: int = DEFAULT_CONCURRENCY,
    handle_signals: bool = True,
    on_round: Callable[[ExportProgress], None] | None = None,
    warn: Callable[[str], None] | None = None,
) -> ExportResult:
    """Snapshot ``groups`` (every group when None) into ``out_dir`` every ``every`` seconds.

    Stops after ``count`` rounds, after the rounds that start within ``duration`` seconds, or
    (neither given) when interrupted. Rows go to Parquet files under ``out_dir`` (see
    :mod:`rmqctl.snapshot.schema`), rolled every ``roll_seconds`` of snapshot time or
    ``roll_rows`` rows.
    """
    if not every > 0 or not math.isfinite(every):
        raise errors.UsageError(f"the snapshot interval must be a positive number of seconds, not {every}")
    if count is not None and duration is not None:
        raise errors.UsageError("give either a count of snapshots or a duration, not both")
    if count is not None and count < 1:
        raise errors.UsageError(f"the snapshot count must be at least 1, not {count}")
    if duration is not None and (not duration > 0 or not math.isfinite(duration)):
        raise errors.UsageError(f"the export duration must be positive, not {duration}")
    planned = planned_rounds(every, count, duration)
    clock = opened.clock
    writer = RollingWriter(out_dir, roll_seconds=roll_seconds, roll_rows=roll_rows)
    if writer.recovered_rows:
        (warn or _stderr_warning)(f"recovered {writer.recovered_rows} rows of an export that was killed "
                                  f"before it could write them")
    watcher = Watcher(opened.source, groups, interval=every, clock=clock, concurrency=concurrency, retry_copies=True)
    recorder = _Recorder(opened.source, broker_times=broker_times, concurrency=concurrency,
                         warn=warn or _stderr_warning)
    stopper = _Stopper()
    rounds = missing = 0
    first_ts: int | None = None
    last_ts: int | None = None
    with stopper.installed(handle_signals):
        try:
            start = clock.now()
            tick = 0
            while planned is None or rounds < planned:
                if rounds:
                    # The next slot on the fixed cadence that is still ahead (slow rounds skip).
                    tick = max(tick + 1, math.floor((clock.now() - start) / every) + 1)
                    await clock.sleep(max(0.0, start + tick * every - clock.now()))
                rnd = await watcher.poll()
                if rounds == 0 and groups is not None:
                    # A group named on the command line that does not exist is a usage error, not
                    # an empty recording; later (a group deleted meanwhile) it is recorded as missing.
                    for error in rnd.current.errors.values():
                        if isinstance(error, errors.NotFound):
                            raise error
                rows = await recorder.rows(rnd)
                ts_ms = int(round(rnd.current.taken_at * 1000))
                writer.add_round(ts_ms, rows)
                rounds += 1
                missing += sum(1 for r in rows if r.missing)
                first_ts = ts_ms if first_ts is None else first_ts
                last_ts = ts_ms
                if on_round is not None:
                    on_round(ExportProgress(rounds, planned, ts_ms, writer.rows_written + writer.buffered,
                                            len(writer.files), missing))
        except asyncio.CancelledError:
            if stopper.signal is None:
                writer.close()
                raise
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
        finally:
            writer.close()
    return ExportResult(rounds, writer.rows_written, tuple(writer.files), missing, first_ts, last_ts,
                        stopper.signal, recorder.failed_reads, writer.recovered_rows, dict(recorder.unread))
