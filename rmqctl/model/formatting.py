"""Display formatting of model values for people (tables, TUI cells), never for documents.

Machine-readable documents keep the raw values (epoch milliseconds, ``null``); these helpers turn
them into text at the edge. Must not import anything from rmqctl.
"""

from __future__ import annotations

import datetime as _dt


def format_millis(ts: int | None) -> str:
    """Render epoch milliseconds as local ``YYYY-MM-DD HH:MM:SS`` (``N/A`` for 0/None)."""
    if not ts:
        return "N/A"
    try:
        return _dt.datetime.fromtimestamp(ts / 1000).strftime("%Y-%m-%d %H:%M:%S")
    except (OverflowError, ValueError, OSError):  # Long.MAX_VALUE and other dates no calendar holds
        return f"out of range ({ts})"


def unpullable_reason(topic: str, broker: str) -> str:
    """Why a held queue of ``topic`` on ``broker`` cannot be pulled (see ``GroupView.unpullable``)."""
    return (f"{topic} is missing from {broker}'s subscription table of the group: pulls fail with "
            "'the consumer's subscription not exist' (24)")
