"""Dashboard refresh cost and memory at scale: one group, 10,000 queues, 500 clients.

Builds the GroupView by hand (no cluster), runs the real app headless at 200x50 on the group's
queue → owner view, and for every poll gives it a new view whose consumer offsets all moved (so
every lag, offset and trend cell changes — the worst case for a refresh). Prints, per refresh:

- the poll worker's part, off the UI thread (what changed, the doctor's checks, the queue index);
- apply: committing that round to the dashboard, on the UI thread;
- rows + table sync: publishing the round to the screen, which swaps its rows into the table;
- rows + sync + apply (target <= 30 ms at 10,000 queues);
- the draw: the lines on screen drawn by textual (the rows on screen are built then; it costs the
  same at 400 queues as at 10,000);
- resident memory (VmRSS) along the polls (target: flat after the trend buffers filled);

then runs the same benchmark as it was at ``--baseline REV`` (its own code, from git, in a
subprocess) and prints both medians side by side.

Run: ``python bench/bench_tui.py [--polls 1800] [--queues 10000] [--clients 500] [--baseline REV]``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rmqctl.clock import Clock  # noqa: E402
from rmqctl.model import (  # noqa: E402
    ClientConnection,
    ConsumerRunningInfo,
    GroupView,
    MessageQueue,
    ProcessQueueInfo,
    QueueProgress,
    parse_tag_expression,
)
from rmqctl.source import Opened  # noqa: E402
from tui import TuiSettings, make_app  # noqa: E402
from tui.messages import RoundLoaded  # noqa: E402
from tui.screens import GroupScreen  # noqa: E402
from tui.state import TREND_LENGTH  # noqa: E402
from tui.widgets import KeyedTable  # noqa: E402

GROUP = "bench-group"


class StepClock:
    def __init__(self) -> None:
        self.t = 1_704_067_200.0

    def now(self) -> float:
        return self.t

    async def sleep(self, seconds: float) -> None:
        self.t += seconds


def build_view(queues: int, clients: int, brokers: int = 4) -> GroupView:
    per_broker = queues // brokers
    mqs = [MessageQueue("BenchTopic", f"broker-{b}", q) for b in range(brokers) for q in range(per_broker)]
    ids = [f"10.{i // 250}.{i % 250}.1@bench-{i:03d}" for i in range(clients)]
    owner = {mq: ids[n % clients] for n, mq in enumerate(mqs)}
    held: dict[str, dict[MessageQueue, ProcessQueueInfo]] = {cid: {} for cid in ids}
    for mq, cid in owner.items():
        held[cid][mq] = ProcessQueueInfo()
    sub = parse_tag_expression("BenchTopic", "*")
    infos = {cid: ConsumerRunningInfo(cid, {"messageModel": "CLUSTERING", "PROP_CONSUME_TYPE": "CONSUME_PASSIVELY"},
                                      (sub,), held[cid]) for cid in ids}
    now_ms = 1_704_067_200_000
    progress = tuple(QueueProgress(mq, 1000, 900, 950, now_ms - 1000, owner[mq]) for mq in mqs)
    return GroupView(GROUP, tuple(ClientConnection(cid, f"10.0.0.1:{10000 + i}", "JAVA", 479)
                                  for i, cid in enumerate(ids)),
                     {f"broker-{b}": {"BenchTopic": sub} for b in range(brokers)}, infos, progress,
                     "CONSUME_PASSIVELY", "CLUSTERING", topic_queues={"BenchTopic": tuple(mqs)})


def advanced(view: GroupView, step: int) -> GroupView:
    """Every queue received messages and the consumer committed some of them."""
    progress = tuple(replace(p, broker_offset=p.broker_offset + 10 * step + (n % 7),
                             consumer_offset=p.consumer_offset + 9 * step, pull_offset=p.consumer_offset + 9 * step + 3)
                     for n, p in enumerate(view.progress))
    return replace(view, progress=progress)


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class OneGroupSource:
    """The ClusterSource seam, answering one group's view (only what the watcher calls)."""

    def __init__(self, view: GroupView) -> None:
        self.view = view

    async def group_view(self, group: str, *, running_info: bool = True) -> GroupView:
        return self.view

    async def close(self) -> None:
        return None


