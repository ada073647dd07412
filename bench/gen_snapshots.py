"""Generate a realistic offset-snapshot dataset (docs/snapshots.md, schema version 1) for the benchmark.

``python bench/gen_snapshots.py OUT --rows 1e7`` writes ``OUT/date=YYYY-MM-DD/part-NNNN.parquet`` for
10^4 queues (100 groups x 4 brokers x 25 queues) snapshotted every 30 s from 2026-03-01 00:00 UTC,
``rows / queues`` rounds. Per queue: 5 % idle topics, 2 % stall under their owner and 1 % are orphaned
(the owner leaves) for their last 60–160 rounds, 10 % change owner every 2000 rounds, the rest consume
with a lag of 0–2, their committed offset moving at every round; broker-3 misses one round in 997 (error
rows, null offsets). The expected statuses are written to ``OUT/expected.json`` (written from the
generator's own parameters, not by the job).

Rows are built with pyarrow compute in batches of whole rounds and streamed into row groups, so memory
stays bounded whatever ``--rows`` is. Prints one JSON line with the size and time taken.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

QUEUES = 10_000
STEP_MS = 30_000
START = dt.datetime(2026, 3, 1, tzinfo=dt.timezone.utc)

SCHEMA = pa.schema([
    ("ts", pa.timestamp("ms", tz="UTC")), ("cluster", pa.string()), ("group", pa.string()),
    ("topic", pa.string()), ("broker", pa.string()), ("queue_id", pa.int32()),
    ("broker_offset", pa.int64()), ("consumer_offset", pa.int64()), ("pull_offset", pa.int64()),
    ("last_consumed_ts", pa.timestamp("ms", tz="UTC")), ("broker_last_ts", pa.timestamp("ms", tz="UTC")),
    ("owner", pa.string()), ("owner_subscribed", pa.bool_()), ("message_model", pa.string()),
    ("error", pa.string()), ("schema_version", pa.int16()),
], metadata={b"rmqctl.schema_version": b"1"})


def queue_plan(rounds: int) -> list[dict[str, int | str]]:
    """Per queue: names, offsets' base and rate, and what happens to it."""
    plan: list[dict[str, int | str]] = []
    for q in range(QUEUES):
        group, within = divmod(q, 100)
        kind = "ok"
        if q % 20 == 7:
            kind = "idle"
        elif q % 50 == 11:
            kind = "stall"
        elif q % 100 == 23:
            kind = "orphan"
        elif q % 10 == 3:
            kind = "rotate"
        plan.append({
            "group": f"group-{group:03d}", "topic": f"topic-{group:03d}", "broker": f"broker-{within // 25}",
            "queue_id": within % 25, "base": (q * 1009) % 100_000,
            # at least 2 messages a round, so that a consumer 0-2 behind still moves at every round
            "rate": 0 if kind == "idle" else 2 + (q * 37) % 19,
            "freeze": rounds - 60 - q % 100 if kind in ("stall", "orphan") else rounds + 1,
            "kind": kind,
        })
    return plan


def expected_status(kind: str) -> str:
    return {"idle": "IDLE", "stall": "STALLED", "orphan": "ORPHANED"}.get(kind, "OK")


