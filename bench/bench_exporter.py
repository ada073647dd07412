"""Benchmark: the exporter at scale on the served emulator, beside ``group list`` (numbers, not pass/fail).

Serves ``scale:GROUPSxQUEUESxBROKERSxCLIENTS`` (default 2,000 groups x 4 queues x 2 brokers, 2,000
simulated clients) from a separate process on loopback (``rmqctl emulator serve --clock virtual``),
then, in this process and over the real protocol:

- takes ``--rounds`` exporter rounds (every group's view, findings, lag in seconds, stuck verdicts),
  publishing each to the metrics endpoint and encoding it once in both formats (as the exporter does
  after each round, off its event loop), then scrapes ``/metrics`` over HTTP in both formats (a
  scrape reads the encoded round: it never waits on a broker);
- records each round's time, each scrape's latency and the resident memory (VmRSS) after each;
- between rounds, moves the emulator's virtual clock on by ``--advance`` seconds (its control API),
  as an exporter's interval would in production: the stuck verdicts' window fills and then rolls,
  so the resident memory after ``--rounds`` rounds shows whether anything grows with time; the
  rounds themselves cost only their reads (no waiting), so 1,000 of them take ~1,000 round times;
- then runs ``group list`` (``ClusterService.group_summaries()``, the same source) ``--list-runs``
  times and records the same figures;

and prints both side by side with the load average before and after, the process's CPU seconds
beside the wall times (the machine is shared), and the resident memory after the first round,
after a tenth of the rounds and after the last.

Usage: ``python bench/bench_exporter.py [--groups 2000 --queues 4 --brokers 2 --clients 2000 --rounds 1000]``;
the run to compare at 2,000 groups: ``--rounds 20 --list-runs 5``; the memory curve over 1,000
rounds: ``--groups 100 --clients 100 --rounds 1000 --list-runs 0``.
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
from rmqctl.emulator.serve import ServedClock  # noqa: E402
from rmqctl.exporter import MetricsServer, RoundCollector, RoundMaker  # noqa: E402
from rmqctl.exporter.stuck import StuckJudge  # noqa: E402
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


def row(name: str, seconds: list[float], cpu: list[float] | None = None) -> str:
    if not seconds:
        return f"  {name:<30} not run"
    ms = [s * 1000 for s in seconds]
    text = (f"  {name:<30} n={len(ms):<5} p50={pct(ms, 0.5):9.1f} ms  p99={pct(ms, 0.99):9.1f} ms  "
            f"max={max(ms):9.1f} ms")
    if cpu:
        text += f"  CPU p50={pct([c * 1000 for c in cpu], 0.5):9.1f} ms"
    return text


def memory(name: str, rss: list[float]) -> str:
    if not rss:
        return f"  {name:<30} not run"
    tenth = max(1, len(rss) // 10)
    return (f"  {name:<30} RSS first={rss[0]:.0f} MiB  after 10%={rss[tenth - 1]:.0f} MiB  "
            f"last={rss[-1]:.0f} MiB  max={max(rss):.0f} MiB")


async def measure(served: dict[str, str], rounds: int, list_runs: int, advance: float) -> None:
    namesrv, control = served["namesrv"], served["control"]
    async with httpx.AsyncClient(timeout=60) as http:
        health = (await http.get(f"{control}/v1/health")).json()
    now_ms = health.get("now_ms")
    clock = ServedClock(int(now_ms), None, url=control) if isinstance(now_ms, int) else None
    source = ClusterService(RemotingBackend(AdminClient([namesrv], timeout=30)), clock)
    collector = RoundCollector()
    server = MetricsServer(collector, "127.0.0.1", 0)
    server.start()
    maker = RoundMaker(source, concurrency=16, stuck=StuckJudge(600_000), own_heap=True)  # as run_exporter
    round_s, round_cpu, warm_s, warm_cpu, scrape_s, rss, sizes = [], [], [], [], [], [], []
    try:
        async with httpx.AsyncClient(timeout=60) as http:
            for n in range(rounds):
                started, cpu = time.perf_counter(), time.process_time()
                result = await maker.take()
                round_s.append(time.perf_counter() - started)
                round_cpu.append(time.process_time() - cpu)
                collector.publish(result)
                started, cpu = time.perf_counter(), time.process_time()
                await asyncio.to_thread(server.exposition.warm)  # what the exporter does after a round
                warm_s.append(time.perf_counter() - started)
                warm_cpu.append(time.process_time() - cpu)
                for accept in ("text/plain", "application/openmetrics-text; version=1.0.0"):
                    started = time.perf_counter()
                    body = (await http.get(server.url, headers={"Accept": accept})).content
                    scrape_s.append(time.perf_counter() - started)
                sizes.append(len(body))
                rss.append(rss_mib())
                if advance > 0:
                    (await http.post(f"{control}/v1/advance", json={"seconds": advance})).raise_for_status()
                    if clock is not None:
                        await clock.sleep(0)  # reads the moved clock back
                if n == 0 or (n + 1) % max(1, rounds // 10) == 0:
                    print(f"  round {n + 1}/{rounds}: {round_s[-1]:.2f} s, {len(result.groups)} groups, "
                          f"{sum(1 for g in result.groups.values() if g.view is None)} unreadable, "
                          f"scrape {scrape_s[-1] * 1000:.1f} ms ({sizes[-1] / 1024:.0f} KiB), RSS {rss[-1]:.0f} MiB",
                          flush=True)
        list_s, list_cpu, list_rss, listed_groups = [], [], [], 0
        for _ in range(list_runs):
            started, cpu = time.perf_counter(), time.process_time()
            listed = await source.group_summaries()
            list_s.append(time.perf_counter() - started)
            list_cpu.append(time.process_time() - cpu)
            list_rss.append(rss_mib())
            listed_groups = len(listed.value)
        print(f"\nexporter ({rounds} rounds over {len(result.groups)} groups, virtual clock +{advance:g} s a round) "
              f"vs group list ({list_runs} runs over {listed_groups} groups), same process, same source:")
        print(row("exporter round", round_s, round_cpu))
        print(row("group list", list_s, list_cpu))
        print(row("encode a round", warm_s, warm_cpu))
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
    parser.add_argument("--advance", type=float, default=30.0,
                        help="virtual seconds the emulator's clock moves on after each round (0: none)")
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
        asyncio.run(measure(served, args.rounds, args.list_runs, args.advance))
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
