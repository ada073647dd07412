"""The ``snapshot export`` document: the closing summary of an export run.

``first_ts``/``last_ts`` are epoch milliseconds like every ``*_ts`` key (tables format them).
Must not import the CLI, the TUI, pyarrow or pyspark.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def export_summary(*, out: Path, rounds: int, rows: int, missing: int, failed_reads: int,
                   files: Sequence[Path], first_ts: int | None, last_ts: int | None, schema_version: int,
                   interrupted: str | None, recovered_rows: int = 0,
                   unread_groups: Mapping[str, str] | None = None) -> dict[str, Any]:
    """What an export wrote: rounds, rows (and rows recorded as missing), files, the snapshot
    times of the first and the last round, the signal that stopped it (if one did), and the rows
    of a killed export's journal it wrote out first (not counted in ``rows``), and the groups whose
    progress no row holds, with why (``unread_groups``: a 5.5 lite group's light message queues)."""
    return {
        "out": str(out), "rounds": rounds, "rows": rows, "missing_rows": missing, "failed_reads": failed_reads,
        "files": [str(p) for p in files], "first_ts": first_ts, "last_ts": last_ts,
        "schema_version": schema_version, "interrupted": interrupted, "recovered_rows": recovered_rows,
        "unread_groups": dict(sorted((unread_groups or {}).items())), "errors": {},
    }

