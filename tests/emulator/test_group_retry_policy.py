"""``group show`` names the group's retry policy and its maximum of deliveries, read from the
group's stored config on each broker (GET_SUBSCRIPTIONGROUP_CONFIG), and the emulator answers
that request as the broker does: from its table as it is, never creating a config."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rmqctl.cli.app import app
from rmqctl.emulator.embedded import embedded_cluster
from rmqctl.errors import SystemError as BrokerSystemError
from rmqctl.remoting.admin import AdminClient

SCENARIO = """
name = "pop-policy"
duration = 30
[[topics]]
name = "T"
queues = 2
[[groups]]
name = "G_pop"
pop_topics = ["T"]
retry_max_times = 3
[[consumers]]
group = "G_push"
subscriptions = { T = "*" }
"""


def test_group_show_names_the_retry_policy_and_the_maximum_of_deliveries(tmp_path: Path) -> None:
    path = tmp_path / "pop-policy.toml"
    path.write_text(SCENARIO)
    shown = CliRunner().invoke(app, ["--emulator", str(path), "group", "show", "G_pop", "-o", "json"])
    assert shown.exit_code == 0, shown.output
    policy = json.loads(shown.stdout)["retry_policy"]
    assert (policy["type"], policy["retry_max_times"], policy["max_deliveries"]) == ("CUSTOMIZED", 3, 4)
    text = CliRunner().invoke(app, ["--emulator", str(path), "group", "show", "G_pop"])
    assert text.exit_code == 0, text.output
    assert ("Retry policy: customized (10s, 30s, 1m … 2h); retryMaxTimes 3: a POP consumer gets a message "
            "4 times at most, then it goes to %DLQ%G_pop") in text.stdout


async def test_the_emulator_reads_one_group_config_without_creating_it(tmp_path: Path) -> None:
    path = tmp_path / "pop-policy.toml"
    path.write_text(SCENARIO)
    async with embedded_cluster(str(path)) as (_, server):
        admin = AdminClient([server.namesrv_addr], timeout=5)
        try:
            broker = next(iter((await admin.cluster_info()).masters().values()))
            assert (await admin.subscription_group_config(broker, "G_pop")).retry_max_times == 3
            with pytest.raises(BrokerSystemError, match="No group in this broker"):
                await admin.subscription_group_config(broker, "G_nobody")
            assert "G_nobody" not in await admin.subscription_groups(broker)
        finally:
            await admin.close()
