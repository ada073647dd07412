"""The job's own copy of the snapshot schema matches rmqctl's, field for field."""

from __future__ import annotations

import argparse

import pytest
from pyspark.sql.types import IntegerType, LongType, StringType

from analysis.stuck_queues import (
    SNAPSHOT_SCHEMA,
    local_cores,
    parse_duration_ms,
    parse_instant_ms,
)
from rmqctl.snapshot.schema import SNAPSHOT_COLUMNS

SPARK_TYPE = {"int32": IntegerType(), "int64": LongType(), "string": StringType()}


def test_spark_schema_equals_the_exporters_schema() -> None:
    assert [(f.name, f.dataType, f.nullable) for f in SNAPSHOT_SCHEMA.fields] == [
        (c.name, SPARK_TYPE[c.type], c.nullable) for c in SNAPSHOT_COLUMNS
    ]


@pytest.mark.parametrize(("text", "ms"), [
    ("15m", 900_000), ("90s", 90_000), ("2h", 7_200_000), ("1d", 86_400_000),
    ("500ms", 500), ("30", 30_000), ("1.5m", 90_000),
])
def test_durations(text: str, ms: int) -> None:
    assert parse_duration_ms(text) == ms


@pytest.mark.parametrize("text", ["", "5 minutes", "-1m", "0s"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        parse_duration_ms(text)


def test_instants() -> None:
    assert parse_instant_ms("1767225600000") == 1_767_225_600_000
    assert parse_instant_ms("2026-01-01T00:00:00Z") == 1_767_225_600_000
    assert parse_instant_ms("2026-01-01T01:00:00+01:00") == 1_767_225_600_000
    assert parse_instant_ms("2026-01-01T00:00:00") == 1_767_225_600_000
    with pytest.raises(argparse.ArgumentTypeError):
        parse_instant_ms("yesterday")


@pytest.mark.parametrize(("master", "cores"), [
    ("local", 1), ("local[2]", 2), ("local[8,3]", 8), ("yarn", None), ("spark://h:7077", None),
])
def test_local_cores(master: str, cores: int | None) -> None:
    assert local_cores(master) == cores
