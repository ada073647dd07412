"""The stuck-queue job on Spark and on the local engine against the same rules as one DuckDB query, same files.

``python bench/bench_stuck.py --rows 1e6,1e7`` generates (once, under ``--data``, default ``.bench-data/``) and
judges a dataset of each size; ``python bench/bench_stuck.py DIR...`` judges given datasets (from
``bench/gen_snapshots.py``). Each engine runs in its own child process over the whole dataset:

- **duckdb**: :data:`DUCKDB_SQL`, the same rules (statuses only, no explanations) over ``read_parquet``;
- **spark**: ``analysis.stuck`` (``plan`` + ``run``, JSON out) on a fresh session as the job builds it; the
  child reports the session start-up and the job separately;
- **spark-baseline**, **command-baseline**: ``spark`` and ``command`` run from another build (``--baseline REV``:
  its ``rmqctl/`` and ``analysis/`` taken with ``git archive``), each run right before this build's, for a
  before/after in one run;
- **local**: the local engine (``rmqctl.localjob``: ``plan`` + ``run``, the whole document with every
  explanation; above 10^6 rows in buckets spilled to disk), start-up being the import of pyarrow and the engine;
- **local-whole**: the same holding every row in memory at once (the engine before its buckets);
- **command**: ``rmqctl analyze stuck DIR -o json --out FILE`` as a user runs it (``--engine auto``: the engine
  it picks for the input), from command to verdict; its start-up is not told apart.

For each it reports whole-process wall time, the CPU time of the whole process tree (the JVM included: a
loaded machine stretches wall time, CPU time much less), time without start-up, rows per second and the peak
resident memory of the whole process tree, both sampled every 50 ms from /proc, with the load average before
and after each dataset. Then it checks that all give every queue the same status, and the generator's expected
status (with ``--since`` after the data's start only the same status: frozen runs begun before the window are
then looked for in the hour before it). Prints a table and one JSON line per dataset.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SINCE = "2026-03-01T00:00:00Z"
UNTIL = "2026-12-31T00:00:00Z"

DUCKDB_SQL = r"""
WITH answered AS (
    SELECT cluster, "group", topic, broker, queue_id, ts, broker_offset AS bo, consumer_offset AS co,
           owner, owner_subscribed AS sub, ts >= CAST($since AS TIMESTAMPTZ) AS in_window,
           greatest(broker_offset - consumer_offset, 0) AS lag,
           CASE WHEN starts_with(topic, '%RETRY%') THEN $retry_allowed ELSE $allowed END AS allowed
    FROM read_parquet($files)
    WHERE ts BETWEEN CAST($since AS TIMESTAMPTZ) - to_milliseconds($lookback_ms) AND CAST($until AS TIMESTAMPTZ)
      AND coalesce(message_model, '') <> 'BROADCASTING'
      AND error IS NULL AND broker_offset IS NOT NULL AND consumer_offset IS NOT NULL
), stepped AS (
    SELECT *, row_number() OVER q AS rn, lag(owner) OVER q AS prev_owner, lag(co) OVER q AS prev_co,
           lag(lag) OVER q AS prev_lag, coalesce(lag(in_window) OVER q, false) AS prev_in
    FROM answered
    WINDOW q AS (PARTITION BY cluster, "group", topic, broker, queue_id ORDER BY ts)
), marked AS (
    SELECT *, (rn > 1 AND owner IS DISTINCT FROM prev_owner) AS changed FROM stepped
), runs AS (
    SELECT *,
        last_value(CASE WHEN in_window AND (NOT prev_in OR changed) THEN {'ts': ts, 'lag': lag, 'rn': rn} END
                   IGNORE NULLS) OVER r AS seg,
        last_value(CASE WHEN rn = 1 OR changed OR co <> prev_co OR prev_lag <= allowed
                        THEN {'ts': ts, 'rn': rn} END IGNORE NULLS) OVER r AS run,
        max(CASE WHEN in_window AND lag <= allowed THEN rn END) OVER r AS caught_up_rn
    FROM marked
    WINDOW r AS (PARTITION BY cluster, "group", topic, broker, queue_id ORDER BY ts
                 ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
), queues AS (
    SELECT cluster, "group", topic, broker, queue_id, count(*) FILTER (WHERE in_window) AS n,
           arg_min(bo, ts) FILTER (WHERE in_window) AS first_bo, max(co) FILTER (WHERE in_window) AS co_max,
           arg_max({'ts': ts, 'bo': bo, 'co': co, 'lag': lag, 'rn': rn, 'owner': owner,
                    'sub': sub, 'seg': seg, 'run': run, 'cu': caught_up_rn, 'allowed': allowed}, ts) AS l
    FROM runs GROUP BY ALL HAVING count(*) FILTER (WHERE in_window) > 0
)
SELECT "group", topic, broker, queue_id, CASE
    WHEN starts_with(topic, '%DLQ%') THEN 'DLQ'
    WHEN n < $min_snapshots THEN 'INSUFFICIENT_DATA'
    WHEN co_max > l.co AND NOT (l.rn - l.run.rn + 1 >= $min_snapshots AND l.lag > l.allowed) THEN 'REWOUND'
    WHEN l.bo = first_bo AND l.lag <= l.allowed THEN 'IDLE'
    WHEN l.lag <= l.allowed THEN 'OK'
    WHEN l.rn - l.seg.rn + 1 < $min_snapshots THEN 'INSUFFICIENT_DATA'
    WHEN (l.owner IS NULL OR l.sub = false) AND l.rn - l.run.rn + 1 >= $min_snapshots THEN 'ORPHANED'
    -- offset-pinned (pulls going on) and frozen are both STALLED; only their explanations differ
    WHEN l.rn - l.run.rn + 1 >= $min_snapshots THEN 'STALLED'
    WHEN (l.cu IS NULL OR l.cu < l.seg.rn) AND l.lag > l.seg.lag THEN 'LAGGING'
    ELSE 'OK' END AS status
FROM queues
"""
"""The job's rules (analysis/rules.py ``judge``) as one DuckDB query, without the explanations."""


def _key(q: dict[str, Any]) -> str:
    return f"{q['group']}|{q['topic']}|{q['broker']}|{q['queue_id']}"


def child_spark(args: argparse.Namespace) -> dict[str, Any]:
    sys.path.insert(0, str(args.tree))
    from analysis import stuck

    assert Path(stuck.__file__).is_relative_to(args.tree), stuck.__file__
    started = time.perf_counter()
    files = sorted(Path(args.directory).glob("date=*/*.parquet"))
    spark = stuck.build_session(args.master, args.driver_memory, args.driver_memory, args.shuffle_partitions,
                                input_bytes=sum(p.stat().st_size for p in files))
    spark.sparkContext.setLogLevel("ERROR")
    ready = time.perf_counter()
    job = stuck.plan(stuck.build_parser().parse_args(
        [str(args.directory), "--since", args.since, "--until", UNTIL, "-o", "json", "--out", str(args.result)]))
    code = stuck.run(spark, job)
    done = time.perf_counter()
    spark.stop()
    queues = json.loads(args.result.read_text())["queues"]
    args.result.write_text(json.dumps({_key(q): q["status"] for q in queues}))
    return {"startup_s": ready - started, "job_s": done - ready, "exit": code}


def child_local(args: argparse.Namespace) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT))
    started = time.perf_counter()
    from rmqctl.localjob import job

    ready = time.perf_counter()
    bucket_rows = 1 << 62 if args.child == "local-whole" else job.BUCKET_ROWS
    code, document = job.run(job.plan(args.directory, since=args.since, until=UNTIL), lambda _: None, bucket_rows)
    done = time.perf_counter()
    args.result.write_text(json.dumps({_key(q): q["status"] for q in document["queues"]}))
    return {"startup_s": ready - started, "job_s": done - ready, "exit": code}


