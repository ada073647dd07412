"""The one renderer: every command hands it a :class:`View` and an output format.

stdout carries data only. ``json`` is the command's whole document (decided in
:mod:`rmqctl.report`); ``jsonl`` and ``csv`` are that document's rows (:class:`~rmqctl.report.RowSet`,
derived from the document, never from table rows): ``jsonl`` prints every row of every kind, one
JSON object a line with a ``kind`` field first; ``csv`` prints the rows of one kind (the command's
first kind, or ``--table KIND``). ``table`` is aligned text for people: it fits the terminal
(``COLUMNS`` or the TTY; a pipe gets the full width): it wraps the columns a table marks as
flexible first, then the others between words (headers after ``_``), and never cuts a number
or a header; columns that still do not fit are left out whole, and a line under the table says
which. It colours severities and states on a TTY unless ``NO_COLOR`` is set.
Notes, warnings and errors go to stderr, coloured only when stderr is a terminal.

Must not import textual, pyspark or rich (tables are drawn with plain escape codes, so that a
command's start-up does not pay for rich).
"""

from __future__ import annotations

import enum
import json
import os
import re
import shutil
import sys
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import field
from typing import TYPE_CHECKING, Any, TextIO

from rmqctl import errors
from rmqctl.records import dataclass

if TYPE_CHECKING:  # the model and the documents load with the command that renders them
    from rmqctl.report import RowSet


class OutputFormat(str, enum.Enum):
    table = "table"
    json = "json"
    jsonl = "jsonl"
    csv = "csv"


Column = str | tuple[str, str]


@dataclass
class Table:
    """Columns as keys (header: the key upper-cased, ``_ts`` dropped) or ``(key, header)``;
    rows as dicts keyed by column key. ``flexible`` names the columns that may wrap or truncate
    when the table is wider than the terminal, the first one giving way first."""

    columns: Sequence[Column]
    rows: Sequence[Mapping[str, Any]]
    title: str | None = None
    flexible: Sequence[str] = ()

    @property
    def keys(self) -> list[str]:
        return [c if isinstance(c, str) else c[0] for c in self.columns]

    @property
    def headers(self) -> list[str]:
        return [header_for(c) if isinstance(c, str) else c[1] for c in self.columns]


def header_for(key: str) -> str:
    """The table header of a document key: ``total_diff`` → ``TOTAL_DIFF``, ``last_consumed_ts`` →
    ``LAST_CONSUMED`` (timestamps are shown formatted)."""
    return key.removesuffix("_ts").upper()


@dataclass
class View:
    """What a command produced: the document, its rows for jsonl/csv, and the tables that show it."""

    document: Any
    tables: list[Table] = field(default_factory=list)
    footer: list[str] = field(default_factory=list)
    records: list[RowSet] = field(default_factory=list)


@dataclass(frozen=True)
class TableOptions:
    """How ``table`` output is drawn: ``--no-headers`` and ``--table`` (csv's row kind)."""

    no_headers: bool = False
    kind: str | None = None


#: cell texts that carry a state, and their colour on a terminal
STYLES = {
    "error": "bold red", "warning": "yellow", "info": "cyan",
    "DIFFERS": "yellow", "held twice": "bold red", "held by nobody": "red", "idle": "yellow",
    "OFFLINE": "dim", "unavailable": "dim", "false": "dim",
}


def cell(key: str, value: Any) -> str:
    """A value as a table shows it: ``-`` for nothing, timestamps formatted, lists comma-joined."""
    if value is None:
        return "-"
    if key.endswith("_ts") and isinstance(value, int) and not isinstance(value, bool):
        from rmqctl.model import format_millis

        return format_millis(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.2f}"
    if isinstance(value, (list, tuple)):
        return ",".join(cell("", v) for v in value) or "-"
    if isinstance(value, dict):
        return ",".join(f"{k}={cell('', v)}" for k, v in value.items()) or "-"
    return str(value)


