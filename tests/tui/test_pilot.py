"""The dashboard driven by Pilot against a FakeSource and a FakeClock (no sleeps)."""

from __future__ import annotations

from dataclasses import replace

from rich.text import Text
from textual.message import Message
from textual.widgets import Static

from rmqctl import errors
from rmqctl.model import GroupView
from tests.tui.helpers import START, fake_app, make_view, poll_now, shown_text, wait_for
from tui import TuiSettings
from tui.messages import PollFailed, RoundLoaded
from tui.screens import FindingsScreen, GroupScreen, GroupsScreen, HelpScreen, WhatIfScreen
from tui.widgets import KeyedTable, StatusLine, Timeline


def plain(cell: object) -> str:
    """A cell's shown text (cells hold typed values and render them when drawn)."""
    return cell.plain if isinstance(cell, Text) else str(cell)


def row(table: KeyedTable, key: str) -> list[str]:
    """What the table itself holds for ``key`` (its visible cells), not what it was given."""
    return [plain(c) for c in table.get_row(key)]


def status(app: object) -> str:
    return str(app.screen.query_one(StatusLine).render())  # type: ignore[attr-defined]


async def test_first_poll_posts_a_round_and_fills_the_groups_table() -> None:
    views = [make_view("orders", offsets={0: (120, 100)}), make_view("payments", held={"10.0.0.9@p": [0, 1, 2, 3]})]
    app, source, _ = fake_app(views)
    messages: list[Message] = []
    async with app.run_test(size=(160, 30), message_hook=messages.append) as pilot:
        await wait_for(pilot, lambda: app.polls_done == 1, what="the first poll")
        loaded = [m for m in messages if isinstance(m, RoundLoaded)]
        assert len(loaded) == 1 and loaded[0].round.number == 1
        assert sorted(loaded[0].round.current.views) == ["orders", "payments"]
        table = app.screen.query_one("#groups-table", KeyedTable)
        assert [r.key.value for r in table.ordered_rows] == ["orders", "payments"]
        # group, health, clients, queues, lag (trend and tps also fit at 160 columns)
        assert row(table, "orders")[:5] == ["orders", "ok", "2", "4", "20"]
        assert row(table, "payments")[:5] == ["payments", "ok", "1", "4", "0"]
        assert "fake cluster" in status(app) and "updated 0 s ago" in status(app)


async def test_cursor_sort_and_filter_survive_a_refresh() -> None:
    views = [make_view(g) for g in ("alpha", "bravo", "charlie", "delta")]
    app, source, clock = fake_app(views)
    async with app.run_test(size=(160, 30)) as pilot:
        await wait_for(pilot, lambda: app.polls_done == 1)
        table = app.screen.query_one("#groups-table", KeyedTable)
        await pilot.press("j", "j")  # cursor on charlie
        assert table.current_key() == "charlie"
        # charlie's lag grows and a new group appears in front of it: the cursor stays on charlie
        source.set_view(make_view("charlie", offsets={0: (500, 100)}))
        source.set_view(make_view("aardvark"))
        clock.advance(2)
        await poll_now(pilot, app)
        assert table.current_key() == "charlie"
        assert row(table, "charlie")[4] == "400"
        assert [r.key.value for r in table.ordered_rows] == ["aardvark", "alpha", "bravo", "charlie", "delta"]
        # sort by lag, descending: charlie first, cursor still on it after another refresh
        table.sort_by("lag")
        table.sort_by("lag")
        assert table.ordered_rows[0].key.value == "charlie"
        source.set_view(make_view("bravo", offsets={1: (200, 100)}))
        await poll_now(pilot, app)
        assert [r.key.value for r in table.ordered_rows][:2] == ["charlie", "bravo"]
        assert table.current_key() == "charlie"
        # filter: regex, then inverted; the cursor row survives while it matches
        await pilot.press("slash", *"^(c|d)")
        await wait_for(pilot, lambda: table.row_count == 2, what="the filter")
        await pilot.press("enter")
        assert {r.key.value for r in table.ordered_rows} == {"charlie", "delta"}
        await poll_now(pilot, app)
        assert {r.key.value for r in table.ordered_rows} == {"charlie", "delta"}
        assert table.current_key() == "charlie"
        await pilot.press("slash", "ctrl+a", "!", "enter")
        assert {r.key.value for r in table.ordered_rows} == {"aardvark", "alpha", "bravo"}
        await pilot.press("escape")  # clears the filter
        assert table.row_count == 5


