"""Every allocation strategy against answers of the real Java classes, without starting Java.

``tests/golden/java_allocations.json`` holds a few hundred cases with what rocketmq-client's
``AllocateMessageQueueStrategy`` classes (and the 5.x broker's ``allocate4Pop``) returned for every
client, captured by ``python -m tests.harness.capture_allocations`` (see that script to regenerate).
Each case is compared per client, for the extra asker ``current`` and through ``allocate_all``;
``tests/integration/test_strategy_differential.py`` runs the oracle itself on thousands more.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rmqctl.model import MessageQueue
from tests.harness.allocations import compare, decode
from tests.unit.test_strategies import JAVA_NAMES  # written out by hand from the Java getName() strings

FIXTURE = Path(__file__).resolve().parents[1] / "golden" / "java_allocations.json"
ANSWERS: list[dict[str, Any]] = json.loads(FIXTURE.read_text(encoding="ascii"))["cases"]



@pytest.mark.parametrize("answer", ANSWERS, ids=[str(a["case"]["id"]) for a in ANSWERS])
def test_rmqctl_answers_like_java(answer: dict[str, Any]) -> None:
    problems = compare(answer["case"], answer["java"])
    assert not problems, "\n".join(problems)


def _by_id(case_id: str) -> dict[str, Any]:
    return next(a for a in ANSWERS if a["case"]["id"] == case_id)


def test_the_fixture_covers_every_strategy_and_edge() -> None:
    assert len(ANSWERS) >= 300
    assert {a["case"]["strategy"] for a in ANSWERS} == set(JAVA_NAMES)
    ids = {a["case"]["id"] for a in ANSWERS}
    for name in ("AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH", "CONFIG", "MACHINE_ROOM"):
        for edge in ("more-clients-than-queues", "one-queue", "unsorted-input", "client-not-in-list",
                     "duplicate-client", "empty-client-id", "no-queues"):
            assert f"{name}/{edge}" in ids
    for name in ("POP-AVG", "POP-AVG_BY_CIRCLE"):
        for share in (-1, 0, 1, 2, 3):
            assert f"{name}/share-{share}-of-4-clients" in ids
    # Java threw somewhere, and a client outside cidAll was asked somewhere: both paths compared.
    assert any(isinstance(r, dict) for a in ANSWERS for r in a["java"].get("results", []))
    assert sum(1 for a in ANSWERS if a["case"].get("current") not in a["case"]["cids"]) >= 30


def test_pop_share_zero_is_every_queue_for_everyone() -> None:
    # allocate4Pop: a share of 0 (like -1) lets every client pop every queue; Java answers each of
    # the 4 clients with one queueId -1 entry per queue of the 6 (3 on broker-a, 3 on broker-b).
    for name in ("POP-AVG", "POP-AVG_BY_CIRCLE"):
        java = _by_id(f"{name}/share-0-of-4-clients")["java"]
        every = [["T", "broker-a", -1]] * 3 + [["T", "broker-b", -1]] * 3
        assert java["results"] == [every] * 4
        assert java["current"] == every


def test_avg_more_clients_than_queues_as_java_answered() -> None:
    java = _by_id("AVG/more-clients-than-queues")["java"]
    # indices into the sorted queues: one each for the first three clients, nothing for four
    assert java["results"] == [[0], [1], [2], [], [], [], []]
    sorted_mqs = _sorted_queues(_by_id("AVG/more-clients-than-queues"))
    assert decode(java["current"], sorted_mqs) == []


def _sorted_queues(answer: dict[str, Any]) -> list[MessageQueue]:
    mqs = [MessageQueue(t, b, q) for t, b, q in answer["case"]["mqs"]]
    return [mqs[i] for i in answer["java"]["mq_order"]]
