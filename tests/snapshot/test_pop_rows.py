"""Snapshot rows of POP groups (schema version 3): ``pop`` says the group consumes by POP, its
``max_deliveries`` comes from the group's config, and its retry queue carries the most deliveries
among the copies read back that round; files of version 2 read back with those columns null."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from rmqctl.connect import Target, open_source
from rmqctl.snapshot import export
from rmqctl.snapshot.schema import SCHEMA
from rmqctl.snapshot.writer import rows_of, table_of
from tests.snapshot.helpers import read_rows


async def test_pop_redelivery_rows_say_pop_and_the_deliveries_of_the_retry_copies(tmp_path: Path) -> None:
    out = tmp_path / "snaps"
    async with open_source(Target(emulator="pop-redelivery")) as opened:
        await export(opened, ["order-pop", "audit-pop"], out, every=30, count=1, handle_signals=False)
    rows = read_rows(out)
    by_queue = {(r["group"], r["topic"], r["queue_id"]): r for r in rows}
    assert {r["pop"] for r in rows} == {True}
    # order-pop's retryMaxTimes is 4 (5 deliveries); audit-pop keeps the broker's default 16 (17)
    assert {(r["group"], r["max_deliveries"]) for r in rows} == {("order-pop", 5), ("audit-pop", 17)}
    retry = {k: r["retry_deliveries"] for k, r in by_queue.items() if k[1].startswith("%RETRY%")}
    # the four bad messages were delivered four times when the scenario ends (the doctor's numbers);
    # audit-pop's retry queue holds no copy, so nothing was read there
    assert retry == {("order-pop", "%RETRY%order-pop_OrderTopic", 0): 4,
                     ("audit-pop", "%RETRY%audit-pop_OrderTopic", 0): None}
    assert {r["retry_deliveries"] for r in rows if not r["topic"].startswith("%RETRY%")} == {None}


def test_rows_of_an_older_version_read_the_pop_columns_as_null() -> None:
    from rmqctl.snapshot.rows import QueueSnapshot

    row = QueueSnapshot(1_700_000_000_000, "c", "g", "T", "broker-a", 0, 10, 9, pop=True, max_deliveries=5,
                        retry_deliveries=3)
    version_2 = pa.schema(list(SCHEMA)[:-3])
    table = table_of([row]).select(version_2.names)
    (back,) = rows_of(table)
    assert (back.pop, back.max_deliveries, back.retry_deliveries) == (None, None, None)
    assert (back.broker_offset, back.consumer_offset) == (10, 9)
    assert rows_of(table_of([row])) == [row]
