"""Stuck-queue verdicts over the exporter's own recent rounds, with the names of ``analyze stuck``.

The Spark job (``analysis/rules.py``, described in ``docs/snapshots.md``) judges every queue over a
window of recorded snapshots. The exporter keeps the same facts per queue in memory — one
observation per round over the last ``window`` seconds — and applies the same rules in the same
order, so a verdict scraped from ``/metrics`` reads like one from ``rmqctl analyze stuck``: the
statuses (``STALLED``, ``ORPHANED``, ``LAGGING``, ``REWOUND``, ``IDLE``, ``OK``, ``DLQ``,
``INSUFFICIENT_DATA``) and the rule ids (``frozen``, ``no-owner``, ``owner-not-subscribed`` …).
A round whose offsets for a queue could not be read is a gap, never zeros. :func:`judge` states
the rules over a whole window; :class:`StuckJudge` keeps what they read up to date as each round's
observation arrives and the oldest ages out, so a round costs the same whatever the window holds,
with :func:`judge`'s verdicts (``tests/exporter/test_stuck_incremental.py`` holds the two equal).

Pure: no I/O, no clock of its own (each observation carries its round's time). Imports the model
and :mod:`rmqctl.stuck` (the verdict names, their order and the thresholds the doctor and the Spark
job share); must not import the CLI, textual or pyspark.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from operator import attrgetter

from rmqctl import stuck
from rmqctl.model import GroupView, MessageQueue
from rmqctl.records import dataclass

#: status of each rule, in the order the rules are tried (the first that holds gives the verdict);
#: the same table as ``analysis.rules.RULE_STATUS``, over the names of :mod:`rmqctl.stuck`
RULE_STATUS: Mapping[str, str] = {
    "dlq": stuck.DLQ, "min-snapshots": stuck.INSUFFICIENT_DATA, "rewind": stuck.REWOUND,
    "no-new-messages": stuck.IDLE, "caught-up": stuck.OK, "owner-changed": stuck.INSUFFICIENT_DATA,
    "pop-grace": stuck.INSUFFICIENT_DATA, "not-popped": stuck.STALLED,
    "no-owner": stuck.ORPHANED, "owner-not-subscribed": stuck.ORPHANED, "offset-pinned": stuck.STALLED,
    "frozen": stuck.STALLED, "lag-growing": stuck.LAGGING, "moving": stuck.OK,
}
#: every status, least to most severe
STATUSES = tuple(sorted(stuck.STATUS_RANK, key=lambda s: (stuck.STATUS_RANK[s], s)))
STUCK_STATUSES = stuck.STUCK_STATUSES


@dataclass(frozen=True, slots=True)
class Thresholds:
    """The knobs of the rules; the defaults are ``analyze stuck``'s (:mod:`rmqctl.stuck`)."""

    min_snapshots: int = stuck.MIN_SNAPSHOTS
    allowed_lag: int = stuck.ALLOWED_LAG
    retry_allowed_lag: int = stuck.RETRY_ALLOWED_LAG
    consume_timeout_ms: int = stuck.CONSUME_TIMEOUT_MS
    pop_commit_grace_ms: int = stuck.POP_COMMIT_GRACE_MS


#: the rules' knobs as ``analyze stuck`` sets them
DEFAULT_THRESHOLDS = Thresholds()


@dataclass(frozen=True, slots=True)
class Observation:
    """One answered round of one queue."""

    ts_ms: int
    broker_offset: int
    consumer_offset: int
    pull_offset: int | None
    owner: str | None
    #: the owner subscribes the queue's topic (None: no owner, or its subscriptions unknown)
    subscribed: bool | None
    #: the group consumes by POP: no client owns a queue, so a frozen queue is one nobody pops
    pop: bool = False

    @property
    def lag(self) -> int:
        return max(0, self.broker_offset - self.consumer_offset)


@dataclass(frozen=True, slots=True)
class Verdict:
    """The status of one queue, the rule that gave it, and the numbers of the span it speaks about."""

    queue: MessageQueue
    status: str
    rule: str
    owner: str | None
    lag: int | None
    #: answered rounds in the window
    snapshots: int
    #: since when the consumer offset has been frozen (epoch ms), for the stuck rules
    frozen_since_ms: int | None = None


def _allowed(th: Thresholds, topic: str) -> int:
    return th.retry_allowed_lag if stuck.is_retry(topic) else th.allowed_lag



