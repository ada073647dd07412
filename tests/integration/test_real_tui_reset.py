"""The dashboard's reset form against a real 5.3.3 broker with a real Java push consumer running.

The form is driven with Textual's Pilot on a dashboard opened with ``-n`` (writable, as the
command line's ``group reset`` is); what happened is read with ``mqadmin consumerProgress`` and
counted in the Java listener, never taken from the form alone.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from textual.widgets import Button, DataTable, Input, Select

from rmqctl.actions import audit
from rmqctl.connect import Target, open_source
from tests.harness.realcluster import RealCluster, ScenarioClientsProcess, wait_until
from tests.integration.test_real_reset import consumer_progress, consuming_group, has_server_side_reset, replayed
from tests.tui.helpers import wait_for
from tui import TuiSettings, make_app
from tui.reset import ResetScreen
from tui.run import writer_for
from tui.screens import GroupScreen

pytestmark = [pytest.mark.real_cluster, pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    monkeypatch.setenv("RMQCTL_CONFIG", str(tmp_path / "config.toml"))


async def test_a_reset_to_earliest_from_the_dashboard_replays_what_its_plan_said(
        real_cluster: RealCluster, scenario_clients: ScenarioClientsProcess, rmq_names: Callable[[str], str]) -> None:
    if not has_server_side_reset(real_cluster):
        pytest.skip(f"{real_cluster.version} has no server-side reset")
    cluster, sc = real_cluster, scenario_clients
    topic, group, _ = consuming_group(cluster, sc, rmq_names)
    target = Target(namesrv=cluster.namesrv_addr, timeout=10)
    async with open_source(target) as opened:
        app = make_app(opened, TuiSettings(group=group, interval=3600, writer=writer_for(target)))
        async with app.run_test(size=(200, 50)) as pilot:
            await wait_for(pilot, lambda: app.polls_done >= 1 and isinstance(app.screen, GroupScreen), timeout=30)
            await pilot.press("R")
            await wait_for(pilot, lambda: isinstance(app.screen, ResetScreen))
            screen = app.screen
            assert isinstance(screen, ResetScreen)
            assert screen.query_one("#reset-kind", Select).value == "earliest"
            screen.query_one("#reset-queues", Input).value = ""
            screen.query_one("#reset-topic", Input).value = topic
            screen.query_one("#reset-plan", Button).press()
            await wait_for(pilot, lambda: app.reset is not None and app.reset.phase in ("planned", "failed"),
                           timeout=30, what="the plan")
            assert app.reset is not None and app.reset.plan is not None, app.reset
            plan = app.reset.plan
            assert [(q.queue.queue_id, q.current, q.target, q.method) for q in plan.queues] == [
                (0, 4, 0, "server"), (1, 4, 0, "server")]
            # planned only: the broker's offsets did not move, the consumer got nothing again
            assert consumer_progress(cluster, group, topic) == {0: 4, 1: 4}
            assert sc.received("A")["A"] == []
            screen.query_one("#reset-apply", Button).press()
            await pilot.pause()
            screen.query_one("#reset-yes", Button).press()
            await wait_for(pilot, lambda: app.reset is not None and app.reset.phase in ("applied", "failed"),
                           timeout=60, what="the outcome")
            assert app.reset is not None and app.reset.outcome is not None, app.reset
            table = screen.query_one("#reset-table", DataTable)
            assert [str(table.get_row_at(i)[2]) for i in range(table.row_count)] == ["applied", "applied"]
    assert plan.replay_total == 8
    assert replayed(sc, 8) == sorted((q, o) for q in (0, 1) for o in range(4))
    wait_until(lambda: consumer_progress(cluster, group, topic) == {0: 4, 1: 4}, timeout=30,
               message="consumed on to the end")
    [record] = audit.read_log()
    assert (record["action"], record["group"], record["outcome"]["all_applied"]) == ("group reset", group, True)
