"""What the dashboard remembers between polls, and the rows its tables show — pure, no textual.

:class:`Dashboard` takes each :class:`~rmqctl.watch.Round` from the poll worker and keeps what a
single sample cannot say: lag trends (bounded ring buffers, pruned with the queues they follow),
when each queue last changed owner (for the highlight), the rebalance timeline in plain words,
the doctor's findings per group and each group's consume rate. The ``*_rows`` functions turn
that into ``{row key: cells}`` for the tables, so the widgets only copy cells by key.

Imports rmqctl (model, watch, doctor) and rich's ``Text`` for styled cells; never textual, so
it is tested and benchmarked without a terminal.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from rich.text import Text

from rmqctl import errors
from rmqctl.doctor import SEVERITY_RANK, run_checks
from rmqctl.model import Finding, GroupView, MessageQueue, QueueProgress, Subscription
from rmqctl.watch import Round, Sample, consume_rates

#: polls a group's lag trend covers
TREND_LENGTH = 30
#: polls a queue's lag trend covers (one sparkline cell per poll)
QUEUE_TREND_LENGTH = 12
#: seconds a row whose owner changed stays highlighted
HIGHLIGHT_SECONDS = 6.0
#: timeline entries kept (oldest dropped first)
TIMELINE_LENGTH = 500
SPARK = "▁▂▃▄▅▆▇█"

Cell = str | Text
Row = tuple[Cell, ...]

STATUS_STYLE = {
    "moving": "green",
    "idle": "dim",
    "stalled": "bold red",
    "orphaned": "bold magenta",
    "held twice": "bold yellow",
    "?": "",
}
#: one shared cell per status (cells are never mutated; sharing keeps a 10k-row refresh cheap)
STATUS_TEXT = {status: Text(status, style=style) for status, style in STATUS_STYLE.items()}
HEALTH_STYLE = {"ok": "green", "info": "cyan", "warning": "yellow", "error": "bold red",
                "unreadable": "bold red"}


_SPARK_MEMO: dict[tuple[int, ...], str] = {}


def sparkline(values: Iterable[int], width: int = 12) -> str:
    """The last ``width`` values as block characters scaled to their own range."""
    data = tuple(values)[-width:]
    if not data:
        return ""
    # many queues share a trend (idle ones, steady producers): remember recent answers
    known = _SPARK_MEMO.get(data)
    if known is not None:
        return known
    low, high = min(data), max(data)
    if high == low:
        text = SPARK[0 if high == 0 else 3] * len(data)
    else:
        scale = (len(SPARK) - 1) / (high - low)
        text = "".join([SPARK[int((v - low) * scale)] for v in data])
    if len(_SPARK_MEMO) >= 1024:
        _SPARK_MEMO.clear()
    _SPARK_MEMO[data] = text
    return text


def human_age(seconds: float | None) -> str:
    """``45s``, ``12m``, ``3h``, ``2d``; ``-`` when unknown."""
    if seconds is None:
        return "-"
    s = max(0, int(seconds))
    if s < 120:
        return f"{s}s"
    if s < 7200:
        return f"{s // 60}m"
    if s < 172800:
        return f"{s // 3600}h"
    return f"{s // 86400}d"


def clock_text(ts: float) -> str:
    return _dt.datetime.fromtimestamp(ts).strftime("%H:%M:%S")


def queue_key(mq: MessageQueue) -> str:
    return f"{mq.topic}|{mq.broker_name}|{mq.queue_id}"


def queue_status(now: QueueProgress, before: QueueProgress | None, holders: Sequence[str] | tuple[()]) -> str:
    """``held twice`` (two clients report it), ``orphaned`` (backlog, nobody holds it),
    ``moving`` (the consumer offset advanced since the last poll), ``idle`` (nothing to
    consume), ``stalled`` (backlog, held, no progress since the last poll), ``?`` (backlog,
    held, only one poll so far)."""
    if len(holders) > 1:
        return "held twice"
    if now.diff > 0 and not holders:
        return "orphaned"
    if before is not None and now.consumer_offset > before.consumer_offset:
        return "moving"
    if now.diff <= 0:
        return "idle"
    return "stalled" if before is not None else "?"


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


@dataclass
class Dashboard:
    """Everything the views show, updated one round at a time."""

    trend_length: int = TREND_LENGTH
    round: Round | None = None
    group_lag: dict[str, deque[int]] = field(default_factory=dict)
    queue_lag: dict[str, dict[MessageQueue, deque[int]]] = field(default_factory=dict)
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
        self.round = rnd
        self.rounds_applied += 1
        self.list_errors = dict(list_errors or {})
        current = rnd.current
        seconds = current.taken_at - rnd.previous.taken_at if rnd.previous else 0.0
        for group, change in rnd.changes().items():
            moved = self.moved_at.setdefault(group, {})
            for move in change.moves:
                moved[move.queue] = current.taken_at
            self.timeline.append(TimelineEntry(current.taken_at, group, _timeline_text(change.describe())))
        for group, view in current.views.items():
            self.group_lag.setdefault(group, deque(maxlen=self.trend_length)).append(view.total_diff)
            trends = self.queue_lag.setdefault(group, {})
            present = set()
            for p in view.progress:
                present.add(p.queue)
                trends.setdefault(p.queue, deque(maxlen=QUEUE_TREND_LENGTH)).append(p.diff)
            for gone in set(trends) - present:
                del trends[gone]
            lit = self.moved_at.get(group)
            if lit:
                for mq in [mq for mq, at in lit.items() if current.taken_at - at > HIGHLIGHT_SECONDS]:
                    del lit[mq]
            before = self.previous_view(group)
            self.tps[group] = consume_tps(before, view, seconds)
            if check:
                self.findings[group] = run_checks(view, before)
        # forget groups that vanished (bounded memory over a long session)
        for store in (self.group_lag, self.queue_lag, self.moved_at, self.findings, self.tps):
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
    return (f"Group {view.group} │ {view.consume_type or '?'} {view.message_model or ''} │ "
            f"{len(view.client_ids)} client(s), {idle} idle │ {len(queues)} queue(s), "
            f"{len(queues - held)} held by nobody │ lag {view.total_diff}")


# -- rows -------------------------------------------------------------------------------------


def group_rows(dash: Dashboard) -> dict[str, Row]:
    """Groups view: group, health, clients, queues, lag, trend, consume TPS."""
    sample = dash.sample
    if sample is None:
        return {}
    rows: dict[str, Row] = {}
    for group, view in sample.views.items():
        health = worst_health(dash.findings.get(group, []))
        tps = dash.tps.get(group)
        rows[group] = (
            group,
            Text(health, style=HEALTH_STYLE[health]),
            str(len(view.client_ids)),
            str(len(queue_set(view))),
            str(view.total_diff),
            sparkline(dash.group_lag.get(group, ())),
            "-" if tps is None else f"{tps:.1f}",
        )
    for group, err in sample.errors.items():
        rows[group] = (group, Text("unreadable", style=HEALTH_STYLE["unreadable"]), "-", "-", "-", "",
                       Text(err.message, style="red"))
    return dict(sorted(rows.items()))


def queue_rows(dash: Dashboard, group: str, now: float) -> dict[str, Row]:
    """Queue → owner: topic, broker, queue, owner, broker/consumer offset, lag, inflight, age,
    trend, status; the owner cell is highlighted for a few seconds after it changed."""
    view = dash.view(group)
    if view is None:
        return {}
    before = dash.previous_view(group)
    old = {p.queue: p for p in before.progress} if before else {}
    owners = view.owners()
    trends = dash.queue_lag.get(group, {})
    lit = dash.highlighted(group, now)
    now_ms = now * 1000
    rows: dict[str, Row] = {}
    seen: set[MessageQueue] = set()
    for p in view.progress:
        mq = p.queue
        seen.add(mq)
        holders = owners.get(mq, ())
        owner_text = holders[0] if len(holders) == 1 else (", ".join(holders) or "(nobody)")
        owner: Cell = Text(owner_text, style="reverse bold") if lit and mq in lit else owner_text
        status = queue_status(p, old.get(mq), holders)
        age = (now_ms - p.last_timestamp) / 1000 if p.last_timestamp else None
        trend = trends.get(mq)
        rows[f"{mq.topic}|{mq.broker_name}|{mq.queue_id}"] = (
            mq.topic, mq.broker_name, str(mq.queue_id), owner, str(p.broker_offset), str(p.consumer_offset),
            str(p.broker_offset - p.consumer_offset), str(p.inflight), human_age(age),
            sparkline(trend) if trend else "", STATUS_TEXT[status],
        )
    for queues in view.topic_queues.values():
        for mq in queues:
            if mq in seen:
                continue
            seen.add(mq)
            # routed but never consumed by this group: no offsets on the broker yet
            holders = owners.get(mq, ())
            owner_text = ", ".join(holders) or "(nobody)"
            owner = Text(owner_text, style="reverse bold") if mq in lit else owner_text
            status = "held twice" if len(holders) > 1 else "idle"
            rows[queue_key(mq)] = (mq.topic, mq.broker_name, str(mq.queue_id), owner, "-", "-", "-", "-", "-",
                                   "", STATUS_TEXT[status])
    return rows


def stored_subscription(view: GroupView, topic: str) -> Subscription | None:
    """The subscription a broker stores for ``topic`` (the first broker, by name, that has one)."""
    for _, table in sorted(view.broker_subscriptions.items()):
        if topic in table:
            return table[topic]
    return None


def client_rows(dash: Dashboard, group: str) -> dict[str, Row]:
    """Client → queues: client, queue count, its own subscriptions, idle marker, conflicts with
    the broker-stored subscription, and the queues it holds."""
    view = dash.view(group)
    if view is None:
        return {}
    subs = view.client_subscriptions
    rows: dict[str, Row] = {}
    for cid, queues in view.assignments().items():
        own = subs.get(cid, ())
        conflicts = []
        for sub in own:
            stored = stored_subscription(view, sub.topic)
            if stored is not None and not sub.same_filter(stored):
                conflicts.append(f"{sub.topic}: broker has {stored.expression!r}")
        rows[cid] = (
            cid,
            str(len(queues)),
            "; ".join(f"{s.topic}={s.expression}" for s in own) or "?",
            Text("idle", style="yellow") if not queues else "",
            Text("; ".join(conflicts), style="bold red") if conflicts else "",
            " ".join(f"{q.topic}@{q.broker_name}/{q.queue_id}" for q in queues),
        )
    return rows


def finding_rows(findings: Sequence[Finding]) -> dict[str, Row]:
    rows: dict[str, Row] = {}
    ordered = sorted(findings, key=lambda f: (-SEVERITY_RANK[f.severity], f.code))
    for index, f in enumerate(ordered):
        style = HEALTH_STYLE.get(f.severity, "")
        rows[f"{f.code}#{index}"] = (Text(f.severity, style=style), f.code, f.title)
    return rows


def filter_rows(rows: Mapping[str, Row], pattern: str) -> dict[str, Row]:
    """Rows whose text matches the regex ``pattern``; a leading ``!`` keeps those that do not.
    A pattern that is not a valid regex matches as plain text."""
    if not pattern or pattern == "!":
        return dict(rows)
    invert = pattern.startswith("!")
    body = pattern[1:] if invert else pattern
    try:
        regex = re.compile(body, re.IGNORECASE)
    except re.error:
        regex = re.compile(re.escape(body), re.IGNORECASE)
    out = {}
    for key, cells in rows.items():
        text = " ".join(c.plain if isinstance(c, Text) else c for c in cells)
        if bool(regex.search(text)) != invert:
            out[key] = cells
    return out