def _frozen_rule(start: Observation, last: Observation, start_seen: bool, th: Thresholds) -> str:
    """The rule that names a queue frozen for at least ``th.min_snapshots`` observations and
    behind, from the run's first observation ``start`` (``start_seen``: the run began inside the
    window, not before it) and the last."""
    frozen_ms = last.ts_ms - start.ts_ms
    if last.pop:
        # POP's commit trails the last popped message: a run whose start was seen and that is
        # shorter than the grace says nothing yet; else nobody pops it (never ORPHANED)
        return "pop-grace" if start_seen and frozen_ms < th.pop_commit_grace_ms else "not-popped"
    if last.owner is None:
        return "no-owner"
    if last.subscribed is False:
        return "owner-not-subscribed"
    start_pull, last_pull = start.pull_offset, last.pull_offset
    pulled = start_pull is not None and last_pull is not None and last_pull > start_pull
    if pulled and frozen_ms <= th.consume_timeout_ms:
        return "offset-pinned"
    return "frozen"


def judge(queue: MessageQueue, seen: list[Observation], th: Thresholds = DEFAULT_THRESHOLDS) -> Verdict:
    """The verdict of one queue over its answered observations in the window (oldest first)."""
    allowed = _allowed(th, queue.topic)

    def verdict(rule: str, frozen_since: int | None = None) -> Verdict:
        last = seen[-1] if seen else None
        return Verdict(queue, RULE_STATUS[rule], rule, last.owner if last else None,
                       last.lag if last else None, len(seen), frozen_since)

    if not seen:
        return verdict("min-snapshots")
    if queue.topic.startswith(stuck.DLQ_PREFIX):
        return verdict("dlq")
    if len(seen) < th.min_snapshots:
        return verdict("min-snapshots")
    first, last = seen[0], seen[-1]
    seg = run = 0
    caught_up_at: int | None = None
    prev = first
    prev_caught_up = False
    for i, obs in enumerate(seen):
        # each observation's lag once (the property, inlined: a window is read every round)
        caught_up = max(0, obs.broker_offset - obs.consumer_offset) <= allowed
        if caught_up:
            caught_up_at = i
        if i:
            if obs.owner != prev.owner:
                seg = run = i
            elif obs.consumer_offset != prev.consumer_offset or prev_caught_up:
                run = i
        prev, prev_caught_up = obs, caught_up
    frozen_n = len(seen) - run
    # a queue frozen since it went back is judged by the stuck rules below, not called REWOUND
    if max(o.consumer_offset for o in seen) > last.consumer_offset and not (
            frozen_n >= th.min_snapshots and last.lag > allowed):
        return verdict("rewind")
    if last.broker_offset == first.broker_offset and last.lag <= allowed:
        return verdict("no-new-messages")
    if last.lag <= allowed:
        return verdict("caught-up")
    if len(seen) - seg < th.min_snapshots:
        return verdict("owner-changed")
    if frozen_n >= th.min_snapshots:
        rule = _frozen_rule(seen[run], last, run > 0, th)
        return verdict(rule, seen[run].ts_ms)
    if (caught_up_at is None or caught_up_at < seg) and last.lag > seen[seg].lag:
        return verdict("lag-growing")
    return verdict("moving")


#: a queue's fields as a tuple (topic, broker name, queue id): the order verdicts are listed in (as
#: plain strings compare), and a key hashed without calling into Python, as a MessageQueue is not
QUEUE_KEY = attrgetter("topic", "broker_name", "queue_id")


def observations(view: GroupView) -> dict[MessageQueue, Observation]:
    """This round's observation of every queue of ``view`` whose offsets were read."""
    holders: dict[MessageQueue, str] = {mq: cids[0] for mq, cids in view.owners().items()}
    pop = view.pop  # derived from the whole view: once, not per queue
    subscribes: dict[tuple[str, str], bool | None] = {}
    out = {}
    for p in view.progress:
        if not p.known:
            continue
        owner = holders.get(p.queue)
        subscribed = None
        if owner:
            key = (owner, p.queue.topic)
            if key not in subscribes:
                subscribes[key] = view.subscribes(owner, p.queue.topic)
            subscribed = subscribes[key]
        out[p.queue] = Observation(view.sampled_at, p.broker_offset, p.consumer_offset, p.pull_offset,
                                   owner, subscribed, pop)
    return out


