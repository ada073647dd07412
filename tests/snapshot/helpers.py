"""Helpers shared by the snapshot tests: read what an export wrote, as plain Python rows."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
import pyarrow.parquet as pq

#: 2024-01-01T00:00:00Z, scenario time 0 on the emulator's virtual clock (in ms)
VIRTUAL_EPOCH_MS = 1_704_067_200_000


def parquet_files(out: Path) -> list[Path]:
    return sorted(out.rglob("*.parquet"))


def read_rows(out: Path) -> list[dict[str, Any]]:
    """Every row under ``out`` (hidden temp files skipped, as readers do), in file order."""
    rows: list[dict[str, Any]] = []
    for path in parquet_files(out):
        rows.extend(pq.read_table(path).to_pylist())
    return rows


def read_dataset(out: Path) -> list[dict[str, Any]]:
    """The directory read as one Hive-partitioned dataset (what Spark or DuckDB would see)."""
    return ds.dataset(out, format="parquet", partitioning="hive").to_table().to_pylist()


def scenario_seconds(ts: dt.datetime) -> float:
    """Scenario time of a snapshot ``ts`` read back from a file."""
    return (ts.timestamp() * 1000 - VIRTUAL_EPOCH_MS) / 1000