def draw_visible(table: KeyedTable) -> None:
    """Draw every line of the table that is on screen, as a refresh does (the rows on screen
    are built here, on demand)."""
    for y in range(table.size.height):
        table.render_line(y)


def pct(values: list[float], q: float) -> float:
    return sorted(values)[min(len(values) - 1, int(q * len(values)))]


async def main(polls: int, queues: int, clients: int, checks: bool) -> dict[str, float]:
    base = build_view(queues, clients)
    source = OneGroupSource(base)
    clock: Clock = StepClock()
    app = make_app(Opened(source, "bench", clock),  # type: ignore[arg-type]
                   TuiSettings(group=GROUP, interval=10**6, checks=checks))
    prepare_ms: list[float] = []
    apply_ms: list[float] = []
    sync_ms: list[float] = []
    apply_cpu: list[float] = []
    sync_cpu: list[float] = []
    draw_ms: list[float] = []
    draw_cpu: list[float] = []
    memory: list[tuple[int, float]] = []
    async with app.run_test(size=(200, 50)) as pilot:
        while not (isinstance(app.screen, GroupScreen) and app.polls_done >= 1):
            await pilot.pause()
        table = app.screen.query_one("#queues", KeyedTable)
        assert table.row_count == len(base.progress), table.row_count
        lines = table.size.height
        for step in range(1, polls + 1):
            source.view = advanced(base, step)
            await clock.sleep(2.0)
            rnd = await app.watcher.poll()
            # the poll worker's part, off the UI thread (what the app does: RoundLoaded carries it)
            tp = time.perf_counter()
            prepared = app.dashboard.prepare(rnd, {}, check=checks)
            t0, c0 = time.perf_counter(), time.process_time()
            app.dashboard.commit(prepared)
            t1, c1 = time.perf_counter(), time.process_time()
            app.publish()  # the new board reaches the screen, which swaps its rows into the table
            t2, c2 = time.perf_counter(), time.process_time()
            draw_visible(table)  # the rows on screen are built and drawn
            t3, c3 = time.perf_counter(), time.process_time()
            draw_ms.append((t3 - t2) * 1000)
            draw_cpu.append((c3 - c2) * 1000)
            prepare_ms.append((t0 - tp) * 1000)
            apply_ms.append((t1 - t0) * 1000)
            sync_ms.append((t2 - t1) * 1000)
            apply_cpu.append((c1 - c0) * 1000)
            sync_cpu.append((c2 - c1) * 1000)
            await pilot.pause()  # let the table redraw (not timed)
            if step in (1, 10, 30, 100) or step % 300 == 0:
                gc.collect()
                memory.append((step, rss_mib()))
                print(f"poll {step:5d}: rows+sync {sync_ms[-1]:6.1f} ms  apply {apply_ms[-1]:6.1f} ms  "
                      f"draw {draw_ms[-1]:6.1f} ms  (worker {prepare_ms[-1]:6.1f} ms)  RSS {memory[-1][1]:7.1f} MiB",
                      flush=True)
        assert table.row_count == len(base.progress)
        # the table shows the last poll's numbers
        last = source.view.progress[0]
        assert str(table.get_row(f"BenchTopic|{last.queue.broker_name}|{last.queue.queue_id}")[6]) == str(last.lag)
        _ = RoundLoaded  # the app's own handler does commit + publish; timed separately here

    total = [a + b for a, b in zip(apply_ms, sync_ms, strict=True)]
    print(f"\n{queues} queues, {clients} clients, {polls} polls, trend buffers {TREND_LENGTH} polls, "
          f"doctor checks {'on' if checks else 'off'}")
    print(f"rows + table sync per refresh: median {statistics.median(sync_ms):.1f} ms, "
          f"p95 {pct(sync_ms, 0.95):.1f} ms, max {max(sync_ms):.1f} ms "
          f"(CPU median {statistics.median(sync_cpu):.1f} ms)")
    print(f"dashboard apply (commit) per refresh: median {statistics.median(apply_ms):.1f} ms, "
          f"p95 {pct(apply_ms, 0.95):.1f} ms (CPU median {statistics.median(apply_cpu):.1f} ms)")
    print(f"rows + sync + apply per refresh: median {statistics.median(total):.1f} ms, "
          f"p95 {pct(total, 0.95):.1f} ms (target <= 30 ms)")
    print(f"drawing the {lines} lines on screen (textual, the same at any queue count): "
          f"median {statistics.median(draw_ms):.1f} ms (CPU median {statistics.median(draw_cpu):.1f} ms)")
    print(f"poll worker, off the UI thread (changes, doctor checks, queue index): "
          f"median {statistics.median(prepare_ms):.1f} ms, p95 {pct(prepare_ms, 0.95):.1f} ms")
    print(f"load average during the run: {Path('/proc/loadavg').read_text().split()[0]} "
          f"on {os.cpu_count()} CPUs (wall times above include waiting for a CPU)")
    after_fill = [m for s, m in memory if s >= TREND_LENGTH]
    print("RSS (MiB) by poll: " + ", ".join(f"{s}: {m:.0f}" for s, m in memory))
    if len(after_fill) >= 2:
        print(f"RSS growth from poll {TREND_LENGTH} to {polls}: {after_fill[-1] - after_fill[0]:+.1f} MiB")
    return {"ui": statistics.median(total), "sync": statistics.median(sync_ms), "apply": statistics.median(apply_ms)}


