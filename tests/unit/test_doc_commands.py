"""Every ``rmqctl …`` line shown in README.md and docs/*.md (```sh blocks) runs as written
against the embedded emulator, or rewritten to it when it names a cluster, and ends with an exit
code of the README's table and no traceback. The lines that cannot run here are listed below,
each with the reason."""

from __future__ import annotations

import re
import shlex
import traceback
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rmqctl.cli.app import app

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SCENARIO = "tag-overwrite"

#: a line's start → why it cannot run against the embedded emulator in a test
CANNOT_RUN = {
    "rmqctl tui": "an interactive terminal dashboard (tests/tui drives it in a real terminal)",
    "rmqctl emulator serve": "serves until stopped (tests/emulator start it as a process)",
    "rmqctl emulator ctl": "needs a served emulator's control API",
    "rmqctl analyze stuck snaps/ --window": "needs recorded snapshots and a Spark run (tests/analysis)",
    "rmqctl config set-context": "prompts for the secret key on a terminal",
    "rmqctl snapshot export --out /data/snaps --all --every 30s": "runs until Ctrl-C (no --duration)",
    "rmqctl group progress GROUP --watch": "redraws until Ctrl-C",
    "rmqctl doctor --all --interval 30": "sleeps 30 s of wall-clock time between its two samples",
    "rmqctl msg explain TOPIC --queue broker-a/0 --offset 0 --group GROUP --snapshots":
        "needs recorded snapshots (tests/emulator/test_explain.py records some)",
    "rmqctl msg show TOPIC --key": "the built-in scenarios send no keys (tests/emulator/test_messages.py finds keys)",
    "rmqctl group delete GROUP --clean-offsets --with-retry-dlq --execute":
        "every group of the built-in scenarios has online clients (tests/emulator/test_actions_delete.py deletes one)",
    "rmqctl group reset GROUP --from-file ~/.local/state/rmqctl/undo/ID.json":
        "needs the undo plan an earlier --execute wrote (tests/emulator/test_actions_reset.py applies one)",
    "rmqctl exporter --listen": "serves until SIGTERM (tests/exporter run it as a process)",
    "rmqctl -n h1:9876;h2:9876 exporter --listen": "serves until SIGTERM (tests/exporter run it as a process)",
    "rmqctl -n h1:9876 exporter --listen": "serves until SIGTERM (tests/exporter run it as a process)",
    "rmqctl -n h1:9876 exporter --snapshots": "runs until SIGTERM (tests/exporter run it as a process)",
}

#: the documents' placeholders → names the emulated scenario has
PLACEHOLDERS = {"GROUP": "test-consumer", "GROUP1": "test-consumer", "GROUP2": "test-consumer",
                "TOPIC": "TopicTest2", "T": "TopicTest2"}
CLUSTER_OPTIONS = {"-n", "--namesrv", "--context", "--dashboard"}
CLUSTER_COMMANDS = {"group", "doctor", "topic", "cluster", "snapshot", "rebalance", "msg", "dlq"}
SHELL_OPERATORS = {"&&", "||", "|", ">", ">>", ";", "<"}


def documented_lines() -> list[tuple[str, str]]:
    """``(document, line)`` for each command line of a ```sh block that runs rmqctl."""
    found = []
    for doc in DOCS:
        for block in re.findall(r"```sh\n(.*?)```", doc.read_text(encoding="utf-8"), re.S):
            for line in block.splitlines():
                words = shlex.split(line, comments=True)
                if "rmqctl" in words:
                    found.append((doc.name, line))
    return found


def command_words(line: str) -> list[str]:
    """The rmqctl command of a shell line: from ``rmqctl`` to the first shell operator."""
    words = shlex.split(line, comments=True)
    words = words[words.index("rmqctl"):]
    end = next((i for i, w in enumerate(words) if w in SHELL_OPERATORS), len(words))
    return words[:end]


def runnable(words: list[str]) -> list[str]:
    """``words`` (without ``rmqctl``) pointed at the embedded emulator, placeholders filled."""
    argv: list[str] = []
    rest = iter(words[1:])
    named = False
    for word in rest:
        if word in CLUSTER_OPTIONS:
            next(rest)
            named = True
            continue
        if word == "[GROUP]":
            continue
        argv.append(PLACEHOLDERS.get(word, word))
    commands = [w for w in argv if not w.startswith("-")]
    if "--emulator" not in argv and (named or (commands and commands[0] in CLUSTER_COMMANDS)):
        argv = ["--emulator", SCENARIO, *argv]
    return argv


def documented_exit_codes() -> set[int]:
    table = (ROOT / "README.md").read_text(encoding="utf-8").split("## Exit codes", 1)[1]
    return {int(code) for code in re.findall(r"^\| (\d+) \|", table, re.M)}


LINES = documented_lines()


def _reason(line: str) -> str | None:
    text = " ".join(command_words(line))
    return next((why for start, why in CANNOT_RUN.items() if text.startswith(start)), None)


def test_lines_are_found_and_every_exclusion_is_used() -> None:
    assert len(LINES) >= 30
    shown = [" ".join(command_words(line)) for _, line in LINES]
    unused = [start for start in CANNOT_RUN if not any(s.startswith(start) for s in shown)]
    assert unused == [], "an exclusion matches no documented line any more"


@pytest.mark.parametrize(("doc", "line"), [pytest.param(d, line, id=f"{d}:{line[:60]}") for d, line in LINES])
def test_documented_command_runs(doc: str, line: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reason = _reason(line)
    if reason:
        pytest.skip(reason)
    for name, value in {"HOME": tmp_path, "XDG_CONFIG_HOME": tmp_path / "config",
                        "XDG_STATE_HOME": tmp_path / "state", "XDG_CACHE_HOME": tmp_path / "cache"}.items():
        monkeypatch.setenv(name, str(value))
    monkeypatch.delenv("NAMESRV_ADDR", raising=False)
    monkeypatch.delenv("RMQCTL_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    scenario = CliRunner().invoke(app, ["emulator", "show", SCENARIO])
    (tmp_path / "my-incident.toml").write_text(scenario.stdout, encoding="utf-8")
    (tmp_path / "snaps").mkdir()
    plan = CliRunner().invoke(app, ["--emulator", SCENARIO, "group", "reset", "test-consumer", "--to-latest",
                                    "-o", "json"])
    (tmp_path / "plan.json").write_text(plan.stdout, encoding="utf-8")  # the plan file the docs apply
    argv = runnable(command_words(line))
    result = CliRunner().invoke(app, argv)
    shown = f"{doc}: rmqctl {shlex.join(argv)}\n{result.stderr}"
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        pytest.fail(shown + "".join(traceback.format_exception(result.exception)))
    assert "Traceback" not in result.stderr, shown
    assert result.exit_code in documented_exit_codes(), shown
    assert result.exit_code in (0, 1), shown  # a documented example is not a mistake