def child_command(args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    out = args.result.with_suffix(".command.json")
    env = {**os.environ, "PYTHONPATH": str(args.tree)}
    # run from the tree (first on the path): its rmqctl, and the analysis package beside it
    proc = subprocess.run([sys.executable, "-m", "rmqctl", "analyze", "stuck", str(args.directory), "--since",
                           args.since, "--until", UNTIL, "-o", "json", "--out", str(out)], cwd=args.tree, env=env)
    done = time.perf_counter()
    if proc.returncode not in (0, 1):
        raise SystemExit(f"rmqctl analyze stuck exited {proc.returncode}")
    document = json.loads(out.read_text())
    args.result.write_text(json.dumps({_key(q): q["status"] for q in document["queues"]}))
    return {"startup_s": 0.0, "job_s": done - started, "exit": proc.returncode, "engine": document["engine"]}


def child_duckdb(args: argparse.Namespace) -> dict[str, Any]:
    import duckdb

    sys.path.insert(0, str(ROOT))
    from rmqctl import stuck

    started = time.perf_counter()
    con = duckdb.connect(config={"threads": args.threads})
    ready = time.perf_counter()
    files = sorted(str(p) for p in Path(args.directory).glob("date=*/*.parquet"))
    rows = con.execute(DUCKDB_SQL, {
        "files": files, "since": args.since.replace("Z", "+00:00"), "until": UNTIL.replace("Z", "+00:00"),
        "allowed": stuck.ALLOWED_LAG, "retry_allowed": stuck.RETRY_ALLOWED_LAG, "min_snapshots": stuck.MIN_SNAPSHOTS,
        "lookback_ms": stuck.RUN_LOOKBACK_MS,
    }).fetchall()
    done = time.perf_counter()
    args.result.write_text(json.dumps({f"{g}|{t}|{b}|{q}": s for g, t, b, q, s in rows}))
    return {"startup_s": ready - started, "job_s": done - ready, "exit": 0}


_TICKS = os.sysconf("SC_CLK_TCK")


def _tree_rss_kib(root_pid: int, cpu: dict[int, float] | None = None) -> int:
    """The resident memory of ``root_pid`` and its descendants; with ``cpu``, each one's CPU seconds so far
    are recorded there too (the last value seen per process is what it used)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status", encoding="ascii", errors="replace") as fh:
                fields = dict(line.split(":", 1) for line in fh if ":" in line)
        except OSError:
            continue
        pid = int(entry)
        children.setdefault(int(fields.get("PPid", "0").strip()), []).append(pid)
        rss[pid] = int(fields.get("VmRSS", "0 kB").split()[0])
    total, stack = 0, [root_pid]
    while stack:
        pid = stack.pop()
        total += rss.get(pid, 0)
        stack.extend(children.get(pid, []))
        if cpu is not None:
            try:
                with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
                    stat = fh.read().rsplit(")", 1)[1].split()
                cpu[pid] = max(cpu.get(pid, 0.0), (int(stat[11]) + int(stat[12])) / _TICKS)
            except (OSError, IndexError, ValueError):
                pass
    return total


def measure(engine: str, args: argparse.Namespace, result: Path) -> dict[str, Any]:
    command = [sys.executable, __file__, str(args.directory), "--child", engine, "--result", str(result),
               "--master", args.master, "--driver-memory", args.driver_memory, "--threads", str(args.threads),
               "--since", args.since, "--tree", str(args.baseline_tree if engine.endswith("-baseline") else ROOT)]
    if args.shuffle_partitions is not None:
        command += ["--shuffle-partitions", str(args.shuffle_partitions)]
    started = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    peak = 0
    cpu: dict[int, float] = {}
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, _tree_rss_kib(proc.pid, cpu))
            done.wait(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, _ = proc.communicate()
    wall = time.perf_counter() - started
    done.set()
    sampler.join()
    if proc.returncode != 0:
        raise SystemExit(f"{engine} child failed with exit {proc.returncode}")
    report = json.loads(out.strip().splitlines()[-1])
    return {"engine": engine + (f" ({report['engine']})" if "engine" in report else ""), "wall_s": wall,
            "cpu_s": sum(cpu.values()), "startup_s": report["startup_s"], "job_s": report["job_s"],
            "peak_rss_mib": peak / 1024, "job_exit": report["exit"]}


def count_rows(directory: Path) -> int:
    import pyarrow.parquet as pq

    return sum(pq.ParquetFile(p).metadata.num_rows for p in directory.glob("date=*/*.parquet"))


ENGINES = ("duckdb", "spark", "spark-baseline", "local", "local-whole", "command", "command-baseline")


def dataset(data: Path, rows: str) -> Path:
    """The generated dataset of about ``rows`` rows under ``data`` (generated on first use)."""
    directory = data / f"snap-{rows}"
    if not (directory / "expected.json").exists():
        subprocess.run([sys.executable, str(ROOT / "bench" / "gen_snapshots.py"), str(directory), "--rows", rows],
                       check=True)
    return directory


def baseline_tree(data: Path, rev: str) -> Path:
    """``rmqctl/`` and ``analysis/`` of ``rev`` (``git archive``), extracted once under ``data``."""
    commit = subprocess.run(["git", "rev-parse", "--short", rev], cwd=ROOT, check=True, capture_output=True,
                            text=True).stdout.strip()
    tree = data / f"baseline-{commit}"
    if not (tree / "analysis" / "stuck.py").exists():
        tree.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "archive", commit, "rmqctl", "analysis"], cwd=ROOT, check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    return tree


def bench(directory: Path, args: argparse.Namespace) -> bool:
    """Every engine over one dataset; prints the table and the JSON line; True when all verdicts agree."""
    rows = count_rows(directory)
    load_before = os.getloadavg()
    results, verdicts = [], {}
    work = directory / ".bench"
    work.mkdir(exist_ok=True)
    args.directory = directory
    for run in range(args.runs):
        for engine in args.engines.split(","):
            result = work / f"{engine}.json"
            measured = measure(engine, args, result)
            measured["rows_per_s_job"] = rows / measured["job_s"]
            measured["rows_per_s_wall"] = rows / measured["wall_s"]
            measured["run"] = run + 1
            results.append(measured)
            got = json.loads(result.read_text())
            if verdicts.setdefault(measured["engine"], got) != got:
                raise SystemExit(f"{measured['engine']} gave other verdicts in run {run + 1}")
    load_after = os.getloadavg()

    expected = json.loads((directory / "expected.json").read_text()) if args.since == SINCE else {}
    agree = {engine: sum(1 for k, s in expected.items() if got.get(k) == s) for engine, got in verdicts.items()}
    same = all(v == next(iter(verdicts.values())) for v in verdicts.values())
    print(f"{directory}: {rows:,} rows, {len(expected):,} queues, load average {load_before[0]:.1f} before / "
          f"{load_after[0]:.1f} after")
    print(f"{'engine':28} {'run':>3} {'wall s':>8} {'cpu s':>7} {'start s':>8} {'job s':>8} {'Mrows/s job':>12} "
          f"{'Mrows/s wall':>13} {'peak MiB':>9}  expected")
    for r in results:
        print(f"{r['engine']:28} {r['run']:3} {r['wall_s']:8.1f} {r['cpu_s']:7.1f} {r['startup_s']:8.1f} "
              f"{r['job_s']:8.1f} "
              f"{r['rows_per_s_job'] / 1e6:12.2f} {r['rows_per_s_wall'] / 1e6:13.2f} {r['peak_rss_mib']:9.0f}  "
              f"{agree[r['engine']]}/{len(expected)}")
    by_engine: dict[str, dict[str, float]] = {}
    for name in dict.fromkeys(r["engine"] for r in results):
        mine = [r for r in results if r["engine"] == name]
        by_engine[name] = {k: statistics.median(r[k] for r in mine) for k in ("wall_s", "cpu_s", "job_s")}
    for name, other in by_engine.items():
        if name != "duckdb" and "duckdb" in by_engine:
            duck = by_engine["duckdb"]
            medians = " (medians)" if args.runs > 1 else ""
            print(f"{name} / duckdb{medians}: wall {other['wall_s'] / duck['wall_s']:.2f}x, "
                  f"cpu {other['cpu_s'] / duck['cpu_s']:.2f}x, without start-up {other['job_s'] / duck['job_s']:.2f}x")
    print(f"same verdicts: {same}")
    print(json.dumps({"rows": rows, "queues": len(expected), "results": results, "expected_agree": agree,
                      "same_verdicts": same, "load": [load_before[0], load_after[0]]}), flush=True)
    return same and all(a == len(expected) for a in agree.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path, nargs="*", help="datasets from gen_snapshots.py")
    parser.add_argument("--rows", default=None,
                        help="comma-separated sizes to generate (once) and judge, e.g. 1e6,1e7 (default without DIR)")
    parser.add_argument("--data", type=Path, default=ROOT / ".bench-data", help="where --rows datasets are kept")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--driver-memory", default="2g")
    parser.add_argument("--shuffle-partitions", type=int, default=None,
                        help="for spark (default: the job's)")
    parser.add_argument("--threads", type=int, default=2, help="DuckDB threads")
    parser.add_argument("--engines", default=None, help=f"comma-separated, of {', '.join(ENGINES)} (default: "
                        "duckdb,spark,local,command; with --baseline each of spark and command after its baseline)")
    parser.add_argument("--baseline", default=None,
                        help="another build (a git revision) to run spark-baseline and command-baseline from")
    parser.add_argument("--runs", type=int, default=1, help="rounds of every engine, one after the other")
    parser.add_argument("--tree", type=Path, default=ROOT, help=argparse.SUPPRESS)
    parser.add_argument("--since", default=SINCE, help="window start (default: the whole dataset); a later start "
                        "judges frozen runs begun before it, and skips the check against expected.json")
    parser.add_argument("--child", choices=ENGINES, help=argparse.SUPPRESS)
    parser.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        args.directory = args.directory[0]
        children = {"duckdb": child_duckdb, "local": child_local, "local-whole": child_local,
                    "command": child_command, "command-baseline": child_command}
        report = children.get(args.child, child_spark)(args)
        print(json.dumps(report))
        return
    if args.engines is None:
        args.engines = ("duckdb,spark-baseline,spark,local,command-baseline,command" if args.baseline
                        else "duckdb,spark,local,command")
    if "-baseline" in args.engines:
        if not args.baseline:
            parser.error("the *-baseline engines need --baseline REV")
        args.baseline_tree = baseline_tree(args.data, args.baseline)
    directories = list(args.directory)
    if args.rows or not directories:
        directories += [dataset(args.data, rows) for rows in (args.rows or "1e6,1e7").split(",")]
    ok = [bench(directory, args) for directory in directories]
    if not all(ok):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