def generate(out: Path, rows: int, batch_rounds: int, rows_per_file: int) -> dict[str, float]:
    rounds = max(1, rows // QUEUES)
    plan = queue_plan(rounds)
    out.mkdir(parents=True, exist_ok=True)
    per_queue = {k: pa.array([p[k] for p in plan]) for k in ("group", "topic", "broker", "base", "rate", "freeze")}
    queue_ids = pa.array([p["queue_id"] for p in plan], pa.int32())
    is_orphan = pa.array([p["kind"] == "orphan" for p in plan])
    rotates = pa.array([p["kind"] == "rotate" for p in plan])
    on_broker3 = pa.array([p["broker"] == "broker-3" for p in plan])
    jitter_ok = pa.array([0 if p["kind"] == "idle" else 1 for p in plan], pa.int64())
    # owner names: "client-GGG-K"; rotating queues move to another client every 2000 rounds
    owners = pa.array([f"client-{g:03d}-{k}" for g in range(100) for k in range(10)])
    owner_base = pa.array([(q // 100) * 10 + (q % 100) // 10 for q in range(QUEUES)], pa.int64())

    qidx = pa.array([q for _ in range(batch_rounds) for q in range(QUEUES)], pa.int64())
    ridx = pa.array([r for r in range(batch_rounds) for _ in range(QUEUES)], pa.int64())

    def take(values: pa.Array, n: int) -> pa.Array:
        return pc.take(values, qidx.slice(0, n))

    writer: pq.ParquetWriter | None = None
    current: tuple[str, int] | None = None
    file_rows = 0
    file_no = 0
    written = 0
    started = time.perf_counter()
    for r0 in range(0, rounds, batch_rounds):
        n_rounds = min(batch_rounds, rounds - r0)
        n = n_rounds * QUEUES
        r = pc.add(ridx.slice(0, n), r0)
        ts_ms = pc.add(pc.multiply(r, STEP_MS), int(START.timestamp() * 1000))
        ts = pc.cast(ts_ms, pa.timestamp("ms", tz="UTC"))
        rate, base, freeze = take(per_queue["rate"], n), take(per_queue["base"], n), take(per_queue["freeze"], n)
        broker_offset = pc.add(base, pc.multiply(rate, r))
        consumed_round = pc.min_element_wise(r, freeze)
        frozen = pc.greater(r, freeze)
        r_mod3 = pc.subtract(r, pc.multiply(pc.divide(r, 3), 3))
        jitter = pc.multiply(r_mod3, take(jitter_ok, n))
        consumer_offset = pc.if_else(frozen, pc.add(base, pc.multiply(rate, consumed_round)),
                                     pc.subtract(broker_offset, jitter))
        pull_offset = pc.if_else(frozen, consumer_offset, broker_offset)
        rotation = pc.multiply(pc.divide(r, 2000), pc.cast(take(rotates, n), pa.int64()))
        owner_idx = pc.add(take(owner_base, n), rotation)
        owner_idx = pc.subtract(owner_idx, pc.multiply(pc.divide(owner_idx, 1000), 1000))
        owner = pc.if_else(pc.and_(frozen, take(is_orphan, n)), pa.scalar(None, pa.string()),
                           pc.take(owners, owner_idx))
        r_mod997 = pc.subtract(r, pc.multiply(pc.divide(r, 997), 997))
        missing = pc.and_(take(on_broker3, n), pc.equal(r_mod997, 500))
        null_i64 = pa.scalar(None, pa.int64())
        lag_rounds = pc.subtract(r, consumed_round)
        last_consumed = pc.cast(pc.subtract(ts_ms, pc.add(pc.multiply(lag_rounds, STEP_MS), 1000)),
                                pa.timestamp("ms", tz="UTC"))
        table = pa.Table.from_arrays([
            ts, pa.repeat(pa.scalar("bench"), n),
            take(per_queue["group"], n), take(per_queue["topic"], n), take(per_queue["broker"], n),
            pc.take(queue_ids, qidx.slice(0, n)),
            pc.if_else(missing, null_i64, broker_offset), pc.if_else(missing, null_i64, consumer_offset),
            pc.if_else(missing, null_i64, pull_offset),
            pc.if_else(missing, pa.scalar(None, pa.timestamp("ms", tz="UTC")), last_consumed), ts,
            owner, pc.if_else(pc.is_null(owner), pa.scalar(None, pa.bool_()), pa.scalar(True)),
            pa.repeat(pa.scalar("CLUSTERING"), n),
            pc.if_else(missing, pa.scalar("CONNECTION: broker-3 unreachable"), pa.scalar(None, pa.string())),
            pa.repeat(pa.scalar(1, pa.int16()), n),
        ], schema=SCHEMA)
        # one batch never spans two dates: cut where the date changes
        dates = pc.strftime(ts, format="%Y-%m-%d")
        for date in pc.unique(dates).to_pylist():
            part = table.filter(pc.equal(dates, date))
            if writer is None or current is None or current[0] != date or file_rows >= rows_per_file:
                if writer is not None:
                    writer.close()
                folder = out / f"date={date}"
                folder.mkdir(exist_ok=True)
                writer = pq.ParquetWriter(folder / f"part-{file_no:04d}.parquet", SCHEMA, compression="snappy")
                current, file_rows, file_no = (date, file_no), 0, file_no + 1
            writer.write_table(part, row_group_size=len(part))
            file_rows += len(part)
            written += len(part)
    if writer is not None:
        writer.close()
    expected = {f"{p['group']}|{p['topic']}|{p['broker']}|{p['queue_id']}": expected_status(str(p["kind"]))
                for p in plan}
    (out / "expected.json").write_text(json.dumps(expected), encoding="utf-8")
    size = sum(f.stat().st_size for f in out.rglob("*.parquet"))
    return {"rows": written, "rounds": rounds, "files": file_no, "bytes": size,
            "seconds": round(time.perf_counter() - started, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--rows", type=float, default=1e7, help="about this many rows (1e7, 1e8)")
    parser.add_argument("--batch-rounds", type=int, default=100, help="rounds per row group")
    parser.add_argument("--rows-per-file", type=int, default=10_000_000)
    args = parser.parse_args()
    print(json.dumps(generate(args.out, int(args.rows), args.batch_rounds, args.rows_per_file)))


if __name__ == "__main__":
    main()
