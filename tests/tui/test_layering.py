"""The core and the CLI never load textual or pyspark; the TUI command loads textual lazily."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)


def test_core_and_cli_import_neither_textual_nor_pyspark() -> None:
    proc = run("import rmqctl, rmqctl.cli.app; import sys; "
               "assert 'textual' not in sys.modules and 'pyspark' not in sys.modules")
    assert proc.returncode == 0, proc.stderr


def test_the_tui_command_module_and_snapshot_command_stay_light() -> None:
    proc = run("import sys, tui.command, rmqctl.snapshot.command; "
               "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
               "{'textual', 'pyspark', 'pyarrow'}); assert not bad, bad")
    assert proc.returncode == 0, proc.stderr


def test_the_tui_app_loads_textual() -> None:
    proc = run("import sys, tui.app; assert 'textual' in sys.modules; "
               "assert 'pyspark' not in sys.modules")
    assert proc.returncode == 0, proc.stderr
