"""The documents of the commands that write, and of the dead-letter queues: ``group reset``'s
plan (also the plan file that ``--from-file`` reads back, so its shape is written beside its
reader in :mod:`rmqctl.actions.plan`) and its outcome, ``dlq list``, and the rows ``jsonl`` and
``csv`` print.

Must not import the CLI, the TUI, the doctor or pyspark; of :mod:`rmqctl.actions` it imports only
the plan types, never what reaches a cluster.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rmqctl.actions.plan import ResetOutcome, ResetPlan, outcome_document, plan_document, queue_name
from rmqctl.errors import RmqctlError
from rmqctl.model import MessageQueue, TopicStats
from rmqctl.report.common import RowSet, error_rows, errors_doc

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


def _shown(value: int | None) -> str:
    return "never committed" if value is None else str(value)


def _total(value: int | None) -> str:
    return "an unknown number of" if value is None else str(value)


def reset_plan_text(plan: ResetPlan) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
    """A plan as people read it, the same wherever it is shown (``group reset``, the TUI): its
    queue rows and online clients as text, and the lines that sum it up."""
    doc = reset_plan(plan)
    rows = [{**r, "owner": r["owner"] or "-", "current": _shown(r["current"]),
             "replay": "unknown" if r["replay"] is None else r["replay"],
             "skip": "unknown" if r["skip"] is None else r["skip"]}
            for r in reset_plan_rows(doc)[0].rows]
    clients = [{"client_id": c["client_id"], "effect": c["effect"]} for c in doc["clients"]]
    brokers = ", ".join(f"{b}: {'server-side' if on else 'through the clients' if on is False else 'unknown'}"
                        for b, on in doc["server_side_reset"].items())
    lines = [
        f"Reset of group {plan.group} to {plan.target.describe()}: replays "
        f"{_total(doc['replay_total'])}, skips {_total(doc['skip_total'])} message(s).",
        f"Brokers: {brokers} (useServerSideResetOffset).",
    ]
    if not clients:
        lines.append("No client is online: the offsets are written to the brokers' table and stay.")
    return rows, clients, lines


def reset_outcome_text(outcome: ResetOutcome) -> tuple[list[dict[str, Any]], list[str]]:
    """An outcome as people read it (``group reset --execute``, the TUI): its queue rows as text
    and the lines that say when it was read back, where the undo plan and the audit log are."""
    doc = reset_outcome(outcome)
    rows = [{**r, "offset_after": _shown(r["offset_after"]), "client": r["client"] or "-",
             "code": "-" if r["code"] is None else r["code"]} for r in reset_outcome_rows(doc)[0].rows]
    lines = [f"Read back {outcome.waited_s:g} s after writing (the clients' commit interval)."
             if outcome.waited_s else "Read back right after writing (no client online).",
             f"Undo plan: {outcome.undo_file} (rmqctl group reset {outcome.plan.group} --from-file FILE --execute)",
             f"Audit log: {outcome.audit_file}"]
    return rows, lines


def reset_outcome_rows(doc: dict[str, Any]) -> list[RowSet]:
    rows = [{"queue": _queue(q), **{k: q[k] for k in OUTCOME_COLUMNS if k in q}} for q in doc["queues"]]
    return [RowSet("queue", ("queue", *OUTCOME_COLUMNS[1:]), rows)]


DLQ_COLUMNS = ("group", "topic", "queues", "messages", "newest_ts")


def dlq_list(found: Sequence[tuple[str, TopicStats]], errors: Mapping[str, RmqctlError]) -> dict[str, Any]:
    """``dlq list``: per dead-letter topic its group, queue count, messages stored (max − min over its
    queues) and the store time of its newest message."""
    rows = []
    for topic, stats in found:
        newest = [o.newest_store_ms for o in stats.offsets if o.newest_store_ms]
        rows.append({"group": topic.removeprefix("%DLQ%"), "topic": topic, "queues": len(stats.offsets),
                     "messages": sum(max(0, o.max_offset - o.min_offset) for o in stats.offsets),
                     "newest_ts": max(newest) if newest else None})
    return {"dead_letter_queues": rows, "errors": errors_doc(errors)}


def dlq_list_rows(doc: Mapping[str, Any]) -> list[RowSet]:
    return [RowSet("dead_letter_queue", DLQ_COLUMNS, doc["dead_letter_queues"]), *error_rows(doc)]


DLQ_SHOW_COLUMNS = ("queue", "offset", "msg_id", "origin_topic", "tag", "keys", "reconsume_times", "store_ts",
                    "body")
#: characters of a body a row shows (the whole body is one ``msg show`` away)
BODY_PREVIEW = 200


def dlq_show(group: str, letters: Sequence[Any], left_out: int) -> dict[str, Any]:
    """``dlq show``: each dead letter of ``group`` (a :class:`~rmqctl.actions.dlq.DeadLetter`),
    its body as text (UTF-8, undecodable bytes replaced) cut to :data:`BODY_PREVIEW` characters."""
    rows = []
    for d in letters:
        m = d.message
        rows.append({"queue": f"{d.queue.broker_name}/{d.queue.queue_id}", "topic": d.queue.topic,
                     "offset": d.offset, "msg_id": d.msg_id, "origin_topic": d.origin_topic, "tag": d.tag,
                     "keys": m.properties.get("KEYS") or None, "reconsume_times": d.reconsume_times,
                     "store_ts": m.store_timestamp or None,
                     "body": m.body.decode("utf-8", "replace")[:BODY_PREVIEW]})
    return {"group": group, "dead_letters": rows, "left_out": left_out, "errors": {}}


def dlq_show_rows(doc: Mapping[str, Any]) -> list[RowSet]:
    return [RowSet("dead_letter", DLQ_SHOW_COLUMNS, doc["dead_letters"]), *error_rows(doc)]
