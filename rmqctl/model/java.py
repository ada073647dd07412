"""Java string and version semantics that RocketMQ's wire data depends on.

``String.compareTo`` order (UTF-16 code units), ``String.hashCode`` (the broker's tag code) and
the ``MQVersion.Version`` enum names. Pure functions of the standard library: must not import
anything from rmqctl.
"""

from __future__ import annotations

import functools


@functools.lru_cache(maxsize=4096)
def java_str_key(text: str) -> bytes:
    """Sort key that orders strings like Java's ``String.compareTo`` (UTF-16 code units).

    Cached: sorting queues asks for the same few topic and broker names thousands of times."""
    return text.encode("utf-16-be", "surrogatepass")


def java_string_hash(text: str) -> int:
    """Java ``String.hashCode`` as a signed 32-bit int (the broker's tag code)."""
    h = 0
    data = java_str_key(text)
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def _version_names() -> tuple[str, ...]:
    """The ``MQVersion.Version`` enum in ordinal order (its layout is regular past 3.0.0)."""
    names = ["V3_0_0_SNAPSHOT", "V3_0_0_ALPHA1"]
    names += [f"V3_0_0_BETA{i}" for i in range(1, 6)]
    for i in range(6, 10):
        names += [f"V3_0_0_BETA{i}_SNAPSHOT", f"V3_0_0_BETA{i}"]
    names.append("V3_0_0_FINAL")
    releases = [(3, 0, p) for p in range(1, 16)]
    releases += [(3, m, p) for m in (1, 2) for p in range(10)]
    releases += [(3, m, p) for m in range(3, 10) for p in range(1, 10)]
    releases += [(major, m, p) for major in (4, 5) for m in range(10) for p in range(10)]
    for major, minor, patch in releases:
        names += [f"V{major}_{minor}_{patch}_SNAPSHOT", f"V{major}_{minor}_{patch}"]
    names.append("HIGHER_VERSION")
    return tuple(names)


_VERSION_NAMES = _version_names()


def version_desc(version: int) -> str:
    """``MQVersion.getVersionDesc``: the enum name of an ordinal, clamped to the last entry."""
    if version < 0:
        return f"V{version}"
    return _VERSION_NAMES[min(version, len(_VERSION_NAMES) - 1)]


def version_ordinal(name: str) -> int:
    """Inverse of :func:`version_desc` (``V5_3_3`` → 479); the dashboard reports names only."""
    return _VERSION_NAMES.index(name)
