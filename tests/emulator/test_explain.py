"""``msg explain`` on the emulator: each verdict against what the emulated clients really did.

The emulator records, per message, the groups whose listener received it and the clients whose
own tag filter dropped it; the verdicts, read over the real wire protocol (the message by
position, the group's view, its retry and dead-letter copies by unique key), must agree with that
for every built-in scenario. The seed incidents are pinned message by message.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rmqctl.cli.app import app
from rmqctl.connect import Target, open_source
from rmqctl.doctor.explain import explain_message
from rmqctl.emulator.scenario import builtin_names
from rmqctl.model import VERDICTS, Explanation, MessageRef

runner = CliRunner()

#: messages stored this close to the end may be consumed but not committed yet (clients persist
#: offsets every 5 s), which the broker cannot tell from waiting
SETTLE_MS = 10_000


async def _explanations(target: str, at: float | None = None, every: int = 1
                        ) -> list[tuple[object, str, Explanation, set[str], set[str]]]:
    """(stored message, group, explanation, groups that received it, clients of the group that
    dropped it) for each message of ``target`` that had time to settle, for each group of its topic."""
    out = []
    async with open_source(Target(emulator=target, at=at)) as opened:
        cluster, source = opened.cluster, opened.source
        views = {}
        for stored in cluster.messages[::every]:
            if stored.store_timestamp > cluster.now_ms - SETTLE_MS:
                continue
            ref = MessageRef(topic=stored.topic, broker=next(
                name for name, b in cluster.brokers.items() if stored in b.queue(stored.topic, stored.queue_id)),
                queue_id=stored.queue_id, offset=stored.queue_offset)
            [message] = (await source.find_messages(ref)).value
            assert message.unique_key == stored.msg_id
            for group in (await source.topic_groups(stored.topic)).value:
                if group not in views:
                    views[group] = await source.group_view(group)
                copies = await source.message_copies(group, message)
                explanation = explain_message(message, views[group], copies=copies.value)
                dropped = {cid for g, cid in cluster.dropped.get(stored.seq, ()) if g == group}
                out.append((stored, group, explanation, cluster.delivered.get(stored.seq, set()), dropped))
    return out


@pytest.mark.parametrize("name", builtin_names())
async def test_every_verdict_agrees_with_what_the_emulated_clients_did(name: str) -> None:
    results = await _explanations(name)
    assert results, "the scenario stored messages that had time to settle"
    for stored, group, explanation, received, dropped in results:
        where = (name, group, stored.topic, stored.queue_id, stored.queue_offset, stored.tag, explanation.summary)
        assert explanation.verdict in VERDICTS
        if explanation.verdict == "consumed":
            assert group in received, where
        elif explanation.verdict == "dropped_by_client":
            assert dropped and explanation.evidence["owner"] in dropped, where
        elif explanation.verdict in ("filtered_by_broker", "never_pulled", "waiting"):
            assert group not in received and not dropped, where
        elif explanation.verdict == "unknown":
            assert explanation.missing, where
        if group in received and explanation.verdict != "unknown":
            assert explanation.verdict in ("consumed", "retried", "dead_lettered"), where
        if dropped:
            assert explanation.verdict == "dropped_by_client", where


async def test_messages_behind_a_hung_listener_are_waiting_behind_its_offset() -> None:
    # stall-and-leave: one payment-service consumer hangs in its listener at 7 min
    results = await _explanations("stall-and-leave", at=600, every=9)
    waiting = [(s, e) for s, g, e, received, _ in results if e.verdict == "waiting"]
    assert waiting
    for stored, explanation in waiting:
        assert explanation.evidence["owner"] == "10.0.0.2@pay-2"
        assert explanation.evidence["behind"] == stored.queue_offset - explanation.evidence["consumer_offset"] >= 0  # type: ignore[attr-defined]


def _by_queue(results: list[tuple[object, str, Explanation, set[str], set[str]]]) -> dict[tuple[int, str], set[str]]:
    out: dict[tuple[int, str], set[str]] = {}
    for stored, _, explanation, _, _ in results:
        out.setdefault((stored.queue_id, stored.tag or ""), set()).add(explanation.verdict)  # type: ignore[attr-defined]
    return out


async def test_tag_overwrite_each_message_by_its_queue_and_tag() -> None:
    # consumer2 subscribed tag2 last: the broker stores tag2 and filters every pull with it;
    # consumer1 holds queues 0-1 and drops the tag2 messages it gets, consumer2 consumes its own
    verdicts = _by_queue(await _explanations("tag-overwrite"))
    assert verdicts == {
        (0, "tag1"): {"filtered_by_broker"}, (1, "tag1"): {"filtered_by_broker"},
        (2, "tag1"): {"filtered_by_broker"}, (3, "tag1"): {"filtered_by_broker"},
        (0, "tag2"): {"dropped_by_client"}, (1, "tag2"): {"dropped_by_client"},
        (2, "tag2"): {"consumed"}, (3, "tag2"): {"consumed"},
    }


async def test_topic_overwrite_queues_allocated_to_a_non_subscriber_are_never_pulled() -> None:
    results = await _explanations("topic-overwrite")
    verdicts = {(s.topic, s.queue_id): e.verdict for s, _, e, _, _ in results}  # type: ignore[attr-defined]
    assert verdicts == {
        ("topicA", 0): "consumed", ("topicA", 1): "consumed", ("topicA", 2): "never_pulled",
        ("topicA", 3): "never_pulled", ("topicB", 0): "never_pulled", ("topicB", 1): "never_pulled",
        ("topicB", 2): "consumed", ("topicB", 3): "consumed",
    }
    owners = {e.evidence["owner"] for s, _, e, _, _ in results if e.verdict == "never_pulled"}
    assert owners == {"10.0.0.1@c1", "10.0.0.2@c2"}


FAILING = """
name = "always-fails"
duration = {duration}

