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

from rich.box import SIMPLE_HEAD
from rich.console import Group
from rich.table import Table
from rich.text import Text

from rmqctl.model import Finding, MessageQueue, Subscription
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
    narrow), how a value is shown and how it sorts, and how narrow it may be squeezed."""

    key: str
    label: str
    width: int
    priority: int = 0
    show: Callable[[Any], Cell] = str
    order: Callable[[Any], Any] = by_value
    #: the row fields the column's value is made of (default: the field named ``key``; several
    #: give a tuple)
    fields: tuple[str, ...] = ()
    #: the narrowest the column may be squeezed to when the terminal is narrow (``0``: its width;
    #: text longer than the column is elided in the middle, the full value is in the detail pane)
    min_width: int = 0
    value: Callable[[R], Any] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "value", attrgetter(*(self.fields or (self.key,))))


class RowSource(Protocol):
    """What a :class:`Live` cell reads its row from (a table), and each column's drawn width."""

    @property
    def rows_by_key(self) -> Mapping[str, Any]: ...

    @property
    def widths(self) -> Mapping[str, int]: ...


def elide_middle(text: str, width: int) -> str:
    """``text`` in ``width`` cells, with its middle replaced by ``…`` when it is longer (both
    ends of an id or a name are what tells it from its neighbours)."""
    if width <= 0 or len(text) <= width:
        return text
    if width == 1:
        return "…"
    keep = width - 1
    head = (keep + 1) // 2
    tail = keep - head
    return text[:head] + "…" + (text[-tail:] if tail else "")


def fit(shown: Cell, width: int) -> Cell:
    """A cell's text elided in the middle to ``width`` cells (keeping its style)."""
    text = plain(shown)
    if width <= 0 or len(text) <= width:
        return shown
    short = elide_middle(text, width)
    return Text(short, style=shown.style) if isinstance(shown, Text) else short


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
        if self.column.min_width:  # a column that may be squeezed: elide in the middle
            shown = fit(shown, self.source.widths.get(self.column.key, 0))
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
    if (lag.unknown_queues or lag.unread_part) and lag.known_queues == 0:
        return UNKNOWN
    # some queues' lag is unknown or not read: the known total is a lower bound
    return f"≥{lag.total}" if lag.unknown_queues or lag.unread_part else str(lag.total)


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
    Column("group", "GROUP", 36, min_width=16), Column("health", "HEALTH", 10, show=HEALTH_TEXT.__getitem__),
    Column("clients", "CLIENTS", 7, show=count_or_dash), Column("queues", "QUEUES", 6, show=count_or_dash),
    Column("lag", "LAG", 9, show=show_group_lag, order=lambda lag: by_value(lag.sort_value)),
    Column("trend", "TREND", 12, 2, show=show_trend, order=trend_order),
    Column("tps", "TPS", 8, 1, show=show_tps, order=lambda v: by_value(v[0]), fields=("tps", "error")),
]
#: the broker column goes first when the group's queues are on one broker (its name tells no
#: row from another); with several brokers the screen keeps it (see ``KeyedTable.keep``)
QUEUE_COLUMNS: list[Column[QueueRow]] = [
    Column("topic", "TOPIC", 16, min_width=10), Column("broker", "BROKER", 10, 6, min_width=8),
    Column("queue", "Q", 3, fields=("queue_id",)),
    Column("owner", "OWNER", 28, show=show_owner, order=owner_order, min_width=12),
    Column("broker_offset", "BROKER_OFF", 10, 4, show=show_reported, order=reported_order),
    Column("consumer_offset", "CONSUMER_OFF", 12, 4, show=show_reported, order=reported_order),
    Column("lag", "LAG", 7, show=show_reported, order=reported_order),
    Column("inflight", "INFLIGHT", 8, 3, show=show_reported, order=reported_order),
    Column("age", "AGE", 5, 2, show=show_age, order=reported_order, fields=("age_ms",)),
    Column("trend", "TREND", 12, 5, show=show_trend, order=trend_order),
    Column("status", "STATUS", 10, show=STATUS_TEXT.__getitem__),
]
CLIENT_COLUMNS: list[Column[ClientRow]] = [
    Column("client", "CLIENT", 30, min_width=14), Column("count", "QUEUES", 6, fields=("queue_count",)),
    Column("subs", "SUBSCRIPTIONS", 22, show=show_subscriptions, order=by_shown(show_subscriptions),
           fields=("subscriptions",), min_width=12),
    Column("idle", "IDLE", 4, show=show_idle),
    Column("conflict", "CONFLICT", 34, show=show_conflicts, order=by_shown(show_conflicts), fields=("conflicts",),
           min_width=16),
    Column("held", "HELD", 0, 2, show=show_held, order=lambda qs: by_value(len(qs)), min_width=12),
]
FINDING_COLUMNS: list[Column[FindingRow]] = [
    Column("severity", "SEVERITY", 8, show=lambda s: Text(s, style=HEALTH_STYLE.get(s, ""))),
    # codes are never cut: the longest, BROKER_SUBSCRIPTION_DIVERGENCE, is 30 characters
    Column("code", "CODE", 30), Column("title", "TITLE", 0, min_width=12),
]
WHATIF_COLUMNS: list[Column[WhatIfRow]] = [
    Column("client", "CLIENT", 30, min_width=14), Column("live_n", "LIVE", 4, fields=("live_count",)),
    Column("live", "LIVE QUEUES", 24, 1, show=show_queue_ids, order=by_shown(show_queue_ids), min_width=12),
    Column("sim_n", "SIM", 4, fields=("simulated_count",)),
    Column("sim", "SIMULATED QUEUES", 24, 1, show=show_queue_ids, order=by_shown(show_queue_ids),
           fields=("simulated",), min_width=12),
    Column("change", "CHANGE", 10, show=show_change),
]


