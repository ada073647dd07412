"""Stuck-queue verdicts over the exporter's own recent rounds, with the names of ``analyze stuck``.

The Spark job (``analysis/rules.py``, described in ``docs/snapshots.md``) judges every queue over a
window of recorded snapshots. The exporter keeps the same facts per queue in memory — one
observation per round over the last ``window`` seconds — and applies the same rules in the same
order, so a verdict scraped from ``/metrics`` reads like one from ``rmqctl analyze stuck``: the
statuses (``STALLED``, ``ORPHANED``, ``LAGGING``, ``REWOUND``, ``IDLE``, ``OK``, ``DLQ``,
``INSUFFICIENT_DATA``) and the rule ids (``frozen``, ``no-owner``, ``owner-not-subscribed`` …).
A round whose offsets for a queue could not be read is a gap, never zeros.

Pure: no I/O, no clock of its own (each observation carries its round's time). Imports the model
and :mod:`rmqctl.stuck` (the verdict names, their order and the thresholds the doctor and the Spark
job share); must not import the CLI, textual or pyspark.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from operator import attrgetter

from rmqctl import stuck
from rmqctl.model import GroupView, MessageQueue

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


def judge(queue: MessageQueue, seen: list[Observation], th: Thresholds = Thresholds()) -> Verdict:
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
    frozen_ms = last.ts_ms - seen[run].ts_ms
    since = seen[run].ts_ms
    if frozen_n >= th.min_snapshots:
        if last.pop:
            # POP's commit trails the last popped message: a run whose start was seen and that is
            # shorter than the grace says nothing yet; else nobody pops it (never ORPHANED)
            if run > 0 and frozen_ms < th.pop_commit_grace_ms:
                return verdict("pop-grace", since)
            return verdict("not-popped", since)
        if last.owner is None:
            return verdict("no-owner", since)
        if last.subscribed is False:
            return verdict("owner-not-subscribed", since)
        start_pull, last_pull = seen[run].pull_offset, last.pull_offset
        pulled = start_pull is not None and last_pull is not None and last_pull > start_pull
        if pulled and frozen_ms <= th.consume_timeout_ms:
            return verdict("offset-pinned", since)
        return verdict("frozen", since)
    if (caught_up_at is None or caught_up_at < seg) and last.lag > seen[seg].lag:
        return verdict("lag-growing")
    return verdict("moving")


#: the order verdicts are listed in: topic, broker name, queue id (as plain strings compare)
_QUEUE_ORDER = attrgetter("topic", "broker_name", "queue_id")


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


class StuckJudge:
    """Keeps each queue's observations of the last ``window_ms`` and judges them every round."""

    def __init__(self, window_ms: int = 10 * 60_000, thresholds: Thresholds = Thresholds()) -> None:
        self.window_ms = window_ms
        self.thresholds = thresholds
        self._seen: dict[tuple[str, MessageQueue], deque[Observation]] = {}

    def add(self, views: Iterable[GroupView], now_ms: int) -> dict[str, list[Verdict]]:
        """Record one round's views and return every group's verdicts (queues sorted)."""
        out: dict[str, list[Verdict]] = {}
        #: group → every queue it should be consuming (``known_queues``, unsorted)
        live: dict[str, set[MessageQueue]] = {}
        seen = self._seen
        for view in views:
            group = view.group
            for mq, obs in observations(view).items():
                key = (group, mq)
                kept = seen.get(key)
                if kept is None:
                    kept = seen[key] = deque()
                kept.append(obs)
            queues = live.setdefault(group, set())
            queues.update(p.queue for p in view.progress)
            for listed in view.topic_queues.values():
                queues.update(listed)
        horizon = now_ms - self.window_ms
        for key in list(seen):
            kept = seen[key]
            while kept and kept[0].ts_ms < horizon:
                kept.popleft()
            if not kept and key[1] not in live.get(key[0], ()):
                del seen[key]
        thresholds = self.thresholds
        for group in sorted(live):
            out[group] = verdicts = [judge(mq, list(seen.get((group, mq), ())), thresholds)
                                     for mq in sorted(live[group], key=_QUEUE_ORDER)]
            if not verdicts:
                del out[group]
        return out
