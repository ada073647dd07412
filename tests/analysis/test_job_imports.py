"""The Spark job ships with spark-submit: every module of ``analysis/`` imports only pyspark, the
standard library and ``analysis`` itself; ``analysis/definition.py``, the job's copy of the one
definition of a stuck queue, has the same code as :mod:`rmqctl.stuck` and both import only the
standard library (read from the source, without importing it)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ANALYSIS = ROOT / "analysis"
SHARED = "analysis.definition"


def _imports(path: Path) -> set[str]:
    """Every module ``path`` imports, by its full name (``from a import b`` counts as ``a.b`` when
    ``a`` is rmqctl, whose submodules are what matters here)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "rmqctl":
                names.update(f"rmqctl.{alias.name}" for alias in node.names)
            else:
                names.add(node.module)
    return names


def _outside(names: set[str], allowed_top: set[str], allowed_full: set[str]) -> set[str]:
    return {n for n in names if n.split(".")[0] not in allowed_top and n not in allowed_full}


def test_analysis_imports_only_pyspark_the_standard_library_and_the_stuck_definition() -> None:
    modules = sorted(ANALYSIS.glob("*.py"))
    assert {m.name for m in modules} >= {"files.py", "rules.py", "schema.py", "stuck.py", "transforms.py"}
    allowed = set(sys.stdlib_module_names) | {"pyspark", "analysis", "__future__"}
    outside = {f"{m.name}: {name}" for m in modules for name in _outside(_imports(m), allowed, {SHARED})}
    assert outside == set()
    assert any(SHARED in _imports(m) for m in modules)  # the rules do share it


def test_the_shared_definition_and_the_package_it_opens_import_only_the_standard_library() -> None:
    allowed = set(sys.stdlib_module_names) | {"__future__"}
    for path in (ANALYSIS / "definition.py", ANALYSIS / "__init__.py", ROOT / "rmqctl" / "stuck.py"):
        assert _outside(_imports(path), allowed, set()) == set(), path


def _code(path: Path) -> str:
    """The module's code without its docstring, as the parser reads it (comments and layout aside)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return ast.dump(ast.Module(body=tree.body[1:], type_ignores=[]))


def test_the_jobs_copy_of_the_definition_is_the_doctors() -> None:
    assert _code(ANALYSIS / "definition.py") == _code(ROOT / "rmqctl" / "stuck.py")
