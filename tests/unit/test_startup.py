"""Start-up stays cheap: ``--version`` loads no typer, the root command loads no command module and
nothing that talks to a cluster, and a command loads only its own module."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from rmqctl import __version__

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ["asyncio", "rich", "httpx", "pydantic", "rmqctl.connect", "rmqctl.source", "rmqctl.remoting",
         "rmqctl.emulator", "rmqctl.doctor", "rmqctl.model"]


def loaded_after(code: str, env: Mapping[str, str] | None = None) -> set[str]:
    """Module names loaded by a fresh interpreter that ran ``code`` (which prints nothing itself)."""
    probe = f"import sys\n{code}\nimport json\nsys.__stdout__.write(json.dumps(sorted(sys.modules)))\n"
    proc = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={**os.environ, **(env or {})})
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


def run_command(*argv: str) -> str:
    return (f"import sys; sys.argv = ['rmqctl', *{list(argv)!r}]\n"
            "from rmqctl.cli.app import app\n"
            "try:\n    app()\nexcept SystemExit:\n    pass")


#: what ``group show`` against a name server has no use for: an HTTP client, the emulator itself,
#: the config file's writer, the CSV writer (``-o csv`` only), the front ends' libraries, the SQL92
#: filter language (no SQL92 subscription here), the documents of other commands
NOT_FOR_GROUP_SHOW = ["httpx", "rich", "textual", "pyspark", "tomli_w", "csv", "rmqctl.emulator.server",
                      "rmqctl.emulator.world", "rmqctl.emulator.control_client", "rmqctl.dashboard",
                      "rmqctl.model.sql92", "rmqctl.report.cluster", "rmqctl.report.emulator"]


def register_emulator(state: Path, namesrv: str, url: str = "http://127.0.0.1:1") -> None:
    """An entry in the registry of served emulators under ``state`` (``$XDG_STATE_HOME``),
    held by this test process (a live pid)."""
    registry = state / "rmqctl" / "emulators"
    registry.mkdir(parents=True, exist_ok=True)
    entry = {"url": url, "scenario": "healthy", "namesrv": namesrv, "pid": os.getpid()}
    (registry / f"{url.rsplit(':', 1)[-1]}.json").write_text(json.dumps(entry))


def test_a_command_at_a_cluster_loads_no_emulator_while_other_served_emulators_are_registered(tmp_path: Path) -> None:
    """A served emulator for another name server is registered on this machine: a command at a
    real cluster still loads neither the emulator nor an HTTP client (they cost ~60 ms)."""
    register_emulator(tmp_path, "127.0.0.1:2")
    modules = loaded_after(run_command("-n", "127.0.0.1:1", "--timeout", "1", "group", "show", "G"),
                           env={"XDG_STATE_HOME": str(tmp_path), "RMQCTL_CONFIG": str(tmp_path / "none.toml")})
    assert "rmqctl.emulator.registry" in modules  # it did look
    assert top(modules, NOT_FOR_GROUP_SHOW) == []


def test_group_show_loads_only_what_it_uses(tmp_path: Path) -> None:
    """``group show`` answered by a cluster (the emulator, served from this process and not
    registered, stands in for a real one), and answered by a registered served emulator whose
    clock it reads: neither loads an HTTP client, the emulator or a writer it does not use."""
    from rmqctl.emulator.serve import ServeOptions
    from tests.emulator.helpers import served_in_thread

    env = {"XDG_STATE_HOME": str(tmp_path), "RMQCTL_CONFIG": str(tmp_path / "none.toml")}
    with served_in_thread("tag-overwrite", ServeOptions(clock="virtual", at=60)) as served:
        command = run_command("-n", served.namesrv, "group", "show", "test-consumer", "-o", "json")
        modules = loaded_after(command, env=env)
        assert "rmqctl.doctor" in modules  # the command ran to its findings
        assert top(modules, NOT_FOR_GROUP_SHOW) == []
        register_emulator(tmp_path, served.namesrv, served.control)  # this process serves it
        modules = loaded_after(command + "\nimport rmqctl.connect, asyncio\n"
                               f"assert asyncio.run(rmqctl.connect.served_emulator_clock({served.namesrv!r}))",
                               env=env)
        assert "rmqctl.emulator.served_clock" in modules
        assert top(modules, NOT_FOR_GROUP_SHOW) == []


def test_group_progress_loads_only_what_it_uses(tmp_path: Path) -> None:
    """``group progress`` shows no findings: it loads neither the doctor nor what ``group show``
    has no use for."""
    from rmqctl.emulator.serve import ServeOptions
    from tests.emulator.helpers import served_in_thread

    env = {"XDG_STATE_HOME": str(tmp_path), "RMQCTL_CONFIG": str(tmp_path / "none.toml")}
    with served_in_thread("tag-overwrite", ServeOptions(clock="virtual", at=60)) as served:
        modules = loaded_after(run_command("-n", served.namesrv, "group", "progress", "test-consumer", "-o", "json"),
                               env=env)
    assert "rmqctl.report.group" in modules  # the command ran to its document
    assert top(modules, [*NOT_FOR_GROUP_SHOW, "rmqctl.doctor", "rmqctl.watch"]) == []


def dataclasses_compiled_after(code: str, env: Mapping[str, str] | None = None) -> list[str]:
    """The dataclasses of rmqctl loaded by a fresh interpreter that ran ``code`` whose methods were
    compiled from source by ``dataclasses.dataclass`` (``rmqctl.records.dataclass`` builds them
    without: compiling them was most of the model's import time)."""
    probe = (f"import sys\n{code}\nimport dataclasses, json\n"
             "found = sorted(f'{name}.{value.__qualname__}' for name, module in list(sys.modules.items())\n"
             "    if name.startswith('rmqctl') and module is not None for value in vars(module).values()\n"
             "    if isinstance(value, type) and value.__module__ == name and dataclasses.is_dataclass(value)\n"
             "    and value.__eq__.__module__ != 'rmqctl.records')\n"
             "sys.__stdout__.write(json.dumps(found))\n")
    proc = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={**os.environ, **(env or {})})
    assert proc.returncode == 0, proc.stderr
    return list(json.loads(proc.stdout.splitlines()[-1]))


