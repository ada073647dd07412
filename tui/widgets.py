"""Widgets of the dashboard: a DataTable of typed rows kept in step by row key, the status line,
the timeline.

:class:`KeyedTable` is the one way rows reach the screen: :meth:`KeyedTable.sync` removes rows
whose key is gone, updates only the cells whose value changed and adds new rows, then puts the
cursor back on the row it was on — so cursor, sort and filter survive every refresh. Cells keep
the row's values and sort by them; :mod:`tui.columns` turns them into text when they are drawn.
Columns carry a priority: when the terminal is narrow the least important ones are dropped first.
:class:`StatusLine` watches the app's ``status``.

Imports textual, rich and tui.columns; reads nothing from a cluster, never imports tui.app.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Generic, NamedTuple, TypeVar

from rich.text import Text
from textual.binding import Binding
from textual.events import Key, Resize
from textual.widgets import DataTable, RichLog, Select, Static
from textual.widgets.data_table import ColumnKey, RowKey

from tui.columns import Column, Shown
from tui.keys import DEFAULT_KEYS

R = TypeVar("R", bound=tuple[Any, ...])


def visible_columns(columns: Sequence[Column[Any]], width: int) -> list[Column[Any]]:
    """The columns that fit in ``width`` cells, dropping the highest priorities first."""
    chosen = list(columns)
    flex_min = 12

    def needed(cols: Sequence[Column[Any]]) -> int:
        return sum((c.width or flex_min) + 2 for c in cols)

    for priority in sorted({c.priority for c in columns if c.priority > 0}, reverse=True):
        if needed(chosen) <= width:
            break
        chosen = [c for c in chosen if c.priority != priority]
    return chosen


class KeyedTable(DataTable[Shown], Generic[R]):
    """A DataTable of typed rows updated by row key, with priority-dropped columns and a sort
    that sticks. Cells hold each row's values (:class:`~tui.columns.Shown`); they become text
    only when drawn, and sorting compares the values."""

    BINDINGS = [
        Binding(DEFAULT_KEYS["down"], "cursor_down", "Down", show=False, id="down"),
        Binding(DEFAULT_KEYS["up"], "cursor_up", "Up", show=False, id="up"),
    ]

    def __init__(self, columns: Sequence[Column[R]], *, id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self.all_columns = list(columns)
        self.shown: list[Column[R]] = []
        #: the rows the table shows, by key, as given to :meth:`sync`
        self.rows_by_key: dict[str, R] = {}
        self.sort_column: str | None = None
        self.sort_reverse = False
        self.cursor_key: str | None = None
        #: the table's own key object of each row (see :meth:`_write_changes`)
        self._row_keys: dict[str, RowKey] = {}

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
        self._row_keys = {}
        self.shown = wanted
        fixed = sum(c.width + 2 for c in wanted if c.width)
        for col in wanted:
            self.add_column(self.label_of(col), key=col.key, width=col.width or max(12, width - fixed - 3))
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

    def current_key(self) -> str | None:
        """The key of the row under the cursor."""
        if not self.row_count:
            return None
        try:
            key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
        except Exception:  # noqa: BLE001 - an out-of-range cursor just means "no row"
            return None
        return key

    def current_row(self) -> R | None:
        """The typed row under the cursor."""
        key = self.current_key()
        return self.rows_by_key.get(key) if key is not None else None

    def sync(self, rows: Mapping[str, R], *, cursor: str | None = None) -> None:
        """Make the table show ``rows`` (key → typed row) with the fewest changes: a row equal to
        the one shown is left alone, and of a changed row only the cells whose value changed are
        written."""
        keep = cursor if cursor is not None else self.current_key()
        shown = self.shown
        old = self.rows_by_key
        for gone in [k for k in old if k not in rows]:
            self.remove_row(gone)
            self._row_keys.pop(gone, None)
        added = False
        changed: list[tuple[str, R, R]] = []
        for key, row in rows.items():
            before = old.get(key)
            if before is None:
                self._row_keys[key] = self.add_row(*(Shown((col.value(row), col)) for col in shown), key=key)
                added = True
            elif before is not row and before != row:
                changed.append((key, row, before))
        if changed:
            self._write_changes(changed)
        self.rows_by_key = dict(rows)
        if self.sort_column is not None and (added or changed):
            self._apply_sort()
        elif added and self.sort_column is None:
            self._apply_key_order()
        if keep is not None and keep in self.rows_by_key:
            self.move_cursor(row=self.get_row_index(keep), animate=False, scroll=False)
        self.cursor_key = self.current_key()

    def _write_changes(self, changed: list[tuple[str, R, R]]) -> None:
        """Write the cells whose value changed, and redraw once.

        ``update_cell`` marks the widget dirty on every call, which is most of the cost of a
        refresh of 10,000 rows; for many rows this does what it does (store the value, bump the
        update count that keys the row render cache) for every cell, then refreshes once. A
        column whose value is one field of the row is compared by index (a refresh compares
        every cell of every changed row); the table's own key objects are used, so the row
        dicts find them by identity without calling their (Python) ``__eq__``.
        """
        fields: tuple[str, ...] = getattr(type(changed[0][1]), "_fields", ())
        column_keys = {key.value: key for key in self.columns}
        single: list[tuple[ColumnKey, Column[R], int]] = []
        several: list[tuple[ColumnKey, Column[R]]] = []
        for col in self.shown:
            names = col.fields or (col.key,)
            ckey = column_keys.get(col.key) or ColumnKey(col.key)
            if len(names) == 1 and names[0] in fields:
                single.append((ckey, col, fields.index(names[0])))
            else:
                several.append((ckey, col))
        data: dict[RowKey, dict[ColumnKey, Shown]] | None = getattr(self, "_data", None)
        if data is None or not hasattr(self, "_update_count") or len(changed) < 32:
            for key, row, before in changed:
                for ckey, col, i in single:
                    if row[i] != before[i]:
                        self.update_cell(key, ckey, Shown((row[i], col)))
                for ckey, col in several:
                    if col.value(row) != col.value(before):
                        self.update_cell(key, ckey, Shown((col.value(row), col)))
            return
        own = self._row_keys
        for key, row, before in changed:
            cells = data[own.get(key) or RowKey(key)]
            for ckey, col, i in single:
                value = row[i]
                if value != before[i]:
                    cells[ckey] = Shown((value, col))
            for ckey, col in several:
                value = col.value(row)
                if value != col.value(before):
                    cells[ckey] = Shown((value, col))
        self._update_count += 1
        self.refresh()

    def _apply_key_order(self) -> None:
        # New rows land at the bottom; put them where they belong: by every visible value in
        # turn (topic, broker, queue id sort naturally).
        orders = [c.order for c in self.shown]
        self.sort(key=lambda cells: tuple(order(cell.value) for order, cell in zip(orders, cells, strict=True)))

    def label_of(self, col: Column[Any]) -> Text:
        """A column's header: its label, and ▲ or ▼ on the column the rows are sorted by."""
        if col.key != self.sort_column:
            return Text(col.label)
        return Text(col.label + ("▼" if self.sort_reverse else "▲"), style="bold")

    def sort_by(self, column: str) -> None:
        """Sort by ``column``; the same column again reverses the order."""
        if self.sort_column == column:
            self.sort_reverse = not self.sort_reverse
        else:
            self.sort_column, self.sort_reverse = column, False
        column_keys = {key.value: key for key in self.columns}
        for col in self.shown:
            key = column_keys.get(col.key)
            if key is not None:
                self.columns[key].label = self.label_of(col)
        self._clear_caches()
        self.refresh()
        keep = self.current_key()
        self._apply_sort()
        if keep is not None:
            self.move_cursor(row=self.get_row_index(keep), animate=False)

    def _apply_sort(self) -> None:
        column = next((c for c in self.shown if c.key == self.sort_column), None)
        if column is None:
            return
        order = column.order
        self.sort(column.key, key=lambda cell: order(cell.value), reverse=self.sort_reverse)


class FieldSelect(Select[str]):
    """A form's drop-down that keeps the letters typed on it: while it has focus a printable key
    never reaches the app's one-letter bindings (``e`` would open the emulator controls)."""

    async def _on_key(self, event: Key) -> None:
        if event.is_printable and event.key != "space":
            event.stop()
            event.prevent_default()
            return
        await super()._on_key(event)


class Status(NamedTuple):
    """What the status line says, and whether it reports an error."""

    text: str = ""
    error: bool = False


class StatusLine(Static):
    """Source, last update, pause and errors, on one line: it shows the app's ``status``, which
    it watches."""

    def on_mount(self) -> None:
        self.watch(self.app, "status", self._show)

    def _show(self, status: Status) -> None:
        self.update(status.text)
        self.set_class(status.error, "-error")


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
