"""Rendered screens at 120x40 compared with golden text (fake clock, UTC, no cursor blink).

Regenerate after an intended change with ``RMQCTL_UPDATE_SNAPSHOTS=1 pytest tests/tui`` and
review the diff like code.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.tui.conftest import T0, billing, orders, screen_text, settle
from tests.tui.fakesource import FakeSource
from tui.app import TuiSettings, make_app

GOLDEN = Path(__file__).parent / "snapshots"
UPDATE = os.environ.get("RMQCTL_UPDATE_SNAPSHOTS") == "1"


def check(name: str, text: str) -> None:
    path = GOLDEN / f"{name}.txt"
    if UPDATE:
        path.write_text(text + "\n", encoding="utf-8")
    assert path.exists(), f"no golden file {path.name}; run with RMQCTL_UPDATE_SNAPSHOTS=1"
    assert text + "\n" == path.read_text(encoding="utf-8")


@pytest.mark.parametrize("keys", [(), ("colon", *"group orders", "enter"), ("question_mark",)],
                         ids=["overview", "group", "help"])
async def test_screen(keys: tuple[str, ...], request: pytest.FixtureRequest) -> None:
    source = FakeSource([orders(1, retry=True), billing(1)])
    app = make_app(source, TuiSettings(interval=3600, clock=lambda: T0 / 1000 + 15,
                                       cursor_blink=False))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        await pilot.press(*keys)
        await settle(app, pilot)
        check(request.node.callspec.id, screen_text(app))
