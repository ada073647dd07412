"""The offset-snapshot schema: the one column contract between the exporter and the Spark job.

One row per (group, queue) per sample. The types are logical names (``int64``, ``int32``,
``string``) so this module needs neither pyarrow nor pyspark; the writer maps them to Arrow
types and ``analysis/stuck_queues.py`` keeps its own ``StructType`` copy, checked field for field
by ``tests/analysis/test_schema_contract.py``. Changing a column here is a format change:
bump :data:`SNAPSHOT_FORMAT_VERSION` and update the job.

Imports nothing outside the standard library.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

LogicalType = Literal["int32", "int64", "string"]

#: Written into each Parquet file's key/value metadata as ``rmqctl.snapshot.version``.
SNAPSHOT_FORMAT_VERSION = "1"


@dataclass(frozen=True, slots=True)
class Column:
    """One column: its name, logical type, whether it may be null, and what it means."""

    name: str
    type: LogicalType
    nullable: bool
    doc: str


SNAPSHOT_COLUMNS: tuple[Column, ...] = (
    Column("ts", "int64", False, "when the sample was taken, epoch milliseconds (UTC)"),
    Column("cluster", "string", False, "cluster of the queue's broker ('' when unknown)"),
    Column("group", "string", False, "consumer group"),
    Column("topic", "string", False, "topic of the queue (%RETRY% topics included)"),
    Column("broker", "string", False, "broker name of the queue"),
    Column("queue_id", "int32", False, "queue id within the broker"),
    Column("broker_offset", "int64", False, "max offset of the consume queue (its length)"),
    Column("consumer_offset", "int64", False, "the group's committed offset"),
    Column("pull_offset", "int64", True, "max(consumer offset, last pull offset); null if unknown"),
    Column("last_timestamp", "int64", True,
           "store time of the last consumed message, epoch ms; null when the broker says 0"),
    Column("owner", "string", True, "client id reporting it holds the queue; null when nobody"),
)

SNAPSHOT_FIELD_NAMES: tuple[str, ...] = tuple(c.name for c in SNAPSHOT_COLUMNS)
