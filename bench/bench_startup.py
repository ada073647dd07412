"""Benchmark: whole-process start-up of rmqctl and of a shell completion (numbers only).

Cases, each run as a separate whole process ``--runs`` times after one untimed warm-up, in rounds
(every case once per round) so that the machine's load falls on all of them alike:

* ``python -c pass`` — the interpreter with this machine's ``site`` (the floor for any Python CLI);
* ``rmqctl --version`` — answered before typer is imported (target: 60 ms);
* ``rmqctl --help`` — typer and the root group, no command module;
* ``rmqctl group show G`` and ``rmqctl group list`` against a served emulator (``emulator serve``
  on loopback, started here) — a real command end to end: typer, the wire client, one round of
  requests, rendering (target: 110 ms);
* a TAB in bash, zsh and fish: the shell starts non-interactively, loads the completion script
  from ``completions/`` and computes one completion of group names from a names cache of
  ``--names`` entries (target: 100 ms). The same shell started with nothing to do is measured too,
  and the per-TAB cost inside an already running shell (``$EPOCHREALTIME`` around the completion
  function, bash and zsh) is printed beside it.

By default every Python case runs ``python -m rmqctl`` from this checkout (``PYTHONPATH`` = the
repository) under this interpreter, whose ``site`` may carry other projects' start-up hooks. With
``--venv DIR`` (repeatable) they also run as an operator runs them: the ``rmqctl`` console
script of a virtual environment holding this checkout, installed like the README's first command
(``pip install .``, created when ``DIR`` does not exist; ``DIR,REQ...`` then also installs ``REQ``
there, e.g. ``--venv /tmp/v29,typer==0.29.2`` to measure another Typer beside the pinned one).
Bytecode caching is on (``PYTHONDONTWRITEBYTECODE`` removed: installed packages have their
``.pyc`` files, and the warm-up run writes this tree's). Per run: wall time from ``Popen`` to the
child being reaped, and the child's CPU time (user + system, from ``os.wait4``), which suffers less
than wall time when the machine is loaded. The table shows medians and minimums; ``--json``
prints every sample. ``--importtime`` adds the per-package import cost of ``group show``
(``python -X importtime``, the minimum self time over the runs), which says where the time goes.

Usage::

    python bench/bench_startup.py [--runs 15] [--names 500] [--importtime] [--json] [--venv DIR[,REQ...]]...
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import selectors
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
COMPLETIONS = ROOT / "completions"
GROUP = "test-consumer"  # the tag-overwrite scenario's group
TARGETS_MS = {"rmqctl --version": 60, "TAB": 100, "rmqctl group show G": 110}


@dataclass
class Case:
    label: str
    argv: list[str]
    expect: str
    target_ms: float | None = None
    env: dict[str, str] | None = None
    walls: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)


def log(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def run_once(argv: list[str], env: dict[str, str], expect: str) -> float:
    """Run once, check the output, return the wall time in ms."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env, cwd=ROOT)
    out, err = proc.communicate(timeout=60)
    wall = time.perf_counter() - t0
    if proc.returncode != 0 or expect not in out.decode("utf-8", "replace"):
        raise RuntimeError(f"{argv}: exit {proc.returncode}, expected {expect!r} in output; "
                           f"stderr: {err.decode('utf-8', 'replace')[-500:]}")
    return wall * 1000


def measure_once(case: Case, env: dict[str, str]) -> None:
    env = case.env or env
    before = resource.getrusage(resource.RUSAGE_CHILDREN)  # a reaped child's CPU time is added here
    wall = run_once(case.argv, env, case.expect)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    case.walls.append(round(wall, 1))
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    case.cpus.append(round(cpu * 1000, 1))


def measure(cases: list[Case], env: dict[str, str], runs: int) -> None:
    """One warm-up of each case (page cache, .pyc files), then ``runs`` rounds of every case in
    turn, so a change in the machine's load falls on every case alike, not on whichever case
    was running then (builds compared in one run are compared under the same load)."""
    for case in cases:
        log(f"warm-up: {case.label}")
        run_once(case.argv, case.env or env, case.expect)
    for round_no in range(runs):
        log(f"round {round_no + 1}/{runs}")
        for case in cases:
            measure_once(case, env)


