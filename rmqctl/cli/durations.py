"""Parse the durations operators type: ``30s``, ``15m``, ``1h``, ``1h30m``, ``500ms`` or plain seconds.

Imports only the errors module.
"""

from __future__ import annotations

import math
import re

from rmqctl import errors

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")


def parse_duration(text: str, what: str = "duration") -> float:
    """Seconds in ``text``; raises :class:`~rmqctl.errors.UsageError` naming ``what``."""
    value = text.strip().lower()
    seconds: float | None = None
    try:
        seconds = float(value)
    except ValueError:
        parts = _PART.findall(value)
        if parts and "".join(n + u for n, u in parts) == value:
            seconds = sum(float(n) * _UNITS[u] for n, u in parts)
    if seconds is None or not math.isfinite(seconds) or seconds <= 0:
        raise errors.UsageError(
            f"invalid {what} {text!r}",
            hint="use a positive number of seconds or a duration like 30s, 15m, 1h, 1h30m",
        )
    return seconds