def _terminal_width(stream: TextIO) -> int | None:
    """``COLUMNS`` when set, else the terminal's width; ``None`` (no limit) for a pipe or a file."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    if hasattr(stream, "isatty") and stream.isatty():
        return shutil.get_terminal_size().columns
    return None


def colour_wanted(stream: TextIO) -> bool:
    """Colour only on a terminal, and never when ``NO_COLOR`` is set (https://no-color.org)."""
    if os.environ.get("NO_COLOR"):
        return False
    return hasattr(stream, "isatty") and stream.isatty()


#: ANSI colours of the STYLES names (plain escape codes: drawing a table must not load rich)
_ANSI = {"bold red": "1;31", "red": "31", "yellow": "33", "cyan": "36", "dim": "2", "bold": "1"}
#: a flexible column never shrinks below this (or its natural width); a fixed one below 4
FLEX_MIN, FIXED_MIN, GAP = 10, 4, 2


def _narrowest(texts: Sequence[str], header: str) -> int:
    """The narrowest a fixed column can be without cutting anything: its longest word (a cell
    wraps between words, a header after ``_``)."""
    words = [len(w) for t in texts for w in t.split()] + [len(p) for p in re.split(r"(?<=_)", header)]
    return max([FIXED_MIN, *words])


def _fit(widths: list[int], flexible: list[bool], priority: list[int], floors: list[int],
         limit: int) -> tuple[list[int], list[int]]:
    """Fit the row in ``limit``: the flexible columns in ``priority`` order first (their cells
    wrap), then the fixed ones from the right, down to their ``floors`` (their cells wrap
    between words; nothing is cut); when that is not enough, whole columns are left out from
    the right (never the first). Returns the widths and the indexes of the columns left out."""
    widths = list(widths)
    excess = sum(widths) + GAP * (len(widths) - 1) - limit
    order = priority + [i for i in reversed(range(len(widths))) if not flexible[i]]
    for i in order:
        if excess <= 0:
            break
        floor = min(widths[i], FLEX_MIN if flexible[i] else floors[i])
        cut = min(excess, widths[i] - floor)
        widths[i] -= cut
        excess -= cut
    dropped: list[int] = []
    for i in reversed(range(1, len(widths))):
        if excess <= 0:
            break
        dropped.append(i)
        excess -= widths[i] + GAP
    return widths, dropped


def _lines_of(text: str, width: int, flexible: bool, header: bool = False) -> list[str]:
    if len(text) <= width:
        return [text]
    if header:  # BROKER_OFFSET → BROKER_ / OFFSET
        lines = [""]
        for part in re.split(r"(?<=_)", text):
            if lines[-1] and len(lines[-1]) + len(part) > width:
                lines.append("")
            lines[-1] += part
        return lines
    # a fixed column is never narrower than its longest word: wrapping between words cuts nothing
    return textwrap.wrap(text, width, break_long_words=flexible, break_on_hyphens=False) or [""]


def format_table(table: Table, *, width: int | None = None, colour: bool = False,
                 no_headers: bool = False) -> str:
    """Aligned columns, two spaces apart, fitted to ``width`` (``None``: as wide as the data):
    cells wrap, nothing is cut; columns that still do not fit are left out, and a last line
    says which."""
    keys, headers = table.keys, table.headers
    body = [[cell(k, row.get(k)) for k in keys] for row in table.rows]
    widths = [max([len(h), *(len(line[i]) for line in body)]) for i, h in enumerate(headers)]
    flexible = [k in table.flexible for k in keys]
    left_out: list[str] = []
    if width is not None:
        priority = [keys.index(k) for k in table.flexible if k in keys]
        floors = [_narrowest([line[i] for line in body], h) for i, h in enumerate(headers)]
        widths, dropped = _fit(widths, flexible, priority, floors, width)
        if dropped:
            left_out = [headers[i] or keys[i].upper() for i in sorted(dropped)]
            keep = [i for i in range(len(keys)) if i not in dropped]
            headers = [headers[i] for i in keep]
            body = [[line[i] for i in keep] for line in body]
            widths = [widths[i] for i in keep]
            flexible = [flexible[i] for i in keep]

    def paint(text: str, style: str) -> str:
        code = _ANSI.get(style)
        return f"\x1b[{code}m{text}\x1b[0m" if colour and code and text else text

    def render(cells: list[str], header: bool) -> list[str]:
        wrapped = [_lines_of(text, w, flex, header) for text, w, flex in zip(cells, widths, flexible, strict=True)]
        out = []
        for n in range(max(len(parts) for parts in wrapped)):
            pieces = []
            for i, parts in enumerate(wrapped):
                text = parts[n] if n < len(parts) else ""
                style = "bold" if header else STYLES.get(cells[i], "")
                pieces.append(paint(text, style) + " " * (widths[i] - len(text)))
            out.append((" " * GAP).join(pieces).rstrip())
        return out

    lines = []
    if table.title and not no_headers:
        lines.append(table.title)
    if not no_headers:
        lines += render(headers, header=True)
    for row in body:
        lines += render(row, header=False)
    if not body and not no_headers:
        lines.append("(none)")
    if left_out and not no_headers:
        lines.append(f"({len(left_out)} column{'s' if len(left_out) != 1 else ''} left out at {width} columns: "
                     f"{', '.join(left_out)}; widen the terminal or use -o json)")
    return "".join(line + "\n" for line in lines)


def _csv_cell(value: Any) -> Any:
    """csv flattens explicitly: nothing → empty, booleans → true/false, a list of plain values →
    joined with ``;``, anything nested (an object, a list of objects) → compact JSON."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)) and all(isinstance(v, (str, int, float)) for v in value):
        return ";".join(str(v) for v in value)
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    return value


def _rowsets(view: View) -> list[RowSet]:
    if view.records:
        return view.records
    doc = view.document
    from rmqctl.report import RowSet

    return [RowSet("document", tuple(doc) if isinstance(doc, dict) else ("value",),
                   [doc if isinstance(doc, dict) else {"value": doc}])]


def emit(view: View, fmt: OutputFormat, stream: TextIO | None = None,
         options: TableOptions | None = None) -> None:
    out = stream or sys.stdout
    options = options or TableOptions()
    if fmt is OutputFormat.json:
        out.write(json.dumps(view.document, indent=2, ensure_ascii=False, default=str) + "\n")
    elif fmt is OutputFormat.jsonl:
        for rowset in _rowsets(view):
            for row in rowset.rows:
                out.write(json.dumps({"kind": rowset.kind, **row}, ensure_ascii=False, default=str) + "\n")
    elif fmt is OutputFormat.csv:
        rowsets = _rowsets(view)
        chosen = rowsets[0]
        if options.kind is not None:
            found = [r for r in rowsets if r.kind == options.kind]
            if not found:
                raise errors.UsageError(f"no table {options.kind!r} in this command's output",
                                        hint="tables: " + ", ".join(r.kind for r in rowsets))
            chosen = found[0]
        import csv  # only -o csv loads the writer

        writer = csv.writer(out, lineterminator="\n")
        if not options.no_headers:
            writer.writerow(chosen.columns)
        for row in chosen.rows:
            writer.writerow([_csv_cell(row.get(k)) for k in chosen.columns])
    else:
        width, colour = _terminal_width(out), colour_wanted(out)
        parts = [format_table(t, width=width, colour=colour, no_headers=options.no_headers)
                 for t in view.tables]
        out.write("\n".join(parts))
        if view.footer and not options.no_headers:
            out.write("\n" + "\n".join(view.footer) + "\n")
    out.flush()


def select_rows(rows: list[dict[str, Any]], columns: Sequence[str], *, name_key: str,
                match: str | None = None, sort: str | None = None) -> list[dict[str, Any]]:
    """``--match REGEX`` (searched in ``name_key``) and ``--sort COLUMN`` (one of ``columns``, the
    rows' keys, by key or header, any case; ``-COLUMN`` descending; numbers sort as numbers,
    nothing sorts last either way) applied
    to a list command's rows. ``--sort`` is checked against ``columns`` even when no row is left."""
    if match is not None:
        try:
            pattern = re.compile(match)
        except re.error as exc:
            raise errors.UsageError(f"--match: invalid regular expression {match!r}: {exc}") from None
        rows = [r for r in rows if pattern.search(str(r.get(name_key) or ""))]
    if sort is not None:
        keys = list(dict.fromkeys([*columns, *(k for r in rows for k in r)]))
        wanted = sort.strip().lower()
        descending = wanted.startswith("-")
        wanted = wanted.removeprefix("-")
        key = next((k for k in keys if k.lower() == wanted or header_for(k).lower() == wanted), None)
        if key is None:
            raise errors.UsageError(f"--sort: no column {sort!r}", hint="columns: " + ", ".join(keys))

        def order(row: dict[str, Any]) -> tuple[int, Any]:
            value = row.get(key)
            if value is None:
                return (2, "")
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return (0, value)
            return (1, str(value))

        if descending:  # largest first; nothing still sorts last
            known = [r for r in rows if r.get(key) is not None]
            rows = [*sorted(known, key=order, reverse=True), *(r for r in rows if r.get(key) is None)]
        else:
            rows = sorted(rows, key=order)
    return rows


class Console:
    """stderr messages; colour only when stderr is a TTY and NO_COLOR is not set."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream

    @property
    def stream(self) -> TextIO:
        # resolved per call so that redirected or captured stderr is honoured
        return self._stream or sys.stderr

    @property
    def _tty(self) -> bool:
        return hasattr(self.stream, "isatty") and self.stream.isatty()

    def _paint(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if colour_wanted(self.stream) else text

    def error(self, message: str, hint: str | None = None) -> None:
        self.stream.write(f"{self._paint('rmqctl: error:', '1;31')} {message}\n")
        if hint:
            self.stream.write(f"{self._paint('hint:', '33')} {hint}\n")
        self.stream.flush()

    def warn(self, message: str) -> None:
        self.stream.write(f"{self._paint('rmqctl: warning:', '1;33')} {message}\n")
        self.stream.flush()

    def note(self, message: str) -> None:
        if self._tty:
            self.stream.write(self._paint(message, "2") + "\n")
            self.stream.flush()

