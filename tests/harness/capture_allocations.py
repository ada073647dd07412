"""Freeze answers of the real Java allocation classes into ``tests/golden/java_allocations.json``.

Runs the hand-made edge cases of :func:`tests.harness.allocations.edge_cases` (every strategy at
more clients than queues, one queue, unsorted input, a client not in the list, duplicate and empty
ids, every POP share around its bounds, CONSISTENT_HASH's virtual-node counts, MACHINE_ROOM's idc
sets, MACHINE_ROOM_NEARBY's orphan rooms) plus a seeded sample of small random cases through one
run of ``rmqctl.harness.AllocateOracle`` (rocketmq-client and rocketmq-broker from Maven Central,
built by :func:`tests.harness.realcluster.build_harness`), and writes every case with Java's
answer. ``tests/unit/test_strategy_java_answers.py`` compares rmqctl with each of them without
starting Java.

Usage (from the repository root; needs ``java`` 17 and ``mvn``)::

    python -m tests.harness.capture_allocations            # writes tests/golden/java_allocations.json
    python -m tests.harness.capture_allocations --out /tmp/answers.json --random 500
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.harness.allocations import compare, edge_cases, random_case, run_oracle  # noqa: E402

SEED = 20261125
FIXTURE = Path(__file__).resolve().parents[1] / "golden" / "java_allocations.json"
ORACLE = "rocketmq-client/rocketmq-broker (tests/harness/pom.xml)"


def cases(random_count: int) -> list[dict[str, Any]]:
    """The edge cases, then ``random_count`` small random ones (at most 8 clients, 16 queues)."""
    rng = random.Random(SEED)
    small = [random_case(f"random-{i}", rng, max_clients=8, max_queues=16) for i in range(random_count)]
    return edge_cases() + [_only_used_options(case) for case in small]


def _only_used_options(case: dict[str, Any]) -> dict[str, Any]:
    """The case without the options its strategy never reads (a smaller file, the same answers)."""
    name = case["strategy"]
    unused = {
        "vnodes": "CONSISTENT_HASH" not in name,
        "config": "CONFIG" not in name,
        "idcs": not name.endswith("MACHINE_ROOM"),
        "broker_pattern": not name.startswith("MACHINE_ROOM_NEARBY-"),
        "client_pattern": not name.startswith("MACHINE_ROOM_NEARBY-"),
        "pop_share": not name.startswith("POP-"),
    }
    return {key: value for key, value in case.items() if not unused.get(key, False)}


def _rocketmq_version() -> str:
    pom = (Path(__file__).resolve().parent / "pom.xml").read_text(encoding="utf-8")
    start = pom.index("<rocketmq.version>") + len("<rocketmq.version>")
    return pom[start:pom.index("<", start)]


def write_fixture(path: Path, pairs: list[tuple[dict[str, Any], dict[str, Any]]]) -> None:
    """One case with its answer per line (ASCII: lone surrogates survive), in a JSON document."""
    head = {
        "rocketmq_version": _rocketmq_version(),
        "generated_by": "python -m tests.harness.capture_allocations",
        "seed": SEED,
    }
    lines = [json.dumps({"case": case, "java": java}, sort_keys=True) for case, java in pairs]
    body = ",\n".join(lines)
    path.write_text(json.dumps(head)[:-1] + ', "cases": [\n' + body + "\n]}\n", encoding="ascii")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=FIXTURE)
    parser.add_argument("--random", type=int, default=220, help="random cases after the edge cases")
    parser.add_argument("--classpath", help="prebuilt harness class path (default: build it with Maven)")
    args = parser.parse_args(argv)
    if args.classpath:
        classpath = args.classpath
    else:
        from tests.harness.realcluster import build_harness

        classpath = build_harness()
    todo = cases(args.random)
    with tempfile.TemporaryDirectory(prefix="rmqctl-oracle-") as workdir:
        answers = run_oracle(todo, Path(workdir), classpath)
    pairs = list(zip(todo, answers, strict=True))
    write_fixture(args.out, pairs)
    # rmqctl's agreement is the fast test's job; say here how far apart they are today.
    differences = [p for case, java in pairs for p in compare(case, java)]
    print(f"wrote {len(pairs)} cases to {args.out}; rmqctl differs from Java in {len(differences)} answers",
          file=sys.stderr)
    for problem in differences[:20]:
        print("  " + problem, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
