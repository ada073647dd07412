"""``rmqctl tui`` in tmux against the real RocketMQ broker of tests/harness with real Java consumers.

The client ids on screen are checked against what the broker itself registered (request 38),
never against rmqctl's own reading.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.harness.realcluster import RealCluster, ScenarioClientsProcess, wait_until
from tests.tui.terminal import base_env, clean_exit, tmux_running, tui_command

pytestmark = [pytest.mark.real_cluster, pytest.mark.timeout(400)]


def test_tui_shows_the_real_consumers_of_a_group(
        real_cluster: RealCluster, scenario_clients: ScenarioClientsProcess,
        rmq_names: Callable[[str], str], tmp_path: Path) -> None:
    topic, group = rmq_names("TuiTopic"), rmq_names("GTui")
    real_cluster.create_topic(topic, 4)
    scenario_clients.start_consumer("A", group, {topic: "*"}, instance_name=rmq_names("tui_a"))
    scenario_clients.start_consumer("B", group, {topic: "*"}, instance_name=rmq_names("tui_b"))
    wait_until(lambda: len(real_cluster.consumer_ids(group)) == 2, timeout=90, message="both consumers registered")
    ids = real_cluster.consumer_ids(group)
    command = tui_command("-n", real_cluster.namesrv_addr, "--interval", "1s", "--timeout", "10", group)
    with tmux_running(command, size=(200, 50), env=base_env(tmp_path)) as term:
        term.wait_for(lambda s: "updated" in s, timeout=120, what="the first poll")
        term.send("l")  # client → queues: one row per real client
        screen = term.wait_for(lambda s: all(cid in s for cid in ids) and "updated" in s,
                               timeout=120, what="the real client ids on screen")
        assert f"namesrv {real_cluster.namesrv_addr}" in screen
        assert "controls:" not in screen  # a real cluster never gets emulator controls
        term.send("q")
        final = term.wait_for(lambda s: "TUI-EXITED" in s, timeout=30, what="the TUI to exit")
        assert clean_exit(final), final
