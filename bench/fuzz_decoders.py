"""Fuzz every decoder with mutated golden frames: exceptions by type, slowest input, peak memory.

Each of N inputs is a golden response frame captured from a real broker (``tests/golden``),
mutated by a few random edits (overwrite, insert, delete, duplicate a slice, splice in a
pathological snippet: deep brackets, long digits, NaN, escaped quotes). The frame goes through
:func:`rmqctl.remoting.frame.decode`; its body (the mutated one, or the original body when the
frame no longer decodes) through :func:`rmqctl.remoting.fastjson.loads` and every body converter of
:mod:`rmqctl.remoting.bodies`. Anything other than a value or ``ProtocolError`` is counted by
exception type; the slowest single input (frame + all decoders; the 20 slowest are re-run five
times and the best time kept, to drop scheduler and GC pauses) and the process's peak RSS are
printed. The target is 0 exceptions outside ``ProtocolError`` and a slowest input under 10 ms.

    python bench/fuzz_decoders.py [-n 1000000] [--seed 1] [--json]
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rmqctl.errors import ProtocolError  # noqa: E402
from rmqctl.remoting import bodies, fastjson, frame  # noqa: E402

DECODERS: list[Callable[[bytes], Any]] = [
    fastjson.loads,
    bodies.cluster_info,
    lambda b: bodies.topic_route("T", b),
    lambda b: bodies.string_list(b, "topicList"),
    lambda b: bodies.topic_stats("T", b),
    bodies.consumer_connection,
    bodies.consume_stats,
    bodies.broker_consume_stats,
    lambda b: bodies.consumer_running_info("c", b),
    bodies.subscription_groups,
    bodies.kv_table,
]

SNIPPETS = [b"[" * 600, b"{" * 600, b"9" * 5000, b"NaN", b"Infinity", b"1e999", b'\\"' * 500, b'"', b"{1:",
            b'{{1:1,"1":"a"}:2}', b"true", b"[]", b"{}", b"null", b"-", b"\xff\xfe", b"\x00\x00\x00\x00"]


def mutate(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 6)):
        pos = rng.randrange(len(out) + 1)
        op = rng.randrange(5)
        if op == 0 and out:
            out[min(pos, len(out) - 1)] = rng.randrange(256)
        elif op == 1:
            out.insert(pos, rng.choice(b'{}[]":,0123456789-.eEtfn \\'))
        elif op == 2 and out:
            del out[min(pos, len(out) - 1)]
        elif op == 3:
            out[pos:pos] = out[pos : pos + rng.randint(1, 64)]
        else:
            out[pos:pos] = rng.choice(SNIPPETS)
    return bytes(out)


def retime(data: bytes, body: bytes, repeat: int = 5) -> float:
    """Best of ``repeat`` runs of one input (frame and body), free of scheduler noise."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        try:
            frame.decode(data)
        except ProtocolError:
            pass
        for decode in DECODERS:
            try:
                decode(body)
            except ProtocolError:
                pass
        best = min(best, time.perf_counter() - t0)
    return best


def run(n: int, seed: int) -> dict[str, Any]:
    golden = [p.read_bytes() for p in sorted((ROOT / "tests" / "golden").rglob("*.bin"))]
    rng = random.Random(seed)
    unexpected: collections.Counter[str] = collections.Counter()
    examples: dict[str, bytes] = {}
    outcomes: collections.Counter[str] = collections.Counter()
    slowest, slowest_input = 0.0, b""
    top: list[tuple[float, bytes, bytes]] = []  # the 20 slowest (observed) inputs and bodies
    started = time.perf_counter()
    for _ in range(n):
        original = rng.choice(golden)
        data = mutate(rng, original)
        t0 = time.perf_counter()
        try:
            body = frame.decode(data).body
            outcomes["frame ok"] += 1
        except ProtocolError:
            outcomes["frame ProtocolError"] += 1
            body = mutate(rng, frame.decode(original).body)
        except Exception as exc:  # noqa: BLE001 - counting is the point
            name = f"frame: {type(exc).__name__}"
            unexpected[name] += 1
            examples.setdefault(name, data)
            body = b""
        for decode in DECODERS:
            try:
                decode(body)
            except ProtocolError:
                outcomes["body ProtocolError"] += 1
            except Exception as exc:  # noqa: BLE001
                name = f"body: {type(exc).__name__}"
                unexpected[name] += 1
                examples.setdefault(name, body)
            else:
                outcomes["body ok"] += 1
        elapsed = time.perf_counter() - t0
        if elapsed > slowest:
            slowest, slowest_input = elapsed, data
        if len(top) < 20 or elapsed > top[-1][0]:
            top.append((elapsed, data, body))
            top.sort(key=lambda t: -t[0])
            del top[20:]
    total = time.perf_counter() - started
    retimed = max((retime(d, b), d) for _, d, b in top)
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    return {
        "inputs": n, "seed": seed, "seconds": round(total, 1), "outcomes": dict(outcomes),
        "unexpected_exceptions": dict(unexpected),
        "unexpected_examples": {k: v[:200].hex() for k, v in examples.items()},
        "slowest_retimed_ms": round(retimed[0] * 1000, 3), "slowest_retimed_bytes": len(retimed[1]),
        "slowest_input_ms": round(slowest * 1000, 3), "slowest_input_bytes": len(slowest_input),
        "slowest_input_head": slowest_input[:80].decode("latin-1"),
        "peak_rss_mib": round(peak_kib / 1024, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=1_000_000, help="how many mutated frames (default 10^6)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    args = parser.parse_args()
    result = run(args.n, args.seed)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"{result['inputs']} mutated golden frames in {result['seconds']} s (seed {result['seed']})")
    for name, count in sorted(result["outcomes"].items()):
        print(f"  {name:22} {count}")
    print(f"exceptions other than ProtocolError: {sum(result['unexpected_exceptions'].values())}")
    for name, count in sorted(result["unexpected_exceptions"].items()):
        print(f"  {name:22} {count}  e.g. {result['unexpected_examples'][name][:80]}")
    print(f"slowest input, best of 5 re-runs of the 20 slowest: {result['slowest_retimed_ms']} ms "
          f"({result['slowest_retimed_bytes']} bytes)")
    print(f"slowest input as observed (with GC and scheduler pauses): {result['slowest_input_ms']} ms "
          f"({result['slowest_input_bytes']} bytes) "
          f"{result['slowest_input_head']!r}")
    print(f"peak memory (process max RSS): {result['peak_rss_mib']} MiB")


if __name__ == "__main__":
    main()
