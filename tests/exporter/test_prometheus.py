"""A real Prometheus scrapes the exporter over served emulators and its alerts fire and resolve.

Two served emulators on the virtual clock (``stall-and-leave`` after pay-2 hung, ``tag-overwrite``)
each get an ``rmqctl exporter`` process; Prometheus (Debian's package) scrapes both every second
and evaluates a copy of the shipped rules whose ``for:`` durations are one second (nothing else is
changed). The test reads Prometheus' own HTTP API: the alerts for pay-2's blocked and stuck queue
and for the tag conflict fire, then resolve when the queue changes owner (the clock advanced past
pay-4's leave at 17 min) and when the conflicting client is stopped.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx

from rmqctl.emulator.scenario import load_scenario
from rmqctl.emulator.serve import Served, ServeOptions, running_emulator

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "deploy" / "prometheus" / "rmqctl-rules.yml"
WAIT = 180.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@asynccontextmanager
async def exporter_for(served: Served) -> AsyncIterator[str]:
    """An ``rmqctl -n NAMESRV exporter`` process; yields its /metrics URL; SIGTERM must exit 0."""
    code = "from rmqctl.cli.app import main; main()"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", code, "-n", served.namesrv, "exporter", "--listen", "127.0.0.1:0",
        "--interval", "0.5s", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=ROOT,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "RMQCTL_EMULATOR_URL": served.control})
    assert proc.stderr is not None
    try:
        line = (await asyncio.wait_for(proc.stderr.readline(), 60)).decode()
        assert line.startswith("rmqctl exporter: serving http://127.0.0.1:"), line
        drain = asyncio.create_task(proc.stderr.read())
        yield line.split()[3]
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), 30) == 0, (await drain).decode()[-2000:]
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


@asynccontextmanager
async def prometheus_over(binary: str, tmp: Path, targets: list[str]) -> AsyncIterator[httpx.AsyncClient]:
    """Prometheus on loopback scraping ``targets`` every second with the rules' ``for:`` at 1s."""
    rules = re.sub(r"(?m)^(\s+for: )\S+$", r"\g<1>1s", RULES.read_text(encoding="utf-8"))
    # every shipped rule waits, and every wait is shortened (the rounds-failing rule made it nine)
    assert rules.count("for: 1s") == rules.count("- alert:") == 9
    (tmp / "rules.yml").write_text(rules, encoding="utf-8")
    hosts = ", ".join(f'"{t.split("/")[2]}"' for t in targets)
    (tmp / "prometheus.yml").write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        "rule_files:\n  - rules.yml\n"
        f"scrape_configs:\n  - job_name: rmqctl\n    static_configs:\n      - targets: [{hosts}]\n",
        encoding="utf-8")
    port = _free_port()
    log = (tmp / "prometheus.log").open("wb")
    proc = subprocess.Popen(
        [binary, f"--config.file={tmp / 'prometheus.yml'}", f"--storage.tsdb.path={tmp / 'data'}",
         f"--web.listen-address=127.0.0.1:{port}"], stdout=log, stderr=subprocess.STDOUT, cwd=tmp)
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=10) as http:
            await until(lambda: ready(http), "Prometheus ready", tmp)
            yield http
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


async def ready(http: httpx.AsyncClient) -> bool:
    try:
        return (await http.get("/-/ready")).status_code == 200
    except httpx.HTTPError:
        return False


async def until(check: Callable[[], Any], what: str, tmp: Path | None = None) -> Any:
    """Wait (bounded) until ``check()`` returns something true; that value."""
    deadline = asyncio.get_running_loop().time() + WAIT
    while True:
        value = await check()
        if value:
            return value
        if asyncio.get_running_loop().time() > deadline:
            tail = (tmp / "prometheus.log").read_text()[-2000:] if tmp else ""
            raise AssertionError(f"timed out waiting for {what}\n{tail}")
        await asyncio.sleep(0.5)


async def alerts(http: httpx.AsyncClient) -> list[dict[str, Any]]:
    doc = (await http.get("/api/v1/alerts")).json()
    assert doc["status"] == "success"
    found: list[dict[str, Any]] = doc["data"]["alerts"]
    return found


def firing(found: list[dict[str, Any]], name: str, **labels: str) -> list[dict[str, Any]]:
    return [a for a in found if a["labels"]["alertname"] == name and a["state"] == "firing"
            and all(a["labels"].get(k) == v for k, v in labels.items())]