class _Track:
    """One queue's window and what :func:`judge` derives from it, kept up as observations come and go.

    :func:`judge` walks the whole window every round; a track updates the same facts as each
    observation is appended or ages out, so a round costs O(1) per queue. Positions are counted
    from the queue's first observation (``base`` is the position of the window's oldest): an
    event at a position no later than ``base`` has left the window and reads as :func:`judge`
    reads it there, at index 0 (the pair it compared straddles the window's start).
    """

    __slots__ = ("allowed", "base", "caught_at", "last_caught_up", "maxima", "run_at", "run_obs",
                 "seen", "seg_at", "seg_obs")

    def __init__(self, allowed: int) -> None:
        self.allowed = allowed
        #: the window, oldest first (a list: a deque's first block alone outweighs a window)
        self.seen: list[Observation] = []
        #: position of ``seen[0]``; ``base + len(seen)`` is the next observation's
        self.base = 0
        #: position of the last owner change (``seg`` in :func:`judge`) and its observation
        self.seg_at = 0
        self.seg_obs: Observation | None = None
        #: position where the current frozen run began (``run``) and its observation
        self.run_at = 0
        self.run_obs: Observation | None = None
        #: position of the last observation within the allowed lag (-1: none yet)
        self.caught_at = -1
        self.last_caught_up = False
        #: (position, consumer offset) of the window's observations whose offset no later one
        #: reaches: the first is the window's greatest offset, and more than one means the
        #: newest offset is below an earlier one (a rewind)
        self.maxima: list[tuple[int, int]] = []

    def append(self, obs: Observation) -> None:
        seen = self.seen
        at = self.base + len(seen)
        caught_up = max(0, obs.broker_offset - obs.consumer_offset) <= self.allowed
        if seen:
            prev = seen[-1]
            if obs.owner != prev.owner:
                self.seg_at = self.run_at = at
                self.seg_obs = self.run_obs = obs
            elif obs.consumer_offset != prev.consumer_offset or self.last_caught_up:
                self.run_at = at
                self.run_obs = obs
        if caught_up:
            self.caught_at = at
        self.last_caught_up = caught_up
        maxima = self.maxima
        offset = obs.consumer_offset
        while maxima and maxima[-1][1] <= offset:
            maxima.pop()
        maxima.append((at, offset))
        seen.append(obs)

    def trim(self, horizon: int) -> None:
        """Let the observations older than ``horizon`` (epoch ms) leave the window."""
        seen = self.seen
        gone = 0
        for obs in seen:
            if obs.ts_ms >= horizon:
                break
            gone += 1
        if gone:
            del seen[:gone]
            self.base += gone
        maxima = self.maxima
        gone = 0
        for at, _ in maxima:
            if at >= self.base:
                break
            gone += 1
        if gone:
            del maxima[:gone]

    def verdict(self, queue: MessageQueue, th: Thresholds) -> Verdict:
        """What :func:`judge` says of ``queue`` over this window."""
        seen = self.seen
        n = len(seen)
        if not n:
            return Verdict(queue, RULE_STATUS["min-snapshots"], "min-snapshots", None, None, 0, None)
        last = seen[-1]
        last_lag = last.broker_offset - last.consumer_offset
        if last_lag < 0:
            last_lag = 0

        def verdict(rule: str, frozen_since: int | None = None) -> Verdict:
            return Verdict(queue, RULE_STATUS[rule], rule, last.owner, last_lag, n, frozen_since)

        if queue.topic.startswith(stuck.DLQ_PREFIX):
            return verdict("dlq")
        if n < th.min_snapshots:
            return verdict("min-snapshots")
        base = self.base
        allowed = self.allowed
        first = seen[0]
        seg = self.seg_at - base
        seg_obs = self.seg_obs
        if seg <= 0 or seg_obs is None:
            seg, seg_obs = 0, first
        run = self.run_at - base
        run_obs = self.run_obs
        if run <= 0 or run_obs is None:
            run, run_obs = 0, first
        frozen_n = n - run
        if len(self.maxima) > 1 and not (frozen_n >= th.min_snapshots and last_lag > allowed):
            return verdict("rewind")
        if last_lag <= allowed:
            if last.broker_offset == first.broker_offset:
                return verdict("no-new-messages")
            return verdict("caught-up")
        if n - seg < th.min_snapshots:
            return verdict("owner-changed")
        if frozen_n >= th.min_snapshots:
            return verdict(_frozen_rule(run_obs, last, run > 0, th), run_obs.ts_ms)
        # negative: no observation of the window was within the allowed lag
        caught_at = self.caught_at - base
        seg_lag = seg_obs.broker_offset - seg_obs.consumer_offset
        if caught_at < seg and last_lag > max(0, seg_lag):
            return verdict("lag-growing")
        return verdict("moving")


