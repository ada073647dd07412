"""GET_BROKER_CONSUME_STATS (317): the body as a 5.3.3 broker writes it, the emulator's answer
with the broker's semantics (which groups and topics it includes, rows up to the write queue
count, ``isOrder``), and the back end that leaves out what would differ from GET_CONSUME_STATS.

The body below is written by hand from ``fetchAllConsumeStatsInBroker`` and
``ConsumeStatsList``: fastjson writes the bean properties alphabetically, one map per group
holding a list of one ConsumeStats per topic, MessageQueue keys as object literals, and an
OffsetWrapper whose ``pullOffset`` the broker never sets (0)."""

from __future__ import annotations

import asyncio

import pytest

from rmqctl.backends.remoting import RemotingBackend
from rmqctl.emulator.embedded import embedded_cluster
from rmqctl.emulator.scenario import parse_scenario
from rmqctl.model import ConsumeStats, MessageQueue, OffsetEntry
from rmqctl.remoting import bodies
from rmqctl.remoting.admin import AdminClient
from rmqctl.remoting.codes import RequestCode, ResponseCode

BODY = (
    b'{"brokerAddr":"192.168.0.7:10911","consumeStatsList":['
    # group "g1": topic T (2 write queues) and its retry topic (1 queue)
    b'{"g1":[{"consumeTps":1.5,"offsetTable":{'
    b'{"brokerName":"broker-a","queueId":0,"topic":"T"}:'
    b'{"brokerOffset":10,"consumerOffset":4,"lastTimestamp":1700000000123,"pullOffset":0},'
    b'{"brokerName":"broker-a","queueId":1,"topic":"T"}:'
    b'{"brokerOffset":7,"consumerOffset":7,"lastTimestamp":1700000000456,"pullOffset":0}}},'
    b'{"consumeTps":0.25,"offsetTable":{'
    b'{"brokerName":"broker-a","queueId":0,"topic":"%RETRY%g1"}:'
    b'{"brokerOffset":3,"consumerOffset":0,"lastTimestamp":0,"pullOffset":0}}}]},'
    # group "idle": configured, no offsets anywhere: an empty list
    b'{"idle":[]}'
    b'],"totalDiff":9,"totalInflightDiff":-11}'
)


def test_the_brokers_body_decodes_to_one_consume_stats_per_group_without_pull_offsets() -> None:
    decoded = bodies.broker_consume_stats(BODY)
    assert decoded == {
        "g1": ConsumeStats({
            MessageQueue("T", "broker-a", 0): OffsetEntry(10, 4, None, 1700000000123),
            MessageQueue("T", "broker-a", 1): OffsetEntry(7, 7, None, 1700000000456),
            MessageQueue("%RETRY%g1", "broker-a", 0): OffsetEntry(3, 0, None, 0),
        }, 1.75),
        "idle": ConsumeStats({}, 0.0),
    }


def test_the_encoder_writes_the_brokers_body_byte_for_byte() -> None:
    per_topic = [
        ConsumeStats({MessageQueue("T", "broker-a", 0): OffsetEntry(10, 4, 0, 1700000000123),
                      MessageQueue("T", "broker-a", 1): OffsetEntry(7, 7, 0, 1700000000456)}, 1.5),
        ConsumeStats({MessageQueue("%RETRY%g1", "broker-a", 0): OffsetEntry(3, 0, 0, 0)}, 0.25),
    ]
    assert bodies.encode_broker_consume_stats("192.168.0.7:10911", [("g1", per_topic), ("idle", [])]) == BODY


SCENARIO = """
name = "broker-wide"
duration = 40
[[brokers]]
name = "broker-a"
[[topics]]
name = "T"
queues = 2
[[topics]]
name = "ORD"
queues = 2
order = true
[[topics]]
name = "SHRUNK"
read_queues = 4
write_queues = 2
[[topics]]
name = "LEFT"
queues = 2
[[consumers]]
group = "g1"
client_id = "10.0.0.1@a"
subscriptions = { T = "*", ORD = "*" }
[[consumers]]
group = "g2"
client_id = "10.0.0.2@b"
subscriptions = { T = "*", LEFT = "*" }
stop = 20.0
[[consumers]]
group = "g2"
client_id = "10.0.0.3@c"
subscriptions = { T = "*" }
start = 25.0
[[consumers]]
group = "g3"
client_id = "10.0.0.4@d"
subscriptions = { SHRUNK = "*" }
[[consumers]]
group = "unconfigured"
client_id = "10.0.0.5@e"
subscriptions = { T = "*" }
[[produce]]
at = 5.0
topic = "T"
count = 12
[[produce]]
at = 5.0
topic = "ORD"
count = 4
[[produce]]
at = 5.0
topic = "LEFT"
count = 6
[[produce]]
at = 5.0
topic = "SHRUNK"
count = 8
[[produce]]
at = 30.0
topic = "LEFT"
count = 6
"""


