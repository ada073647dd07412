"""What the dashboard remembers between polls, and the typed rows its tables show — pure, no textual.

:class:`Dashboard` takes each :class:`~rmqctl.watch.Round` from the poll worker and keeps what a
single sample cannot say: lag trends (bounded ring buffers, pruned with the queues they follow),
when each queue last changed owner (for the highlight), the rebalance timeline in plain words,
the doctor's findings per group and each group's consume rate. After each round the app publishes
a :class:`Board` that the screens watch. The ``*_rows`` functions turn a board into
``{row key: typed row}``: numbers stay numbers (``None`` where the cluster could not say), taken
from the model's properties (lag, inflight, age), never recomputed here; :mod:`tui.columns`
turns them into text only when a table draws them.

Imports rmqctl (model, watch, doctor); never textual or rich, so it is tested and benchmarked
without a terminal.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import NamedTuple

from rmqctl import errors
from rmqctl.doctor import POP_COMMIT_GRACE_MS, SEVERITY_RANK, filtering_may_explain, run_checks
from rmqctl.model import Finding, GroupView, MessageQueue, QueueProgress, Subscription
from rmqctl.rebalance.simulate import SimulationResult
from rmqctl.report.common import consume_type
from rmqctl.watch import GroupChange, Round, Sample, consume_rates

#: polls a group's lag trend covers
TREND_LENGTH = 30
#: polls a queue's lag trend covers (one sparkline cell per poll)
QUEUE_TREND_LENGTH = 12
#: seconds a row whose owner changed stays highlighted
HIGHLIGHT_SECONDS = 6.0
#: timeline entries kept (oldest dropped first)
TIMELINE_LENGTH = 500


def clock_text(ts: float) -> str:
    return _dt.datetime.fromtimestamp(ts).strftime("%H:%M:%S")


def queue_key(mq: MessageQueue) -> str:
    return f"{mq.topic}|{mq.broker_name}|{mq.queue_id}"


def queue_status(now: QueueProgress, before: QueueProgress | None, holders: Sequence[str] | tuple[()],
                 *, filtering_may_explain: bool = False, pop: bool = False, pop_recent: bool = False) -> str:
    """``held twice`` (two clients report it), ``unknown`` (its offsets could not be read),
    ``orphaned`` (backlog, nobody holds it), ``moving`` (the consumer offset advanced since the
    last poll), ``idle`` (nothing to consume), ``stalled`` (backlog, held, no progress since the
    last poll, and no broker filter explains it), ``waiting`` (backlog, held, no progress, but for
    no longer than the broker may hold a pull its filter passes nothing of: the doctor's rule,
    :func:`rmqctl.doctor.filtering_may_explain`), ``?`` (backlog, held, only one poll so far).

    A ``pop`` group's queues have no holder (the broker hands each message to whichever client
    pops next), so none is orphaned; and since POP's commit trails the last message by seconds,
    a queue still for less than the doctor's grace (``pop_recent``) is waiting, not stalled."""
    if len(holders) > 1:
        return "held twice"
    lag = now.lag
    if lag is None:
        return "unknown"
    if lag > 0 and not holders and not pop:
        return "orphaned"
    if before is not None and before.known and now.consumer_offset > before.consumer_offset:
        return "moving"
    if lag <= 0:
        return "idle"
    if before is None or not before.known:
        return "?"
    return "waiting" if filtering_may_explain or (pop and pop_recent) else "stalled"


