"""The doctor's "now" is the emulator's clock, embedded and served.

``stall-and-leave``: pay-2 hangs in its listener at 420 s and keeps its two queues, which fill
with pulled messages nobody consumes. BLOCKED_QUEUE must say so once 60 s of the *emulator's* time
have passed (never from the host's wall clock, which is years away from the virtual epoch and runs
slower than a sped-up emulator), and ``doctor --interval`` must wait on the same clock so that
LAG_NOT_ADVANCING can see the queues grow while their consumer offsets stay put.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from rmqctl.cli.app import app
from rmqctl.connect import Target, open_source
from rmqctl.doctor import Diagnosis, diagnose
from rmqctl.emulator.embedded import embedded_opened
from rmqctl.emulator.registry import register, unregister
from rmqctl.emulator.scenario import load_scenario
from rmqctl.emulator.serve import ServeOptions, running_emulator
from rmqctl.emulator.world import EmulatedCluster

#: when pay-2's listener hangs in the scenario, in scenario seconds
STALL_AT = 420.0
STALLED = {("PaymentTopic", "broker-a", 2), ("PaymentTopic", "broker-a", 3)}


def doctor_json(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(app, ["--emulator", "stall-and-leave", *args, "doctor", "--all", "-o", "json"])
    assert result.exit_code in (0, 1), (result.exit_code, result.stderr)
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


def by_code(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["code"]: f for f in doc["findings"]}


def queues(finding: dict[str, Any]) -> set[tuple[str, str, int]]:
    return {(q["topic"], q["broker"], q["queue_id"]) for q in finding["evidence"]["queues"]}


def test_embedded_blocked_queue_not_reported_five_seconds_after_the_hang() -> None:
    doc = doctor_json("--at", str(STALL_AT + 5))
    assert "BLOCKED_QUEUE" not in by_code(doc)


def test_embedded_blocked_queue_idle_time_is_the_emulators() -> None:
    doc = doctor_json("--at", str(STALL_AT + 90))
    blocked = by_code(doc)["BLOCKED_QUEUE"]
    assert queues(blocked) == STALLED
    # the last consumption was shortly before the hang, so idle is about 90 s of emulated time
    assert all(80_000 <= q["idle_ms"] <= 95_000 for q in blocked["evidence"]["queues"])


def test_embedded_doctor_interval_advances_the_virtual_clock() -> None:
    doc = doctor_json("--at", str(STALL_AT + 5))
    assert "LAG_NOT_ADVANCING" not in by_code(doc)
    result = CliRunner().invoke(app, ["--emulator", "stall-and-leave", "--at", str(STALL_AT + 5),
                                      "doctor", "payment-service", "--interval", "70", "-o", "json"])
    assert result.exit_code == 1, result.stderr
    found = by_code(json.loads(result.stdout))
    assert queues(found["LAG_NOT_ADVANCING"]) == STALLED
    assert found["LAG_NOT_ADVANCING"]["evidence"]["interval_seconds"] == 70.0
    # 75 s after the hang on the emulator's clock: blocked as well
    assert queues(found["BLOCKED_QUEUE"]) == STALLED


async def past(cluster: EmulatedCluster, seconds: float) -> None:
    """Wait (bounded) until the real-time emulator's scenario has run ``seconds``."""

    async def wait() -> None:
        while cluster.elapsed < seconds:
            await asyncio.sleep(0.05)

    await asyncio.wait_for(wait(), timeout=120)


async def test_live_emulator_on_a_fast_clock() -> None:
    """The real-time emulator in this process at 100 times the host's speed: its wall clock runs
    ahead of the host's, and the doctor reads it from the emulator."""
    async with embedded_opened("stall-and-leave", live=True, speed=100) as opened:
        await past(opened.cluster, STALL_AT + 75)
        diagnosis = await diagnose(opened.source, ["payment-service"], interval=1, sample=False)
    assert_stalled(diagnosis)


async def test_served_emulator_clock_comes_from_its_control_api(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """``rmqctl -n`` at a served emulator (found in the registry of served emulators) reads the
    emulator's clock through its control API, not the host's."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    monkeypatch.setenv("RMQCTL_CONFIG", str(tmp_path / "none.toml"))
    monkeypatch.delenv("RMQCTL_EMULATOR_URL", raising=False)
    monkeypatch.delenv("NAMESRV_ADDR", raising=False)
    options = ServeOptions(clock="real", speed=100)
    async with running_emulator(load_scenario("stall-and-leave"), options) as (served, cluster):
        entry = register(served.control, served.scenario, served.namesrv)
        try:
            await past(cluster, STALL_AT + 75)
            async with open_source(Target(namesrv=served.namesrv)) as opened:
                assert opened.label.endswith("(served emulator)")
                diagnosis = await diagnose(opened.source, ["payment-service"], interval=1, sample=False)
        finally:
            unregister(entry)
    assert_stalled(diagnosis)


def assert_stalled(diagnosis: Diagnosis) -> None:
    found = {f.code: f for f in diagnosis.findings}
    blocked = found["BLOCKED_QUEUE"]
    assert {(q["topic"], q["broker"], q["queue_id"]) for q in blocked.evidence["queues"]} == STALLED
    # the hang is minutes old in emulated time (how many depends on how fast this host samples)
    assert all(60_000 < q["idle_ms"] < 3_600_000 for q in blocked.evidence["queues"]), blocked.evidence
    lag = found["LAG_NOT_ADVANCING"]
    assert {(q["topic"], q["broker"], q["queue_id"]) for q in lag.evidence["queues"]} == STALLED
    # one host second apart at 100 times the host's speed: the samples are 100 emulated s apart
    assert lag.evidence["interval_seconds"] >= 90
