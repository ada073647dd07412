"""TUI test helpers: UTC wall clock, the fake data, screen text at a fixed size, and waits on
conditions (never on time)."""

from __future__ import annotations

import io
import os
import time
from collections.abc import Callable, Iterator

import pytest
from rich.console import Console
from textual.app import App
from textual.pilot import Pilot

from rmqctl.model import GroupView, MessageQueue
from tests.tui.fakesource import make_view, queues

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z
C1, C2 = "10.0.0.1@c1", "10.0.0.2@c2"
Q = queues("TopicTest", 4)
RETRY = MessageQueue("%RETRY%orders", "broker-a", 0)


@pytest.fixture(autouse=True)
def utc() -> Iterator[None]:
    """Times on screen are local; pin local to UTC so rendered text is the same everywhere."""
    before = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    yield
    if before is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = before
    time.tzset()


def orders(step: int, *, sampled_at: int | None = None, retry: bool = False) -> GroupView:
    """c1 holds q0 and q1, c2 holds q3, nobody holds q2; q0 advances 10 per step."""
    offsets = {Q[0]: (100 + 10 * step, 90 + 10 * step), Q[1]: (50, 50), Q[2]: (70, 10),
               Q[3]: (5, 5)}
    held = {C1: [Q[0], Q[1]], C2: [Q[3]]}
    if retry:
        offsets[RETRY] = (3, 1)
        held[C1].append(RETRY)
    return make_view("orders", offsets, held, pull={Q[0]: 95 + 10 * step},
                     sampled_at=T0 + 15_000 * step if sampled_at is None else sampled_at)


def billing(step: int) -> GroupView:
    return make_view("billing", {Q[0]: (10, 10)}, {C1: [Q[0]]}, sampled_at=T0 + 15_000 * step)


def screen_text(app: App[object]) -> str:
    """The current screen as plain text, exactly as a terminal of the app's size shows it."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True,
                      color_system=None, record=True, legacy_windows=False)
    update = app.screen._compositor.render_update(  # noqa: SLF001 - test-only screen grab
        full=True, screen_stack=app._background_screens)  # noqa: SLF001
    console.print(update)
    return "\n".join(line.rstrip() for line in console.export_text().splitlines())


async def settle(app: App[object], pilot: Pilot[object]) -> None:
    """Every worker finished and every message it posted handled."""
    await app.workers.wait_for_complete()
    await pilot.pause()
    await pilot.pause()


async def wait_until(pilot: Pilot[object], condition: Callable[[], bool], rounds: int = 500
                     ) -> None:
    """Process messages until ``condition`` holds; fail after a bounded number of rounds."""
    for _ in range(rounds):
        if condition():
            return
        await pilot.pause()
    raise AssertionError("condition not reached")
