"""Allocation strategies against the Java client's own unit tests and hand-derived cases.

Expected values come from the Java tests (``client/src/test/.../rebalance/*Test.java``), from
working the Java code through by hand, or from runs of the real rocketmq-client 5.3.3 classes
through ``tests/harness`` (``AllocateOracle``); each case says which.
"""

from __future__ import annotations

import bisect
import hashlib
import random
from collections.abc import Sequence

import pytest

from rmqctl.model import MessageQueue
from rmqctl.rebalance import (
    STRATEGY_NAMES,
    AllocationError,
    MachineRoomNearbyStrategy,
    RegexRoomResolver,
    UnknownStrategyError,
    allocate_avg,
    allocate_avg_by_circle,
    allocate_by_config,
    allocate_by_machine_room,
    allocate_consistent_hash,
    allocate_machine_room_nearby,
    allocate_pop,
    get_strategy,
    java_sorted_ids,
    java_sorted_queues,
)
from rmqctl.rebalance.strategies import (
    AveragelyStrategy,
    ConsistentHashStrategy,
    java_split,
    java_utf8,
    md5_hash,
)


def queues(n: int, topic: str = "topic", broker: str = "brokerName") -> list[MessageQueue]:
    return [MessageQueue(topic, broker, i) for i in range(n)]


def ids(queues_: Sequence[MessageQueue]) -> list[int]:
    return [mq.queue_id for mq in queues_]


def short(queues_: Sequence[MessageQueue]) -> list[str]:
    return [f"{mq.broker_name[-1]}/{mq.queue_id}" for mq in queues_]


def cid_list(n: int, prefix: str = "CID_PREFIX") -> list[str]:
    return [f"{prefix}{i}" for i in range(n)]


# ---------------------------------------------------------------------------------------------
# Ports of the Java client's tests


def test_java_averagely_10_queues_4_consumers() -> None:
    # AllocateMessageQueueAveragelyTest: sizes 3,3,2,2; blocks are contiguous.
    cids, mqs = cid_list(4), queues(10)
    got = [ids(allocate_avg(cid, mqs, cids)) for cid in cids]
    assert [len(g) for g in got] == [3, 3, 2, 2]
    assert got == [[0, 1, 2], [3, 4, 5], [6, 7], [8, 9]]


def test_java_averagely_by_circle() -> None:
    # AllocateMessageQueueAveragelyByCircleTest.
    cids, mqs = cid_list(4), queues(10)
    assert allocate_avg_by_circle("CID_PREFIX", mqs, cids) == []
    got = {cid: ids(allocate_avg_by_circle(cid, mqs, cids)) for cid in cids}
    assert got == {
        "CID_PREFIX0": [0, 4, 8],
        "CID_PREFIX1": [1, 5, 9],
        "CID_PREFIX2": [2, 6],
        "CID_PREFIX3": [3, 7],
    }


def test_java_by_config() -> None:
    # AllocateMessageQueueByConfigTest: both consumers get the configured four queues.
    cids, mqs = cid_list(2), queues(4)
    for cid in cids:
        assert ids(allocate_by_config(cid, mqs, cids, mqs)) == [0, 1, 2, 3]


def test_by_config_skips_check_and_returns_list_as_is() -> None:
    # Java's AllocateMessageQueueByConfig never calls check(): no error, any order kept.
    config = [MessageQueue("x", "z", 3), MessageQueue("x", "a", 1)]
    assert allocate_by_config("", [], [], config) == config
    strategy = get_strategy("CONFIG", queues=config)
    assert strategy.allocate("nobody", queues(2), ["c1"]) == config
    assert strategy.allocate_all([], ["b", "a"]) == {"a": config, "b": config}


def test_java_by_machine_room() -> None:
    # AllocateMessageQueueByMachineRoomTest: queues 0-4 on room1@broker-a, 5-9 on room2@broker-b,
    # consumers serve room1 only: 5 queues over 2 consumers → blocks of 2, remainder to #0.
    cids = cid_list(2)
    mqs = [
        MessageQueue("topic", "room1@broker-a" if i < 5 else "room2@broker-b", i) for i in range(10)
    ]
    with pytest.raises(AllocationError, match="mqAll is null or mqAll empty"):
        allocate_by_machine_room(cids[0], [], cids, {"room1"})
    got = {cid: ids(allocate_by_machine_room(cid, mqs, cids, {"room1"})) for cid in cids}
    assert got == {"CID_PREFIX0": [0, 1, 4], "CID_PREFIX1": [2, 3]}


def test_java_consistent_hash_guards() -> None:
    # AllocateMessageQueueConsitentHashTest: unknown current → []; empty inputs → IAE.
    cids, mqs = cid_list(2, "CID-"), queues(6, "topic_test")
    assert allocate_consistent_hash(str(2**31 - 1), mqs, cids) == []
    with pytest.raises(AllocationError, match="currentCID is empty"):
        allocate_consistent_hash("", mqs, cids)
    with pytest.raises(AllocationError, match="mqAll"):
        allocate_consistent_hash("0", [], cids)
    with pytest.raises(AllocationError, match="cidAll"):
        allocate_consistent_hash("0", mqs, [])
    with pytest.raises(AllocationError, match="illegal virtualNodeCnt"):
        get_strategy("CONSISTENT_HASH", vnodes=-1)


