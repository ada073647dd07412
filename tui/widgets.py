"""Widgets of the dashboard: a DataTable kept in step by row key, the status line, the timeline.

:class:`KeyedTable` is the one way rows reach the screen: :meth:`KeyedTable.sync` removes rows
whose key is gone, updates only the cells that changed and adds new rows, then puts the cursor
back on the row it was on — so cursor, sort and filter survive every refresh. Columns carry a
priority: when the terminal is narrow the least important ones are dropped first.

Imports textual and rich; reads nothing from a cluster.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rich.text import Text
from textual.binding import Binding
from textual.events import Resize
from textual.widgets import DataTable, RichLog, Static
from textual.widgets.data_table import ColumnKey, RowKey

from tui.keys import DEFAULT_KEYS
from tui.state import Cell, Row


@dataclass(frozen=True, slots=True)
class Column:
    """A table column: its key, header, width (``0``: takes what is left) and priority
    (``0`` is never dropped; higher numbers are dropped first when the table is narrow)."""

    key: str
    label: str
    width: int
    priority: int = 0


def _plain(cell: Cell) -> str:
    return cell.plain if isinstance(cell, Text) else cell


def _sort_value(cell: Cell) -> tuple[int, float | str]:
    text = _plain(cell)
    try:
        return (0, float(text))
    except ValueError:
        return (1, text.lower())


def visible_columns(columns: Sequence[Column], width: int) -> list[Column]:
    """The columns that fit in ``width`` cells, dropping the highest priorities first."""
    chosen = list(columns)
    flex_min = 12

    def needed(cols: Sequence[Column]) -> int:
        return sum((c.width or flex_min) + 2 for c in cols)

    for priority in sorted({c.priority for c in columns if c.priority > 0}, reverse=True):
        if needed(chosen) <= width:
            break
        chosen = [c for c in chosen if c.priority != priority]
    return chosen


class KeyedTable(DataTable[Cell]):
    """A DataTable updated by row key, with priority-dropped columns and a sort that sticks."""

    BINDINGS = [
        Binding(DEFAULT_KEYS["down"], "cursor_down", "Down", show=False, id="down"),
        Binding(DEFAULT_KEYS["up"], "cursor_up", "Up", show=False, id="up"),
    ]

    def __init__(self, columns: Sequence[Column], *, id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self.all_columns = list(columns)
        self.shown: list[Column] = []
        self.rows_by_key: dict[str, Row] = {}
        self.sort_column: str | None = None
        self.sort_reverse = False
        self.cursor_key: str | None = None

    def on_mount(self) -> None:
        self._layout_columns(self.size.width or 80)

    def on_resize(self, event: Resize) -> None:
        self._layout_columns(event.size.width)

    def _layout_columns(self, width: int) -> None:
        wanted = visible_columns(self.all_columns, width)
        if [c.key for c in wanted] == [c.key for c in self.shown] and self.columns:
            self._fit_flex(width)
            return
        keep = self.current_key()
        self.clear(columns=True)
        self.shown = wanted
        fixed = sum(c.width + 2 for c in wanted if c.width)
        for col in wanted:
            self.add_column(col.label, key=col.key, width=col.width or max(12, width - fixed - 3))
        rows, self.rows_by_key = self.rows_by_key, {}
        self.sync(rows, cursor=keep)

    def _fit_flex(self, width: int) -> None:
        fixed = sum(c.width + 2 for c in self.shown if c.width)
        for col in self.shown:
            if not col.width:
                column = self.columns.get(col.key)  # type: ignore[call-overload]
                if column is not None:
                    column.width = max(12, width - fixed - 3)
                    self.refresh()

    def _indexes(self) -> list[int]:
        keys = [c.key for c in self.all_columns]
        return [keys.index(c.key) for c in self.shown]

    def current_key(self) -> str | None:
        """The key of the row under the cursor."""
        if not self.row_count:
            return None
        try:
            key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
        except Exception:  # noqa: BLE001 - an out-of-range cursor just means "no row"
            return None
        return key

    def sync(self, rows: Mapping[str, Row], *, cursor: str | None = None) -> None:
        """Make the table show ``rows`` (key → every column's cell) with the fewest changes."""
        keep = cursor if cursor is not None else self.current_key()
        indexes = self._indexes()
        keys = [c.key for c in self.shown]
        old = self.rows_by_key
        changed: list[tuple[str, list[tuple[str, Cell]]]] = []
        for gone in [k for k in old if k not in rows]:
            self.remove_row(gone)
        added = False
        for key, cells in rows.items():
            before = old.get(key)
            if before is None:
                self.add_row(*(cells[i] for i in indexes), key=key)
                added = True
            elif before != cells:
                changed.append((key, [(col, cells[i]) for col, i in zip(keys, indexes, strict=True)
                                     if before[i] is not cells[i] and before[i] != cells[i]]))
        self._set_cells(changed)
        self.rows_by_key = dict(rows)
        if self.sort_column is not None and (added or changed):
            self._apply_sort()
        elif added and self.sort_column is None:
            self._apply_key_order()
        if keep is not None and keep in self.rows_by_key:
            self.move_cursor(row=self.get_row_index(keep), animate=False, scroll=False)
        self.cursor_key = self.current_key()

    def _set_cells(self, changed: list[tuple[str, list[tuple[str, Cell]]]]) -> None:
        """Write many cells and redraw once.

        ``update_cell`` marks the widget dirty on every call, which is most of the cost of a
        refresh of 10,000 rows; this does what it does (store the value, bump the update count
        that keys the row render cache) for every cell, then refreshes once.
        """
        data = getattr(self, "_data", None)
        if data is None or not hasattr(self, "_update_count") or len(changed) < 32:
            for key, cells in changed:
                for col, value in cells:
                    self.update_cell(key, col, value)
            return
        columns = {c.key: ColumnKey(c.key) for c in self.shown}
        for key, cells in changed:
            row = data[RowKey(key)]
            for col, value in cells:
                row[columns[col]] = value
        self._update_count += 1
        self.refresh()

    def _apply_key_order(self) -> None:
        # New rows land at the bottom; put them where they belong (every visible cell, numbers
        # as numbers: topic, broker, queue id sort naturally).
        self.sort(key=lambda cells: tuple(_sort_value(c) for c in cells))

    def sort_by(self, column: str) -> None:
        """Sort by ``column``; the same column again reverses the order."""
        if self.sort_column == column:
            self.sort_reverse = not self.sort_reverse
        else:
            self.sort_column, self.sort_reverse = column, False
        keep = self.current_key()
        self._apply_sort()
        if keep is not None:
            self.move_cursor(row=self.get_row_index(keep), animate=False)

    def _apply_sort(self) -> None:
        if self.sort_column is None or self.sort_column not in [c.key for c in self.shown]:
            return
        self.sort(self.sort_column, key=_sort_value, reverse=self.sort_reverse)


class StatusLine(Static):
    """Source, last update, pause and errors, on one line."""


class Timeline(RichLog):
    """The rebalance timeline: one line per change, newest last."""

    def __init__(self, *, id: str | None = None, max_lines: int = 200) -> None:  # noqa: A002
        super().__init__(id=id, wrap=True, max_lines=max_lines)
        #: the entries written, unwrapped, newest last (bounded like the log)
        self.entries: list[str] = []
        self.limit = max_lines

    def add(self, line: str) -> None:
        self.entries = [*self.entries[-(self.limit - 1):], line]
        self.write(Text(line))

    def clear(self) -> Timeline:
        self.entries = []
        super().clear()
        return self
