"""Wall time of every client's allocation, 10,000 queues × 1,000 clients, for each strategy.

Compares ``Strategy.allocate_all`` (one sort, shared work: one hash ring, one grouping by room)
with the naive way, calling the Java-contract ``allocate`` once per client as every Java
client does for itself. Prints medians over several runs. Imports only rmqctl's rebalance core.

    /work/venv/bin/python bench/bench_allocate.py [--runs 5] [--naive-runs 3]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from rmqctl.model import MessageQueue
from rmqctl.rebalance import Strategy, get_strategy, java_sorted_ids, java_sorted_queues

ROOMS: dict[str, object] = {"broker_pattern": r"^(r\d)[-@]", "client_pattern": r"@(r\d)-"}
CASES: list[tuple[str, dict[str, object]]] = [
    ("AVG", {}),
    ("AVG_BY_CIRCLE", {}),
    ("CONSISTENT_HASH", {"vnodes": 10}),
    ("CONFIG", {"queues": [MessageQueue("BenchTopic", "r1-broker-0", q) for q in range(8)]}),
    ("MACHINE_ROOM", {"consumer_idcs": {"r1", "r2"}}),
    ("MACHINE_ROOM_NEARBY-AVG", ROOMS),
    ("MACHINE_ROOM_NEARBY-CONSISTENT_HASH", ROOMS),
    ("POP-AVG", {}),
    ("POP-AVG", {"pop_share_queue_num": 2}),
]


def workload() -> tuple[list[MessageQueue], list[str]]:
    """20 brokers × 500 queues spread over 3 rooms (MACHINE_ROOM names are ``rN@…``)."""
    mqs = []
    for b in range(20):
        room = f"r{b % 3 + 1}"
        name = f"{room}@broker-{b}" if b % 2 else f"{room}-broker-{b}"
        mqs += [MessageQueue("BenchTopic", name, q) for q in range(500)]
    cids = [f"10.0.{i // 250}.{i % 250}@r{i % 3 + 1}-{i}" for i in range(1000)]
    return mqs, cids


def median_seconds(fn: Callable[[], object], runs: int, budget: float = 30.0) -> tuple[float, int]:
    """Median wall time and the number of runs made (fewer when the budget is spent)."""
    times: list[float] = []
    while len(times) < runs and (not times or sum(times) < budget):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times), len(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs of allocate_all per strategy")
    parser.add_argument(
        "--naive-runs", type=int, default=3, help="runs of the per-client loop (30 s budget each)"
    )
    parser.add_argument("--check", action="store_true", help="also check both ways agree")
    args = parser.parse_args()
    mqs, cids = workload()
    print(
        f"{len(mqs)} queues x {len(cids)} clients; medians of {args.runs} / {args.naive_runs} runs"
    )
    print(f"{'strategy':<40} {'allocate_all':>13} {'per-client':>12} {'speed-up':>9}")
    for name, options in CASES:
        strategy = get_strategy(name, **options)
        label = name + (
            f" (share={options['pop_share_queue_num']})" if "pop_share_queue_num" in options else ""
        )

        def naive(strategy: Strategy = strategy) -> dict[str, list[MessageQueue]]:
            """What each Java client does: sort, then compute its own share only."""
            sorted_mqs, sorted_cids = java_sorted_queues(mqs), java_sorted_ids(cids)
            return {
                cid: strategy.allocate(cid, sorted_mqs, sorted_cids)
                for cid in dict.fromkeys(sorted_cids)
            }

        def fast(strategy: Strategy = strategy) -> dict[str, list[MessageQueue]]:
            return strategy.allocate_all(mqs, cids)

        if args.check:
            assert fast() == naive(), name
        fast_s, _ = median_seconds(fast, args.runs)
        slow_s, slow_runs = median_seconds(naive, args.naive_runs)
        runs_note = "" if slow_runs == args.naive_runs else f"  (per-client: {slow_runs} run)"
        print(
            f"{label:<40} {fast_s * 1000:>10.1f} ms {slow_s * 1000:>9.0f} ms {slow_s / fast_s:>8.0f}x"
            + runs_note
        )


if __name__ == "__main__":
    main()
