"""The offset-snapshot contract (schema version 3) as an explicit Spark schema.

Snapshots are Parquet files under ``DIR/date=YYYY-MM-DD/*.parquet`` (the UTC date of ``ts``), one row
per (snapshot time, group, topic, broker, queue). ``docs/snapshots.md`` is the public description;
this constant is what the job reads with (never schema inference). Columns may be added in later
versions, never changed; a file whose ``rmqctl.schema_version`` is newer than
:data:`SCHEMA_VERSION` is refused.

Imports only pyspark and the standard library.
"""

from __future__ import annotations

from pyspark.sql.types import (
    BooleanType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

SCHEMA_VERSION = 3
"""The newest snapshot schema version this job understands."""

SCHEMA_VERSION_KEY = "rmqctl.schema_version"
"""Key of the schema version in the Parquet files' key-value metadata."""

SNAPSHOT_SCHEMA = StructType([
    StructField("ts", TimestampType(), nullable=False),
    StructField("cluster", StringType(), nullable=False),
    StructField("group", StringType(), nullable=False),
    StructField("topic", StringType(), nullable=False),
    StructField("broker", StringType(), nullable=False),
    StructField("queue_id", IntegerType(), nullable=False),
    StructField("broker_offset", LongType(), nullable=True),
    StructField("consumer_offset", LongType(), nullable=True),
    StructField("pull_offset", LongType(), nullable=True),
    StructField("last_consumed_ts", TimestampType(), nullable=True),
    StructField("broker_last_ts", TimestampType(), nullable=True),
    StructField("owner", StringType(), nullable=True),
    StructField("owner_subscribed", BooleanType(), nullable=True),
    StructField("message_model", StringType(), nullable=True),
    StructField("error", StringType(), nullable=True),
    StructField("schema_version", ShortType(), nullable=False),
    # version 2: what judged the messages consumed (files of version 1 read these as null)
    StructField("expression", StringType(), nullable=True),
    StructField("expression_type", StringType(), nullable=True),
    StructField("expression_version", LongType(), nullable=True),
    StructField("owner_expression", StringType(), nullable=True),
    StructField("owner_expression_type", StringType(), nullable=True),
    StructField("owner_expression_version", LongType(), nullable=True),
    # version 3: a POP group's rows (files of older versions read these as null: not known to be POP)
    StructField("pop", BooleanType(), nullable=True),
    StructField("max_deliveries", IntegerType(), nullable=True),
    StructField("retry_deliveries", IntegerType(), nullable=True),
])
"""Schema version 3 of the snapshot files, column by column as in docs/snapshots.md."""

QUEUE_KEY = ("cluster", "group", "topic", "broker", "queue_id")
"""Columns that name one queue of one consumer group."""