def _consistent_hash_scenario(queue_size: int, consumer_size: int) -> None:
    """AllocateMessageQueueConsitentHashTest.testAllocate with 3 virtual nodes."""

    def allocate_everyone(cids: list[str]) -> dict[MessageQueue, str]:
        owner: dict[MessageQueue, str] = {}
        allocated: list[MessageQueue] = []
        for cid in cids:
            got = allocate_consistent_hash(cid, mqs, cids, 3)
            allocated.extend(got)
            owner.update({mq: cid for mq in got})
        assert sorted(allocated) == sorted(mqs)  # everything, exactly once
        return owner

    mqs = queues(queue_size, "topic_test")
    cids = cid_list(consumer_size, "CID-")
    before = allocate_everyone(cids)
    removed, rest = cids[0], cids[1:]
    if not rest:
        return
    after_remove = allocate_everyone(rest)
    for mq, owner in before.items():
        if owner != removed:
            assert after_remove[mq] == owner  # only the removed client's queues move
    after_add = allocate_everyone([*rest, "CID-NEW"])
    for mq, owner in after_add.items():
        if owner != "CID-NEW":
            assert after_remove[mq] == owner  # the newcomer only takes, nobody else moves


@pytest.mark.parametrize(("queue_size", "consumer_size"), [(20, 10), (10, 20)])
def test_java_consistent_hash_allocate(queue_size: int, consumer_size: int) -> None:
    _consistent_hash_scenario(queue_size, consumer_size)


def test_java_consistent_hash_random_cases() -> None:
    rng = random.Random(100)
    for _ in range(10):
        _consistent_hash_scenario(rng.randint(1, 20), rng.randint(1, 20))


class SplitDashResolver:
    """The Java test's resolver: the part before the first ``-`` is the room."""

    def broker_room(self, mq: MessageQueue) -> str:
        return java_split(mq.broker_name, "-")[0]

    def client_room(self, client_id: str) -> str:
        return java_split(client_id, "-")[0]


def _nearby_prepare(
    broker_idcs: int, queue_size: int, consumer_idcs: int, consumer_size: int
) -> tuple[list[MessageQueue], list[str]]:
    mqs = [
        MessageQueue("topic_test", f"IDC{i}-brokerName", q)
        for i in range(1, broker_idcs + 1)
        for q in range(queue_size)
    ]
    cids = [f"IDC{i}-CID-{c}" for i in range(1, consumer_idcs + 1) for c in range(consumer_size)]
    return mqs, cids


def _nearby_run(mqs: list[MessageQueue], cids: list[str]) -> dict[str, list[MessageQueue]]:
    resolver, inner = SplitDashResolver(), AveragelyStrategy()
    out = {cid: allocate_machine_room_nearby(cid, mqs, cids, inner, resolver) for cid in cids}
    everything = [mq for got in out.values() for mq in got]
    if cids:
        assert sorted(everything) == sorted(mqs)  # hasAllocateAllQ: all, exactly once
    else:
        assert everything == []
    return out


@pytest.mark.parametrize("consumers", [10, 20, 30, 0])
def test_java_nearby_same_idcs(consumers: int) -> None:
    # AllocateMachineRoomNearByTest.testWhenIDCSizeEquals(5, 20, consumers).
    resolver = SplitDashResolver()
    mqs, cids = _nearby_prepare(5, 20, 5, consumers)
    for cid, got in _nearby_run(mqs, cids).items():
        assert all(resolver.broker_room(mq) == resolver.client_room(cid) for mq in got)


@pytest.mark.parametrize("consumers", [10, 5, 20, 0])
def test_java_nearby_more_consumer_idcs(consumers: int) -> None:
    # testWhenConsumerIDCIsMore(5, 1, 10, consumers): IDC6 has consumers but no broker.
    resolver = SplitDashResolver()
    mqs, cids = _nearby_prepare(5, 10, 6, consumers)
    broker_rooms = {resolver.broker_room(mq) for mq in mqs}
    for cid, got in _nearby_run(mqs, cids).items():
        for mq in got:
            if resolver.broker_room(mq) in broker_rooms:
                assert resolver.broker_room(mq) == resolver.client_room(cid)


@pytest.mark.parametrize("consumers", [10, 5, 20, 0])
def test_java_nearby_fewer_consumer_idcs(consumers: int) -> None:
    # testWhenConsumerIDCIsLess(5, 2, 10, consumers): IDC4 and IDC5 have no consumer, so their
    # queues are shared by everyone, and each live room still gets all of its own queues.
    resolver = SplitDashResolver()
    mqs, cids = _nearby_prepare(5, 10, 3, consumers)
    out = _nearby_run(mqs, cids)
    for room in {resolver.client_room(cid) for cid in cids}:
        held = {mq for cid, got in out.items() if resolver.client_room(cid) == room for mq in got}
        assert {mq for mq in mqs if resolver.broker_room(mq) == room} <= held


def test_java_nearby_random_cases() -> None:
    rng = random.Random(7)
    for _ in range(10):
        consumers, queue_size = rng.randint(1, 200), rng.randint(1, 100)
        broker_idcs, consumer_idcs = rng.randint(1, 10), rng.randint(1, 10)
        _nearby_run(*_nearby_prepare(broker_idcs, queue_size, consumer_idcs, consumers))


# ---------------------------------------------------------------------------------------------
# Seed 001 and the digest's cases


def test_one_queue_two_consumers_leaves_one_idle() -> None:
    mqs, cids = queues(1), ["10.0.0.1@c1", "10.0.0.2@c2"]
    for name in ("AVG", "AVG_BY_CIRCLE"):
        got = get_strategy(name).allocate_all(mqs, cids)
        assert got == {"10.0.0.1@c1": mqs, "10.0.0.2@c2": []}


