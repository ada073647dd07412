"""The TUI's poll worker carries the expression history from poll to poll, like the watch service.

The embedded emulator runs the expression-flip scenario (tests/emulator/test_expression_history):
messages consumed under "tagX", then the broker holds "*". Two polls after the flip, the
findings view still judges them by what held when they were consumed: the same counts as the
doctor's checks over the same rounds, and none of the filtered messages reads as delivered.
"""

from __future__ import annotations

from typing import Any

from textual.widgets import Static

from rmqctl.backends.remoting import RemotingBackend
from rmqctl.emulator.embedded import VirtualClock, embedded_cluster
from rmqctl.emulator.scenario import parse_scenario
from rmqctl.remoting.admin import AdminClient
from rmqctl.service import ClusterService
from rmqctl.source import Opened
from tests.emulator.test_expression_history import FLIP_ROUNDS, FLIP_SCENARIO, A, B, C
from tests.tui.helpers import poll_now, shown_text, wait_for
from tui import TuiSettings, make_app
from tui.screens import FindingsScreen, GroupScreen


async def test_polls_after_an_expression_flip_count_what_the_listeners_received() -> None:
    async with embedded_cluster(parse_scenario(FLIP_SCENARIO), at=FLIP_ROUNDS[0]) as (cluster, server):
        clock = VirtualClock(cluster)
        start = cluster.now_ms / 1000 - FLIP_ROUNDS[0]
        source = ClusterService(RemotingBackend(AdminClient([server.namesrv_addr])), clock)
        app = make_app(Opened(source, "emulator", clock), TuiSettings(group="hist", interval=3600))
        try:
            async with app.run_test(size=(160, 40)) as pilot:
                await wait_for(pilot, lambda: app.polls_done == 1 and isinstance(app.screen, GroupScreen))
                for at in FLIP_ROUNDS[1:]:
                    await clock.sleep(start + at - clock.now())
                    await poll_now(pilot, app)
                view = app.dashboard.view("hist")
                assert view is not None and view.broker_subscriptions["broker-a"]["TopicH"].expression == "*"
                (f,) = [x for x in app.dashboard.findings["hist"] if x.code == "SUBSCRIPTION_TAG_CONFLICT"]
                ev: Any = f.evidence
                assert ev["counts"]["received_by_client"] == {A: {"tagX": 2}, B: {"tagX": 2}, C: {}}
                assert ev["lost_in_sample"] == {"tagX": 2, "tagY": 6, "tagZ": 6}
                assert ev["consumed_before_current_expression"] == {}
                # the group's summary line and the findings view say it in numbers
                assert "14 of 18 messages will never be consumed" in app.dashboard.indexes["hist"].summary
                await pilot.press("f")
                await wait_for(pilot, lambda: isinstance(app.screen, FindingsScreen))
                await wait_for(pilot, lambda: "reached no listener" in shown_text(
                    app.screen.query_one("#detail", Static), width=400))
                detail = shown_text(app.screen.query_one("#detail", Static), width=400)
                assert "14 reached no listener of this group (tagX 2, tagY 6, tagZ 6)" in detail
        finally:
            await source.close()
