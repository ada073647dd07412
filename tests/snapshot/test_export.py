"""Snapshot rows, the atomic Parquet writer and the exporter loop, over a fake ClusterSource."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import typer
from typer.testing import CliRunner

from rmqctl import errors
from rmqctl.model import MessageQueue
from rmqctl.snapshot import (
    SNAPSHOT_COLUMNS,
    SNAPSHOT_FIELD_NAMES,
    export_snapshots,
    prepare_out_dir,
    snapshot_path,
    snapshot_rows,
    write_snapshot,
)
from rmqctl.snapshot.command import snapshot_export
from tests.tui.fakesource import FakeSource, make_view, queues

C1, C2 = "10.0.0.1@c1", "10.0.0.2@c2"
Q = queues("TopicTest", 3)
RETRY = MessageQueue("%RETRY%orders", "broker-a", 0)
TS = 1_767_225_600_000  # 2026-01-01T00:00:00Z


def orders_view(consumed: int, sampled_at: int = TS) -> object:
    return make_view(
        "orders",
        {Q[0]: (100, consumed), Q[1]: (50, 50), Q[2]: (7, 0), RETRY: (3, 3)},
        {C1: [Q[0], RETRY], C2: [Q[1]]},
        pull={Q[0]: consumed + 4},
        sampled_at=sampled_at,
    )


def test_rows_follow_the_schema_one_per_queue_with_owner_and_nulls() -> None:
    rows = snapshot_rows(orders_view(90), ts=TS, cluster_of={"broker-a": "DefaultCluster"})
    assert rows == [
        {"ts": TS, "cluster": "DefaultCluster", "group": "orders", "topic": "%RETRY%orders",
         "broker": "broker-a", "queue_id": 0, "broker_offset": 3, "consumer_offset": 3,
         "pull_offset": None, "last_timestamp": 1_700_000_000_000, "owner": C1},
        {"ts": TS, "cluster": "DefaultCluster", "group": "orders", "topic": "TopicTest",
         "broker": "broker-a", "queue_id": 0, "broker_offset": 100, "consumer_offset": 90,
         "pull_offset": 94, "last_timestamp": 1_700_000_000_000, "owner": C1},
        {"ts": TS, "cluster": "DefaultCluster", "group": "orders", "topic": "TopicTest",
         "broker": "broker-a", "queue_id": 1, "broker_offset": 50, "consumer_offset": 50,
         "pull_offset": None, "last_timestamp": 1_700_000_000_000, "owner": C2},
        # held by nobody, never consumed: owner and last_timestamp are null, not "" or 0
        {"ts": TS, "cluster": "DefaultCluster", "group": "orders", "topic": "TopicTest",
         "broker": "broker-a", "queue_id": 2, "broker_offset": 7, "consumer_offset": 0,
         "pull_offset": None, "last_timestamp": None, "owner": None},
    ]
    assert all(tuple(r) == SNAPSHOT_FIELD_NAMES for r in rows)
    assert snapshot_rows(orders_view(90), ts=TS, cluster="prod")[0]["cluster"] == "prod"


def test_writer_puts_one_file_per_sample_under_its_utc_date_with_the_exact_schema(
    tmp_path: Path,
) -> None:
    rows = snapshot_rows(orders_view(90), ts=TS, cluster="c")
    path = write_snapshot(rows, tmp_path, TS)
    assert path == tmp_path / "date=2026-01-01" / f"snapshot-{TS}.parquet"
    assert path == snapshot_path(tmp_path, TS)
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]  # no temp file left
    table = pq.read_table(path)
    assert [(f.name, str(f.type), f.nullable) for f in table.schema] == [
        ("ts", "int64", False), ("cluster", "string", False), ("group", "string", False),
        ("topic", "string", False), ("broker", "string", False), ("queue_id", "int32", False),
        ("broker_offset", "int64", False), ("consumer_offset", "int64", False),
        ("pull_offset", "int64", True), ("last_timestamp", "int64", True),
        ("owner", "string", True),
    ]
    assert len(SNAPSHOT_COLUMNS) == 11
    assert table.schema.metadata == {b"rmqctl.snapshot.version": b"1"}
    assert table.to_pylist() == rows


def test_rewriting_the_same_sample_replaces_the_file_whole(tmp_path: Path) -> None:
    write_snapshot(snapshot_rows(orders_view(90), ts=TS), tmp_path, TS)
    path = write_snapshot(snapshot_rows(orders_view(95), ts=TS)[1:2], tmp_path, TS)
    assert [r["consumer_offset"] for r in pq.read_table(path).to_pylist()] == [95]
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


def test_a_corrupt_layout_is_a_one_line_usage_error_and_leaves_nothing_behind(
    tmp_path: Path,
) -> None:
    (tmp_path / "date=2026-01-01").write_text("not a directory")
    with pytest.raises(errors.UsageError) as info:
        write_snapshot(snapshot_rows(orders_view(90), ts=TS), tmp_path, TS)
    assert str(info.value) == (f"cannot write snapshots to {tmp_path / 'date=2026-01-01'}: "
                               "it exists and is not a directory")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["date=2026-01-01"]


def test_out_dir_must_be_a_directory(tmp_path: Path) -> None:
    a_file = tmp_path / "f"
    a_file.write_text("x")
    with pytest.raises(errors.UsageError, match="it exists and is not a directory"):
        prepare_out_dir(a_file)
    with pytest.raises(errors.UsageError, match="Not a directory"):
        prepare_out_dir(a_file / "sub")
    assert prepare_out_dir(tmp_path / "new" / "dir").is_dir()
    assert list((tmp_path / "new" / "dir").iterdir()) == []  # the write probe is cleaned up


async def test_export_takes_count_samples_on_the_clock_and_data_changes_between_them(
    tmp_path: Path,
) -> None:
    source = FakeSource([orders_view(90)])
    now = [TS / 1000]
    waits: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        waits.append(seconds)
        now[0] += seconds
        source.set_views([orders_view(int(now[0] * 1000 - TS) // 1000 + 90)])

    def clock() -> float:
        now[0] += 0.25  # every clock read costs a quarter second of "work"
        return now[0]

    result = await export_snapshots(source, ["orders"], tmp_path, 60.0, 3, clock=clock,
                                    sleep=fake_sleep)
    assert result.samples == 3 and result.rows == 12 and result.errors == {}
    assert waits == [59.75, 59.75]  # interval measured from each sample's start
    assert [p.name for p in result.files] == [
        "snapshot-1767225600250.parquet", "snapshot-1767225660500.parquet",
        "snapshot-1767225720750.parquet"]
    offsets = [[r["consumer_offset"] for r in pq.read_table(p).to_pylist() if r["queue_id"] == 0
                and r["topic"] == "TopicTest"] for p in result.files]
    assert offsets == [[90], [150], [210]]
    assert {r["cluster"] for r in pq.read_table(result.files[0]).to_pylist()} == {"DefaultCluster"}


async def test_export_all_groups_skips_broadcast_and_keeps_going_past_failures(
    tmp_path: Path,
) -> None:
    bcast = make_view("bcast", {Q[0]: (10, 0)}, {C1: [Q[0]]}, sampled_at=TS, model="BROADCASTING")
    partial = make_view("partial", {Q[0]: (10, 5)}, {C1: [Q[0]]}, sampled_at=TS,
                        errors_={"broker-b": "connection refused"})
    source = FakeSource([orders_view(90), bcast, partial])
    result = await export_snapshots(source, None, tmp_path, 0.0, 1, clock=lambda: TS / 1000)
    assert result.skipped == ["bcast"]
    assert result.errors == {"partial/broker-b": "connection refused"}
    rows = pq.read_table(result.files[0]).to_pylist()
    assert sorted({r["group"] for r in rows}) == ["orders", "partial"]

    result = await export_snapshots(source, ["orders", "ghost"], tmp_path, 0.0, 1,
                                    clock=lambda: TS / 1000 + 1)
    assert result.errors == {"group:ghost": "consumer group 'ghost' does not exist"}
    assert result.rows == 4


async def test_a_sample_without_rows_writes_no_file(tmp_path: Path) -> None:
    result = await export_snapshots(FakeSource([]), None, tmp_path, 0.0, 2,
                                    clock=lambda: TS / 1000, sleep=lambda s: asyncio.sleep(0))
    assert (result.samples, result.rows, result.files) == (2, 0, [])
    assert list(tmp_path.iterdir()) == []


def _cli() -> typer.Typer:
    app = typer.Typer()
    app.command("export")(snapshot_export)

    @app.callback()
    def _root() -> None:
        """Root so that 'export' stays a subcommand."""

    return app


def test_command_rejects_an_unwritable_out_before_connecting(tmp_path: Path) -> None:
    a_file = tmp_path / "f"
    a_file.write_text("x")
    result = CliRunner().invoke(_cli(), ["export", "--out", str(a_file), "orders"])
    assert result.exit_code == 2
    assert result.output.splitlines()[0] == (
        f"rmqctl: error: cannot write snapshots to {a_file}: it exists and is not a directory")


def test_command_needs_groups_or_all(tmp_path: Path) -> None:
    result = CliRunner().invoke(_cli(), ["export", "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert "name at least one GROUP or pass --all" in result.output
