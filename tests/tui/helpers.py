"""Hand-built group views and a bounded wait for the TUI tests."""

from __future__ import annotations

import io
import time
from collections.abc import Callable, Mapping, Sequence

from rich.console import Console
from textual.pilot import Pilot
from textual.widgets import Static

from rmqctl.model import (
    ClientConnection,
    ConsumerRunningInfo,
    GroupView,
    MessageQueue,
    ProcessQueueInfo,
    QueueProgress,
    parse_tag_expression,
)
from tests.fake_source import FakeClock, FakeSource, opened
from tui import RmqctlApp, TuiSettings, make_app

START = 1_704_067_200.0  # FakeClock's default start, 2024-01-01 00:00:00 UTC


def make_view(
    group: str = "orders",
    *,
    topic: str = "Orders",
    broker: str = "broker-a",
    queues: int = 4,
    held: Mapping[str, Sequence[int]] | None = None,
    offsets: Mapping[int, tuple[int, int]] | None = None,
    client_expr: Mapping[str, str] | None = None,
    broker_expr: str = "*",
    last_ts_ms: int = int(START * 1000) - 5_000,
    strategy: str = "AllocateMessageQueueAveragely",
    cached: Mapping[int, int] | None = None,
) -> GroupView:
    """A clustering group on one topic: ``held`` maps client id → queue ids it reports holding,
    ``offsets`` queue id → (broker offset, consumer offset) (default 100/100), ``cached`` queue
    id → messages its holder has pulled and not yet consumed (default none: a holder caching
    nothing may be waiting on a pull the broker holds back for its filter)."""
    held = {"10.0.0.1@a": [0, 1], "10.0.0.2@b": [2, 3]} if held is None else held
    offsets = offsets or {}
    mqs = [MessageQueue(topic, broker, q) for q in range(queues)]
    owner = {q: cid for cid, qs in held.items() for q in qs}
    progress = tuple(
        QueueProgress(mq, offsets.get(mq.queue_id, (100, 100))[0], offsets.get(mq.queue_id, (100, 100))[1],
                      None, last_ts_ms, owner.get(mq.queue_id))
        for mq in mqs
    )
    infos = {
        cid: ConsumerRunningInfo(
            cid,
            {"PROP_CONSUME_TYPE": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
             "allocateMessageQueueStrategy": f"org.apache.rocketmq.client.consumer.rebalance.{strategy}@1a2b"},
            (parse_tag_expression(topic, (client_expr or {}).get(cid, broker_expr)),),
            {MessageQueue(topic, broker, q): ProcessQueueInfo(cached_msg_count=(cached or {}).get(q, 0)) for q in qs},
        )
        for cid, qs in held.items()
    }
    return GroupView(
        group=group,
        connections=tuple(ClientConnection(cid, f"10.0.0.{n + 1}:5{n}000", "JAVA", 479)
                          for n, cid in enumerate(sorted(held))),
        broker_subscriptions={broker: {topic: parse_tag_expression(topic, broker_expr)}},
        running_infos=infos,
        progress=progress,
        consume_type="CONSUME_PASSIVELY",
        message_model="CLUSTERING",
        topic_queues={topic: tuple(mqs)},
    )


def fake_app(views: Sequence[GroupView], *, settings: TuiSettings | None = None,
             clock: FakeClock | None = None) -> tuple[RmqctlApp, FakeSource, FakeClock]:
    source = FakeSource()
    for view in views:
        source.set_view(view)
    clock = clock or FakeClock(START)
    # a long interval: the timer never fires during a test; polls happen on `r`
    app = make_app(opened(source, clock), settings or TuiSettings(interval=3600))
    return app, source, clock


async def wait_for(pilot: Pilot[None], predicate: Callable[[], object], *, timeout: float = 10.0,
                   what: str = "condition") -> None:
    """Let the app run until ``predicate()`` holds (bounded by ``timeout`` seconds)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause()


async def poll_now(pilot: Pilot[None], app: RmqctlApp) -> None:
    """Press ``r`` and wait until that poll has been handled."""
    done = app.polls_done
    await pilot.press("r")
    await wait_for(pilot, lambda: app.polls_done > done and not app.polling, what="a poll")


def shown_text(widget: Static, width: int = 120) -> str:
    """What a Static shows, as plain text at ``width`` columns."""
    console = Console(width=width, file=io.StringIO(), color_system=None)
    console.print(widget.content)
    return console.file.getvalue()  # type: ignore[attr-defined]
