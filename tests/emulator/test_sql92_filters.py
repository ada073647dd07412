"""SQL92 subscriptions in the emulator and the doctor's numbers for them.

One group, one topic of 4 queues, a SQL92 client (``p_a > 5``) and a tag client
(``tagX || tagY``); 8 tagX, 8 tagY and 8 tagZ are sent round robin from queue 0, each step's
messages taking p_a = 1, 9, 1, 9, … so queues 0 and 2 hold p_a = 1 and queues 1 and 3 hold
p_a = 9. AVG over the sorted ids gives the SQL client (10.0.0.1) queues 0 and 1 and the tag client
(10.0.0.2) queues 2 and 3. The expected numbers below are worked out by hand from the broker's
rules (the broker filters by the group's ONE stored expression, SQL92 over properties or TAG by
hash code; a SQL92 client keeps whatever it is sent; a tag client drops tags it did not ask for),
never from the doctor or the emulator.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rmqctl.backends.remoting import RemotingBackend
from rmqctl.doctor import run_checks
from rmqctl.doctor.checks import tag_conflict_topics
from rmqctl.emulator.embedded import embedded_cluster
from rmqctl.emulator.scenario import parse_scenario
from rmqctl.model import Finding
from rmqctl.remoting.admin import AdminClient
from rmqctl.service import ClusterService

SQL, TAG = "10.0.0.1@sqlclient", "10.0.0.2@tagclient"


def scenario(sql_start: float, tag_start: float) -> str:
    steps = "".join(f"""
[[produce]]
at = {5 + i}
topic = "TopicSql"
tag = "{tag}"
count = 8
properties = {{ p_a = ["1", "9"] }}
""" for i, tag in enumerate(("tagX", "tagY", "tagZ")))
    return f"""
name = "sql-and-tag"
duration = 60

[[topics]]
name = "TopicSql"
queues = 4

[[consumers]]
group = "mixed"
client_id = "{SQL}"
sql_subscriptions = {{ TopicSql = "p_a > 5" }}
start = {sql_start}

