"""The Spark job ships with spark-submit: every module of ``analysis/`` imports only pyspark, the
standard library and ``analysis`` itself (read from the source, without importing it)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ANALYSIS = Path(__file__).resolve().parents[2] / "analysis"


def _top_level_imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_analysis_imports_only_pyspark_and_the_standard_library() -> None:
    modules = sorted(ANALYSIS.glob("*.py"))
    assert {m.name for m in modules} >= {"files.py", "rules.py", "schema.py", "stuck.py", "transforms.py"}
    allowed = set(sys.stdlib_module_names) | {"pyspark", "analysis", "__future__"}
    outside = {f"{m.name}: {name}" for m in modules for name in _top_level_imports(m) - allowed}
    assert outside == set()
