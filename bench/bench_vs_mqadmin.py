"""Benchmark: rmqctl beside the real mqadmin, same queries, same real RocketMQ cluster (numbers only).

Starts a real name server + broker (RocketMQ 5.3.3 from Maven Central, via
``tests/harness/realcluster.py``), sets up a small realistic scenario — one topic with ``--queues``
queues, two consumer groups of two real Java push consumers each, ``--messages`` messages, all of
them consumed and committed — and then runs each pair of equivalent commands as separate whole
processes, ``--runs`` times each, rotating the order of the tools from run to run:

==============================  =========================================
rmqctl                          mqadmin
==============================  =========================================
``cluster list``                ``clusterList``
``topic route T``               ``topicRoute -t T``
``topic status T``              ``topicStatus -t T``
``group show G``                ``consumerConnection -g G``
``group progress G``            ``consumerProgress -g G -s true``
``group list``                  ``consumerProgress`` (no ``-g``)
==============================  =========================================

Three tools are measured:

* ``rmqctl`` — ``python -m rmqctl`` from this checkout (``PYTHONPATH`` set to it, bytecode
  caching on), or the command ``--rmqctl`` names (e.g. the console script of a virtual
  environment where this checkout was installed with ``pip install .``), which runs with
  ``PYTHONPATH`` unset, so each build runs its own installed code. ``--rmqctl`` may be
  repeated as ``LABEL=COMMAND``: every build then runs in the same rotation, under the same load,
  and gets its own row per command (e.g. the same install under two Python interpreters);
* ``mqadmin`` — the plain ``org.apache.rocketmq.tools.command.MQAdminStartup``, which is what
  operators run: it prints its answer and then lingers about 3 s until the client's non-daemon
  threads wind down;
* ``AdminCli`` — ``rmqctl.harness.AdminCli``, the same MQAdminStartup followed by an immediate
  ``Runtime.halt``: a fair lower bound for a JVM-based mqadmin. Not always prompt: the sub-command's
  own ``DefaultMQAdminExt.shutdown()`` joins the client's ``NettyEventExecutor`` thread, which polls
  its event queue with a 3 s timeout, so now and then MQAdminStartup returns (and AdminCli exits)
  about 3 s after the answer was printed — AdminCli's wall times are bimodal (~0.7 s or ~3.7 s).
  Hence the "printed" column (time of the last stdout byte) for each JVM tool, and the speedup
  against AdminCli's printed time as the strictest bound.

Both JVMs get exactly the command line of the harness's ``RealCluster.mqadmin_run`` (``-Xms64m
-Xmx256m -XX:+UseSerialGC -XX:-UsePerfData -XX:TieredStopAtLevel=1`` plus the JDK module flags,
class path ``target/classes:target/lib/*``). The distribution's ``bin/mqadmin`` script uses its own,
larger-heap JVM options, which are not measured here.

Per run: wall time is ``time.perf_counter()`` from just before ``Popen`` to the child being reaped;
peak memory is the child's ``ru_maxrss`` from ``os.wait4`` (KiB on Linux; whole process, i.e. all
JVM threads). Every run is checked (exit status 0, no Java exception on stderr, the expected names
in the output); a failed run is reported and left out of the medians. One untimed warm-up run per
tool comes first (page cache, ``.pyc`` files). The table shows medians; ``--json`` prints every
sample. The load average is printed before and after, since the numbers depend on what else the
machine is doing. Target to report against: rmqctl at least 5x faster per command than mqadmin.

Usage::

    python bench/bench_vs_mqadmin.py [--runs 5] [--queues 8] [--messages 200] [--rmqctl [LABEL=]COMMAND]... [--json]

Exit status 0, or 1 when some run failed (a tool error, not a speed verdict). The cluster, the
Java consumers and any command still running are torn down on exit, Ctrl-C and SIGTERM included.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.harness.realcluster import (  # noqa: E402 - needs the sys.path entry above
    RealCluster,
    ScenarioClientsProcess,
    wait_until,
)

JVM_TOOLS = ("mqadmin", "admincli")
TOOL_TITLES = {"rmqctl": "rmqctl", "mqadmin": "mqadmin (plain MQAdminStartup)",
               "admincli": "AdminCli (MQAdminStartup + halt)"}
MQADMIN_MAIN = "org.apache.rocketmq.tools.command.MQAdminStartup"
ADMINCLI_MAIN = "rmqctl.harness.AdminCli"


def log(message: str) -> None:
    """Progress on stderr, so ``--json`` output on stdout stays clean."""
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def loadavg() -> list[float]:
    """1/5/15-minute load averages, rounded."""
    return [round(x, 2) for x in os.getloadavg()]


# --------------------------------------------------------------------------------------------
# one measured process


@dataclass
class Sample:
    """One whole-process run of one tool."""

    tool: str
    run: int
    wall_ms: float
    printed_ms: float | None  # time of the last stdout byte (None when nothing was printed)
    cpu_ms: float  # user + system time of the process (all threads)
    maxrss_kib: int
    returncode: int
    ok: bool
    error: str | None = None


def run_measured(cmd: list[str], *, env: dict[str, str], cwd: Path, timeout: float
                 ) -> tuple[float, float | None, float, int, int, bytes, bytes]:
    """Run ``cmd`` to completion; return wall s, last-output s, CPU s, maxrss KiB, rc, stdout, stderr.

    The child gets its own session so it can be killed with everything it started; on timeout,
    Ctrl-C or any other exception it is killed and reaped before the exception propagates.
    """
    chunks: list[bytes] = []
    last_output: list[float] = []

    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err,
                                cwd=cwd, env=env, start_new_session=True)
        assert proc.stdout is not None
        stdout = proc.stdout

        def read() -> None:
            fd = stdout.fileno()
            while True:
                data = os.read(fd, 65536)
                if not data:
                    return
                last_output.append(time.perf_counter())
                chunks.append(data)

        reader = threading.Thread(target=read, name="bench-stdout", daemon=True)
        reader.start()
        timed_out = threading.Event()

        def kill_group() -> None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)

        def on_timeout() -> None:
            timed_out.set()
            kill_group()

        timer = threading.Timer(timeout, on_timeout)
        timer.daemon = True
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
            wall = time.perf_counter() - t0
        except BaseException:  # Ctrl-C, SIGTERM: take the child down with us
            kill_group()
            with contextlib.suppress(ChildProcessError):
                os.wait4(proc.pid, 0)
            proc.returncode = -signal.SIGKILL  # reaped here; Popen must not wait for it again
            reader.join(timeout=5)
            stdout.close()
            raise
        finally:
            timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        # grandchildren (none expected) could hold the pipe open: kill the group, then drain
        kill_group()
        reader.join(timeout=10)
        stdout.close()
        err.seek(0)
        err_bytes = err.read()
    if timed_out.is_set():
        err_bytes += f"\n[bench] killed after {timeout:.0f}s timeout".encode()
    printed = (last_output[-1] - t0) if last_output else None
    cpu = usage.ru_utime + usage.ru_stime
    return wall, printed, cpu, int(usage.ru_maxrss), proc.returncode, b"".join(chunks), err_bytes


# --------------------------------------------------------------------------------------------
# the commands


@dataclass
class Pair:
    """One query as rmqctl and as mqadmin, plus names both outputs must contain."""

    label: str
    rmqctl: list[str]
    mqadmin: list[str]
    expect: list[str]
    samples: list[Sample] = field(default_factory=list)
    example_output: dict[str, str] = field(default_factory=dict)


def build_pairs(cluster: RealCluster, topic: str, groups: list[str]) -> list[Pair]:
    g = groups[0]
    return [
        Pair("cluster list", ["cluster", "list"], ["clusterList"],
             [cluster.cluster_name, cluster.broker_name]),
        Pair("topic route T", ["topic", "route", topic], ["topicRoute", "-t", topic],
             [cluster.broker_name]),
        Pair("topic status T", ["topic", "status", topic], ["topicStatus", "-t", topic],
             [cluster.broker_name]),
        Pair("group show G", ["group", "show", g], ["consumerConnection", "-g", g],
             ["127.0.0.1@", topic]),
        Pair("group progress G", ["group", "progress", g], ["consumerProgress", "-g", g, "-s", "true"],
             [topic, cluster.broker_name]),
        Pair("group list", ["group", "list"], ["consumerProgress"], list(groups)),
    ]


class Runner:
    """Builds the command line of each tool and runs it once, measured and checked."""

    def __init__(self, cluster: RealCluster, rmqctl_cmds: dict[str, list[str]], timeout: float) -> None:
        assert cluster.base_dir is not None
        self.cluster = cluster
        self.rmqctl_cmds = rmqctl_cmds  # tool id ("rmqctl", "rmqctl:LABEL") -> command
        self.timeout = timeout
        self.cwd = cluster.base_dir
        env = cluster.env()  # ROCKETMQ_HOME = the cluster dir; no NAMESRV_ADDR / JAVA_TOOL_OPTIONS
        env["RMQCTL_CONFIG"] = str(cluster.base_dir / "no-rmqctl-config.toml")  # no user contexts
        env["COLUMNS"] = "200"  # no truncated names in rmqctl's tables
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # installed packages have .pyc files; so does this tree
        # A --rmqctl command runs the rmqctl it was installed with: a PYTHONPATH naming this
        # checkout would come first on its sys.path and every build would run this tree's code.
        env.pop("PYTHONPATH", None)
        self.env = env
        self.checkout_env = {**env, "PYTHONPATH": str(ROOT)}  # `python -m rmqctl`: this checkout

    def command(self, tool: str, pair: Pair) -> list[str]:
        if tool in self.rmqctl_cmds:
            return [*self.rmqctl_cmds[tool], "-n", self.cluster.namesrv_addr, *pair.rmqctl]
        main = MQADMIN_MAIN if tool == "mqadmin" else ADMINCLI_MAIN
        # exactly RealCluster.mqadmin_run's JVM, only the main class differs for plain mqadmin
        return self.cluster.java_command(main, *pair.mqadmin, "-n", self.cluster.namesrv_addr,
                                         heap="256m", log_name="tools",
                                         jvm_args=["-XX:TieredStopAtLevel=1"])

    def run(self, tool: str, pair: Pair, run: int) -> tuple[Sample, str]:
        env = self.checkout_env if self.rmqctl_cmds.get(tool) == default_rmqctl() else self.env
        wall, printed, cpu, rss, rc, out, err = run_measured(
            self.command(tool, pair), env=env, cwd=self.cwd, timeout=self.timeout)
        text = out.decode("utf-8", "replace")
        err_text = err.decode("utf-8", "replace")
        problem = None
        if rc != 0:
            problem = f"exit status {rc}"
        elif tool in JVM_TOOLS and "Exception" in err_text + text:
            problem = "Java exception (mqadmin exits 0 on failure)"
        else:
            missing = [e for e in pair.expect if e not in text]
            if missing:
                problem = f"output lacks {missing}"
        if problem:
            problem += ": " + (err_text.strip() or text.strip())[-800:]
        sample = Sample(tool=tool, run=run, wall_ms=round(wall * 1000, 1),
                        printed_ms=round(printed * 1000, 1) if printed is not None else None,
                        cpu_ms=round(cpu * 1000, 1), maxrss_kib=rss, returncode=rc, ok=problem is None, error=problem)
        return sample, text


# --------------------------------------------------------------------------------------------
# scenario


def set_up_scenario(cluster: RealCluster, clients: ScenarioClientsProcess, *, queues: int,
                    messages: int, token: str) -> tuple[str, list[str]]:
    """1 topic x ``queues``, 2 groups x 2 push consumers, ``messages`` messages, all committed."""
    topic = f"BenchTopic_{token}"
    groups = [f"BenchGroupA_{token}", f"BenchGroupB_{token}"]
    cluster.create_topic(topic, queues)
    members: dict[str, list[str]] = {}
    for gi, group in enumerate(groups):
        ids = []
        for ci in range(2):
            cid = f"g{gi}c{ci}"
            clients.start_consumer(cid, group, {topic: "*"}, instance_name=f"bench_{token}_{cid}")
            ids.append(cid)
        members[group] = ids
    for group in groups:
        def registered(g: str = group) -> bool:
            return len(cluster.consumer_ids(g)) == 2

        wait_until(registered, timeout=60, message=f"two consumers of {group} registered")

    def balanced(alloc: dict[str, list[int]]) -> bool:
        for ids in members.values():
            held = [alloc.get(cid, []) for cid in ids]
            if sorted(q for qs in held for q in qs) != list(range(queues)):
                return False
            if max(map(len, held)) - min(map(len, held)) > 1:
                return False
        return True

    clients.wait_stable(lambda: clients.queue_ids(topic), duration=3.0, timeout=120, accept=balanced,
                        message="every queue held once per group")
    half = messages // 2
    clients.produce(topic, "tagA", half)
    clients.produce(topic, "tagB", messages - half)
    maxes = {q: cluster.max_offset(topic, q) for q in range(queues)}
    wait_until(lambda: all(cluster.consumer_offset(g, topic, q) == maxes[q]
                           for g in groups for q in range(queues)),
               timeout=120, message="every message consumed and committed by both groups")
    return topic, groups


# --------------------------------------------------------------------------------------------
# reporting


def median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def ratio(slow: float | None, fast: float | None) -> float | None:
    return round(slow / fast, 2) if slow and fast else None


def summarize(pair: Pair, rmqctl_tool: str, build: str) -> dict[str, Any]:
    """Medians (and min/max) over the successful runs of one rmqctl build (``rmqctl_tool``, shown
    under the key ``rmqctl``) and of both JVM tools, and the speedups."""
    out: dict[str, Any] = {"command": pair.label, "build": build,
                           "rmqctl_argv": ["rmqctl", *pair.rmqctl],
                           "mqadmin_argv": ["mqadmin", *pair.mqadmin]}
    for key, tool in (("rmqctl", rmqctl_tool), *((t, t) for t in JVM_TOOLS)):
        ok = [s for s in pair.samples if s.tool == tool and s.ok]
        peak = median([float(s.maxrss_kib) for s in ok])
        out[key] = {
            "runs_ok": len(ok),
            "runs_failed": sum(1 for s in pair.samples if s.tool == tool and not s.ok),
            "median_ms": median([s.wall_ms for s in ok]),
            "min_ms": min((s.wall_ms for s in ok), default=None),
            "max_ms": max((s.wall_ms for s in ok), default=None),
            "median_printed_ms": median([s.printed_ms for s in ok if s.printed_ms is not None]),
            "median_cpu_ms": median([s.cpu_ms for s in ok]),
            "median_peak_mib": round(peak / 1024, 1) if peak is not None else None,
            "max_peak_mib": round(max(s.maxrss_kib for s in ok) / 1024, 1) if ok else None,
        }
    r = out["rmqctl"]["median_ms"]
    out["speedup_vs_mqadmin"] = ratio(out["mqadmin"]["median_ms"], r)
    out["speedup_vs_admincli"] = ratio(out["admincli"]["median_ms"], r)
    # strictest bound: the JVM's answer fully printed vs rmqctl's whole process
    out["speedup_vs_admincli_printed"] = ratio(out["admincli"]["median_printed_ms"], r)
    return out


def fmt(value: float | None, spec: str, suffix: str = "") -> str:
    return "-" if value is None else format(value, spec) + suffix


COLUMNS = [  # header, width
    ("command", 16), ("rmqctl", 7), ("its CPU", 7), ("mqadmin", 8), ("printed", 7), ("AdminCli", 8),
    ("printed", 7), ("x mqadm", 7), ("x AdmCli", 8), ("x printd", 8),
    ("rmqctl", 7), ("mqadmin", 7), ("AdminCli", 8),
]


def print_table(rows: list[dict[str, Any]], meta: dict[str, Any]) -> None:
    """The human-readable report: one row per command (and rmqctl build), medians, then the
    legend and load."""
    builds = list(meta["rmqctl_builds"])
    columns = list(COLUMNS)
    if len(builds) > 1:  # the command cell also names the build
        columns[0] = ("command [build]", max(len(f"{r['command']} [{r['build']}]") for r in rows))

    def line(cells: list[str]) -> str:
        return "  " + "  ".join(
            f"{c:<{w}}" if i == 0 else f"{c:>{w}}" for i, (c, (_, w)) in enumerate(zip(cells, columns, strict=False)))

    print()
    print(f"rmqctl vs mqadmin on a real RocketMQ {meta['broker_version']} cluster: medians of "
          f"{meta['runs']} runs per tool, whole process")
    spans = [(" " * columns[0][1], 1), ("wall time, ms", 6), ("speedup", 3), ("peak RSS, MiB", 3)]
    parts, col = [], 0
    for label, n in spans:
        width = sum(w for _, w in columns[col:col + n]) + 2 * (n - 1)
        parts.append(label if not label.strip() else f" {label} ".center(width, "-"))
        col += n
    print("  " + "  ".join(parts))
    print(line([h for h, _ in columns]))
    print(line(["-" * w for _, w in columns]))
    for row in rows:
        rq, mq, ac = row["rmqctl"], row["mqadmin"], row["admincli"]
        print(line([
            f"{row['command']} [{row['build']}]" if len(builds) > 1 else row["command"],
            fmt(rq["median_ms"], ".0f"), fmt(rq["median_cpu_ms"], ".0f"),
            fmt(mq["median_ms"], ".0f"),
            fmt(mq["median_printed_ms"], ".0f"), fmt(ac["median_ms"], ".0f"),
            fmt(ac["median_printed_ms"], ".0f"),
            fmt(row["speedup_vs_mqadmin"], ".1f", "x"), fmt(row["speedup_vs_admincli"], ".1f", "x"),
            fmt(row["speedup_vs_admincli_printed"], ".1f", "x"),
            fmt(rq["median_peak_mib"], ".1f"), fmt(mq["median_peak_mib"], ".1f"),
            fmt(ac["median_peak_mib"], ".1f"),
        ]))
    target = meta["target_speedup"]
    print()
    for build in builds:
        mine = [r for r in rows if r["build"] == build]
        met = {key: sum(1 for r in mine if (r[key] or 0) >= target)
               for key in ("speedup_vs_mqadmin", "speedup_vs_admincli", "speedup_vs_admincli_printed")}
        print(f"  target: rmqctl{f' [{build}]' if len(builds) > 1 else ''} >= {target:g}x faster per "
              f"command. Met for {met['speedup_vs_mqadmin']}/{len(mine)} vs plain mqadmin, "
              f"{met['speedup_vs_admincli']}/{len(mine)} vs AdminCli, "
              f"{met['speedup_vs_admincli_printed']}/{len(mine)} vs AdminCli's printed time.")
    if len(builds) > 1:
        for build, cmd in meta["rmqctl_builds"].items():
            print(f"  [{build}] = {' '.join(cmd)}")
    print("  mqadmin  = plain MQAdminStartup, what operators run (the JVM lingers after printing);")
    print("  AdminCli = MQAdminStartup + Runtime.halt once it returns (fair JVM lower bound);")
    print("  printed  = time of the tool's last stdout byte (answer complete, process maybe not);")
    print("  its CPU  = rmqctl's user + system time (the rest of its wall time is waiting);")
    print("  x mqadm / x AdmCli / x printd = that median / rmqctl's whole-process median.")
    print(f"  load average (1/5/15 min): before {meta['loadavg_before']}, "
          f"after {meta['loadavg_after']}; {meta['cpus']} CPUs; "
          f"measuring took {meta['measure_seconds']:.0f} s")
    if meta["failures"]:
        print(f"  {len(meta['failures'])} failed run(s), left out of the medians:")
        for f in meta["failures"][:10]:
            print(f"    {f['command']} / {f['tool']} run {f['run']}: {f['error'][:300]}")


# --------------------------------------------------------------------------------------------
# main


def default_rmqctl() -> list[str]:
    """This checkout's rmqctl (``PYTHONPATH`` is set to it), whatever console script is installed."""
    return [sys.executable, "-m", "rmqctl"]


