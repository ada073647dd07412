"""Benchmark: admin reads against a large emulated cluster (numbers, not pass/fail).

Serves ``scale:GROUPSxQUEUESxBROKERSxCLIENTS`` (default 2,000 groups x 16 queues x 2 brokers,
5,000 simulated clients) from a separate process on loopback (``rmqctl emulator serve --clock
virtual``), then measures from this process, over the real protocol:

- p50/p99 latency of GET_CONSUMER_CONNECTION_LIST (203), GET_CONSUME_STATS (208) and the
  GET_CONSUMER_RUNNING_INFO relay (307), one request at a time;
- the wall time of ``rmqctl group list`` over the whole cluster, both as
  ``ClusterService.group_summaries()`` in-process and as the CLI in a fresh process.

``--load`` measures the server's throughput instead: ``--connections`` (default 200) connections
spread over the brokers send admin requests (GET_CONSUMER_CONNECTION_LIST, GET_CONSUME_STATS,
GET_TOPIC_STATS_INFO of random groups and their topics) for ``--seconds`` after a warm-up, from
``--procs`` load processes. The generator is plain non-blocking sockets on one ``epoll`` per
process, pre-encoded frames, replies read by their length only, so that it costs less than the
server per request (both are printed). Two measurements per server: the closed loop (each
connection keeps one request in flight: the most the server answers, and its latency when
saturated) and the open loop at ``--rate`` requests per second in all (default 20,000; requests
are sent when due whether or not the earlier ones were answered, and each latency counts from
when its request was due, so a server that falls behind shows it in the tail). It prints requests
per second (replies that arrived in the measured seconds), the latency percentiles, the server's
and the generator's CPU per request and the load average, for this tree and, in the same run and
alternating with it, for ``--baseline`` (a git revision, read with ``git archive`` into a
temporary directory; default ``main``).

``--list`` runs ``group list`` (``ClusterService.group_summaries()``, in a fresh process each
time) over one emulator served from this tree, with this tree's client and with ``--baseline``'s,
alternating, and prints each run's wall and CPU seconds, the server's CPU seconds, a digest of
the rows (the two builds must print the same rows) and the requests the run sent, by request code.
``--at`` is the virtual time the scenario is served at: 60 s by default, the steady state of an
operator's cluster, where every group has committed its topic and its retry topic (a client
commits the retry queue only after its first empty pull comes back from the 15 s long poll, so
in the first ~20 s of a group's life ``group list`` also reads each uncommitted retry topic's
stats: ``--at 5`` measures that young cluster); ``--concurrency`` sets the admin client's limit
of requests in flight.

Usage: ``python bench/bench_emulator.py [--groups 2000 --queues 16 --brokers 2 --clients 5000]``,
``python bench/bench_emulator.py --load [--baseline main] [--rounds 2] [--connections 200] [--rate 20000]`` or
``python bench/bench_emulator.py --list [--baseline main] [--rounds 3] [--at 60] [--concurrency 16]``.
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
import tempfile
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


# -- load: many connections of admin requests ------------------------------------------------

def request_frames(groups: int, seed: int, count: int = 64) -> list[bytes]:
    """``count`` pre-encoded admin requests of random groups (the opaque does not matter: each
    connection has one request in flight)."""
    from rmqctl.remoting import frame

    rng = random.Random(seed)
    out = []
    for i in range(count):
        g = rng.randrange(groups)
        kind = i % 3
        if kind == 0:
            cmd = frame.request(RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": f"scale-group-{g:04d}"})
        elif kind == 1:
            cmd = frame.request(RequestCode.GET_CONSUME_STATS, {"consumerGroup": f"scale-group-{g:04d}"})
        else:
            cmd = frame.request(RequestCode.GET_TOPIC_STATS_INFO, {"topic": f"scale-topic-{g:04d}"})
        out.append(frame.encode(cmd))
    return out


def load_worker(addrs: list[str], connections: int, warmup: float, seconds: float, groups: int,
                seed: int, rate: float) -> dict[str, object]:
    """One load process: ``connections`` connections on plain non-blocking sockets and one
    ``epoll`` (no event-loop machinery: the generator should cost far less than the server).

    ``rate`` 0 (closed loop): each connection keeps one request in flight, the next sent as soon
    as the reply is in; the latency of a request is from its send to its reply. ``rate`` > 0
    (open loop): requests are due every ``1/rate`` s, round robin over the connections, and sent
    when due whether or not the earlier ones were answered (replies on one connection come back
    in order); the latency is from when the request was *due*, so a server that falls behind
    shows it in the tail instead of slowing the generator down."""
    import select
    import socket
    from collections import deque

    clock = time.perf_counter
    poller = select.epoll()
    conns: dict[int, tuple[socket.socket, list[bytes], deque[float], bytearray]] = {}
    order = []
    for index in range(connections):
        host, port = addrs[index % len(addrs)].rsplit(":", 1)
        sock = socket.create_connection((host, int(port)))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setblocking(False)
        conns[sock.fileno()] = (sock, request_frames(groups, seed * 1000 + index), deque(), bytearray())
        order.append(sock.fileno())
        poller.register(sock.fileno(), select.EPOLLIN)
    latencies: list[float] = []
    total = failed = sent = answered = 0
    cpu = time.process_time()
    start = clock()
    record_from, stop_at = start + warmup, start + warmup + seconds
    interval = 1.0 / rate if rate > 0 else 0.0
    due = start

    def send(fd: int, when: float) -> None:
        nonlocal sent
        sock, frames, waiting, _ = conns[fd]
        waiting.append(when)
        sock.send(frames[sent % len(frames)])
        sent += 1

    if rate <= 0:
        for fd in order:
            send(fd, clock())
    open_loop = rate > 0
    while True:
        now = clock()
        if open_loop:
            while due <= now and due < stop_at:
                send(order[sent % connections], due)
                due += interval
            if due >= stop_at and not any(c[2] for c in conns.values()):
                break
            timeout = max(0.0, min(due, stop_at) - now) if due < stop_at else 0.05
        else:
            if now >= stop_at and not any(c[2] for c in conns.values()):
                break
            timeout = 0.05
        for fd, _ in poller.poll(timeout):
            sock, frames, waiting, buf = conns[fd]
            data = sock.recv(262144)
            if not data:
                raise SystemExit("the emulator closed a connection")
            buf += data
            now = clock()
            while len(buf) >= 4:
                length = int.from_bytes(buf[:4], "big")
                if len(buf) < 4 + length:
                    break
                when = waiting.popleft()
                total += 1
                if record_from <= now < stop_at:
                    answered += 1
                if when >= record_from and when < stop_at:
                    latencies.append(now - when)
                    if b'"code":0,' not in buf[8:60]:
                        failed += 1
                del buf[:4 + length]
                if not open_loop and now < stop_at:
                    send(fd, now)
        if clock() > stop_at + 30:  # replies that never come: the figures say so (fewer requests)
            break
    for sock, _, _, _ in conns.values():
        sock.close()
    return {"latencies": latencies, "failed": failed, "total": total, "answered": answered,
            "cpu": time.process_time() - cpu}


def proc_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def serve(scenario: str, tree: Path, at: float = 5.0) -> tuple[subprocess.Popen[str], dict[str, object]]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(tree)}
    server = subprocess.Popen(
        [sys.executable, "-c", SERVE, "serve", "--scenario", scenario, "--clock", "virtual", "--at", f"{at:g}",
         "-o", "json"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=tree, env=env, text=True)
    assert server.stdout is not None
    line = server.stdout.readline()
    if not line:
        server.kill()
        sys.exit(f"the emulator of {tree} did not start")
    return server, json.loads(line)


def load_phase(label: str, mode: str, server: subprocess.Popen[str], addrs: list[str], rate: float,
               args: argparse.Namespace) -> dict[str, float]:
    """One measurement against a running server: ``rate`` 0 is the closed loop (saturation),
    else the open loop at ``rate`` requests per second in all."""
    per = [args.connections // args.procs + (1 if i < args.connections % args.procs else 0)
           for i in range(args.procs)]
    load_before = os.getloadavg()[0]
    cpu_before = proc_cpu(server.pid)
    workers = [subprocess.Popen(
        [sys.executable, __file__, "--worker", ",".join(addrs), str(n), str(args.warmup), str(args.seconds),
         str(args.groups), str(i), repr(rate * n / args.connections)], stdout=subprocess.PIPE, cwd=ROOT, text=True)
        for i, n in enumerate(per)]
    results = [json.loads(w.communicate()[0]) for w in workers]
    server_cpu = proc_cpu(server.pid) - cpu_before
    lat = [x * 1000 for r in results for x in r["latencies"]]
    answered = sum(r["total"] for r in results)
    figures = {
        # replies that arrived in the measured seconds
        "rps": sum(r["answered"] for r in results) / args.seconds,
        "p50": percentile(lat, 0.50), "p99": percentile(lat, 0.99), "max": max(lat),
        "failed": sum(r["failed"] for r in results),
        # every request answered, warm-up included, against all the CPU each side used
        "server_us": 1e6 * server_cpu / max(1, answered),
        "gen_us": 1e6 * sum(r["cpu"] for r in results) / max(1, answered),
        "load": (load_before + os.getloadavg()[0]) / 2,
    }
    print(f"  {label:<22} {mode:<16} {figures['rps']:7.0f} req/s  p50 {figures['p50']:6.2f} ms  "
          f"p99 {figures['p99']:7.2f} ms  max {figures['max']:7.1f} ms  failed {figures['failed']:.0f}  "
          f"CPU per request: server {figures['server_us']:4.0f} µs, generator {figures['gen_us']:4.0f} µs  "
          f"load {figures['load']:.1f}", flush=True)
    return figures


def load_run(label: str, tree: Path, args: argparse.Namespace) -> dict[str, dict[str, float]]:
    """The closed loop, then the open loop at ``--rate``, against one server of ``tree``."""
    scenario = f"scale:{args.groups}x{args.queues}x{args.brokers}x{args.clients}"
    server, served = serve(scenario, tree)
    try:
        addrs = sorted(served["brokers"].values())  # type: ignore[union-attr]
        out = {"closed": load_phase(label, "closed loop", server, addrs, 0.0, args)}
        if args.rate > 0:
            out["open"] = load_phase(label, f"open, {args.rate:g}/s", server, addrs, args.rate, args)
        return out
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()


def baseline_tree(rev: str) -> Path:
    out = Path(tempfile.mkdtemp(prefix="bench-emulator-"))
    archive = subprocess.run(["git", "archive", rev, "rmqctl"], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(out)], input=archive, check=True)
    return out


LIST = """
import asyncio, hashlib, json, sys, time
from rmqctl.backends.remoting import RemotingBackend
from rmqctl.remoting.admin import AdminClient
from rmqctl.service import ClusterService

