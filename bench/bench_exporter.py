"""Benchmark: the exporter at scale on the served emulator, beside ``group list`` (numbers, not pass/fail).

Serves ``scale:GROUPSxQUEUESxBROKERSxCLIENTS`` (default 2,000 groups x 4 queues x 2 brokers, 2,000
simulated clients) from a separate process on loopback (``rmqctl emulator serve --clock virtual``,
this tree's emulator), then, in a worker process per build (this tree, and with ``--baseline REV``
that revision's ``rmqctl`` read with ``git archive``, each over an emulator of its own), over the
real protocol:

- takes ``--rounds`` exporter rounds (every group's view, findings, lag in seconds, stuck verdicts),
  publishing each to the metrics endpoint and encoding it once in both formats (as the exporter does
  after each round, off its event loop), then scrapes ``/metrics`` over HTTP in both formats (a
  scrape reads the encoded round: it never waits on a broker);
- records each round's time and CPU time, the encoding's, each scrape's latency, the resident
  memory (VmRSS) after each round, and a digest of the round's series (the scraped text without
  the exporter's own ``rmqctl_exporter_*`` series): the builds' digests of one round must agree;
- records the CPU time the emulator's process spent while the round read it: the emulator stands
  in for the brokers but runs on the same machine, so on a machine of two cores the exporter's
  CPU and the emulator's within one round share them (a round cannot take less wall time than
  half their sum, nor less than the larger of the two);
- between rounds, moves its emulator's virtual clock on by ``--advance`` seconds (its control API),
  as an exporter's interval would in production: the stuck verdicts' window fills and then rolls,
  so the resident memory after ``--rounds`` rounds shows whether anything grows with time; the
  rounds themselves cost only their reads (no waiting), so 1,000 of them take ~1,000 round times;
- then runs ``group list`` (``ClusterService.group_summaries()``, the same source) ``--list-runs``
  times and records the same figures.

The builds take their rounds in turns (one round of each, then the next), so a change of the
machine's load falls on both alike; the figures to compare are the CPU seconds. It prints both
side by side with the load average before and after (and the CPU time of a fixed loop then,
which says how fast the machine ran Python), and the resident memory after the first
round, after a tenth of the rounds, after the last and the maximum.

Usage: ``python bench/bench_exporter.py [--baseline main] [--groups 2000 --queues 4 --brokers 2
--clients 2000 --rounds 1000 --list-runs 20 --advance 30]``; the run to compare at 2,000 groups:
``--baseline main --rounds 20 --list-runs 3``; the memory curve over 1,000 rounds: ``--rounds 1000
--list-runs 1``. ``--concurrency N`` reads N groups at a time as the exporter's option of that name does
(64, its default, unless given; ``--baseline-concurrency`` sets the baseline's, to compare two
settings in one run). ``--python PATH`` runs this tree's exporter in another interpreter (one with
rmqctl's dependencies installed) and ``--baseline-python PATH`` the baseline's; without ``--baseline``,
the baseline is this tree in that interpreter: two interpreters compared in turns in one run (the
emulators run in the bench's own interpreter). ``--profile-from N`` profiles this tree's rounds
from round N on (cProfile, timed in CPU seconds) into ``--profile-out``: ``--rounds 26
--profile-from 22`` profiles rounds with the stuck window full.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SERVE = "from rmqctl.cli.emulator_cmd import app; app(prog_name='rmqctl emulator')"


def reference_ms() -> float:
    """CPU milliseconds of a fixed pure-Python loop, the best of three: how fast the machine runs
    Python right now (a virtual machine's speed drifts; the rounds' seconds are read beside it)."""
    best = float("inf")
    for _ in range(3):
        started = time.process_time()
        total = 0
        for i in range(2_000_000):
            total += i
        best = min(best, time.process_time() - started)
    return best * 1000


WORKER = r'''
import asyncio, cProfile, gc, hashlib, json, sys, time
import httpx
import rmqctl
from rmqctl.backends.remoting import RemotingBackend
from rmqctl.emulator.serve import ServedClock
from rmqctl.exporter import MetricsServer, RoundCollector, RoundMaker
from rmqctl.exporter.stuck import StuckJudge
from rmqctl.remoting.admin import AdminClient
from rmqctl.service import ClusterService


def rss_mib():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


# the fixed loop: reference_ms below


def digest(body):
    kept = [line for line in body.split(b"\n") if b"rmqctl_exporter_" not in line]
    return hashlib.sha256(b"\n".join(kept)).hexdigest()[:12]


async def main():
    namesrv, control, advance = sys.argv[1], sys.argv[2], float(sys.argv[3])
    profile_from, profile_out, concurrency = int(sys.argv[4]), sys.argv[5], int(sys.argv[6])
    profiler, taken = cProfile.Profile(time.process_time), 0  # CPU time: the machine may be loaded
    async with httpx.AsyncClient(timeout=60) as http:
        health = (await http.get(f"{control}/v1/health")).json()
    now_ms = health.get("now_ms")
    clock = ServedClock(int(now_ms), None, url=control) if isinstance(now_ms, int) else None
    source = ClusterService(RemotingBackend(AdminClient([namesrv], timeout=30)), clock)
    collector = RoundCollector()
    server = MetricsServer(collector, "127.0.0.1", 0)
    server.start()
    maker = RoundMaker(source, concurrency=concurrency, stuck=StuckJudge(600_000), own_heap=True)  # as run_exporter
    print(json.dumps({"ready": True, "python": sys.version.split()[0], "executable": sys.executable,
                      "libpython": any("libpython" in line for line in open("/proc/self/maps")),
                      "rmqctl": rmqctl.__file__, "reference_ms": reference_ms()}), flush=True)
    try:
        async with httpx.AsyncClient(timeout=60) as http:
            while True:
                command = (await asyncio.to_thread(sys.stdin.readline)).strip()
                if command == "round":
                    taken += 1
                    profiling = 0 < profile_from <= taken
                    if profiling:
                        profiler.enable()
                    wall, cpu = time.perf_counter(), time.process_time()
                    result = await maker.take()
                    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                    if profiling:
                        profiler.disable()
                        profiler.dump_stats(profile_out)
                    collector.publish(result)
                    warm, warm_cpu = time.perf_counter(), time.process_time()
                    await asyncio.to_thread(server.exposition.warm)  # what the exporter does after a round
                    warm, warm_cpu = time.perf_counter() - warm, time.process_time() - warm_cpu
                    scrapes, bodies = [], []
                    for accept in ("text/plain", "application/openmetrics-text; version=1.0.0"):
                        started = time.perf_counter()
                        bodies.append((await http.get(server.url, headers={"Accept": accept})).content)
                        scrapes.append(time.perf_counter() - started)
                    out = {"wall": wall, "cpu": cpu, "warm": warm, "warm_cpu": warm_cpu, "scrapes": scrapes,
                           "size": len(bodies[-1]), "rss": rss_mib(), "groups": len(result.groups),
                           "unreadable": sum(1 for g in result.groups.values() if g.view is None),
                           "digest": digest(bodies[0])}
                elif command == "advance":
                    if advance > 0:
                        (await http.post(f"{control}/v1/advance", json={"seconds": advance})).raise_for_status()
                        if clock is not None:
                            await clock.sleep(0)  # reads the moved clock back
                    out = {}
                elif command == "reference":
                    out = {"reference_ms": reference_ms()}
                elif command == "list":
                    wall, cpu = time.perf_counter(), time.process_time()
                    listed = await source.group_summaries()
                    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                    rows = repr([(s.group, s.clients, s.total_diff, s.error) for s in listed.value])
                    out = {"wall": wall, "cpu": cpu, "rss": rss_mib(), "groups": len(listed.value),
                           "digest": hashlib.sha256(rows.encode()).hexdigest()[:12]}
                else:
                    break
                print(json.dumps(out), flush=True)
    finally:
        server.close()
        await source.close()


asyncio.run(main())
'''.replace("# the fixed loop: reference_ms below\n", inspect.getsource(reference_ms))


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def row(name: str, seconds: list[float], cpu: list[float] | None = None) -> str:
    if not seconds:
        return f"  {name:<34} not run"
    ms = [s * 1000 for s in seconds]
    text = (f"  {name:<34} n={len(ms):<5} p50={pct(ms, 0.5):8.1f} ms  p99={pct(ms, 0.99):8.1f} ms  "
            f"max={max(ms):8.1f} ms")
    if cpu:
        cpu_ms = [c * 1000 for c in cpu]
        text += f"  CPU p50={pct(cpu_ms, 0.5):8.1f} ms p99={pct(cpu_ms, 0.99):8.1f} ms"
    return text


def memory(name: str, rss: list[float]) -> str:
    if not rss:
        return f"  {name:<34} not run"
    tenth = max(1, len(rss) // 10)
    return (f"  {name:<34} RSS first={rss[0]:.0f} MiB  after 10%={rss[tenth - 1]:.0f} MiB  "
            f"last={rss[-1]:.0f} MiB  max={max(rss):.0f} MiB")


def baseline_tree(rev: str) -> Path:
    out = Path(tempfile.mkdtemp(prefix="bench-exporter-"))
    archive = subprocess.run(["git", "archive", rev, "rmqctl"], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(out)], input=archive, check=True)
    return out


class Build:
    """One build's emulator and worker process."""

    def __init__(self, label: str, tree: Path, scenario: str, advance: float, concurrency: int,
                 python: str, profile: tuple[int, str] = (0, "")) -> None:
        self.label = label
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.server = subprocess.Popen(
            [sys.executable, "-c", SERVE, "serve", "--scenario", scenario, "--clock", "virtual", "--at", "5",
             "-o", "json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, env=env, text=True)
        assert self.server.stdout is not None
        line = self.server.stdout.readline()
        if not line:
            raise SystemExit(f"the emulator did not start: {self.server.stderr.read() if self.server.stderr else ''}")
        served = json.loads(line)
        self.worker = subprocess.Popen(
            [python, "-c", WORKER, served["namesrv"], served["control"], str(advance),
             str(profile[0]), profile[1], str(concurrency)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=tree, env={**env, "PYTHONPATH": str(tree)}, text=True)
        self.reference = float("nan")  # the fixed loop in the worker's interpreter after the rounds
        self.rounds: list[dict[str, Any]] = []
        self.lists: list[dict[str, Any]] = []
        self.ready = self.ask("")  # the worker's interpreter and where it read rmqctl from
        if not Path(self.ready["rmqctl"]).resolve().is_relative_to(tree.resolve()):
            self.close()
            raise SystemExit(f"{label}: {python} read rmqctl from {self.ready['rmqctl']}, not from {tree}")
        print(f"  {label:<16} Python {self.ready['python']} ({self.ready['executable']}, libpython "
              f"{'shared' if self.ready['libpython'] else 'linked in'}), reference loop "
              f"{self.ready['reference_ms']:.0f} ms", flush=True)

    def ask(self, command: str) -> dict[str, Any]:
        assert self.worker.stdin is not None and self.worker.stdout is not None
        if command:
            self.worker.stdin.write(command + "\n")
            self.worker.stdin.flush()
        line = self.worker.stdout.readline()
        if not line:
            raise SystemExit(f"the worker of {self.label} stopped (does its interpreter have rmqctl's "
                             "dependencies? see --python)")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def server_cpu(self) -> float:
        """CPU seconds the emulator's process has used so far (user and system)."""
        fields = Path(f"/proc/{self.server.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def close(self) -> None:
        for proc in (self.worker, self.server):
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()


def report(build: Build, advance: float) -> None:
    rounds, lists = build.rounds, build.lists
    print(f"\n{build.label}: exporter ({len(rounds)} rounds over {rounds[-1]['groups'] if rounds else 0} groups, "
          f"virtual clock +{advance:g} s a round) vs group list ({len(lists)} runs), same process, same source; "
          f"Python {build.ready['python']} ({build.ready['executable']}), reference loop "
          f"{build.ready['reference_ms']:.0f} ms before, {build.reference:.0f} ms after:")
    print(row("exporter round", [r["wall"] for r in rounds], [r["cpu"] for r in rounds]))
    print(row("emulator CPU within a round", [r["emulator_cpu"] for r in rounds]))
    print(row("group list", [r["wall"] for r in lists], [r["cpu"] for r in lists]))
    print(row("encode a round (both formats)", [r["warm"] for r in rounds], [r["warm_cpu"] for r in rounds]))
    print(row("scrape /metrics (cached)", [s for r in rounds for s in r["scrapes"]]))
    if rounds:
        print(f"  {'scrape body':<34} {statistics.fmean(r['size'] for r in rounds) / 1024:.0f} KiB")
    print(memory("exporter", [r["rss"] for r in rounds]))
    print(memory("group list (after exporter)", [r["rss"] for r in lists]))


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
    parser.add_argument("--concurrency", type=int, default=64,
                        help="groups a round reads at the same time (the exporter's --concurrency)")
    parser.add_argument("--baseline-concurrency", type=int, default=0,
                        help="the baseline's --concurrency (0: the same as this tree's)")
    parser.add_argument("--baseline", default="", help="git revision to compare with, in turns ('' for none)")
    parser.add_argument("--python", default=sys.executable,
                        help="the interpreter this tree's exporter runs in (default: this one); it needs "
                             "rmqctl's dependencies (a virtual environment with `pip install .`)")
    parser.add_argument("--baseline-python", default="",
                        help="the baseline's interpreter (default: --python); without --baseline, the "
                             "baseline is this tree in that interpreter")
    parser.add_argument("--profile-from", type=int, default=0,
                        help="profile this tree's rounds from this one on (cProfile; 0: none)")
    parser.add_argument("--profile-out", default="exporter-rounds.prof",
                        help="where the profile of those rounds is written (pstats)")
    args = parser.parse_args()
    scenario = f"scale:{args.groups}x{args.queues}x{args.brokers}x{args.clients}"
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} CPUs); "
          f"reference loop {reference_ms():.0f} ms")
    base = baseline_tree(args.baseline) if args.baseline else None
    builds: list[Build] = []
    try:
        started = time.perf_counter()
        if base is not None or args.baseline_python:
            label = f"baseline {args.baseline}" if args.baseline else "this tree, baseline Python"
            builds.append(Build(label, base or ROOT, scenario, args.advance,
                                args.baseline_concurrency or args.concurrency, args.baseline_python or args.python))
        builds.append(Build("this tree", ROOT, scenario, args.advance, args.concurrency, args.python,
                            (args.profile_from, str(Path(args.profile_out).resolve()))))
        print(f"emulator {scenario}: {len(builds)} up in {time.perf_counter() - started:.1f} s", flush=True)
        every = max(1, args.rounds // 10)
        for n in range(args.rounds):
            for build in builds:
                served = build.server_cpu()
                figures = build.ask("round")
                figures["emulator_cpu"] = build.server_cpu() - served
                build.ask("advance")
                build.rounds.append(figures)
                if n == 0 or (n + 1) % every == 0 or len(builds) > 1:
                    print(f"  {build.label:<16} round {n + 1}/{args.rounds}: {figures['wall']:.2f} s "
                          f"(CPU {figures['cpu']:.2f} s, emulator {figures['emulator_cpu']:.2f} s), "
                          f"{figures['groups']} groups, {figures['unreadable']} "
                          f"unreadable, encode {figures['warm']:.2f} s, scrape {figures['scrapes'][-1] * 1000:.1f} ms "
                          f"({figures['size'] / 1024:.0f} KiB), RSS {figures['rss']:.0f} MiB, "
                          f"series {figures['digest']}", flush=True)
                if len(builds) == 1 and every > 1 and (n + 1) % every == 0:
                    # one round of a hundred also takes the full collection (FULL_COLLECTION_EVERY):
                    # the rounds since the last line say what a round costs
                    last = build.rounds[-every:]
                    print(f"  {'':<16} rounds {n + 2 - every}-{n + 1}: median "
                          f"{statistics.median(r['wall'] for r in last):.2f} s (CPU "
                          f"{statistics.median(r['cpu'] for r in last):.2f} s, emulator "
                          f"{statistics.median(r['emulator_cpu'] for r in last):.2f} s), max "
                          f"{max(r['wall'] for r in last):.2f} s (CPU {max(r['cpu'] for r in last):.2f} s)",
                          flush=True)
            if len(builds) > 1 and len({b.rounds[-1]["digest"] for b in builds}) > 1:
                print(f"  round {n + 1}: the builds' series DIFFER", flush=True)
        for _ in range(args.list_runs):
            for build in builds:
                build.lists.append(build.ask("list"))
        for build in builds:
            build.reference = build.ask("reference")["reference_ms"]
        for build in builds:
            report(build, args.advance)
        if len(builds) > 1:
            same = sum(1 for pair in zip(*(b.rounds for b in builds), strict=True)
                       if len({r["digest"] for r in pair}) == 1)
            print(f"\nseries digests equal in {same} of {args.rounds} rounds")
    finally:
        for build in builds:
            build.close()
        if base is not None:
            shutil.rmtree(base, ignore_errors=True)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
          f"reference loop {reference_ms():.0f} ms")


if __name__ == "__main__":
    main()
