"""An orderly listener that suspends one queue: the emulator's model and the doctor's verdict.

One group, topic TopicOrder with 2 queues, one orderly client whose listener answers
SUSPEND_CURRENT_QUEUE_A_MOMENT for every message of queue 0 and SUCCESS on queue 1; 48 messages
go to each queue. What must happen, from the Java client (ConsumeMessageOrderlyService): queue 0
stays at offset 0 with its messages cached and retried locally every second, nothing is written
to %RETRY%, and every try counts as a failed consumption; queue 1 is consumed to its end.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from rmqctl.backends.remoting import RemotingBackend
from rmqctl.cli.app import app
from rmqctl.doctor import run_checks
from rmqctl.emulator.embedded import embedded_cluster
from rmqctl.emulator.scenario import parse_scenario
from rmqctl.remoting.admin import AdminClient
from rmqctl.service import ClusterService

CLIENT = "10.0.0.5@orderly"
SCENARIO = f"""
name = "orderly-suspend"
duration = 40

[[topics]]
name = "TopicOrder"
queues = 2

[[consumers]]
group = "orders"
client_id = "{CLIENT}"
subscriptions = {{ TopicOrder = "*" }}
orderly = true
suspend_queues = [0]

[[produce]]
at = 5.0
topic = "TopicOrder"
queue = 0
count = 48

[[produce]]
at = 5.0
topic = "TopicOrder"
queue = 1
count = 48
"""


def _doctor(path: Path, *args: str) -> tuple[int, Any]:
    result = CliRunner().invoke(app, ["--emulator", str(path), "doctor", "orders", "-o", "json", *args])
    return result.exit_code, json.loads(result.stdout)


def test_a_suspended_orderly_queue_is_an_error_naming_queue_and_client(tmp_path: Path) -> None:
    path = tmp_path / "orderly.toml"
    path.write_text(SCENARIO)
    code, doc = _doctor(path)
    # the default --fail-on error now fails: the verdict is an error
    assert code == 1
    found = {f["code"]: f for f in doc["findings"]}
    f = found["ORDERLY_QUEUE_SUSPENDED"]
    assert f["severity"] == "error"
    assert f["evidence"]["samples"] == 2  # the doctor looked twice before calling it
    (row,) = f["evidence"]["queues"]
    assert (row["topic"], row["broker"], row["queue_id"], row["client"]) == ("TopicOrder", "broker-a", 0, CLIENT)
    assert row["consumer_offset"] == 0 and row["diff"] == 48 and row["cached_msg_count"] == 48
    assert row["listener_fails"] is True
    # queues read as in every other finding (BLOCKED_QUEUE, LAG_NOT_ADVANCING): topic@broker queue N
    assert "TopicOrder@broker-a queue 0 held by 10.0.0.5@orderly (consumer offset 0, 48 messages cached" in f["detail"]
    assert "SUSPEND_CURRENT_QUEUE_A_MOMENT" in f["detail"] and "nothing goes to the retry topic" in f["detail"]
    # the failures finding speaks of orderly retries, not of retry topics and the DLQ
    failures = found["CONSUME_FAILURES"]
    assert failures["evidence"]["clients"][0]["orderly"] is True
    assert "%RETRY%" not in failures["detail"] and "dead-letter" not in failures["detail"]
    assert "retries it a second later" in failures["detail"]
    assert "RETRY_BACKLOG" not in found and "DLQ_BACKLOG" not in found


def test_the_emulator_keeps_the_suspended_queue_in_place() -> None:
    async def read() -> tuple[Any, Any]:
        async with embedded_cluster(parse_scenario(SCENARIO)) as (cluster, server):
            source = ClusterService(RemotingBackend(AdminClient([server.namesrv_addr])))
            try:
                return cluster, await source.group_view("orders")
            finally:
                await source.close()

    cluster, view = asyncio.run(read())
    offsets = {(p.queue.topic, p.queue.queue_id): (p.broker_offset, p.consumer_offset) for p in view.progress}
    assert offsets[("TopicOrder", 0)] == (48, 0)
    assert offsets[("TopicOrder", 1)] == (48, 48)
    assert all(b == 0 for (t, _), (b, _) in offsets.items() if t.startswith("%RETRY%"))
    info = view.running_infos[CLIENT]
    assert info.consume_orderly
    pq = {mq.queue_id: pq for mq, pq in info.mq_table.items() if mq.topic == "TopicOrder"}
    assert pq[0].locked and pq[0].cached_msg_count == 48 and pq[0].cached_msg_min_offset == 0
    assert pq[1].locked and pq[1].cached_msg_count == 0
    # one try a second since the messages arrived at 5 s; the scenario ends at 40 s
    assert 30 <= info.consume_failed_msgs <= 36
    # one sample alone: a warning that says it cannot see movement
    (single,) = [f for f in run_checks(view) if f.code == "ORDERLY_QUEUE_SUSPENDED"]
    assert single.severity == "warning" and "--interval" in single.detail
