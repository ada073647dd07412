"""Benchmark: ``rmqctl group list`` beside the real mqadmin's ``consumerProgress`` at scale (numbers only).

Serves ``scale:GROUPSxQUEUESxBROKERSxCLIENTS`` (default 2,000 groups, one topic of 4 queues on
each of 2 brokers per group, 2,000 simulated clients) with ``rmqctl emulator serve`` from this
checkout (virtual clock, served at ``--at`` seconds: 60 by default, the steady state of an
operator's cluster, where every group has committed its topic and its retry topic; a client
commits its retry queue only after its first empty pull comes back from the 15 s long poll, so in
the first ~20 s of a group's life ``group list`` also reads each uncommitted retry topic's stats,
which ``--at 5`` measures), then runs, as whole processes and ``--runs`` times each in rotation,
against its name server:

* ``rmqctl`` — ``python -m rmqctl -n NS group list -o json`` from this checkout (``PYTHONPATH``);
* ``baseline`` — the same from ``--baseline REV`` (its ``rmqctl/`` taken with ``git archive``),
  when given, so a change is measured beside the build before it under the same load;
* ``mqadmin`` — the real ``MQAdminStartup consumerProgress`` (no ``-g``: every group), with the
  harness's JVM flags (``tests/harness/realcluster.py``), which lingers ~3 s after printing;
* ``AdminCli`` — the same followed by ``Runtime.halt`` (the JVM's lower bound), and the time its
  answer was printed (last stdout byte).

Each run is checked: exit status 0, rmqctl's JSON holds every group, mqadmin printed a line per
group and no Java exception. It prints medians of wall time and CPU time (user + system of the
process), the speedups against each JVM figure and the load average before and after: the
machine is shared, so read wall times with the load in mind (CPU times move much less).

Usage::

    python bench/bench_list_vs_mqadmin.py [--runs 5] [--baseline REV] [--groups 2000 --queues 4
        --brokers 2 --clients 2000] [--at 60]

The JVM tools need the harness built (``tests/harness``, Maven; built on first use).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_emulator import baseline_tree, serve  # noqa: E402 - needs the sys.path entries above
from bench_vs_mqadmin import ADMINCLI_MAIN, MQADMIN_MAIN, run_measured  # noqa: E402

from tests.harness import realcluster  # noqa: E402

TOOLS = ("rmqctl", "baseline", "mqadmin", "admincli")


def jvm(tmp: Path) -> realcluster.RealCluster:
    """A harness cluster object used only for its JVM command line and environment (no server
    of its own is started: the emulator is the cluster)."""
    cluster = realcluster.RealCluster()
    cluster.java = realcluster.find_java()
    cluster.classpath = realcluster.build_harness()
    cluster.base_dir = tmp
    cluster._write_configs()  # the logback configuration and home directories the JVM reads
    return cluster


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--baseline", default="", help="git revision measured beside this tree")
    parser.add_argument("--groups", type=int, default=2000)
    parser.add_argument("--queues", type=int, default=4)
    parser.add_argument("--brokers", type=int, default=2)
    parser.add_argument("--clients", type=int, default=2000)
    parser.add_argument("--at", type=float, default=60.0,
                        help="virtual time the scenario is served at (60: steady state; 5: retry topics not "
                             "committed yet)")
    parser.add_argument("--timeout", type=float, default=600.0, help="per-process timeout in s")
    args = parser.parse_args()

    scenario = f"scale:{args.groups}x{args.queues}x{args.brokers}x{args.clients}"
    tmp = Path(tempfile.mkdtemp(prefix="bench-list-"))
    base = baseline_tree(args.baseline) if args.baseline else None
    tools = [t for t in TOOLS if t != "baseline" or base is not None]
    print(f"group list vs mqadmin consumerProgress over {scenario} (served by this tree, virtual clock at "
          f"{args.at:g} s); load average before {' '.join(f'{x:.2f}' for x in os.getloadavg())} "
          f"({os.cpu_count()} CPUs)", flush=True)
    server, served = serve(scenario, ROOT, args.at)
    namesrv = str(served["namesrv"])
    samples: dict[str, list[dict[str, Any]]] = {t: [] for t in tools}
    try:
        cluster = jvm(tmp)
        env = cluster.env()
        env["RMQCTL_CONFIG"] = str(tmp / "no-rmqctl-config.toml")
        env.pop("PYTHONDONTWRITEBYTECODE", None)

        def command(tool: str) -> tuple[list[str], dict[str, str]]:
            if tool in ("rmqctl", "baseline"):
                tree = ROOT if tool == "rmqctl" else base
                return ([sys.executable, "-m", "rmqctl", "-n", namesrv, "--timeout", "60", "group", "list",
                         "-o", "json"], {**env, "PYTHONPATH": str(tree)})
            main_class = MQADMIN_MAIN if tool == "mqadmin" else ADMINCLI_MAIN
            return (cluster.java_command(main_class, "consumerProgress", "-n", namesrv, heap="256m",
                                         log_name="tools", jvm_args=["-XX:TieredStopAtLevel=1"]), env)

        def check(tool: str, rc: int, out: str, err: str) -> str | None:
            if rc != 0:
                return f"exit status {rc}: {err.strip()[-300:]}"
            if tool in ("rmqctl", "baseline"):
                document = json.loads(out)
                rows, errors = document["groups"], document["errors"]
                return None if len(rows) == args.groups and not errors else f"{len(rows)} rows, errors {errors}"
            if "Exception" in out + err:
                return "Java exception: " + (err.strip() or out.strip())[-300:]
            lines = [line for line in out.splitlines() if line.startswith("scale-group-")]
            return None if len(lines) == args.groups else f"{len(lines)} group lines"

        for tool in tools:  # untimed warm-up: page cache, .pyc files
            cmd, cmd_env = command(tool)
            wall, _, _, _, rc, out, err = run_measured(cmd, env=cmd_env, cwd=tmp, timeout=args.timeout)
            problem = check(tool, rc, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"))
            print(f"  warm-up {tool:<9} {wall:6.2f} s{'' if problem is None else '  FAILED: ' + problem}",
                  flush=True)
        for run in range(args.runs):
            order = tools[run % len(tools):] + tools[:run % len(tools)]
            for tool in order:
                cmd, cmd_env = command(tool)
                wall, printed, cpu, rss, rc, out, err = run_measured(cmd, env=cmd_env, cwd=tmp,
                                                                     timeout=args.timeout)
                problem = check(tool, rc, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"))
                samples[tool].append({"wall": wall, "printed": printed, "cpu": cpu, "rss": rss, "error": problem})
                print(f"  run {run + 1} {tool:<9} wall {wall:6.2f} s  printed "
                      f"{'-' if printed is None else f'{printed:6.2f}'} s  CPU {cpu:6.2f} s"
                      f"{'' if problem is None else '  FAILED: ' + problem}  load {os.getloadavg()[0]:.1f}",
                      flush=True)
    finally:
        server.terminate()
        server.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)
        if base is not None:
            shutil.rmtree(base, ignore_errors=True)

    def med(tool: str, key: str) -> float | None:
        values = [s[key] for s in samples[tool] if s["error"] is None and s[key] is not None]
        return statistics.median(values) if values else None

    print(f"medians of {args.runs} runs (s):")
    for tool in tools:
        print(f"  {tool:<9} wall {med(tool, 'wall') or 0:6.2f}  printed {med(tool, 'printed') or 0:6.2f}  "
              f"CPU {med(tool, 'cpu') or 0:6.2f}  failed {sum(1 for s in samples[tool] if s['error'])}")
    for tool in [t for t in tools if t in ("rmqctl", "baseline")]:
        mine = med(tool, "wall")
        if mine:
            ratios = {"mqadmin": med("mqadmin", "wall"), "AdminCli": med("admincli", "wall"),
                      "AdminCli printed": med("admincli", "printed")}
            print(f"  {tool} is " + ", ".join(f"{(v or 0) / mine:.1f}x {k}" for k, v in ratios.items()))
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 1 if any(s["error"] for ss in samples.values() for s in ss) else 0


if __name__ == "__main__":
    sys.exit(main())
