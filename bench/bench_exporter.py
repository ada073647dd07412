"""Benchmark: the exporter at scale on the served emulator, beside ``group list`` (numbers, not pass/fail).

Serves ``scale:GROUPSxQUEUESxBROKERSxCLIENTS`` (default 2,000 groups x 4 queues x 2 brokers, 2,000
simulated clients) from a separate process on loopback (``rmqctl emulator serve --clock virtual``),
then, in this process and over the real protocol:

- takes ``--rounds`` exporter rounds (every group's view, findings, lag in seconds, stuck verdicts),
  publishing each to the metrics endpoint and encoding it once in both formats (as the exporter does
  after each round, off its event loop), then scrapes ``/metrics`` over HTTP in both formats (a
  scrape reads the encoded round: it never waits on a broker);
- records each round's time, each scrape's latency and the resident memory (VmRSS) after each;
- then runs ``group list`` (``ClusterService.group_summaries()``, the same source) ``--list-runs``
  times and records the same figures;

and prints both side by side with the load average before and after.

Usage: ``python bench/bench_exporter.py [--groups 2000 --queues 4 --brokers 2 --clients 2000 --rounds 1000]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rmqctl.backends.remoting import RemotingBackend  # noqa: E402
from rmqctl.exporter import MetricsServer, RoundCollector, RoundMaker  # noqa: E402
from rmqctl.remoting.admin import AdminClient  # noqa: E402
from rmqctl.service import ClusterService  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SERVE = "from rmqctl.cli.emulator_cmd import app; app(prog_name='rmqctl emulator')"


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def row(name: str, seconds: list[float]) -> str:
    ms = [s * 1000 for s in seconds]
    return (f"  {name:<30} n={len(ms):<5} p50={pct(ms, 0.5):9.1f} ms  p99={pct(ms, 0.99):9.1f} ms  "
            f"max={max(ms):9.1f} ms")


def memory(name: str, rss: list[float]) -> str:
    tenth = max(1, len(rss) // 10)
    return (f"  {name:<30} RSS first={rss[0]:.0f} MiB  after 10%={rss[tenth - 1]:.0f} MiB  "
            f"last={rss[-1]:.0f} MiB  max={max(rss):.0f} MiB")


async def measure(namesrv: str, rounds: int, list_runs: int) -> None:
    source = ClusterService(RemotingBackend(AdminClient([namesrv], timeout=30)))
    collector = RoundCollector()
    server = MetricsServer(collector, "127.0.0.1", 0)
    server.start()
    maker = RoundMaker(source, concurrency=16)
    round_s, warm_s, scrape_s, rss, sizes = [], [], [], [], []
    try:
        async with httpx.AsyncClient(timeout=60) as http:
            for n in range(rounds):
                started = time.perf_counter()
                result = await maker.take()
                round_s.append(time.perf_counter() - started)
                collector.publish(result)
                started = time.perf_counter()
                await asyncio.to_thread(server.exposition.warm)  # what the exporter does after a round
                warm_s.append(time.perf_counter() - started)
                for accept in ("text/plain", "application/openmetrics-text; version=1.0.0"):
                    started = time.perf_counter()
                    body = (await http.get(server.url, headers={"Accept": accept})).content
                    scrape_s.append(time.perf_counter() - started)
                sizes.append(len(body))
                rss.append(rss_mib())
                if n == 0 or (n + 1) % max(1, rounds // 10) == 0:
                    print(f"  round {n + 1}/{rounds}: {round_s[-1]:.2f} s, {len(result.groups)} groups, "
                          f"{sum(1 for g in result.groups.values() if g.view is None)} unreadable, "
                          f"scrape {scrape_s[-1] * 1000:.1f} ms ({sizes[-1] / 1024:.0f} KiB), RSS {rss[-1]:.0f} MiB",
                          flush=True)
        list_s, list_rss = [], []
        for _ in range(list_runs):
            started = time.perf_counter()
            listed = await source.group_summaries()
            list_s.append(time.perf_counter() - started)
            list_rss.append(rss_mib())
        print(f"\nexporter ({rounds} rounds over {len(result.groups)} groups) vs group list "
              f"({list_runs} runs over {len(listed.value)} groups), same process, same source:")
        print(row("exporter round", round_s))
        print(row("group list", list_s))
        print(row("encode a round (both formats)", warm_s))
        print(row("scrape /metrics (cached)", scrape_s))
        print(f"  {'scrape body':<30} {statistics.fmean(sizes) / 1024:.0f} KiB")
        print(memory("exporter", rss))
        print(memory("group list (after exporter)", list_rss))
    finally:
        server.close()
        await source.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", type=int, default=2000)
    parser.add_argument("--queues", type=int, default=4)
    parser.add_argument("--brokers", type=int, default=2)
    parser.add_argument("--clients", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--list-runs", type=int, default=20)
    args = parser.parse_args()
    scenario = f"scale:{args.groups}x{args.queues}x{args.brokers}x{args.clients}"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} CPUs)")
    started = time.perf_counter()
    server = subprocess.Popen(
        [sys.executable, "-c", SERVE, "serve", "--scenario", scenario, "--clock", "virtual", "--at", "5",
         "-o", "json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, env=env, text=True)
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        if not line:
            sys.exit(f"the emulator did not start: {server.stderr.read() if server.stderr else ''}")
        served = json.loads(line)
        print(f"emulator {scenario}: up in {time.perf_counter() - started:.1f} s (namesrv {served['namesrv']})")
        asyncio.run(measure(served["namesrv"], args.rounds, args.list_runs))
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
