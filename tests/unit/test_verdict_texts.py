"""No verdict promises the future: the texts the doctor, ``analyze stuck``, the exporter and the TUI
show say what was seen, never that a queue heals, recovers or catches up by itself.

A stuck queue's offsets cannot tell a slow message from a hung listener, and nothing the tools read
says what a client will do next; a sentence that promises it reads as healthy when it is not.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: where verdict and finding texts are written
TEXT_SOURCES = ("rmqctl/doctor", "rmqctl/exporter", "rmqctl/stuck.py", "analysis", "tui")

PROMISE = re.compile(
    r"\bheal(s|ed|ing)?\b|\bwill (recover|resume|heal|catch up|move on|clear)\b|"
    r"\brecovers? (once|within|after|when|by itself)\b|\bresolves? (itself|on its own)\b|"
    r"\bcatch(es)? up (within|by itself|on its own)\b", re.IGNORECASE)


def sources() -> list[Path]:
    out: list[Path] = []
    for name in TEXT_SOURCES:
        path = ROOT / name
        out += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return out


def test_the_text_sources_are_there() -> None:
    found = sources()
    assert len(found) > 20
    assert all(p.exists() for p in found)


def test_no_verdict_or_finding_text_promises_what_comes_next() -> None:
    promises = [f"{p.relative_to(ROOT)}:{n}: {line.strip()}" for p in sources()
                for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if PROMISE.search(line)]
    assert promises == []


def test_the_pattern_catches_the_promises_it_is_for() -> None:
    for text in ("LAGGING: heals within consumeTimeout 15m00s", "Orderly queues recover once the lock expires",
                 "the consumer will catch up", "it resolves itself"):
        assert PROMISE.search(text), text
    for text in ("healthy", "a rewind that recovered is not REWOUND", "caught up: lag 0"):
        assert not PROMISE.search(text), text
