"""The dashboard driven by Pilot at 120x40 over an in-memory source that changes between polls."""

from __future__ import annotations

import asyncio
from dataclasses import replace

from rich.text import Text

from rmqctl import errors
from rmqctl.model import GroupView
from tests.tui.conftest import T0, billing, orders, screen_text, settle, wait_until
from tests.tui.fakesource import FakeSource
from tui.app import RmqctlApp, TuiSettings, make_app
from tui.screens import GroupScreen, GroupsScreen, HelpScreen
from tui.widgets import KeyedTable, PromptBar, StatusLine

SIZE = (120, 40)
NOW = T0 / 1000


def app_for(source: FakeSource, **overrides: object) -> RmqctlApp:
    # a poll only happens when a test asks for one: the interval is an hour
    settings = TuiSettings(interval=3600, clock=lambda: NOW, cursor_blink=False,
                           **overrides)  # type: ignore[arg-type]
    return make_app(source, settings)


def cells(table: KeyedTable, column: str) -> list[str]:
    return [c.plain if isinstance(c, Text) else c for c in table.column_values(column)]


def status(app: RmqctlApp) -> str:
    return str(app.screen.query_one(StatusLine).render())


async def test_overview_lists_every_group_with_lag_and_findings() -> None:
    app = app_for(FakeSource([orders(0), billing(0)]))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        table = app.screen.query_one("#groups", KeyedTable)
        assert cells(table, "group") == ["billing", "orders"]
        assert cells(table, "lag") == ["0", "70"]
        assert cells(table, "unowned") == ["0", "1"]
        assert cells(table, "findings") == ["-", "1E 1W"]
        assert cells(table, "problem")[1].startswith("ORPHANED_QUEUES: 1 queue(s) of orders")
        assert status(app) == "fake source | updated 00:00:00 | every 3600s"


async def test_navigation_enter_escape_command_line_and_help() -> None:
    app = app_for(FakeSource([orders(0), billing(0)]))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("down", "enter")
        await settle(app, pilot)
        assert isinstance(app.screen, GroupScreen) and app.screen.group == "orders"
        await pilot.press("escape")
        await settle(app, pilot)
        assert isinstance(app.screen, GroupsScreen)
        # k9s ':' switches views; a bare group name works too
        await pilot.press("colon", *"group billing", "enter")
        await settle(app, pilot)
        assert isinstance(app.screen, GroupScreen) and app.screen.group == "billing"
        await pilot.press("colon", *"orders", "enter")
        await settle(app, pilot)
        assert isinstance(app.screen, GroupScreen) and app.screen.group == "orders"
        assert len(app.screen_stack) == 2  # one detail at a time, not a growing stack
        await pilot.press("colon", *"nonsense", "enter")
        await pilot.pause()
        assert status(app).startswith("poll failed: unknown view: nonsense")
        await pilot.press("colon", *"groups", "enter")
        await settle(app, pilot)
        assert isinstance(app.screen, GroupsScreen)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        keys = {(row[0], row[2]) for row in app.screen.rows}
        assert {("/", "filter"), (":", "command"), ("esc", "back"), ("q", "quit"),
                ("? f1", "help"), ("r", "refresh"), ("p", "pause")} <= keys
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, GroupsScreen)
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 0


async def test_filter_is_a_regex_and_bang_inverts_it() -> None:
    views = [orders(0), billing(0), orders(0, sampled_at=T0)]
    views[2] = replace(views[2], group="orders-eu")
    app = app_for(FakeSource(views))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        table = app.screen.query_one("#groups", KeyedTable)
        await pilot.press("slash", *"^ord.*-eu", "enter")
        assert cells(table, "group") == ["orders-eu"]
        assert status(app).endswith("filter /^ord.*-eu")
        await pilot.press("slash", "ctrl+u", *"!^orders", "enter")
        assert cells(table, "group") == ["billing"]
        await pilot.press("escape")  # clears the filter; rows come back in their order
        assert cells(table, "group") == ["billing", "orders", "orders-eu"]
        await pilot.press("slash", *"orders[", "enter")  # not a regex: matched literally
        assert cells(table, "group") == []
        assert status(app).endswith("filter /orders[ (literal)")
        await pilot.press("escape")
        # the filter also applies to the queue table of a group
        await pilot.press("colon", *"group orders", "enter")
        await settle(app, pilot)
        await pilot.press("slash", *"nobody", "enter")
        assert app.screen.query_one("#queues", KeyedTable).row_count == 1
        await pilot.press("slash", "ctrl+u", *"!nobody", "enter")
        assert cells(app.screen.query_one("#queues", KeyedTable), "queue_id") == ["0", "1", "3"]


