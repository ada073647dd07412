"""``rmqctl group reset`` on the command line: read-only contexts refuse with exit 8 before
anything is sent, contexts are read-only unless created with --allow-writes, a plan printed with
``-o json`` is the file ``--from-file`` applies, and ``--execute`` without a terminal needs
``--yes``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rmqctl.cli.app import app
from rmqctl.config import Config

runner = CliRunner()
E = ("--emulator", "tag-overwrite")


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RMQCTL_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("NAMESRV_ADDR", raising=False)
    return tmp_path


def test_a_new_context_is_read_only_unless_created_with_allow_writes(isolated: Path) -> None:
    assert runner.invoke(app, ["config", "set-context", "prod", "-n", "127.0.0.1:1"]).exit_code == 0
    assert runner.invoke(app, ["config", "set-context", "lab", "-n", "127.0.0.1:2", "--allow-writes"]).exit_code == 0
    contexts = Config.load().contexts
    assert contexts["prod"]["read_only"] is True and contexts["lab"]["read_only"] is False
    # updating a context keeps its setting unless told
    assert runner.invoke(app, ["config", "set-context", "lab", "--timeout", "3s"]).exit_code == 0
    assert Config.load().contexts["lab"]["read_only"] is False


def test_a_write_on_a_read_only_context_refuses_with_one_line_and_exit_8(isolated: Path) -> None:
    (isolated / "config.toml").write_text('current-context = "prod"\n[contexts.prod]\nnamesrv = "127.0.0.1:1"\n')
    result = runner.invoke(app, ["group", "reset", "g", "--to-latest", "--execute", "--yes"])
    assert result.exit_code == 8, result.output
    assert result.stderr.splitlines()[0] == "rmqctl: error: context 'prod' is read-only: nothing was written"
    assert "--allow-writes" in result.stderr
    assert not (isolated / "state").exists()  # no connection was tried, nothing audited


def test_a_plan_printed_as_json_is_the_file_from_file_applies(isolated: Path) -> None:
    planned = runner.invoke(app, [*E, "group", "reset", "test-consumer", "--to-offset", "0", "-o", "json"])
    assert planned.exit_code == 0, planned.output
    doc = json.loads(planned.stdout)
    assert doc["kind"] == "rmqctl-reset-plan" and doc["errors"] == {}
    assert {q["target"] for q in doc["queues"]} == {0}
    assert not (isolated / "state").exists()  # a plan writes nothing, not even the audit log
    (isolated / "plan.json").write_text(planned.stdout)
    applied = runner.invoke(app, [*E, "group", "reset", "test-consumer", "--from-file", str(isolated / "plan.json"),
                                  "--execute", "--yes", "-o", "json"])
    assert applied.exit_code in (0, 9), applied.output
    outcome = json.loads(applied.stdout)
    def same(plan: dict[str, object]) -> dict[str, object]:  # broker addresses are looked up again
        return {k: v if k != "queues" else [{**q, "broker_addr": None} for q in v]  # type: ignore[attr-defined]
                for k, v in plan.items() if k != "errors"}

    assert same(outcome["plan"]) == same(doc)
    record = json.loads((isolated / "state" / "rmqctl" / "audit.jsonl").read_text().splitlines()[0])
    assert record["action"] == "group reset" and record["group"] == "test-consumer"


def test_execute_without_a_terminal_needs_yes() -> None:
    result = runner.invoke(app, [*E, "group", "reset", "test-consumer", "--to-earliest", "--execute"])
    assert result.exit_code == 8
    assert "pass --yes" in result.stderr


@pytest.mark.parametrize("args", [[], ["--to-earliest", "--to-latest"], ["--to-time", "yesterday"],
                                  ["--to-earliest", "--queue", "broker-a"]])
def test_bad_targets_are_one_line_and_exit_2(args: list[str]) -> None:
    result = runner.invoke(app, [*E, "group", "reset", "test-consumer", *args])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("rmqctl: error: ")


def test_deleting_a_group_with_online_clients_is_refused_with_exit_8(isolated: Path) -> None:
    planned = runner.invoke(app, [*E, "group", "delete", "test-consumer", "-o", "json"])
    assert planned.exit_code == 0, planned.output
    assert json.loads(planned.stdout)["online_clients"] == ["10.0.0.1@consumer1", "10.0.0.2@consumer2"]
    result = runner.invoke(app, [*E, "group", "delete", "test-consumer", "--execute", "--yes"])
    assert result.exit_code == 8, result.output
    assert "2 online client(s)" in result.stderr.splitlines()[0]
    assert not (isolated / "state").exists()


def test_prune_lists_every_group_with_its_verdict() -> None:
    result = runner.invoke(app, [*E, "group", "prune", "--idle", "1s", "-o", "json"])
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.stdout)["groups"]
    assert row["group"] == "test-consumer" and row["verdict"] == "kept: 2 online client(s)"