sent = {}
_fetch = AdminClient.fetch

async def counted(self, address, code, *args, **kw):
    sent[int(code)] = sent.get(int(code), 0) + 1
    return await _fetch(self, address, code, *args, **kw)

AdminClient.fetch = counted
_fetch_many = getattr(AdminClient, "fetch_many", None)

async def counted_many(self, address, code, exts, *args, **kw):
    sent[int(code)] = sent.get(int(code), 0) + len(exts)
    return await _fetch_many(self, address, code, exts, *args, **kw)

if _fetch_many is not None:  # a build that pipelines some requests in batches
    AdminClient.fetch_many = counted_many

async def main():
    admin = AdminClient([sys.argv[1]], timeout=60, concurrency=int(sys.argv[2]))
    source = ClusterService(RemotingBackend(admin))
    try:
        wall, cpu = time.perf_counter(), time.process_time()
        result = await source.group_summaries()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    finally:
        await source.close()
    rows = repr([(s.group, s.clients, s.consume_type, s.message_model, s.version, s.total_diff,
                  s.consume_tps, s.error, s.unknown_diff_topics) for s in result.value])
    print(json.dumps({"wall": wall, "cpu": cpu, "rows": len(result.value), "errors": len(result.errors),
                      "digest": hashlib.sha256(rows.encode()).hexdigest()[:12],
                      "requests": sum(sent.values()), "by_code": dict(sorted(sent.items()))}))

