"""Widgets of the dashboard: a DataTable of typed rows kept in step by row key, the status line,
the timeline.

:class:`KeyedTable` is the one way rows reach the screen: :meth:`KeyedTable.sync` removes rows
whose key is gone and adds new rows, swaps in the new rows and redraws what is on screen, then
puts the cursor back on the row it was on — so cursor, sort and filter survive every refresh.
Cells name their row and column and read the value when they are drawn or sorted
(:class:`~tui.columns.Live`), so a refresh costs what is on screen, not what the group holds.
Columns carry a priority: when the terminal is narrow the least important ones are dropped first.
:class:`StatusLine` watches the app's ``status``.

Imports textual, rich and tui.columns; reads nothing from a cluster, never imports tui.app.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any, Generic, NamedTuple, TypeVar

from rich.text import Text
from textual.binding import Binding
from textual.events import Key, Resize
from textual.widgets import DataTable, RichLog, Select, Static

from tui.columns import Column, Live
from tui.keys import DEFAULT_KEYS

R = TypeVar("R", bound=tuple[Any, ...])


#: the narrowest a column that takes what is left (width 0) is given
FLEX_MIN = 12
#: cells a table keeps free of columns
MARGIN = 1


def visible_columns(columns: Sequence[Column[Any]], width: int,
                    keep: Collection[str] = ()) -> list[Column[Any]]:
    """The columns that fit in ``width`` cells, dropping the highest priorities first, never a
    column of priority 0 or one named in ``keep`` (when those do not fit, :func:`column_widths`
    squeezes them)."""
    chosen = list(columns)

    def needed(cols: Sequence[Column[Any]]) -> int:
        return sum((c.width or FLEX_MIN) + 2 for c in cols)

    for priority in sorted({c.priority for c in columns if c.priority > 0}, reverse=True):
        if needed(chosen) <= width - MARGIN:
            break
        chosen = [c for c in chosen if c.priority != priority or c.key in keep]
    return chosen


def column_widths(columns: Sequence[Column[Any]], width: int) -> dict[str, int]:
    """Each column's width in ``width`` cells: its own, squeezed toward its narrowest (the
    most squeezable first, in proportion) when they do not all fit; a column of width 0 takes
    what is left."""
    widths = {c.key: c.width or FLEX_MIN for c in columns}
    room = width - MARGIN - 2 * len(columns)
    over = sum(widths.values()) - room
    slack = {c.key: widths[c.key] - c.min_width for c in columns if c.min_width and c.width > c.min_width}
    total = sum(slack.values())
    if over > 0 and total:
        cut = min(over, total)
        given = 0
        for n, (key, room_to_give) in enumerate(sorted(slack.items(), key=lambda kv: -kv[1])):
            share = cut - given if n == len(slack) - 1 else min(room_to_give, round(cut * room_to_give / total))
            widths[key] -= share
            given += share
    flex = [c.key for c in columns if not c.width]
    if flex:
        left = room - sum(w for k, w in widths.items() if k not in flex)
        for key in flex:
            widths[key] = max(FLEX_MIN, left // len(flex))
    return widths


class KeyedTable(DataTable[Live], Generic[R]):
    """A DataTable of typed rows kept by row key, with priority-dropped columns and a sort that
    sticks. A cell is a :class:`~tui.columns.Live`: the row key and the column; it reads its
    value from :attr:`rows_by_key` when drawn, so a refresh that keeps the set of rows only swaps
    the rows and redraws what is on screen, whatever the number of rows (rows may be built on
    demand, as :class:`~tui.state.QueueRows` are)."""

    BINDINGS = [
        Binding(DEFAULT_KEYS["down"], "cursor_down", "Down", show=False, id="down"),
        Binding(DEFAULT_KEYS["up"], "cursor_up", "Up", show=False, id="up"),
    ]

    def __init__(self, columns: Sequence[Column[R]], *, id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self.all_columns = list(columns)
        self.shown: list[Column[R]] = []
        #: the rows the table shows, by key, as given to :meth:`sync`
        self.rows_by_key: Mapping[str, R] = {}
        self.sort_column: str | None = None
        self.sort_reverse = False
        self.cursor_key: str | None = None
        #: column key → the width it is drawn at (long text is elided in the middle to it)
        self.widths: dict[str, int] = {}
        #: columns never dropped, whatever their priority (the broker of a group on several)
        self.keep: frozenset[str] = frozenset()

    def on_mount(self) -> None:
        self._layout_columns(self.size.width or 80)

    def on_resize(self, event: Resize) -> None:
        self._layout_columns(event.size.width)

    def keep_columns(self, keys: Collection[str]) -> None:
        """Never drop these columns (and lay the table out again when that changes)."""
        wanted = frozenset(keys)
        if wanted != self.keep:
            self.keep = wanted
            if self.is_mounted:
                self._layout_columns(self.size.width or 80)

    def _layout_columns(self, width: int) -> None:
        wanted = visible_columns(self.all_columns, width, self.keep)
        self.widths = column_widths(wanted, width)
        if [c.key for c in wanted] == [c.key for c in self.shown] and self.columns:
            self._fit_widths()
            return
        keep = self.current_key()
        self.clear(columns=True)
        self.shown = wanted
        for col in wanted:
            self.add_column(self.label_of(col), key=col.key, width=self.widths[col.key])
        rows, self.rows_by_key = self.rows_by_key, {}
        self.sync(rows, cursor=keep)

    def _fit_widths(self) -> None:
        column_keys = {key.value: key for key in self.columns}
        for col in self.shown:
            key = column_keys.get(col.key)
            if key is not None and self.columns[key].width != self.widths[col.key]:
                self.columns[key].width = self.widths[col.key]
                self._require_update_dimensions = True
        self._clear_caches()
        self.refresh()

    def _update_column_widths(self, updated_cells: set[Any]) -> None:
        # Every column is given its width, so there is nothing to measure; measuring would draw
        # every new cell of every row (all 10,000 of a large group) just to throw it away.
        if any(column.auto_width for column in self.columns.values()):
            super()._update_column_widths(updated_cells)

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
        """Make the table show ``rows`` (key → typed row): rows whose key is gone are removed,
        new keys added (in the order of ``rows``, or by the sort), and what is on screen is
        redrawn from the new rows. When ``rows`` says its keys are the ones shown (the same
        ``key_token``), nothing is compared at all."""
        keep = cursor if cursor is not None else self.current_key()
        old = self.rows_by_key
        token = getattr(rows, "key_token", None)
        same_keys = token is not None and token is getattr(old, "key_token", None) and self.row_count == len(rows)
        added = False
        if not same_keys:
            for gone in [k for k in old if k not in rows]:
                self.remove_row(gone)
            shown = self.shown
            for key in rows:
                if key not in old:
                    self.add_row(*(Live(self, key, col) for col in shown), key=key)
                    added = True
        self.rows_by_key = rows
        if self.sort_column is not None:
            self._apply_sort()
        elif added:
            self._apply_key_order()
        self._redraw_cells()
        if keep is not None and keep in self.rows_by_key:
            self.move_cursor(row=self.get_row_index(keep), animate=False, scroll=False)
        self.cursor_key = self.current_key()

    def _redraw_cells(self) -> None:
        """Every cell reads the new rows: drop what was drawn from the old ones, and redraw.

        Only the caches of drawn cells and lines are cleared: DataTable keys its row order and
        row offsets on its update count too, and recomputes both over every row when it moves,
        which for 10,000 rows would cost more than drawing the screen."""
        caches = [getattr(self, name, None) for name in
                  ("_row_render_cache", "_cell_render_cache", "_row_renderable_cache", "_line_cache")]
        if any(cache is None for cache in caches):
            self._update_count += 1
        else:
            for cache in caches:
                cache.clear()  # type: ignore[union-attr]
        self.refresh()

    def _apply_key_order(self) -> None:
        # New rows land at the bottom; put every row where the rows put it (their own order:
        # groups by name, queues by topic, broker and queue id).
        position = {key: n for n, key in enumerate(self.rows_by_key)}
        self.sort(key=lambda cells: position.get(cells[0].key, 0))

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
