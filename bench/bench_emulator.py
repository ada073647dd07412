"""Benchmark: admin reads against a large emulated cluster (numbers, not pass/fail).

Serves ``scale:GROUPSxQUEUESxBROKERSxCLIENTS`` (default 2,000 groups x 16 queues x 2 brokers,
5,000 simulated clients) from a separate process on loopback (``rmqctl emulator serve --clock
virtual``), then measures from this process, over the real protocol:

- p50/p99 latency of GET_CONSUMER_CONNECTION_LIST (203), GET_CONSUME_STATS (208) and the
  GET_CONSUMER_RUNNING_INFO relay (307), one request at a time;
- the wall time of ``rmqctl group list`` over the whole cluster, both as
  ``ClusterService.group_summaries()`` in-process and as the CLI in a fresh process.

Usage: ``python bench/bench_emulator.py [--groups 2000 --queues 16 --brokers 2 --clients 5000]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

from rmqctl.backends.remoting import RemotingBackend
from rmqctl.remoting.admin import AdminClient
from rmqctl.remoting.codes import RequestCode
from rmqctl.service import ClusterService

ROOT = Path(__file__).resolve().parents[1]
SERVE = ("from rmqctl.cli.emulator_cmd import app; app(prog_name='rmqctl emulator')")
CLI = ("from rmqctl.cli.app import app; app(prog_name='rmqctl')")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def report(name: str, samples: list[float]) -> None:
    ms = [s * 1000 for s in samples]
    print(f"  {name:<34} n={len(ms):<5} p50={percentile(ms, 0.50):7.2f} ms  "
          f"p99={percentile(ms, 0.99):7.2f} ms  mean={statistics.fmean(ms):7.2f} ms")


async def measure(namesrv: str, groups: int, samples: int) -> None:
    admin = AdminClient([namesrv])
    rng = random.Random(7)
    try:
        info = await admin.cluster_info()
        masters = info.masters()
        broker = masters[min(masters)]
        picks = [f"scale-group-{rng.randrange(groups):04d}" for _ in range(samples)]
        lat: dict[str, list[float]] = {"203 GET_CONSUMER_CONNECTION_LIST": [],
                                       "208 GET_CONSUME_STATS": [],
                                       "307 GET_CONSUMER_RUNNING_INFO (relay)": []}
        for group in picks:
            start = time.perf_counter()
            conn = await admin.consumer_connection(broker, group)
            lat["203 GET_CONSUMER_CONNECTION_LIST"].append(time.perf_counter() - start)
            start = time.perf_counter()
            await admin.consume_stats(broker, group)
            lat["208 GET_CONSUME_STATS"].append(time.perf_counter() - start)
            client = conn.connections[0].client_id
            start = time.perf_counter()
            await admin.consumer_running_info(broker, group, client)
            lat["307 GET_CONSUMER_RUNNING_INFO (relay)"].append(time.perf_counter() - start)
        print(f"admin request latency, one at a time, {samples} random groups, broker {broker}:")
        for name, values in lat.items():
            report(name, values)
        # the raw round trip without body parsing, to separate server from client cost
        raw = []
        for group in picks[:200]:
            start = time.perf_counter()
            await admin.call(broker, RequestCode.GET_CONSUME_STATS, {"consumerGroup": group})
            raw.append(time.perf_counter() - start)
        report("208 round trip, body not parsed", raw)
    finally:
        await admin.close()

    for attempt in ("first", "second"):
        source = ClusterService(RemotingBackend(AdminClient([namesrv])))
        try:
            start = time.perf_counter()
            result = await source.group_summaries()
            elapsed = time.perf_counter() - start
        finally:
            await source.close()
        print(f"group list in-process (ClusterService.group_summaries), {attempt} run: {elapsed:.2f} s "
              f"for {len(result.value)} groups, {len(result.errors)} error(s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", type=int, default=2000)
    parser.add_argument("--queues", type=int, default=16)
    parser.add_argument("--brokers", type=int, default=2)
    parser.add_argument("--clients", type=int, default=5000)
    parser.add_argument("--samples", type=int, default=500)
    args = parser.parse_args()
    scenario = f"scale:{args.groups}x{args.queues}x{args.brokers}x{args.clients}"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}

    started = time.perf_counter()
    server = subprocess.Popen(
        [sys.executable, "-c", SERVE, "serve", "--scenario", scenario, "--clock", "virtual",
         "--at", "5", "-o", "json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, env=env, text=True)
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        if not line:
            sys.exit(f"the emulator did not start: {server.stderr.read() if server.stderr else ''}")
        served = json.loads(line)
        print(f"emulator {scenario}: built and run to 5 s of virtual time in "
              f"{time.perf_counter() - started:.1f} s (namesrv {served['namesrv']})")
        asyncio.run(measure(served["namesrv"], args.groups, args.samples))

        start = time.perf_counter()
        cli = subprocess.run([sys.executable, "-c", CLI, "-n", served["namesrv"], "--timeout", "5",
                              "group", "list", "-o", "json"],
                             capture_output=True, text=True, cwd=ROOT, env=env, check=False)
        elapsed = time.perf_counter() - start
        rows = json.loads(cli.stdout) if cli.returncode == 0 else []
        print(f"rmqctl group list (CLI, fresh process, incl. interpreter start): {elapsed:.2f} s "
              f"for {len(rows)} groups (exit {cli.returncode})")
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()


if __name__ == "__main__":
    main()
