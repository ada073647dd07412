"""The job numbers the queues it reads and shuffles, sorts and aggregates each queue's rows on that number alone:
the five key columns (four strings) are neither carried through the shuffle nor compared in the sort, and are
joined back to the one summary row of each queue."""

from __future__ import annotations

import datetime as dt
import re

from pyspark.sql import SparkSession

from analysis.rules import Thresholds
from analysis.schema import SNAPSHOT_SCHEMA
from analysis.transforms import diagnose, number_queues
from tests.analysis.conftest import T0, incident_rows, ms, row


def test_queue_rows_are_sorted_on_the_queue_number_then_time_and_shuffled_once(spark: SparkSession) -> None:
    snapshots = spark.createDataFrame(incident_rows(), SNAPSHOT_SCHEMA)
    verdicts = diagnose(snapshots, ms(T0), ms(T0 + dt.timedelta(minutes=10)), Thresholds())
    plan = verdicts._jdf.queryExecution().executedPlan().toString()
    assert re.search(r"Sort \[queue_no#\d+ ASC NULLS FIRST, ts#\d+ ASC NULLS FIRST\]", plan), plan
    exchanges = re.findall(r"Exchange hashpartitioning\(queue_no#\d+, \d+\), ENSURE_REQUIREMENTS, \[plan_id=\d+\]\n"
                           r"[\s:]*\+- Project \[([^\]]*)\]", plan)
    assert len(exchanges) == 1, plan
    # what crosses the shuffle: the number, no key column
    shuffled = {re.sub(r"#\d+L?$", "", c.strip()) for c in exchanges[0].split(",")}
    assert "queue_no" in shuffled and not shuffled & {"cluster", "group", "topic", "broker", "queue_id"}, shuffled
    # the owner crosses it as a number, the two times only the last row's lag needs as one difference
    assert "owner_no" in shuffled and not shuffled & {"owner", "last_consumed_ts", "broker_last_ts"}, shuffled
    # the aggregate per queue picks rows field by field, over fixed-width values: no struct, no string
    aggregate = re.search(r"Aggregate\(key=\[queue_no#\d+\], functions=\[(.*)", plan)
    assert aggregate is not None and "struct(" not in aggregate.group(1), plan
    assert not re.search(r"\(owner#", aggregate.group(1)), plan
    # the incident's three queues of one group: healthy, stalled under c2, orphaned
    assert [(r["queue_id"], r["status"]) for r in verdicts.orderBy("queue_id").collect()] == [
        (0, "OK"), (1, "STALLED"), (2, "ORPHANED")]


def test_queues_are_numbered_densely_in_key_order(spark: SparkSession) -> None:
    rows = [row(i, 10, 10, group=g, topic=t, broker=b, queue_id=q)
            for i in range(2) for g, t, b, q in [("g2", "T", "broker-a", 0), ("g1", "U", "broker-b", 3),
                                                  ("g1", "U", "broker-b", 1), ("g1", "T", "broker-b", 7)]]
    numbered = number_queues(spark.createDataFrame(rows, SNAPSHOT_SCHEMA))
    assert [(r["group"], r["topic"], r["broker"], r["queue_id"], r["queue_no"])
            for r in numbered.orderBy("queue_no").collect()] == [
        ("g1", "T", "broker-b", 7, 1), ("g1", "U", "broker-b", 1, 2), ("g1", "U", "broker-b", 3, 3),
        ("g2", "T", "broker-a", 0, 4)]
