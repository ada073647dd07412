"""Scenario files: the built-ins, the generator, and errors that name file, line and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rmqctl import errors
from rmqctl.emulator.scenario import builtin_names, builtin_scenarios, load_scenario, parse_scenario

BUILT_INS = {"tag-overwrite", "tag-overwrite-4q", "topic-overwrite", "two-consumers-one-queue",
             "avg-contiguous-blocks", "healthy"}

GOOD = """\
name = "mine"
duration = 30

[[brokers]]
name = "broker-a"

[[topics]]
name = "T"
queues = 4

[[consumers]]
group = "G"
subscriptions = { T = "TagA || TagB" }

[[consumers]]
group = "G"
subscriptions = { T = "*" }
strategy = "AVG"
start = 2.5

[[produce]]
at = 5.0
topic = "T"
tag = "TagA"
count = 3
"""


def test_every_built_in_loads_and_has_a_one_line_description() -> None:
    assert BUILT_INS <= set(builtin_names())
    described = dict(builtin_scenarios())
    for name in BUILT_INS:
        scenario = load_scenario(name)
        assert scenario.name == name
        assert described[name] and "\n" not in described[name]
    assert any(name.startswith("scale") for name in described)


def test_a_good_file_loads(tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text(GOOD)
    scenario = load_scenario(str(path))
    assert scenario.name == "mine" and scenario.duration == 30
    assert [c.start for c in scenario.consumers] == [0.0, 2.5]
    assert scenario.consumers[0].subscriptions == (("T", "TagA || TagB"),)
    assert scenario.produce[0].count == 3 and scenario.topic("T").read_queues == 4


def error_for(tmp_path: Path, text: str) -> str:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(errors.ConfigError) as info:
        load_scenario(str(path))
    assert info.value.exit_code == errors.ExitCode.USAGE
    return str(info.value) + " | " + (info.value.hint or "")


def test_errors_name_the_file_the_line_and_the_field(tmp_path: Path) -> None:
    text = GOOD.replace('strategy = "AVG"', 'strategy = "EVEN"')
    message = error_for(tmp_path, text)
    line = text.splitlines().index('strategy = "EVEN"') + 1
    assert f"bad.toml, line {line}: consumers[1].strategy:" in message
    assert "EVEN" in message and "AVG_BY_CIRCLE" in message


def test_unknown_keys_suggest_the_right_one(tmp_path: Path) -> None:
    text = GOOD.replace("start = 2.5", "strat = 2.5")
    message = error_for(tmp_path, text)
    assert f"line {text.splitlines().index('strat = 2.5') + 1}: consumers[1].strat: unknown key" in message
    assert "did you mean 'start'" in message


def test_type_and_reference_errors(tmp_path: Path) -> None:
    message = error_for(tmp_path, GOOD.replace("count = 3", 'count = "three"'))
    assert "produce[0].count: expected an integer" in message
    message = error_for(tmp_path, GOOD.replace('subscriptions = { T = "*" }', 'subscriptions = { U = "*" }'))
    assert "consumers[1].subscriptions: topic 'U' is not declared" in message
    message = error_for(tmp_path, GOOD.replace("queues = 4", "queues = 0"))
    assert "topics[0].queues: must be 1..1024, got 0" in message
    message = error_for(tmp_path, GOOD + "\n[[produce]]\ntopic = \"T\"\nqueue = 9\n")
    assert "produce[1].queue:" in message and "ids are 0..3" in message


def test_toml_syntax_errors_keep_their_line(tmp_path: Path) -> None:
    message = error_for(tmp_path, GOOD.replace("queues = 4", "queues = = 4"))
    assert f"bad.toml, line {GOOD.splitlines().index('queues = 4') + 1}: invalid TOML" in message


def test_scenario_names_are_not_finding_codes_and_old_names_still_load() -> None:
    from rmqctl.doctor.checks import CODES

    codes = {code.lower().replace("_", "-") for code in CODES}
    assert not codes & set(builtin_names())
    assert load_scenario("idle-consumers").name == "two-consumers-one-queue"
    assert load_scenario("uneven-allocation").name == "avg-contiguous-blocks"
    assert all("seed" not in description.lower() for _, description in builtin_scenarios())


def test_a_missing_file_and_an_unknown_name(tmp_path: Path) -> None:
    with pytest.raises(errors.ConfigError, match="not found"):
        load_scenario(str(tmp_path / "missing.toml"))
    with pytest.raises(errors.ConfigError) as info:
        load_scenario("tag-overwrit")
    assert all(name in str(info.value) for name in BUILT_INS)


def test_count_expands_clients_and_requires_a_placeholder_for_explicit_ids() -> None:
    scenario = parse_scenario(GOOD.replace('group = "G"\nsubscriptions = { T = "TagA || TagB" }',
                                           'group = "G"\nsubscriptions = { T = "*" }\ncount = 3\n'
                                           'client_id = "10.0.0.{n}@c{n}"'))
    assert [c.client_id for c in scenario.consumers[:3]] == ["10.0.0.1@c1", "10.0.0.2@c2", "10.0.0.3@c3"]
    with pytest.raises(errors.ConfigError, match=r"\{n\}"):
        parse_scenario(GOOD.replace('group = "G"\nsubscriptions = { T = "TagA || TagB" }',
                                    'group = "G"\nsubscriptions = { T = "*" }\ncount = 2\nclient_id = "1@x"'))


def test_scale_generator() -> None:
    scenario = load_scenario("scale:3x2x2x7")
    assert len(scenario.brokers) == 2 and len(scenario.topics) == 3
    assert len(scenario.consumers) == 7
    assert {c.group for c in scenario.consumers} == {"scale-group-0000", "scale-group-0001", "scale-group-0002"}
    with pytest.raises(errors.ConfigError, match="GROUPSxQUEUES"):
        load_scenario("scale:3x2")


def test_cli_lists_and_shows_scenarios(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from rmqctl.cli.app import app

    runner = CliRunner()
    result = runner.invoke(app, ["emulator", "scenarios", "-o", "json"])
    assert result.exit_code == 0, result.output
    listed = {row["name"]: row["description"] for row in json.loads(result.stdout)["scenarios"]}
    assert BUILT_INS <= set(listed) and all(listed[name] for name in BUILT_INS)
    shown = runner.invoke(app, ["emulator", "show", "tag-overwrite-4q"])
    assert shown.exit_code == 0 and 'client_id = "172.16.0.103@ConsumerForTagB"' in shown.stdout
    # the printed TOML is a valid scenario file: copy, edit, run
    copy = tmp_path / "copy.toml"
    copy.write_text(shown.stdout.replace("count = 4", "count = 8"))
    ran = runner.invoke(app, ["emulator", "run", str(copy), "-o", "json"])
    assert ran.exit_code == 0, ran.output
    assert json.loads(ran.stdout)["produced_by_tag"] == {"tagA": 8, "tagB": 8}
    bad = tmp_path / "bad.toml"
    bad.write_text("duration = -1\n")
    failed = runner.invoke(app, ["emulator", "run", str(bad)])
    assert failed.exit_code == 2
    assert failed.stderr.strip() == f"rmqctl: error: {bad}, line 1: duration: must be >= 0, got -1"
