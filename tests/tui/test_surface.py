"""The operator's surface of the dashboard, driven by Pilot: keys shown as keys, ctrl+c, the sort
and the filter named in the header, focus where one types, the consume type as the CLI names it,
and a notice when the terminal is too small."""

from __future__ import annotations

from dataclasses import replace

from textual.widgets import Select, Static

from rmqctl.connect import Target, open_source
from rmqctl.model import GroupView
from tests.tui.helpers import fake_app, make_view, poll_now, shown_text, wait_for
from tui import TuiSettings, make_app
from tui.screens import ControlsScreen, FindingsScreen, GroupScreen, GroupsScreen, HelpScreen, WhatIfScreen
from tui.state import QueueRows
from tui.widgets import KeyedTable


class NoControl:
    """Stands in for an emulator's controls (the key test needs only that there are some)."""

    label = "embedded"


def text_of(widget: Static) -> str:
    return str(widget.render())


async def test_help_shows_keys_as_they_are_typed() -> None:
    app, _, _ = fake_app([make_view("orders")])
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.polls_done == 1)
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        shown = "\n".join(text_of(s) for s in app.screen.query(Static))
        for name in ("question_mark", "slash", "colon", "escape"):
            assert name not in shown
        lines = shown.splitlines()
        assert any(line.split()[:3] == ["?,", "f1", "this"] for line in lines)
        assert any(line.split()[:2] == ["/", "filter"] for line in lines)
        assert any(line.split()[:2] == [":", "switch"] for line in lines)
        assert any(line.split()[:2] == ["esc", "back"] for line in lines)


async def test_ctrl_c_quits() -> None:
    app, _, _ = fake_app([make_view("orders")])
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: app.polls_done == 1)
        await pilot.press("ctrl+c")
        await wait_for(pilot, lambda: not app.is_running, what="quit on ctrl+c")


async def test_the_group_header_names_the_consume_type_as_the_cli_does() -> None:
    app, _, _ = fake_app([make_view("orders")], settings=TuiSettings(group="orders", interval=3600))
    async with app.run_test(size=(160, 30)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, GroupScreen) and app.polls_done == 1)
        title = text_of(app.screen.query_one("#title", Static))
        assert "│ PUSH CLUSTERING │" in title and "CONSUME_PASSIVELY" not in title


async def test_the_header_shows_the_sort_column_its_direction_and_the_kept_filter() -> None:
    app, _, _ = fake_app([make_view("orders"), make_view("payments")])
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: app.polls_done == 1)
        table = app.screen.query_one("#groups-table", KeyedTable)
        title = app.screen.query_one("#title", Static)
        assert text_of(title) == "Consumer groups"
        await pilot.press("s")
        assert "sort GROUP ▲" in text_of(title)
        assert [str(c.label) for c in table.ordered_columns][0] == "GROUP▲"
        await pilot.press("s")
        assert "sort GROUP ▼" in text_of(title)
        assert [str(c.label) for c in table.ordered_columns][:2] == ["GROUP▼", "HEALTH"]
        await pilot.press("slash", *"pay", "enter")
        assert "filter /pay/" in text_of(title) and "sort GROUP ▼" in text_of(title)
        await pilot.press("escape")  # clears the filter
        assert "filter" not in text_of(title)


async def test_what_if_focuses_its_first_field_and_letters_typed_there_fire_no_global_key() -> None:
    app, _, _ = fake_app([make_view("orders")],
                         settings=TuiSettings(group="orders", interval=3600, control=NoControl()))  # type: ignore[arg-type]
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, GroupScreen) and app.polls_done == 1)
        await pilot.press("w")
        await wait_for(pilot, lambda: isinstance(app.screen, WhatIfScreen))
        await pilot.pause()
        focused = app.focused
        assert isinstance(focused, Select) and focused.id == "topic"
        # e opens the emulator controls, p pauses, q quits, s sorts: none of them from a select
        await pilot.press("e", "p", "s", "q")
        await pilot.pause()
        assert isinstance(app.screen, WhatIfScreen) and not isinstance(app.screen, ControlsScreen)
        assert app.is_running and not app.paused
        # the same keys still work where nothing is typed
        app.screen.query_one("#whatif", KeyedTable).focus()
        await pilot.press("p")
        assert app.paused


