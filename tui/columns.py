"""The edge where typed rows become text: every table's columns, each a field of the row type,
the function that shows its value, and the key it sorts by.

Rows (:mod:`tui.state`) carry values — lag as ``int | None``, age in milliseconds, a trend as
numbers — and are compared, diffed and sorted as values; a value is turned into text only here,
when a table draws it (:class:`Live`). Unknown numbers show as ``unknown`` and sort after every
known one. Also the row filter (``/``), which matches the rows' shown text.

Imports rich and tui.state; never textual, so it is tested and benchmarked without a terminal.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, Generic, Protocol, TypeVar

from rich.text import Text

from rmqctl.model import MessageQueue, Subscription
from tui.state import (
    NOT_YET,
    ClientRow,
    FindingRow,
    GroupLag,
    GroupRow,
    Owner,
    QueueRow,
    Reported,
    WhatIfRow,
)

R = TypeVar("R")
Cell = str | Text

UNKNOWN = "unknown"
SPARK = "▁▂▃▄▅▆▇█"
STATUS_STYLE = {
    "moving": "green",
    "idle": "dim",
    "stalled": "bold red",
    "waiting": "",
    "orphaned": "bold magenta",
    "held twice": "bold yellow",
    "unknown": "yellow",
    "?": "",
}
#: one shared cell per status (cells are never mutated; sharing keeps a 10k-row refresh cheap)
STATUS_TEXT = {status: Text(status, style=style) for status, style in STATUS_STYLE.items()}
HEALTH_STYLE = {"ok": "green", "info": "cyan", "warning": "yellow", "error": "bold red",
                "unreadable": "bold red"}
HEALTH_TEXT = {health: Text(health, style=style) for health, style in HEALTH_STYLE.items()}

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


def human_age(ms: int | None) -> str:
    """``45s``, ``12m``, ``3h``, ``2d``; ``-`` when unknown."""
    if ms is None:
        return "-"
    s = max(0, ms // 1000)
    if s < 120:
        return f"{s}s"
    if s < 7200:
        return f"{s // 60}m"
    if s < 172800:
        return f"{s // 3600}h"
    return f"{s // 86400}d"


def by_value(value: Any) -> tuple[int, Any]:
    """Sort key of a typed value: numbers as numbers, text without case, unknown (``None``) last."""
    if value is None:
        return (1, 0)
    if isinstance(value, str):
        return (0, value.lower())
    return (0, value)


def plain(cell: Cell) -> str:
    return cell.plain if isinstance(cell, Text) else cell


@dataclass(frozen=True, slots=True)
class Column(Generic[R]):
    """A table column: its key (the row field it shows), header, width (``0``: takes what is
    left), priority (``0`` is never dropped; higher numbers are dropped first when the table is
    narrow), how a value is shown and how it sorts."""

    key: str
    label: str
    width: int
    priority: int = 0
    show: Callable[[Any], Cell] = str
    order: Callable[[Any], Any] = by_value
    #: the row fields the column's value is made of (default: the field named ``key``; several
    #: give a tuple)
    fields: tuple[str, ...] = ()
    value: Callable[[R], Any] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "value", attrgetter(*(self.fields or (self.key,))))


class RowSource(Protocol):
    """What a :class:`Live` cell reads its row from (a table)."""

    rows_by_key: Mapping[str, Any]


class Live:
    """One table cell: the row key and the column, nothing else. Its value is read from the
    table's current rows when the cell is drawn (``__rich__``), printed (``str``) or sorted
    (:attr:`value`), so a refresh only swaps the table's rows and redraws what is on screen:
    a cell is made once, when its row first appears."""

    __slots__ = ("source", "key", "column")

    def __init__(self, source: RowSource, key: str, column: Column[Any]) -> None:
        self.source = source
        self.key = key
        self.column = column

    @property
    def value(self) -> Any:
        row = self.source.rows_by_key.get(self.key)
        return None if row is None else self.column.value(row)

    def cell(self) -> Cell:
        """What the column shows for this value (plain text or styled text)."""
        row = self.source.rows_by_key.get(self.key)
        return "" if row is None else self.column.show(self.column.value(row))

    def __rich__(self) -> Text:
        shown = self.cell()
        if isinstance(shown, Text):
            return shown
        # as DataTable shows a one-line string cell, but never read as markup
        return Text(shown, end="", no_wrap=True)

    def __str__(self) -> str:
        return plain(self.cell())

    def __repr__(self) -> str:
        return f"Live({self.key!r}, {self.column.key!r})"


def row_text(row: Any, columns: Sequence[Column[Any]]) -> str:
    """Every column's shown text of ``row``, space-separated (what the filter matches)."""
    return " ".join(plain(c.show(c.value(row))) for c in columns)


def filter_rows(rows: Mapping[str, R], pattern: str, columns: Sequence[Column[R]]) -> Mapping[str, R]:
    """Rows whose shown text matches the regex ``pattern``; a leading ``!`` keeps those that do
    not. A pattern that is not a valid regex matches as plain text."""
    if not pattern or pattern == "!":
        return rows  # as given: rows built on demand stay so
    invert = pattern.startswith("!")
    body = pattern[1:] if invert else pattern
    try:
        regex = re.compile(body, re.IGNORECASE)
    except re.error:
        regex = re.compile(re.escape(body), re.IGNORECASE)
    return {key: row for key, row in rows.items() if bool(regex.search(row_text(row, columns))) != invert}


# -- how values are shown ---------------------------------------------------------------------


def count_or_dash(value: int | None) -> str:
    return "-" if value is None else str(value)


def show_reported(value: Reported) -> str:
    """A queue's number: ``unknown`` when it could not be read, ``-`` when there is none yet."""
    if value is None:
        return UNKNOWN
    return "-" if value is NOT_YET else str(value)


