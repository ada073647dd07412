"""The emulator's stall and leave behaviours, read through the normal client path.

open_source + group_view read the embedded emulator over the wire protocol, as against a real
cluster; the doctor's two-sample check names the hung consumer's queues.
"""

from __future__ import annotations

import pytest

from rmqctl import errors
from rmqctl.connect import Target, open_source
from rmqctl.doctor import diagnose
from rmqctl.emulator.scenario import load_scenario, parse_scenario
from rmqctl.model import GroupView, MessageQueue, topic_kind
from rmqctl.snapshot import owners

PAY = "payment-service"
P1, P2, P3, P4 = (f"10.0.0.{i}@pay-{i}" for i in range(1, 5))


def _mq(broker: str, queue_id: int, topic: str = "PaymentTopic") -> MessageQueue:
    return MessageQueue(topic, broker, queue_id)


def _progress(view: GroupView) -> dict[MessageQueue, tuple[int, int, str | None]]:
    return {p.queue: (p.broker_offset, p.consumer_offset, p.owner) for p in view.progress}


async def test_the_stalled_consumer_keeps_its_queues_and_falls_behind() -> None:
    async with open_source(Target(emulator="stall-and-leave", at=400)) as opened:
        before = _progress(await opened.source.group_view(PAY))
        await opened.clock.sleep(500)  # to 900 s: pay-2 hung at 420 s
        view = await opened.source.group_view(PAY)
    after = _progress(view)
    # still online, still heartbeating, still holding its queues
    assert P2 in view.client_ids
    assert sorted(mq for mq in view.assignments()[P2] if mq.topic == "PaymentTopic") == [
        _mq("broker-a", 2), _mq("broker-a", 3)]
    for mq in (_mq("broker-a", 2), _mq("broker-a", 3)):
        assert after[mq][2] == P2
        assert after[mq][0] > before[mq][0] + 100  # 500 s at 0.25 msg/s per queue = 125 more
        assert after[mq][1] <= before[mq][1] + 10  # consumed at most up to the stall (20 s)
        assert after[mq][0] - after[mq][1] > 100
    # its listener holds messages it never finishes: the running info shows them cached
    info = view.running_infos[P2]
    assert all(info.mq_table[mq].cached_msg_count > 0 for mq in (_mq("broker-a", 2), _mq("broker-a", 3)))
    # everybody else keeps up
    for mq, (broker_offset, consumer_offset, owner) in after.items():
        if mq.topic == "PaymentTopic" and owner != P2:
            assert broker_offset - consumer_offset <= 8, mq


async def test_the_leaver_goes_and_its_queues_move_to_the_others() -> None:
    async with open_source(Target(emulator="stall-and-leave", at=990)) as opened:
        before = await opened.source.group_view(PAY)
        await opened.clock.sleep(90)  # pay-4 shuts down at 1020 s
        after = await opened.source.group_view(PAY)
    assert P4 in before.client_ids and P4 not in after.client_ids
    assert sorted(before.assignments()[P4]) == [_mq("broker-b", 2), _mq("broker-b", 3)]
    moved = {mq: after_owner for mq, after_owner in
             ((p.queue, p.owner) for p in after.progress) if mq.topic == "PaymentTopic"}
    # AVG over 3 clients and 8 queues: pay-1 a0-a2, pay-2 a3 b0 b1, pay-3 b2 b3
    assert moved == {_mq("broker-a", 0): P1, _mq("broker-a", 1): P1, _mq("broker-a", 2): P1,
                     _mq("broker-a", 3): P2, _mq("broker-b", 0): P2, _mq("broker-b", 1): P2,
                     _mq("broker-b", 2): P3, _mq("broker-b", 3): P3}
    # the leaver committed before going: pay-3 goes on from there and keeps up
    for p in after.progress:
        if p.queue in (_mq("broker-b", 2), _mq("broker-b", 3)):
            assert p.diff <= 8


async def test_lag_not_advancing_names_the_stalled_queues() -> None:
    async with open_source(Target(emulator="stall-and-leave", at=600)) as opened:
        diagnosis = await diagnose(opened.source, [PAY], interval=60, clock=opened.clock)
    (finding,) = [f for f in diagnosis.findings if f.code == "LAG_NOT_ADVANCING"]
    named = sorted((q["broker"], q["queue_id"], q["owner"]) for q in finding.evidence["queues"])
    assert named == [("broker-a", 2, P2), ("broker-a", 3, P2)]
    assert any(f.code == "BLOCKED_QUEUE" for f in diagnosis.findings)


async def test_topic_overwrite_queues_belong_to_a_client_that_does_not_subscribe() -> None:
    """A queue nobody holds is the share of the client the group's allocation gives it to; when
    that client does not subscribe the topic, that is the owner and it does not subscribe."""
    async with open_source(Target(emulator="topic-overwrite")) as opened:
        view = await opened.source.group_view("g1")
    c1, c2 = "10.0.0.1@c1", "10.0.0.2@c2"
    got = {mq: owner for mq, owner in owners(view).items() if topic_kind(mq.topic) != "retry"}
    assert got == {
        _mq("broker-a", 0, "topicA"): (c1, True), _mq("broker-a", 1, "topicA"): (c1, True),
        _mq("broker-a", 2, "topicA"): (c2, False), _mq("broker-a", 3, "topicA"): (c2, False),
        _mq("broker-a", 0, "topicB"): (c1, False), _mq("broker-a", 1, "topicB"): (c1, False),
        _mq("broker-a", 2, "topicB"): (c2, True), _mq("broker-a", 3, "topicB"): (c2, True),
    }


def test_the_stall_option_is_validated() -> None:
    base = """
[[topics]]
name = "T"
[[consumers]]
group = "g"
subscriptions = { T = "*" }
"""
    spec = parse_scenario(base + "stall = 5.5\n", "s.toml")
    assert spec.consumers[0].stall == 5.5
    assert parse_scenario(base, "s.toml").consumers[0].stall is None
    with pytest.raises(errors.ConfigError, match=r"s.toml, line 8: consumers\[0\].stall: must not be before start"):
        parse_scenario(base + "start = 10\nstall = 5\n", "s.toml")
    with pytest.raises(errors.ConfigError, match=r"consumers\[0\].stall: must be before stop"):
        parse_scenario(base + "stop = 10\nstall = 10\n", "s.toml")
    with pytest.raises(errors.ConfigError, match=r"consumers\[0\].stall: expected a number"):
        parse_scenario(base + 'stall = "soon"\n', "s.toml")


def test_the_builtin_scenario_says_what_happens() -> None:
    spec = load_scenario("stall-and-leave")
    stalls = {c.client_id: c.stall for c in spec.consumers if c.stall is not None}
    stops = {c.client_id: c.stop for c in spec.consumers if c.stop is not None}
    assert stalls == {P2: 420.0} and stops == {P4: 1020.0}
    assert "pay-2" in spec.description and "pay-4" in spec.description