async def test_a_failing_source_shows_in_the_status_line_and_the_tui_keeps_running() -> None:
    app, source, _ = fake_app([make_view("orders")])
    messages: list[Message] = []
    async with app.run_test(size=(160, 30), message_hook=messages.append) as pilot:
        await wait_for(pilot, lambda: app.polls_done == 1)
        source.fail("*", errors.ConnectionError("cannot connect to 127.0.0.1:9876"))
        await poll_now(pilot, app)
        assert any(isinstance(m, PollFailed) for m in messages)
        assert "poll: cannot connect to 127.0.0.1:9876" in status(app)
        assert app.screen.query_one(StatusLine).has_class("-error")
        # the last good rows stay on screen
        assert app.screen.query_one("#groups-table", KeyedTable).row_count == 1
        # one broker down: a partial view, and the broker named in the status line
        source.fail("*", None)
        source.broker_errors["broker-b"] = errors.ConnectionError("connection refused")
        await poll_now(pilot, app)
        assert "broker-b: connection refused" in status(app) and "poll:" not in status(app)
        # one group unreadable: its row says so
        source.broker_errors.clear()
        source.fail("orders", errors.TimeoutError("no answer within 5s"))
        await poll_now(pilot, app)
        table = app.screen.query_one("#groups-table", KeyedTable)
        assert row(table, "orders")[1] == "unreadable"
        source.fail("orders", None)
        await poll_now(pilot, app)
        assert row(table, "orders")[1] == "ok" and "errors" not in status(app)
        assert app.is_running


async def test_pause_stops_scheduling_and_resume_polls_again() -> None:
    app, source, _ = fake_app([make_view("orders")], settings=TuiSettings(interval=0.05))
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: app.polls_done >= 2, what="timer-driven polls")
        await pilot.press("p")
        await wait_for(pilot, lambda: not app.polling)
        assert app.paused and app._next_poll is None and "PAUSED" in status(app)
        calls = source.calls
        done = app.polls_done
        await pilot.press("p")
        await wait_for(pilot, lambda: app.polls_done >= done + 2, what="polls after resuming")
        assert source.calls > calls and "PAUSED" not in status(app)


async def test_group_view_highlights_moves_and_logs_the_rebalance() -> None:
    before = make_view("orders", held={"10.0.0.1@a": [0, 1], "10.0.0.2@b": [2, 3]},
                       offsets={0: (150, 100), 2: (130, 100)})
    app, source, clock = fake_app([before])
    async with app.run_test(size=(180, 40)) as pilot:
        await wait_for(pilot, lambda: app.polls_done == 1)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, GroupScreen))
        table = app.screen.query_one("#queues", KeyedTable)
        assert row(table, "Orders|broker-a|0")[3] == "10.0.0.1@a"
        assert row(table, "Orders|broker-a|0")[-1] == "?"  # backlog, one poll: not judged yet
        # b leaves: a takes queues 2 and 3; a moved queue 0 forward, queue 2 did not move
        # (a pulled queue 2's backlog and holds it unconsumed: stalled, not a filtered wait)
        after = make_view("orders", held={"10.0.0.1@a": [0, 1, 2, 3]},
                          offsets={0: (150, 120), 2: (130, 100), 3: (100, 100)}, cached={2: 30})
        source.set_view(after)
        clock.advance(2)
        await pilot.press("j")  # cursor on queue 1
        await poll_now(pilot, app)
        assert table.current_key() == "Orders|broker-a|1"
        owner = table.get_row("Orders|broker-a|2")[3].cell()
        assert isinstance(owner, Text) and owner.plain == "10.0.0.1@a" and "reverse" in str(owner.style)
        assert isinstance(table.get_row("Orders|broker-a|0")[3].cell(), str)  # unchanged owner: not lit
        statuses = {q: row(table, f"Orders|broker-a|{q}")[-1] for q in range(4)}
        assert statuses == {0: "moving", 1: "idle", 2: "stalled", 3: "idle"}
        timeline = app.screen.query_one(Timeline)
        text = " ".join(timeline.entries)
        assert "00:00:02 10.0.0.2@b left — 2 queues moved:" in text
        assert "broker-a/Orders/2: 10.0.0.2@b → 10.0.0.1@a" in text
        # a few seconds later the highlight is gone
        clock.advance(10)
        await poll_now(pilot, app)
        assert isinstance(table.get_row("Orders|broker-a|2")[3].cell(), str)


