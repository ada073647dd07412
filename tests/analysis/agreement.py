"""Record an emulated incident once and judge it twice: by the doctor and by the ``analyze stuck`` job.

:func:`record` runs a scenario on the embedded emulator's virtual clock, polls every group every 30 s
with the watch service, writes each round as snapshot rows (the exporter's own :class:`SnapshotSink`)
and, at chosen rounds, runs the doctor's checks on that round and the one before it — the two samples
``rmqctl doctor --interval 30`` would take at that moment. :func:`job_verdicts` runs the job's
transforms (what ``rmqctl analyze stuck`` runs) over the same files, its window ending at that round.
Both answers are reduced to the verdict per queue: ``STALLED`` or ``ORPHANED`` when a queue is stuck,
``None`` when it is not.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from analysis.files import check_files, list_snapshot_files, read_snapshots
from rmqctl.connect import Target, open_source
from rmqctl.doctor import run_checks
from rmqctl.snapshot.export import SnapshotSink
from rmqctl.source import Opened
from rmqctl.stuck import STUCK_STATUSES
from rmqctl.watch import Round, Watcher
from tests.analysis.engines import diagnose

Key = tuple[str, str, str, int]
"""(group, topic, broker, queue id)"""

EVERY = 30.0
"""Seconds between rounds: the exporter's default and the doctor's usual ``--interval``."""


@dataclass
class Recording:
    """Where the snapshots are, and the doctor's stuck verdicts at each round asked for."""

    out: Path
    #: round number -> its time (epoch ms), for every round taken
    round_ms: dict[int, int] = field(default_factory=dict)
    #: round number -> the doctor's verdict for each queue it calls stuck at that round
    doctor: dict[int, dict[Key, str]] = field(default_factory=dict)
    #: round number -> every queue the two samples of that round hold (the queues both judge)
    queues: dict[int, set[Key]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def doctor_stuck(rnd: Round) -> dict[Key, str]:
    """The queues the doctor calls stuck from this round and the one before (LAG_NOT_ADVANCING)."""
    found: dict[Key, str] = {}
    for group, view in rnd.current.views.items():
        before = rnd.previous.views.get(group) if rnd.previous is not None else None
        for finding in run_checks(view, before):
            if finding.code == "LAG_NOT_ADVANCING":
                for q in finding.evidence["queues"]:
                    found[(group, q["topic"], q["broker"], q["queue_id"])] = q["verdict"]
    return found


async def record(scenario: str | Path, out: Path, rounds: int, judge_at: Iterable[int] = (),
                 after: Mapping[int, Callable[[Opened], Awaitable[None]]] | None = None,
                 on_round: Callable[[Round], object] | None = None) -> Recording:
    """Record ``rounds`` rounds of ``scenario`` (after its warm-up) into ``out``; the doctor judges at the
    rounds in ``judge_at`` (1-based; negative counts from the end) and always at the last. ``after`` maps a
    round number to what an operator does once that round is taken (a reset, say), on the same cluster. Each
    round is read with each POP group's newest retry copies (as the exporter and snapshot export read them)
    and handed to ``on_round`` when given."""
    wanted = {r if r > 0 else rounds + 1 + r for r in judge_at} | {rounds}
    rec = Recording(out)
    async with open_source(Target(emulator=scenario)) as opened:
        sink = SnapshotSink(opened.source, out, warn=rec.warnings.append)
        watcher = Watcher(opened.source, None, interval=EVERY, clock=opened.clock, retry_copies=True)
        try:
            async for rnd in watcher.rounds(rounds):
                await sink.add(rnd)
                if on_round is not None:
                    on_round(rnd)
                rec.round_ms[rnd.number] = int(round(rnd.current.taken_at * 1000))
                if rnd.number in wanted:
                    rec.doctor[rnd.number] = doctor_stuck(rnd)
                    # a BROADCASTING group's offsets live on its clients: neither judges it
                    rec.queues[rnd.number] = {
                        (group, p.queue.topic, p.queue.broker_name, p.queue.queue_id)
                        for group, view in rnd.current.views.items() for p in view.progress
                        if (view.message_model or "").upper() != "BROADCASTING"}
                if after and rnd.number in after:
                    await after[rnd.number](opened)
        finally:
            sink.close()
    return rec


def job_verdicts(spark: Any, out: Path, until_ms: int, window_minutes: int = 10) -> dict[Key, dict[str, Any]]:
    """Every queue's verdict from the job over the window ending at ``until_ms``, as ``analyze stuck``
    reads the files."""
    df = read_snapshots(spark, check_files(spark, list_snapshot_files(out, None, None), pytest.fail))
    rows = diagnose(df, until_ms - window_minutes * 60_000, until_ms).collect()
    return {(r["group"], r["topic"], r["broker"], r["queue_id"]): r.asDict() for r in rows}


def job_stuck(verdicts: dict[Key, dict[str, Any]]) -> dict[Key, str]:
    """The queues the job calls stuck, with their verdict."""
    return {k: v["status"] for k, v in verdicts.items() if v["status"] in STUCK_STATUSES}


def last_ms(rec: Recording) -> int:
    return rec.round_ms[max(rec.round_ms)]


def iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%H:%M:%S")
