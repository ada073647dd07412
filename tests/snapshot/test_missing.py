"""A broker (or a whole group) failing a round is recorded as missing, never as zeros."""

from __future__ import annotations

from pathlib import Path

import pytest

from rmqctl import errors
from rmqctl.connect import Target, open_source
from rmqctl.model import BrokerData, ClusterInfo, GroupView
from rmqctl.snapshot import ExportProgress, export
from tests.fake_source import FakeClock, FakeSource, opened
from tests.snapshot.helpers import read_dataset

GROUP = "payment-service"


async def _real_view() -> GroupView:
    """payment-service as the emulator serves it 10 minutes in (pay-2 has hung)."""
    async with open_source(Target(emulator="stall-and-leave", at=600)) as live:
        return await live.source.group_view(GROUP)


def _two_broker_source(view: GroupView) -> FakeSource:
    return FakeSource(
        views={GROUP: view},
        cluster_info=ClusterInfo(
            brokers={"broker-a": BrokerData("broker-a", "DefaultCluster", {0: "127.0.0.1:10911"}),
                     "broker-b": BrokerData("broker-b", "DefaultCluster", {0: "127.0.0.1:10921"})},
            clusters={"DefaultCluster": ("broker-a", "broker-b")},
        ),
    )


async def test_a_failed_broker_gives_placeholder_rows_and_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    view = await _real_view()
    source = _two_broker_source(view)
    down = errors.ConnectionError("connect to 127.0.0.1:10921 refused")

    def broker_b_fails_in_round_two(step: ExportProgress) -> None:
        source.broker_errors = {"broker-b": down} if step.round == 1 else {}

    out = tmp_path / "snaps"
    result = await export(opened(source, FakeClock()), [GROUP], out, every=30, count=3,
                          handle_signals=False, on_round=broker_b_fails_in_round_two)
    assert result.rounds == 3 and result.missing == 5  # broker-b: 4 PaymentTopic queues + 1 retry
    assert result.failed_reads == 1

    rows = read_dataset(out)
    assert len(rows) == 3 * 10
    by_round: dict[object, list[dict[str, object]]] = {}
    for row in rows:
        by_round.setdefault(row["ts"], []).append(row)
    first, second, third = (by_round[t] for t in sorted(by_round))
    for healthy in (first, third):
        assert all(r["error"] is None and r["broker_offset"] is not None and r["consumer_offset"] is not None
                   for r in healthy)
    missing = [r for r in second if r["broker"] == "broker-b"]
    assert sorted((r["topic"], r["queue_id"]) for r in missing) == [
        ("%RETRY%payment-service", 0), ("PaymentTopic", 0), ("PaymentTopic", 1), ("PaymentTopic", 2),
        ("PaymentTopic", 3)]
    for row in missing:
        assert row["broker_offset"] is None and row["consumer_offset"] is None  # missing, not zero
        assert row["pull_offset"] is None and row["last_consumed_ts"] is None and row["broker_last_ts"] is None
        assert row["error"] == "broker-b: connect to 127.0.0.1:10921 refused"
    # the other broker's rows of that round are intact
    assert all(r["error"] is None and r["broker_offset"] is not None for r in second if r["broker"] == "broker-a")

    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "broker-b" in line]
    assert len(lines) == 1
    assert lines[0].startswith("rmqctl: warning: round 2 at ")
    assert "broker broker-b failed for group payment-service" in lines[0]
    assert "5 queue(s) recorded as missing" in lines[0]


async def test_a_group_that_cannot_be_read_keeps_its_previous_queues_as_missing(tmp_path: Path) -> None:
    view = await _real_view()
    source = _two_broker_source(view)
    warnings: list[str] = []

    def group_fails_in_round_two(step: ExportProgress) -> None:
        source.fail(GROUP, errors.TimeoutError("no answer within 5 s") if step.round == 1 else None)

    out = tmp_path / "snaps"
    result = await export(opened(source, FakeClock()), [GROUP], out, every=30, count=3, handle_signals=False,
                          on_round=group_fails_in_round_two, warn=warnings.append)
    assert result.missing == 10 and result.failed_reads == 1
    rows = read_dataset(out)
    second_ts = sorted({r["ts"] for r in rows})[1]
    second = [r for r in rows if r["ts"] == second_ts]
    assert len(second) == 10
    assert {r["error"] for r in second} == {"no answer within 5 s"}
    assert all(r["broker_offset"] is None and r["consumer_offset"] is None for r in second)
    # who held each queue is what the previous round saw
    first = {(r["topic"], r["broker"], r["queue_id"]): r["owner"] for r in rows if r["ts"] < second_ts}
    assert {(r["topic"], r["broker"], r["queue_id"]): r["owner"] for r in second} == first
    assert len(warnings) == 1 and "group payment-service could not be read" in warnings[0]


async def test_a_broker_failing_from_the_first_round_uses_the_routes(tmp_path: Path) -> None:
    view = await _real_view()
    source = _two_broker_source(view)
    source.broker_errors = {"broker-a": errors.TimeoutError("no answer")}
    out = tmp_path / "snaps"
    result = await export(opened(source, FakeClock()), [GROUP], out, every=30, count=1, handle_signals=False,
                          warn=lambda _: None)
    rows = read_dataset(out)
    missing = sorted((r["topic"], r["queue_id"]) for r in rows if r["broker"] == "broker-a")
    # the routes name broker-a's 4 PaymentTopic queues and its retry queue
    assert missing == [("%RETRY%payment-service", 0), ("PaymentTopic", 0), ("PaymentTopic", 1),
                       ("PaymentTopic", 2), ("PaymentTopic", 3)]
    assert all(r["error"] == "broker-a: no answer" and r["broker_offset"] is None
               for r in rows if r["broker"] == "broker-a")
    assert result.missing == 5