def _total(value: object) -> int:
    """Every count in a (nested) mapping of counts, added up."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return value
    if isinstance(value, Mapping):
        return sum(_total(v) for v in value.values())
    return 0


def messages_lost(findings: Sequence[Finding]) -> tuple[int, int] | None:
    """(messages that will never be consumed, messages sampled) by the doctor's tag-conflict
    findings, when it read the messages (``None``: it did not, so it cannot say how many)."""
    lost = seen = 0
    known = False
    for f in findings:
        counts = f.evidence.get("counts") if f.code == "SUBSCRIPTION_TAG_CONFLICT" else None
        if not isinstance(counts, Mapping) or not f.evidence.get("sampled"):
            continue
        known = True
        gone = _total(counts.get("filtered_by_broker")) + _total(counts.get("dropped_by_client"))
        lost += gone
        seen += gone + _total(counts.get("received_by_client")) + _total(counts.get("pending"))
    return (lost, seen) if known else None


def worst_health(findings: Sequence[Finding]) -> str:
    if not findings:
        return "ok"
    return max((f.severity for f in findings), key=lambda s: SEVERITY_RANK[s])


def consume_tps(before: GroupView | None, after: GroupView, seconds: float) -> float | None:
    """Messages committed per second between two samples (``None`` without a previous one)."""
    if before is None or seconds <= 0:
        return None
    return sum(consume_rates(before, after, seconds).values())


@dataclass(frozen=True, slots=True)
class TimelineEntry:
    """One rebalance, in plain words."""

    at: float
    group: str
    text: str

    def line(self) -> str:
        return f"{clock_text(self.at)} {self.text}"


def queue_order(mq: MessageQueue) -> tuple[str, str, int]:
    """Where a queue's row sits before any sort: by topic, broker and queue id."""
    return (mq.topic.lower(), mq.broker_name.lower(), mq.queue_id)


@dataclass(frozen=True, eq=False, slots=True)
class QueueIndex:
    """One group's queues as a round left them, for rows built on demand: a table asks only for
    the rows it draws, so what is off screen costs nothing per refresh. Built by
    :meth:`Dashboard.prepare` (off the UI thread); never changed after."""

    #: the view it was built from
    view: GroupView
    #: row key → position in :attr:`queues`; the same object from round to round while the set
    #: of queues is unchanged (a table compares it by identity to skip its key diff)
    keys: Mapping[str, int]
    #: every queue of the group (progress rows and routed queues), in :func:`queue_order`
    queues: tuple[MessageQueue, ...]
    progress: Mapping[MessageQueue, QueueProgress]
    #: the previous round's progress of the same group (for ``moving`` / ``stalled``)
    before: Mapping[MessageQueue, QueueProgress]
    owners: Mapping[MessageQueue, Sequence[str]]
    #: queue → its last lags, oldest first (only queues whose lag was ever known)
    trends: Mapping[MessageQueue, tuple[int, ...]]
    #: the known queues' total lag, and how many queues' lag is known / unknown
    total_lag: int
    known: int
    unknown: int
    #: the source cannot read pull offsets: inflight is unknown in every row
    no_inflight: bool
    #: the line over the group's tables
    summary: str
    #: queue → its consumer offset and the round time since which it has not moved (known rows)
    still_since: Mapping[MessageQueue, tuple[int, float]] = field(default_factory=dict)
    #: how many brokers the queues are on (with several, a row needs its broker to be told apart)
    brokers: int = 1


@dataclass(frozen=True, eq=False, slots=True)
class Prepared:
    """A round with everything that costs time in proportion to its queues already worked out
    (what changed, the doctor's findings, rates, the queue indexes): :meth:`Dashboard.commit`
    takes it in at a cost that does not grow with the queue count."""

    round: Round
    list_errors: Mapping[str, errors.RmqctlError]
    changes: Mapping[str, GroupChange]
    #: ``None``: the checks were not run (the previous findings stay)
    findings: Mapping[str, list[Finding]] | None
    tps: Mapping[str, float | None]
    indexes: Mapping[str, QueueIndex]