def serve_emulator(env: dict[str, str]) -> tuple[subprocess.Popen[bytes], str]:
    """Start ``emulator serve`` on loopback; return it and its name server address."""
    proc = subprocess.Popen([sys.executable, "-m", "rmqctl", "emulator", "serve", "--scenario", "tag-overwrite"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=ROOT,
                            start_new_session=True)
    assert proc.stdout is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + 60
    buffer = b""
    while time.monotonic() < deadline:
        if not sel.select(timeout=max(0.0, deadline - time.monotonic())):
            break
        chunk = os.read(proc.stdout.fileno(), 4096)
        if not chunk:
            break
        buffer += chunk
        for line in buffer.decode("utf-8", "replace").splitlines():
            if line.startswith("namesrv "):
                return proc, line.split()[1]
    stop(proc)
    raise RuntimeError(f"emulator serve printed no name server address: {buffer!r}")


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=15)


def shell_cases(names_file_key: str) -> list[Case]:
    """One TAB per shell (``rmqctl group show -n KEY grp-00<TAB>``), and the same shell doing nothing."""
    line = f"rmqctl group show -n {names_file_key} grp-00"
    bash = shutil.which("bash")
    zsh = shutil.which("zsh")
    fish = shutil.which("fish")
    cases: list[Case] = []
    if bash:
        cases += [
            Case("bash, nothing", [bash, "--norc", "--noprofile", "-c", "echo ok"], "ok"),
            Case("TAB in bash", [bash, "--norc", "--noprofile", "-c",
                                 f"source {COMPLETIONS / 'rmqctl.bash'}; COMP_LINE='{line}'; "
                                 f"COMP_POINT=${{#COMP_LINE}}; _rmqctl; echo \"${{COMPREPLY[*]}}\""],
                 "grp-0001", TARGETS_MS["TAB"]),
        ]
    if zsh:
        words = " ".join(f"'{w}'" for w in line.split())
        cases += [
            Case("zsh, nothing", [zsh, "-f", "-c", "echo ok"], "ok"),
            Case("TAB in zsh", [zsh, "-f", "-c",
                                "compdef() { :; }; compset() { :; }; compadd() { print -l -- \"${@:2}\"; }; "
                                f"source {COMPLETIONS / '_rmqctl'}; words=({words}); CURRENT=${{#words}}; "
                                "PREFIX=$words[-1]; _rmqctl"],
                 "grp-0001", TARGETS_MS["TAB"]),
        ]
    if fish:
        cases += [
            Case("fish, nothing", [fish, "--no-config", "-c", "echo ok"], "ok"),
            Case("TAB in fish", [fish, "--no-config", "-c",
                                 f"source {COMPLETIONS / 'rmqctl.fish'}; complete -C '{line}'"],
                 "grp-0001", TARGETS_MS["TAB"]),
        ]
    return cases