def test_avg_16_queues_3_consumers_is_6_5_5_contiguous() -> None:
    mqs = queues(16, "T", "broker-a")
    got = get_strategy("AVG").allocate_all(reversed(mqs), ["c3", "c1", "c2"])
    assert list(got) == ["c1", "c2", "c3"]
    assert [ids(v) for v in got.values()] == [
        [0, 1, 2, 3, 4, 5],
        [6, 7, 8, 9, 10],
        [11, 12, 13, 14, 15],
    ]


def test_avg_more_consumers_than_queues_by_hand() -> None:
    # Digest scenario (c): 4 queues over c1..c6 → one queue each for the first four.
    mqs = [MessageQueue("T", b, q) for b in ("broker-a", "broker-b") for q in (0, 1)]
    got = get_strategy("AVG").allocate_all(mqs, [f"c{i}" for i in range(1, 7)])
    assert [short(v) for v in got.values()] == [["a/0"], ["a/1"], ["b/0"], ["b/1"], [], []]


def test_consistent_hash_duplicate_client_ids() -> None:
    # Digest §2.3, re-run through the real 5.3.3 classes (AllocateOracle): the duplicate gets a
    # second set of ring points (…@c1-10 … -19), i.e. twice the weight.
    mqs = [MessageQueue("TopicTest", f"broker-{b}", q) for b in "ab" for q in range(4)]
    cids = ["10.0.0.1@c1", "10.0.0.1@c1", "10.0.0.2@c2"]
    got = get_strategy("CONSISTENT_HASH").allocate_all(mqs, cids)
    assert {cid: short(v) for cid, v in got.items()} == {
        "10.0.0.1@c1": ["a/0", "a/1", "a/3", "b/1", "b/2", "b/3"],
        "10.0.0.2@c2": ["a/2", "b/0"],
    }
    for cid in cids:
        assert allocate_consistent_hash(cid, mqs, cids) == got[cid]


def test_consistent_hash_zero_virtual_nodes_gives_nobody_anything() -> None:
    mqs, cids = queues(8), ["a", "b"]
    assert get_strategy("CONSISTENT_HASH", vnodes=0).allocate_all(mqs, cids) == {"a": [], "b": []}
    assert allocate_consistent_hash("a", mqs, cids, 0) == []


def _reference_owner(mq: MessageQueue, cids: list[str], vnodes: int) -> str:
    """A ring written straight from ConsistentHashRouter (no duplicates, no collisions)."""

    def md5(text: str) -> int:
        return int.from_bytes(hashlib.md5(text.encode()).digest()[:4], "big")

    ring = {md5(f"{cid}-{r}"): cid for cid in cids for r in range(vnodes)}
    points = sorted(ring)
    at = bisect.bisect_left(points, md5(mq.java_string()))
    return ring[points[at % len(points)]]


def test_consistent_hash_wraps_around_to_the_first_point() -> None:
    cids = ["10.0.0.1@x", "10.0.0.2@y"]
    top = max(md5_hash(f"{cid}-0") for cid in cids)
    # A queue hashing above every ring point belongs to the owner of the smallest point.
    beyond = next(
        mq
        for mq in (MessageQueue("T", "b", q) for q in range(10_000))
        if md5_hash(mq.java_string()) > top
    )
    lowest = min(cids, key=lambda cid: md5_hash(f"{cid}-0"))
    assert _reference_owner(beyond, cids, 1) == lowest
    assert allocate_consistent_hash(lowest, [beyond], cids, 1) == [beyond]


def test_consistent_hash_matches_reference_ring() -> None:
    rng = random.Random(3)
    for _ in range(50):
        cids = java_sorted_ids(
            {f"10.0.{rng.randint(0, 9)}.{rng.randint(0, 99)}@i" for _ in range(5)}
        )
        mqs = java_sorted_queues(queues(rng.randint(1, 30), "T", rng.choice("ab")))
        vnodes = rng.randint(1, 12)
        got = get_strategy("CONSISTENT_HASH", vnodes=vnodes).allocate_all(mqs, cids)
        for cid, mine in got.items():
            assert mine == [mq for mq in mqs if _reference_owner(mq, cids, vnodes) == cid]


def test_consistent_hash_collision_later_put_wins() -> None:
    # md5("c601-6") and md5("c1081-3") share their first four bytes (1114113892). In Java order
    # c1081 is put first and c601 overwrites the point. Java 5.3.3 (AllocateOracle): all three
    # queues go to c601; T/b/54 and T/b/141 are routed to exactly that point.
    assert md5_hash("c601-6") == md5_hash("c1081-3") == 1114113892
    mqs = [MessageQueue("T", "b", q) for q in (15, 54, 141)]
    got = get_strategy("CONSISTENT_HASH").allocate_all(mqs, ["c601", "c1081"])
    assert {cid: ids(v) for cid, v in got.items()} == {"c1081": [], "c601": [15, 54, 141]}
    # Fed unsorted, c1081 is put last and keeps the point instead.
    assert ids(allocate_consistent_hash("c1081", mqs, ["c601", "c1081"])) == [54, 141]


def test_consistent_hash_existing_counts_points_left_on_the_ring() -> None:
    # Unsorted [c1081, c601, c1081]: c601 took c1081-3's point, so when c1081 comes again only
    # 9 of its points are on the ring and Java numbers the new ones c1081-9 … c1081-18 (not
    # -10 … -19). Java 5.3.3 ("sort": false): all of T/b/15, 49, 64 go to c601; counting the
    # points naively would give T/b/15 to c1081.
    mqs = [MessageQueue("T", "b", q) for q in (15, 49, 64)]
    cids = ["c1081", "c601", "c1081"]
    assert ids(allocate_consistent_hash("c601", mqs, cids)) == [15, 49, 64]
    assert allocate_consistent_hash("c1081", mqs, cids) == []