def reported_order(value: Reported) -> tuple[int, Any]:
    return by_value(None if value is NOT_YET else value)


def show_age(value: Reported) -> str:
    return human_age(None if value is NOT_YET else value)


def show_group_lag(lag: GroupLag) -> Cell:
    if lag.unreadable:
        return "-"
    if lag.unknown_queues and lag.known_queues == 0:
        return UNKNOWN
    # some queues' lag is unknown: the known total is a lower bound
    return f"≥{lag.total}" if lag.unknown_queues else str(lag.total)


def show_tps(value: tuple[float | None, str | None]) -> Cell:
    tps, error = value
    if error is not None:  # the group could not be read: why
        return Text(error, style="red")
    return "-" if tps is None else f"{tps:.1f}"


def show_owner(owner: Owner) -> Cell:
    text = owner.holders[0] if len(owner.holders) == 1 else (", ".join(owner.holders) or "(nobody)")
    return Text(text, style="reverse bold") if owner.lit else text


def owner_order(owner: Owner) -> tuple[int, Any]:
    return by_value(", ".join(owner.holders) if owner.holders else None)


def show_trend(values: tuple[int, ...]) -> str:
    return sparkline(values) if values else ""


def trend_order(values: tuple[int, ...]) -> tuple[int, Any]:
    return by_value(values[-1] if values else None)


IDLE_TEXT = Text("idle", style="yellow")


def show_idle(idle: bool) -> Cell:
    return IDLE_TEXT if idle else ""


def show_subscriptions(subs: tuple[Subscription, ...]) -> str:
    return "; ".join(f"{s.topic}={s.expression}" for s in subs) or "?"


def show_conflicts(conflicts: tuple[tuple[str, str], ...]) -> Cell:
    if not conflicts:
        return ""
    return Text("; ".join(f"{topic}: broker has {stored!r}" for topic, stored in conflicts), style="bold red")


def show_held(queues: tuple[MessageQueue, ...]) -> str:
    return " ".join(f"{q.topic}@{q.broker_name}/{q.queue_id}" for q in queues)


def show_queue_ids(queues: tuple[MessageQueue, ...]) -> str:
    return " ".join(f"{q.broker_name}/{q.queue_id}" for q in queues)


def show_change(change: str) -> Cell:
    return Text(change, style="bold yellow") if change else ""


def by_shown(show: Callable[[Any], Cell]) -> Callable[[Any], tuple[int, Any]]:
    """Sort a value that has no order of its own (subscriptions, queue lists) by its text."""
    return lambda value: by_value(plain(show(value)))


# -- the tables -------------------------------------------------------------------------------

GROUP_COLUMNS: list[Column[GroupRow]] = [
    Column("group", "GROUP", 36), Column("health", "HEALTH", 10, show=HEALTH_TEXT.__getitem__),
    Column("clients", "CLIENTS", 7, show=count_or_dash), Column("queues", "QUEUES", 6, show=count_or_dash),
    Column("lag", "LAG", 9, show=show_group_lag, order=lambda lag: by_value(lag.sort_value)),
    Column("trend", "TREND", 12, 2, show=show_trend, order=trend_order),
    Column("tps", "TPS", 8, 1, show=show_tps, order=lambda v: by_value(v[0]), fields=("tps", "error")),
]
QUEUE_COLUMNS: list[Column[QueueRow]] = [
    Column("topic", "TOPIC", 16), Column("broker", "BROKER", 10, 1), Column("queue", "Q", 3, fields=("queue_id",)),
    Column("owner", "OWNER", 28, show=show_owner, order=owner_order),
    Column("broker_offset", "BROKER_OFF", 10, 4, show=show_reported, order=reported_order),
    Column("consumer_offset", "CONSUMER_OFF", 12, 4, show=show_reported, order=reported_order),
    Column("lag", "LAG", 7, show=show_reported, order=reported_order),
    Column("inflight", "INFLIGHT", 8, 3, show=show_reported, order=reported_order),
    Column("age", "AGE", 5, 2, show=show_age, order=reported_order, fields=("age_ms",)),
    Column("trend", "TREND", 12, 5, show=show_trend, order=trend_order),
    Column("status", "STATUS", 10, show=STATUS_TEXT.__getitem__),
]
CLIENT_COLUMNS: list[Column[ClientRow]] = [
    Column("client", "CLIENT", 30), Column("count", "QUEUES", 6, fields=("queue_count",)),
    Column("subs", "SUBSCRIPTIONS", 22, show=show_subscriptions, order=by_shown(show_subscriptions),
           fields=("subscriptions",)),
    Column("idle", "IDLE", 4, show=show_idle),
    Column("conflict", "CONFLICT", 24, 1, show=show_conflicts, order=by_shown(show_conflicts), fields=("conflicts",)),
    Column("held", "HELD", 0, 2, show=show_held, order=lambda qs: by_value(len(qs))),
]
FINDING_COLUMNS: list[Column[FindingRow]] = [
    Column("severity", "SEVERITY", 8, show=lambda s: Text(s, style=HEALTH_STYLE.get(s, ""))),
    Column("code", "CODE", 26), Column("title", "TITLE", 0),
]
WHATIF_COLUMNS: list[Column[WhatIfRow]] = [
    Column("client", "CLIENT", 30), Column("live_n", "LIVE", 4, fields=("live_count",)),
    Column("live", "LIVE QUEUES", 24, 1, show=show_queue_ids, order=by_shown(show_queue_ids)),
    Column("sim_n", "SIM", 4, fields=("simulated_count",)),
    Column("sim", "SIMULATED QUEUES", 24, 1, show=show_queue_ids, order=by_shown(show_queue_ids),
           fields=("simulated",)),
    Column("change", "CHANGE", 10, show=show_change),
]