def in_shell_tab_ms(env: dict[str, str], key: str, repeat: int = 50) -> dict[str, float]:
    """Mean cost of one completion inside a running bash/zsh (no process start), via $EPOCHREALTIME."""
    line = f"rmqctl group show -n {key} grp-00"
    out: dict[str, float] = {}
    if shutil.which("bash"):
        script = (f"source {COMPLETIONS / 'rmqctl.bash'}; COMP_LINE='{line}'; COMP_POINT=${{#COMP_LINE}}; "
                  f"t0=$EPOCHREALTIME; for ((i=0;i<{repeat};i++)); do _rmqctl; done; t1=$EPOCHREALTIME; "
                  "echo $t0 $t1 ${#COMPREPLY[@]}")
        t0, t1, _ = subprocess.run(["bash", "--norc", "-c", script], capture_output=True, text=True, env=env,
                                   timeout=60).stdout.split()
        out["bash"] = round((float(t1) - float(t0)) * 1000 / repeat, 2)
    if shutil.which("zsh"):
        words = " ".join(f"'{w}'" for w in line.split())
        script = ("zmodload zsh/datetime; compdef() { :; }; compset() { :; }; compadd() { :; }; "
                  f"source {COMPLETIONS / '_rmqctl'}; words=({words}); CURRENT=${{#words}}; PREFIX=$words[-1]; "
                  f"t0=$EPOCHREALTIME; for ((i=0;i<{repeat};i++)); do _rmqctl; done; t1=$EPOCHREALTIME; "
                  "echo $t0 $t1")
        t0, t1 = subprocess.run(["zsh", "-f", "-c", script], capture_output=True, text=True, env=env,
                                timeout=60).stdout.split()
        out["zsh"] = round((float(t1) - float(t0)) * 1000 / repeat, 2)
    return out


def import_breakdown(argv: list[str], env: dict[str, str], runs: int) -> list[tuple[str, float]]:
    """Minimum self import time per top-level package (ms) over ``runs`` runs of ``-X importtime``.

    ``argv`` starts with the interpreter (``python -m rmqctl ...`` or ``python .../bin/rmqctl ...``).
    """
    best: dict[str, int] = collections.defaultdict(lambda: 10**9)
    for _ in range(runs):
        err = subprocess.run([argv[0], "-X", "importtime", *argv[1:]], capture_output=True, text=True,
                             env=env, cwd=ROOT, timeout=60).stderr
        for line in err.splitlines():
            if not line.startswith("import time:") or "self [us]" in line:
                continue
            self_us, _, name = line[len("import time:"):].split("|")
            best[name.strip()] = min(best[name.strip()], int(self_us))
    per_package: dict[str, float] = collections.defaultdict(float)
    for name, us in best.items():
        package = name.split(".")[0]
        if name.startswith("rmqctl."):
            package = ".".join(name.split(".")[:2])
        per_package[package] += us / 1000
    return sorted(per_package.items(), key=lambda kv: -kv[1])


@dataclass
class Runner:
    """How the Python cases start: this interpreter on the checkout, or a virtual environment's script."""

    label: str
    python: list[str]
    rmqctl: list[str]
    env: dict[str, str]


def venv_runner(spec: str, env: dict[str, str]) -> Runner:
    """``DIR[,REQ...]``: a venv holding this checkout as ``pip install .`` leaves it (built if missing)."""
    directory, *extra = spec.split(",")
    venv = Path(directory).resolve()
    python, script = venv / "bin" / "python", venv / "bin" / "rmqctl"
    if not script.exists():
        log(f"building {venv} (pip install . {' '.join(extra)}) ...")
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", str(ROOT)], check=True)
        if extra:
            subprocess.run([str(python), "-m", "pip", "install", "-q", *extra], check=True)
    bare = {k: v for k, v in env.items() if k != "PYTHONPATH"}
    return Runner(venv.name, [str(python)], [str(python), str(script)], bare)


def python_cases(runner: Runner, namesrv: str | None, suffix: str) -> list[Case]:
    py, cli = runner.python, runner.rmqctl
    cases = [
        Case(f"python -c pass{suffix}", [*py, "-c", "print('ok')"], "ok"),
        Case(f"rmqctl --version{suffix}", [*cli, "--version"], "rmqctl ", TARGETS_MS["rmqctl --version"]),
        Case(f"rmqctl --help{suffix}", [*cli, "--help"], "Usage"),
    ]
    if namesrv is not None:
        cases += [
            Case(f"rmqctl group show G{suffix}", [*cli, "group", "show", GROUP, "-n", namesrv], GROUP,
                 TARGETS_MS["rmqctl group show G"]),
            Case(f"rmqctl group list{suffix}", [*cli, "group", "list", "-n", namesrv], GROUP),
        ]
    for case in cases:
        case.env = runner.env
    return cases