# ---------------------------------------------------------------------------------------------
# Java string semantics


def test_sort_is_utf16_not_python_order() -> None:
    assert java_sorted_ids(["broker-9", "broker-10"]) == ["broker-10", "broker-9"]
    assert java_sorted_ids(["10.0.0.9@x", "10.0.0.2@x", "10.0.0.10@x"]) == [
        "10.0.0.10@x",
        "10.0.0.2@x",
        "10.0.0.9@x",
    ]
    # U+1F600 is the pair D83D DE00 in UTF-16, which sorts below U+FFFF; Python says otherwise.
    assert sorted(["\U0001f600", "\uffff"]) == ["\uffff", "\U0001f600"]
    assert java_sorted_ids(["\uffff", "\U0001f600"]) == ["\U0001f600", "\uffff"]


def test_allocation_follows_utf16_order() -> None:
    mqs = [MessageQueue("T", "broker-9", 0), MessageQueue("T", "broker-10", 0)]
    got = get_strategy("AVG").allocate_all(mqs, ["c-\uffff", "c-\U0001f600"])
    assert got == {
        "c-\U0001f600": [MessageQueue("T", "broker-10", 0)],
        "c-\uffff": [MessageQueue("T", "broker-9", 0)],
    }


def test_java_split_drops_trailing_empty_strings() -> None:
    assert java_split("room1@broker-a", "@") == ["room1", "broker-a"]
    assert java_split("room1@", "@") == ["room1"]
    assert java_split("room1@b@", "@") == ["room1", "b"]
    assert java_split("room1@b@@", "@") == ["room1", "b"]
    assert java_split("@b", "@") == ["", "b"]
    assert java_split("@", "@") == []
    assert java_split("", "@") == [""]
    assert java_split("a@b@c", "@") == ["a", "b", "c"]


def test_machine_room_uses_java_split() -> None:
    names = ["room1@", "room1@b@", "room1@a", "a@b@c", "@x", "room2@y", "plain"]
    mqs = java_sorted_queues(MessageQueue("T", name, 0) for name in names)
    got = get_strategy("MACHINE_ROOM", consumer_idcs={"room1", ""}).allocate_all(mqs, ["c"])
    # "room1@" has one part (excluded); "room1@b@" has two (included); "@x" has idc "".
    assert [mq.broker_name for mq in got["c"]] == ["@x", "room1@a", "room1@b@"]


def test_java_utf8_of_unpaired_surrogates() -> None:
    # String.getBytes(UTF_8) writes '?' for an unpaired surrogate and joins a pair written
    # as two code points.
    assert java_utf8("a\ud800b") == b"a?b"
    assert java_utf8("\ud83d\ude00") == "\U0001f600".encode()


# ---------------------------------------------------------------------------------------------
# Machine room nearby


def test_nearby_orphan_rooms_in_java_order_after_own_room() -> None:
    resolver = RegexRoomResolver(r"^([^-]+)-", r"@([^-]+)-")
    mqs = java_sorted_queues(
        [
            MessageQueue("T", "r1-b", 0),
            MessageQueue("T", "\uffff-b", 0),
            MessageQueue("T", "\U0001f600-b", 0),
        ]
    )
    cids = ["1@r1-a"]
    got = get_strategy(
        "MACHINE_ROOM_NEARBY-AVG", broker_pattern=r"^([^-]+)-", client_pattern=r"@([^-]+)-"
    ).allocate_all(mqs, cids)
    # Own room first, then orphan rooms in TreeMap (UTF-16) order: the emoji before U+FFFF.
    assert [mq.broker_name for mq in got["1@r1-a"]] == ["r1-b", "\U0001f600-b", "\uffff-b"]
    assert (
        allocate_machine_room_nearby("1@r1-a", mqs, cids, AveragelyStrategy(), resolver)
        == got["1@r1-a"]
    )


def test_nearby_empty_room_is_an_error() -> None:
    strategy = get_strategy(
        "MACHINE_ROOM_NEARBY-AVG", broker_pattern=r"^(\w+)-", client_pattern=r"@(\w+)"
    )
    with pytest.raises(AllocationError, match="Machine room is null for mq"):
        strategy.allocate_all([MessageQueue("T", "nodash", 0)], ["1@r1"])
    with pytest.raises(AllocationError, match="Machine room is null for consumer id"):
        strategy.allocate_all([MessageQueue("T", "r1-b", 0)], ["no-at-sign"])


def test_regex_resolver_is_ascii_like_java() -> None:
    resolver = RegexRoomResolver(r"^(\w+)", r"^(\w+)")
    # java.util.regex's \w is [a-zA-Z_0-9]: "é" is not a word character there.
    assert resolver.client_room("ab\u00e9c") == "ab"
    with pytest.raises(AllocationError, match="no capture group"):
        RegexRoomResolver("x", "(y)")


def test_nearby_name_and_nesting() -> None:
    strategy = get_strategy(
        "MACHINE_ROOM_NEARBY-CONSISTENT_HASH", vnodes=3, broker_pattern="(.)", client_pattern="(.)"
    )
    assert isinstance(strategy, MachineRoomNearbyStrategy)
    assert strategy.name == "MACHINE_ROOM_NEARBY-CONSISTENT_HASH"
    assert strategy.inner == ConsistentHashStrategy(3)