# -- the detail pane: a row's every value in full ---------------------------------------------


def describe_queue(row: QueueRow) -> str:
    """The row under the cursor of queue → owner, nothing elided."""
    owner = ", ".join(row.owner.holders) or "nobody"
    return (f"{row.topic} · {row.broker} · queue {row.queue_id} │ owner {owner} │ "
            f"broker offset {show_reported(row.broker_offset)} · consumer offset {show_reported(row.consumer_offset)}"
            f" · lag {show_reported(row.lag)} · inflight {show_reported(row.inflight)}"
            f" · last consumed {show_age(row.age_ms)} ago │ {row.status}")


def describe_client(row: ClientRow) -> str:
    """The row under the cursor of client → queues, nothing elided."""
    parts = [f"{row.client} │ {row.queue_count} queue{'s' if row.queue_count != 1 else ''}"
             + (" (idle)" if row.idle else ""), f"subscribes {show_subscriptions(row.subscriptions)}"]
    if row.conflicts:
        parts.append("conflict: " + plain(show_conflicts(row.conflicts)))
    if row.held:
        parts.append("holds " + show_held(row.held))
    return " │ ".join(parts)


# -- a finding in words and tables (never its JSON) -------------------------------------------

#: evidence fields that name queues: one row per queue
_QUEUE_FIELDS = ("topic", "broker", "queue_id")


def _words(key: str) -> str:
    return key.replace("_", " ")


def _flat(value: Any) -> str:
    """A value as a short phrase: lists joined, mappings as ``key=value``."""
    if value is None:
        return "unknown"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={_flat(v)}" for k, v in value.items()) or "none"
    if isinstance(value, (list, tuple, set, frozenset)):
        return ", ".join(_flat(v) for v in value) or "none"
    return str(value)


def _is_queue_list(value: Any) -> bool:
    return (isinstance(value, (list, tuple)) and bool(value)
            and all(isinstance(v, Mapping) and all(k in v for k in _QUEUE_FIELDS) for v in value))


def _queue_table(queues: Sequence[Mapping[str, Any]]) -> Table:
    extra = [k for k in dict.fromkeys(k for q in queues for k in q) if k not in _QUEUE_FIELDS]
    table = Table(box=SIMPLE_HEAD, expand=False, show_edge=False, pad_edge=False)
    for name in ("TOPIC", "BROKER", "Q", *(_words(k).upper() for k in extra)):
        table.add_column(name, overflow="fold")
    for q in queues:
        table.add_row(str(q["topic"]), str(q["broker"]), str(q["queue_id"]), *(_flat(q.get(k)) for k in extra))
    return table


def _pairs_table(pairs: Mapping[str, Any]) -> Table:
    table = Table(box=None, show_header=False, show_edge=False, pad_edge=False)
    table.add_column(overflow="fold")
    table.add_column(overflow="fold")
    for name, value in pairs.items():
        table.add_row(str(name), _flat(value))
    return table


def describe_finding(finding: Finding) -> Group:
    """Code, severity and title; the impact in words; the affected queues and clients as
    tables; the other evidence as short phrases; the fix."""
    parts: list[Any] = [
        Text.assemble((f"{finding.code}", "bold"), " · ", (finding.severity, HEALTH_STYLE.get(finding.severity, ""))),
        Text(finding.title, style="bold"), Text(""),
        Text("Impact", style="bold underline"), Text(finding.detail), Text(""),
    ]
    phrases: list[tuple[str, str]] = []
    for key, value in finding.evidence.items():
        if _is_queue_list(value):
            parts += [Text(_words(key).capitalize(), style="bold"), _queue_table(value)]
        elif isinstance(value, Mapping) and value:
            # one line per entry (per client, per broker, per tag); nested ones as key=value
            parts += [Text(_words(key).capitalize(), style="bold"), _pairs_table(value), Text("")]
        else:
            phrases.append((_words(key), _flat(value)))
    if phrases:
        parts += [Text("Evidence", style="bold"), _pairs_table(dict(phrases))]
    parts += [Text(""), Text("Fix", style="bold underline"), Text(finding.fix)]
    return Group(*parts)
