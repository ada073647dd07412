"""Doctor fidelity on mixed groups, checked against what the emulated consumers really did.

Each case runs on the embedded emulator (frozen virtual clock, read over the real protocol) and
compares the doctor's numbers with the emulator's own accounting (what each simulated listener
received, what each client's tag filter dropped, the broker's offsets), never with the doctor's
output itself.
"""

from __future__ import annotations

from typing import Any

import pytest

from rmqctl.doctor import diagnose, run_checks
from rmqctl.emulator.embedded import embedded_opened
from rmqctl.emulator.scenario import parse_scenario
from rmqctl.emulator.world import EmulatedCluster
from rmqctl.model import Finding, GroupView, MessageQueue

G = "G"
A, B, C = "10.0.0.1@A", "10.0.0.2@B", "10.0.0.3@C"
#: a subVersion later than any clock: the client that sends it keeps its expression stored
PINNED = 4_102_444_800_000


def star_plus_tags(winner: str, second_topic: bool = False) -> str:
    """A `tagX || tagY`, B `tagX`, C `*`; six queues (two each); tagX, tagY, tagZ once per queue."""
    def pin(cid: str) -> str:
        return f"sub_version = {PINNED}\n" if cid == winner else ""

    c_subs = '{ T = "*", T2 = "*" }' if second_topic else '{ T = "*" }'
    text = f"""
name = "star-plus-tags"
duration = 60
[[topics]]
name = "T"
queues = 6
[[topics]]
name = "T2"
queues = 4
[[consumers]]
group = "{G}"
client_id = "{A}"
subscriptions = {{ T = "tagX || tagY" }}
consume_from_where = "CONSUME_FROM_FIRST_OFFSET"
{pin(A)}
[[consumers]]
group = "{G}"
client_id = "{B}"
start = 1.0
subscriptions = {{ T = "tagX" }}
consume_from_where = "CONSUME_FROM_FIRST_OFFSET"
{pin(B)}
[[consumers]]
group = "{G}"
client_id = "{C}"
start = 2.0
subscriptions = {c_subs}
consume_from_where = "CONSUME_FROM_FIRST_OFFSET"
{pin(C)}
"""
    for tag in ("tagX", "tagY", "tagZ"):
        text += f'[[produce]]\nat = 10.0\ntopic = "T"\ntag = "{tag}"\ncount = 6\n'
    if second_topic:
        for q in range(4):
            text += f'[[produce]]\nat = 10.0\ntopic = "T2"\ntag = "t2"\ncount = 3\nqueue = {q}\n'
    return text


async def view_of(opened: Any, *, sample: bool) -> GroupView:
    from rmqctl.doctor.checks import tag_conflict_topics

    view: GroupView = await opened.source.group_view(G)
    if sample:
        view = await opened.source.sample_messages(view, tag_conflict_topics(view))
    return view


def finding(findings: list[Finding], code: str) -> Finding:
    (found,) = [f for f in findings if f.code == code]
    return found


@pytest.mark.parametrize("winner", [C, B])
async def test_per_tag_counts_equal_what_the_consumers_received_and_dropped(winner: str) -> None:
    scenario = parse_scenario(star_plus_tags(winner), "star-plus-tags")
    async with embedded_opened(scenario, at=60) as opened:
        cluster: EmulatedCluster = opened.cluster
        view = await view_of(opened, sample=True)
        ev = finding(run_checks(view), "SUBSCRIPTION_TAG_CONFLICT").evidence
        consumers = {c.client_id: c for c in cluster.consumers}
        stored = cluster.brokers["broker-a"].consumer_table[G].subscriptions["T"]
        assert stored.expression == {C: "*", B: "tagX"}[winner]
        assert ev["sampled"] is True and ev["broker_holds_from"] == [winner]
        counts = ev["counts"]
        for cid, consumer in consumers.items():
            assert counts["received_by_client"][cid] == consumer.received_by_tag, cid
            assert counts["dropped_by_client"][cid] == consumer.dropped_by_tag, cid
        # a tag the doctor says nobody consumes is one no listener received
        received = {t for c in consumers.values() for t in c.received_by_tag}
        assert sorted(ev["tags_never_consumed"]) == sorted({"tagX", "tagY", "tagZ"} - received)
        if winner == C:
            # the broker passes everything: A drops tagZ, B drops tagY and tagZ, nobody loses a tag
            assert consumers[A].dropped_by_tag == {"tagZ": 2} and consumers[B].dropped_by_tag == {"tagY": 2, "tagZ": 2}
            assert ev["tags_never_consumed"] == []
        else:
            # only tagX gets through the broker: every tagY and every tagZ is consumed by nobody
            assert sorted(ev["tags_never_consumed"]) == ["tagY", "tagZ"]
            assert counts["filtered_by_broker"] == {"tagY": 6, "tagZ": 6}
        # the fix never narrows C's "*"
        assert "'*'" in finding(run_checks(view), "SUBSCRIPTION_TAG_CONFLICT").fix