asyncio.run(main())
"""


def list_main(args: argparse.Namespace) -> None:
    import shutil

    scenario = f"scale:{args.groups}x{args.queues}x{args.brokers}x{args.clients}"
    builds = [("this tree", ROOT)]
    base = baseline_tree(args.baseline) if args.baseline else None
    if base is not None:
        builds.insert(0, (f"baseline {args.baseline}", base))
    print(f"group list over {scenario} (served by this tree, virtual clock at {args.at:g} s); load average before "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} CPUs)")
    server, served = serve(scenario, ROOT, args.at)
    runs: dict[str, list[dict[str, float]]] = {label: [] for label, _ in builds}
    try:
        for _ in range(args.rounds):
            for label, tree in builds:
                before = proc_cpu(server.pid)
                env = {**os.environ, "PYTHONPATH": str(tree)}
                command = [sys.executable, "-c", LIST, str(served["namesrv"]), str(args.concurrency)]
                out = subprocess.run(command, capture_output=True, text=True, cwd=tree, env=env, check=True).stdout
                figures = json.loads(out)
                figures["server_cpu"] = proc_cpu(server.pid) - before
                runs[label].append(figures)
                print(f"  {label:<22} wall {figures['wall']:6.2f} s  CPU {figures['cpu']:5.2f} s  server CPU "
                      f"{figures['server_cpu']:5.2f} s  {figures['rows']} rows, {figures['errors']} errors, "
                      f"rows {figures['digest']}  load {os.getloadavg()[0]:.1f}", flush=True)
                print(f"  {'':<22} {figures['requests']} requests by code: {figures['by_code']}", flush=True)
    finally:
        server.terminate()
        server.wait(10)
        if base is not None:
            shutil.rmtree(base, ignore_errors=True)
    print("medians:")
    for label, figures in runs.items():
        print(f"  {label:<22} wall {statistics.median(f['wall'] for f in figures):6.2f} s  "
              f"CPU {statistics.median(f['cpu'] for f in figures):5.2f} s  "
              f"server CPU {statistics.median(f['server_cpu'] for f in figures):5.2f} s")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def load_main(args: argparse.Namespace) -> None:
    import shutil

    builds = [("this tree", ROOT)]
    base = None
    if args.baseline:
        base = baseline_tree(args.baseline)
        builds.insert(0, (f"baseline {args.baseline}", base))
    print(f"load: {args.connections} connections from {args.procs} processes, {args.seconds:g} s after "
          f"{args.warmup:g} s warm-up, scale:{args.groups}x{args.queues}x{args.brokers}x{args.clients}; "
          f"load average before {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} CPUs)")
    runs: dict[str, list[dict[str, dict[str, float]]]] = {label: [] for label, _ in builds}
    try:
        for _ in range(args.rounds):
            for label, tree in builds:
                runs[label].append(load_run(label, tree, args))
    finally:
        if base is not None:
            shutil.rmtree(base, ignore_errors=True)
    print("medians:")
    for label, rounds in runs.items():
        for mode in rounds[0]:
            figures = [r[mode] for r in rounds]
            med = {k: statistics.median(f[k] for f in figures) for k in figures[0]}
            name = "closed loop" if mode == "closed" else f"open, {args.rate:g}/s"
            print(f"  {label:<22} {name:<16} {med['rps']:7.0f} req/s  p50 {med['p50']:6.2f} ms  "
                  f"p99 {med['p99']:7.2f} ms  server CPU {med['server_us']:.0f} µs/request "
                  f"({1e6 / med['server_us']:.0f} requests per CPU second), generator {med['gen_us']:.0f} µs/request")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        addrs, conns, warmup, seconds, groups, seed, rate = sys.argv[2:9]
        result = load_worker(addrs.split(","), int(conns), float(warmup), float(seconds), int(groups), int(seed),
                             float(rate))
        print(json.dumps(result))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", type=int, default=2000)
    parser.add_argument("--queues", type=int, default=16)
    parser.add_argument("--brokers", type=int, default=2)
    parser.add_argument("--clients", type=int, default=5000)
    parser.add_argument("--samples", type=int, default=500)
    parser.add_argument("--load", action="store_true", help="measure throughput under many connections")
    parser.add_argument("--list", action="store_true", help="group list with this tree's client and the baseline's")
    parser.add_argument("--connections", type=int, default=200)
    parser.add_argument("--procs", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--rate", type=float, default=20000.0,
                        help="--load: the open loop's requests per second over all connections (0: closed loop only)")
    parser.add_argument("--baseline", default="main", help="git revision to compare with ('' for none)")
    parser.add_argument("--at", type=float, default=60.0,
                        help="--list: the virtual time the scenario is served at (60: every group has committed its "
                             "topic and retry topic; 5: a young cluster whose retry topics are read too)")
    parser.add_argument("--concurrency", type=int, default=16,
                        help="--list: requests in flight per group list (the admin client's limit)")
    args = parser.parse_args()
    if args.load:
        load_main(args)
        return
    if args.list:
        list_main(args)
        return
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
