"""Differential test: every rmqctl allocation strategy against the real Java classes.

Thousands of random inputs (fixed seed) plus a few hand-made ones go through ONE run of
``rmqctl.harness.AllocateOracle`` (tests/harness), which calls the rocketmq-client strategies,
and the 5.x broker's ``QueryAssignmentProcessor.allocate4Pop``, the way ``RebalanceImpl`` does:
both lists sorted, ``allocate`` once per entry of cidAll. Every client's result must be identical:
same queues, same order, and an IllegalArgumentException exactly where we raise AllocationError.
Case generation and the comparison live in ``tests/harness/allocations.py``, shared with the
fixture of frozen Java answers that the fast tier checks (``tests/harness/capture_allocations.py``).

Skipped when ``java`` or ``mvn`` is missing, unless ``RMQCTL_REQUIRE_REAL_CLUSTER=1``.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path
from typing import Any

from tests.harness.allocations import STRATEGIES, compare, random_case, run_oracle
from tests.harness.plugin import real_part_missing

SEED = 20250919
RANDOM_CASES = 4000


def _fixed_cases() -> list[dict[str, Any]]:
    digest = [["TopicTest", f"broker-{b}", q] for b in "ab" for q in range(4)]
    return [
        # The digest's duplicate-client case.
        {
            "id": "digest-dup",
            "strategy": "CONSISTENT_HASH",
            "vnodes": 10,
            "mqs": digest,
            "cids": ["10.0.0.1@c1", "10.0.0.1@c1", "10.0.0.2@c2"],
            "current": "10.0.0.2@c2",
        },
        # md5("c601-6")[:4] == md5("c1081-3")[:4]: the later put keeps the point.
        {
            "id": "collision",
            "strategy": "CONSISTENT_HASH",
            "vnodes": 10,
            "mqs": [["T", "b", q] for q in (15, 54, 141)],
            "cids": ["c601", "c1081"],
            "current": "c601",
        },
        # Unsorted, so that the collision happens between a client's two addNode calls.
        {
            "id": "collision-unsorted",
            "strategy": "CONSISTENT_HASH",
            "vnodes": 10,
            "sort": False,
            "mqs": [["T", "b", q] for q in (15, 49, 64)],
            "cids": ["c1081", "c601", "c1081"],
            "current": "c1081",
        },
        # Seed 001: 16 queues over 3 consumers; 1 queue over 2 consumers.
        {
            "id": "avg-16-3",
            "strategy": "AVG",
            "mqs": [["T", "broker-a", q] for q in range(16)],
            "cids": ["c3", "c1", "c2"],
            "current": "c1",
        },
        {
            "id": "avg-1-2",
            "strategy": "AVG",
            "mqs": [["T", "broker-a", 0]],
            "cids": ["10.0.0.2@c2", "10.0.0.1@c1"],
            "current": "10.0.0.2@c2",
        },
    ]



def _oracle_classpath() -> str:
    missing = [tool for tool in ("java", "mvn") if shutil.which(tool) is None]
    if missing:
        real_part_missing(f"{' and '.join(missing)} not found: cannot run the real rocketmq-client classes",
                          part="Java")
    from tests.harness.realcluster import build_harness

    return build_harness()


def _run_oracle(cases: list[dict[str, Any]], workdir: Path) -> list[dict[str, Any]]:
    return run_oracle(cases, workdir, _oracle_classpath())


def test_every_strategy_matches_java(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    cases = _fixed_cases() + [random_case(i, rng) for i in range(RANDOM_CASES)]
    answers = _run_oracle(cases, tmp_path)

    problems: list[str] = []
    compared_calls = 0
    for case, java in zip(cases, answers, strict=True):
        assert java["id"] == case["id"]
        problems += compare(case, java)
        compared_calls += len(java.get("results", [])) + ("current" in java)
    assert not problems, f"{len(problems)} differences, first ones:\n" + "\n".join(problems[:20])

    # The generator really exercised what it claims to (guards against a silent no-op).
    strategies = {case["strategy"] for case in cases}
    assert strategies == set(STRATEGIES)
    assert compared_calls > 50_000
    errors = sum(1 for java in answers for r in java.get("results", []) if isinstance(r, dict))
    assert errors > 0  # the IllegalArgumentException paths were compared too


def test_fixed_cases_have_the_java_answers_we_document(tmp_path: Path) -> None:
    answers = {a["id"]: a for a in _run_oracle(_fixed_cases(), tmp_path)}
    digest = answers["digest-dup"]
    assert digest["results"] == [[0, 1, 3, 5, 6, 7], [0, 1, 3, 5, 6, 7], [2, 4]]
    assert answers["collision"]["results"] == [[], [0, 1, 2]]
    assert answers["avg-16-3"]["results"] == [
        list(range(6)),
        list(range(6, 11)),
        list(range(11, 16)),
    ]
    assert answers["avg-1-2"]["results"] == [[0], []]