@dataclass
class Dashboard:
    """Everything the views show, updated one round at a time.

    A round comes in two steps: :meth:`prepare` (pure, reads the dashboard, changes nothing; the
    poll worker runs it off the UI thread) and :meth:`commit` (cheap, on the UI thread).
    :meth:`apply` does both."""

    trend_length: int = TREND_LENGTH
    round: Round | None = None
    group_lag: dict[str, deque[int]] = field(default_factory=dict)
    #: group → queue → its last lags (a new mapping each round; never changed in place)
    queue_lag: dict[str, Mapping[MessageQueue, tuple[int, ...]]] = field(default_factory=dict)
    indexes: dict[str, QueueIndex] = field(default_factory=dict)
    moved_at: dict[str, dict[MessageQueue, float]] = field(default_factory=dict)
    timeline: deque[TimelineEntry] = field(default_factory=lambda: deque(maxlen=TIMELINE_LENGTH))
    findings: dict[str, list[Finding]] = field(default_factory=dict)
    tps: dict[str, float | None] = field(default_factory=dict)
    #: errors of listing the groups (per broker), from the watcher
    list_errors: Mapping[str, errors.RmqctlError] = field(default_factory=dict)
    rounds_applied: int = 0

    @property
    def sample(self) -> Sample | None:
        return self.round.current if self.round else None

    def view(self, group: str) -> GroupView | None:
        sample = self.sample
        return sample.views.get(group) if sample else None

    def previous_view(self, group: str) -> GroupView | None:
        if self.round is None or self.round.previous is None:
            return None
        return self.round.previous.views.get(group)

    def apply(self, rnd: Round, list_errors: Mapping[str, errors.RmqctlError] | None = None,
              *, check: bool = True) -> None:
        """Take one round in: trends, moves, timeline, findings, rates."""
        self.commit(self.prepare(rnd, list_errors, check=check))

    def prepare(self, rnd: Round, list_errors: Mapping[str, errors.RmqctlError] | None = None,
                *, check: bool = True) -> Prepared:
        """Work out what a round changes, without changing anything (safe off the UI thread
        while the screens read the dashboard)."""
        current = rnd.current
        seconds = current.taken_at - rnd.previous.taken_at if rnd.previous else 0.0
        findings: dict[str, list[Finding]] = {}
        tps: dict[str, float | None] = {}
        indexes: dict[str, QueueIndex] = {}
        for group, view in current.views.items():
            before = rnd.previous.views.get(group) if rnd.previous is not None else None
            tps[group] = consume_tps(before, view, seconds)
            note = ""
            if check:
                findings[group] = run_checks(view, before, history=rnd.history.get(group))
                loss = messages_lost(findings[group])
                if loss is not None and loss[0]:
                    note = f" │ {loss[0]} of {loss[1]} messages will never be consumed — press f"
            indexes[group] = self._index(group, view, before, current.taken_at, note)
        for group in current.errors:  # unreadable this round: keep what was known
            if group in self.indexes:
                indexes[group] = self.indexes[group]
        return Prepared(rnd, dict(list_errors or {}), rnd.changes(), findings if check else None, tps, indexes)

    def _index(self, group: str, view: GroupView, before: GroupView | None, taken_at: float,
               note: str = "") -> QueueIndex:
        old = self.indexes.get(group)
        old_trends = self.queue_lag.get(group, {})
        old_still = old.still_since if old is not None else {}
        keep = 1 - QUEUE_TREND_LENGTH
        progress: dict[MessageQueue, QueueProgress] = {}
        trends: dict[MessageQueue, tuple[int, ...]] = {}
        still: dict[MessageQueue, tuple[int, float]] = {}
        total = unknown = 0
        for p in view.progress:
            mq = p.queue
            progress[mq] = p
            lag = p.lag
            trend = old_trends.get(mq, ())
            if lag is None:
                unknown += 1
            else:
                total += p.diff
                trend = (*trend[keep:], lag)
                since = old_still.get(mq)
                still[mq] = since if since is not None and since[0] == p.consumer_offset else (
                    p.consumer_offset, taken_at)
            if trend:
                trends[mq] = trend
        if old is not None and old.view is before:
            previous: Mapping[MessageQueue, QueueProgress] = old.progress
        else:
            previous = {p.queue: p for p in before.progress} if before is not None else {}
        queues = set(progress)
        for routed in view.topic_queues.values():
            queues.update(routed)
        if old is not None and len(old.queues) == len(queues) and queues.issuperset(old.queues):
            keys, ordered = old.keys, old.queues
        else:
            ordered = tuple(sorted(queues, key=queue_order))
            keys = {queue_key(mq): n for n, mq in enumerate(ordered)}
        no_inflight = "inflight" in view.unavailable or "pull_offset" in view.unavailable
        brokers = old.brokers if old is not None and old.keys is keys else len({mq.broker_name for mq in ordered})
        return QueueIndex(view, keys, ordered, progress, previous, view.owners(), trends, total,
                          len(progress) - unknown, unknown, no_inflight, group_summary(view) + note, still,
                          brokers)

    def commit(self, prepared: Prepared) -> None:
        """Take a prepared round in (cheap: no pass over the queues)."""
        rnd = prepared.round
        self.round = rnd
        self.rounds_applied += 1
        self.list_errors = prepared.list_errors
        current = rnd.current
        for group, change in prepared.changes.items():
            moved = self.moved_at.setdefault(group, {})
            for move in change.moves:
                moved[move.queue] = current.taken_at
            self.timeline.append(TimelineEntry(current.taken_at, group, _timeline_text(change.describe())))
        self.indexes = dict(prepared.indexes)
        self.queue_lag = {group: index.trends for group, index in self.indexes.items()}
        for group in current.views:
            index = self.indexes[group]
            # the known queues' total: an unknown lag is left out, never counted as 0
            self.group_lag.setdefault(group, deque(maxlen=self.trend_length)).append(index.total_lag)
            lit = self.moved_at.get(group)
            if lit:
                for mq in [mq for mq, at in lit.items() if current.taken_at - at > HIGHLIGHT_SECONDS]:
                    del lit[mq]
        self.tps.update(prepared.tps)
        if prepared.findings is not None:
            self.findings.update(prepared.findings)
        # forget groups that vanished (bounded memory over a long session)
        for store in (self.group_lag, self.queue_lag, self.indexes, self.moved_at, self.findings, self.tps):
            for group in [g for g in store if g not in current.views and g not in current.errors]:
                del store[group]

    def highlighted(self, group: str, now: float) -> set[MessageQueue]:
        return {mq for mq, at in self.moved_at.get(group, {}).items() if now - at <= HIGHLIGHT_SECONDS}

    def broker_errors(self) -> dict[str, str]:
        """Every error of the last round, by where it happened (a broker, a client, a group)."""
        out: dict[str, str] = {name: err.message for name, err in self.list_errors.items()}
        sample = self.sample
        if sample is None:
            return out
        for group, err in sample.errors.items():
            out[f"group {group}"] = err.message
        for view in sample.views.values():
            for name, err in view.errors.items():
                out.setdefault(name, err.message)
        return out


