"""The documents of the emulator commands and ``demo``: the run report, scenarios, a parsed
scenario, the served emulator's clients and control-API results.

The emulator's control API answers in its own JSON; these functions turn it into command
documents (with ``errors``). Must not import the CLI, the TUI, the doctor or pyspark.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypedDict

from rmqctl.report.common import Errors, RowSet, error_rows
from rmqctl.report.doctor import FINDING_COLUMNS
from rmqctl.report.group import ASSIGNMENT_COLUMNS, GroupAssignmentDoc, GroupShowDoc, assignment_rows


class EmulatorRunDoc(TypedDict):
    scenario: str
    at: float
    consumers: dict[str, dict[str, Any]]
    produced_by_tag: dict[str, int]
    lost_by_tag: dict[str, int]
    broker_subscriptions: dict[str, Any]
    errors: Errors


def emulator_run(report: Mapping[str, Any]) -> EmulatorRunDoc:
    """The emulator's run report (its response codes already named: ``SUBSCRIPTION_NOT_EXIST (24)``)."""
    consumers = {cid: dict(c) for cid, c in report["consumers"].items()}
    return EmulatorRunDoc(scenario=report["scenario"], at=report["at"], consumers=consumers,
                          produced_by_tag=dict(report["produced_by_tag"]), lost_by_tag=dict(report["lost_by_tag"]),
                          broker_subscriptions=dict(report["broker_subscriptions"]),
                          errors=dict(report.get("errors", {})))


def emulator_run_rows(doc: EmulatorRunDoc) -> list[RowSet]:
    consumers = [
        {"client_id": cid, "group": c["group"], "received_by_tag": c["received_by_tag"], "queues": c["queues"],
         "pull_errors": c["pull_errors"]}
        for cid, c in doc["consumers"].items()
    ]
    tags = [{"tag": tag, "produced": n, "lost": doc["lost_by_tag"].get(tag, 0)}
            for tag, n in doc["produced_by_tag"].items()]
    subs = [
        {"broker": broker, "group": group, "topic": topic, "expression": sub["expression"],
         "sub_version": sub["sub_version"]}
        for broker, groups in doc["broker_subscriptions"].items()
        for group, topics in groups.items()
        for topic, sub in topics.items()
    ]
    return [
        RowSet("consumer", ("client_id", "group", "received_by_tag", "queues", "pull_errors"), consumers),
        RowSet("tag", ("tag", "produced", "lost"), tags),
        RowSet("broker_subscription", ("broker", "group", "topic", "expression", "sub_version"), subs),
        *error_rows(doc),
    ]


class DemoGroupDoc(TypedDict):
    show: GroupShowDoc
    assignment: GroupAssignmentDoc
    findings: list[dict[str, Any]]


class DemoDoc(TypedDict):
    scenario: EmulatorRunDoc
    description: str
    namesrv: str
    groups: dict[str, DemoGroupDoc]
    errors: Errors


def demo_rows(doc: DemoDoc) -> list[RowSet]:
    """The run report's rows, then each group's subscriptions, assignment and findings (rows of
    a group carry its name)."""
    run = [r for r in emulator_run_rows(doc["scenario"]) if r.kind != "error"]
    subs, assignment, findings = [], [], []
    for group, part in doc["groups"].items():
        subs += [{"group": group, **row} for row in part["show"]["subscriptions"]]
        assignment += [{"group": group, **row} for row in assignment_rows(part["assignment"])]
        findings += part["findings"]
    return [
        *run,
        RowSet("subscription", ("group", "topic", "source", "expression", "tags", "sub_version", "subscribed",
                                "differs"), subs),
        RowSet("assignment", ("group", *ASSIGNMENT_COLUMNS), assignment),
        RowSet("finding", FINDING_COLUMNS, findings),
        *error_rows(doc),
    ]


# ---------------------------------------------------------------------------------------------
# Scenarios, and a served emulator's control API


SCENARIO_COLUMNS = ("name", "description")


def scenarios(listed: Iterable[tuple[str, str]]) -> dict[str, Any]:
    """``emulator scenarios``: each built-in scenario's name and one-line description."""
    return {"scenarios": [{"name": name, "description": desc} for name, desc in listed], "errors": {}}


