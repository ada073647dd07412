"""The doctor on every seed scenario, read from the emulator over the real protocol.

The expected owners, deliveries and losses are written by hand from the seed articles
(/work/shared/seeds, INDEX.md) and RocketMQ's documented semantics, never taken from the
emulator's run report: its simulated consumers use the same allocation and tag filter as the
doctor, so comparing the two would only show the code agreeing with itself. The run report is
checked against the same hand-written numbers.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from rmqctl.backends.remoting import RemotingBackend
from rmqctl.cli.app import app
from rmqctl.doctor import run_checks
from rmqctl.doctor.checks import tag_conflict_topics
from rmqctl.emulator.embedded import embedded_cluster
from rmqctl.model import Finding
from rmqctl.remoting.admin import AdminClient
from rmqctl.service import ClusterService


async def diagnose(scenario: str) -> tuple[dict[str, Any], dict[str, list[Finding]]]:
    async with embedded_cluster(scenario) as (cluster, server):
        source = ClusterService(RemotingBackend(AdminClient([server.namesrv_addr])))
        try:
            findings = {}
            for group in (await source.groups()).value:
                view = await source.group_view(group)
                # read back the conflicting topics' messages (read-only), as the doctor does
                view = await source.sample_messages(view, tag_conflict_topics(view))
                findings[group] = run_checks(view)
            return cluster.report(), findings
        finally:
            await source.close()


def by_code(findings: list[Finding]) -> dict[str, Finding]:
    return {f.code: f for f in findings}


# Seed 000 (a re-post: 002): TopicTest2 with 4 queues, consumer1 subscribes tag1 and starts
# first, consumer2 subscribes tag2 and starts later; 10 tag1 then 10 tag2 messages, sent round
# robin from queue 0 (tag1 on q0..q3,q0..q3,q0,q1; tag2 on q2,q3,q0..q3,q0..q3). The broker keeps
# one subscription per group and topic, the later one ("后者肯定会覆盖前者"): tag2. CLUSTERING still
# splits the queues over both clients, AVG over the sorted ids: consumer1 q0,q1, consumer2 q2,q3.
# consumer1 receives nothing ("Consumer1没有消费到tag1下的数据"); consumer2 receives only the tag2
# messages on its own queues, 6 of 10 here (the article saw "有时候5条，有时候6条"); every tag1 is
# lost, and the 4 tag2 on consumer1's queues are dropped by consumer1's own tag1 filter.
C1, C2 = "10.0.0.1@consumer1", "10.0.0.2@consumer2"
# Seed 004 (RocketMQ 4.8.0 walk-through): SUBSCRIBE_TEST with 4 queues, ConsumerForTagA started
# before ConsumerForTagB; 4 tagA then 4 tagB, so every queue holds tagA at offset 0 and tagB at
# offset 1. "消费者ConsumerForTagA消费的队列ID为0、1,消费者ConsumerForTagB消息的队列ID为2、3";
# "ConsumerForTagA未消费到消息。ConsumerForTagB消费到2条消息" (queue 2 and 3, offset 1, both tagB).
TAG_A, TAG_B = "172.16.0.103@ConsumerForTagA", "172.16.0.103@ConsumerForTagB"

TAG_OVERWRITE_BY_HAND = {
    "tag-overwrite": {
        "topic": "TopicTest2", "loser": C1, "winner": C2, "won_tag": "tag2", "lost_tag": "tag1",
        "owners": {0: C1, 1: C1, 2: C2, 3: C2},
        "received": {C1: {}, C2: {"tag2": 6}},
        "produced": {"tag1": 10, "tag2": 10},
        "lost": {"tag1": 10, "tag2": 4},
    },
    "tag-overwrite-4q": {
        "topic": "SUBSCRIBE_TEST", "loser": TAG_A, "winner": TAG_B, "won_tag": "tagB", "lost_tag": "tagA",
        "owners": {0: TAG_A, 1: TAG_A, 2: TAG_B, 3: TAG_B},
        "received": {TAG_A: {}, TAG_B: {"tagB": 2}},
        "produced": {"tagA": 4, "tagB": 4},
        "lost": {"tagA": 4, "tagB": 2},
    },
}


@pytest.mark.parametrize("scenario", sorted(TAG_OVERWRITE_BY_HAND))
async def test_tag_overwrite_verdict_matches_the_seed_article(scenario: str) -> None:
    case = TAG_OVERWRITE_BY_HAND[scenario]
    loser, winner = case["loser"], case["winner"]
    report, findings = await diagnose(scenario)
    (group_findings,) = findings.values()
    found = by_code(group_findings)
    assert set(found) == {"SUBSCRIPTION_TAG_CONFLICT", "BROKER_SUBSCRIPTION_DIVERGENCE"}
    ev = found["SUBSCRIPTION_TAG_CONFLICT"].evidence
    assert ev["broker_holds_from"] == [winner]
    assert ev["losing_clients"] == [loser] and ev["starved_clients"] == [loser]
    assert ev["tags_never_consumed"] == [case["lost_tag"]]
    # who holds which queue, and what the broker's stored filter lets through to that holder
    assert {q["queue_id"]: q["owner"] for q in ev["queues"]} == case["owners"]
    assert {q["queue_id"]: q["delivered_tags"] for q in ev["queues"]} == {
        qid: [case["won_tag"]] if owner == winner else [] for qid, owner in case["owners"].items()}
    # the emulator's consumers lived through the article's incident
    assert {cid: report["consumers"][cid]["received_by_tag"] for cid in (loser, winner)} == case["received"]
    assert report["produced_by_tag"] == case["produced"]
    assert report["lost_by_tag"] == case["lost"]


async def test_topic_overwrite_names_the_queues_nobody_pulls() -> None:
    # Seed 003: group g1, c1 subscribes topicA and c2 topicB (4 queues each here, one broker).
    # Every client of the group takes part in every topic's rebalance ("c2 根本没有订阅 topicA，但
    # 根据分配算法，却要加上 c2 进行分配"): AVG over [c1, c2] gives c2 topicA's q2,q3 and c1 topicB's
    # q0,q1, which nobody pulls. 8 messages per topic round robin: 2 wait on each of those queues.
    never_pulled = {("topicA", "broker-a", 2), ("topicA", "broker-a", 3),
                    ("topicB", "broker-a", 0), ("topicB", "broker-a", 1)}
    report, findings = await diagnose("topic-overwrite")
    found = by_code(findings["g1"])
    assert {"SUBSCRIPTION_TOPIC_CONFLICT", "ORPHANED_QUEUES"} <= set(found)
    predicted = {(t["topic"], q["broker"], q["queue_id"])
                 for t in found["SUBSCRIPTION_TOPIC_CONFLICT"].evidence["topics"]
                 for q in t["never_pulled_queues"]}
    orphaned = {(q["topic"], q["broker"], q["queue_id"]) for q in found["ORPHANED_QUEUES"].evidence["queues"]}
    assert predicted == orphaned == never_pulled
    # every orphaned queue the broker still reports waits with its 2 messages
    diffs = [q["diff"] for q in found["ORPHANED_QUEUES"].evidence["queues"] if q["diff"] is not None]
    assert diffs and set(diffs) == {2}
    # the emulator's clients lived through it: each consumed the 4 messages of its own half only
    held = {cid: sorted((q["topic"], q["queue_id"]) for q in c["queues"] if not q["topic"].startswith("%RETRY%"))
            for cid, c in report["consumers"].items()}
    assert held == {"10.0.0.1@c1": [("topicA", 0), ("topicA", 1)], "10.0.0.2@c2": [("topicB", 2), ("topicB", 3)]}
    assert {cid: sum(c["received_by_tag"].values()) for cid, c in report["consumers"].items()} == {
        "10.0.0.1@c1": 4, "10.0.0.2@c2": 4}


async def test_idle_consumer_is_named() -> None:
    # Seed 001: one queue, two consumers of lhy-test-consumerGroup: "一个队列只能分配给一个消费者",
    # so AVG gives the queue to the first id in sorted order and the second stays idle.
    report, findings = await diagnose("idle-consumers")
    found = by_code(findings["lhy-test-consumerGroup"])
    assert set(found) == {"IDLE_CONSUMERS"}
    assert found["IDLE_CONSUMERS"].evidence["idle_clients"] == ["10.0.0.2@pushConsumer2"]
    assert {cid: [q["queue_id"] for q in c["queues"] if q["topic"] == "TopicTest"]
            for cid, c in report["consumers"].items()} == {"10.0.0.1@pushConsumer1": [0],
                                                           "10.0.0.2@pushConsumer2": []}


async def test_sixteen_queues_over_three_consumers_read_six_five_five() -> None:
    # Seed 001: 16 queues, 3 consumers: "mod=16 % 3 = 1", index 0 takes 16/3+1 = 6 queues
    # [0..5], the others 5 each: "6,7,8,9,10" and "11,12,13,14,15". What rmqctl reads back from the
    # clients' running infos must be exactly those blocks.
    async with embedded_cluster("uneven-allocation") as (_, server):
        source = ClusterService(RemotingBackend(AdminClient([server.namesrv_addr])))
        try:
            (group,) = (await source.groups()).value
            view = await source.group_view(group)
        finally:
            await source.close()
    assert {cid: [mq.queue_id for mq in queues if mq.topic == "TopicTest"]
            for cid, queues in view.assignments().items()} == {
        "10.0.0.1@pushConsumer1": [0, 1, 2, 3, 4, 5],
        "10.0.0.2@pushConsumer2": [6, 7, 8, 9, 10],
        "10.0.0.3@pushConsumer3": [11, 12, 13, 14, 15],
    }


@pytest.mark.parametrize("scenario", ["healthy", "uneven-allocation"])
async def test_consistent_groups_have_no_findings(scenario: str) -> None:
    _, findings = await diagnose(scenario)
    assert findings and all(f == [] for f in findings.values()), findings


def test_doctor_exit_codes_follow_fail_on() -> None:
    runner = CliRunner()
    bad = runner.invoke(app, ["--emulator", "tag-overwrite", "doctor", "--all", "-o", "json"])
    assert bad.exit_code == 1
    codes = sorted(f["code"] for f in json.loads(bad.stdout)["findings"])
    assert codes == ["BROKER_SUBSCRIPTION_DIVERGENCE", "SUBSCRIPTION_TAG_CONFLICT"]
    assert runner.invoke(app, ["--emulator", "tag-overwrite", "doctor", "--all", "--fail-on", "never"]).exit_code == 0
    idle = runner.invoke(app, ["--emulator", "idle-consumers", "doctor", "lhy-test-consumerGroup"])
    assert idle.exit_code == 0  # only a warning, below the default threshold
    assert runner.invoke(app, ["--emulator", "idle-consumers", "doctor", "lhy-test-consumerGroup",
                               "--fail-on", "warning"]).exit_code == 1
    assert runner.invoke(app, ["--emulator", "healthy", "doctor", "--all", "--fail-on", "warning"]).exit_code == 0
    unknown = runner.invoke(app, ["--emulator", "healthy", "doctor", "no-such-group"])
    assert unknown.exit_code == 2 and "not found" in unknown.stderr


def test_demo_shows_the_incident_and_the_verdict() -> None:
    result = CliRunner().invoke(app, ["demo", "-o", "json"])
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    (group,) = doc["groups"].values()
    assert [f["code"] for f in group["findings"]] == ["SUBSCRIPTION_TAG_CONFLICT", "BROKER_SUBSCRIPTION_DIVERGENCE"]
    consumers = doc["scenario"]["consumers"]
    assert consumers["172.16.0.103@ConsumerForTagA"]["received_by_tag"] == {}
    assert consumers["172.16.0.103@ConsumerForTagB"]["received_by_tag"] == {"tagB": 2}
    table = CliRunner().invoke(app, ["demo"])
    assert "SUBSCRIPTION_TAG_CONFLICT" in table.stdout and "queue assignment" in table.stdout


async def test_duplicate_client_id_orphans_the_second_share(tmp_path) -> None:
    scenario = tmp_path / "dup.toml"
    scenario.write_text(
        'name = "dup"\nduration = 60\n[[brokers]]\nname = "broker-a"\n[[topics]]\nname = "T"\nqueues = 4\n'
        '[[consumers]]\ngroup = "g"\nclient_id = "10.0.0.1@same"\nsubscriptions = { T = "*" }\n'
        '[[consumers]]\ngroup = "g"\nclient_id = "10.0.0.1@same"\nsubscriptions = { T = "*" }\nstart = 1.0\n'
        '[[produce]]\nat = 5.0\ntopic = "T"\ntag = "x"\ncount = 8\n'
    )
    report, findings = await diagnose(str(scenario))
    found = by_code(findings["g"])
    assert set(found) == {"DUPLICATE_CLIENT_ID", "ORPHANED_QUEUES"}
    (addresses,) = found["DUPLICATE_CLIENT_ID"].evidence["clients"].values()
    assert len(addresses) == 2
    orphaned = [q["queue_id"] for q in found["ORPHANED_QUEUES"].evidence["queues"]]
    assert orphaned == [2, 3]  # both processes take index 0's share (AVG: q0, q1)
    assert report["lost_by_tag"] == {"x": 4}