def rmqctl_builds(specs: list[str]) -> dict[str, list[str]]:
    """``--rmqctl [LABEL=]COMMAND`` values as label -> command (the first one is the main build);
    without any, this checkout under this interpreter."""
    if not specs:
        return {"rmqctl": default_rmqctl()}
    builds: dict[str, list[str]] = {}
    for i, spec in enumerate(specs):
        label, sep, command = spec.partition("=")
        if not sep or " " in label or "/" in label:  # no label: the command is the whole value
            label, command = (f"rmqctl{i + 1}" if i else "rmqctl"), spec
        if label in builds:
            raise SystemExit(f"bench: --rmqctl label {label!r} given twice")
        builds[label] = command.split()
    return builds


def java_version(java: str) -> str:
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        proc = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30, check=False)
        return (proc.stderr or proc.stdout).splitlines()[0].strip()
    return "?"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=5, help="measured runs per tool and command (default 5)")
    p.add_argument("--queues", type=int, default=8, help="queues of the topic (default 8)")
    p.add_argument("--messages", type=int, default=200, help="messages produced (default 200)")
    p.add_argument("--timeout", type=float, default=120.0, help="per-process timeout in s (default 120)")
    p.add_argument("--target", type=float, default=5.0, help="speedup to report against (default 5)")
    p.add_argument("--rmqctl", action="append", default=[], metavar="[LABEL=]COMMAND",
                   help="rmqctl command (default: python -m rmqctl from this checkout); repeat to "
                        "measure several builds in the same runs, e.g. one per interpreter")
    p.add_argument("--json", action="store_true", help="print the results as JSON instead of a table")
    p.add_argument("--json-file", type=Path, default=None,
                   help="also write the JSON results (every sample) to this file")
    p.add_argument("--show-output", action="store_true",
                   help="print each tool's output of the first run (stderr)")
    args = p.parse_args(argv)
    if args.runs < 1:
        p.error("--runs must be >= 1")
    return args


