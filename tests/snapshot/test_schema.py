"""The file contract: columns, Arrow types, nullability, partitioning and metadata, as documented.

The expected schema is written out by hand here (not imported from rmqctl.snapshot.schema), so
a change of the contract fails this test until the docs and this file change with it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from rmqctl.connect import Target, open_source
from rmqctl.snapshot import export
from tests.snapshot.helpers import parquet_files, read_dataset

EXPECTED = [
    ("ts", pa.timestamp("ms", tz="UTC"), False),
    ("cluster", pa.string(), False),
    ("group", pa.string(), False),
    ("topic", pa.string(), False),
    ("broker", pa.string(), False),
    ("queue_id", pa.int32(), False),
    ("broker_offset", pa.int64(), True),
    ("consumer_offset", pa.int64(), True),
    ("pull_offset", pa.int64(), True),
    ("last_consumed_ts", pa.timestamp("ms", tz="UTC"), True),
    ("broker_last_ts", pa.timestamp("ms", tz="UTC"), True),
    ("owner", pa.string(), True),
    ("owner_subscribed", pa.bool_(), True),
    ("message_model", pa.string(), True),
    ("error", pa.string(), True),
    ("schema_version", pa.int16(), False),
    ("expression", pa.string(), True),
    ("expression_type", pa.string(), True),
    ("expression_version", pa.int64(), True),
    ("owner_expression", pa.string(), True),
    ("owner_expression_type", pa.string(), True),
    ("owner_expression_version", pa.int64(), True),
    ("pop", pa.bool_(), True),
    ("max_deliveries", pa.int32(), True),
    ("retry_deliveries", pa.int32(), True),
]


async def test_written_files_match_the_documented_contract(tmp_path: Path) -> None:
    out = tmp_path / "snaps"
    async with open_source(Target(emulator="stall-and-leave")) as opened:
        result = await export(opened, None, out, every=30, count=4, handle_signals=False)
    assert result.rounds == 4

    files = parquet_files(out)
    assert files == sorted(result.files)
    assert files, "nothing was written"
    for path in files:
        # Hive partition by the UTC date of ts: the scenario's virtual clock starts 2024-01-01.
        assert path.parent.name == "date=2024-01-01"
        assert path.parent.parent == out
        assert re.fullmatch(r"[^.][^/]*\.parquet", path.name)
        schema = pq.read_schema(path)
        got = [(f.name, f.type, f.nullable) for f in schema]
        assert got == EXPECTED
        assert schema.metadata[b"rmqctl.schema_version"] == b"3"
        assert pq.ParquetFile(path).schema_arrow.metadata[b"rmqctl.schema_version"] == b"3"
        assert "date" not in schema.names  # the partition lives in the directory only
    # no temporary file is left behind
    assert [p.name for p in out.rglob("*") if p.is_file() and p.suffix != ".parquet"] == []

    rows = read_dataset(out)
    assert {r["date"] for r in rows} == {"2024-01-01"}
    assert {r["schema_version"] for r in rows} == {3}
    assert {r["cluster"] for r in rows} == {"DefaultCluster"}
    assert {r["message_model"] for r in rows} == {"CLUSTERING"}
    # ts is the snapshot round's time on the emulator's clock: 120 s (the scenario's end), then
    # every 30 s.
    assert sorted({r["ts"].isoformat() for r in rows}) == [
        "2024-01-01T00:02:00+00:00", "2024-01-01T00:02:30+00:00",
        "2024-01-01T00:03:00+00:00", "2024-01-01T00:03:30+00:00",
    ]