# ---------------------------------------------------------------------------------------------
# The broker's POP assignment


def test_pop_default_share_gives_every_client_every_broker() -> None:
    mqs = [MessageQueue("T", b, q) for b in ("broker-a", "broker-b") for q in range(3)]
    got = allocate_pop("anyone", mqs, ["c1", "c2"], AveragelyStrategy())
    # One -1 entry per queue (the broker's set makes that one per broker); no check() at all.
    assert got == [MessageQueue("T", b, -1) for b in ("broker-a", "broker-b") for _ in range(3)]
    assert allocate_pop("", [], [], AveragelyStrategy(), 0) == []


def test_pop_share_at_least_clients_minus_one_is_everything() -> None:
    mqs, cids = queues(6), ["c1", "c2", "c3", "c4"]
    assert set(allocate_pop("c1", mqs, cids, AveragelyStrategy(), 3)) == {
        MessageQueue("topic", "brokerName", -1)
    }


def test_pop_share_adds_following_clients_shares() -> None:
    # AVG of 6 over 4: c1 [0,1], c2 [2,3], c3 [4], c4 [5]; share 1 adds the next client's share,
    # circularly.
    mqs, cids = queues(6), ["c1", "c2", "c3", "c4"]
    strategy = get_strategy("POP-AVG", pop_share_queue_num=1)
    assert {cid: ids(v) for cid, v in strategy.allocate_all(mqs, cids).items()} == {
        "c1": [0, 1, 2, 3],
        "c2": [2, 3, 4],
        "c3": [4, 5],
        "c4": [5, 0, 1],
    }
    assert ids(allocate_pop("c4", mqs, cids, AveragelyStrategy(), 1)) == [5, 0, 1]
    assert allocate_pop("stranger", mqs, cids, AveragelyStrategy(), 1) == []


def test_pop_more_clients_than_queues_one_each_wrapping() -> None:
    mqs, cids = queues(3), [f"c{i}" for i in range(1, 6)]
    got = get_strategy("POP-AVG_BY_CIRCLE", pop_share_queue_num=2).allocate_all(mqs, cids)
    assert {cid: ids(v) for cid, v in got.items()} == {
        "c1": [0],
        "c2": [1],
        "c3": [2],
        "c4": [0],
        "c5": [1],
    }


def test_pop_only_with_broker_strategies() -> None:
    with pytest.raises(UnknownStrategyError, match="AVG or AVG_BY_CIRCLE"):
        get_strategy("POP-CONSISTENT_HASH")


# ---------------------------------------------------------------------------------------------
# get_strategy and allocate_all


def test_unknown_strategy_lists_valid_names() -> None:
    with pytest.raises(UnknownStrategyError) as info:
        get_strategy("AVERAGE")
    assert isinstance(info.value, ValueError)
    for name in (
        "AVG",
        "AVG_BY_CIRCLE",
        "CONSISTENT_HASH",
        "CONFIG",
        "MACHINE_ROOM",
        "MACHINE_ROOM_NEARBY-AVG",
    ):
        assert name in str(info.value)


def test_options_are_checked() -> None:
    with pytest.raises(UnknownStrategyError, match="does not apply"):
        get_strategy("AVG", vnodes=3)
    with pytest.raises(UnknownStrategyError, match="unknown strategy option"):
        get_strategy("AVG", vnode=3)
    assert get_strategy("AVG", vnodes=None).name == "AVG"
    with pytest.raises(AllocationError, match="resolver"):
        get_strategy("MACHINE_ROOM_NEARBY-AVG")


# The Java getName() strings (and rmqctl's POP-<inner> for the broker's assignment), written out.
JAVA_NAMES = (
    "AVG",
    "AVG_BY_CIRCLE",
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
)


@pytest.mark.parametrize("name", JAVA_NAMES)
def test_names_round_trip(name: str) -> None:
    rooms = {"broker_pattern": "(.)", "client_pattern": "(.)"} if "NEARBY" in name else {}
    assert get_strategy(name, **rooms).name == name


def test_strategy_names_are_the_java_names_in_order() -> None:
    # What completion and the unknown-name error offer.
    assert STRATEGY_NAMES == JAVA_NAMES


def _strategies() -> list[tuple[str, dict[str, object]]]:
    regex: dict[str, object] = {"broker_pattern": r"^(r\d)", "client_pattern": r"@(r\d)"}
    return [
        ("AVG", {}),
        ("AVG_BY_CIRCLE", {}),
        ("CONSISTENT_HASH", {"vnodes": 4}),
        ("CONFIG", {"queues": [MessageQueue("T", "r1-b", 1)]}),
        ("MACHINE_ROOM", {"consumer_idcs": {"r1"}}),
        ("MACHINE_ROOM_NEARBY-AVG", regex),
        ("MACHINE_ROOM_NEARBY-CONSISTENT_HASH", regex),
        ("POP-AVG", {"pop_share_queue_num": 1}),
        ("POP-AVG_BY_CIRCLE", {"pop_share_queue_num": 2}),
    ]


