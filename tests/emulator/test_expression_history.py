"""Losses are judged against the expression the broker held when a message was consumed.

One group, topic TopicH with 2 queues. B ("*") starts first, A ("tagX") at 1 s: the broker
stores A's "tagX" (its subVersion is the later one) and AVG gives A queue 0, B queue 1. At 5 s 4
tagX and 4 tagY are sent round robin (queue 0: tagX, tagX, tagY, tagY; queue 1 the same), and the
broker passes only tagX. Each client consumes its two tagX; its next pull (from offset 4) is held
by long polling for 15 s, so the filtered tagY are not yet committed past. At 10 s A leaves with
its offset at 2: B takes queue 0, re-balances (a new subVersion) and the broker holds B's "*" from
then on, so B receives queue 0's tagY; queue 1's tagY were filtered under "tagX" and are lost.
A doctor run afterwards sees only "*"; judged by it alone, every tagY would read as delivered. All
eight messages were stored before the broker's current expression was in place, so they count as
consumed before it: neither delivered nor lost.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rmqctl.backends.remoting import RemotingBackend
from rmqctl.doctor import run_checks
from rmqctl.doctor.checks import tag_conflict_topics
from rmqctl.doctor.context import CheckContext, progress_by_queue
from rmqctl.doctor.subscriptions import _tag_conflict
from rmqctl.emulator.embedded import embedded_cluster
from rmqctl.emulator.scenario import parse_scenario
from rmqctl.remoting.admin import AdminClient
from rmqctl.service import ClusterService

A, B = "10.0.0.1@A", "10.0.0.2@B"
SCENARIO = f"""
name = "expression-history"
duration = 30

[[topics]]
name = "TopicH"
queues = 2

[[consumers]]
group = "hist"
client_id = "{B}"
subscriptions = {{ TopicH = "*" }}

[[consumers]]
group = "hist"
client_id = "{A}"
subscriptions = {{ TopicH = "tagX" }}
start = 1.0
stop = 10.0

[[produce]]
at = 5.0
topic = "TopicH"
tag = "tagX"
count = 4

