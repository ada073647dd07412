"""One contract over every command's document (docs/output.md): each command that takes
``-o`` is run with ``-o json`` against the embedded or a served emulator, and its document must
keep two rules that runbooks rely on: every key ending ``_ts`` is epoch milliseconds (an int) or
``null``, and ``errors`` is an object at the top.

The command list is read from the CLI itself, so a new command that prints a document fails here
until it is added below (or named, with the reason, in :data:`NOT_RUN_HERE`).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner

from rmqctl.cli.app import app
from rmqctl.emulator.serve import ServeOptions
from tests.emulator.helpers import served_in_thread

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]
E = ("--emulator", "tag-overwrite")

#: command → its arguments on the embedded emulator (``{tmp}`` is a fresh directory)
EMBEDDED: dict[str, tuple[str, ...]] = {
    "cluster list": (*E, "cluster", "list"),
    "topic list": (*E, "topic", "list", "--system"),
    "topic route": (*E, "topic", "route", "TopicTest2"),
    "topic status": (*E, "topic", "status", "TopicTest2"),
    "group list": (*E, "group", "list"),
    "group show": (*E, "group", "show", "test-consumer"),
    "group progress": (*E, "group", "progress", "test-consumer"),
    "group assignment": (*E, "group", "assignment", "test-consumer"),
    "group reset": (*E, "group", "reset", "test-consumer", "--to-earliest"),
    "group delete": (*E, "group", "delete", "test-consumer"),
    "group prune": (*E, "group", "prune", "--idle", "1s"),
    "dlq list": (*E, "dlq", "list"),
    "dlq show": (*E, "dlq", "show", "test-consumer"),
    "dlq replay": (*E, "dlq", "replay", "test-consumer"),
    "doctor": (*E, "doctor", "--all", "--fail-on", "never"),
    "msg show": (*E, "msg", "show", "TopicTest2", "--queue", "broker-a/0", "--offset", "0"),
    "msg browse": (*E, "msg", "browse", "TopicTest2", "--tag", "tag1"),
    "msg explain": (*E, "msg", "explain", "TopicTest2", "--queue", "broker-a/0", "--offset", "3"),
    "demo": ("demo",),
    "rebalance simulate": (*E, "rebalance", "simulate", "-g", "test-consumer"),
    "emulator scenarios": ("emulator", "scenarios"),
    "emulator show": ("emulator", "show", "tag-overwrite"),
    "emulator run": ("emulator", "run", "tag-overwrite"),
    "snapshot export": ("--emulator", "stall-and-leave", "snapshot", "export", "payment-service",
                        "--out", "{tmp}", "--every", "1m", "--count", "2"),
    "config view": ("config", "view"),
}
#: ``emulator ctl`` commands, in the order they run against one served emulator
SERVED: dict[str, tuple[str, ...]] = {
    "emulator ctl clients": ("clients",),
    "emulator ctl start-consumer": ("start-consumer", "--group", "solo", "--topic", "TopicTest2",
                                    "--client-id", "10.0.0.9@solo"),
    "emulator ctl produce": ("produce", "--topic", "TopicTest2", "--tag", "tag1", "--count", "2"),
    "emulator ctl advance": ("advance", "30"),
    "emulator ctl state": ("state",),
    "emulator ctl stop-consumer": ("stop-consumer", "10.0.0.9@solo"),
}
NOT_RUN_HERE = {
    "emulator serve": "serves until interrupted: its one line is checked in a process below",
    "analyze stuck": "needs Spark: its document is checked in tests/unit/test_analyze_rows.py",
    "exporter": "prints Prometheus metrics, not a document: checked in tests/exporter/test_metrics.py",
}


def _commands_with_output() -> set[str]:
    """Every leaf command of the CLI that takes ``-o/--output``."""
    root = typer.main.get_command(app)
    ctx = root.context_class(root)
    found: set[str] = set()

    def walk(command: Any, path: tuple[str, ...]) -> None:
        if hasattr(command, "list_commands"):
            for name in command.list_commands(ctx):
                walk(command.get_command(ctx, name), (*path, name))
        elif any("--output" in param.opts for param in command.params):
            found.add(" ".join(path))

    walk(root, ())
    return found


def test_every_command_with_a_document_is_checked() -> None:
    assert _commands_with_output() == set(EMBEDDED) | set(SERVED) | set(NOT_RUN_HERE)


def _ts_problems(value: Any, where: str = "") -> list[str]:
    """Every ``*_ts`` key whose value is not an int or null, with its path."""
    out: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            path = f"{where}.{key}"
            if key.endswith("_ts") and not (item is None or (isinstance(item, int) and not isinstance(item, bool))):
                out.append(f"{path} = {item!r}")
            out += _ts_problems(item, path)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            out += _ts_problems(item, f"{where}[{i}]")
    return out


def _assert_contract(document: Any) -> None:
    assert isinstance(document, dict)
    assert isinstance(document.get("errors"), dict), sorted(document)
    assert _ts_problems(document) == []


def _json(args: list[str], env: dict[str, str] | None = None) -> Any:
    result = runner.invoke(app, args, env=env)
    assert result.exit_code == 0, (args, result.stdout, result.stderr)
    return json.loads(result.stdout)


@pytest.fixture
def isolated_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    path = tmp_path / "config.toml"
    path.write_text('current-context = "lab"\n[contexts.lab]\nnamesrv = "127.0.0.1:9876"\n'
                    'secret_key = "sk"\naccess_key = "ak"\n', encoding="utf-8")
    monkeypatch.setenv("RMQCTL_CONFIG", str(path))
    yield path


@pytest.mark.parametrize("command", list(EMBEDDED))
def test_document_keeps_the_contract(command: str, tmp_path: Path, isolated_config: Path) -> None:
    args = [a.replace("{tmp}", str(tmp_path / "out")) for a in EMBEDDED[command]]
    _assert_contract(_json([*args, "-o", "json"]))


def test_served_emulator_documents_keep_the_contract() -> None:
    with served_in_thread("tag-overwrite", ServeOptions(clock="virtual")) as served:
        for command, args in SERVED.items():
            document = _json(["emulator", "ctl", *args, "--url", served.control, "-o", "json"])
            try:
                _assert_contract(document)
            except AssertionError as exc:
                raise AssertionError(f"{command}: {exc}") from exc


def test_snapshot_export_times_are_epoch_milliseconds(tmp_path: Path) -> None:
    # stall-and-leave on the virtual clock (2024-01-01T00:00:00Z = 1704067200000): rounds a
    # minute apart, the first one taken two minutes in
    document = _json(["--emulator", "stall-and-leave", "snapshot", "export", "payment-service", "--out",
                      str(tmp_path), "--every", "1m", "--count", "2", "-o", "json"])
    assert (document["first_ts"], document["last_ts"]) == (1_704_067_320_000, 1_704_067_380_000)


def test_served_emulator_line_keeps_the_contract() -> None:
    # ``emulator serve -o json`` prints one document once everything listens, then serves
    with subprocess.Popen([sys.executable, "-m", "rmqctl", "emulator", "serve", "--scenario", "healthy",
                           "--clock", "virtual", "-o", "json"], cwd=ROOT, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"}) as proc:
        try:
            assert proc.stdout is not None
            document = json.loads(proc.stdout.readline())
        finally:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    _assert_contract(document)
    assert set(document) == {"scenario", "namesrv", "brokers", "control", "clock", "speed", "errors"}