async def test_a_terminal_too_small_says_so_instead_of_showing_an_empty_screen() -> None:
    app, _, _ = fake_app([make_view("orders")])
    async with app.run_test(size=(40, 10)) as pilot:
        await wait_for(pilot, lambda: app.polls_done == 1)
        screen = app.screen
        assert isinstance(screen, GroupsScreen)
        notice = screen.query_one("#too-small", Static)
        assert notice.display and "Terminal too small: 40×10" in text_of(notice)
        assert not screen.query_one("#groups-table", KeyedTable).display
        await pilot.resize_terminal(80, 24)
        await wait_for(pilot, lambda: not notice.display, what="the notice to go")
        assert screen.query_one("#groups-table", KeyedTable).display


async def test_a_refresh_builds_only_the_rows_on_screen_and_a_sort_still_sees_every_row() -> None:
    queues = 2_000
    held = {"10.0.0.1@a": list(range(0, queues, 2)), "10.0.0.2@b": list(range(1, queues, 2))}

    def view(step: int) -> GroupView:
        return make_view("orders", queues=queues, held=held,
                         offsets={q: (1_000 + step * (q % 17), 1_000) for q in range(queues)})

    app, source, clock = fake_app([view(0)], settings=TuiSettings(group="orders", interval=3600))
    async with app.run_test(size=(160, 30)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, GroupScreen) and app.polls_done == 1)
        table = app.screen.query_one("#queues", KeyedTable)
        await wait_for(pilot, lambda: table.row_count == queues)
        source.set_view(view(5))
        clock.advance(2)
        await poll_now(pilot, app)
        await pilot.pause()
        rows = table.rows_by_key
        assert isinstance(rows, QueueRows) and rows.built <= table.size.height
        lag = [c.key for c in table.shown].index("lag")
        assert str(table.get_row("Orders|broker-a|16")[lag]) == "80"  # drawn from the latest round
        # sorting reads every row's value: the largest lag comes from far off screen
        table.sort_by("lag")
        table.sort_by("lag")
        assert table.ordered_rows[0].key.value in {f"Orders|broker-a|{q}" for q in range(16, queues, 17)}
        source.set_view(view(9))
        clock.advance(2)
        await poll_now(pilot, app)
        assert str(table.get_row(table.ordered_rows[0].key)[lag]) == str(9 * 16)


def two_broker_view() -> GroupView:
    """OrderTopic on broker-a and broker-b, queues 0-1 each; long client ids."""
    a = make_view("orders", topic="OrderTopic", broker="broker-a", queues=2,
                  held={"172.16.0.103@ConsumerNumberOne": [0], "172.16.0.104@ConsumerNumberTwo": [1]})
    b = make_view("orders", topic="OrderTopic", broker="broker-b", queues=2,
                  held={"172.16.0.103@ConsumerNumberOne": [0], "172.16.0.104@ConsumerNumberTwo": [1]})
    infos = {cid: replace(info, mq_table={**info.mq_table, **b.running_infos[cid].mq_table})
             for cid, info in a.running_infos.items()}
    return replace(a, progress=a.progress + b.progress, running_infos=infos,
                   broker_subscriptions={**a.broker_subscriptions, **b.broker_subscriptions},
                   topic_queues={"OrderTopic": a.topic_queues["OrderTopic"] + b.topic_queues["OrderTopic"]})


async def test_at_80x24_a_row_keeps_what_identifies_it_and_the_detail_pane_has_it_in_full() -> None:
    app, _, _ = fake_app([two_broker_view()], settings=TuiSettings(group="orders", interval=3600))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, GroupScreen) and app.polls_done == 1)
        table = app.screen.query_one("#queues", KeyedTable)
        await wait_for(pilot, lambda: table.row_count == 4)
        keys = [c.key for c in table.shown]
        assert keys[:4] == ["topic", "broker", "queue", "owner"]
        # every column fits in 80 cells: the owner is squeezed, not cut off at the edge
        assert sum(table.widths[k] + 2 for k in keys) <= 80
        drawn = [c.__rich__().plain for c in table.get_row("OrderTopic|broker-b|0")]
        assert drawn[:3] == ["OrderTopic", "broker-b", "0"]
        owner = drawn[3]
        assert "…" in owner and owner.startswith("172.16.") and owner.endswith("mberOne")
        assert len(owner) == table.widths["owner"]
        await pilot.press("j", "j")  # OrderTopic broker-b 0
        detail = text_of(app.screen.query_one("#row-detail", Static))
        assert "OrderTopic · broker-b · queue 0" in detail and "owner 172.16.0.103@ConsumerNumberOne" in detail