async def test_without_a_sample_every_other_tag_is_counted_and_said_so() -> None:
    scenario = parse_scenario(star_plus_tags(C), "star-plus-tags")
    async with embedded_opened(scenario, at=60) as opened:
        view = await view_of(opened, sample=False)
        tag = finding(run_checks(view), "SUBSCRIPTION_TAG_CONFLICT")
        rows = {q["queue_id"]: q for q in tag.evidence["queues"]}
        a_queue = next(q for q, r in rows.items() if r["owner"] == A)
        b_queue = next(q for q, r in rows.items() if r["owner"] == B)
        assert rows[a_queue]["dropped_by_client"] == ["(any other tag)"]
        assert rows[b_queue]["dropped_by_client"] == ["tagY", "(any other tag)"]
        assert tag.evidence["sampled"] is False and "No message sample" in tag.detail
        assert "'*'" in tag.fix and "'tagX || tagY'" not in tag.fix


def true_orphan_backlog(cluster: EmulatedCluster, view: GroupView) -> int:
    broker = cluster.brokers["broker-a"]
    held = {mq for c in cluster.consumers for mq in c.held_queues()}
    total = 0
    for q in range(4):
        if MessageQueue("T2", "broker-a", q) not in held:
            total += broker.max_offset("T2", q) - max(0, broker.stored_offset(G, "T2", q))
    return total


async def test_ten_runs_on_the_flickering_topic_give_one_verdict_and_the_true_backlog() -> None:
    scenario = parse_scenario(star_plus_tags(C, second_topic=True), "flicker")
    async with embedded_opened(scenario, at=60) as opened:
        cluster: EmulatedCluster = opened.cluster
        verdicts, states = set(), set()
        for _ in range(10):
            diagnosis = await diagnose(opened.source, [G], clock=opened.clock)
            table = cluster.brokers["broker-a"].consumer_table[G].subscriptions
            states.add("T2" in table)
            view = await opened.source.group_view(G)
            orphaned = finding(list(diagnosis.findings), "ORPHANED_QUEUES")
            verdicts.add((tuple(sorted((f.code, f.severity) for f in diagnosis.findings)),
                          orphaned.evidence["total_diff"], len(orphaned.evidence["unknown_diff_queues"])))
            assert orphaned.evidence["total_diff"] == true_orphan_backlog(cluster, view) == 9
            await opened.clock.sleep(0.9)
        assert states == {True, False}, "the broker's table never flipped: the case was not exercised"
        assert len(verdicts) == 1, verdicts
        ((codes, backlog, unknown),) = verdicts
        assert ("ORPHANED_QUEUES", "error") in codes and backlog == 9 and unknown == 0


async def test_a_held_queue_whose_pulls_fail_is_named() -> None:
    scenario = parse_scenario(star_plus_tags(C, second_topic=True), "flicker")
    async with embedded_opened(scenario, at=60) as opened:
        cluster: EmulatedCluster = opened.cluster
        table = cluster.brokers["broker-a"].consumer_table[G].subscriptions
        for _ in range(40):  # move on until T2 is missing from the broker's table (A or B beat last)
            if "T2" not in table:
                break
            await opened.clock.sleep(0.5)
            table = cluster.brokers["broker-a"].consumer_table[G].subscriptions
        assert "T2" not in table
        (c_queue,) = [mq for mq in next(c for c in cluster.consumers if c.client_id == C).held_queues()
                      if mq.topic == "T2"]
        cluster.produce("T2", 2, "late", queue=c_queue.queue_id)
        view = await opened.source.group_view(G)
        assert c_queue in view.unpullable()
        topic = finding(run_checks(view), "SUBSCRIPTION_TOPIC_CONFLICT")
        named = [q for t in topic.evidence["topics"] for q in t["unpullable_queues"]]
        assert [(q["topic"], q["queue_id"], q["owner"]) for q in named] == [("T2", c_queue.queue_id, C)]
        assert named[0]["diff"] == 2
        # group progress marks it too
        from rmqctl.report import group_progress

        (row,) = [r for r in group_progress(view)["queues"]
                  if r["topic"] == "T2" and r["queue_id"] == c_queue.queue_id]
        assert "subscription not exist" in row["unpullable"]


RECONSUME = f"""
name = "reconsume"
duration = 60
[[topics]]
name = "R"
queues = 1
[[consumers]]
group = "{G}"
client_id = "10.0.0.9@F"
subscriptions = {{ R = "*" }}
consume_result = "RECONSUME_LATER"
consume_from_where = "CONSUME_FROM_FIRST_OFFSET"
[[produce]]
at = 5.0
topic = "R"
tag = "r"
count = 3
"""


