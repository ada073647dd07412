"""The doctor's numbers against what real Java listeners received, on a real 5.3.3 broker.

The session broker runs with ``enablePropertyFilter=true``. ``rmqctl.harness.FilterClients``
(tests/harness) runs the real clients: a SQL92 consumer (``MessageSelector.bySql("p_a > 5")``) and
a tag consumer (``tagX || tagY``) in one group; an orderly consumer whose listener answers
SUSPEND_CURRENT_QUEUE_A_MOMENT on queue 0. Every expected number comes from the Java listeners'
own records (and the producer's properties, read literally), never from rmqctl.
"""

from __future__ import annotations

import itertools
import json
import time
from collections import Counter
from typing import Any

import pytest
from typer.testing import CliRunner

from rmqctl.cli.app import app
from tests.harness.realcluster import RealCluster, ScenarioClientsProcess

pytestmark = pytest.mark.real_cluster

_ids = itertools.count(1)


class FilterClientsProcess(ScenarioClientsProcess):
    main_class = "rmqctl.harness.FilterClients"


def _doctor(cluster: RealCluster, group: str, *args: str) -> dict[str, Any]:
    result = CliRunner().invoke(app, ["-n", cluster.namesrv_addr, "doctor", group, "-o", "json", *args])
    assert result.exit_code in (0, 1), result.output
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


def _wait(predicate: Any, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.5)


def _progress(cluster: RealCluster, group: str) -> list[dict[str, Any]]:
    result = CliRunner().invoke(app, ["-n", cluster.namesrv_addr, "group", "progress", group, "-o", "json"])
    if result.exit_code != 0:
        return []
    doc = json.loads(result.stdout)
    rows: list[dict[str, Any]] = doc["queues"] if isinstance(doc, dict) else doc
    return rows


def test_sql92_and_tag_clients_doctor_counts_what_the_listeners_received(real_cluster: RealCluster) -> None:
    n = next(_ids)
    topic, group = f"FilterT{n}", f"filter-g{n}"
    real_cluster.create_topic(topic, 4)
    ns = real_cluster.namesrv_addr
    with FilterClientsProcess(real_cluster) as fc:
        sql = fc.request({"cmd": "start_consumer", "id": "sql", "namesrv": ns, "group": group, "topic": topic,
                          "expression": "p_a > 5", "sql": True})["client_id"]
        tag = fc.request({"cmd": "start_consumer", "id": "tag", "namesrv": ns, "group": group, "topic": topic,
                          "expression": "tagX || tagY"})["client_id"]
        # both clients hold two queues before anything is sent
        _wait(lambda: sorted(Counter(r.get("client") or r.get("owner") for r in _progress(real_cluster, group)
                                     if r.get("topic") == topic).values()) == [2, 2])
        time.sleep(3)
        for t in ("tagX", "tagY", "tagZ"):
            fc.request({"cmd": "produce", "namesrv": ns, "topic": topic, "tag": t, "count": 8,
                        "properties": {"p_a": ["1", "9"]}})

        def settled() -> bool:
            rows = [r for r in _progress(real_cluster, group) if r.get("topic") == topic]
            return len(rows) == 4 and all(r["broker_offset"] == r["consumer_offset"] for r in rows)

        _wait(settled, timeout=90)
        time.sleep(2)
        doc = _doctor(real_cluster, group, "--fail-on", "never")
        got = fc.request({"cmd": "received"})["received"]
    f = next(x for x in doc["findings"] if x["code"] == "SUBSCRIPTION_TAG_CONFLICT")
    # what differs is a SQL92 expression and a tag expression, and the title says so
    assert f["title"] == f"Clients of {group} subscribe {topic} with different filter expressions (SQL92 and tags)"
    ev = f["evidence"]
    truth = {sql: Counter(m["tag"] for m in got["sql"]), tag: Counter(m["tag"] for m in got["tag"])}
    # nothing was judged under an earlier expression, nothing is left pending
    assert ev["consumed_before_current_expression"] == {}
    assert ev["counts"]["pending"] == {}
    # received: exactly what each Java listener got
    assert {c: dict(v) for c, v in ev["counts"]["received_by_client"].items()} == {
        c: dict(v) for c, v in truth.items()}
    # lost: produced minus received, per tag
    produced = {"tagX": 8, "tagY": 8, "tagZ": 8}
    received_all = truth[sql] + truth[tag]
    lost = {t: produced[t] - received_all.get(t, 0) for t in produced if produced[t] > received_all.get(t, 0)}
    assert ev["lost_in_sample"] == lost
    # the SQL client's messages its own filter excludes: p_a = "1", read literally
    outside = Counter(m["tag"] for m in got["sql"] if m["properties"].get("p_a") == "1")
    assert ev["delivered_outside_own_filter"] == ({sql: dict(outside)} if outside else {})