async def test_refresh_updates_cells_in_place_and_keeps_the_cursor_on_its_row() -> None:
    source = FakeSource([orders(0), billing(0)])
    app = app_for(source)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("colon", *"group orders", "enter")
        await settle(app, pilot)
        table = app.screen.query_one("#queues", KeyedTable)
        await pilot.press("down", "down")
        assert table.cursor_key == "TopicTest/broker-a/2"
        # next poll: q0 advanced and a retry queue appeared, sorting before the cursor row
        source.set_views([orders(1, retry=True), billing(1)])
        await pilot.press("r")
        await settle(app, pilot)
        assert cells(table, "topic")[0] == "%RETRY%orders"
        assert cells(table, "consumer_offset")[1:] == ["100", "50", "10", "5"]
        assert cells(table, "inflight")[1] == "5"
        assert table.cursor_key == "TopicTest/broker-a/2"
        assert table.cursor_row == 3
        clients = app.screen.query_one("#clients", KeyedTable)
        assert cells(clients, "held") == ["%RETRY%orders@broker-a[0] TopicTest@broker-a[0,1]",
                                          "TopicTest@broker-a[3]", "TopicTest@broker-a[2]"]
        assert cells(clients, "client") == ["10.0.0.1@c1", "10.0.0.2@c2", "(nobody)"]
        # the overview keeps its cursor on 'orders' when a group appears above it
        await pilot.press("escape")
        await settle(app, pilot)
        groups = app.screen.query_one("#groups", KeyedTable)
        await pilot.press("down")
        assert groups.cursor_key == "orders"
        source.set_views([orders(2), billing(2),
                          replace(billing(2), group="accounts")])
        await pilot.press("r")
        await settle(app, pilot)
        assert cells(groups, "group") == ["accounts", "billing", "orders"]
        assert groups.cursor_key == "orders" and groups.cursor_row == 2
        assert cells(groups, "lag") == ["0", "0", "70"]


async def test_a_failed_poll_shows_in_the_status_line_and_keeps_the_last_data() -> None:
    source = FakeSource([orders(0), billing(0)])
    app = app_for(source)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        source.fail_with = errors.ConnectionError("cannot connect to 127.0.0.1:9876")
        await pilot.press("r")
        await settle(app, pilot)
        assert status(app) == ("poll failed: cannot connect to 127.0.0.1:9876 | fake source | "
                               "updated 00:00:00 | every 3600s")
        assert app.screen.query_one(StatusLine).has_class("-error")
        assert cells(app.screen.query_one("#groups", KeyedTable), "group") == ["billing", "orders"]
        # not even an unexpected exception takes the app down
        source.fail_with = RuntimeError("boom")
        await pilot.press("r")
        await settle(app, pilot)
        assert status(app).startswith("poll failed: boom |")
        source.fail_with = None
        await pilot.press("r")
        await settle(app, pilot)
        assert status(app) == "fake source | updated 00:00:00 | every 3600s"
        assert not app.screen.query_one(StatusLine).has_class("-error")
        # a group that disappears: the detail screen says so and stays usable
        await pilot.press("colon", *"group ghost", "enter")
        await settle(app, pilot)
        assert status(app).startswith("poll failed: consumer group 'ghost' does not exist |")
        await pilot.press("escape")
        await settle(app, pilot)
        assert isinstance(app.screen, GroupsScreen)


