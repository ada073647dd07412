"""The one duration grammar of every time option and config value: ``30`` (seconds), ``30s``,
``5m``, ``1h30m``, ``500ms``, ``1.5h``, ``2d``.

A duration is a plain number of seconds or one or more ``<number><unit>`` parts written together
(units ``ms``, ``s``, ``m``, ``h``, ``d``; any case, surrounding blanks ignored). The command line
(:mod:`rmqctl.cli.durations`), the config file and the Spark job's ``--window`` (written out with
:func:`format_duration`) all read time through here. Imports only the errors module.
"""

from __future__ import annotations

import math
import re

from rmqctl import errors

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_PART = r"(\d+(?:\.\d+)?)(ms|s|m|h|d)"  # compiled when first needed: a plain number needs none
#: what every refusal suggests
GRAMMAR = "seconds, or a duration like 30s, 5m, 1h30m, 500ms"


def duration_seconds(text: str | float) -> float:
    """Seconds in ``text``, by grammar alone: a plain number is taken as it is (negative, zero or
    infinite included: the caller decides what range it accepts). Raises :class:`ValueError`
    naming the text when it is neither a number nor a duration."""
    if isinstance(text, (int, float)):
        return float(text)
    value = text.strip().lower()
    try:
        return float(value)
    except ValueError:
        pass
    parts = re.findall(_PART, value)
    if not parts or "".join(n + u for n, u in parts) != value:
        raise ValueError(f"{text!r} is not a duration: use {GRAMMAR}")
    return sum(float(n) * _UNITS[u] for n, u in parts)


def parse_duration(text: str | float, what: str = "duration") -> float:
    """A positive, finite duration in seconds; raises :class:`~rmqctl.errors.UsageError` naming
    ``what`` otherwise."""
    try:
        seconds = duration_seconds(text)
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or seconds <= 0:
        raise errors.UsageError(f"invalid {what} {text!r}", hint=f"use a positive number of {GRAMMAR}")
    return seconds


def format_duration(seconds: float) -> str:
    """The shortest single-unit spelling of ``seconds`` that reads back exactly: ``5400`` →
    ``90m``, ``1800`` → ``30m``, ``0.5`` → ``500ms``, ``2.25`` → ``2250ms``."""
    ms = round(seconds * 1000)
    if abs(ms - seconds * 1000) < 1e-6:  # whole milliseconds, as the float allows
        for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000)):
            if ms >= size and ms % size == 0:
                return f"{ms // size}{unit}"
        return f"{ms}ms"
    return f"{seconds:.9f}".rstrip("0").rstrip(".") + "s"
