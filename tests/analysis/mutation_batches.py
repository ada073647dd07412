"""Mutation score of the stuck rules (``analysis/rules.py``), many mutants to one Spark job.

``python -m tests.mutation analysis/rules.py`` comes here. The rules only build Spark expressions:
which mutant is active matters while a plan is built, never while it runs (no Python UDFs). So
mutmut's trampolines are switched to one mutant after another while the rules table of
``tests/analysis/test_rules.py`` is planned, each plan tagged with its mutant, and a batch of them
runs as one union on one local[1] session. A mutant is killed when planning fails or its verdicts
differ from the table's, column for column (every column the rules tests compare); when a batch's
job fails, its mutants are run one by one. Results go where mutmut keeps them, so ``mutmut show``
works on the survivors. Forking a worker per mutant would start one JVM per mutant.

Imports mutmut, pyspark and the tests; nothing here is imported by the product.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from functools import reduce
from typing import Any

BATCH = 25


def _rows(frame: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in frame.collect()), key=repr)


def run() -> None:
    """Generate the mutants of the configured module (mutmut) and judge each with the rules table."""
    from mutmut.__main__ import collect_source_file_mutation_data, create_mutants
    from mutmut.mutation.trampoline import set_mutant_under_test
    from mutmut.utils.file_utils import copy_also_copy_files, copy_src_dir, setup_source_paths

    set_mutant_under_test("mutant_generation")
    os.makedirs("mutants", exist_ok=True)
    copy_src_dir()
    copy_also_copy_files()
    setup_source_paths()
    create_mutants(1)
    mutants, _ = collect_source_file_mutation_data(mutant_names=[])
    # the mutated copy must be what the tests import
    for module in [m for m in sys.modules if m.split(".")[0] in ("tests", "analysis")]:
        del sys.modules[module]

    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from tests.analysis import test_rules

    spark = (SparkSession.builder.master("local[1]").appName("rmqctl-rules-mutation")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.memory", "512m").config("spark.sql.shuffle.partitions", "1")
             .config("spark.sql.session.timeZone", "UTC").config("spark.sql.caseSensitive", "true").getOrCreate())
    spark.sparkContext.setLogLevel("OFF")
    expected = [test_rules.expected_verdicts(spark), test_rules.expected_spans(spark)]
    wanted = [(list(e.columns), _rows(e), [r["group"] for r in e.select("group").collect()]) for e in expected]
    columns = list(dict.fromkeys(c for cols, _, _ in wanted for c in cols))

    def plan(name: str) -> Any:
        set_mutant_under_test(name)
        try:
            return test_rules.judged(spark).select(*columns).withColumn("mutant", F.lit(name))
        finally:
            set_mutant_under_test("")

    def agrees(rows: Sequence[Any]) -> bool:
        for cols, want, groups in wanted:
            got = sorted((tuple(r[c] for c in cols) for r in rows if r["group"] in groups), key=repr)
            if got != want:
                return False
        return True

    clean = plan("")
    if not agrees(clean.collect()):
        raise SystemExit("the rules table fails without any mutant")
    try:
        plan("fail").collect()
        raise SystemExit("mutmut's forced failure did not reach the rules")
    except SystemExit:
        raise
    except BaseException:  # noqa: B036 - the trampoline's forced failure
        pass

    started = time.monotonic()
    ordered = sorted(mutants, key=lambda m: m[1])
    verdicts: dict[str, bool] = {}
    for first in range(0, len(ordered), BATCH):
        batch = ordered[first:first + BATCH]
        planned = []
        for _, name, _ in batch:
            try:
                planned.append((name, plan(name)))
            except Exception:  # noqa: BLE001 - a mutant that cannot even be planned is killed
                verdicts[name] = True
        by_mutant: dict[str, list[Any]] = {name: [] for name, _ in planned}
        try:
            if planned:
                for row in reduce(lambda a, b: a.unionByName(b), [p for _, p in planned]).collect():
                    by_mutant[row["mutant"]].append(row)
        except Exception:  # noqa: BLE001 - one mutant broke the job: judge the batch one by one
            by_mutant = {}
            for name, frame in planned:
                try:
                    by_mutant[name] = frame.collect()
                except Exception:  # noqa: BLE001
                    verdicts[name] = True
        for name, rows in by_mutant.items():
            verdicts[name] = not agrees(rows)
        done = min(first + BATCH, len(ordered))
        print(f"{done}/{len(ordered)} mutants, {sum(verdicts.values())} killed, "
              f"{time.monotonic() - started:.0f}s", file=sys.stderr, flush=True)
    spark.stop()
    for data, name, _ in ordered:
        data.exit_code_by_key[name] = 1 if verdicts[name] else 0
    for data in {id(d): d for d, _, _ in ordered}.values():
        data.save()