def _sigterm(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _sigterm)  # unwind the context managers like Ctrl-C
    rmqctl_cmds = rmqctl_builds(args.rmqctl)
    token = uuid.uuid4().hex[:6]
    try:
        log("starting name server + broker ...")
        with RealCluster() as cluster:
            log(f"cluster up in {cluster.startup_seconds}s ({cluster.version}, {cluster.namesrv_addr}); "
                "starting consumers ...")
            with ScenarioClientsProcess(cluster) as clients:
                topic, groups = set_up_scenario(cluster, clients, queues=args.queues,
                                                messages=args.messages, token=token)
                log(f"settled: {topic} x {args.queues} queues, groups {groups} x 2 consumers, "
                    f"{args.messages} messages consumed and committed")
                rows, meta = measure(cluster, clients, topic, groups, rmqctl_cmds, args)
    except KeyboardInterrupt:
        log("interrupted; cluster and clients torn down")
        return 130
    doc = json.dumps({"meta": meta, "results": rows}, indent=2)
    if args.json_file is not None:
        args.json_file.write_text(doc + "\n")
    if args.json:
        print(doc)
    else:
        print_table(rows, meta)
    return 1 if meta["failures"] else 0


def measure(cluster: RealCluster, clients: ScenarioClientsProcess, topic: str, groups: list[str],
            rmqctl_cmds: dict[str, list[str]], args: argparse.Namespace
            ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    tool_ids = {label: "rmqctl" if i == 0 else f"rmqctl:{label}" for i, label in enumerate(rmqctl_cmds)}
    runner = Runner(cluster, {tool_ids[label]: cmd for label, cmd in rmqctl_cmds.items()}, args.timeout)
    pairs = build_pairs(cluster, topic, groups)
    tools = (*tool_ids.values(), *JVM_TOOLS)
    several = len(rmqctl_cmds) > 1
    titles = {**TOOL_TITLES, **{t: f"rmqctl [{label}]" if several else "rmqctl" for label, t in tool_ids.items()}}
    short = {t: t for t in JVM_TOOLS} | {t: label if several else "rmqctl" for label, t in tool_ids.items()}
    for tool in tools:  # untimed warm-up: page cache, .pyc files, class data sharing archive
        sample, _ = runner.run(tool, pairs[0], -1)
        log(f"warm-up {titles[tool]}: {sample.wall_ms:.0f} ms"
            + ("" if sample.ok else f" FAILED: {sample.error}"))
    before = loadavg()
    log(f"load average before measuring: {before}")
    started = time.monotonic()
    for pair in pairs:
        for run in range(args.runs):
            order = tools[run % len(tools):] + tools[:run % len(tools)]  # rotate who goes first
            for tool in order:
                sample, text = runner.run(tool, pair, run)
                pair.samples.append(sample)
                pair.example_output.setdefault(tool, text)
        meds = {t: median([s.wall_ms for s in pair.samples if s.tool == t and s.ok]) for t in tools}
        log(f"{pair.label:<17} " + "  ".join(f"{short[t]} {fmt(m, '.0f')} ms" for t, m in meds.items()))
        if args.show_output:
            for tool in tools:
                print(f"----- {pair.label} / {titles[tool]} -----\n{pair.example_output.get(tool, '')}",
                      file=sys.stderr)
    after = loadavg()
    rows = [summarize(p, tool_ids[label], label) for p in pairs for label in rmqctl_cmds]
    failures = [{"command": p.label, **asdict(s)} for p in pairs for s in p.samples if not s.ok]
    from rmqctl import __version__ as rmqctl_version

    meta = {
        "runs": args.runs,
        "target_speedup": args.target,
        "broker_version": cluster.version,
        "client_version": clients.client_version,
        "rmqctl_version": rmqctl_version,
        "rmqctl_builds": rmqctl_cmds,
        "java": java_version(cluster.java),
        "python": platform.python_version(),
        "jvm_flags": [a for a in runner.command("admincli", pairs[0])[1:] if a.startswith("-X")],
        "scenario": {"topic": topic, "queues": args.queues, "groups": groups, "consumers_per_group": 2,
                     "messages": args.messages},
        "cpus": os.cpu_count(),
        "loadavg_before": before,
        "loadavg_after": after,
        "measure_seconds": round(time.monotonic() - started, 1),
        "failures": failures,
        "samples": {p.label: [asdict(s) for s in p.samples] for p in pairs},
    }
    return rows, meta


if __name__ == "__main__":
    sys.exit(main())