async def test_client_layout_marks_idle_clients_and_conflicting_subscriptions() -> None:
    view = make_view("orders", held={"10.0.0.1@a": [0, 1, 2, 3], "10.0.0.2@b": []},
                     client_expr={"10.0.0.1@a": "TagA", "10.0.0.2@b": "TagB"}, broker_expr="TagB")
    app, _, _ = fake_app([view], settings=TuiSettings(group="orders", interval=3600))
    async with app.run_test(size=(180, 40)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, GroupScreen) and app.polls_done == 1)
        await pilot.press("l")
        table = app.screen.query_one("#clients", KeyedTable)
        await wait_for(pilot, lambda: table.row_count == 2)
        a, b = row(table, "10.0.0.1@a"), row(table, "10.0.0.2@b")
        assert a[:5] == ["10.0.0.1@a", "4", "Orders=TagA", "", "Orders: broker has 'TagB'"]
        assert b[:5] == ["10.0.0.2@b", "0", "Orders=TagB", "idle", ""]


async def test_findings_view_shows_the_doctors_findings_with_detail() -> None:
    # three clients, two queues: one client is idle
    view = make_view("orders", queues=2, held={"10.0.0.1@a": [0], "10.0.0.2@b": [1], "10.0.0.3@c": []})
    app, _, _ = fake_app([view], settings=TuiSettings(group="orders", interval=3600))
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(pilot, lambda: app.polls_done == 1 and isinstance(app.screen, GroupScreen))
        await pilot.press("f")
        await wait_for(pilot, lambda: isinstance(app.screen, FindingsScreen))
        table = app.screen.query_one("#findings", KeyedTable)
        codes = [plain(table.get_row(r.key)[1]) for r in table.ordered_rows]
        assert "IDLE_CONSUMERS" in codes
        await wait_for(pilot, lambda: "10.0.0.3@c" in shown_text(app.screen.query_one("#detail", Static)))
        detail = shown_text(app.screen.query_one("#detail", Static))
        assert "Evidence" in detail and "Fix" in detail
        await pilot.press("escape")
        assert isinstance(app.screen, GroupScreen)


async def test_what_if_adding_a_client_lists_the_moves() -> None:
    app, _, _ = fake_app([make_view("orders")], settings=TuiSettings(group="orders", interval=3600))
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(pilot, lambda: app.polls_done == 1 and isinstance(app.screen, GroupScreen))
        await pilot.press("w")
        await wait_for(pilot, lambda: isinstance(app.screen, WhatIfScreen))
        table = app.screen.query_one("#whatif", KeyedTable)
        await wait_for(pilot, lambda: table.row_count == 2)
        assert "0 queue(s) would move" in str(app.screen.query_one("#moves").render())
        app.screen.query_one("#add-client").value = "10.0.0.3@c"
        await wait_for(pilot, lambda: table.row_count == 3)
        # AVG, 4 queues over a, b, c: a gets 0 and 1, b gets 2, c gets 3
        assert row(table, "10.0.0.1@a")[1:6] == ["2", "broker-a/0 broker-a/1", "2", "broker-a/0 broker-a/1", ""]
        assert row(table, "10.0.0.2@b")[3:6] == ["1", "broker-a/2", "moves"]
        assert row(table, "10.0.0.3@c")[1:6] == ["0", "", "1", "broker-a/3", "new"]
        moves = str(app.screen.query_one("#moves").render())
        assert "AVG on Orders: 1 queue(s) would move" in moves and "broker-a/3: 10.0.0.2@b → 10.0.0.3@c" in moves


