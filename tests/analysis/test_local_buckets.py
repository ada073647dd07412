"""The local engine cut into buckets by queue (input larger than it holds at once): the same warnings, document
and exit code as in one piece, whatever the bucket size; each queue's rows in one bucket, file after file."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rmqctl.localjob import files as local_files
from rmqctl.localjob import job as local_job
from tests.analysis.conftest import ARROW_SCHEMA, corrupt_files, corrupt_pages, incident_rows, row, write_snapshots


def _run(root: Path, bucket_rows: int) -> tuple[list[str], tuple[int, dict[str, object]]]:
    warnings: list[str] = []
    plan = local_job.plan(root, since="2026-03-01T12:00:00Z", until="2026-03-01T12:10:00Z")
    return warnings, local_job.run(plan, warnings.append, bucket_rows=bucket_rows)


@pytest.mark.parametrize("bucket_rows", [1, 7, 40, 1000])
def test_buckets_give_the_document_of_one_piece(tmp_path: Path, bucket_rows: int) -> None:
    # the incident's group, and five more whose queue nobody owns while messages arrive
    rows = incident_rows() + [row(i, 100 + 10 * i, 100, group=f"g{g}", owner=None) for i in range(21) for g in range(5)]
    root = write_snapshots(tmp_path / "snap", rows, rows_per_file=30)
    corrupt, truncated = corrupt_files(root / "date=2026-03-01")
    pages = corrupt_pages(root / "date=2026-03-01")
    whole_warnings, whole = _run(root, 10**9)
    assert whole_warnings == [
        f"skipped {corrupt}: not a whole Parquet file (corrupt or truncated)",
        f"skipped {pages}: corrupt pages: its footer counts 200 rows, 0 could be read",
        f"skipped {truncated}: not a whole Parquet file (corrupt or truncated)",
    ]
    assert [(q["group"], q["queue_id"], q["status"]) for q in whole[1]["queues"]] == [  # type: ignore[attr-defined]
        *[(f"g{g}", 0, "ORPHANED") for g in range(5)], ("orders", 0, "OK"), ("orders", 1, "STALLED"),
        ("orders", 2, "ORPHANED")]
    assert _run(root, bucket_rows) == (whole_warnings, whole)


def test_a_group_on_a_broker_falls_in_one_bucket_in_every_file() -> None:
    groups = ["a", "b", "c", "d"]
    first = pa.table({"cluster": ["c"] * 8, "group": groups * 2, "topic": ["t"] * 4 + ["%DLQ%x"] * 4,
                      "broker": ["x", "y"] * 4, "queue_id": [0, 1, 2, 3, 0, 0, 0, 0]})
    # the same groups in another order: other dictionary codes, the same buckets
    second = first.take([3, 1, 0, 2])
    one = local_files.queue_buckets(first, 3).to_pylist()
    def where(table: pa.Table) -> list[tuple[str, str]]:
        return list(zip(table["group"].to_pylist(), table["broker"].to_pylist(), strict=True))

    by_group = dict(zip(where(first), one, strict=True))
    assert [by_group[k] for k in where(first)] == one
    two = local_files.queue_buckets(second, 3).to_pylist()
    assert [by_group[k] for k in where(second)] == two
    assert set(one) <= {0, 1, 2}


def test_a_dead_letter_queue_born_in_the_window_is_judged_with_its_group(tmp_path: Path) -> None:
    # a POP group's queue answered from 12:00; its %DLQ% queue shows up at 12:05 with 3 messages
    rows = [row(i, 100 + i, 100 + i, group="pop", topic="T", pop=True, owner=None) for i in range(21)]
    rows += [row(i, 3, None, group="pop", topic="%DLQ%pop", pop=True, owner=None) for i in range(10, 21)]
    schema = pa.schema([*ARROW_SCHEMA, pa.field("pop", pa.bool_()), pa.field("retry_deliveries", pa.int32())],
                       metadata={b"rmqctl.schema_version": b"3"})
    root = tmp_path / "snap"
    (root / "date=2026-03-01").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist([{**r, "schema_version": 3} for r in rows], schema=schema),
                   root / "date=2026-03-01" / "part-0.parquet")
    whole_warnings, whole = _run(root, 10**9)
    dlq = [q for q in whole[1]["queues"] if q["topic"] == "%DLQ%pop"]  # type: ignore[attr-defined]
    assert [(q["status"], q["broker_offset_start"]) for q in dlq] == [("DEAD_LETTERING", 0)]
    assert _run(root, 1) == (whole_warnings, whole)
