"""The ``rebalance simulate`` document: a strategy's allocation of one topic, what it leaves out,
and how it differs from what the clients report holding now.

Must not import the CLI, the TUI or pyspark.
"""

from __future__ import annotations

from typing import Any

from rmqctl.rebalance.simulate import SimulationResult
from rmqctl.report.common import RowSet, queue_doc, queues_doc


def simulation(result: SimulationResult) -> dict[str, Any]:
    """``{strategy, topic, message_model, assignments, idle_clients, unassigned_queues,
    not_subscribed, mismatches?, moves?, errors}``: ``mismatches`` and ``moves`` only when the
    simulation was compared with a live group."""
    out: dict[str, Any] = {
        "strategy": result.strategy,
        "topic": result.topic,
        "message_model": result.message_model,
        "assignments": {cid: queues_doc(qs) for cid, qs in result.assignments.items()},
        "idle_clients": list(result.idle_clients),
        "unassigned_queues": queues_doc(result.unassigned_queues),
        "not_subscribed": list(result.not_subscribed),
    }
    if result.mismatches is not None:
        out["mismatches"] = {cid: {"missing": queues_doc(m.missing), "unexpected": queues_doc(m.unexpected)}
                             for cid, m in result.mismatches.items()}
    if result.moves is not None:
        out["moves"] = [{**queue_doc(m.queue), "before": list(m.before), "after": list(m.after)}
                        for m in result.moves]
    out["errors"] = {}
    return out


def simulation_rows(doc: dict[str, Any]) -> list[RowSet]:
    moves = [RowSet("move", ("topic", "broker", "queue_id", "before", "after"), doc["moves"])] if "moves" in doc else []
    return [
        RowSet("assignment", ("client_id", "topic", "broker", "queue_id"),
               [{"client_id": cid, **q} for cid, qs in doc["assignments"].items() for q in qs]),
        RowSet("unassigned", ("topic", "broker", "queue_id"), doc["unassigned_queues"]),
        *moves,
    ]