@dataclass(frozen=True, eq=False, slots=True)
class Board:
    """The latest round as the screens see it: the app publishes a new board after every round
    (compared by identity, so each one reaches the screens watching it)."""

    #: the round's number, from 1
    number: int
    dashboard: Dashboard
    #: the round's time on the source's clock (highlights and ages are as of then)
    now: float

    def view(self, group: str) -> GroupView | None:
        return self.dashboard.view(group)

    def index(self, group: str) -> QueueIndex | None:
        """The group's queue index of this round (``None`` before its first view)."""
        return self.dashboard.indexes.get(group) if self.dashboard.view(group) is not None else None

    def group_error(self, group: str) -> errors.RmqctlError | None:
        sample = self.dashboard.sample
        return sample.errors.get(group) if sample else None


def _timeline_text(described: str) -> str:
    # "c3 joined — 6 queue(s) moved" reads better as "6 queues moved" in a log line
    return re.sub(r"(\d+) queue\(s\) moved", lambda m: f"{m.group(1)} queue{'s' if m.group(1) != '1' else ''} moved",
                  described)


def queue_set(view: GroupView) -> set[MessageQueue]:
    """The group's queues as a set (``known_queues`` without its Java-order sort)."""
    out = {p.queue for p in view.progress}
    for queues in view.topic_queues.values():
        out.update(queues)
    return out


def group_summary(view: GroupView) -> str:
    """One line over the group's tables: model, clients, idle ones, queues, unheld ones, lag."""
    assignments = view.assignments()
    idle = sum(1 for qs in assignments.values() if not qs)
    queues = queue_set(view)
    held = {mq for qs in assignments.values() for mq in qs}
    unknown = len(view.unknown_lag_queues)
    if view.lite_bind_topic:
        # a 5.5 lite group's offsets live in light message queues rmqctl does not read
        lag = (f"lag ≥{view.total_diff}" if view.progress else "lag unknown") + " (lite topics not read)"
    else:
        lag = f"lag {view.total_diff}" + (f" (unknown for {unknown} queue{'s' if unknown != 1 else ''})"
                                          if unknown else "")
    # the consume type as the CLI names it (PUSH, PULL, POP), not the broker's enum
    return (f"Group {view.group} │ {consume_type(view.consume_type) or '?'} {view.message_model or ''} │ "
            f"{len(view.client_ids)} client(s), {idle} idle │ {len(queues)} queue(s), "
            f"{len(queues - held)} held by nobody │ {lag}")


# -- rows: typed values, shown by tui.columns -------------------------------------------------


