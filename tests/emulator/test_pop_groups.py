"""POP groups on the emulator: a group consuming by POP has one retry topic per topic
(``%RETRY%<group>_<topic>``, or ``+<topic>`` with the broker's enableRetryTopicV2); every command
that lists groups names the group, never its retry topics, so ``doctor --all`` and
``snapshot export --all`` find no phantom group (which ended them with exit 5)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rmqctl.cli.app import app
from rmqctl.emulator.scenario import parse_scenario
from rmqctl.emulator.world import EmulatedCluster
from rmqctl.errors import ConfigError

SCENARIO = """
name = "pop-names"
duration = 30
[[topics]]
name = "T2"
queues = 2
[[topics]]
name = "T4"
queues = 2
[[groups]]
name = "G_simple"
pop_topics = ["T2"]
[[groups]]
name = "G_retry"
pop_topics = ["T4", "T2"]
pop_retry_v2 = true
[[consumers]]
group = "G_push"
subscriptions = { T2 = "*" }
"""


@pytest.fixture()
def scenario(tmp_path: Path) -> str:
    path = tmp_path / "pop-names.toml"
    path.write_text(SCENARIO)
    return str(path)


def test_the_emulator_keeps_a_retry_topic_per_pop_group_and_topic() -> None:
    cluster = EmulatedCluster(parse_scenario(SCENARIO))
    topics = set(cluster.brokers["broker-a"].store.topics)
    assert {"%RETRY%G_simple_T2", "%RETRY%G_retry+T4", "%RETRY%G_retry+T2"} <= topics
    assert "%RETRY%G_simple" not in topics  # POP alone creates no group-wide retry topic


def test_pop_topics_must_be_declared() -> None:
    with pytest.raises(ConfigError, match="topic 'T9' is not declared"):
        parse_scenario(SCENARIO.replace('pop_topics = ["T2"]', 'pop_topics = ["T9"]'))


def test_group_list_names_pop_groups_not_their_retry_topics(scenario: str) -> None:
    result = CliRunner().invoke(app, ["--emulator", scenario, "group", "list", "-o", "json"])
    assert result.exit_code == 0, result.output
    assert [g["group"] for g in json.loads(result.stdout)["groups"]] == ["G_push", "G_retry", "G_simple"]


def test_doctor_all_and_snapshot_export_find_no_phantom_group(scenario: str, tmp_path: Path) -> None:
    doctor = CliRunner().invoke(app, ["--emulator", scenario, "doctor", "--all", "-o", "json"])
    assert doctor.exit_code in (0, 1), doctor.output
    document = json.loads(doctor.stdout)
    assert document["groups"] == ["G_push", "G_retry", "G_simple"] and document["errors"] == {}
    export = CliRunner().invoke(app, ["--emulator", scenario, "snapshot", "export", "--all", "--out",
                                      str(tmp_path / "snaps"), "--count", "1", "-o", "json"])
    assert export.exit_code == 0, export.output
