"""Every view at a fixed size, fake clock and hand-built data (pytest-textual-snapshot).

Accept changed pictures with ``python -m pytest tests/tui/test_snapshots.py --snapshot-update``
after looking at the HTML diff report.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest
from textual.pilot import Pilot
from textual.widgets import Input

from rmqctl.emulator.control_client import EmulatorControl
from tests.tui.helpers import fake_app, make_view, poll_now, wait_for
from tui import RmqctlApp, TuiSettings

SIZE = (120, 32)
SnapCompare = Callable[..., bool]


class NoControl:
    """Stands in for an emulator's controls: the controls view only needs the label."""

    label = "embedded"


def incident_app(*, group: str | None = None, control: EmulatorControl | None = None) -> RmqctlApp:
    views = [
        make_view("orders", held={"10.0.0.1@a": [0, 1], "10.0.0.2@b": [2, 3]},
                  offsets={0: (150, 100), 2: (130, 100)}),
        make_view("payments", topic="Payments", held={"10.0.0.7@p": [0, 1, 2, 3], "10.0.0.8@q": []},
                  client_expr={"10.0.0.7@p": "TagA", "10.0.0.8@q": "TagB"}, broker_expr="TagB"),
    ]
    app, source, clock = fake_app(views, settings=TuiSettings(group=group, interval=3600, control=control))
    app.test_source, app.test_clock = source, clock  # type: ignore[attr-defined]
    return app


def after_polls(steps: Callable[[Pilot[None], RmqctlApp], Awaitable[None]] | None = None
                ) -> Callable[[Pilot[None]], Awaitable[None]]:
    async def run_before(pilot: Pilot[None]) -> None:
        app = pilot.app
        assert isinstance(app, RmqctlApp)
        await wait_for(pilot, lambda: app.polls_done >= 1, what="the first poll")
        for box in app.screen.query(Input):
            box.cursor_blink = False
        if steps is not None:
            await steps(pilot, app)
        await pilot.pause()

    return run_before


async def rebalance(pilot: Pilot[None], app: RmqctlApp) -> None:
    """b leaves orders: a takes every queue; a commits on queue 0."""
    app.test_source.set_view(make_view(  # type: ignore[attr-defined]
        "orders", held={"10.0.0.1@a": [0, 1, 2, 3]}, offsets={0: (150, 120), 2: (130, 100)}, cached={2: 30}))
    app.test_clock.advance(2)  # type: ignore[attr-defined]
    await poll_now(pilot, app)


def test_groups_view(snap_compare: SnapCompare) -> None:
    assert snap_compare(incident_app(), terminal_size=SIZE, run_before=after_polls())


def test_groups_view_at_80x24(snap_compare: SnapCompare) -> None:
    assert snap_compare(incident_app(), terminal_size=(80, 24), run_before=after_polls())


def test_group_queue_view_after_a_rebalance(snap_compare: SnapCompare) -> None:
    assert snap_compare(incident_app(group="orders"), terminal_size=SIZE, run_before=after_polls(rebalance))


def test_group_queue_view_at_200_columns(snap_compare: SnapCompare) -> None:
    assert snap_compare(incident_app(group="orders"), terminal_size=(200, 32), run_before=after_polls(rebalance))


def test_group_client_view(snap_compare: SnapCompare) -> None:
    assert snap_compare(incident_app(group="payments"), press=["l"], terminal_size=SIZE,
                        run_before=after_polls())


def test_findings_view(snap_compare: SnapCompare) -> None:
    assert snap_compare(incident_app(group="payments"), press=["f"], terminal_size=SIZE,
                        run_before=after_polls())


def test_what_if_view(snap_compare: SnapCompare) -> None:
    async def add_client(pilot: Pilot[None], app: RmqctlApp) -> None:
        await pilot.press("w")
        await wait_for(pilot, lambda: app.screen.query("#add-client"))
        box = app.screen.query_one("#add-client", Input)
        box.cursor_blink = False
        box.value = "10.0.0.3@c"
        await pilot.pause()

    assert snap_compare(incident_app(group="orders"), terminal_size=SIZE, run_before=after_polls(add_client))


def test_emulator_controls_view(snap_compare: SnapCompare) -> None:
    async def open_controls(pilot: Pilot[None], app: RmqctlApp) -> None:
        await pilot.press("e")
        await wait_for(pilot, lambda: app.screen.query("#start-group"))
        for box in app.screen.query(Input):
            box.cursor_blink = False

    app = incident_app(group="orders", control=NoControl())  # type: ignore[arg-type]
    assert snap_compare(app, terminal_size=SIZE, run_before=after_polls(open_controls))


def test_help_view(snap_compare: SnapCompare) -> None:
    assert snap_compare(incident_app(), press=["question_mark"], terminal_size=SIZE, run_before=after_polls())


@pytest.mark.parametrize("pattern", ["pay", "!pay"])
def test_filtered_groups_view(snap_compare: SnapCompare, pattern: str) -> None:
    async def type_filter(pilot: Pilot[None], app: RmqctlApp) -> None:
        await pilot.press("slash", *pattern, "enter")

    assert snap_compare(incident_app(), terminal_size=(100, 16), run_before=after_polls(type_filter))