async def test_the_conflict_column_shows_the_whole_conflict_where_it_fits_and_is_never_dropped() -> None:
    view = make_view("payments", topic="TopicTest2", held={"10.0.0.7@p": [0, 1, 2, 3], "10.0.0.8@q": []},
                     client_expr={"10.0.0.7@p": "TagA", "10.0.0.8@q": "TagB"}, broker_expr="TagB")
    app, _, _ = fake_app([view], settings=TuiSettings(group="payments", interval=3600))
    async with app.run_test(size=(180, 30)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, GroupScreen) and app.polls_done == 1)
        await pilot.press("l")
        table = app.screen.query_one("#clients", KeyedTable)
        await wait_for(pilot, lambda: table.row_count == 2)
        conflict = [c.key for c in table.shown].index("conflict")
        assert table.get_row("10.0.0.7@p")[conflict].__rich__().plain == "TopicTest2: broker has 'TagB'"
        await pilot.resize_terminal(90, 30)
        await wait_for(pilot, lambda: sum(table.widths.values()) < 90, what="the narrow layout")
        assert "conflict" in [c.key for c in table.shown]
        shown = table.get_row("10.0.0.7@p")[[c.key for c in table.shown].index("conflict")].__rich__().plain
        assert shown.startswith("TopicTest2") and shown.endswith("'TagB'")


async def test_a_finding_reads_as_words_and_tables_never_as_json() -> None:
    view = make_view("payments", topic="Payments", held={"10.0.0.7@p": [0, 1, 2, 3], "10.0.0.8@q": []},
                     client_expr={"10.0.0.7@p": "TagA", "10.0.0.8@q": "TagB"}, broker_expr="TagB")
    app, _, _ = fake_app([view], settings=TuiSettings(group="payments", interval=3600))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, GroupScreen) and app.polls_done == 1)
        await pilot.press("f")
        await wait_for(pilot, lambda: isinstance(app.screen, FindingsScreen))
        detail = app.screen.query_one("#detail", Static)
        await wait_for(pilot, lambda: "SUBSCRIPTION_TAG_CONFLICT" in shown_text(detail))
        text = shown_text(detail)
        assert "Impact" in text and "Fix" in text
        assert "{" not in text and "[" not in text and '":' not in text
        lines = text.splitlines()
        # the client expressions as a table: one client per line, beside its expression
        assert any(line.split() == ["10.0.0.7@p", "TagA"] for line in lines)
        assert any(line.split() == ["10.0.0.8@q", "TagB"] for line in lines)
        await pilot.press("j")  # BROKER_SUBSCRIPTION_DIVERGENCE: its code is never cut
        table = app.screen.query_one("#findings", KeyedTable)
        codes = [str(table.get_row(r.key)[1]) for r in table.ordered_rows]
        assert "BROKER_SUBSCRIPTION_DIVERGENCE" in codes
        assert table.widths["code"] >= len("BROKER_SUBSCRIPTION_DIVERGENCE")


async def test_the_demo_says_how_many_messages_are_lost_and_where_to_look() -> None:
    # the demo's incident on the embedded emulator, read through the normal client path
    async with open_source(Target(emulator="tag-overwrite-4q")) as opened:
        app = make_app(opened, TuiSettings(group="SUBSCRIBE_TEST_CONSUMER_GROUP", interval=3600))
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_for(pilot, lambda: isinstance(app.screen, GroupScreen) and app.polls_done == 1, timeout=30)
            title = text_of(app.screen.query_one("#title", Static))
            assert "6 of 8 messages will never be consumed — press f" in title
            await pilot.press("f")
            await wait_for(pilot, lambda: isinstance(app.screen, FindingsScreen))
