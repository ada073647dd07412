"""Both engines of ``analyze stuck`` on one input: every Spark verdict is also the local engine's, word for word.

:func:`diagnose` is a drop-in for ``analysis.transforms.diagnose`` that the job's tests use: it judges the
same snapshot rows with the Spark transforms and with :func:`rmqctl.localjob.verdicts.diagnose`, asserts that
every queue gets the same row (status, rule, reason, every number and timestamp, in the job's output form)
and that every group gets the same summary, and returns the Spark frame for the test's own assertions. So
each hand-written case of the job's tests is a case of the local engine too. :func:`run_both` does the same
for a whole run (files checked, warnings, document, exit code).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame

from analysis import stuck
from analysis.rules import Thresholds
from analysis.schema import QUEUE_KEY
from analysis.transforms import diagnose as spark_diagnose
from analysis.transforms import for_output, summarize_groups
from rmqctl.localjob import files as local_files
from rmqctl.localjob import job as local_job
from rmqctl.localjob import verdicts as local

_COLUMNS = list(local.COLUMNS_READ)


def local_thresholds(th: Thresholds | None) -> local.Thresholds:
    """The same knobs for the local engine."""
    return local.Thresholds(**dataclasses.asdict(th or Thresholds()))


def spark_rows(df: DataFrame) -> list[dict[str, Any]]:
    """A verdict or summary frame in the job's output form, ordered as the job writes it."""
    key = list(QUEUE_KEY) if "queue_id" in df.columns else ["cluster", "group"]
    return [r.asDict() for r in for_output(df).orderBy(*key).collect()]


def local_diagnose(snapshots: DataFrame, since_ms: int, until_ms: int,
                   th: Thresholds | None = None) -> list[dict[str, Any]]:
    """The local engine's verdicts over the rows of a snapshot frame."""
    rows = local_files.normalized(snapshots.select(*_COLUMNS).toArrow())
    return local.diagnose(rows, since_ms, until_ms, local_thresholds(th))


def assert_same(by_spark: list[dict[str, Any]], by_local: list[dict[str, Any]]) -> None:
    """Queue by queue, then column by column, so that a difference names its queue and column."""
    def key(r: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(r.get(k) for k in QUEUE_KEY)

    assert [key(r) for r in by_local] == [key(r) for r in by_spark]
    for mine, theirs in zip(by_local, by_spark, strict=True):
        assert list(mine) == list(theirs), key(theirs)
        differ = {k: (theirs[k], mine[k]) for k in theirs if mine[k] != theirs[k]}
        assert differ == {}, (key(theirs), "spark vs local", differ)


def diagnose(snapshots: DataFrame, since_ms: int, until_ms: int, th: Thresholds | None = None) -> DataFrame:
    """``analysis.transforms.diagnose``, checked against the local engine on the same rows."""
    verdicts = spark_diagnose(snapshots, since_ms, until_ms, th)
    by_local = local_diagnose(snapshots, since_ms, until_ms, th)
    assert_same(spark_rows(verdicts), by_local)
    assert_same(spark_rows(summarize_groups(verdicts)), local.summarize_groups(by_local))
    return verdicts


def run_both(spark: Any, argv: list[str], now_ms: int | None = None,
             on_warning: Callable[[str], None] | None = None) -> tuple[int, dict[str, Any]]:
    """``analysis.stuck`` plan + run with ``-o json``, and the local engine on the same options: the same
    warnings, the same exit code and the same document (or the same error). Returns the job's."""
    parsed = stuck.build_parser().parse_args(argv)
    out = Path(parsed.out) if parsed.out else None
    assert out is not None and parsed.output == "json", "run_both needs -o json --out FILE"
    spark_warnings: list[str] = []
    local_warnings: list[str] = []
    th = local.Thresholds(min_snapshots=parsed.min_snapshots, allowed_lag=parsed.allowed_lag,
                          retry_allowed_lag=parsed.retry_allowed_lag)
    spark_error = local_error = None
    try:
        code = stuck.run(spark, stuck.plan(parsed, now_ms=now_ms), spark_warnings.append)
    except stuck.JobError as exc:
        spark_error = str(exc)
    local_plan = local_job.plan(Path(parsed.directory), parsed.window, parsed.since, parsed.until, th,
                                now_ms=now_ms)
    try:
        local_code, document = local_job.run(local_plan, local_warnings.append)
    except local_files.JobError as exc:
        local_error = str(exc)
    assert local_warnings == spark_warnings
    assert local_error == spark_error
    # the same again with the rows cut into buckets of a few rows, spilled and judged one at a time
    bucketed_warnings: list[str] = []
    try:
        bucketed = local_job.run(local_plan, bucketed_warnings.append, bucket_rows=7)
    except local_files.JobError as exc:
        assert str(exc) == local_error
    else:
        assert bucketed == (local_code, document)
    assert bucketed_warnings == local_warnings
    for message in spark_warnings:
        (on_warning or (lambda _: None))(message)
    if spark_error is not None:
        raise stuck.JobError(spark_error)
    expected = json.loads(out.read_text())
    assert local_code == code
    assert (document["since"], document["until"], document["since_ts"], document["until_ts"]) == (
        expected["since"], expected["until"], expected["since_ts"], expected["until_ts"])
    assert_same(expected["queues"], document["queues"])
    assert_same(expected["groups"], document["groups"])
    assert document == expected
    return code, expected