[[produce]]
at = 5.0
topic = "TopicH"
tag = "tagY"
count = 4
"""


async def test_messages_consumed_under_an_earlier_expression_are_unknown_not_delivered() -> None:
    async with embedded_cluster(parse_scenario(SCENARIO)) as (cluster, server):
        source = ClusterService(RemotingBackend(AdminClient([server.namesrv_addr])))
        try:
            view = await source.group_view("hist")
            # B alone now: no conflict, but judge the sample as the conflict check does
            view = await source.sample_messages(view, ["TopicH"])
        finally:
            await source.close()
        received = {c.client_id: dict(c.received_by_tag) for c in cluster.consumers}
        report: Any = cluster.report()
    # the truth: queue 0's tagY reached B after the switch, queue 1's were lost
    assert received[A] == {"tagX": 2} and received[B] == {"tagX": 2, "tagY": 2}
    assert report["lost_by_tag"]["tagY"] == 2
    # the broker now holds "*": judging the sample by it alone would call every tagY delivered
    assert view.broker_subscriptions["broker-a"]["TopicH"].expression == "*"
    assert tag_conflict_topics(view) == []
    f = _tag_conflict(CheckContext(view, None, view.sampled_at, False), "TopicH", view.owners(),
                      progress_by_queue(view))
    ev = f.evidence
    assert ev["counts"]["received_by_client"] == {B: {}}
    assert ev["consumed_before_current_expression"] == {"tagX": 4, "tagY": 4}
    assert "stored before the broker's current expression" in f.detail
    assert all(row["expression_since_ms"] for row in ev["queues"])
    # with one client left there is no conflict to report
    assert all(x.code != "SUBSCRIPTION_TAG_CONFLICT" for x in run_checks(view))


async def _view_at(at: float) -> Any:
    async with embedded_cluster(parse_scenario(SCENARIO), at=at) as (_, server):
        source = ClusterService(RemotingBackend(AdminClient([server.namesrv_addr])))
        try:
            view = await source.group_view("hist")
            return await source.sample_messages(view, ["TopicH"])
        finally:
            await source.close()


async def test_a_previous_sample_dates_what_judged_the_messages_consumed_before_it() -> None:
    # the same deterministic run looked at twice, as doctor --interval 22 does from 8 s: at 8 s
    # the broker held "tagX" (A on queue 0, B on queue 1) and each queue's consumer offset was 2
    before, now = await _view_at(8.0), await _view_at(30.0)
    assert before.broker_subscriptions["broker-a"]["TopicH"].expression == "tagX"
    f = _tag_conflict(CheckContext(now, before, now.sampled_at, False), "TopicH", now.owners(),
                      progress_by_queue(now))
    ev = f.evidence
    # the tagX at offsets 0 and 1 of each queue were consumed before 8 s, under "tagX", by A on
    # queue 0 and B on queue 1: exactly what the listeners received then
    assert ev["judged_by_previous_sample"] == {"tagX": 4}
    assert ev["counts"]["received_by_client"] == {A: {"tagX": 2}, B: {"tagX": 2}}
    # the tagY at offsets 2 and 3 were committed after 8 s: still unknown
    assert ev["consumed_before_current_expression"] == {"tagY": 4}


# --- round after round: the watch service carries the history --------------------------------

C = "10.0.0.3@C"
#: three queues; B ("*") from 0 s, C ("tagZ") from 0.5 s, A ("tagX") from 1 s to 30 s. Each
#: joiner re-balances everyone, and A's "tagX" is stored last (the greatest subVersion): AVG gives
#: A queue 0, B queue 1, C queue 2. At 5 s six messages each of tagX, tagY and tagZ are sent (two
#: of each per queue); under "tagX" the broker passes only tagX, and C drops its two (its own
#: "tagZ" does not name them). All is committed by 28 s. At 30 s A leaves, B takes queue 0 and
#: re-balances last, so the broker holds B's "*" from then on: judged by "*" alone, every tagY and
#: tagZ would read as delivered, though none was.
FLIP_SCENARIO = f"""
name = "expression-flip"
duration = 60

[[topics]]
name = "TopicH"
queues = 3

[[consumers]]
group = "hist"
client_id = "{B}"
subscriptions = {{ TopicH = "*" }}

[[consumers]]
group = "hist"
client_id = "{C}"
subscriptions = {{ TopicH = "tagZ" }}
start = 0.5

[[consumers]]
group = "hist"
client_id = "{A}"
subscriptions = {{ TopicH = "tagX" }}
start = 1.0
stop = 30.0

[[produce]]
at = 5.0
topic = "TopicH"
tag = "tagX"
count = 6

[[produce]]
at = 5.0
topic = "TopicH"
tag = "tagY"
count = 6

