"""``dlq list`` on the embedded emulator: a group whose listener always fails ends with its
messages in ``%DLQ%group`` after its 16 retries (about 4 h 46 min of the emulated clock); the list
counts them and names the group."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rmqctl.actions import audit
from rmqctl.actions.dlq import apply_replay, is_copy_of, plan_replay
from rmqctl.actions.permission import Writer
from rmqctl.cli.app import app
from rmqctl.emulator.embedded import embedded_opened
from rmqctl.emulator.scenario import parse_scenario
from rmqctl.emulator.world import EmulatedCluster
from rmqctl.model import MessageRef

SCENARIO = """
name = "dead-letters"
duration = 30
[[brokers]]
name = "broker-a"
[[topics]]
name = "Orders"
queues = 2
[[consumers]]
group = "failing"
subscriptions = { Orders = "*" }
consume_result = "RECONSUME_LATER"
[[consumers]]
group = "fine"
subscriptions = { Orders = "*" }
[[produce]]
at = 1.0
topic = "Orders"
count = 3
"""


def test_dlq_list_counts_the_dead_letters_of_the_failing_group(tmp_path: Path) -> None:
    path = tmp_path / "dead.toml"
    path.write_text(SCENARIO)
    result = CliRunner().invoke(app, ["--emulator", str(path), "--at", "20000", "dlq", "list", "-o", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["errors"] == {}
    (row,) = doc["dead_letter_queues"]
    assert row["group"] == "failing" and row["topic"] == "%DLQ%failing"
    assert row["messages"] == 3 and isinstance(row["newest_ts"], int)


async def test_a_replay_sends_the_dead_letters_back_to_their_group_only(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    async with embedded_opened(parse_scenario(SCENARIO), at=20000) as opened:
        cluster: EmulatedCluster = opened.cluster
        failing = next(c for c in cluster.consumers if c.group == "failing")
        fine = next(c for c in cluster.consumers if c.group == "fine")
        plan = await plan_replay(opened.source, "failing", cluster="c")
        assert len(plan.letters) == 3 and {d.origin_topic for d in plan.letters} == {"Orders"}
        assert plan.target_topic == "%RETRY%failing"
        before_failing, before_fine = len(failing.deliveries), len(fine.deliveries)
        outcome = await apply_replay(opened.source, plan, Writer("tester", None, None))
        assert outcome.all_sent and outcome.stored == 3
        # each copy was read back where the broker stored it, and is its dead letter's
        assert [s["read_back"] for s in outcome.sent] == ["same"] * 3
        copies = [(await opened.source.find_messages(MessageRef(topic="%RETRY%failing", broker=s["broker"],
                                                                queue_id=0, offset=s["retry_offset"]))).value[0]
                  for s in outcome.sent]
        assert [is_copy_of(d, c) for d, c in zip(plan.letters, copies, strict=True)] == [True] * 3
        assert not is_copy_of(plan.letters[0], copies[1])
        # before the first retry delay (10 s) of the listener that fails them once more
        await opened.clock.sleep(5)
        again = failing.deliveries[before_failing:]
        assert sorted(m.msg_id for m in again) == sorted(d.msg_id for d in plan.letters)
        assert {m.origin_topic for m in again} == {"Orders"}
        assert len(fine.deliveries) == before_fine  # the other group of the topic sees nothing
        (record,) = audit.read_log()
        assert record["action"] == "dlq replay" and record["outcome"]["stored"] == 3


def test_dlq_show_lists_the_dead_letters_with_their_first_topic(tmp_path: Path) -> None:
    path = tmp_path / "dead.toml"
    path.write_text(SCENARIO)
    result = CliRunner().invoke(app, ["--emulator", str(path), "--at", "20000", "dlq", "show", "failing", "-o", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert [(r["origin_topic"], r["reconsume_times"] >= 16) for r in doc["dead_letters"]] == [("Orders", True)] * 3
    assert all(isinstance(r["store_ts"], int) for r in doc["dead_letters"]) and doc["left_out"] == 0
