"""``group show`` names the group's retry policy and its maximum of deliveries, read from each
broker's whole table of group configs (GET_ALL_SUBSCRIPTIONGROUP_CONFIG: the broker's read of one
group's config would create one for a group it does not have)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from rmqctl.cli.app import app

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


def test_showing_a_group_that_does_not_exist_creates_no_config(tmp_path: Path) -> None:
    """The broker's read of one group's config (GET_SUBSCRIPTIONGROUP_CONFIG) creates the config
    when it has none; rmqctl reads the brokers' whole tables instead, so a group that does not
    exist stays unknown (exit 2) however often it is shown."""
    path = tmp_path / "pop-policy.toml"
    path.write_text(SCENARIO)
    for _ in range(2):
        missing = CliRunner().invoke(app, ["--emulator", str(path), "group", "show", "G_nobody", "-o", "json"])
        assert missing.exit_code == 2, missing.output