async def test_command_line_switches_views_and_help_lists_keys() -> None:
    app, _, _ = fake_app([make_view("orders")])
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(pilot, lambda: app.polls_done == 1)
        await pilot.press("colon", *"clients", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, GroupScreen))
        assert app.screen.view_layout == "clients"  # type: ignore[attr-defined]
        await pilot.press("colon", *"groups", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, GroupsScreen))
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, GroupsScreen))
        await pilot.press("q")
        await wait_for(pilot, lambda: not app.is_running, what="quit")


async def test_keys_are_remapped_by_binding_id() -> None:
    app, _, _ = fake_app([make_view("orders")], settings=TuiSettings(interval=3600, keys={"pause": "space"}))
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: app.polls_done == 1)
        await pilot.press("p")
        assert not app.paused
        await pilot.press("space")
        assert app.paused


async def test_columns_drop_by_priority_when_narrow_and_all_show_when_wide() -> None:
    app, _, _ = fake_app([make_view("orders")], settings=TuiSettings(group="orders", interval=3600))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.polls_done == 1 and isinstance(app.screen, GroupScreen))
        table = app.screen.query_one("#queues", KeyedTable)
        narrow = [c.key for c in table.shown]
        assert narrow == ["topic", "queue", "owner", "lag", "status"]
        assert table.row_count == 4 and row(table, "Orders|broker-a|0")[2] == "10.0.0.1@a"
        await pilot.resize_terminal(220, 40)
        await wait_for(pilot, lambda: len(table.shown) == 11, what="all columns at 220")
        assert table.row_count == 4 and row(table, "Orders|broker-a|0")[3] == "10.0.0.1@a"


async def test_status_says_how_long_ago_the_last_update_was() -> None:
    app, _, clock = fake_app([replace(make_view("orders"))])
    async with app.run_test(size=(160, 30)) as pilot:
        await wait_for(pilot, lambda: app.polls_done == 1)
        clock.advance(7)
        app.update_status()
        assert "updated 7 s ago" in status(app)
        assert clock.now() == START + 7


async def test_a_round_the_dashboard_cannot_show_is_reported_and_the_next_one_recovers() -> None:
    app, source, _ = fake_app([make_view("orders")])
    async with app.run_test(size=(160, 30)) as pilot:
        await wait_for(pilot, lambda: app.polls_done == 1)
        broken = replace(make_view("orders"), running_infos={"10.0.0.1@a": object()})  # type: ignore[dict-item]
        source.set_view(broken)
        await poll_now(pilot, app)
        assert "cannot show this round" in status(app) and app.is_running
        source.set_view(make_view("orders"))
        await poll_now(pilot, app)
        assert "errors" not in status(app)


def with_progress(view: GroupView, **by_queue: dict[str, object]) -> GroupView:
    """``view`` with fields of some queues' progress replaced (keyword: ``q<queue id>``)."""
    progress = tuple(replace(p, **by_queue.get(f"q{p.queue.queue_id}", {}))  # type: ignore[arg-type]
                     for p in view.progress)
    return replace(view, progress=progress)


async def test_age_sorts_by_how_long_ago_not_by_its_text() -> None:
    start_ms = int(START * 1000)
    ages_s = {0: 720, 1: 7_200, 2: 45, 3: 90}  # shown as 12m, 2h, 45s, 90s
    view = with_progress(make_view("orders"), **{f"q{q}": {"last_timestamp": start_ms - s * 1000}
                                                 for q, s in ages_s.items()})
    app, _, _ = fake_app([view], settings=TuiSettings(group="orders", interval=3600))
    async with app.run_test(size=(220, 40)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, GroupScreen) and app.polls_done == 1)
        table = app.screen.query_one("#queues", KeyedTable)
        await wait_for(pilot, lambda: table.row_count == 4)
        age = [c.key for c in table.shown].index("age")
        table.sort_by("age")
        assert [plain(table.get_row(r.key)[age]) for r in table.ordered_rows] == ["45s", "90s", "12m", "2h"]
        table.sort_by("age")
        assert [plain(table.get_row(r.key)[age]) for r in table.ordered_rows] == ["2h", "12m", "90s", "45s"]


