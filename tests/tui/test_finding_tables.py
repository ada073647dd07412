"""The findings view shows a finding's queues as a table of topic, broker and queue id, the same
for every code: ORDERLY_QUEUE_SUSPENDED and CONSUME_FAILURES name their queues in the words and in
the evidence shape BLOCKED_QUEUE uses."""

from __future__ import annotations

from rich.console import Console

from rmqctl.doctor import run_checks
from rmqctl.model import ConsumeStatus, Finding, GroupView, ProcessQueueInfo
from tests.unit.doctor_views import A, client, group, one, qs, row, sub
from tui.columns import describe_finding

T = qs("T", 2)


def shown(finding: Finding) -> str:
    console = Console(record=True, width=160, color_system=None)
    console.print(describe_finding(finding))
    return console.export_text()


def orderly_stuck() -> GroupView:
    """A orderly, holds T queue 0 locked at offset 5 with 3 messages cached and 4 waiting, and
    reports failures for T."""
    pq = {T[0]: ProcessQueueInfo(commit_offset=5, cached_msg_count=3, cached_msg_min_offset=5, locked=True)}
    return group([client(A, [sub("T")], T[:1], pq=pq, orderly=True,
                         status={"T": ConsumeStatus(consume_failed_tps=1.0, consume_failed_msgs=12)})],
                 {"T": T}, progress=[row(T[0], 9, 5, A), row(T[1], 3, 3)])


def test_a_suspended_orderly_queue_reads_like_every_other_finding() -> None:
    f = one(run_checks(orderly_stuck()), "ORDERLY_QUEUE_SUSPENDED")
    assert f"T@broker-a queue 0 held by {A} (consumer offset 5, 3 messages cached, 4 waiting)" in f.detail
    assert "T/broker-a/0" not in f.detail
    text = shown(f)
    header = next(line for line in text.splitlines() if "TOPIC" in line)
    assert header.split()[:4] == ["TOPIC", "BROKER", "Q", "CLIENT"]
    assert any(line.split()[:4] == ["T", "broker-a", "0", A] for line in text.splitlines())


def test_consume_failures_show_the_failing_queues_as_a_table() -> None:
    f = one(run_checks(orderly_stuck()), "CONSUME_FAILURES")
    text = shown(f)
    assert any(line.split()[:5] == ["T", "broker-a", "0", A, "4"] for line in text.splitlines()), text
