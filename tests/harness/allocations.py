"""Allocation cases for the Java oracle, and how rmqctl's answers are compared with Java's.

One case is a JSON object in ``AllocateOracle``'s input format (strategy, queues, client ids and
the strategy's options); the oracle answers with what the real rocketmq-client classes (and the
5.x broker's ``allocate4Pop``) return for every client. Used by the differential test, which runs
the oracle on thousands of random cases, and by ``capture_allocations``, which freezes a few
hundred answers into ``tests/golden/java_allocations.json`` for the fast tier.

Imports rmqctl's rebalance package and the standard library; the harness build (Maven) is only
reached by :func:`run_oracle`.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rmqctl.model import MessageQueue
from rmqctl.rebalance import (
    AllocationError,
    Strategy,
    get_strategy,
    java_sorted_ids,
    java_sorted_queues,
)

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
    return [[b, n] for b, n in zip(brokers, counts, strict=True)]


def random_case(
    case_id: int | str, rng: random.Random, max_clients: int = 40, max_queues: int = 64
) -> dict[str, Any]:
    """One random case: odd names (UTF-16 order, lone surrogates), duplicates, strangers, errors."""
    strategy = rng.choice(STRATEGIES)
    nearby = strategy.startswith("MACHINE_ROOM_NEARBY")
    topic = rng.choice(TOPICS)
    client_count = rng.randint(1, max_clients)
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
        for broker, count in _spread(rng.randint(0, max_queues), brokers, rng)
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


def _queues(topic: str, broker: str, count: int) -> list[list[Any]]:
    return [[topic, broker, q] for q in range(count)]


def _rooms(count_per_room: int, *rooms: str) -> list[list[Any]]:
    return [["T", f"{room}-broker", q] for room in rooms for q in range(count_per_room)]


def edge_cases() -> list[dict[str, Any]]:
    """Hand-made cases at the edges of every strategy, each named by what it probes."""
    plain = ["AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH", "CONFIG", "MACHINE_ROOM"]
    nearby = [f"MACHINE_ROOM_NEARBY-{inner}" for inner in plain]
    pops = ["POP-AVG", "POP-AVG_BY_CIRCLE"]
    six_on_two_rooms = [["T", "room1@broker-a", q] for q in range(3)] + [
        ["T", "room2@broker-b", q] for q in range(3)
    ]
    cases: list[dict[str, Any]] = []

    def add(case_id: str, strategy: str, mqs: list[list[Any]], cids: list[str], **extra: Any) -> None:
        case: dict[str, Any] = {"id": case_id, "strategy": strategy, "mqs": mqs, "cids": cids}
        if strategy.startswith("MACHINE_ROOM_NEARBY-"):
            case["broker_pattern"] = BROKER_ROOM_PATTERN
            case["client_pattern"] = CLIENT_ROOM_PATTERN
        if strategy.endswith("MACHINE_ROOM"):
            case.setdefault("idcs", ["room1", "r1"])
        if strategy.endswith("CONFIG"):
            first = mqs[0] if mqs else ["T", "x", 0]
            case.setdefault("config", [["T", "room1@broker-a", 2], ["T", "elsewhere", 0], first])
        case.update(extra)
        cases.append(case)

    for name in plain:
        mqs = six_on_two_rooms if name == "MACHINE_ROOM" else _queues("T", "broker-a", 5)
        add(f"{name}/more-clients-than-queues", name, mqs[:3], [f"c{i}" for i in range(1, 8)], current="c7")
        add(f"{name}/one-queue", name, mqs[:1], ["c1", "c2", "c3"], current="c2")
        add(f"{name}/one-client", name, mqs, ["c1"], current="c1")
        add(f"{name}/queues-equal-clients", name, mqs[:4], ["c1", "c2", "c3", "c4"], current="c4")
        add(f"{name}/remainder", name, mqs + _queues("T", "broker-b", 6), ["c1", "c2", "c3", "c4"],
            current="c3")
        add(f"{name}/unsorted-input", name, list(reversed(mqs)) + _queues("U", "broker-0", 3),
            ["c3", "c1", "c2"], current="c1", sort=False)
        add(f"{name}/client-not-in-list", name, mqs, ["c1", "c2"], current="stranger")
        add(f"{name}/duplicate-client", name, mqs + _queues("T", "broker-c", 4), ["c1", "c1", "c2"],
            current="c1")
        add(f"{name}/empty-client-id", name, mqs, ["c1", "c2"], current="")
        add(f"{name}/no-queues", name, [], ["c1", "c2"], current="c1")
    for vnodes in (0, 1, 2, 10, 33):
        add(f"CONSISTENT_HASH/vnodes-{vnodes}", "CONSISTENT_HASH", _queues("T", "broker-a", 12),
            ["10.0.0.1@a", "10.0.0.2@b", "10.0.0.3@c"], vnodes=vnodes, current="10.0.0.2@b")
    for idcs in ([], ["room1"], ["room2"], ["room1", "room2"], [""], ["room"]):
        brokers = six_on_two_rooms + [["T", name, 0] for name in ("room1@", "@x", "a@b@c", "room1@@", "plain")]
        add(f"MACHINE_ROOM/idcs-{'+'.join(idcs) or 'none'}", "MACHINE_ROOM", brokers, ["c1", "c2", "c3"],
            idcs=idcs, current="c3")
    add("CONFIG/empty-list", "CONFIG", _queues("T", "broker-a", 3), ["c1"], config=[], current="c1")

    two_rooms = ["10.0.0.1@r1-a", "10.0.0.2@r1-b", "10.0.0.3@r2-a"]
    for name in nearby:
        idcs = {"idcs": ["r1", "r2"]} if name.endswith("MACHINE_ROOM") else {}
        sep_rooms = (
            [["T", f"{room}@broker", q] for room in ("r1", "r2", "r3") for q in range(4)]
            if name.endswith("MACHINE_ROOM") else _rooms(4, "r1", "r2", "r3")
        )
        add(f"{name}/orphan-room-shared", name, sep_rooms, two_rooms, current="10.0.0.3@r2-a", **idcs)
        add(f"{name}/every-room-served", name, sep_rooms[:8], two_rooms, current="10.0.0.1@r1-a", **idcs)
        add(f"{name}/room-without-queues", name, sep_rooms[:4], [*two_rooms, "10.0.0.9@r9-z"],
            current="10.0.0.9@r9-z", **idcs)
        add(f"{name}/client-not-in-list", name, sep_rooms, two_rooms, current="10.0.0.7@r1-q", **idcs)
        add(f"{name}/client-without-room", name, sep_rooms, [*two_rooms, "10.0.0.1@noroom"],
            current="10.0.0.1@r1-a", **idcs)
        add(f"{name}/broker-without-room", name, [*sep_rooms, ["T", "-no-room", 0]], two_rooms,
            current="10.0.0.1@r1-a", **idcs)
        add(f"{name}/more-clients-than-queues", name, sep_rooms[:2],
            [f"10.0.0.{i}@r1-c" for i in range(1, 6)], current="10.0.0.5@r1-c", **idcs)
        add(f"{name}/unsorted-input", name, list(reversed(sep_rooms)), list(reversed(two_rooms)),
            current="10.0.0.2@r1-b", sort=False, **idcs)

    six = _queues("T", "broker-a", 3) + _queues("T", "broker-b", 3)
    four = ["c1", "c2", "c3", "c4"]
    for name in pops:
        # share <= 0 or share >= c - 1: everyone may pop every queue; else own + following shares
        for share in (-2, -1, 0, 1, 2, 3, 4):
            add(f"{name}/share-{share}-of-4-clients", name, six, four, pop_share=share, current="c2")
        for share in (0, 1):
            add(f"{name}/share-{share}-of-2-clients", name, six, ["c1", "c2"], pop_share=share, current="c1")
            add(f"{name}/share-{share}-of-3-clients", name, six, ["c1", "c2", "c3"], pop_share=share,
                current="c3")
        add(f"{name}/share-0-stranger", name, six, four, pop_share=0, current="stranger")
        add(f"{name}/share-1-stranger", name, six, four, pop_share=1, current="stranger")
        add(f"{name}/more-clients-than-queues", name, six[:3], [f"c{i}" for i in range(1, 9)], pop_share=2,
            current="c8")
        add(f"{name}/clients-equal-queues", name, six[:4], four, pop_share=1, current="c4")
        add(f"{name}/one-queue", name, six[:1], ["c1", "c2", "c3", "c4"], pop_share=1, current="c3")
        add(f"{name}/unsorted-input", name, list(reversed(six)), ["c3", "c1", "c4", "c2"], pop_share=1,
            current="c1", sort=False)
        add(f"{name}/duplicate-client", name, six + _queues("T", "broker-c", 4), ["c1", "c1", "c2", "c3", "c4"],
            pop_share=1, current="c1")
        add(f"{name}/empty-client-id", name, six, four, pop_share=1, current="")
        add(f"{name}/no-queues", name, [], four, pop_share=1, current="c1")
    return cases


# ---------------------------------------------------------------------------------------------
# Running the oracle


def run_oracle(cases: Sequence[dict[str, Any]], workdir: Path, classpath: str) -> list[dict[str, Any]]:
    """One run of ``rmqctl.harness.AllocateOracle`` over ``cases``: one answer per case, in order."""
    payload = "".join(json.dumps(case) + "\n" for case in cases)
    proc = subprocess.run(
        [
            shutil.which("java") or "java",
            # The broker jar's logback config writes under ~/logs; keep that in the temp dir.
            f"-Duser.home={workdir}",
            # Only 4.x hashes with the platform charset; make it UTF-8 like 5.x.
            "-Dfile.encoding=UTF-8",
            "-cp",
            classpath,
            "rmqctl.harness.AllocateOracle",
        ],
        input=payload.encode("ascii"),
        capture_output=True,
        timeout=600,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.decode(errors="replace")[-4000:])
    lines = proc.stdout.decode("ascii").splitlines()
    if len(lines) != len(cases):
        raise RuntimeError(f"{len(lines)} answers for {len(cases)} cases: " + proc.stderr.decode(errors="replace"))
    return [json.loads(line) for line in lines]


# ---------------------------------------------------------------------------------------------
# Comparing

Outcome = list[MessageQueue] | str  # a queue list, or the exception's simple class name


def _queue(raw: Sequence[Any]) -> MessageQueue:
    return MessageQueue(raw[0], raw[1], int(raw[2]))


def decode(raw: Any, sorted_mqs: Sequence[MessageQueue]) -> Outcome:
    """A Java answer as a queue list (indices into the sorted queues, or triples), or an error name."""
    if isinstance(raw, dict):
        return str(raw["error"])
    return [sorted_mqs[item] if isinstance(item, int) else _queue(item) for item in raw]


def _ours(strategy: Strategy, cid: str, mqs: Sequence[MessageQueue], cids: Sequence[str]) -> Outcome:
    try:
        return strategy.allocate(cid, mqs, cids)
    except AllocationError:
        return "IllegalArgumentException"


def build_strategy(case: dict[str, Any]) -> Strategy:
    """rmqctl's strategy for a case, with the options the oracle gave the Java one."""
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


def compare(case: dict[str, Any], java: dict[str, Any]) -> list[str]:
    """Every difference between rmqctl and Java for one case (empty when identical).

    Per client (``allocate`` with Java's sorted lists, and the ``current`` asker), and for sorted
    cases also ``allocate_all`` on the unsorted input: same keys in Java order, same lists, and an
    error exactly where Java threw for some client.
    """
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
    strategy = build_strategy(case)

    expected = [decode(raw, sorted_mqs) for raw in java["results"]]
    for cid, want in zip(sorted_cids, expected, strict=False):
        got = _ours(strategy, cid, sorted_mqs, sorted_cids)
        if got != want:
            problems.append(f"{where}: allocate({cid!r}) = {got!r}, Java {want!r}")
    if "current" in java:
        want = decode(java["current"], sorted_mqs)
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
                problems.append(f"{where}: allocate_all keys are not the distinct ids in Java order")
            for cid, want in zip(sorted_cids, expected, strict=False):
                if everyone.get(cid) != want:
                    problems.append(f"{where}: allocate_all[{cid!r}] = {everyone.get(cid)!r}, Java {want!r}")
    return problems
