"""The ``analyze stuck`` document: the Spark job's verdicts with the command's ``errors``.

The job (``analysis/``, shipped to Spark alone) writes ``{since, until, since_ts, until_ts,
queues, groups}``; the command's document adds ``errors`` like every other. Must not import the
CLI, the TUI or pyspark.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def stuck(job_document: Mapping[str, Any]) -> dict[str, Any]:
    """The job's document, and ``errors`` (``{}``: a job that could not read its input fails)."""
    return {**job_document, "errors": dict(job_document.get("errors") or {})}