[[produce]]
at = 5.0
topic = "TopicH"
tag = "tagZ"
count = 6
"""
#: scenario seconds of the rounds: two under "tagX" (before and after everything was consumed),
#: two under "*"
FLIP_ROUNDS = (8.0, 28.0, 40.0, 42.0)


def tag_conflict_evidence(findings: Any) -> Any:
    (f,) = [x for x in findings if x.code == "SUBSCRIPTION_TAG_CONFLICT"]
    return f.evidence


async def test_rounds_judge_messages_consumed_before_a_flip_by_what_held_then() -> None:
    from rmqctl.emulator.embedded import VirtualClock
    from rmqctl.watch import Watcher

    async with embedded_cluster(parse_scenario(FLIP_SCENARIO), at=FLIP_ROUNDS[0]) as (cluster, server):
        clock = VirtualClock(cluster)
        start = cluster.now_ms / 1000 - FLIP_ROUNDS[0]
        source = ClusterService(RemotingBackend(AdminClient([server.namesrv_addr])), clock)
        watcher = Watcher(source, ["hist"], interval=1.0, clock=clock)
        last: Any = None
        try:
            for at in FLIP_ROUNDS:
                await clock.sleep(start + at - clock.now())
                rnd = await watcher.poll()
                view = await source.sample_messages(rnd.current.views["hist"], ["TopicH"])
                before = rnd.previous.views.get("hist") if rnd.previous else None
                last = (view, tag_conflict_evidence(run_checks(view, before, history=rnd.history.get("hist"))))
        finally:
            await source.close()
        received = {c.client_id: {t: n for t, n in c.received_by_tag.items() if n} for c in cluster.consumers}
        report: Any = cluster.report()
    view, ev = last
    assert view.broker_subscriptions["broker-a"]["TopicH"].expression == "*"
    # the truth: each tagX reached the holder of its queue under "tagX", except C's (dropped)
    assert received == {A: {"tagX": 2}, B: {"tagX": 2}, C: {}}
    assert report["lost_by_tag"] == {"tagX": 2, "tagY": 6, "tagZ": 6}
    # two rounds after the flip (the previous round already saw "*"), the earlier rounds still
    # judge what was consumed under "tagX": the counts are the listeners' own, and nothing the
    # broker filtered reads as delivered
    assert ev["counts"]["received_by_client"] == {A: {"tagX": 2}, B: {"tagX": 2}, C: {}}
    assert ev["lost_in_sample"] == {"tagX": 2, "tagY": 6, "tagZ": 6}
    assert ev["counts"]["filtered_by_broker"] == {"tagY": 6, "tagZ": 6}
    assert ev["consumed_before_current_expression"] == {}
    assert ev["judged_by_previous_sample"] == {"tagX": 6, "tagY": 6, "tagZ": 6}


async def test_the_exporter_carries_the_history_from_round_to_round() -> None:
    from rmqctl.emulator.embedded import VirtualClock
    from rmqctl.exporter.rounds import RoundMaker

    async with embedded_cluster(parse_scenario(FLIP_SCENARIO), at=FLIP_ROUNDS[0]) as (cluster, server):
        clock = VirtualClock(cluster)
        start = cluster.now_ms / 1000 - FLIP_ROUNDS[0]
        source = ClusterService(RemotingBackend(AdminClient([server.namesrv_addr])), clock)
        maker = RoundMaker(source, ["hist"], lag_time=False)
        try:
            for at in FLIP_ROUNDS:
                await clock.sleep(start + at - clock.now())
                result = await maker.take()
        finally:
            await source.close()
    ev = tag_conflict_evidence(result.groups["hist"].findings)
    assert ev["counts"]["received_by_client"] == {A: {"tagX": 2}, B: {"tagX": 2}, C: {}}
    assert ev["lost_in_sample"] == {"tagX": 2, "tagY": 6, "tagZ": 6}
    assert ev["consumed_before_current_expression"] == {}


# --- recorded snapshots: the expression history read back --------------------------------------


async def record_flip(out: Path) -> None:
    """Snapshots of the flip scenario: rounds at 8, 18, 28 s under "tagX", 38 and 48 s under "*"."""
    from rmqctl.emulator.embedded import VirtualClock
    from rmqctl.snapshot import export
    from rmqctl.source import Opened

    async with embedded_cluster(parse_scenario(FLIP_SCENARIO), at=FLIP_ROUNDS[0]) as (cluster, server):
        clock = VirtualClock(cluster)
        source = ClusterService(RemotingBackend(AdminClient([server.namesrv_addr])), clock)
        try:
            await export(Opened(source, "emulator", clock, cluster), ["hist"], out, every=10, count=5,
                         handle_signals=False)
        finally:
            await source.close()


def test_msg_explain_with_snapshots_judges_a_message_by_the_expression_held_when_consumed(tmp_path: Path) -> None:
    import asyncio
    import json

    from typer.testing import CliRunner

    from rmqctl.cli.app import app

    out = tmp_path / "snaps"
    asyncio.run(record_flip(out))
    rows = read_rows(out)
    assert {(r.ts_ms - rows[0].ts_ms, r.expression) for r in rows if r.topic == "TopicH" and r.queue_id == 1} == {
        (0, "tagX"), (10_000, "tagX"), (20_000, "tagX"), (30_000, "*"), (40_000, "*")}
    assert {r.owner_expression for r in rows if r.topic == "TopicH" and r.owner == C} == {"tagZ"}

    scenario = tmp_path / "flip.toml"
    scenario.write_text(FLIP_SCENARIO)
    # queue 1 offset 2 is a tagY, stored at 5 s while the broker held "tagX" (B held the queue);
    # the broker now holds "*", under which it would have reached B
    base = ["--emulator", str(scenario), "-o", "json", "msg", "explain", "TopicH", "-q", "broker-a/1",
            "--offset", "2", "-g", "hist"]
    live = CliRunner().invoke(app, base)
    assert live.exit_code == 0, live.output
    [explanation] = json.loads(live.stdout)["messages"][0]["explanations"]
    assert explanation["verdict"] == "consumed"  # what the live view alone says
    recorded = CliRunner().invoke(app, [*base, "--snapshots", str(out)])
    assert recorded.exit_code == 0, recorded.output
    [explanation] = json.loads(recorded.stdout)["messages"][0]["explanations"]
    assert (explanation["verdict"], explanation["ownership_from"]) == ("filtered_by_broker", "snapshots")
    assert explanation["evidence"]["stored_expression"] == "tagX"
    assert explanation["evidence"]["owner"] == B


def read_rows(out: Path) -> Any:
    import pyarrow.parquet as pq

    from rmqctl.snapshot.writer import rows_of

    rows = []
    for path in sorted(out.rglob("*.parquet")):
        table = pq.read_table(path)
        rows += rows_of(table.drop_columns([c for c in table.column_names if c == "date"]))
    return sorted(rows, key=lambda r: (r.ts_ms, r.topic, r.queue_id))


def test_msg_explain_with_snapshots_that_cannot_place_the_message_says_unknown(tmp_path: Path) -> None:
    # snapshots without subVersions (a recorder that could not read them): "tagX" with queue 1's
    # offset at 2, then "*" with it at 6; the tagY at offset 2 was consumed in between, under
    # whichever the broker held then: the snapshots cannot say, so the verdict is unknown
    import json

    import pyarrow.parquet as pq
    from typer.testing import CliRunner

    from rmqctl.cli.app import app
    from rmqctl.snapshot import QueueSnapshot, partition_of, table_of

    epoch = 1_704_067_200_000  # the emulator's virtual clock starts here
    rows = [QueueSnapshot(epoch + at, "DefaultCluster", "hist", "TopicH", "broker-a", 1, broker_offset=6,
                          consumer_offset=offset, owner=B, owner_subscribed=True, expression=expr,
                          expression_type="TAG", expression_version=0, owner_expression="*",
                          owner_expression_type="TAG", owner_expression_version=0)
            for at, offset, expr in ((8_000, 2, "tagX"), (40_000, 6, "*"))]
    part = tmp_path / "snaps" / partition_of(rows[0].ts_ms)
    part.mkdir(parents=True)
    pq.write_table(table_of(rows), part / "snapshots-1.parquet")
    scenario = tmp_path / "flip.toml"
    scenario.write_text(FLIP_SCENARIO)
    result = CliRunner().invoke(app, ["--emulator", str(scenario), "-o", "json", "msg", "explain", "TopicH", "-q",
                                      "broker-a/1", "--offset", "2", "-g", "hist", "--snapshots",
                                      str(tmp_path / "snaps")])
    assert result.exit_code == 0, result.output
    [explanation] = json.loads(result.stdout)["messages"][0]["explanations"]
    assert (explanation["verdict"], explanation["ownership_from"]) == ("unknown", "snapshots")
    assert "changing before the message was consumed" in explanation["summary"]
    assert explanation["missing"] == ["the expression the broker held when it was consumed"]
