"""The ``analyze stuck`` document: the Spark job's verdicts with the command's ``errors``.

The job (``analysis/``, shipped to Spark alone) writes ``{since, until, since_ts, until_ts,
queues, groups}``; the command's document adds ``errors`` like every other. Must not import the
CLI, the TUI or pyspark.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rmqctl.report.common import RowSet, error_rows


def stuck(job_document: Mapping[str, Any], engine: str) -> dict[str, Any]:
    """The job's document, the ``engine`` that judged it (``local`` or ``spark``) and ``errors`` (``{}``: a
    job that could not read its input fails)."""
    return {**job_document, "engine": engine, "errors": dict(job_document.get("errors") or {})}


def _columns(rows: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    """Every key of the rows, in the order they first appear (the job writes them in one order)."""
    return tuple(dict.fromkeys(key for row in rows for key in row))


def stuck_rows(doc: Mapping[str, Any]) -> list[RowSet]:
    """A row per queue (its verdict), then a row per group."""
    return [RowSet("queue", _columns(doc["queues"]), doc["queues"]),
            RowSet("group", _columns(doc["groups"]), doc["groups"]), *error_rows(doc)]
