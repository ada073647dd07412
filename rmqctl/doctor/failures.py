"""Failure checks: messages the listener failed, on their way through the retry topic to the DLQ.

A listener that returns RECONSUME_LATER (or throws) sends each message back to
``%RETRY%<group>``; it is redelivered after a growing delay (10 s up to 2 h) and, after 16
failures, moved to ``%DLQ%<group>``, which nobody consumes by default.

Must not do I/O, and must not import the CLI, the TUI or pyspark.
"""

from __future__ import annotations

from typing import Any

from rmqctl.doctor.context import CheckContext, finding, n_of, queue_dict
from rmqctl.model import RETRY_PREFIX, Finding

#: a retry backlog of this many messages or more is a warning; below it, information
RETRY_WARNING_DIFF = 1_000


def retry_backlog(ctx: CheckContext) -> list[Finding]:
    rows = [p for p in ctx.view.progress if p.queue.topic.startswith(RETRY_PREFIX) and p.diff > 0]
    if not rows:
        return []
    total = sum(p.diff for p in rows)
    return [finding(
        ctx, "RETRY_BACKLOG", "warning" if total >= RETRY_WARNING_DIFF else "info",
        f"{n_of(total, 'message')} {'waits' if total == 1 else 'wait'} in {RETRY_PREFIX}{ctx.view.group}",
        "Messages the listener failed to consume wait in the retry topic with growing delays "
        "(10 s up to 2 h); after 16 failures they move to the dead-letter queue.",
        {"total_diff": total, "queues": [{**queue_dict(p.queue), "diff": p.diff} for p in rows]},
        "Find why the listener returns RECONSUME_LATER or throws (application logs).",
    )]


def dlq_backlog(ctx: CheckContext) -> list[Finding]:
    total = ctx.view.dlq_messages
    if total <= 0:
        return []
    return [finding(
        ctx, "DLQ_BACKLOG", "warning",
        f"{n_of(total, 'message')} {'sits' if total == 1 else 'sit'} in %DLQ%{ctx.view.group}",
        "These messages failed consumption 16 times and were moved to the dead-letter queue; "
        "nobody consumes it by default, so they are lost to the application unless replayed.",
        {"messages": total, "queues": [{**queue_dict(o.queue), "messages": o.max_offset - o.min_offset}
                                       for o in ctx.view.dlq]},
        "Inspect and replay the DLQ messages (e.g. resend them to the original topic) after "
        "fixing the consumer.",
    )]


def consume_failures(ctx: CheckContext) -> list[Finding]:
    view = ctx.view
    retry = RETRY_PREFIX + view.group
    owners = view.assignments()
    clients: list[dict[str, Any]] = []
    for cid, info in sorted(view.running_infos.items()):
        failing = {t: st for t, st in sorted(info.status.items()) if st.failing}
        if not failing:
            continue
        clients.append({
            "client": cid,
            "consume_ok_tps": round(info.consume_ok_tps, 2),
            "consume_failed_tps": round(info.consume_failed_tps, 2),
            "consume_failed_msgs": info.consume_failed_msgs,
            "topics": {t: {"consume_ok_tps": round(st.consume_ok_tps, 2),
                           "consume_failed_tps": round(st.consume_failed_tps, 2),
                           "consume_failed_msgs": st.consume_failed_msgs} for t, st in failing.items()},
            "queues": [queue_dict(mq) for mq in owners.get(cid, []) if mq.topic in failing],
        })
    # Every failed message is written back to the group's retry topic: its growth is the traffic.
    now_retry = {p.queue: p.broker_offset for p in view.progress if p.queue.topic == retry and p.known}
    grown = 0
    if ctx.previous is not None:
        before = {p.queue: p.broker_offset for p in ctx.previous.progress if p.queue.topic == retry and p.known}
        grown = sum(max(0, now_retry[q] - before[q]) for q in now_retry if q in before)
    if not clients and grown <= 0:
        return []
    names = ", ".join(str(c["client"]) for c in clients) or "a client"
    detail = (f"The listener of {names} reports failed consumptions (RECONSUME_LATER or an exception): "
              f"each failed message is sent back to {retry} and redelivered after a growing delay "
              f"(10 s up to 2 h); after 16 failures it goes to the dead-letter queue.")
    if grown > 0:
        detail += f" {grown} message(s) were written to {retry} between the two samples."
    return [finding(
        ctx, "CONSUME_FAILURES", "warning",
        f"Clients of {view.group} fail to consume messages",
        detail,
        {"clients": clients, "retry_topic": retry,
         "retry_messages_written": sum(now_retry.values()), "retry_growth": grown if ctx.previous else None},
        "Find why the listener returns RECONSUME_LATER or throws (application logs of the clients "
        "named); messages keep coming back until it succeeds or they reach the DLQ.",
    )]