def test_orderly_suspend_is_an_error_naming_the_queue_and_the_client(real_cluster: RealCluster) -> None:
    n = next(_ids)
    topic, group = f"OrderT{n}", f"order-g{n}"
    real_cluster.create_topic(topic, 2)
    ns = real_cluster.namesrv_addr
    with FilterClientsProcess(real_cluster) as fc:
        cid = fc.request({"cmd": "start_consumer", "id": "ord", "namesrv": ns, "group": group, "topic": topic,
                          "expression": "*", "orderly": True, "suspend_queues": [0]})["client_id"]
        _wait(lambda: len([r for r in _progress(real_cluster, group) if r.get("topic") == topic]) == 2)
        for q in (0, 1):
            fc.request({"cmd": "produce", "namesrv": ns, "topic": topic, "tag": "o", "count": 20, "queue": q})

        def queue1_done() -> bool:
            got = fc.request({"cmd": "received"})["received"]
            return len(got.get("ord", [])) == 20

        _wait(queue1_done, timeout=60)
        # the client's failure statistics are sampled every 10 s
        time.sleep(12)
        result = CliRunner().invoke(app, ["-n", ns, "doctor", group, "-o", "json"])
        got = fc.request({"cmd": "received"})["received"]["ord"]
    # the Java listener got queue 1's 20 and nothing of queue 0
    assert {m["queue_id"] for m in got} == {1}
    assert result.exit_code == 1, result.output  # an error at the default --fail-on error
    doc = json.loads(result.stdout)
    found = {x["code"]: x for x in doc["findings"]}
    f = found["ORDERLY_QUEUE_SUSPENDED"]
    assert f["severity"] == "error"
    (row,) = f["evidence"]["queues"]
    assert (row["topic"], row["queue_id"], row["client"]) == (topic, 0, cid)
    assert row["consumer_offset"] == 0 and row["diff"] == 20 and row["listener_fails"] is True
    # the queue in the words every finding uses
    assert f"{topic}@{row['broker']} queue 0 held by {cid} (consumer offset 0, " in f["detail"]
    failures = found.get("CONSUME_FAILURES")
    if failures is not None:
        assert "%RETRY%" not in failures["detail"] and "dead-letter" not in failures["detail"]


def test_a_client_stopped_mid_stream_never_turns_its_losses_into_deliveries(real_cluster: RealCluster) -> None:
    # A ("tagX") and B ("*") share a group; tagX and tagY are sent while both run, A is stopped
    # (keeping what its listener received), and the broker then holds B's "*". Whatever the broker
    # held before, the doctor must not report more deliveries of a tag to a client than the
    # Java listener received, nor more losses than truly happened.
    n = next(_ids)
    topic, group = f"HistT{n}", f"hist-g{n}"
    real_cluster.create_topic(topic, 2)
    ns = real_cluster.namesrv_addr
    with FilterClientsProcess(real_cluster) as fc:
        b = fc.request({"cmd": "start_consumer", "id": "b", "namesrv": ns, "group": group, "topic": topic,
                        "expression": "*"})["client_id"]
        a = fc.request({"cmd": "start_consumer", "id": "a", "namesrv": ns, "group": group, "topic": topic,
                        "expression": "tagX"})["client_id"]
        _wait(lambda: sorted(Counter(r.get("owner") for r in _progress(real_cluster, group)
                                     if r.get("topic") == topic).values()) == [1, 1])
        time.sleep(3)
        for t in ("tagX", "tagY"):
            fc.request({"cmd": "produce", "namesrv": ns, "topic": topic, "tag": t, "count": 10})
        time.sleep(4)
        fc.request({"cmd": "stop_consumer", "id": "a"})

        def settled() -> bool:
            rows = [r for r in _progress(real_cluster, group) if r.get("topic") == topic]
            return (len(rows) == 2 and all(r["owner"] == b for r in rows)
                    and all(r["broker_offset"] == r["consumer_offset"] for r in rows))

        _wait(settled, timeout=90)
        # a second client of another expression brings the conflict check back
        fc.request({"cmd": "start_consumer", "id": "c", "namesrv": ns, "group": group, "topic": topic,
                    "expression": "tagZ"})
        time.sleep(5)
        doc = _doctor(real_cluster, group, "--fail-on", "never")
        got = fc.request({"cmd": "received"})["received"]
    truth = {a: Counter(m["tag"] for m in got["a"]), b: Counter(m["tag"] for m in got["b"])}
    f = next(x for x in doc["findings"] if x["code"] == "SUBSCRIPTION_TAG_CONFLICT")
    # three tag expressions: the title says tags, not SQL92
    assert f["title"] == f"Clients of {group} subscribe {topic} with different tags"
    ev = f["evidence"]
    for client, per_tag in ev["counts"]["received_by_client"].items():
        for tag, count in per_tag.items():
            assert count <= truth.get(client, Counter())[tag], (client, tag, count, truth)
    produced = {"tagX": 10, "tagY": 10}
    received_all = truth[a] + truth[b]
    for tag, count in ev["lost_in_sample"].items():
        assert count <= produced.get(tag, 0) - received_all.get(tag, 0), (tag, count, truth)
    # every message sampled is accounted for, the undatable ones as unknown
    counted = sum(sum(v.values()) for v in ev["counts"]["received_by_client"].values())
    counted += sum(ev["lost_in_sample"].values()) + sum(ev["counts"]["pending"].values())
    counted += sum(ev["consumed_before_current_expression"].values()) + sum(ev["unjudged_in_sample"].values())
    assert counted == 20
