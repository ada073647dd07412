"""Simulated POP consumers: the broker hands out messages and moves the offset when it pops,
revives what is not ACKed in time into the group's POP retry topic with one more reconsume time,
and sends a copy to the DLQ once the group's maximum of deliveries (retryMaxTimes + 1) is spent.
The doctor reads the built-in ``pop-redelivery`` as it reads a real 5.x cluster."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from rmqctl.cli.app import app
from rmqctl.emulator.pop import SimulatedPopConsumer
from rmqctl.emulator.scenario import load_scenario, parse_scenario
from rmqctl.emulator.world import EmulatedCluster
from rmqctl.errors import ConfigError

SCENARIO = """
name = "pop-cycle"
duration = 400
[[topics]]
name = "T"
queues = 2
[[groups]]
name = "G"
retry_max_times = 2
[[consumers]]
group = "G"
client_id = "10.0.0.1@simple"
subscriptions = { T = "*" }
pop = true
invisible_s = 15
no_ack_tags = ["slow"]
[[produce]]
at = 5
topic = "T"
tag = "ok"
count = 6
[[produce]]
at = 6
topic = "T"
tag = "slow"
count = 1
"""


def test_a_message_never_acked_comes_back_after_each_invisible_time_then_goes_to_the_dlq() -> None:
    cluster = EmulatedCluster(parse_scenario(SCENARIO))
    cluster.run_until(10)
    (consumer,) = cluster.consumers
    assert isinstance(consumer, SimulatedPopConsumer) and consumer.held_queues() == []
    broker = cluster.brokers["broker-a"]
    store = broker.store
    # popped, so committed: the offset reached the end while the slow message is still un-ACKed
    assert sum(store.stored_offset("G", "T", q) for q in (0, 1)) == 7
    assert [m.tag for m in consumer.deliveries].count("slow") == 1
    cluster.run_until(400)
    slow = [m for m in consumer.deliveries if m.tag == "slow"]
    # retryMaxTimes 2: three deliveries (reconsume times 0, 1, 2), then the DLQ
    assert [m.reconsume_times for m in slow] == [0, 1, 2]
    assert [m.topic for m in slow[1:]] == ["%RETRY%G_T", "%RETRY%G_T"]
    retry_copies = store.queue("%RETRY%G_T", 0)
    assert [m.reconsume_times for m in retry_copies] == [1, 2, 3]
    assert retry_copies[1].store_timestamp - retry_copies[0].store_timestamp >= 15_000
    (dead,) = store.queue("%DLQ%G", 0)
    assert dead.msg_id == slow[0].msg_id and dead.tag == "slow"
    assert {m.tag for m in consumer.deliveries if m.tag != "slow"} == {"ok"}


def test_the_scenario_keys_of_pop_consumers_are_checked() -> None:
    with pytest.raises(ConfigError, match="only a POP consumer"):
        parse_scenario(SCENARIO.replace("pop = true\n", ""))
    with pytest.raises(ConfigError, match="invisible_s"):
        parse_scenario(SCENARIO.replace("invisible_s = 15", "invisible_s = 0"))
    assert load_scenario("pop-redelivery").consumers[0].fail_tags == frozenset({"bad"})


def run(*args: str) -> Any:
    result = CliRunner().invoke(app, ["--emulator", "pop-redelivery", *args, "-o", "json"])
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


def test_the_failing_pop_group_is_reported_on_its_way_to_the_dlq_and_the_healthy_one_is_clean() -> None:
    doc = run("doctor", "order-pop", "audit-pop", "--fail-on", "never")
    findings = {(f["group"], f["code"]): f for f in doc["findings"]}
    assert {g for g, _ in findings} == {"order-pop"}
    loop = findings[("order-pop", "REPEATED_REDELIVERY")]["evidence"]
    assert (loop["messages"], loop["highest_delivery"], loop["max_deliveries"], loop["deliveries_left"]) == (4, 4, 5, 1)
    assert loop["retry_topics"] == ["%RETRY%order-pop_OrderTopic"]
    assert ("order-pop", "DLQ_BACKLOG") not in findings
    later = {(f["group"], f["code"]): f for f in run("--at", "600", "doctor", "order-pop")["findings"]}
    assert later[("order-pop", "DLQ_BACKLOG")]["evidence"]["messages"] == 4
    assert ("order-pop", "REPEATED_REDELIVERY") not in later  # they are in the DLQ now


def test_group_show_and_progress_of_a_pop_group() -> None:
    shown = run("group", "show", "order-pop")
    assert shown["consumption"] == "pop" and shown["retry_policy"]["max_deliveries"] == 5
    progress = run("group", "progress", "order-pop")
    assert progress["total_inflight"] is None
    assert {q["owner"] for q in progress["queues"]} == {"POP (2 clients)"}


async def test_the_demo_of_pop_redelivery_shows_the_messages_on_their_way_to_the_dlq() -> None:
    from rmqctl.cli.demo_cmd import demo_document

    doc = await demo_document("pop-redelivery")
    codes = [f["code"] for f in doc["groups"]["order-pop"]["findings"]]
    assert codes == ["REPEATED_REDELIVERY", "CONSUME_FAILURES"]
    assert doc["groups"]["audit-pop"]["findings"] == []
    # every good message consumed; the bad ones failed at every delivery
    assert doc["scenario"]["lost_by_tag"] == {"bad": 4, "ok": 0}