@pytest.mark.parametrize(("name", "options"), _strategies())
def test_allocate_all_equals_per_client_allocate_on_sorted_input(
    name: str, options: dict[str, object]
) -> None:
    rng = random.Random(name)
    strategy = get_strategy(name, **options)
    for _ in range(40):
        brokers = rng.sample(["r1-b", "r2-b", "r1@b", "r3@c", "r2@@"], rng.randint(1, 3))
        mqs = [MessageQueue("T", b, q) for b in brokers for q in range(rng.randint(1, 9))]
        cids = [
            f"10.0.0.{rng.randint(1, 12)}@r{rng.randint(1, 3)}" for _ in range(rng.randint(1, 9))
        ]
        got = strategy.allocate_all(mqs, cids)
        sorted_mqs, sorted_cids = java_sorted_queues(mqs), java_sorted_ids(cids)
        assert list(got) == java_sorted_ids(set(cids))
        for cid in cids:
            assert got[cid] == strategy.allocate(cid, sorted_mqs, sorted_cids)


def test_duplicate_client_ids_leave_a_share_to_nobody() -> None:
    mqs = queues(6)
    got = get_strategy("AVG").allocate_all(mqs, ["a", "a", "b"])
    # Both "a" processes compute indexOf = 0; the block of index 1 (queues 2, 3) is nobody's.
    assert {cid: ids(v) for cid, v in got.items()} == {"a": [0, 1], "b": [4, 5]}


def test_allocate_all_errors_like_allocate() -> None:
    with pytest.raises(AllocationError, match="mqAll"):
        get_strategy("AVG").allocate_all([], ["a"])
    with pytest.raises(AllocationError, match="currentCID"):
        get_strategy("AVG_BY_CIRCLE").allocate_all(queues(1), ["", "a"])
    assert get_strategy("AVG").allocate_all(queues(3), []) == {}
    assert isinstance(AllocationError("x"), ValueError)


# ---------------------------------------------------------------------------------------------
# 10,000 queues over 1,000 clients: the answers, and the work done to get them (timings: bench/)

BIG_QUEUES = [MessageQueue("T", f"r{b % 3 + 1}-broker-{b}", q) for b in range(20) for q in range(500)]
BIG_CLIENTS = [f"10.0.{i // 250}.{i % 250}@r{i % 3 + 1}-{i}" for i in range(1000)]
# Java order of the brokers: r1-broker-0, -12, -15, -18, -3, -6, -9 (queues 0-3499 once sorted),
# r2-broker-1, -10, -13, -16, -19, -4, -7 (3500-6999), r3-broker-11, -14, -17, -2, -5, -8 (7000-9999).
# Clients: "10.0.0.0@r1-0" sorts first; "10.0.3.9@r1-759" last ('@' sorts after '9').
FIRST_CLIENT, LAST_CLIENT = "10.0.0.0@r1-0", "10.0.3.9@r1-759"


def _owners(got: dict[str, list[MessageQueue]]) -> dict[MessageQueue, list[str]]:
    owners: dict[MessageQueue, list[str]] = {}
    for cid, mine in got.items():
        for mq in mine:
            owners.setdefault(mq, []).append(cid)
    return owners


def test_big_avg_gives_ten_contiguous_queues_each() -> None:
    got = get_strategy("AVG").allocate_all(BIG_QUEUES, BIG_CLIENTS)
    assert len(got) == 1000
    assert {len(v) for v in got.values()} == {10}
    assert got[FIRST_CLIENT] == [MessageQueue("T", "r1-broker-0", q) for q in range(10)]
    assert got[LAST_CLIENT] == [MessageQueue("T", "r3-broker-8", q) for q in range(490, 500)]
    assert all(len(cids) == 1 for cids in _owners(got).values()) and len(_owners(got)) == 10_000


def test_big_avg_by_circle_takes_every_thousandth_queue() -> None:
    got = get_strategy("AVG_BY_CIRCLE").allocate_all(BIG_QUEUES, BIG_CLIENTS)
    brokers = ["r1-broker-0", "r1-broker-15", "r1-broker-3", "r1-broker-9", "r2-broker-10", "r2-broker-16",
               "r2-broker-4", "r3-broker-11", "r3-broker-17", "r3-broker-5"]
    assert got[FIRST_CLIENT] == [MessageQueue("T", b, 0) for b in brokers]
    assert {len(v) for v in got.values()} == {10}
    assert all(len(cids) == 1 for cids in _owners(got).values()) and len(_owners(got)) == 10_000


def test_big_consistent_hash_builds_one_ring(monkeypatch: pytest.MonkeyPatch) -> None:
    from rmqctl.rebalance import strategies

    hashed: list[str] = []
    real_md5 = strategies.md5_hash

    def counting_md5(key: str) -> int:
        hashed.append(key)
        return real_md5(key)

    monkeypatch.setattr(strategies, "md5_hash", counting_md5)
    got = get_strategy("CONSISTENT_HASH", vnodes=4).allocate_all(BIG_QUEUES, BIG_CLIENTS)
    # 4 points per client, then one hash per queue: the ring is built once, not once per client.
    assert len(hashed) == 1000 * 4 + 10_000
    owners = _owners(got)
    assert len(owners) == 10_000 and all(len(cids) == 1 for cids in owners.values())
    sample = java_sorted_queues(BIG_QUEUES)[::997]
    for mq in sample:
        assert owners[mq] == [_reference_owner(mq, BIG_CLIENTS, 4)]


def test_big_config_gives_everyone_the_configured_queue() -> None:
    configured = [MessageQueue("T", "r1-b", 1)]
    got = get_strategy("CONFIG", queues=configured).allocate_all(BIG_QUEUES, BIG_CLIENTS)
    assert len(got) == 1000 and all(v == configured for v in got.values())