[[consumers]]
group = "mixed"
client_id = "{TAG}"
subscriptions = {{ TopicSql = "tagX || tagY" }}
start = {tag_start}
""" + steps


async def diagnose(text: str) -> tuple[dict[str, Any], Finding, Any]:
    async with embedded_cluster(parse_scenario(text)) as (cluster, server):
        source = ClusterService(RemotingBackend(AdminClient([server.namesrv_addr])))
        try:
            view = await source.group_view("mixed")
            view = await source.sample_messages(view, tag_conflict_topics(view))
            found = [f for f in run_checks(view) if f.code == "SUBSCRIPTION_TAG_CONFLICT"]
            assert len(found) == 1
            deliveries = {c.client_id: [(m.tag, dict(m.properties)) for m in c.deliveries]
                          for c in cluster.consumers}
            return cluster.report(), found[0], deliveries
        finally:
            await source.close()


def _by_tag(items: list[tuple[str | None, dict[str, str]]], p_a: str | None = None) -> dict[str, int]:
    out: dict[str, int] = {}
    for tag, props in items:
        if p_a is None or props.get("p_a") == p_a:
            out[tag or ""] = out.get(tag or "", 0) + 1
    return dict(sorted(out.items()))


@pytest.mark.asyncio
async def test_tag_expression_held_sql_client_keeps_what_its_filter_excludes() -> None:
    # the tag client subscribes later: the broker holds "tagX || tagY" and drops every tagZ
    report, f, deliveries = await diagnose(scenario(sql_start=0.0, tag_start=1.0))
    ev = f.evidence
    assert ev["broker_expression"] == {"broker-a": "tagX || tagY"}
    # the SQL client gets every tagX and tagY of queues 0 and 1, half of them with p_a = 1
    assert _by_tag(deliveries[SQL]) == {"tagX": 4, "tagY": 4}
    assert _by_tag(deliveries[SQL], p_a="1") == {"tagX": 2, "tagY": 2}
    assert _by_tag(deliveries[TAG]) == {"tagX": 4, "tagY": 4}
    # the doctor: the same numbers, from the sample
    assert ev["counts"]["received_by_client"] == {SQL: {"tagX": 4, "tagY": 4}, TAG: {"tagX": 4, "tagY": 4}}
    assert ev["delivered_outside_own_filter"] == {SQL: {"tagX": 2, "tagY": 2}}
    assert ev["lost_in_sample"] == {"tagZ": 8}
    assert ev["sql92_clients"] == [SQL]
    assert f"{SQL} received 4 message(s) its own SQL92 expression excludes (tagX 2, tagY 2)" in f.detail
    assert "8 reached no listener of this group (tagZ 8)" in f.detail
    # the run report: tagZ with p_a = 9 (queues 1 and 3) was wanted by the SQL client, and lost
    assert report["lost_by_tag"] == {"tagX": 0, "tagY": 0, "tagZ": 4}


@pytest.mark.asyncio
async def test_sql_expression_held_filters_by_properties_not_tags() -> None:
    # the SQL client subscribes later: the broker holds p_a > 5 and passes queues 1 and 3 only
    report, f, deliveries = await diagnose(scenario(sql_start=1.0, tag_start=0.0))
    ev = f.evidence
    assert ev["broker_expression"] == {"broker-a": "p_a > 5"}
    assert _by_tag(deliveries[SQL]) == {"tagX": 2, "tagY": 2, "tagZ": 2}  # queue 1
    assert _by_tag(deliveries[TAG]) == {"tagX": 2, "tagY": 2}  # queue 3; its tagZ dropped
    assert ev["counts"]["received_by_client"] == {SQL: {"tagX": 2, "tagY": 2, "tagZ": 2},
                                                  TAG: {"tagX": 2, "tagY": 2}}
    # queues 0 and 2 (p_a = 1) are filtered by the broker: 4 of each tag; and tagZ on queue 3 is
    # dropped by the tag client
    assert ev["counts"]["filtered_by_broker"] == {"tagX": 4, "tagY": 4, "tagZ": 4}
    assert ev["counts"]["dropped_by_client"] == {SQL: {}, TAG: {"tagZ": 2}}
    assert ev["lost_in_sample"] == {"tagX": 4, "tagY": 4, "tagZ": 6}
    assert ev["delivered_outside_own_filter"] == {}
    # no tag is lost everywhere: each one's fate depends on p_a
    assert ev["tags_never_consumed"] == []
    assert "are never consumed by anyone" not in f.detail
    # wanted and lost: the tag client's tagX/tagY on queues 0 and 2 (p_a = 1); the SQL client
    # wanted only p_a = 9, and got all of it on its queue 1, and queue 3's tagZ went to the tag client
    assert report["lost_by_tag"] == {"tagX": 4, "tagY": 4, "tagZ": 2}


@pytest.mark.asyncio
async def test_without_a_sample_sql_filters_are_not_guessed(tmp_path: Path) -> None:
    async with embedded_cluster(parse_scenario(scenario(sql_start=1.0, tag_start=0.0))) as (_, server):
        source = ClusterService(RemotingBackend(AdminClient([server.namesrv_addr])))
        try:
            view = await source.group_view("mixed")
        finally:
            await source.close()
    f = next(f for f in run_checks(view) if f.code == "SUBSCRIPTION_TAG_CONFLICT")
    # the broker's p_a > 5 may pass any tag: nothing is claimed lost, and the text says why
    assert f.evidence["tags_never_consumed"] == []
    assert "Without a message sample nothing can be said about the SQL92 expressions" in f.detail


def _doctor_json(*args: str) -> tuple[int, Any]:
    from typer.testing import CliRunner

    from rmqctl.cli.app import app

    result = CliRunner().invoke(app, list(args))
    try:
        return result.exit_code, json.loads(result.stdout)
    except ValueError:
        return result.exit_code, result.output


def test_sample_reads_past_one_pull_and_states_its_window(tmp_path: Path) -> None:
    # 3 steps of 80 messages over 4 queues: 60 per queue, more than one pull's 32
    text = scenario(sql_start=0.0, tag_start=1.0).replace("count = 8", "count = 80")
    path = tmp_path / "sql-and-tag.toml"
    path.write_text(text)
    base = ["--emulator", str(path), "doctor", "mixed", "-o", "json", "--fail-on", "never"]

    def conflict(doc: Any) -> dict[str, Any]:
        return next(f for f in doc["findings"] if f["code"] == "SUBSCRIPTION_TAG_CONFLICT")

    code, doc = _doctor_json(*base)
    assert code == 0, doc
    f = conflict(doc)
    assert f["evidence"]["sample_window"] == {"per_queue": 32, "messages": 128}
    assert "the last 32 message(s) of each queue (TopicSql@broker-a queue 0: offsets 28..59, queue 1:" in f["detail"]
    code, doc = _doctor_json(*base, "--sample", "all")
    f = conflict(doc)
    assert f["evidence"]["sample_window"] == {"per_queue": 60, "messages": 240}
    # every tagZ is filtered by the broker's "tagX || tagY"; all 80 are counted now
    assert f["evidence"]["lost_in_sample"] == {"tagZ": 80}
    code, doc = _doctor_json(*base, "--sample", "40")
    assert conflict(doc)["evidence"]["sample_window"] == {"per_queue": 40, "messages": 160}
    code, out = _doctor_json(*base, "--sample", "lots")
    assert code == 2 and "rmqctl: error:" in out and "--sample" in out