class StuckJudge:
    """Keeps each queue's observations of the last ``window_ms`` and judges them every round.

    Each queue's window is kept as a :class:`_Track`, which updates what :func:`judge` would derive
    from it as observations arrive and age out: a round costs O(1) per queue, not O(window), and
    gives :func:`judge`'s verdicts. A queue's track is dropped once its window is empty and its
    group no longer lists it.
    """

    def __init__(self, window_ms: int = 10 * 60_000, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> None:
        self.window_ms = window_ms
        self.thresholds = thresholds
        #: group → queue (by its fields) → its track
        self._tracks: dict[str, dict[tuple[str, str, int], _Track]] = {}

    def window(self, group: str, queue: MessageQueue) -> list[Observation]:
        """The observations of ``queue`` of ``group`` in the window, oldest first."""
        track = self._tracks.get(group, {}).get(QUEUE_KEY(queue))
        return list(track.seen) if track is not None else []

    def tracked(self) -> int:
        """How many queues the judge keeps a window of."""
        return sum(len(kept) for kept in self._tracks.values())

    def add(self, views: Iterable[GroupView], now_ms: int) -> dict[str, list[Verdict]]:
        """Record one round's views and return every group's verdicts (queues sorted)."""
        out: dict[str, list[Verdict]] = {}
        # Queues are keyed by their fields (the order verdicts are listed in): a tuple of two
        # strings and an int hashes and compares without calling into Python, a MessageQueue does
        # not, and a round looks up each of its 20,000 queues several times.
        #: group → every queue it should be consuming (``known_queues``, unsorted)
        live: dict[str, dict[tuple[str, str, int], MessageQueue]] = {}
        tracks = self._tracks
        th = self.thresholds
        for view in views:
            group = view.group
            kept = tracks.get(group)
            if kept is None:
                kept = tracks[group] = {}
            queues = live.get(group)
            if queues is None:
                queues = live[group] = {}
            for key, (mq, obs) in _observed(view, queues).items():
                track = kept.get(key)
                if track is None:
                    track = kept[key] = _Track(_allowed(th, mq.topic))
                track.append(obs)
            for listed in view.topic_queues.values():
                for mq in listed:
                    queues.setdefault(QUEUE_KEY(mq), mq)
        horizon = now_ms - self.window_ms
        for group in list(tracks):
            kept = tracks[group]
            wanted = live.get(group, {})
            for key in list(kept):
                track = kept[key]
                track.trim(horizon)
                if not track.seen and key not in wanted:
                    del kept[key]
            if not kept:
                del tracks[group]
        empty = _Track(0)
        for group in sorted(live):
            kept = tracks.get(group, {})
            queues = live[group]
            out[group] = verdicts = [kept.get(key, empty).verdict(queues[key], th) for key in sorted(queues)]
            if not verdicts:
                del out[group]
        return out


def _observed(view: GroupView, queues: dict[tuple[str, str, int], MessageQueue]
              ) -> dict[tuple[str, str, int], tuple[MessageQueue, Observation]]:
    """:func:`observations` of ``view`` keyed by each queue's fields; every queue of its progress
    rows goes into ``queues`` on the way."""
    holders = view.holders()  # each queue's holders by client id: the first is its owner
    pop = view.pop
    subscribes: dict[tuple[str, str], bool | None] = {}
    out = {}
    sampled_at = view.sampled_at
    for p in view.progress:
        mq = p.queue
        key = QUEUE_KEY(mq)
        queues[key] = mq
        if not p.known:
            continue
        held_by = holders.get(mq)
        owner = held_by[0] if held_by else None
        subscribed = None
        if owner:
            pair = (owner, mq.topic)
            if pair not in subscribes:
                subscribes[pair] = view.subscribes(owner, mq.topic)
            subscribed = subscribes[pair]
        out[key] = (mq, Observation(sampled_at, p.broker_offset, p.consumer_offset, p.pull_offset,
                                    owner, subscribed, pop))
    return out