async def test_alerts_fire_for_a_stalled_queue_and_a_conflict_and_resolve_when_they_end(
        prometheus: str, tmp_path: Path) -> None:
    stall_opts = ServeOptions(clock="virtual", at=490)  # pay-2 hung at 420 s: idle over 60 s
    async with (running_emulator(load_scenario("stall-and-leave"), stall_opts) as (stall, _),
                running_emulator(load_scenario("tag-overwrite"), ServeOptions(clock="virtual", at=30)) as (tags, _),
                exporter_for(stall) as stall_metrics, exporter_for(tags) as tag_metrics,
                prometheus_over(prometheus, tmp_path, [stall_metrics, tag_metrics]) as prom,
                httpx.AsyncClient(timeout=10) as http):
        a2 = {"group": "payment-service", "topic": "PaymentTopic", "broker": "broker-a", "queue": "2"}

        async def stalled() -> list[dict[str, Any]]:
            found = await alerts(prom)
            blocked = firing(found, "RmqctlQueueBlocked", **a2)
            stuck = firing(found, "RmqctlQueueStuck", status="STALLED", rule="frozen", **a2)
            return blocked + stuck if blocked and stuck else []

        fired = await until(stalled, "the stalled queue's alerts", tmp_path)
        blocked = next(a for a in fired if a["labels"]["alertname"] == "RmqctlQueueBlocked")
        # the finding's own title, naming the hung client, then the queue
        title = await until(lambda: _finding_title(http, stall_metrics, "BLOCKED_QUEUE"), "the title")
        assert "10.0.0.2@pay-2" in title and title.startswith("2 queues of payment-service are blocked")
        assert blocked["annotations"]["summary"] == f"{title} (PaymentTopic broker-a/2)"
        assert blocked["annotations"]["runbook"] == "docs/findings.md#blocked_queue"
        assert blocked["annotations"]["description"].startswith("Take a thread dump of")

        async def conflict() -> list[dict[str, Any]]:
            return firing(await alerts(prom), "RmqctlSubscriptionConflict", group="test-consumer",
                          code="SUBSCRIPTION_TAG_CONFLICT")

        conflicting = (await until(conflict, "the conflict alert", tmp_path))[0]
        assert conflicting["annotations"]["runbook"] == "docs/findings.md#subscription_tag_conflict"
        title = await until(lambda: _finding_title(http, tag_metrics, "SUBSCRIPTION_TAG_CONFLICT"), "the title")
        assert conflicting["annotations"]["summary"] == title

        # pay-4 leaves at 1020 s: broker-a queue 2 moves from the hung pay-2 to pay-1, which drains it
        advanced = await http.post(f"{stall.control}/v1/advance", json={"seconds": 1030 - 490})
        assert advanced.status_code == 200, advanced.text

        async def a2_resolved() -> bool:
            found = await alerts(prom)
            still = [a for a in found if a["labels"].get("queue") == "2" and a["labels"].get("broker") == "broker-a"
                     and a["labels"]["alertname"] in ("RmqctlQueueBlocked", "RmqctlQueueStuck")]
            # queue 3 stays with pay-2: its blocked alert goes on firing
            return not still and bool(firing(found, "RmqctlQueueBlocked", **{**a2, "queue": "3"}))

        await until(a2_resolved, "the stalled queue's alerts to resolve", tmp_path)

        stopped = await http.post(f"{tags.control}/v1/consumers/stop", json={"client_id": "10.0.0.2@consumer2"})
        assert stopped.status_code == 200, stopped.text
        await http.post(f"{tags.control}/v1/advance", json={"seconds": 1})

        async def conflict_resolved() -> bool:
            return not [a for a in await alerts(prom) if a["labels"]["alertname"] == "RmqctlSubscriptionConflict"]

        await until(conflict_resolved, "the conflict alert to resolve", tmp_path)


async def _finding_title(http: httpx.AsyncClient, url: str, code: str) -> str | None:
    from prometheus_client.parser import text_string_to_metric_families

    body = (await http.get(url)).text
    for family in text_string_to_metric_families(body):
        for s in family.samples:
            if s.name == "rmqctl_finding_info" and s.labels.get("code") == code:
                return s.labels["title"]
    return None