async def test_a_lag_the_brokers_could_not_report_is_unknown_not_zero() -> None:
    # queue 1's offsets could not be read (the numbers in its row mean nothing)
    view = with_progress(make_view("orders", offsets={0: (150, 100)}),
                         q1={"offsets_from": "unknown", "broker_offset": 0, "consumer_offset": 0})
    app, _, _ = fake_app([view], settings=TuiSettings(group="orders", interval=3600))
    async with app.run_test(size=(220, 40)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, GroupScreen) and app.polls_done == 1)
        table = app.screen.query_one("#queues", KeyedTable)
        await wait_for(pilot, lambda: table.row_count == 4)
        keys = [c.key for c in table.shown]
        unknown, known = row(table, "Orders|broker-a|1"), row(table, "Orders|broker-a|0")
        assert [unknown[keys.index(k)] for k in ("lag", "inflight", "status")] == ["unknown", "unknown", "unknown"]
        assert [known[keys.index(k)] for k in ("lag", "status")] == ["50", "?"]
        assert "lag 50 (unknown for 1 queue)" in str(app.screen.query_one("#title").render())
        # the unknown lag sorts after every known one
        table.sort_by("lag")
        assert [r.key.value for r in table.ordered_rows][-1] == "Orders|broker-a|1"
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, GroupsScreen))
        groups = app.screen.query_one("#groups-table", KeyedTable)
        await wait_for(pilot, lambda: groups.row_count == 1)
        assert row(groups, "orders")[4] == "≥50"  # at least the known queues' lag


async def test_a_screen_under_another_shows_the_latest_round_when_it_comes_back() -> None:
    app, source, clock = fake_app([make_view("orders")], settings=TuiSettings(group="orders", interval=3600))
    async with app.run_test(size=(200, 40)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, GroupScreen) and app.polls_done == 1)
        group_screen = app.screen
        table = group_screen.query_one("#queues", KeyedTable)
        assert row(table, "Orders|broker-a|0")[6] == "0"
        await pilot.press("f")
        await wait_for(pilot, lambda: isinstance(app.screen, FindingsScreen))
        source.set_view(make_view("orders", offsets={0: (170, 100)}))
        clock.advance(2)
        await poll_now(pilot, app)
        assert row(table, "Orders|broker-a|0")[6] == "0"  # hidden: not redrawn while under findings
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is group_screen)
        await wait_for(pilot, lambda: row(table, "Orders|broker-a|0")[6] == "70", what="the latest round")


async def test_a_refresh_of_many_changed_rows_writes_every_changed_cell() -> None:
    # 48 queues: enough changed rows for the table to write cells in bulk and redraw once
    def view(step: int) -> GroupView:
        return make_view("orders", queues=48, held={"10.0.0.1@a": list(range(24)), "10.0.0.2@b": list(range(24, 48))},
                         offsets={q: (100 + step * q, 100) for q in range(48)},
                         cached={q: step * q for q in range(48)})

    app, source, clock = fake_app([view(0)], settings=TuiSettings(group="orders", interval=3600))
    async with app.run_test(size=(220, 40)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, GroupScreen) and app.polls_done == 1)
        table = app.screen.query_one("#queues", KeyedTable)
        await wait_for(pilot, lambda: table.row_count == 48)
        lag = [c.key for c in table.shown].index("lag")
        source.set_view(view(3))
        clock.advance(2)
        await poll_now(pilot, app)
        assert [row(table, f"Orders|broker-a|{q}")[lag] for q in range(48)] == [str(3 * q) for q in range(48)]
        assert [row(table, f"Orders|broker-a|{q}")[-1] for q in (0, 1)] == ["idle", "stalled"]