#: the tree before refreshes were built on demand (every row built and diffed on the UI thread)
BASELINE = "a4ccfa0"


def baseline(rev: str, polls: int, queues: int, clients: int, checks: bool) -> dict[str, float] | None:
    """Run this benchmark as it was at ``rev`` (its own code, from git) and read its medians."""
    root = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory(prefix="bench-tui-") as tmp:
        archive = subprocess.run(["git", "-C", str(root), "archive", rev], capture_output=True, check=False)
        if archive.returncode != 0:
            print(f"baseline {rev}: {archive.stderr.decode().strip()}")
            return None
        subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
        args = [sys.executable, f"{tmp}/bench/bench_tui.py", "--polls", str(polls), "--queues", str(queues),
                "--clients", str(clients), *([] if checks else ["--no-checks"])]
        print(f"\n== baseline: {rev} (the same benchmark, its own code) ==", flush=True)
        out = subprocess.run(args, capture_output=True, text=True, cwd=tmp, check=False)
    print(out.stdout.rstrip())
    found = {}
    for key, pattern in (("sync", r"rows \+ table sync per refresh: median ([\d.]+) ms"),
                         ("apply", r"dashboard apply per refresh: +median ([\d.]+) ms")):
        match = re.search(pattern, out.stdout)
        if match:
            found[key] = float(match.group(1))
    if len(found) != 2:
        print(f"baseline {rev} did not report its figures:\n{out.stderr[-2000:]}")
        return None
    found["ui"] = found["sync"] + found["apply"]
    return found


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--polls", type=int, default=1800)
    parser.add_argument("--queues", type=int, default=10_000)
    parser.add_argument("--clients", type=int, default=500)
    parser.add_argument("--no-checks", action="store_true", help="skip the doctor's checks in apply")
    parser.add_argument("--baseline", default=BASELINE, metavar="REV",
                        help=f"also run the benchmark of this git revision (default {BASELINE})")
    parser.add_argument("--baseline-polls", type=int, default=40, help="polls of the baseline run")
    parser.add_argument("--no-baseline", action="store_true", help="skip the baseline run")
    args = parser.parse_args()
    now = asyncio.run(main(args.polls, args.queues, args.clients, not args.no_checks))
    if not args.no_baseline:
        before = baseline(args.baseline, args.baseline_polls, args.queues, args.clients, not args.no_checks)
        if before is not None:
            print(f"\nrows + sync + apply per refresh, median: {now['ui']:.1f} ms now against {before['ui']:.1f} ms at "
                  f"{args.baseline} (rows + sync {now['sync']:.1f} against {before['sync']:.1f} ms, "
                  f"apply {now['apply']:.1f} against {before['apply']:.1f} ms); "
                  f"load average {Path('/proc/loadavg').read_text().split()[0]}")
