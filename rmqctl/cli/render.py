"""The one renderer: every command hands it a :class:`View` and an output format.

stdout carries data only: ``table`` (aligned text for people), ``json`` (the command's
documented document), ``jsonl`` and ``csv`` (one record per row of the view's main table).
Notes, warnings and errors go to stderr, coloured only when stderr is a terminal.

Must not import textual or pyspark.
"""

from __future__ import annotations

import csv
import enum
import io
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO


class OutputFormat(str, enum.Enum):
    table = "table"
    json = "json"
    jsonl = "jsonl"
    csv = "csv"


@dataclass
class Table:
    """Columns as ``(key, header)``; rows as dicts keyed by column key."""

    columns: Sequence[tuple[str, str]]
    rows: Sequence[Mapping[str, Any]]
    title: str | None = None


@dataclass
class View:
    """What a command produced: the JSON document and the tables that show it."""

    document: Any
    tables: list[Table] = field(default_factory=list)
    footer: list[str] = field(default_factory=list)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.2f}"
    if isinstance(value, (list, tuple)):
        return ",".join(_cell(v) for v in value) or "-"
    return str(value)


def format_table(table: Table) -> str:
    headers = [h for _, h in table.columns]
    body = [[_cell(row.get(k)) for k, _ in table.columns] for row in table.rows]
    widths = [len(h) for h in headers]
    for line in body:
        for i, text in enumerate(line):
            widths[i] = max(widths[i], len(text))
    out = io.StringIO()
    if table.title:
        out.write(table.title + "\n")

    def write(cells: Sequence[str]) -> None:
        out.write("  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip() + "\n")

    write(headers)
    for line in body:
        write(line)
    if not body:
        out.write("(none)\n")
    return out.getvalue()


def _records(view: View) -> list[dict[str, Any]]:
    """Rows for jsonl/csv: the document itself when it is a list, else the main table."""
    doc = view.document
    if isinstance(doc, list):
        return [r if isinstance(r, dict) else {"value": r} for r in doc]
    if not view.tables:
        return [doc]
    main = view.tables[0]
    return [{k: row.get(k) for k, _ in main.columns} for row in main.rows]


def emit(view: View, fmt: OutputFormat, stream: TextIO | None = None) -> None:
    out = stream or sys.stdout
    if fmt is OutputFormat.json:
        out.write(json.dumps(view.document, indent=2, ensure_ascii=False, default=str) + "\n")
    elif fmt is OutputFormat.jsonl:
        for record in _records(view):
            out.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
    elif fmt is OutputFormat.csv:
        records = _records(view)
        keys = list(dict.fromkeys(k for r in records for k in r))
        if not keys and view.tables:
            keys = [k for k, _ in view.tables[0].columns]
        writer = csv.DictWriter(out, fieldnames=keys, extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        for record in records:
            writer.writerow({k: _csv_cell(record.get(k)) for k in keys})
    else:
        parts = [format_table(t) for t in view.tables]
        out.write("\n".join(parts))
        if view.footer:
            out.write("\n" + "\n".join(view.footer) + "\n")
    out.flush()


def _csv_cell(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(value, ensure_ascii=False, default=str)
    return value


class Console:
    """stderr messages; colour only when stderr is a TTY."""

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
        return f"\x1b[{code}m{text}\x1b[0m" if self._tty else text

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
