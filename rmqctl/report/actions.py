"""The documents of the commands that write: ``group reset``'s plan (also the plan file that
``--from-file`` reads back, so its shape is written beside its reader in
:mod:`rmqctl.actions.plan`) and its outcome, and the rows ``jsonl``/``csv`` print.

Must not import the CLI, the TUI, the doctor or pyspark; imports only the plan types of
:mod:`rmqctl.actions`, never what reaches a cluster.
"""

from __future__ import annotations

from typing import Any

from rmqctl.actions.plan import ResetOutcome, ResetPlan, outcome_document, plan_document, queue_name
from rmqctl.model import MessageQueue
from rmqctl.report.common import RowSet

PLAN_COLUMNS = ["queue", "owner", "current", "target", "replay", "skip", "method"]
OUTCOME_COLUMNS = ["queue", "target", "status", "offset_after", "client", "code"]


def reset_plan(plan: ResetPlan) -> dict[str, Any]:
    """``group reset`` without ``--execute``: the plan (a file ``--from-file`` accepts)."""
    return {**plan_document(plan), "errors": {}}


def reset_outcome(outcome: ResetOutcome) -> dict[str, Any]:
    """``group reset --execute``: the plan and each queue's outcome."""
    return {**outcome_document(outcome), "errors": {}}


def _queue(row: dict[str, Any]) -> str:
    return queue_name(MessageQueue(row["topic"], row["broker"], row["queue_id"]))


def reset_plan_rows(doc: dict[str, Any]) -> list[RowSet]:
    rows = [{"queue": _queue(q), **{k: q[k] for k in PLAN_COLUMNS if k in q}} for q in doc["queues"]]
    clients = [{"client_id": c["client_id"], "queues": " ".join(c["queues"]), "effect": c["effect"]}
               for c in doc["clients"]]
    return [RowSet("queue", ("queue", *PLAN_COLUMNS[1:]), rows),
            RowSet("client", ("client_id", "queues", "effect"), clients)]


def reset_outcome_rows(doc: dict[str, Any]) -> list[RowSet]:
    rows = [{"queue": _queue(q), **{k: q[k] for k in OUTCOME_COLUMNS if k in q}} for q in doc["queues"]]
    return [RowSet("queue", ("queue", *OUTCOME_COLUMNS[1:]), rows)]
