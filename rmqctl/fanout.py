"""Run one read against many brokers and keep every broker's error beside the others' results.

The helper behind every multi-broker read: a dead broker never hides the others' data and never
vanishes silently; its :class:`~rmqctl.errors.RmqctlError` is kept under its name. Concurrency is
bounded by whoever performs the reads (the remoting client's semaphore, the dashboard client's).

Imports only :mod:`rmqctl.errors`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import TypeVar

from rmqctl import errors

T = TypeVar("T")


async def fan_out(
    targets: Mapping[str, str], fn: Callable[[str], Awaitable[T]]
) -> tuple[dict[str, T], dict[str, errors.RmqctlError]]:
    """Run ``fn(address)`` for every ``name → address``; return results and per-name errors."""

    async def one(address: str) -> T | errors.RmqctlError:
        try:
            return await fn(address)
        except errors.RmqctlError as exc:
            return exc

    names = list(targets)
    # The last target's read runs in this task and every other one in a task of its own: a round
    # of the exporter over a two-broker cluster fans out 6,000 times, each time with a task and a
    # gather fewer this way.
    others = [asyncio.ensure_future(one(targets[n])) for n in names[:-1]]
    try:
        last = [await one(targets[names[-1]])] if names else []
        outcomes = [*[await task for task in others], *last]
    except BaseException:  # cancelled, or a bug: no read is left running behind the caller
        for task in others:
            task.cancel()
        raise
    results: dict[str, T] = {}
    failures: dict[str, errors.RmqctlError] = {}
    for name, outcome in zip(names, outcomes, strict=True):
        if isinstance(outcome, errors.RmqctlError):
            failures[name] = outcome
        else:
            results[name] = outcome
    return results, failures