[[brokers]]
name = "broker-a"

[[topics]]
name = "orders"
queues = 2

[[consumers]]
group = "billing"
client_id = "10.0.0.1@billing"
subscriptions = {{ orders = "*" }}
consume_result = "RECONSUME_LATER"

[[produce]]
at = 5.0
topic = "orders"
count = 1
"""


@pytest.mark.parametrize(("duration", "verdict", "copies"), [
    (60, "retried", range(1, 3)),           # 10 s and 30 s after the first failure
    (6 * 3600, "dead_lettered", range(16, 17)),  # 16 retries take 4 h 46 min, then the DLQ
])
async def test_a_message_the_listener_fails_is_retried_then_dead_lettered(
        tmp_path: Path, duration: int, verdict: str, copies: range) -> None:
    path = tmp_path / "always-fails.toml"
    path.write_text(FAILING.format(duration=duration), encoding="utf-8")
    [(stored, group, explanation, received, _)] = await _explanations(str(path))
    assert (group, explanation.verdict, received) == ("billing", verdict, set())
    assert explanation.evidence["retry_copies"] in copies
    assert explanation.evidence["dlq_copies"] == (1 if verdict == "dead_lettered" else 0)


def test_msg_explain_json_has_one_verdict_per_group() -> None:
    result = runner.invoke(app, ["--emulator", "tag-overwrite", "-o", "json", "msg", "explain", "TopicTest2",
                                 "--queue", "broker-a/0", "--offset", "3"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    [message] = doc["messages"]
    assert doc["groups"] == ["test-consumer"] and message["tags"] == "tag2"
    [explanation] = message["explanations"]
    assert explanation["verdict"] == "dropped_by_client" and explanation["ownership_from"] == "live"
    assert explanation["evidence"]["owner"] == "10.0.0.1@consumer1"
    assert explanation["evidence"]["owner_expression"] == "tag1"
    assert explanation["evidence"]["stored_expression"] == "tag2"


def test_msg_explain_for_a_group_that_does_not_exist_is_unknown() -> None:
    result = runner.invoke(app, ["--emulator", "tag-overwrite", "-o", "json", "msg", "explain", "TopicTest2",
                                 "--queue", "broker-a/0", "--offset", "0", "--group", "nobody"])
    assert result.exit_code == 0, result.output
    [explanation] = json.loads(result.stdout)["messages"][0]["explanations"]
    assert explanation["verdict"] == "unknown" and explanation["missing"]


def _snapshot(directory: Path, rows: list[tuple[int, str, int, str | None, bool | None]]) -> None:
    """Snapshot rows ``(ts, topic, queue_id, owner, owner_subscribed)`` of group g1 on broker-a."""
    import pyarrow.parquet as pq

    from rmqctl.snapshot import QueueSnapshot, partition_of, table_of

    snaps = [QueueSnapshot(ts, "DefaultCluster", "g1", topic, "broker-a", qid, owner=owner, owner_subscribed=sub)
             for ts, topic, qid, owner, sub in rows]
    part = directory / partition_of(rows[0][0])
    part.mkdir(parents=True)
    pq.write_table(table_of(snaps), part / "snapshots-1.parquet")


def test_ownership_at_store_time_comes_from_snapshots_when_given(tmp_path: Path) -> None:
    epoch = 1_704_067_200_000  # the emulator's virtual clock starts here; topicA is written at 30 s
    _snapshot(tmp_path, [
        (epoch + 20_000, "topicA", 2, "10.0.0.7@old", False),  # the last one before the store time
        (epoch + 10_000, "topicA", 2, "10.0.0.1@c1", True),
        (epoch + 40_000, "topicA", 2, "10.0.0.1@c1", True),   # after it: not used
    ])
    base = ["--emulator", "topic-overwrite", "-o", "json", "msg", "explain", "topicA", "-q", "broker-a/2",
            "--offset", "0"]
    result = runner.invoke(app, [*base, "--snapshots", str(tmp_path)])
    assert result.exit_code == 0, result.output
    [explanation] = json.loads(result.stdout)["messages"][0]["explanations"]
    assert (explanation["verdict"], explanation["ownership_from"]) == ("never_pulled", "snapshots")
    assert explanation["evidence"]["owner"] == "10.0.0.7@old"

    # a queue no snapshot covers: the live assignment, and the explanation says so
    result = runner.invoke(app, [*base[:8], "broker-a/3", "--offset", "0", "--snapshots", str(tmp_path)])
    assert result.exit_code == 0, result.output
    [explanation] = json.loads(result.stdout)["messages"][0]["explanations"]
    assert explanation["ownership_from"] == "live" and explanation["verdict"] == "never_pulled"
    assert any("snapshot" in m for m in explanation["missing"])


def test_a_snapshot_directory_without_snapshots_is_a_usage_error(tmp_path: Path) -> None:
    result = runner.invoke(app, ["--emulator", "topic-overwrite", "msg", "explain", "topicA", "-q", "broker-a/2",
                                 "--offset", "0", "--snapshots", str(tmp_path)])
    assert result.exit_code == 2 and result.stderr.startswith("rmqctl: error: --snapshots")


async def test_a_message_trace_says_who_consumed_it_and_when() -> None:
    from rmqctl.doctor.explaining import explain
    from rmqctl.model import TRACE_TOPIC, TraceEvent, encode_trace_events

    async with open_source(Target(emulator="topic-overwrite")) as opened:
        cluster = opened.cluster
        cluster.brokers["broker-a"].create_topic(TRACE_TOPIC, 1, 1)
        # topicA/0 was consumed by c1, which (here) traced it; topicA/1 was consumed untraced
        traced = next(m for m in cluster.messages if m.topic == "topicA" and m.queue_id == 0 and m.queue_offset == 0)
        body = encode_trace_events([
            TraceEvent("SubBefore", traced.msg_id, "g1", "req-1", timestamp=1_704_067_231_000, retry_times=0),
            TraceEvent("SubAfter", traced.msg_id, "g1", "req-1", timestamp=1_704_067_231_020, success=True,
                       cost_ms=20),
            TraceEvent("SubAfter", "someone-else", "g1", "req-2", success=True, cost_ms=1),
        ])
        cluster.produce(TRACE_TOPIC, 1, None, keys=traced.msg_id, body=body, producer="10.0.0.1@c1-trace")
        result = await explain(opened.source, MessageRef(topic="topicA", broker="broker-a", queue_id=0, offset=0))
        [fate] = result.fates
        [explanation] = fate.explanations
        assert explanation.verdict == "consumed" and explanation.evidence["from_trace"] is True
        assert explanation.evidence["consumed_ts"] == 1_704_067_231_000 and explanation.evidence["cost_ms"] == 20
        assert explanation.evidence["committed"] is True
        untraced = await explain(opened.source, MessageRef(topic="topicA", broker="broker-a", queue_id=1, offset=0))
        [explanation] = untraced.fates[0].explanations
        assert explanation.verdict == "consumed" and "from_trace" not in explanation.evidence
