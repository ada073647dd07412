"""The offset-snapshot file contract: one Arrow schema, its version and the file layout.

Snapshot files are Parquet, Hive-partitioned by the UTC date of ``ts``
(``DIR/date=YYYY-MM-DD/<name>.parquet``), one row per (snapshot time, group, topic, broker,
queue). The columns below are public (docs/snapshot-export.md): columns may be added in a later
version, an existing one never changes meaning or type. Every file carries the version in its
key-value metadata under :data:`VERSION_KEY` and in the ``schema_version`` column.

Imports pyarrow and nothing from the rest of rmqctl.
"""

from __future__ import annotations

import datetime as _dt

import pyarrow as pa

#: the version of :data:`SCHEMA`; bumped when a column is added (2: the broker's stored
#: expression and the owner's own, so a reader knows what judged the messages consumed; 3: whether
#: the group consumes by POP, its maximum of deliveries and the deliveries its retry copies show)
SCHEMA_VERSION = 3
#: file key-value metadata key holding :data:`SCHEMA_VERSION` (as text)
VERSION_KEY = "rmqctl.schema_version"
#: the Hive partition column (a directory level, not a column inside the files)
PARTITION_COLUMN = "date"
FILE_SUFFIX = ".parquet"
TEMP_SUFFIX = ".tmp"

_TS = pa.timestamp("ms", tz="UTC")

SCHEMA = pa.schema(
    [
        pa.field("ts", _TS, nullable=False),
        pa.field("cluster", pa.string(), nullable=False),
        pa.field("group", pa.string(), nullable=False),
        pa.field("topic", pa.string(), nullable=False),
        pa.field("broker", pa.string(), nullable=False),
        pa.field("queue_id", pa.int32(), nullable=False),
        pa.field("broker_offset", pa.int64(), nullable=True),
        pa.field("consumer_offset", pa.int64(), nullable=True),
        pa.field("pull_offset", pa.int64(), nullable=True),
        pa.field("last_consumed_ts", _TS, nullable=True),
        pa.field("broker_last_ts", _TS, nullable=True),
        pa.field("owner", pa.string(), nullable=True),
        pa.field("owner_subscribed", pa.bool_(), nullable=True),
        pa.field("message_model", pa.string(), nullable=True),
        pa.field("error", pa.string(), nullable=True),
        pa.field("schema_version", pa.int16(), nullable=False),
        # version 2
        pa.field("expression", pa.string(), nullable=True),
        pa.field("expression_type", pa.string(), nullable=True),
        pa.field("expression_version", pa.int64(), nullable=True),
        pa.field("owner_expression", pa.string(), nullable=True),
        pa.field("owner_expression_type", pa.string(), nullable=True),
        pa.field("owner_expression_version", pa.int64(), nullable=True),
        # version 3
        pa.field("pop", pa.bool_(), nullable=True),
        pa.field("max_deliveries", pa.int32(), nullable=True),
        pa.field("retry_deliveries", pa.int32(), nullable=True),
    ],
    metadata={VERSION_KEY: str(SCHEMA_VERSION)},
)

COLUMNS: tuple[str, ...] = tuple(SCHEMA.names)


def partition_of(ts_ms: int) -> str:
    """The partition directory name of a snapshot taken at ``ts_ms`` (``date=2024-01-01``)."""
    day = _dt.datetime.fromtimestamp(ts_ms / 1000, _dt.UTC).date()
    return f"{PARTITION_COLUMN}={day.isoformat()}"