def scenarios_rows(doc: Mapping[str, Any]) -> list[RowSet]:
    return [RowSet("scenario", SCENARIO_COLUMNS, doc["scenarios"])]


def scenario(spec: Any) -> dict[str, Any]:
    """``emulator show -o json``: the parsed scenario (an ``emulator.scenario.Scenario``; the
    documents stand above the emulator and never import it)."""
    return {
        "name": spec.name, "description": spec.description, "duration": spec.duration,
        "source": spec.source,
        "brokers": [{"name": b.name, "cluster": b.cluster} for b in spec.brokers],
        "topics": [{"name": t.name, "read_queues": t.read_queues, "write_queues": t.write_queues,
                    "perm": t.perm, "brokers": list(spec.topic_brokers(t))} for t in spec.topics],
        "consumers": [{"group": c.group, "client_id": c.client_id, "subscriptions": dict(c.subscriptions),
                       "start": c.start, "stop": c.stop, "strategy": c.strategy,
                       "message_model": c.message_model} for c in spec.consumers],
        "produce": [{"at": p.at, "topic": p.topic, "tag": p.tag, "count": p.count, "queue": p.queue}
                    for p in spec.produce],
        "errors": {},
    }


def scenario_rows(doc: Mapping[str, Any]) -> list[RowSet]:
    return [
        RowSet("broker", ("name", "cluster"), doc["brokers"]),
        RowSet("topic", ("name", "read_queues", "write_queues", "perm", "brokers"), doc["topics"]),
        RowSet("consumer", ("group", "client_id", "subscriptions", "start", "stop", "strategy", "message_model"),
               doc["consumers"]),
        RowSet("produce", ("at", "topic", "tag", "count", "queue"), doc["produce"]),
    ]


CLIENT_COLUMNS = ("client_id", "key", "group", "running", "message_model", "strategy", "subscriptions", "queues",
                  "received_by_tag", "pull_errors")


def clients(answer: Mapping[str, Any]) -> dict[str, Any]:
    """``emulator ctl clients``: the control API's clients list, as it answered."""
    return {"clients": list(answer.get("clients", [])), "errors": {}}


def clients_rows(doc: Mapping[str, Any]) -> list[RowSet]:
    return [RowSet("client", CLIENT_COLUMNS, doc["clients"])]


def state(answer: Mapping[str, Any]) -> dict[str, Any]:
    """``emulator ctl state``: the emulator's whole state dump, as it answered."""
    return {**answer, "errors": {}}


def state_rows(doc: Mapping[str, Any]) -> list[RowSet]:
    """One row per simulated client."""
    return clients_rows({"clients": doc.get("clients", [])})


def control_result(answer: Any) -> dict[str, Any]:
    """``emulator ctl start-consumer|stop-consumer|advance``: the control API's answer (an object,
    or ``{"value": …}`` for anything else)."""
    return {**answer, "errors": {}} if isinstance(answer, dict) else {"value": answer, "errors": {}}


def control_result_rows(doc: Mapping[str, Any]) -> list[RowSet]:
    record = {k: v for k, v in doc.items() if k != "errors"}
    return [RowSet("result", tuple(record), [record])]


MESSAGE_COLUMNS = ("broker", "queue_id", "queue_offset", "tag", "msg_id")


def produced(answer: Mapping[str, Any]) -> dict[str, Any]:
    """``emulator ctl produce``: how many were sent, and each message's queue and offset."""
    return {**answer, "errors": {}}


def produced_rows(doc: Mapping[str, Any]) -> list[RowSet]:
    return [RowSet("message", MESSAGE_COLUMNS, doc.get("messages", []))]


def served(where: Any) -> dict[str, Any]:
    """``emulator serve -o json``'s one line, printed once everything listens: the scenario, the
    name server, each broker's and the control API's address, and the clock (an
    ``emulator.serve.Served``)."""
    return {"scenario": where.scenario, "namesrv": where.namesrv, "brokers": dict(where.brokers),
            "control": where.control, "clock": where.clock, "speed": where.speed, "errors": {}}
