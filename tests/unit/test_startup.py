"""Start-up stays cheap: ``--version`` loads no typer, the root command loads no command module and
nothing that talks to a cluster, and a command loads only its own module."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from rmqctl import __version__

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ["asyncio", "rich", "httpx", "pydantic", "rmqctl.connect", "rmqctl.source", "rmqctl.remoting",
         "rmqctl.emulator", "rmqctl.doctor", "rmqctl.model"]


def loaded_after(code: str) -> set[str]:
    """Module names loaded by a fresh interpreter that ran ``code`` (which prints nothing itself)."""
    probe = f"import sys\n{code}\nimport json\nsys.__stdout__.write(json.dumps(sorted(sys.modules)))\n"
    proc = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return set(json.loads(proc.stdout.splitlines()[-1]))


def top(modules: set[str], names: list[str]) -> list[str]:
    return sorted(n for n in names if any(m == n or m.startswith(n + ".") for m in modules))


def test_version_is_answered_before_typer_is_imported() -> None:
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "rmqctl", "--version"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout == f"rmqctl {__version__}\n"
    imported = {line.split("|")[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    assert "rmqctl.cli" in imported
    assert top(imported, ["typer", "click", "rmqctl.cli.app", *HEAVY]) == []


def test_the_root_command_loads_no_command_module() -> None:
    modules = loaded_after("import rmqctl.cli.app")
    assert "typer" in modules
    assert top(modules, HEAVY) == []
    assert sorted(m for m in modules if m.startswith("rmqctl.cli.")) == [
        "rmqctl.cli.app", "rmqctl.cli.common", "rmqctl.cli.durations", "rmqctl.cli.framework", "rmqctl.cli.render"]


def test_a_command_loads_only_its_own_module() -> None:
    modules = loaded_after(
        "import sys; sys.argv = ['rmqctl', 'group', '--help']\n"
        "from rmqctl.cli.app import app\n"
        "try:\n    app()\nexcept SystemExit:\n    pass")
    commands = sorted(m for m in modules if m.startswith("rmqctl.cli.") and m not in (
        "rmqctl.cli.app", "rmqctl.cli.common", "rmqctl.cli.durations", "rmqctl.cli.framework", "rmqctl.cli.render"))
    assert commands == ["rmqctl.cli.group"]
    # the doctor is loaded by the one group command that shows its findings, when it runs
    assert top(modules, ["rmqctl.emulator", "rmqctl.doctor", "httpx", "textual"]) == []


def test_running_a_command_builds_only_that_command_of_its_group() -> None:
    from rmqctl.cli.app import app
    from rmqctl.cli.framework import click_command

    root = click_command(app)
    with root.make_context("rmqctl", ["group", "show", "G"], resilient_parsing=True) as ctx:
        ctx.resilient_parsing = False  # as when the command line is run
        name, group, rest = root.resolve_command(ctx, ["group", "show", "G"])
        assert (name, rest, sorted(group.commands)) == ("group", ["show", "G"], ["show"])
        # help, a typo or a nested group: the whole group, which is also what stays registered
        for args in (["group", "-h"], ["group", "shwo"], ["emulator", "ctl", "state"]):
            _, whole, _ = root.resolve_command(ctx, args)
            assert len(whole.commands) > 1, args
        assert sorted(root.get_command(ctx, "group").commands) == [
            "assignment", "delete", "list", "progress", "prune", "reset", "show"]
