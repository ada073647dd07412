"""The doctor on every seed scenario, read from the emulator over the real protocol.

Each verdict is checked against what the scenario's simulated consumers actually received
(the emulator's run report), not against numbers copied from the doctor itself.
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


def held(report: dict[str, Any], cid: str, topic: str) -> set[int]:
    return {q["queue_id"] for q in report["consumers"][cid]["queues"] if q["topic"] == topic}


@pytest.mark.parametrize("scenario, loser, winner, topic, lost_tag", [
    ("tag-overwrite", "10.0.0.1@consumer1", "10.0.0.2@consumer2", "TopicTest2", "tag1"),
    ("tag-overwrite-4q", "172.16.0.103@ConsumerForTagA", "172.16.0.103@ConsumerForTagB",
     "SUBSCRIBE_TEST", "tagA"),
])
async def test_tag_overwrite_report_agrees_with_what_consumers_received(
        scenario: str, loser: str, winner: str, topic: str, lost_tag: str) -> None:
    report, findings = await diagnose(scenario)
    (group_findings,) = findings.values()
    found = by_code(group_findings)
    assert set(found) == {"SUBSCRIPTION_TAG_CONFLICT", "BROKER_SUBSCRIPTION_DIVERGENCE"}
    ev = found["SUBSCRIPTION_TAG_CONFLICT"].evidence
    assert ev["broker_holds_from"] == [winner]
    assert ev["losing_clients"] == [loser] and ev["starved_clients"] == [loser]
    assert ev["tags_never_consumed"] == [lost_tag]
    # the doctor's owners are the clients that really held the queues
    owners = {q["queue_id"]: q["owner"] for q in ev["queues"]}
    assert {q for q, o in owners.items() if o == loser} == held(report, loser, topic)
    assert {q for q, o in owners.items() if o == winner} == held(report, winner, topic)
    # and its impact matches what was received: nothing for the loser, only deliverable tags
    # for the winner, and the never-consumed tag lost in full
    assert report["consumers"][loser]["received_by_tag"] == {}
    deliverable = {t for q in ev["queues"] if q["owner"] == winner for t in q["delivered_tags"]}
    assert set(report["consumers"][winner]["received_by_tag"]) == deliverable
    assert report["lost_by_tag"][lost_tag] == report["produced_by_tag"][lost_tag]
    assert all(q["delivered_tags"] == [] for q in ev["queues"] if q["owner"] == loser)


async def test_topic_overwrite_names_the_queues_nobody_pulls() -> None:
    report, findings = await diagnose("topic-overwrite")
    found = by_code(findings["g1"])
    assert {"SUBSCRIPTION_TOPIC_CONFLICT", "ORPHANED_QUEUES"} <= set(found)
    predicted = {(t["topic"], q["broker"], q["queue_id"])
                 for t in found["SUBSCRIPTION_TOPIC_CONFLICT"].evidence["topics"]
                 for q in t["never_pulled_queues"]}
    orphaned = {(q["topic"], q["broker"], q["queue_id"]) for q in found["ORPHANED_QUEUES"].evidence["queues"]}
    held_by_anyone = {(q["topic"], q["broker"], q["queue_id"])
                      for c in report["consumers"].values() for q in c["queues"]}
    assert predicted == orphaned
    assert not predicted & held_by_anyone
    assert {(t, q) for t, _, q in predicted} == {("topicA", 2), ("topicA", 3), ("topicB", 0), ("topicB", 1)}
    # 8 messages per topic over 4 queues: every orphaned queue the broker still reports waits with 2
    diffs = [q["diff"] for q in found["ORPHANED_QUEUES"].evidence["queues"] if q["diff"] is not None]
    assert diffs and set(diffs) == {2}


async def test_idle_consumer_is_named() -> None:
    report, findings = await diagnose("idle-consumers")
    found = by_code(findings["lhy-test-consumerGroup"])
    assert set(found) == {"IDLE_CONSUMERS"}
    idle = found["IDLE_CONSUMERS"].evidence["idle_clients"]
    assert idle == [cid for cid, c in report["consumers"].items()
                    if not [q for q in c["queues"] if q["topic"] == "TopicTest"]]
    assert idle == ["10.0.0.2@pushConsumer2"]


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
