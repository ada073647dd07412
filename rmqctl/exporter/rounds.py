"""One exporter round: every group's view, findings, rates, lag in time and stuck verdicts.

:class:`RoundMaker` polls the groups through the watch service (bounded concurrency), then for
each group read: reads back the store time of the oldest unconsumed message of every queue with
a backlog (lag in seconds), samples the tags of conflicting topics and the newest copies in POP
retry topics like ``doctor`` does (the latter with the watch round), runs the
doctor's checks against the previous round's view and every earlier round's expression history,
derives consume and produce rates from the offsets of two rounds, and hands every view to the
stuck judge. The result is one immutable :class:`RoundResult`: the exporter's sinks (the metrics
endpoint, the snapshot files, ``--once``) read only complete results, so a scrape never touches
a broker.

A broker that fails degrades only its own series: its groups keep the other brokers' rows, and
its state (up or not, errors so far) is kept per broker. Must not import the CLI, textual or
pyspark.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import field

from rmqctl import errors
from rmqctl.doctor import run_checks
from rmqctl.doctor.checks import tag_conflict_topics
from rmqctl.exporter.stuck import StuckJudge, Verdict
from rmqctl.fanout import bounded
from rmqctl.model import ExpressionHistory, Finding, GroupView, MessageQueue
from rmqctl.records import dataclass
from rmqctl.source import ClusterSource
from rmqctl.watch import DEFAULT_CONCURRENCY, Round, Watcher


@dataclass(frozen=True, slots=True)
class GroupResult:
    """What one round knows of one group (``view`` None when the group could not be read)."""

    group: str
    view: GroupView | None
    error: errors.RmqctlError | None = None
    findings: tuple[Finding, ...] = ()
    verdicts: tuple[Verdict, ...] = ()
    #: queue → seconds since the oldest unconsumed message was stored (0 with no backlog);
    #: queues whose time could not be read are absent
    lag_seconds: Mapping[MessageQueue, float] = field(default_factory=dict)
    #: queue → messages per second consumed / produced since the previous round
    consume_rates: Mapping[MessageQueue, float] = field(default_factory=dict)
    produce_rates: Mapping[MessageQueue, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class BrokerState:
    """One broker as the round saw it: answered every read, or the last error; errors so far."""

    name: str
    up: bool
    errors_total: int
    error: str | None = None


@dataclass(frozen=True, slots=True)
class RoundResult:
    """A complete round, as the sinks read it."""

    number: int
    #: when the round's sample was taken (the source's clock, epoch seconds)
    taken_at: float
    #: host seconds the round took
    duration_seconds: float
    groups: Mapping[str, GroupResult]
    brokers: Mapping[str, BrokerState]
    #: errors of listing the groups (``--all``), by broker
    list_errors: Mapping[str, errors.RmqctlError] = field(default_factory=dict)
    #: the round as the watch service handed it out (for the snapshot sink)
    watch_round: Round | None = None

    @property
    def failed_groups(self) -> list[str]:
        return sorted(g for g, r in self.groups.items() if r.view is None)

    @property
    def partial(self) -> bool:
        """Some group or broker could not be read this round."""
        return bool(self.failed_groups or self.list_errors or any(not b.up for b in self.brokers.values()))

    @property
    def findings(self) -> list[Finding]:
        return [f for r in self.groups.values() for f in r.findings]


def _rates(before: GroupView | None, after: GroupView) -> tuple[dict[MessageQueue, float], dict[MessageQueue, float]]:
    if before is None:
        return {}, {}
    seconds = (after.sampled_at - before.sampled_at) / 1000
    if seconds <= 0:
        return {}, {}
    # the previous view's rows by queue, kept with it since the doctor's checks of the last round
    old = before.progress_by_queue()
    consume, produce = {}, {}
    for p in after.progress:
        prev = old.get(p.queue)
        if prev is None or not p.known or not prev.known:
            continue
        # an offset that went back (a reset, a recreated topic) counts as no progress, not negative
        consume[p.queue] = max(0, p.consumer_offset - prev.consumer_offset) / seconds
        produce[p.queue] = max(0, p.broker_offset - prev.broker_offset) / seconds
    return consume, produce


#: with ``own_heap``, every this many rounds the frozen objects are thawed and collected in full
FULL_COLLECTION_EVERY = 100


class _Heap:
    """How a round treats the cyclic garbage collector.

    A round decodes thousands of answers into objects that all survive it (the views); with the
    collector on, every few hundred of them set off a pass, and the passes over the older
    generations walk the previous round's views and the stuck window again and again: seconds of
    a round at 2,000 groups. So the collector is held off while a round reads, and one pass over
    what the round allocated runs at its end (garbage without cycles is freed as it goes; what
    has cycles, such as a failed read's traceback, waits for that pass).

    With ``own_heap`` (the process is the exporter's: ``rmqctl exporter``, the bench), what the
    round leaves alive is then frozen out of the collector's passes (:func:`gc.freeze`), so the
    encoding and the scrapes between rounds never walk it either; frozen objects are still freed
    when the next round replaces them. What was made between two rounds (the encoding, the
    scrapes: a few hundred objects, some of them in cycles) is collected as the next round
    starts, before it could be frozen with it. The pass at the round's end runs only when the
    round took an error path (an rmqctl error was made: a failed or refused read, a client
    offline, a topic missing), which is where a round's own cycles come from: at 2,000 groups a
    round without one left none, and the pass over its million young objects cost ~0.16 s for
    nothing. Whatever cyclic garbage is frozen anyway waits for the full collection every
    :data:`FULL_COLLECTION_EVERY` rounds, which bounds it.
    """

    def __init__(self, own_heap: bool) -> None:
        self.own_heap = own_heap
        self.rounds = 0

    @contextlib.contextmanager
    def round(self) -> Iterator[None]:
        if not gc.isenabled():
            yield
            return
        if self.own_heap:
            gc.collect(1)  # what the encoding and the scrapes left since the last round
        made = errors.errors_made()
        gc.disable()
        try:
            yield
        finally:
            gc.enable()
            self.rounds += 1
            if self.own_heap and self.rounds % FULL_COLLECTION_EVERY == 0:
                gc.unfreeze()
                gc.collect()
            elif not self.own_heap or errors.errors_made() != made:
                gc.collect(1)
            if self.own_heap:
                gc.freeze()

    def release(self) -> None:
        """Hand what the rounds froze back to the collector (when the exporter stops)."""
        if self.own_heap and self.rounds:
            gc.unfreeze()


class RoundMaker:
    """Takes rounds over ``groups`` (every group of the cluster, listed each round, when None)."""

    def __init__(self, source: ClusterSource, groups: Sequence[str] | None = None, *,
                 concurrency: int = DEFAULT_CONCURRENCY, lag_time: bool = True, sample_tags: bool = True,
                 stuck: StuckJudge | None = None, own_heap: bool = False) -> None:
        self.source = source
        #: the collector held off while a round reads; with ``own_heap`` (a process of its own),
        #: each round's survivors frozen out of its passes (:class:`_Heap`)
        self.heap = _Heap(own_heap)
        # with sampling on, each POP group's newest retry copies come with the round (bounded per
        # retry queue), so REPEATED_REDELIVERY is evaluated as the doctor evaluates it
        self.watcher = Watcher(source, groups, interval=1.0, concurrency=concurrency, retry_copies=sample_tags)
        self.concurrency = concurrency
        self.lag_time = lag_time
        self.sample_tags = sample_tags
        self.stuck = stuck or StuckJudge()
        self._errors_total: dict[str, int] = {}
        self._brokers: set[str] = set()

    async def _broker_names(self) -> None:
        try:
            info = await self.source.cluster()
        except errors.RmqctlError:
            return  # the groups' own errors say which brokers failed
        self._brokers.update(info.brokers)

    async def _one(self, view: GroupView, previous: GroupView | None,
                   history: ExpressionHistory | None = None) -> GroupResult:
        lag_seconds: dict[MessageQueue, float] = {}
        if self.lag_time:
            try:
                stored = await self.source.oldest_unconsumed(view, concurrency=self.concurrency)
            except errors.RmqctlError:
                stored = {}
            for p in view.progress:
                if p.lag == 0:
                    lag_seconds[p.queue] = 0.0
                elif p.queue in stored:
                    lag_seconds[p.queue] = max(0, view.sampled_at - stored[p.queue]) / 1000
        checked = view
        if self.sample_tags and tag_conflict_topics(view):
            try:
                checked = await self.source.sample_messages(view, tag_conflict_topics(view))
            except errors.RmqctlError:
                checked = view
        findings = tuple(run_checks(checked, previous, history=history))
        consume, produce = _rates(previous, view)
        return GroupResult(view.group, view, None, findings, (), lag_seconds, consume, produce)

    async def take(self) -> RoundResult:
        """Poll once and build the round's result."""
        started = time.perf_counter()
        with self.heap.round():
            with self.source.sharing():
                await self._broker_names()
                rnd = await self.watcher.poll()
                sample = rnd.current
                previous = rnd.previous.views if rnd.previous is not None else {}
                done = await bounded(
                    [v for _, v in sorted(sample.views.items())],
                    lambda view: self._one(view, previous.get(view.group), rnd.history.get(view.group)),
                    self.concurrency)
            verdicts = self.stuck.add(sample.views.values(), int(round(sample.taken_at * 1000)))
            result = self._result(rnd, done, verdicts)
        return dataclasses.replace(result, duration_seconds=time.perf_counter() - started)

    def _result(self, rnd: Round, done: Sequence[GroupResult],
                verdicts: Mapping[str, Sequence[Verdict]]) -> RoundResult:
        sample = rnd.current
        groups: dict[str, GroupResult] = {}
        for result in done:
            groups[result.group] = GroupResult(
                result.group, result.view, None, result.findings, tuple(verdicts.get(result.group, ())),
                result.lag_seconds, result.consume_rates, result.produce_rates)
        for group, error in sample.errors.items():
            groups[group] = GroupResult(group, None, error)
        failed: dict[str, str] = {}
        for result in groups.values():
            if result.view is not None:
                for broker, error in result.view.failed_brokers.items():
                    failed.setdefault(broker, str(error))
        for broker, error in self.watcher.list_errors.items():
            failed.setdefault(broker, str(error))
        self._brokers.update(failed)
        for result in groups.values():
            if result.view is not None:
                self._brokers.update(p.queue.broker_name for p in result.view.progress)
        brokers = {}
        for name in sorted(self._brokers):
            if name in failed:
                self._errors_total[name] = self._errors_total.get(name, 0) + 1
            brokers[name] = BrokerState(name, name not in failed, self._errors_total.get(name, 0), failed.get(name))
        return RoundResult(rnd.number, sample.taken_at, 0.0, dict(sorted(groups.items())), brokers,
                           dict(self.watcher.list_errors), rnd)
