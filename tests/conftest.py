"""Shared pytest configuration: the real-RocketMQ fixtures from tests/harness, a private names
cache (commands note the group and topic names they read under ``$XDG_CACHE_HOME``), and the
``fast`` tier.

The fast tier (``pytest -m fast``) is every test that needs no real part: not under
``tests/integration`` or ``tests/analysis`` (real broker, Spark), not marked ``real_cluster`` or
``slow`` (nor listed in :data:`SLOW`), using no fixture that starts a real part, and driving no
real terminal (neither its function nor its fixtures refer to the tmux helpers in
``tests/*/terminal.py``). The marker is applied here at collection, so a new test file gets it by
these rules without being told. ``python -m pytest`` still runs every tier.

The whole suite runs on two pytest-xdist workers (``-n 2 --dist loadgroup``). Tests that share a
real part stay together on one worker (:func:`_xdist_group`): a test module driving a real broker
(its module-scoped clusters, proxies and clients are started once), every real dashboard test (the
three dashboards are started once per session), every Spark test (one local session). Each worker
starts its own session broker; everything else is spread test by test.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest_plugins = ["tests.harness.plugin"]

TESTS = Path(__file__).resolve().parent

#: directories whose tests all need a real part (a broker and Java clients, Spark)
REAL_PART_DIRECTORIES = frozenset({"integration", "analysis"})
#: fixtures that start a real part; a test using any of them (directly or not) is not fast
REAL_PART_FIXTURES = frozenset({"real_cluster", "scenario_clients", "dashboard_for", "spark", "spark_cluster",
                                "prometheus", "promtool"})
#: test files and test ids (relative to tests/) too slow for the fast tier, and why
SLOW: dict[str, str] = {
    "unit/test_static.py": "mypy and ruff over the whole tree: run them directly while working",
    "tui/test_pilot.py": "the whole TUI app, headless: pytest tests/tui while working on it",
    "tui/test_snapshots.py": "the whole TUI app rendered to SVG",
    "tui/test_controls.py": "the whole TUI app driving an emulator",
    "emulator/test_control.py": "served emulators in their own processes",
    "emulator/test_clock.py": "a live emulator waits host seconds",
    "snapshot/test_signals.py": "export processes stopped by signals",
    "snapshot/test_kill.py": "export processes killed mid-round",
    "unit/test_deadlines.py": "waits out real deadlines on silent peers (test_hostile_peers keeps one)",
    "exporter/test_metrics.py::test_sigterm_flushes_the_snapshots_and_exits_zero": "an exporter process stopped "
    "by a signal",
}
#: the helpers that start tmux: a test (or one of its fixtures) that refers to one drives a terminal
TERMINAL_MODULES = frozenset({"tests.tui.terminal", "tests.completion.terminal"})


def _refers_to_a_terminal(func: Callable[..., Any], depth: int = 0) -> bool:
    """``func`` names, among its globals, a tmux helper, or a class of its own module whose methods do."""
    code = getattr(func, "__code__", None)
    names = code.co_names if code is not None else ()
    module_globals = getattr(func, "__globals__", {})
    for name in names:
        target = module_globals.get(name)
        if getattr(target, "__module__", None) in TERMINAL_MODULES and name in ("Terminal", "tmux_running"):
            return True
        if (depth == 0 and inspect.isclass(target) and target.__module__ == func.__module__
                and any(_refers_to_a_terminal(m, depth + 1) for m in vars(target).values() if inspect.isfunction(m))):
            return True
    return False


def _is_fast(item: pytest.Item) -> bool:
    path = Path(str(item.path)).resolve()
    try:
        directory = path.relative_to(TESTS).parts[0]
    except (ValueError, IndexError):
        return False
    if directory in REAL_PART_DIRECTORIES or not isinstance(item, pytest.Function):
        return False
    relative = path.relative_to(TESTS).as_posix()
    if relative in SLOW or f"{relative}::{item.originalname}" in SLOW:
        item.add_marker(pytest.mark.slow)
    if item.get_closest_marker("real_cluster") or item.get_closest_marker("slow"):
        return False
    if REAL_PART_FIXTURES & set(item.fixturenames):
        return False
    funcs = [item.function]
    for defs in item._fixtureinfo.name2fixturedefs.values():
        funcs.extend(d.func for d in defs)
    return not any(_refers_to_a_terminal(f) for f in funcs)


def pytest_configure(config: pytest.Config) -> None:
    """An xdist worker gets ``COLUMNS=80`` and ``LINES=24`` from its parent's set-up; commands run
    by the tests would then wrap their tables at 80 columns, which a plain run never does."""
    if hasattr(config, "workerinput"):
        os.environ.pop("COLUMNS", None)
        os.environ.pop("LINES", None)


def _xdist_group(item: pytest.Item) -> str | None:
    """The pytest-xdist group ``item`` must run in (see the module's docstring), or None."""
    path = Path(str(item.path)).resolve()
    try:
        relative = path.relative_to(TESTS)
    except ValueError:
        return None
    fixtures = set(getattr(item, "fixturenames", ()))
    if relative.parts[0] == "analysis" or fixtures & {"spark", "spark_cluster"}:
        return "spark"
    if "dashboard_for" in fixtures:
        return "dashboard"
    if relative.parts[0] == "integration" or REAL_PART_FIXTURES & fixtures or item.get_closest_marker("real_cluster"):
        return f"module:{relative.as_posix()}"
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the fast tier, before ``-m`` selects on it; group tests that share a real part."""
    for item in items:
        if _is_fast(item):
            item.add_marker(pytest.mark.fast)
        else:
            group = _xdist_group(item)
            if group is not None:
                item.add_marker(pytest.mark.xdist_group(group))


@pytest.fixture(autouse=True, scope="session")
def _private_names_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Commands run by tests write their names cache here, never in the user's ~/.cache."""
    before = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("xdg-cache"))
    yield
    if before is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = before
