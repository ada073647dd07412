"""Dependency direction: the core never loads the TUI or Spark; analysis imports nothing of rmqctl but
the one definition of a stuck queue."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_importing_the_core_and_cli_loads_neither_textual_nor_pyspark() -> None:
    core = [p.relative_to(ROOT).with_suffix("").as_posix().replace("/", ".")
            for p in (ROOT / "rmqctl").rglob("*.py") if p.name != "__main__.py"]
    code = (
        f"import sys, {', '.join(m.removesuffix('.__init__') for m in core)}\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in {'textual', 'pyspark', 'tui', 'analysis'})\n"
        "assert not bad, bad\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr


def _imports(path: Path, *, top_level_only: bool = False) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    nodes = tree.body if top_level_only else ast.walk(tree)
    for node in nodes:
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


#: CLI commands that start the dashboard: they import ``tui`` inside the command function only
LAZY_TUI_COMMANDS = {"rmqctl/cli/tui_cmd.py", "rmqctl/cli/demo_cmd.py"}


def test_core_sources_never_import_tui_or_spark() -> None:
    offenders = {}
    for p in (ROOT / "rmqctl").rglob("*.py"):
        name = str(p.relative_to(ROOT))
        if name in LAZY_TUI_COMMANDS:
            bad = (_imports(p, top_level_only=True) & {"textual", "tui"}) | (_imports(p) & {"pyspark", "analysis"})
        else:
            bad = _imports(p) & {"textual", "pyspark", "tui", "analysis"}
        offenders[name] = sorted(bad)
    assert {k: v for k, v in offenders.items() if v} == {}


def test_the_tui_imports_the_core_but_not_the_cli_or_spark() -> None:
    offenders = {
        str(p.relative_to(ROOT)): sorted(m for m in _imports(p) if m in {"pyspark", "analysis", "typer"})
        for p in (ROOT / "tui").rglob("*.py")
    }
    assert {k: v for k, v in offenders.items() if v} == {}
    cli_imports = {
        str(p.relative_to(ROOT)) for p in (ROOT / "tui").rglob("*.py")
        if "rmqctl.cli" in p.read_text(encoding="utf-8")
    }
    assert cli_imports == set()


def test_the_tui_command_loads_textual_only_when_run() -> None:
    code = (
        "import sys, rmqctl.cli.tui_cmd, rmqctl.cli.demo_cmd\n"
        "assert 'textual' not in sys.modules and 'tui' not in sys.modules\n"
        "import tui\n"
        "assert 'textual' in sys.modules\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr


def test_analysis_imports_only_pyspark_and_the_standard_library() -> None:
    # the job ships to Spark clusters alone: no module of rmqctl, not even the definition of a stuck
    # queue (the job has its own copy, analysis/definition.py, held to rmqctl/stuck.py's code)
    allowed = set(sys.stdlib_module_names) | {"pyspark", "analysis", "__future__"}
    offenders = {
        str(p.relative_to(ROOT)): sorted(_imports(p) - allowed)
        for p in (ROOT / "analysis").rglob("*.py")
    }
    assert {k: v for k, v in offenders.items() if v} == {}
    code = (
        "import sys, analysis.rules, analysis.transforms, analysis.files, analysis.stuck\n"
        "core = sorted(m for m in sys.modules if m.split('.')[0] == 'rmqctl')\n"
        "assert core == [], core\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr


def test_import_contracts_hold() -> None:
    """The import-linter contracts in pyproject.toml (layers, independence, no TUI/Spark in core)."""
    code = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"
    proc = subprocess.run([sys.executable, "-c", code, "--no-cache"], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr


#: the modules of the core that may read the host's wall clock: the one clock, and the emulator's
#: own clocks (a served emulator starts its virtual time from the host's)
WALL_CLOCK_READERS = {"rmqctl/clock.py", "rmqctl/emulator/clock.py", "rmqctl/emulator/serve.py"}
WALL_CLOCK_CALLS = {("time", "time"), ("time", "time_ns"), ("datetime", "now"), ("datetime", "utcnow"),
                    ("datetime", "today"), ("date", "today")}


def test_below_the_front_ends_every_now_comes_from_the_clock() -> None:
    # a view stamped with the host's time on an emulator whose clock is years behind made the doctor
    # compare two clocks; the core reads "now" from the injected Clock (rmqctl/clock.py)
    offenders = {}
    for p in (ROOT / "rmqctl").rglob("*.py"):
        name = p.relative_to(ROOT).as_posix()
        if name.startswith("rmqctl/cli/") or name in WALL_CLOCK_READERS:
            continue
        calls = sorted(
            f"{node.func.value.id}.{node.func.attr} (line {node.lineno})"
            for node in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name) and (node.func.value.id, node.func.attr) in WALL_CLOCK_CALLS
        )
        if calls:
            offenders[name] = calls
    assert offenders == {}