async def test_consume_failures_are_reported_with_the_failing_client_and_queues() -> None:
    async with embedded_opened(parse_scenario(RECONSUME, "reconsume"), at=40) as opened:
        cluster: EmulatedCluster = opened.cluster
        view = await opened.source.group_view(G)
        failures = finding(run_checks(view), "CONSUME_FAILURES")
        (client,) = failures.evidence["clients"]
        assert client["client"] == "10.0.0.9@F"
        assert {"topic": "R", "broker": "broker-a", "queue_id": 0} in client["queues"]
        consumer = cluster.consumers[0]
        assert client["consume_failed_msgs"] == consumer.consume_failures > 3  # retries failed too
        assert view.running_infos["10.0.0.9@F"].consume_failed_tps > 0
        assert cluster.brokers["broker-a"].max_offset(f"%RETRY%{G}", 0) >= 3
        assert cluster.report()["lost_by_tag"] == {"r": 3}
        # the text stands alone: who, how many in what window and from where, which queue, where
        # the failed messages go
        # retries fail too: the retry topic is one of the topics it fails
        assert failures.title == f"10.0.0.9@F of {G} fails to consume messages of %RETRY%{G} and R"
        assert (f"10.0.0.9@F's running info (its consume statistics) counts "
                f"{client['consume_failed_msgs']} failed consumptions in the last hour") in failures.detail
        assert "R@broker-a queue 0" in failures.detail
        assert f"the client writes it to %RETRY%{G}" in failures.detail and f"%DLQ%{G}" in failures.detail


SCALE_DOWN = f"""
name = "scale-down"
duration = 60
[[topics]]
name = "S"
queues = 8
[[groups]]
name = "{G}"
notify_consumer_ids_changed_enable = false
""" + "".join(f"""
[[consumers]]
group = "{G}"
client_id = "10.0.0.{n}@S{n}"
start = {n - 1}.0
subscriptions = {{ S = "*" }}
{"stop = 30.5" if n > 2 else ""}
""" for n in range(1, 5))


async def test_scale_down_mid_rebalance_gives_no_false_allocation_finding() -> None:
    # without CHANGE notifications the two survivors move at their own 20 s rebalance: S1 at 40 s,
    # S2 at 41 s; at 40.5 s queues are shared and others are held by nobody
    async with embedded_opened(parse_scenario(SCALE_DOWN, "scale-down"), at=40.5) as opened:
        view = await opened.source.group_view(G)
        state = view.rebalance_in_progress()
        assert state is not None and state["shared"] and state["unheld"]
        once = run_checks(view)
        assert [f.code for f in once] == ["REBALANCE_IN_PROGRESS"]
        diagnosis = await diagnose(opened.source, [G], clock=opened.clock, rebalance_wait=5)
        assert list(diagnosis.findings) == []
        settled = await opened.source.group_view(G)
        assert settled.rebalance_in_progress() is None
        assert sorted(len([q for q in v if q.topic == "S"]) for v in settled.assignments().values()) == [4, 4]


def test_cli_says_unpullable_unknown_and_rebalance_in_progress(tmp_path: Any) -> None:
    import json

    from typer.testing import CliRunner

    from rmqctl.cli.app import app

    runner = CliRunner()
    scale = tmp_path / "scale.toml"
    scale.write_text(SCALE_DOWN)
    result = runner.invoke(app, ["--emulator", str(scale), "--at", "40.5", "group", "assignment", G])
    assert result.exit_code == 0, result.output
    assert "Rebalance in progress" in result.stdout
    at_40 = ["--emulator", str(scale), "--at", "40.5"]
    doc = json.loads(runner.invoke(app, [*at_40, "group", "assignment", G, "-o", "json"]).stdout)
    assert doc["rebalance_in_progress"]["unheld"]
    at_50 = ["--emulator", str(scale), "--at", "50"]
    settled = json.loads(runner.invoke(app, [*at_50, "group", "assignment", G, "-o", "json"]).stdout)
    assert settled["rebalance_in_progress"] is None

    failing = tmp_path / "reconsume.toml"
    failing.write_text(RECONSUME)
    at_fail = ["--emulator", str(failing), "--at", "40"]
    show = json.loads(runner.invoke(app, [*at_fail, "group", "show", G, "-o", "json"]).stdout)
    (failing_client,) = [c for c in show["connections"] if c["client_id"] == "10.0.0.9@F"]
    assert failing_client["consume_failed_tps"] > 0
    text = runner.invoke(app, ["--emulator", str(failing), "--at", "40", "group", "show", G]).stdout
    assert "CONSUME_FAILED_TPS" in text

    star = tmp_path / "star.toml"
    star.write_text(star_plus_tags(C))
    out = runner.invoke(app, ["--emulator", str(star), "--at", "60", "doctor", G, "--no-sample", "-o", "json"])
    (tag,) = [f for f in json.loads(out.stdout)["findings"] if f["code"] == "SUBSCRIPTION_TAG_CONFLICT"]
    assert tag["evidence"]["sampled"] is False
    out = runner.invoke(app, ["--emulator", str(star), "--at", "60", "doctor", G, "-o", "json"])
    (tag,) = [f for f in json.loads(out.stdout)["findings"] if f["code"] == "SUBSCRIPTION_TAG_CONFLICT"]
    assert tag["evidence"]["sampled"] is True
