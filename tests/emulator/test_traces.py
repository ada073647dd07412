"""Emulated consumers with message tracing on write consume records to the trace topic the way a
Java client's trace hook does (a SubBefore and a SubAfter per consumption, keyed by the message's
unique key, sent from the consumer's host), so ``msg explain`` names the consumer from its trace
on the emulator as it does on a real broker. A consumer without tracing writes nothing."""

from __future__ import annotations

import pytest

from rmqctl import errors
from rmqctl.doctor.explaining import explain
from rmqctl.emulator.embedded import embedded_opened
from rmqctl.emulator.scenario import parse_scenario
from rmqctl.model import TRACE_TOPIC, MessageRef, decode_trace_events

T = "PayTopic"


def scenario(trace_a: bool, *, consume_ms: int = 40, result: str = "SUCCESS") -> str:
    return f"""
name = "traced"
duration = 30
[[brokers]]
name = "broker-a"
[[topics]]
name = "{T}"
queues = 2
[[groups]]
name = "ga"
retry_max_times = 1
[[consumers]]
group = "ga"
client_id = "10.0.0.5@a"
subscriptions = {{ {T} = "*" }}
consume_ms = {consume_ms}
consume_result = "{result}"
trace = {"true" if trace_a else "false"}
[[consumers]]
group = "gb"
client_id = "10.0.0.6@b"
subscriptions = {{ {T} = "*" }}
[[produce]]
at = 3.0
topic = "{T}"
count = 4
"""


async def test_a_traced_consumer_is_named_by_its_trace() -> None:
    async with embedded_opened(parse_scenario(scenario(True)), at=20) as opened:
        cluster = opened.cluster
        sent = [m for m in cluster.messages if m.topic == T]
        assert len(sent) == 4
        traces = cluster.brokers["broker-a"].store.queue(TRACE_TOPIC, 0)
        # one trace message per consumption of ga, none for the untraced gb
        assert len(traces) == 4
        records = [e for t in traces for e in decode_trace_events(t.body)]
        assert sorted((e.kind, e.msg_id) for e in records) == sorted(
            [(kind, m.msg_id) for m in sent for kind in ("SubBefore", "SubAfter")])
        assert {e.group for e in records} == {"ga"}
        after = [e for e in records if e.kind == "SubAfter"]
        before = {e.request_id: e for e in records if e.kind == "SubBefore"}
        assert all(e.success and e.cost_ms == 40 for e in after)
        assert all(before[e.request_id].timestamp == e.timestamp - 40 for e in after)  # type: ignore[operator]

        message = sent[0]
        ref = MessageRef(topic=T, broker="broker-a", queue_id=message.queue_id, offset=message.queue_offset)
        result = await explain(opened.source, ref, ["ga", "gb"])
        by_group = {e.group: e for e in result.fates[0].explanations}
        traced, untraced = by_group["ga"], by_group["gb"]
        assert traced.verdict == "consumed" and traced.evidence["from_trace"] is True
        assert traced.evidence["consumed_by_host"] == "10.0.0.5"
        [own] = [e for e in after if e.msg_id == message.msg_id]
        assert traced.evidence["finished_ts"] == own.timestamp and traced.evidence["committed"] is True
        assert untraced.verdict == "consumed" and "from_trace" not in untraced.evidence


async def test_without_tracing_there_is_no_trace_topic() -> None:
    async with embedded_opened(parse_scenario(scenario(False)), at=20) as opened:
        assert TRACE_TOPIC not in opened.cluster.brokers["broker-a"].store.topics
        message = next(m for m in opened.cluster.messages if m.topic == T)
        ref = MessageRef(topic=T, broker="broker-a", queue_id=message.queue_id, offset=message.queue_offset)
        [explanation] = (await explain(opened.source, ref, ["ga"])).fates[0].explanations
        assert explanation.verdict == "consumed" and "from_trace" not in explanation.evidence


async def test_a_failed_consumption_is_traced_as_failed_and_the_copies_decide() -> None:
    async with embedded_opened(parse_scenario(scenario(True, consume_ms=0, result="RECONSUME_LATER")),
                               at=25) as opened:
        cluster = opened.cluster
        records = [e for t in cluster.brokers["broker-a"].store.queue(TRACE_TOPIC, 0)
                   for e in decode_trace_events(t.body)]
        assert records and all(e.success is False for e in records if e.kind == "SubAfter")
        message = next(m for m in cluster.messages if m.topic == T)
        ref = MessageRef(topic=T, broker="broker-a", queue_id=message.queue_id, offset=message.queue_offset)
        [explanation] = (await explain(opened.source, ref, ["ga"])).fates[0].explanations
        # a failed listener call is no consumption: the retry copies say what became of it
        assert explanation.verdict in ("retried", "dead_lettered"), explanation.summary


def test_trace_must_be_a_boolean() -> None:
    with pytest.raises(errors.ConfigError, match="trace"):
        parse_scenario(scenario(True).replace("trace = true", 'trace = "yes"'))