def test_big_machine_room_without_idc_brokers_gives_nothing() -> None:
    # No broker is named <idc>@<name>, so no queue is in the consumers' idc.
    got = get_strategy("MACHINE_ROOM", consumer_idcs={"r1"}).allocate_all(BIG_QUEUES, BIG_CLIENTS)
    assert len(got) == 1000 and all(v == [] for v in got.values())


class CountingRooms:
    """Rooms from the first two characters (r1, r2, r3), counting every question."""

    def __init__(self) -> None:
        self.broker_questions = 0
        self.client_questions = 0

    def broker_room(self, mq: MessageQueue) -> str:
        self.broker_questions += 1
        return mq.broker_name[:2]

    def client_room(self, client_id: str) -> str:
        self.client_questions += 1
        return client_id.split("@")[1][:2]


def test_big_nearby_avg_splits_each_room_among_its_clients() -> None:
    rooms = CountingRooms()
    got = get_strategy("MACHINE_ROOM_NEARBY-AVG", resolver=rooms).allocate_all(BIG_QUEUES, BIG_CLIENTS)
    # each queue and each client resolved once for everyone, not once per asking client
    assert (rooms.broker_questions, rooms.client_questions) == (10_000, 1000)
    # r1: 3,500 queues over 334 clients (160 get 11, 174 get 10); r2: 3,500 over 333 (170 get 11,
    # 163 get 10); r3: 3,000 over 333 (3 get 10, 330 get 9)
    sizes = [len(v) for v in got.values()]
    assert {n: sizes.count(n) for n in set(sizes)} == {11: 330, 10: 340, 9: 330}
    for mq, cids in _owners(got).items():
        assert len(cids) == 1 and cids[0].split("@")[1][:2] == mq.broker_name[:2]


def test_big_nearby_consistent_hash_keeps_queues_in_their_room() -> None:
    got = get_strategy("MACHINE_ROOM_NEARBY-CONSISTENT_HASH", vnodes=4, resolver=CountingRooms()).allocate_all(
        BIG_QUEUES, BIG_CLIENTS)
    owners = _owners(got)
    assert len(owners) == 10_000
    for mq, cids in owners.items():
        assert len(cids) == 1 and cids[0].split("@")[1][:2] == mq.broker_name[:2]


@pytest.mark.parametrize(("name", "share", "each"), [("POP-AVG", 1, 20), ("POP-AVG_BY_CIRCLE", 2, 30)])
def test_big_pop_share_adds_the_next_clients_shares(name: str, share: int, each: int) -> None:
    got = get_strategy(name, pop_share_queue_num=share).allocate_all(BIG_QUEUES, BIG_CLIENTS)
    assert {len(v) for v in got.values()} == {each}
    owners = _owners(got)
    assert len(owners) == 10_000 and {len(cids) for cids in owners.values()} == {share + 1}


# ---------------------------------------------------------------------------------------------
# What a refused input says: the one line and the hint that `rebalance simulate` prints

ALL_NAMES = ("AVG, AVG_BY_CIRCLE, CONSISTENT_HASH, CONFIG, MACHINE_ROOM, MACHINE_ROOM_NEARBY-AVG, "
             "MACHINE_ROOM_NEARBY-AVG_BY_CIRCLE, MACHINE_ROOM_NEARBY-CONSISTENT_HASH, MACHINE_ROOM_NEARBY-CONFIG, "
             "MACHINE_ROOM_NEARBY-MACHINE_ROOM, POP-AVG, POP-AVG_BY_CIRCLE")
ROOMS = {"broker_pattern": r"^(\w+)-", "client_pattern": r"@(\w+)"}

