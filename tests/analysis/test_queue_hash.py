"""The job shuffles and sorts each queue's rows on a 64-bit hash of its five key columns first: one 8-byte sort
prefix tells two queues apart, and the aggregate per queue reuses that one shuffle and sort."""

from __future__ import annotations

import datetime as dt
import re

from pyspark.sql import SparkSession

from analysis.rules import Thresholds
from analysis.schema import SNAPSHOT_SCHEMA
from analysis.transforms import diagnose
from tests.analysis.conftest import T0, incident_rows, ms


def test_queue_rows_are_sorted_on_the_hash_then_the_key_and_shuffled_once(spark: SparkSession) -> None:
    snapshots = spark.createDataFrame(incident_rows(), SNAPSHOT_SCHEMA)
    verdicts = diagnose(snapshots, ms(T0), ms(T0 + dt.timedelta(minutes=10)), Thresholds())
    plan = verdicts._jdf.queryExecution().executedPlan().toString()
    sort_keys = r"queue_hash#\d+L ASC NULLS FIRST, cluster#\d+ ASC NULLS FIRST, group#\d+ ASC NULLS FIRST, " \
                r"topic#\d+ ASC NULLS FIRST, broker#\d+ ASC NULLS FIRST, queue_id#\d+ ASC NULLS FIRST, ts#\d+ ASC"
    assert re.search(r"Sort \[" + sort_keys, plan), plan
    assert len(re.findall(r"Exchange hashpartitioning\(queue_hash", plan)) == 1, plan
    # the incident's three queues of one group: healthy, stalled under c2, orphaned
    assert [(r["queue_id"], r["status"]) for r in verdicts.orderBy("queue_id").collect()] == [
        (0, "OK"), (1, "STALLED"), (2, "ORPHANED")]
