"""Differential test: every rmqctl allocation strategy against the real Java classes.

Thousands of random inputs (fixed seed) plus a few hand-made ones go through ONE run of
``rmqctl.harness.AllocateOracle`` (tests/harness), which calls the rocketmq-client strategies,
and the 5.x broker's ``QueryAssignmentProcessor.allocate4Pop``, the way ``RebalanceImpl`` does:
both lists sorted, ``allocate`` once per entry of cidAll. Every client's result must be identical:
same queues, same order, and an IllegalArgumentException exactly where we raise AllocationError.

Skipped when ``java`` or ``mvn`` is missing, unless ``RMQCTL_REQUIRE_REAL_CLUSTER=1``.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from rmqctl.model import MessageQueue
from rmqctl.rebalance import (
    AllocationError,
    Strategy,
    get_strategy,
    java_sorted_ids,
    java_sorted_queues,
)

SEED = 20250919
RANDOM_CASES = 4000

TOPICS = ["TopicTest", "%RETRY%group_a", "t\u00f3pico", "t\U0001f600", "T", "topic with space"]
ODD_BROKERS = [
    "broker-a",
    "broker-b",
    "broker-9",
    "broker-10",
    "Broker_\u00c4",
    "br\u00f8ker-\U0001f600",
    "\uffff-b",
    "\U00010000-b",
    "b\ud800x",
    "broker\u0000nul",
    "",
    "broker-\u00e9t\u00e9",
]
IDC_BROKERS = [
    "room1@broker-a",
    "room1@broker-b",
    "room2@broker-c",
    "room1@",
    "room1@b@",
    "@x",
    "room\U0001f600@b",
    "a@b@c",
    "room1@@",
    "room2@broker-9",
    "room2@broker-10",
    "plain",
]
IDCS = ["room1", "room2", "room\U0001f600", "", "a"]
ROOMS = ["r1", "r2", "r9", "R10", "\u00e9", "\U0001f600", "\uffff"]
INSTANCES = ["DEFAULT", "12345#85493219583021", "c\U0001f600", "c\uffff", "\u00e4", "x\ud83d", "9"]
STRATEGIES = [
    "AVG",
    "AVG_BY_CIRCLE",
    "CONSISTENT_HASH",
    "CONSISTENT_HASH",
    "CONFIG",
    "MACHINE_ROOM",
    "MACHINE_ROOM_NEARBY-AVG",
    "MACHINE_ROOM_NEARBY-AVG_BY_CIRCLE",
    "MACHINE_ROOM_NEARBY-CONSISTENT_HASH",
    "MACHINE_ROOM_NEARBY-CONFIG",
    "MACHINE_ROOM_NEARBY-MACHINE_ROOM",
    "POP-AVG",
    "POP-AVG_BY_CIRCLE",
]
BROKER_ROOM_PATTERN = r"^([^-@]+)[-@]"
CLIENT_ROOM_PATTERN = r"@([^-]+)-"


# ---------------------------------------------------------------------------------------------
# Case generation


def _spread(total: int, brokers: list[str], rng: random.Random) -> list[list[Any]]:
    counts = [0] * len(brokers)
    for _ in range(total):
        counts[rng.randrange(len(brokers))] += 1
    return [[b, n] for b, n in zip(brokers, counts)]


def _random_case(case_id: int, rng: random.Random) -> dict[str, Any]:
    strategy = rng.choice(STRATEGIES)
    nearby = strategy.startswith("MACHINE_ROOM_NEARBY")
    topic = rng.choice(TOPICS)
    client_count = rng.randint(1, 40)
    if nearby:
        rooms = rng.sample(ROOMS, rng.randint(1, 4))
        sep = "@" if strategy.endswith("MACHINE_ROOM") else rng.choice("-@")
        brokers = list(
            dict.fromkeys(f"{rng.choice(rooms)}{sep}broker{k}" for k in range(rng.randint(1, 4)))
        )
        if rng.random() < 0.04:
            brokers.append("-no-room")  # resolves to no room: Java throws, so must we
        client_rooms = rooms + [rng.choice(ROOMS)]
        cids = [
            f"10.0.{rng.randint(0, 2)}.{rng.randint(1, 20)}@{rng.choice(client_rooms)}-c{rng.randint(0, 9)}"
            for _ in range(client_count)
        ]
        if rng.random() < 0.04:
            cids.append("10.0.0.1@noroom")
    else:
        pool = IDC_BROKERS if "MACHINE_ROOM" in strategy else ODD_BROKERS
        brokers = rng.sample(pool, rng.randint(1, 4))
        cids = [f"10.0.0.{rng.randint(1, 12)}@{rng.choice(INSTANCES)}" for _ in range(client_count)]
    cids += rng.choices(cids, k=rng.randint(0, 3))  # duplicate client ids
    if rng.random() < 0.02:
        cids.append("")  # an empty client id: IllegalArgumentException for that client
    rng.shuffle(cids)

    mqs = [
        [topic, broker, q]
        for broker, count in _spread(rng.randint(0, 64), brokers, rng)
        for q in range(count)
    ]
    rng.shuffle(mqs)
    config = rng.sample(mqs, rng.randint(0, min(len(mqs), 6)))
    if rng.random() < 0.3:
        config.append([topic, "elsewhere", rng.randint(0, 3)])
    current = rng.choice([*cids, "not-a-member", ""]) if cids else "x"
    idc_pool = ROOMS if nearby else IDCS  # NEARBY-MACHINE_ROOM: the rooms are the idcs
    return {
        "id": case_id,
        "strategy": strategy,
        "vnodes": rng.randint(0, 20),
        "mqs": mqs,
        "cids": cids,
        "current": current,
        "config": config,
        "idcs": rng.sample(idc_pool, rng.randint(0, len(idc_pool))),
        "broker_pattern": BROKER_ROOM_PATTERN,
        "client_pattern": CLIENT_ROOM_PATTERN,
        "pop_share": rng.randint(-1, len(cids) + 1),
    }


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


# ---------------------------------------------------------------------------------------------
# Running the oracle


def _oracle_classpath() -> str:
    required = os.environ.get("RMQCTL_REQUIRE_REAL_CLUSTER") == "1"
    missing = [tool for tool in ("java", "mvn") if shutil.which(tool) is None]
    if missing:
        reason = f"{' and '.join(missing)} not found: cannot run the real rocketmq-client classes"
        if required:
            pytest.fail(reason + " (RMQCTL_REQUIRE_REAL_CLUSTER=1)")
        pytest.skip(reason)
    from tests.harness.realcluster import build_harness

    return build_harness()


def _run_oracle(cases: list[dict[str, Any]], workdir: Path) -> list[dict[str, Any]]:
    payload = "".join(json.dumps(case) + "\n" for case in cases)
    proc = subprocess.run(
        [
            shutil.which("java") or "java",
            # The broker jar's logback config writes under ~/logs; keep that in the temp dir.
            f"-Duser.home={workdir}",
            # Only 4.x hashes with the platform charset; make it UTF-8 like 5.x.
            "-Dfile.encoding=UTF-8",
            "-cp",
            _oracle_classpath(),
            "rmqctl.harness.AllocateOracle",
        ],
        input=payload.encode("ascii"),
        capture_output=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-4000:]
    lines = proc.stdout.decode("ascii").splitlines()
    assert len(lines) == len(cases), proc.stderr.decode(errors="replace")[-4000:]
    return [json.loads(line) for line in lines]


# ---------------------------------------------------------------------------------------------
# Comparing

Outcome = list[MessageQueue] | str  # a queue list, or the exception's simple class name


def _queue(raw: Sequence[Any]) -> MessageQueue:
    return MessageQueue(raw[0], raw[1], int(raw[2]))


def _decode(raw: Any, sorted_mqs: Sequence[MessageQueue]) -> Outcome:
    if isinstance(raw, dict):
        return str(raw["error"])
    return [sorted_mqs[item] if isinstance(item, int) else _queue(item) for item in raw]


def _ours(
    strategy: Strategy, cid: str, mqs: Sequence[MessageQueue], cids: Sequence[str]
) -> Outcome:
    try:
        return strategy.allocate(cid, mqs, cids)
    except AllocationError:
        return "IllegalArgumentException"


def _build(case: dict[str, Any]) -> Strategy:
    name = case["strategy"]
    options: dict[str, object] = {}
    base = name.split("-", 1)[-1] if name.startswith(("MACHINE_ROOM_NEARBY-", "POP-")) else name
    if base == "CONSISTENT_HASH":
        options["vnodes"] = case.get("vnodes", 10)
    if base == "CONFIG":
        options["queues"] = [_queue(q) for q in case.get("config", [])]
    if base == "MACHINE_ROOM":
        options["consumer_idcs"] = set(case.get("idcs", []))
    if name.startswith("MACHINE_ROOM_NEARBY-"):
        options["broker_pattern"] = case["broker_pattern"]
        options["client_pattern"] = case["client_pattern"]
    if name.startswith("POP-"):
        options["pop_share_queue_num"] = case.get("pop_share", -1)
    return get_strategy(name, **options)


def _compare(case: dict[str, Any], java: dict[str, Any]) -> list[str]:
    """Every difference between rmqctl and Java for one case (empty when identical)."""
    where = f"case {case['id']} ({case['strategy']})"
    problems: list[str] = []
    mqs = [_queue(q) for q in case["mqs"]]
    cids = list(case["cids"])
    presorted = case.get("sort", True)
    if presorted:
        sorted_mqs, sorted_cids = java_sorted_queues(mqs), java_sorted_ids(cids)
        if sorted_cids != java["cids"]:
            problems.append(f"{where}: cidAll order {sorted_cids!r} != Java {java['cids']!r}")
        if sorted_mqs != [mqs[i] for i in java["mq_order"]]:
            problems.append(f"{where}: mqAll order differs from Java")
    else:
        sorted_mqs, sorted_cids = mqs, cids
    if "error" in java:
        if case["strategy"].startswith("POP-") and java["error"] == "ClassNotFoundException":
            return problems  # a 4.x jar set: the broker has no POP assignment to compare with
        return [*problems, f"{where}: Java could not build the strategy: {java['error']}"]
    strategy = _build(case)

    expected = [_decode(raw, sorted_mqs) for raw in java["results"]]
    for cid, want in zip(sorted_cids, expected):
        got = _ours(strategy, cid, sorted_mqs, sorted_cids)
        if got != want:
            problems.append(f"{where}: allocate({cid!r}) = {got!r}, Java {want!r}")
    if "current" in java:
        want = _decode(java["current"], sorted_mqs)
        got = _ours(strategy, case["current"], sorted_mqs, sorted_cids)
        if got != want:
            problems.append(f"{where}: current {case['current']!r} = {got!r}, Java {want!r}")

    if presorted:
        java_failed = any(isinstance(want, str) for want in expected)
        try:
            everyone = strategy.allocate_all(mqs, cids)
        except AllocationError:
            if not java_failed:
                problems.append(f"{where}: allocate_all raised but Java answered every client")
        else:
            if java_failed:
                problems.append(f"{where}: allocate_all answered but Java threw for some client")
            if list(everyone) != list(dict.fromkeys(sorted_cids)):
                problems.append(
                    f"{where}: allocate_all keys are not the distinct ids in Java order"
                )
            for cid, want in zip(sorted_cids, expected):
                if everyone.get(cid) != want:
                    problems.append(
                        f"{where}: allocate_all[{cid!r}] = {everyone.get(cid)!r}, Java {want!r}"
                    )
    return problems


def test_every_strategy_matches_java(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    cases = _fixed_cases() + [_random_case(i, rng) for i in range(RANDOM_CASES)]
    answers = _run_oracle(cases, tmp_path)

    problems: list[str] = []
    compared_calls = 0
    for case, java in zip(cases, answers):
        assert java["id"] == case["id"]
        problems += _compare(case, java)
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
