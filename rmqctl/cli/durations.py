"""Time options on the command line: every one of them (``--timeout``, ``--interval``,
``--watch``, ``--every``, ``--duration``, ``--roll``, ``--window``, ``--at``, ``--idle-timeout``
…) reads the one grammar of :mod:`rmqctl.durations` through :func:`duration_parser`, handed to
``typer.Option(parser=...)`` (Typer's public API).

A value that is not a duration, or out of the option's range, is a command-line mistake like
any other: one ``rmqctl: error: Invalid value for '--every': ...`` line, a hint, exit 2.
Must not import the core beyond ``rmqctl.durations``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import typer

from rmqctl.durations import duration_seconds, format_duration, parse_duration

__all__ = ["DURATION", "duration_parser", "format_duration", "parse_duration"]

#: the metavar of a time option in help
DURATION = "DURATION"


def duration_parser(*, above: float | None = 0.0, at_least: float | None = None) -> Callable[[str | float], float]:
    """A ``parser=`` for a time option: seconds as a float. ``above`` (exclusive) and ``at_least``
    (inclusive) bound it; ``above=None`` and ``at_least=None`` leave the range to the option's
    callback (``--timeout`` names its own limits)."""

    def parse(text: str | float) -> float:
        try:
            seconds = duration_seconds(text)
        except ValueError as exc:
            raise typer.BadParameter(str(exc)) from None
        shown = text if isinstance(text, str) else f"{text:g}"
        if above is not None and not (math.isfinite(seconds) and seconds > above):
            limit = "0" if above == 0 else format_duration(above)
            raise typer.BadParameter(f"{shown!r} must be a finite duration above {limit}")
        if at_least is not None and not (math.isfinite(seconds) and seconds >= at_least):
            limit = "0" if at_least == 0 else format_duration(at_least)
            raise typer.BadParameter(f"{shown!r} must be a finite duration of at least {limit}")
        return seconds

    return parse