class GroupLag(NamedTuple):
    """A group's lag: the known queues' total and how many queues' lag is unknown."""

    total: int
    known_queues: int
    unknown_queues: int
    unreadable: bool = False
    #: part of the group's lag is not read at all (a 5.5 lite group's light message queues)
    unread_part: bool = False

    @property
    def sort_value(self) -> int | None:
        return (None if self.unreadable or ((self.unknown_queues or self.unread_part) and not self.known_queues)
                else self.total)


class GroupRow(NamedTuple):
    """Groups view: group, health, clients, queues, lag, trend, consume TPS (or why unreadable)."""

    group: str
    health: str
    clients: int | None
    queues: int | None
    lag: GroupLag
    trend: tuple[int, ...]
    tps: float | None
    error: str | None = None


class NotYet(Enum):
    """A queue's number the brokers hold nothing for yet: the queue is on the routes, but the
    group has no offsets on it (shown ``-``; not the same as ``None``, a number that could not
    be read)."""

    NOT_YET = "-"


NOT_YET = NotYet.NOT_YET
#: a queue's number: known, unknown (``None``: it could not be read) or not there yet
Reported = int | None | NotYet


class Owner(NamedTuple):
    """Who holds a queue, and whether that just changed (the row is lit for a few seconds)."""

    holders: tuple[str, ...]
    lit: bool = False


class QueueRow(NamedTuple):
    """Queue → owner: one queue's numbers (``None``: the brokers could not say)."""

    topic: str
    broker: str
    queue_id: int
    owner: Owner
    broker_offset: Reported
    consumer_offset: Reported
    lag: Reported
    inflight: Reported
    age_ms: Reported
    trend: tuple[int, ...]
    status: str


class ClientRow(NamedTuple):
    """Client → queues: its subscriptions, idle marker, conflicts, the queues it holds."""

    client: str
    queue_count: int
    subscriptions: tuple[Subscription, ...]
    idle: bool
    #: (topic, the expression the broker stores) for each subscription that differs from it
    conflicts: tuple[tuple[str, str], ...]
    held: tuple[MessageQueue, ...]


class FindingRow(NamedTuple):
    """One doctor finding."""

    severity: str
    code: str
    title: str
    finding: Finding


class WhatIfRow(NamedTuple):
    """One client's live queues beside the simulated ones (of the chosen topic)."""

    client: str
    live_count: int
    live: tuple[MessageQueue, ...]
    simulated_count: int
    simulated: tuple[MessageQueue, ...]
    change: str


def group_rows(board: Board) -> dict[str, GroupRow]:
    """Groups view, by group name."""
    dash = board.dashboard
    sample = dash.sample
    if sample is None:
        return {}
    rows: dict[str, GroupRow] = {}
    for group, view in sample.views.items():
        index = dash.indexes[group]
        rows[group] = GroupRow(
            group, worst_health(dash.findings.get(group, [])), len(view.client_ids), len(index.queues),
            GroupLag(index.total_lag, index.known, index.unknown, unread_part=view.lite_bind_topic is not None),
            tuple(dash.group_lag.get(group, ())), dash.tps.get(group))
    for group, err in sample.errors.items():
        rows[group] = GroupRow(group, "unreadable", None, None, GroupLag(0, 0, 0, unreadable=True), (), None,
                               err.message)
    return dict(sorted(rows.items()))