async def test_watched_groups_that_fail_keep_their_row() -> None:
    app = app_for(FakeSource([orders(0)]), groups=("orders", "ghost"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        table = app.screen.query_one("#groups", KeyedTable)
        assert cells(table, "group") == ["orders", "ghost"]
        assert cells(table, "problem")[1] == "unavailable: consumer group 'ghost' does not exist"
        assert str(app.screen.query_one("#title").render()) == \
            "Consumer groups (2/2) - 1 source error(s)"


async def test_lag_not_advancing_needs_an_earlier_sample_old_enough() -> None:
    source = FakeSource([orders(0)])
    app = app_for(source, groups=("orders",))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("enter")
        await settle(app, pilot)
        findings = app.screen.query_one("#findings", KeyedTable)
        assert "LAG_NOT_ADVANCING" not in cells(findings, "code")
        # 2 s later q2 got messages, nothing consumed: too close to judge (offsets persist
        # every 5 s, so a consumer that is fine can look frozen over 2 s)
        source.set_views([with_q2(T0 + 2_000, broker_offset=90)])
        await pilot.press("r")
        await settle(app, pilot)
        assert "LAG_NOT_ADVANCING" not in cells(findings, "code")
        assert str(app.screen.query_one("#findings-title").render()) == "Findings (2)"
        # 13 s after that sample, more messages and still nothing consumed
        source.set_views([with_q2(T0 + 15_000, broker_offset=110)])
        await pilot.press("r")
        await settle(app, pilot)
        assert cells(findings, "code") == ["ORPHANED_QUEUES", "LAG_NOT_ADVANCING",
                                           "UNEVEN_ALLOCATION"]
        assert str(app.screen.query_one("#findings-title").render()) == \
            "Findings (3), lag compared with 00:00:02"


def with_q2(sampled_at: int, broker_offset: int) -> GroupView:
    view = orders(0, sampled_at=sampled_at)
    progress = tuple(p if p.queue.queue_id != 2 else replace(p, broker_offset=broker_offset)
                     for p in view.progress)
    return replace(view, progress=progress)


class GatedSource(FakeSource):
    """Each group_view waits for a permit, so a test controls when a poll finishes."""

    def __init__(self, views: list[GroupView]) -> None:
        super().__init__(views)
        self.permits = asyncio.Semaphore(0)

    async def group_view(self, group: str, *, running_info: bool = True) -> GroupView:
        self.calls.append(f"group_view:{group}")
        await self.permits.acquire()
        return self.views[group]


async def test_next_poll_starts_only_after_the_previous_one_finished() -> None:
    source = GatedSource([orders(0)])
    app = make_app(source, TuiSettings(groups=("orders",), interval=0.0, clock=lambda: NOW,
                                       cursor_blink=False))
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: source.calls == ["group_view:orders"])
        for _ in range(20):  # however long the poll takes, no second request is sent
            await pilot.pause()
        assert source.calls == ["group_view:orders"]
        await pilot.press("r")  # a manual refresh waits for the poll in flight, never aborts it
        for _ in range(20):
            await pilot.pause()
        assert source.calls == ["group_view:orders"]
        assert app.screen.query_one("#groups", KeyedTable).row_count == 0
        source.permits.release()
        await wait_until(pilot, lambda: len(source.calls) == 2)
        await wait_until(pilot, lambda: app.screen.query_one("#groups", KeyedTable).row_count == 1)
        assert source.calls == ["group_view:orders"] * 2
        # pausing stops the schedule after the poll in flight
        await pilot.press("p")
        source.permits.release()
        await wait_until(pilot, lambda: not app.workers._workers)  # noqa: SLF001
        for _ in range(20):
            await pilot.pause()
        assert len(source.calls) == 2
        assert status(app).endswith("| paused")


async def test_bindings_can_be_remapped_by_id() -> None:
    app = app_for(FakeSource([orders(0)]), keymap={"quit": "x"})
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("q")
        await pilot.pause()
        assert app.is_running
        await pilot.press("x")
        await pilot.pause()
    assert app.return_code == 0


async def test_prompt_keeps_printable_keys_for_itself() -> None:
    app = app_for(FakeSource([orders(0)]))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("slash", "q", "question_mark", "colon")
        assert app.screen.query_one(PromptBar).value == "q?:"
        assert app.is_running and isinstance(app.screen, GroupsScreen)
        await pilot.press("escape")
        assert not app.screen.query_one(PromptBar).is_open
