"""Benchmark: decoding the fastjson bodies rmqctl reads most (numbers, not pass/fail).

Times :func:`rmqctl.remoting.fastjson.loads` on synthetic bodies shaped like the broker's:
consume stats (a map keyed by ``MessageQueue`` object literals), cluster info (maps keyed by
unquoted numbers) and a plain-JSON consumer connection, beside two references in the same run:
the decoder of another revision (``--baseline REV``, read with ``git show``) and the C decoder
``json.loads`` on the same body written as plain JSON (the floor a pure-Python caller can reach).
Prints the median of ``--rounds`` rounds per body in microseconds and MB/s.

Usage: ``python bench/bench_decode.py [--baseline 229026b] [--rounds 7]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rmqctl.remoting import fastjson  # noqa: E402


def consume_stats(queues: int) -> tuple[str, str]:
    keys = [f'{{"brokerName":"broker-a","queueId":{i % 16},"topic":"Topic{i // 16}"}}' for i in range(queues)]
    values = [f'{{"brokerOffset":{i * 10},"consumerOffset":{i * 9},"lastTimestamp":1700000000000,'
              f'"pullOffset":{i * 9}}}' for i in range(queues)]
    pairs = zip(keys, values, strict=True)
    dialect = '{"consumeTps":1.5,"offsetTable":{' + ",".join(f"{k}:{v}" for k, v in pairs) + "}}"
    plain = '{"consumeTps":1.5,"offsetTable":{' + ",".join(
        f"{json.dumps(k)}:{v}" for k, v in zip(keys, values, strict=True)) + "}}"
    return dialect, plain


def cluster_info(brokers: int) -> tuple[str, str]:
    def table(quote: Callable[[int], str]) -> str:
        entries = ",".join(f'"b{i}":{{"brokerAddrs":{{{quote(0)}:"127.0.0.1:{10911 + i}",'
                           f'{quote(1)}:"127.0.0.2:{10911 + i}"}},"brokerName":"b{i}","cluster":"c"}}'
                           for i in range(brokers))
        return '{"brokerAddrTable":{' + entries + '},"clusterAddrTable":{"c":[' + ",".join(
            f'"b{i}"' for i in range(brokers)) + "]}}"
    return table(str), table(lambda n: f'"{n}"')


def connection(clients: int) -> tuple[str, str]:
    conns = ",".join(f'{{"clientAddr":"10.0.0.{i % 250}:5{i:04d}","clientId":"10.0.0.{i % 250}@{i}",'
                     f'"language":"JAVA","version":453}}' for i in range(clients))
    body = ('{"connectionSet":[' + conns + '],"consumeFromWhere":"CONSUME_FROM_LAST_OFFSET",'
            '"consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","subscriptionTable":'
            '{"T":{"classFilterMode":false,"codeSet":[],"expressionType":"TAG","subString":"*",'
            '"subVersion":1700000000000,"tagsSet":[],"topic":"T"}}}')
    return body, body


def baseline_module(rev: str) -> types.ModuleType | None:
    try:
        source = subprocess.run(["git", "show", f"{rev}:rmqctl/remoting/fastjson.py"], cwd=ROOT,
                                capture_output=True, text=True, check=True).stdout
    except (subprocess.CalledProcessError, OSError):
        return None
    module = types.ModuleType(f"fastjson_{rev}")
    exec(compile(source, f"fastjson@{rev}", "exec"), module.__dict__)  # noqa: S102 - our own file
    return module


def median_us(fn: Callable[[bytes], Any], body: bytes, rounds: int) -> float:
    per_round = max(1, 2_000_000 // max(1, len(body)))
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(per_round):
            fn(body)
        samples.append((time.perf_counter() - start) / per_round * 1e6)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", default="229026b", help="git revision whose decoder is compared")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    base = baseline_module(args.baseline)
    cases = {"consume stats, 16 queues": consume_stats(16), "consume stats, 2,048 queues": consume_stats(2048),
             "cluster info, 8 brokers": cluster_info(8), "consumer connection, 200 clients": connection(200)}
    print(f"{'body':<34}{'bytes':>9}{'this tree':>14}{'@' + args.baseline:>14}{'json.loads plain':>18}")
    for name, (dialect, plain) in cases.items():
        body = dialect.encode()
        if fastjson.loads(body) is None:  # pragma: no cover - keeps the call honest
            raise SystemExit("decoder returned nothing")
        ours = median_us(fastjson.loads, body, args.rounds)
        theirs = median_us(base.loads, body, args.rounds) if base else float("nan")
        floor = median_us(json.loads, plain.encode(), args.rounds)
        mbs = len(body) / ours
        print(f"{name:<34}{len(body):>9}{ours:>10.1f} us{theirs:>11.1f} us{floor:>15.1f} us"
              f"   ({mbs:.1f} MB/s here)")


if __name__ == "__main__":
    main()
