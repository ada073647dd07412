"""Mutation score of one module: ``python -m tests.mutation rmqctl/doctor``.

Runs mutmut (configured in ``[tool.mutmut]`` of pyproject.toml) on the one module or package
given, against the fast tests listed for it in ``[tool.rmqctl.mutation]`` (no Java, no real
broker), and prints how many of its mutants the tests kill. mutmut copies the tree into
``mutants/`` and runs, per mutant, only the tests that reach the mutated function, in forked
workers (``--max-children``, default 2: the machine's cores are shared). Every run starts from a
fresh ``mutants/`` so the score always reflects the tests as they are now.

Modules under ``analysis/`` are judged by Spark tests: forking a worker per mutant would start a
JVM per mutant, so they are judged in batches on one session instead
(:mod:`tests.analysis.mutation_batches`).

Survivors are listed at the end; ``mutmut show NAME`` (from the project root, after a run) prints
the diff of one. Imports mutmut and pytest only; nothing here is imported by the product.
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import sys
import tomllib
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: mutmut's statuses that count as detected by the tests
DETECTED = {"killed", "timeout", "caught by type check"}
#: statuses left out of the score (the mutant could not be judged)
NOT_JUDGED = {"skipped", "not checked", "check was interrupted by user"}


def _settings() -> dict[str, list[str]]:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    table: dict[str, list[str]] = data.get("tool", {}).get("rmqctl", {}).get("mutation", {})
    return table


def _module_glob(target: str) -> tuple[str, str]:
    """``rmqctl/doctor`` → (``rmqctl/doctor/*``, ``rmqctl.doctor.*``); a ``.py`` file alike."""
    path = target.rstrip("/")
    if path.endswith(".py"):
        return path, path[:-3].replace("/", ".") + ".*"
    return path + "/*", path.replace("/", ".") + ".*"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.mutation", description=__doc__.split("\n")[0])
    parser.add_argument("target", help="a module or package path, e.g. rmqctl/doctor or "
                        "rmqctl/rebalance/strategies.py")
    parser.add_argument("--max-children", type=int, default=2, help="parallel mutant workers (default 2)")
    parser.add_argument("--tests", nargs="+", metavar="PATH",
                        help="test files or directories to judge with (default: pyproject's list)")
    args = parser.parse_args(argv)

    target = args.target.rstrip("/")
    if not (ROOT / target).exists():
        parser.error(f"no such module: {target}")
    selections = _settings()
    tests = args.tests or selections.get(target)
    if not tests:
        parser.error(f"no tests listed for {target} in [tool.rmqctl.mutation] of pyproject.toml; "
                     f"give them with --tests")

    import os

    os.chdir(ROOT)
    shutil.rmtree(ROOT / "mutants", ignore_errors=True)

    from mutmut import configuration

    only, _ = _module_glob(target)
    configuration._config = dataclasses.replace(
        configuration._load_config(), only_mutate=[only], pytest_add_cli_args_test_selection=list(tests),
    )
    from mutmut.__main__ import _run
    from mutmut.mutation.data import SourceFileMutationData
    from mutmut.stats import status_by_exit_code
    from mutmut.utils.file_utils import walk_mutatable_files

    try:
        if target.startswith("analysis/"):
            from tests.analysis.mutation_batches import run as run_in_batches

            run_in_batches()
        else:
            _run([], args.max_children)
    except SystemExit as exc:
        if exc.code not in (0, None):
            print(f"mutation run failed (exit {exc.code}); see the output above", file=sys.stderr)
            return 2

    counts: Counter[str] = Counter()
    survivors: list[str] = []
    for path in walk_mutatable_files():
        data = SourceFileMutationData(path=path)
        data.load()
        for name, code in sorted(data.exit_code_by_key.items()):
            status = status_by_exit_code[code]
            counts[status] += 1
            if status not in DETECTED and status not in NOT_JUDGED:
                survivors.append(f"{status}: {name}")
    judged = sum(n for s, n in counts.items() if s not in NOT_JUDGED)
    killed = sum(n for s, n in counts.items() if s in DETECTED)
    print()
    if survivors:
        print("Not killed (mutmut show NAME prints the change):")
        print("\n".join(f"  {line}" for line in survivors))
    print(f"by status: {dict(sorted(counts.items()))}")
    score = 100.0 * killed / judged if judged else 0.0
    print(f"mutation score of {target}: {killed}/{judged} killed ({score:.1f} %) "
          f"with {' '.join(tests)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