def test_group_show_compiles_no_dataclass_methods(tmp_path: Path) -> None:
    """Every dataclass ``group show`` and ``group progress`` load is built by ``rmqctl.records``."""
    from rmqctl.emulator.serve import ServeOptions
    from tests.emulator.helpers import served_in_thread

    env = {"XDG_STATE_HOME": str(tmp_path), "RMQCTL_CONFIG": str(tmp_path / "none.toml")}
    assert dataclasses_compiled_after(run_command("-n", "127.0.0.1:1", "--timeout", "1", "group", "show", "G"),
                                      env=env) == []
    with served_in_thread("tag-overwrite", ServeOptions(clock="virtual", at=60)) as served:
        for command in ("show", "progress"):
            assert dataclasses_compiled_after(run_command("-n", served.namesrv, "group", command, "test-consumer"),
                                              env=env) == [], command


def test_the_collector_is_off_while_the_command_line_starts_and_on_while_the_command_runs() -> None:
    """``rmqctl`` (its entry point, :func:`rmqctl.cli.main`) builds only long-lived objects until the
    command's module is loaded: no collection runs before that, and the command runs with the
    collector on (a long command, like the exporter, needs it)."""
    probe = (
        "import gc, json, sys\n"
        "import rmqctl.cli.common as common\n"
        "passes, states, started = [], [], [False]\n"
        "gc.callbacks.append(lambda phase, info: started[0] and phase == 'start'"
        " and passes.append('rmqctl.cli.group' in sys.modules))\n"
        "execute = common.execute\n"
        "def watched(*args, **kwargs):\n"
        "    states.append(gc.isenabled())\n"
        "    return execute(*args, **kwargs)\n"
        "common.execute = watched\n"
        "sys.argv = ['rmqctl', '-n', '127.0.0.1:1', '--timeout', '1', 'group', 'show', 'G']\n"
        "from rmqctl.cli import main\n"
        "started[0] = True\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "sys.__stdout__.write(json.dumps([passes.count(False), states, gc.isenabled()]))\n")
    proc = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "RMQCTL_CONFIG": str(ROOT / "none.toml")})
    assert "no name server reachable" in proc.stderr
    before_the_command, enabled_in_the_command, enabled_at_exit = json.loads(proc.stdout.splitlines()[-1])
    assert (before_the_command, enabled_in_the_command, enabled_at_exit) == (0, [True], True)


def test_names_loaded_on_first_use_are_the_modules_own() -> None:
    """The model's SQL92 names and the documents of other commands load their module when first
    asked for; every exported name is still there, and is what its module defines."""
    import importlib

    from rmqctl import model, report

    sql92, cluster, doctor, emulator = (importlib.import_module(f"rmqctl.{name}") for name in (
        "model.sql92", "report.cluster", "report.doctor", "report.emulator"))

    for package in (model, report):
        missing = [name for name in package.__all__ if not hasattr(package, name)]
        assert missing == [], package.__name__
    assert model.compile_sql92 is sql92.compile_sql92 and model.Sql92Error is sql92.Sql92Error
    assert report.topic_status is cluster.topic_status and report.scenario is emulator.scenario
    assert report.doctor is doctor.doctor and callable(report.doctor)
