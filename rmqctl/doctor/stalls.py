"""Progress checks: queues whose messages wait and do not move.

A queue stalls in its client (cached messages the listener does not finish, or an orderly queue
that cannot get or release its broker lock), between two samples (new messages, no consumption),
or because no client of the group is online at all.

Must not do I/O, and must not import the CLI, the TUI or pyspark.
"""

from __future__ import annotations

from typing import Any

from rmqctl.doctor.context import CheckContext, are, finding, n_of, progress_by_queue, queue_dict
from rmqctl.model import ConsumerRunningInfo, Finding, MessageQueue, ProcessQueueInfo
from rmqctl.stuck import BLOCKED_AFTER_MS


def _blocked(ctx: CheckContext, cid: str, info: ConsumerRunningInfo, mq: MessageQueue,
             pq: ProcessQueueInfo) -> dict[str, Any] | None:
    """Why one held queue is blocked in its client, or None."""
    if info.consume_orderly:
        if not pq.locked:
            return {**queue_dict(mq), "client": cid, "reason": "not locked"}
        if pq.dropped and pq.try_unlock_times > 0:
            return {**queue_dict(mq), "client": cid, "reason": f"unlock failed {pq.try_unlock_times} times"}
        return None
    if pq.dropped:
        return None
    if pq.cached_msg_count > 0 and pq.last_consume_timestamp and \
            ctx.now_ms - pq.last_consume_timestamp > BLOCKED_AFTER_MS:
        return {**queue_dict(mq), "client": cid, "reason": "no consumption",
                "idle_ms": ctx.now_ms - pq.last_consume_timestamp,
                "cached_msg_count": pq.cached_msg_count}
    return None


def blocked_queue(ctx: CheckContext) -> list[Finding]:
    rows = []
    for cid, info in sorted(ctx.view.running_infos.items()):
        if info.consume_type not in (None, "CONSUME_PASSIVELY"):
            continue
        for mq, pq in info.mq_table.items():
            row = _blocked(ctx, cid, info, mq, pq)
            if row is not None:
                rows.append(row)
    if not rows:
        return []
    return [finding(
        ctx, "BLOCKED_QUEUE", "error",
        f"{n_of(len(rows), 'queue')} of {ctx.view.group} {are(len(rows))} blocked in their client",
        "These queues hold pulled messages that have not been consumed for over 60 s, or (orderly "
        "consumers) cannot get or release their broker lock; their committed offset stays at the "
        "oldest unfinished message.",
        {"queues": rows},
        "Take a thread dump of the client (mqadmin consumerStatus -s) to find the stuck listener; "
        "orderly queues recover once the old owner unlocks or its lock expires (60 s).",
    )]


def offline_group_backlog(ctx: CheckContext) -> list[Finding]:
    view = ctx.view
    if view.online:
        return []
    rows = [p for p in view.progress if p.diff > 0]
    if not rows:
        return []
    total = sum(p.diff for p in rows)
    return [finding(
        ctx, "OFFLINE_GROUP_BACKLOG", "warning",
        f"{view.group} has no online client and {n_of(total, 'message')} waiting",
        f"No client of {view.group} is connected, and {n_of(len(rows), 'queue')} "
        f"{'holds' if len(rows) == 1 else 'hold'} {n_of(total, 'unconsumed message')} that will wait until "
        f"a consumer starts (or expire with the "
        f"commit log).",
        {"total_diff": total, "queues": [{**queue_dict(p.queue), "diff": p.diff} for p in rows]},
        "Start the group's consumers, or delete the group's offsets if it is retired.",
    )]


def lag_not_advancing(ctx: CheckContext) -> list[Finding]:
    if ctx.previous is None:
        return []
    before = progress_by_queue(ctx.previous)
    rows = []
    for p in ctx.view.progress:
        old = before.get(p.queue)
        if old is None or p.diff <= 0:
            continue
        if p.broker_offset > old.broker_offset and p.consumer_offset <= old.consumer_offset:
            rows.append({**queue_dict(p.queue), "broker_offset": [old.broker_offset, p.broker_offset],
                         "consumer_offset": [old.consumer_offset, p.consumer_offset],
                         "diff": p.diff, "owner": p.owner})
    if not rows:
        return []
    seconds = max(0, ctx.view.sampled_at - ctx.previous.sampled_at) / 1000
    return [finding(
        ctx, "LAG_NOT_ADVANCING", "error",
        f"{n_of(len(rows), 'queue')} of {ctx.view.group} received messages but consumed none",
        f"Between two samples {seconds:.0f} s apart, new messages arrived on {n_of(len(rows), 'queue')} "
        f"while their consumer offset did not move.",
        {"interval_seconds": seconds, "queues": rows},
        "Check the owner column: no owner means the queue is orphaned; an owner means its "
        "listener is stuck or failing (see BLOCKED_QUEUE).",
    )]