class QueueRows(Mapping[str, QueueRow]):
    """Queue → owner rows of one group, by ``topic|broker|queue id``, built when asked for: a
    table reads the rows it draws (and all of them only to sort or filter by their values)."""

    __slots__ = ("index", "lit", "now_ms", "_built")

    def __init__(self, index: QueueIndex, lit: set[MessageQueue], now: float) -> None:
        self.index = index
        self.lit = lit
        self.now_ms = now * 1000
        self._built: dict[str, QueueRow] = {}

    @property
    def key_token(self) -> object:
        """The same object as long as the group's set of queues is the same."""
        return self.index.keys

    @property
    def built(self) -> int:
        """How many rows have been built so far (those drawn, sorted or filtered)."""
        return len(self._built)

    def __getitem__(self, key: str) -> QueueRow:
        row = self._built.get(key)
        if row is None:
            index = self.index
            row = self._built[key] = self._row(index.queues[index.keys[key]])
        return row

    def __iter__(self) -> Iterator[str]:
        return iter(self.index.keys)

    def __len__(self) -> int:
        return len(self.index.keys)

    def __contains__(self, key: object) -> bool:
        return key in self.index.keys

    def _filtered(self, mq: MessageQueue) -> bool:
        """Whether the doctor's rule lets broker-side filtering explain that ``mq``'s consumer
        offset has been still since the polls first saw it at its value."""
        since = self.index.still_since.get(mq)
        still_ms = self.now_ms - since[1] * 1000 if since is not None else 0.0
        return filtering_may_explain(self.index.view, mq, still_ms)

    def _pop_recent(self, mq: MessageQueue) -> bool:
        """Whether ``mq``'s consumer offset has been still for less than POP's commit grace."""
        since = self.index.still_since.get(mq)
        still_ms = self.now_ms - since[1] * 1000 if since is not None else 0.0
        return still_ms < POP_COMMIT_GRACE_MS

    def _row(self, mq: MessageQueue) -> QueueRow:
        index = self.index
        holders = tuple(index.owners.get(mq, ()))
        owner = Owner(holders, mq in self.lit)
        p = index.progress.get(mq)
        if p is None:
            # routed but never consumed by this group: no offsets on the broker yet
            return QueueRow(mq.topic, mq.broker_name, mq.queue_id, owner, NOT_YET, NOT_YET, NOT_YET,
                            NOT_YET, NOT_YET, (), "held twice" if len(holders) > 1 else "idle")
        known = p.known
        return QueueRow(
            mq.topic, mq.broker_name, mq.queue_id, owner,
            p.broker_offset if known else None, p.consumer_offset if known else None, p.lag,
            # a number this source cannot supply is unknown in every row (as in ``group progress``)
            p.inflight if known and not index.no_inflight else None, p.age_ms(self.now_ms),
            index.trends.get(mq, ()),
            queue_status(p, index.before.get(mq), holders, filtering_may_explain=self._filtered(mq),
                         pop=index.view.pop, pop_recent=index.view.pop and self._pop_recent(mq)),
        )


def queue_rows(board: Board, group: str) -> Mapping[str, QueueRow]:
    """Queue → owner, by ``topic|broker|queue id`` (built on demand); the owner is lit for a few
    seconds after it changed."""
    index = board.index(group)
    if index is None:
        return {}
    return QueueRows(index, board.dashboard.highlighted(group, board.now), board.now)


def stored_subscription(view: GroupView, topic: str) -> Subscription | None:
    """The subscription a broker stores for ``topic`` (the first broker, by name, that has one)."""
    for _, table in sorted(view.broker_subscriptions.items()):
        if topic in table:
            return table[topic]
    return None


def client_rows(board: Board, group: str) -> dict[str, ClientRow]:
    """Client → queues, by client id."""
    view = board.view(group)
    if view is None:
        return {}
    subs = view.client_subscriptions
    rows: dict[str, ClientRow] = {}
    for cid, queues in view.assignments().items():
        own = subs.get(cid, ())
        conflicts = []
        for sub in own:
            stored = stored_subscription(view, sub.topic)
            if stored is not None and not sub.same_filter(stored):
                conflicts.append((sub.topic, stored.expression))
        rows[cid] = ClientRow(cid, len(queues), tuple(own), not queues, tuple(conflicts), tuple(queues))
    return rows


def finding_rows(findings: Sequence[Finding]) -> dict[str, FindingRow]:
    """The findings, worst first, keyed ``CODE#n``."""
    rows: dict[str, FindingRow] = {}
    ordered = sorted(findings, key=lambda f: (-SEVERITY_RANK[f.severity], f.code))
    for index, f in enumerate(ordered):
        rows[f"{f.code}#{index}"] = FindingRow(f.severity, f.code, f.title, f)
    return rows


def whatif_rows(view: GroupView, topic: str, result: SimulationResult) -> dict[str, WhatIfRow]:
    """Each client's live queues of ``topic`` beside the simulated ones, by client id."""
    live = {cid: [q for q in qs if q.topic == topic] for cid, qs in view.assignments().items()}
    rows: dict[str, WhatIfRow] = {}
    for cid in sorted(set(live) | set(result.assignments)):
        lq, sq = live.get(cid, []), result.assignments.get(cid, [])
        change = "" if set(lq) == set(sq) else ("new" if cid not in live else
                                                "removed" if cid not in result.assignments else "moves")
        rows[cid] = WhatIfRow(cid, len(lq), tuple(lq), len(sq), tuple(sq), change)
    return rows