REFUSALS: list[tuple[str, object, str, str | None]] = [
    ("empty client id", lambda: allocate_avg("", queues(1), ["a"]), "currentCID is empty", None),
    ("no queues", lambda: allocate_avg_by_circle("a", [], ["a"]), "mqAll is null or mqAll empty", None),
    ("no clients", lambda: allocate_by_machine_room("a", queues(1), [], {"x"}), "cidAll is null or cidAll empty",
     None),
    ("empty client id, everyone", lambda: get_strategy("AVG").allocate_all(queues(1), ["", "a"]),
     "currentCID is empty", None),
    ("no queues, everyone", lambda: get_strategy("AVG").allocate_all([], ["a"]), "mqAll is null or mqAll empty", None),
    ("negative virtual nodes", lambda: allocate_consistent_hash("a", queues(1), ["a"], -2),
     "illegal virtualNodeCnt :-2", None),
    ("negative virtual nodes, by name", lambda: get_strategy("CONSISTENT_HASH", vnodes=-1),
     "illegal virtualNodeCnt :-1", None),
    ("virtual nodes not a number", lambda: get_strategy("CONSISTENT_HASH", vnodes="3"),
     "vnodes must be an integer, not '3'", None),
    ("virtual nodes a boolean", lambda: get_strategy("CONSISTENT_HASH", vnodes=True),
     "vnodes must be an integer, not True", None),
    ("config not a list", lambda: get_strategy("CONFIG", queues=3), "CONFIG queues must be a list of MessageQueue",
     None),
    ("config of strings", lambda: get_strategy("CONFIG", queues=["T/b/0"]),
     "CONFIG queues must be a list of MessageQueue", None),
    ("idcs as one string", lambda: get_strategy("MACHINE_ROOM", consumer_idcs="room1"),
     "consumer_idcs must be a collection of idc names", None),
    ("idcs not a collection", lambda: get_strategy("MACHINE_ROOM", consumer_idcs=1),
     "consumer_idcs must be a collection of idc names", None),
    ("pop share not a number", lambda: get_strategy("POP-AVG", pop_share_queue_num=1.5),
     "pop_share_queue_num must be an integer, not 1.5", None),
    ("pop share a boolean", lambda: get_strategy("POP-AVG", pop_share_queue_num=False),
     "pop_share_queue_num must be an integer, not False", None),
    ("pop around a client strategy", lambda: get_strategy("POP-CONSISTENT_HASH"),
     "unknown allocation strategy 'POP-CONSISTENT_HASH': the broker assigns POP queues only with AVG or "
     "AVG_BY_CIRCLE", "valid names: " + ALL_NAMES),
    ("unknown name", lambda: get_strategy("AVERAGE"),
     "unknown allocation strategy 'AVERAGE'; valid names: " + ALL_NAMES,
     "names are the Java getName() values; MACHINE_ROOM_NEARBY- takes any inner name"),
    ("unknown inner name", lambda: get_strategy("MACHINE_ROOM_NEARBY-X", **ROOMS),
     "unknown allocation strategy 'X'; valid names: " + ALL_NAMES,
     "names are the Java getName() values; MACHINE_ROOM_NEARBY- takes any inner name"),
    ("unknown option", lambda: get_strategy("AVG", vnode=3), "unknown strategy option 'vnode'",
     "options: vnodes (CONSISTENT_HASH), queues (CONFIG), consumer_idcs (MACHINE_ROOM), resolver "
     "(MACHINE_ROOM_NEARBY-*), broker_pattern (MACHINE_ROOM_NEARBY-*), client_pattern (MACHINE_ROOM_NEARBY-*), "
     "pop_share_queue_num (POP-*)"),
    ("option of another strategy", lambda: get_strategy("AVG", vnodes=3),
     "option 'vnodes' does not apply to strategy AVG", "vnodes belongs to CONSISTENT_HASH"),
    ("two options of other strategies", lambda: get_strategy("CONFIG", vnodes=3, consumer_idcs={"a"}),
     "option 'consumer_idcs' does not apply to strategy CONFIG", "consumer_idcs belongs to MACHINE_ROOM"),
    ("nearby without rooms", lambda: get_strategy("MACHINE_ROOM_NEARBY-AVG"),
     "MACHINE_ROOM_NEARBY needs a machine-room resolver",
     "pass resolver=…, or broker_pattern=… and client_pattern=… (first group = room)"),
    ("nearby with a broker pattern only", lambda: get_strategy("MACHINE_ROOM_NEARBY-AVG", broker_pattern="(x)"),
     "MACHINE_ROOM_NEARBY needs a machine-room resolver",
     "pass resolver=…, or broker_pattern=… and client_pattern=… (first group = room)"),
    ("nearby with a client pattern only", lambda: get_strategy("MACHINE_ROOM_NEARBY-AVG", client_pattern="(x)"),
     "MACHINE_ROOM_NEARBY needs a machine-room resolver",
     "pass resolver=…, or broker_pattern=… and client_pattern=… (first group = room)"),
    ("resolver and a broker pattern", lambda: get_strategy("MACHINE_ROOM_NEARBY-AVG", resolver=SplitDashResolver(),
                                                           broker_pattern="(x)"),
     "give either resolver or broker_pattern/client_pattern, not both", None),
    ("resolver and a client pattern", lambda: get_strategy("MACHINE_ROOM_NEARBY-AVG", resolver=SplitDashResolver(),
                                                           client_pattern="(x)"),
     "give either resolver or broker_pattern/client_pattern, not both", None),
    ("resolver without rooms", lambda: get_strategy("MACHINE_ROOM_NEARBY-AVG", resolver=object()),
     "resolver must have broker_room(mq) and client_room(cid)", None),
    ("room pattern that does not compile", lambda: RegexRoomResolver("(", "(x)"),
     "bad room pattern '(': missing ), unterminated subpattern at position 0", None),
    ("client room pattern that does not compile", lambda: RegexRoomResolver("(x)", "[a"),
     "bad room pattern '[a': unterminated character set at position 0", None),
    ("room pattern without a group", lambda: RegexRoomResolver("(x)", "x"),
     "room pattern 'x' has no capture group", "the first group (…) of the match is the room name"),
    ("broker without a room", lambda: get_strategy("MACHINE_ROOM_NEARBY-AVG", **ROOMS).allocate_all(
        [MessageQueue("T", "nodash", 0)], ["1@r1"]), "Machine room is null for mq MessageQueue [topic=T, "
     "brokerName=nodash, queueId=0]", None),
    ("client without a room", lambda: get_strategy("MACHINE_ROOM_NEARBY-AVG", **ROOMS).allocate_all(
        [MessageQueue("T", "r1-b", 0)], ["no-at-sign"]), "Machine room is null for consumer id no-at-sign", None),
]


@pytest.mark.parametrize(("case", "call", "message", "hint"), REFUSALS, ids=[r[0] for r in REFUSALS])
def test_refusals_say_what_is_wrong(case: str, call: object, message: str, hint: str | None) -> None:
    assert callable(call)
    with pytest.raises(AllocationError) as caught:
        call()
    assert (caught.value.message, caught.value.hint) == (message, hint)


@pytest.mark.parametrize("name", JAVA_NAMES)
def test_nobody_to_allocate_to_is_no_answer(name: str) -> None:
    # no clients at all: nothing to say about anyone, even with no queues either
    options = ROOMS if "NEARBY" in name else {}
    strategy = get_strategy(name, **options)
    assert strategy.allocate_all([], []) == {}
    assert strategy.allocate_all(queues(3), []) == {}
