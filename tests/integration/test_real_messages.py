"""``msg show`` and ``msg explain`` on a real RocketMQ 5.3.3 broker with real Java push consumers:
every verdict is checked against what the Java listeners received, and the look-ups against
mqadmin's ``queryMsgById``.

The session cluster (``real_cluster``) is shared; each test has its own topics and groups. Nothing
sleeps: every step waits on a condition (``wait_until``).
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import threading
import uuid
from collections.abc import Sequence
from typing import Any

import pytest

from rmqctl.connect import Target, open_source
from rmqctl.doctor.explaining import explain
from rmqctl.model import Explanation, Message, MessageRef
from tests.harness.realcluster import RealCluster, ScenarioClientsProcess, run_tag_overwrite, wait_until

pytest_plugins = ["tests.harness.plugin"]

pytestmark = [pytest.mark.real_cluster, pytest.mark.timeout(400)]


def _explain(cluster: RealCluster, ref: MessageRef, groups: Sequence[str] = ()) -> list[tuple[Message, Explanation]]:
    async def run() -> list[tuple[Message, Explanation]]:
        async with open_source(Target(namesrv=cluster.namesrv_addr, timeout=10)) as opened:
            result = await explain(opened.source, ref, groups)
        return [(f.message, e) for f in result.fates for e in f.explanations]

    return asyncio.run(run())


def _find(cluster: RealCluster, ref: MessageRef) -> list[Message]:
    async def run() -> list[Message]:
        async with open_source(Target(namesrv=cluster.namesrv_addr, timeout=10)) as opened:
            return (await opened.source.find_messages(ref)).value

    return asyncio.run(run())


def _received(clients: ScenarioClientsProcess) -> dict[str, str]:
    """unique key -> the consumer handle whose listener got it."""
    return {m["msg_id"]: handle for handle, msgs in clients.received().items() for m in msgs}


def test_tag_overwrite_verdicts_match_what_the_listeners_received(
        real_cluster: RealCluster, scenario_clients: ScenarioClientsProcess) -> None:
    topic, group, a, b = run_tag_overwrite(real_cluster, scenario_clients, "Explain")
    holders = {q: handle for handle, qs in scenario_clients.queue_ids(topic).items() for q in qs}
    client_of = {"a": a, "b": b}
    received = _received(scenario_clients)
    # the broker stores the tag of whichever client bumped its subVersion last (a race, see
    # test_real_seeds): that client's own queues get its messages, nothing else gets through
    winners = {m["tag"] for msgs in scenario_clients.received().values() for m in msgs}
    assert len(winners) == 1, received
    stored_tag = winners.pop()

    sent = [dict(m, tag=m.get("tag")) for m in _sent_messages(real_cluster, topic)]
    assert len(sent) == 8
    verdicts = []
    for message in sent:
        [(found, explanation)] = _explain(real_cluster, MessageRef(msg_id=message["unique_key"], topic=topic),
                                          [group])
        assert found.queue.queue_id == message["queue_id"] and found.tags == message["tags"]
        owner = client_of[holders[found.queue.queue_id]]
        where = (found.tags, found.queue.queue_id, explanation.summary)
        if message["unique_key"] in received:
            assert explanation.verdict == "consumed", where
            assert explanation.evidence["owner"] == owner
        elif found.tags == stored_tag:  # passed the broker, dropped by the other client's own tags
            assert explanation.verdict == "dropped_by_client", where
            assert explanation.evidence["owner"] == owner and explanation.evidence["owner_expression"] != stored_tag
        else:
            assert explanation.verdict == "filtered_by_broker", where
            assert explanation.evidence["stored_expression"] == stored_tag
        verdicts.append(explanation.verdict)
    assert sorted(verdicts) == sorted(["consumed"] * 2 + ["dropped_by_client"] * 2 + ["filtered_by_broker"] * 4)


def _sent_messages(cluster: RealCluster, topic: str) -> list[dict[str, Any]]:
    """Every message of ``topic``, read back by position through rmqctl (queue, offset, tag, unique key)."""
    out = []
    for queue_id in range(4):
        for offset in range(cluster.max_offset(topic, queue_id)):
            [m] = _find(cluster, MessageRef(topic=topic, broker=cluster.broker_name, queue_id=queue_id, offset=offset))
            out.append({"queue_id": queue_id, "offset": offset, "tags": m.tags, "unique_key": m.unique_key,
                        "offset_msg_id": m.offset_msg_id})
    return out


def test_msg_show_agrees_with_mqadmin_query_msg_by_id(
        real_cluster: RealCluster, scenario_clients: ScenarioClientsProcess) -> None:
    token = uuid.uuid4().hex[:8]
    topic = f"ShowTopic_{token}"
    real_cluster.create_topic(topic, 2)
    [sent] = scenario_clients.produce(topic, "tagS", 1, queue_id=1, keys=f"order-{token}", body="hello 4711")
    by_key = _find(real_cluster, MessageRef(key=f"order-{token}", topic=topic))
    wait_until(lambda: _find(real_cluster, MessageRef(key=f"order-{token}", topic=topic)), timeout=30,
               message="the index has the key")
    [message] = by_key or _find(real_cluster, MessageRef(key=f"order-{token}", topic=topic))
    assert message.unique_key == sent["msg_id"] and message.queue.queue_id == 1 and message.tags == "tagS"
    assert message.body == b"hello 4711" and message.keys == (f"order-{token}",)
    # the broker's id points at the same message, and so does the unique key through the index
    assert _find(real_cluster, MessageRef(msg_id=message.offset_msg_id)) == [message]
    assert _find(real_cluster, MessageRef(msg_id=sent["msg_id"], topic=topic)) == [message]

    out = real_cluster.mqadmin("queryMsgById", "-i", sent["msg_id"], "-t", topic)
    fields = {k.strip(): v.strip() for k, v in re.findall(r"^([A-Za-z ]+):\s+(.*)$", out, re.M)}
    assert fields.get("Topic") == topic, out
    assert fields.get("Queue ID") == "1" and fields.get("Queue Offset") == str(message.queue_offset), out
    assert fields.get("Tags") == "[tagS]" and fields.get("Keys") == f"[order-{token}]", out
    assert message.offset_msg_id in out, out


def test_topic_overwrite_queue_of_a_non_subscriber_is_never_pulled(
        real_cluster: RealCluster, scenario_clients: ScenarioClientsProcess) -> None:
    token = uuid.uuid4().hex[:8]
    group, topic_a, topic_b = f"TopicOwGroup_{token}", f"TopicOwA_{token}", f"TopicOwB_{token}"
    real_cluster.create_topic(topic_a, 4)
    real_cluster.create_topic(topic_b, 4)
    # the group's subscription table flips with every heartbeat; different heartbeat periods and a
    # short retry after "subscription not exist" keep c1's pulls from phase-locking out of the
    # windows where the table holds topicA (as in the real seeds test)
    c1 = scenario_clients.start_consumer("c1", group, {topic_a: "*"}, instance_name=f"ow1_{token}",
                                         heartbeat_interval_ms=1000, pull_delay_on_exception_ms=200)
    c2 = scenario_clients.start_consumer("c2", group, {topic_b: "*"}, instance_name=f"ow2_{token}",
                                         heartbeat_interval_ms=1600, pull_delay_on_exception_ms=200)
    wait_until(lambda: real_cluster.consumer_ids(group) == sorted([c1, c2]), timeout=60, message="both registered")
    wait_until(lambda: sorted(scenario_clients.queue_ids(topic_a).get("c1", [])) == [0, 1], timeout=90,
               message="c1 holds its half of topicA")
    scenario_clients.produce(topic_a, None, 4, queue_ids=[0, 1, 2, 3])
    wait_until(lambda: len(scenario_clients.received().get("c1", [])) == 2, timeout=60, message="c1 consumed 2")
    received = _received(scenario_clients)
    for queue_id in range(4):
        [(found, explanation)] = _explain(
            real_cluster, MessageRef(topic=topic_a, broker=real_cluster.broker_name, queue_id=queue_id, offset=0),
            [group])
        if queue_id < 2:
            wait_until(lambda q=queue_id: real_cluster.consumer_offset(group, topic_a, q) == 1, timeout=60,
                       message="committed")
            [(found, explanation)] = _explain(
                real_cluster, MessageRef(topic=topic_a, broker=real_cluster.broker_name, queue_id=queue_id,
                                         offset=0), [group])
            assert found.unique_key in received and explanation.verdict == "consumed", explanation.summary
        else:
            assert found.unique_key not in received
            assert explanation.verdict == "never_pulled", explanation.summary
            assert explanation.evidence["owner"] == c2 and explanation.evidence["owner_subscribes"] is False


def test_a_failing_listener_retries_then_dead_letters(
        real_cluster: RealCluster, scenario_clients: ScenarioClientsProcess) -> None:
    token = uuid.uuid4().hex[:8]
    group, topic = f"FailGroup_{token}", f"FailTopic_{token}"
    real_cluster.create_topic(topic, 1)
    cid = scenario_clients.start_consumer("f", group, {topic: "*"}, instance_name=f"fail_{token}",
                                          consume_result="RECONSUME_LATER", max_reconsume_times=1)
    wait_until(lambda: real_cluster.consumer_ids(group) == [cid], timeout=60, message="registered")
    wait_until(lambda: scenario_clients.queue_ids(topic).get("f") == [0], timeout=90, message="holds the queue")
    [sent] = scenario_clients.produce(topic, "tagF", 1, queue_id=0)
    ref = MessageRef(msg_id=sent["msg_id"], topic=topic)

    def verdict() -> str:
        [(_, explanation)] = _explain(real_cluster, ref, [group])
        return explanation.verdict

    # first failure: sent back to %RETRY%group after delay level 3 (10 s)
    wait_until(lambda: verdict() in ("retried", "dead_lettered"), timeout=120, message="a retry copy")
    # the copy fails too, and with maxReconsumeTimes=1 the broker moves it to %DLQ%group
    wait_until(lambda: verdict() == "dead_lettered", timeout=120, message="dead-lettered")
    [(_, explanation)] = _explain(real_cluster, ref, [group])
    assert explanation.evidence["dlq_copies"] == 1 and explanation.evidence["retry_copies"] >= 1
    assert all(m["msg_id"] == sent["msg_id"] for m in scenario_clients.received().get("f", []))


def test_a_traced_consumption_names_the_consumer_and_agrees_with_mqadmin(
        real_cluster: RealCluster, scenario_clients: ScenarioClientsProcess) -> None:
    token = uuid.uuid4().hex[:8]
    group, topic = f"TracedGroup_{token}", f"TracedTopic_{token}"
    # the broker runs with traceTopicEnable=true: the trace topic is there before any client traces
    assert real_cluster.topic_route("RMQ_SYS_TRACE_TOPIC") is not None
    real_cluster.create_topic(topic, 1)
    cmd = real_cluster.java_command("rmqctl.harness.TracedConsumer", real_cluster.namesrv_addr, group, topic, "*",
                                    f"traced_{token}", log_name=f"traced_{token}")
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env=real_cluster.env(), text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stdout.readline, "")), daemon=True)  # type: ignore[union-attr]
    reader.start()
    try:
        wait_until(lambda: "STARTED\n" in lines, timeout=60, message="the traced consumer started")
        wait_until(lambda: real_cluster.consumer_ids(group), timeout=60, message="registered")
        [sent] = scenario_clients.produce(topic, "tagT", 1, queue_id=0)
        wait_until(lambda: f"RECEIVED {sent['msg_id']}\n" in lines, timeout=60, message="the listener got it")
        ref = MessageRef(msg_id=sent["msg_id"], topic=topic)

        def traced() -> Explanation | None:
            [(_, explanation)] = _explain(real_cluster, ref, [group])
            return explanation if explanation.evidence.get("from_trace") else None

        explanation = wait_until(traced, timeout=90, message="the trace names the consumption")
        assert explanation.verdict == "consumed"
        assert explanation.evidence["consumed_by_host"] == "127.0.0.1"
        out = real_cluster.mqadmin("queryMsgTraceById", "-i", sent["msg_id"])
        assert group in out, out
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        reader.join(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()


def test_a_message_behind_a_stopped_consumer_waits_then_is_consumed(
        real_cluster: RealCluster, scenario_clients: ScenarioClientsProcess) -> None:
    """Two messages consumed and committed, the consumer stopped, three more sent: the last one
    waits behind the two before it with no client holding its queue. Started again, the consumer
    gets it and the verdict becomes consumed, as its listener saw."""
    token = uuid.uuid4().hex[:8]
    group, topic = f"WaitGroup_{token}", f"WaitTopic_{token}"
    real_cluster.create_topic(topic, 1)
    cid = scenario_clients.start_consumer("w", group, {topic: "*"}, instance_name=f"wait_{token}",
                                          persist_offset_interval_ms=1000)
    wait_until(lambda: scenario_clients.queue_ids(topic).get("w") == [0], timeout=90, message="holds the queue")
    first = scenario_clients.produce(topic, "tagW", 2, queue_id=0)
    wait_until(lambda: len(scenario_clients.received().get("w", [])) == 2, timeout=60, message="2 consumed")
    wait_until(lambda: real_cluster.consumer_offset(group, topic, 0) == 2, timeout=60, message="committed 2")
    scenario_clients.stop_consumer("w")
    wait_until(lambda: real_cluster.consumer_ids(group) == [], timeout=60, message="unregistered")
    later = scenario_clients.produce(topic, "tagW", 3, queue_id=0)
    assert [m["offset"] for m in first + later] == [0, 1, 2, 3, 4]
    last = later[-1]
    assert last["msg_id"] not in _received(scenario_clients)

    [(found, explanation)] = _explain(real_cluster, MessageRef(msg_id=last["msg_id"], topic=topic), [group])
    assert found.queue_offset == 4
    assert explanation.verdict == "waiting", explanation.summary
    assert explanation.evidence["behind"] == 2 and explanation.evidence["consumer_offset"] == 2
    assert explanation.evidence["owner"] is None and cid not in explanation.summary

    scenario_clients.start_consumer("w2", group, {topic: "*"}, instance_name=f"wait2_{token}",
                                    persist_offset_interval_ms=1000)
    wait_until(lambda: last["msg_id"] in {m["msg_id"] for m in scenario_clients.received().get("w2", [])},
               timeout=90, message="the restarted consumer got it")
    wait_until(lambda: real_cluster.consumer_offset(group, topic, 0) == 5, timeout=60, message="committed 5")
    [(_, explanation)] = _explain(real_cluster, MessageRef(msg_id=last["msg_id"], topic=topic), [group])
    assert explanation.verdict == "consumed", explanation.summary
    scenario_clients.stop_consumer("w2")
