"""The exporter's rounds and metrics over a fake source and the embedded emulator."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from typer.testing import CliRunner

from rmqctl import errors
from rmqctl.cli.app import app as rmqctl_app
from rmqctl.clock import SystemClock
from rmqctl.exporter import (
    ExporterOptions,
    MetricOptions,
    MetricsServer,
    RoundCollector,
    RoundMaker,
    exposition,
    parse_listen,
    registry_for,
    run_exporter,
)
from rmqctl.exporter.metrics import CachedExposition
from rmqctl.model import GroupView, MessageQueue, QueueProgress
from rmqctl.source import Opened
from tests.fake_source import FakeSource

ROOT = Path(__file__).resolve().parents[2]
A0, A1 = MessageQueue("T", "broker-a", 0), MessageQueue("T", "broker-a", 1)
B0 = MessageQueue("T", "broker-b", 0)
U0 = MessageQueue("U", "broker-a", 0)


def samples(body: bytes) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(body.decode()):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def value(body: bytes, name: str, **labels: str) -> float | None:
    return samples(body).get((name, tuple(sorted(labels.items()))))


def partial_view(ts_ms: int = 1_704_067_200_000) -> GroupView:
    """broker-b failed: its queue is unknown; U's one queue is unknown too, T's others read."""
    progress = (
        QueueProgress(A0, 100, 40, 60, 0),
        QueueProgress(A1, 10, 10, 10, 0),
        QueueProgress(U0, 0, 0, None, 0, offsets_from="unknown"),
    )
    return GroupView("g", (), {}, {}, progress, topic_queues={"T": (A0, A1, B0), "U": (U0,)},
                     sampled_at=ts_ms, errors={"broker-b": errors.ConnectionError("broker-b is down")})


def collected(source: FakeSource, options: MetricOptions | None = None, rounds: int = 1) -> bytes:
    maker = RoundMaker(source)
    collector = RoundCollector(options or MetricOptions())
    for _ in range(rounds):
        collector.publish(asyncio.run(maker.take()))
    body, _ = exposition(registry_for(collector))
    return body


def test_a_failed_broker_degrades_only_its_own_series_and_unknown_is_never_zero() -> None:
    source = FakeSource(views={"g": partial_view()})
    body = collected(source, MetricOptions(per_queue=True))
    assert value(body, "rmqctl_broker_up", broker="broker-b") == 0
    assert value(body, "rmqctl_broker_up", broker="broker-a") == 1
    assert value(body, "rmqctl_broker_read_errors_total", broker="broker-b") == 1
    assert value(body, "rmqctl_group_up", group="g") == 1
    # T's rows of broker-a are exported; U's only queue is unknown: no lag sample, a count of unknown
    assert value(body, "rmqctl_group_lag_messages", group="g", topic="T") == 60
    assert value(body, "rmqctl_group_lag_messages", group="g", topic="U") is None
    assert value(body, "rmqctl_group_lag_unknown_queues", group="g", topic="U") == 1
    assert value(body, "rmqctl_queue_lag_messages", group="g", topic="T", broker="broker-a", queue="0") == 60
    assert value(body, "rmqctl_queue_lag_messages", group="g", topic="U", broker="broker-a", queue="0") is None
    # a fake source reads no message back: the lag in seconds of a backlog is unknown, so absent;
    # a queue without a backlog is 0 s behind (known)
    assert value(body, "rmqctl_queue_lag_seconds", group="g", topic="T", broker="broker-a", queue="0") is None
    assert value(body, "rmqctl_queue_lag_seconds", group="g", topic="T", broker="broker-a", queue="1") == 0
    assert value(body, "rmqctl_group_lag_seconds", group="g", topic="T") is None
    assert value(body, "rmqctl_group_inflight_messages", group="g", topic="T") == 20


def test_a_group_that_cannot_be_read_is_down_and_keeps_no_numbers() -> None:
    source = FakeSource(views={"g": partial_view()})
    source.fail("g", errors.TimeoutError("g timed out"))
    body = collected(source)
    assert value(body, "rmqctl_group_up", group="g") == 0
    assert value(body, "rmqctl_group_clients_online", group="g") is None
    assert value(body, "rmqctl_exporter_groups") == 1


def test_rates_come_from_two_rounds_and_the_queue_cap_counts_what_it_drops() -> None:
    source = FakeSource(views={"g": partial_view()})
    maker = RoundMaker(source)
    collector = RoundCollector(MetricOptions(per_queue=True, max_queue_series=1))
    collector.publish(asyncio.run(maker.take()))
    first, _ = exposition(registry_for(collector))
    assert value(first, "rmqctl_group_consume_rate", group="g", topic="T") is None  # one round: no rate
    later = partial_view(1_704_067_210_000)
    later = GroupView("g", (), {}, {}, (QueueProgress(A0, 150, 60, 60, 0), *later.progress[1:]),
                      topic_queues=later.topic_queues, sampled_at=later.sampled_at, errors=later.errors)
    source.set_view(later)
    collector.publish(asyncio.run(maker.take()))
    body, _ = exposition(registry_for(collector))
    assert value(body, "rmqctl_group_consume_rate", group="g", topic="T") == pytest.approx(2.0)  # 20 in 10 s
    assert value(body, "rmqctl_group_produce_rate", group="g", topic="T") == pytest.approx(5.0)  # 50 in 10 s
    # a cap of one: A0's lag is kept; A1's lag, A0's stuck verdict (two rounds are enough for one: LAGGING,
    # its lag grew 60 -> 90) and OFFLINE_GROUP_BACKLOG's series for A0 (no client is online and A0 has a
    # backlog) are dropped, and the per-finding info series stays
    assert value(body, "rmqctl_queue_lag_messages", group="g", topic="T", broker="broker-a", queue="0") == 90
    assert value(body, "rmqctl_exporter_queue_series_dropped") == 3
    assert value(body, "rmqctl_finding", code="OFFLINE_GROUP_BACKLOG", severity="warning", group="g", topic="T",
                 broker="broker-a", queue="0") is None
    assert value(body, "rmqctl_exporter_rounds_total") == 2


def test_openmetrics_or_the_text_format_by_the_accept_header() -> None:
    collector = RoundCollector()
    collector.publish(asyncio.run(RoundMaker(FakeSource(views={"g": partial_view()})).take()))
    registry = registry_for(collector)
    om, om_type = exposition(registry, "application/openmetrics-text; version=1.0.0")
    text, text_type = exposition(registry, "text/plain")
    assert om_type.startswith("application/openmetrics-text") and om.endswith(b"# EOF\n")
    assert text_type.startswith("text/plain") and b"# EOF" not in text
    assert b"rmqctl_exporter_rounds_total 1.0" in text


def test_collectors_share_no_global_state() -> None:
    one, two = RoundCollector(), RoundCollector()
    one.publish(asyncio.run(RoundMaker(FakeSource(views={"g": partial_view()})).take()))
    assert value(exposition(registry_for(two))[0], "rmqctl_exporter_rounds_total") == 0
    assert value(exposition(registry_for(one))[0], "rmqctl_exporter_rounds_total") == 1


def test_listen_addresses() -> None:
    assert parse_listen("127.0.0.1:9464") == ("127.0.0.1", 9464)
    assert parse_listen(":9000") == ("127.0.0.1", 9000)
    assert parse_listen("[::1]:9000") == ("::1", 9000)
    with pytest.raises(errors.UsageError, match="HOST:PORT"):
        parse_listen("localhost:http")


async def test_a_scrape_reads_the_last_complete_round_and_never_the_source() -> None:
    source = FakeSource(views={"g": partial_view()})
    stop = asyncio.Event()
    servers: list[MetricsServer] = []
    options = ExporterOptions(interval=3600, listen=("127.0.0.1", 0))
    opened = Opened(source, "fake", SystemClock())  # waits for real: one round in the test
    task = asyncio.create_task(run_exporter(opened, None, options, handle_signals=False, stop=stop,
                                            ready=servers.append, log=lambda _: None))
    try:
        for _ in range(200):
            if servers and servers[0].collector.current is not None:
                break
            await asyncio.sleep(0.02)
        url = servers[0].url
        calls = source.calls
        async with httpx.AsyncClient(timeout=10) as http:
            first = await http.get(url, headers={"Accept": "application/openmetrics-text; version=1.0.0"})
            second = await http.get(url)
            missing = await http.get(url.replace("/metrics", "/other"))
        assert source.calls == calls  # two scrapes, no read of the cluster
        assert first.headers["content-type"].startswith("application/openmetrics-text")
        assert value(second.content, "rmqctl_group_up", group="g") == 1
        assert value(second.content, "rmqctl_exporter_scrape_duration_seconds") is not None
        assert missing.status_code == 404
    finally:
        stop.set()
        result = await asyncio.wait_for(task, 10)
    assert result.rounds == 1 and result.interrupted is None


def test_once_prints_one_round_with_the_stalled_queues_and_their_lag_in_seconds() -> None:
    result = CliRunner().invoke(rmqctl_app, ["--emulator", "stall-and-leave", "--at", "700", "exporter", "--once"])
    assert result.exit_code == 0, result.output
    body = result.stdout.encode()
    # pay-2 hung at 420 s holding broker-a queues 2 and 3; their oldest unconsumed message was stored
    # at 422 s (2 messages a second round robin over 8 queues), so at 700 s it is 278 s old
    for queue in ("2", "3"):
        assert value(body, "rmqctl_finding", code="BLOCKED_QUEUE", severity="error", group="payment-service",
                     topic="PaymentTopic", broker="broker-a", queue=queue) == 1
    assert value(body, "rmqctl_group_lag_seconds", group="payment-service", topic="PaymentTopic") == 278
    assert value(body, "rmqctl_group_lag_messages", group="payment-service", topic="PaymentTopic") == 140
    assert value(body, "rmqctl_group_lag_messages", group="ledger-service", topic="PaymentTopic") == 0
    assert "round 1 at 2024-01-01T00:11:40Z: 2 group(s)" in result.stderr


def test_once_and_listen_do_not_mix() -> None:
    result = CliRunner().invoke(rmqctl_app, ["--emulator", "healthy", "exporter", "--once", "--listen", ":0"])
    assert result.exit_code == 2 and "rmqctl: error: --once prints the metrics once" in result.stderr


def test_sigterm_flushes_the_snapshots_and_exits_zero(tmp_path: Path) -> None:
    code = "import sys; sys.argv[1:1] = ['--emulator', 'stall-and-leave']; from rmqctl.cli.app import main; main()"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "exporter", "--listen", "127.0.0.1:0", "--interval", "0.2s",
         "--snapshots", str(tmp_path / "snaps")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        assert proc.stderr is not None
        lines = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = proc.stderr.readline().decode()
            lines.append(line)
            if line.startswith("rmqctl exporter: round 2 "):
                break
        assert any(x.startswith("rmqctl exporter: serving http://127.0.0.1:") for x in lines), lines
        url = next(x for x in lines if "serving" in x).split()[3]
        assert value(httpx.get(url, timeout=10).content, "rmqctl_group_up", group="payment-service") == 1
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.returncode is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert out == b""
    files = sorted((tmp_path / "snaps").rglob("*.parquet"))
    assert files, "the rounds taken before SIGTERM are written"
    import pyarrow.parquet as pq

    table = pq.read_table(files[0])
    assert set(table.column("group").to_pylist()) == {"payment-service", "ledger-service"}
    assert json.loads(json.dumps(table.num_rows)) >= 20  # two rounds of two groups' ten queues


def test_the_endpoint_encodes_a_round_once_and_a_new_round_replaces_it() -> None:
    source = FakeSource(views={"g": partial_view()})
    maker = RoundMaker(source)
    collector = RoundCollector()
    cached = CachedExposition(collector)
    collector.publish(asyncio.run(maker.take()))
    om, content_type = cached.render("application/openmetrics-text; version=1.0.0")
    assert content_type.startswith("application/openmetrics-text")
    assert om.count(b"# EOF") == 1 and om.endswith(b"# EOF\n")
    text, _ = cached.render(None)
    whole, _ = exposition(registry_for(collector))
    assert samples(text) == samples(whole)  # the same series as the collector's own, in two parts
    source.fail("g", errors.TimeoutError("g timed out"))
    collector.publish(asyncio.run(maker.take()))
    assert value(cached.render(None)[0], "rmqctl_group_up", group="g") == 0
    assert value(cached.render(None)[0], "rmqctl_exporter_rounds_total") == 2