def without_pull(stats: ConsumeStats) -> ConsumeStats:
    return ConsumeStats({mq: OffsetEntry(e.broker_offset, e.consumer_offset, None, e.last_timestamp)
                         for mq, e in stats.offsets.items()}, stats.consume_tps)


async def _read_both() -> tuple[dict[str, ConsumeStats], dict[str, ConsumeStats], dict[str, ConsumeStats],
                                dict[str, ConsumeStats], set[str]]:
    async with embedded_cluster(parse_scenario(SCENARIO)) as (cluster, server):
        broker = cluster.brokers["broker-a"]
        broker.groups.delete_group_config("unconfigured")
        addr = broker.addr
        async with AdminClient([server.namesrv_addr]) as admin:
            wide = await admin.broker_consume_stats(addr)
            ordered = await admin.fetch(addr, RequestCode.GET_BROKER_CONSUME_STATS, {"isOrder": True},
                                        lambda r: bodies.broker_consume_stats(r.body))
            one_by_one = {g: await admin.consume_stats(addr, g) for g in ("g1", "g2", "g3", "unconfigured")}
            kept = dict(await RemotingBackend(admin).broker_consume_stats(addr))
            refused = await admin.call(addr, RequestCode.GET_BROKER_CONSUME_STATS, {},
                                       accept=(ResponseCode.SYSTEM_ERROR,))
            assert "the custom field <isOrder> is null" in (refused.remark or "")
            return wide, ordered, one_by_one, kept, set(broker.group_configs)


def test_the_emulators_answer_has_the_brokers_semantics_and_equals_the_per_group_one() -> None:
    wide, ordered, one_by_one, kept, configured = asyncio.run(_read_both())
    # every configured group, and only those: a group without a config is left out
    assert set(wide) == configured and "unconfigured" not in wide
    assert one_by_one["unconfigured"].offsets  # the per-group read still answers for it
    # LEFT: offsets committed by b, but missing from the subscription table now that c runs alone
    assert {mq.topic for mq in wide["g2"].offsets} == {"T"}
    # g1 and g2 answer what GET_CONSUME_STATS answers, but for the pull offsets
    for group in ("g1", "g2"):
        assert wide[group] == without_pull(one_by_one[group]), group
    # SHRUNK: the broker-wide rows stop at the write queue count, the per-group ones at the read
    assert sorted(mq.queue_id for mq in wide["g3"].offsets if mq.topic == "SHRUNK") == [0, 1]
    assert sorted(mq.queue_id for mq in one_by_one["g3"].offsets if mq.topic == "SHRUNK") == [0, 1, 2, 3]
    # isOrder: only ordered topics
    assert {mq.topic for s in ordered.values() for mq in s.offsets} == {"ORD"}
    # the back end keeps the groups whose answer equals the per-group one, and leaves g3 out
    assert "g3" not in kept and kept["g1"] == wide["g1"] and kept["g2"] == wide["g2"]


def test_decoding_a_broker_wide_body_fails_over_to_the_walk_once_per_level_not_per_group(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The C decoder gives up on each container holding MessageQueue keys, and its error costs
    time in proportion to its offset in the body: given up on once per group, a broker's answer
    for thousands of groups cost the square of its size (seconds for 1.6 MB). Each level is
    given up on once; the count is the same for 10 groups and for 1,000."""
    import json

    from rmqctl.remoting import fastjson

    scan = fastjson._scan_once
    failures: list[int] = []

    def counted(text: str, pos: int):  # type: ignore[no-untyped-def]
        try:
            return scan(text, pos)
        except json.JSONDecodeError:
            failures.append(pos)
            raise

    monkeypatch.setattr(fastjson, "_scan_once", counted)

    def body(groups: int) -> bytes:
        return bodies.encode_broker_consume_stats("192.168.0.7:10911", [
            (f"g{i}", [ConsumeStats({MessageQueue(f"T{i}", "broker-a", q): OffsetEntry(9, 4, 0, 1) for q in range(4)}),
                       ConsumeStats({MessageQueue(f"%RETRY%g{i}", "broker-a", 0): OffsetEntry(0, 0, 0, 0)})])
            for i in range(groups)])

    counts = []
    for groups in (10, 1000):
        failures.clear()
        decoded = bodies.broker_consume_stats(body(groups))
        assert len(decoded) == groups and len(decoded["g7"].offsets) == 5
        counts.append(len(failures))
    assert counts[0] == counts[1] <= 8