def summary(case: Case) -> dict[str, Any]:
    return {"case": case.label, "median_ms": statistics.median(case.walls), "min_ms": min(case.walls),
            "median_cpu_ms": statistics.median(case.cpus), "target_ms": case.target_ms,
            "walls": case.walls, "cpus": case.cpus}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=15)
    p.add_argument("--names", type=int, default=500, help="group names in the completion's cache")
    p.add_argument("--importtime", action="store_true", help="also show group show's import cost per package")
    p.add_argument("--venv", action="append", default=[], metavar="DIR[,REQ...]",
                   help="run the Python cases as this virtual environment's rmqctl script (repeatable)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="rmqctl-bench-") as tmp:
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONDONTWRITEBYTECODE", "NAMESRV_ADDR", "RMQCTL_CONFIG")}
        env.update({"PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": f"{tmp}/cache", "XDG_STATE_HOME": f"{tmp}/state",
                    "XDG_CONFIG_HOME": f"{tmp}/config", "COLUMNS": "200"})
        key = "10.0.0.1:9876"
        names = Path(tmp, "cache", "rmqctl", "names")
        names.mkdir(parents=True)
        (names / "namesrv_10.0.0.1_9876.groups").write_text(
            "# rmqctl names v1\n" + "".join(f"grp-{i:04d}\n" for i in range(args.names)))
        here = Runner("checkout", [sys.executable], [sys.executable, "-m", "rmqctl"], env)
        runners = [here, *(venv_runner(spec, env) for spec in args.venv)]
        log("starting emulator serve (tag-overwrite) on loopback ...")
        server, namesrv = serve_emulator(env)
        try:
            cases: list[Case] = []
            for runner in runners:
                cases += python_cases(runner, namesrv, f" [{runner.label}]" if args.venv else "")
            cases += shell_cases(key)
            load_before = [round(x, 2) for x in os.getloadavg()]
            measure(cases, env, args.runs)
            tab_ms = in_shell_tab_ms(env, key)
            breakdowns = {}
            if args.importtime:
                for case in cases:
                    if case.label.startswith("rmqctl group show G"):
                        breakdowns[case.label] = import_breakdown(case.argv, case.env or env, 7)
            load_after = [round(x, 2) for x in os.getloadavg()]
        finally:
            stop(server)

    rows = [summary(c) for c in cases]
    meta = {"runs": args.runs, "names_in_cache": args.names, "cpus": os.cpu_count(),
            "loadavg_before": load_before, "loadavg_after": load_after, "python": sys.version.split()[0],
            "in_shell_tab_ms": tab_ms, "runners": [r.label for r in runners]}
    if args.json:
        print(json.dumps({"meta": meta, "results": rows, "import_ms": breakdowns}, indent=2))
        return 0
    width = max(len(r["case"]) for r in rows)
    print(f"\nwhole-process times, {args.runs} runs each (ms); CPU = user+system of the child")
    print(f"  {'case':<{width}} {'median':>7} {'min':>7} {'CPU':>7} {'target':>7}")
    for r in rows:
        target = "" if r["target_ms"] is None else f"{r['target_ms']:g}"
        print(f"  {r['case']:<{width}} {r['median_ms']:>7.1f} {r['min_ms']:>7.1f} {r['median_cpu_ms']:>7.1f} "
              f"{target:>7}")
    print(f"\n  one TAB inside a running shell ({args.names} cached names): "
          + ", ".join(f"{shell} {ms:.2f} ms" for shell, ms in tab_ms.items()))
    for label, breakdown in breakdowns.items():
        total = sum(ms for _, ms in breakdown)
        print(f"\n  {label}, import time per package (min self time over 7 runs, total {total:.1f} ms):")
        for package, ms in breakdown[:15]:
            print(f"    {ms:7.1f}  {package}")
    print(f"\n  load average before {load_before}, after {load_after}; {os.cpu_count()} CPUs; "
          f"Python {meta['python']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
