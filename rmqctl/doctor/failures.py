"""Failure checks: messages the listener failed, on their way through the retry topic to the DLQ.

A concurrent listener that returns RECONSUME_LATER (or throws) sends each message back to
``%RETRY%<group>``; it is redelivered after a growing delay (10 s up to 2 h) and, after 16
failures, moved to ``%DLQ%<group>``, which nobody consumes by default. An orderly listener
(``MessageListenerOrderly``, ``PROP_CONSUMEORDERLY`` in the running info) never does that: a
failure (SUSPEND_CURRENT_QUEUE_A_MOMENT or an exception) puts the message back into the client's
process queue and retries it a second later, forever by default, so the queue stops at it.

Must not do I/O, and must not import the CLI, the TUI or pyspark.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rmqctl.doctor.context import (
    CheckContext,
    and_list,
    deliveries_text,
    finding,
    n_of,
    progress_by_queue,
    queue_dict,
    queues_text,
)
from rmqctl.model import RETRY_PREFIX, Finding, GroupView, MessageQueue, ProcessQueueInfo

#: a retry backlog of this many messages or more is a warning; below it, information
RETRY_WARNING_DIFF = 1_000


def retry_backlog(ctx: CheckContext) -> list[Finding]:
    view = ctx.view
    retry_rows = [p for p in view.progress if p.queue.topic.startswith(RETRY_PREFIX)]
    rows = [p for p in retry_rows if p.known and p.diff > 0]
    if not rows:
        return []
    total = sum(p.diff for p in rows)
    unknown = [p.queue for p in retry_rows if not p.known]
    owners = view.owners()
    holders = sorted({c for p in rows for c in owners.get(p.queue, [])})
    unheld = [p.queue for p in rows if not owners.get(p.queue)]
    held = (f"{and_list(holders)} {'holds' if len(holders) == 1 else 'hold'} "
            f"{'them' if len(rows) > 1 else 'it'} and {'pulls' if len(holders) == 1 else 'pull'} each retry "
            "when its delay is over" if holders else "no client of the group holds them")
    if holders and unheld:
        held += f"; no client holds {queues_text(unheld)}"
    detail = (f"{queues_text([p.queue for p in rows])} {'holds' if len(rows) == 1 else 'hold'} "
              f"{n_of(total, 'message')} the listener of {view.group} failed to consume "
              "(ConsumeConcurrentlyStatus.RECONSUME_LATER, or an exception): each waits out a growing delay "
              "(10 s up to 2 h), is delivered again, and after maxReconsumeTimes failures (16 by default) "
              f"moves to %DLQ%{view.group}; {held}.")
    if unknown:
        detail += f" The backlog of {queues_text(unknown)} could not be read: unknown, not counted."
    who = and_list(holders) if holders else f"the clients of {view.group}"
    return [finding(
        ctx, "RETRY_BACKLOG", "warning" if total >= RETRY_WARNING_DIFF else "info",
        f"{n_of(total, 'message')} {'waits' if total == 1 else 'wait'} in "
        f"{', '.join(sorted({p.queue.topic for p in rows}))}",
        detail,
        {"total_diff": total, "queues": [{**queue_dict(p.queue), "diff": p.diff} for p in rows],
         "unknown_diff_queues": [queue_dict(mq) for mq in unknown]},
        f"Find why the listener of {who} returns RECONSUME_LATER or throws (its application logs; "
        f"mqadmin consumerStatus -g {view.group} -i <client id> shows its failed TPS); the retries drain "
        "by themselves once it succeeds. To give up on a message sooner, lower setMaxReconsumeTimes on "
        "the consumer.",
    )]


def dlq_backlog(ctx: CheckContext) -> list[Finding]:
    view = ctx.view
    total = view.dlq_messages
    if total <= 0:
        return []
    dlq = f"%DLQ%{view.group}"
    gave_up = (f"clients of {view.group} did not ACK within {deliveries_text(view)} (POP)," if view.pop else
               f"listener of {view.group} failed maxReconsumeTimes times (16 by default),")
    stored = [o.queue for o in view.dlq if o.max_offset > o.min_offset]
    online = list(view.client_ids)
    now = (f"{'its client online now is' if len(online) == 1 else 'its clients online now are'} "
           f"{and_list(online)}" if online else "no client of it is online now")
    return [finding(
        ctx, "DLQ_BACKLOG", "warning",
        f"{n_of(total, 'message')} {'sits' if total == 1 else 'sit'} in {dlq}",
        f"{queues_text(stored)} {'holds' if len(stored) == 1 else 'hold'} {n_of(total, 'message')} the "
        f"{gave_up} moved by the broker to the dead-letter topic ({now}). No client of the group consumes it, so "
        f"{'it is' if total == 1 else 'they are'} lost to the application unless replayed, and the broker "
        f"deletes {'it' if total == 1 else 'them'} with the commit log after "
        "fileReservedTime (72 h by default).",
        {"messages": total, "queues": [{**queue_dict(o.queue), "messages": o.max_offset - o.min_offset}
                                       for o in view.dlq]},
        f"Fix the listener first (see RETRY_BACKLOG and CONSUME_FAILURES), then send them back to this "
        f"group only: rmqctl dlq replay {view.group} (a plan; --execute sends them through "
        f"%RETRY%{view.group}); read them first with rmqctl dlq show {view.group}, or one with "
        f"mqadmin queryMsgByOffset -t {dlq} -b <broker> -i <queue> -o <offset>.",
    )]


def _client_failures(c: dict[str, Any], progress: Mapping[MessageQueue, Any]) -> str:
    """One failing client in words: how many failures in what window, on which topics, and the
    queues of them it holds with the messages waiting there."""
    topics = and_list(sorted(c["topics"]))
    rates = (f"{c['consume_failed_tps']:g} failed and {c['consume_ok_tps']:g} consumed per second over the "
             f"last minute")
    counted = (f"{n_of(c['consume_failed_msgs'], 'failed consumption')} in the last hour ({rates})"
               if c["consume_failed_msgs"] else rates)
    out = f"{c['client']}'s running info (its consume statistics) counts {counted} on {topics}"
    queues = [MessageQueue(q["topic"], q["broker"], q["queue_id"]) for q in c["queues"]]
    if queues:
        rows = [progress.get(mq) for mq in queues]
        known = [p for p in rows if p is not None and p.known]
        waiting = sum(max(0, p.diff) for p in known)
        unknown = len(queues) - len(known)
        backlog = (f"{n_of(waiting, 'message')} waiting" if not unknown else
                   f"{n_of(waiting, 'message')} waiting, unknown on {n_of(unknown, 'queue')}" if known else
                   "their backlog unknown")
        out += f", where it holds {queues_text(queues)} ({backlog})"
    return out


def consume_failures(ctx: CheckContext) -> list[Finding]:
    view = ctx.view
    retry = RETRY_PREFIX + view.group
    dlq = f"%DLQ%{view.group}"
    owners = view.held()
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
    # Under POP, every message not ACKed in time (failed, or never ACKed) is revived into the
    # group's POP retry topic of its topic and delivered again: the same traffic, elsewhere.
    retry_topics = {retry, *view.pop_retry_topics}
    if ctx.previous is not None:
        retry_topics.update(ctx.previous.pop_retry_topics)
    now_retry = {p.queue: p.broker_offset for p in view.progress if p.queue.topic in retry_topics and p.known}
    grown = 0
    grown_in: set[str] = set()
    if ctx.previous is not None:
        before = {p.queue: p.broker_offset for p in ctx.previous.progress
                  if p.queue.topic in retry_topics and p.known}
        for q in now_retry:
            if q in before and now_retry[q] > before[q]:
                grown += now_retry[q] - before[q]
                grown_in.add(q.topic)
    if not clients and grown <= 0:
        return []
    orderly = {cid for cid, info in view.running_infos.items() if info.consume_orderly}
    for c in clients:
        c["orderly"] = c["client"] in orderly
    concurrent = [c for c in clients if not c["orderly"]]
    in_order = [c for c in clients if c["orderly"]]
    progress = progress_by_queue(view)
    retry_rows = [p for p in view.progress if p.queue.topic == retry]
    waiting_retry: int | None = (sum(p.diff for p in retry_rows if p.diff > 0)
                                 if retry_rows and all(p.known for p in retry_rows) else None)
    pop_topics = sorted(retry_topics - {retry})
    parts: list[str] = []
    # clients of a group consuming by POP alone fail messages back into its POP retry topics
    only_pop = view.consumption == "pop"
    if concurrent and only_pop:
        parts.append("; ".join(_client_failures(c, progress) for c in concurrent) + ".")
    if concurrent and not only_pop:
        parts.append("; ".join(_client_failures(c, progress) for c in concurrent) + ".")
        parts.append(f"A concurrent listener that returns RECONSUME_LATER (or throws) sends the message back: "
                     f"the client writes it to {retry}, the broker delivers it again after a growing delay "
                     f"(10 s, 30 s, 1 min … up to 2 h), and after maxReconsumeTimes failures (16 by default) "
                     f"moves it to {dlq}, which no client consumes.")
        now = [f"{n_of(waiting_retry, 'message')} {'waits' if waiting_retry == 1 else 'wait'} in {retry}"
               if waiting_retry is not None else f"the backlog of {retry} is unknown (no offsets read)"]
        if view.dlq_messages:
            now.append(f"{n_of(view.dlq_messages, 'message')} {'sits' if view.dlq_messages == 1 else 'sit'} "
                       f"in {dlq}")
        parts.append(f"Now {and_list(now)}.")
    if in_order:
        parts.append("; ".join(_client_failures(c, progress) for c in in_order) + ".")
        parts.append(f"{'That client is' if len(in_order) == 1 else 'Those clients are'} orderly "
                     f"(MessageListenerOrderly): a failed message (SUSPEND_CURRENT_QUEUE_A_MOMENT or an exception) "
                     f"is not sent anywhere; the client keeps it and retries it a second later, forever by "
                     f"default, and its queue waits behind it (see ORDERLY_QUEUE_SUSPENDED).")
    if (not clients and view.pop) or (concurrent and only_pop):
        parts.append(f"Messages of {view.group} are not ACKed in time (the listener fails them, or the client "
                     f"never ACKs them): POP makes each visible again when its invisible time runs out and "
                     f"delivers it again through {and_list(pop_topics) if pop_topics else retry}; after "
                     f"{deliveries_text(view)} the group's retry policy sends it to {dlq}."
                     + ("" if clients else " gRPC clients report no consume statistics: the count comes from the "
                        "retry topics' offsets."))
    elif not clients:
        parts.append(f"No client reports failures now (its statistics may have rolled over, or it left), but "
                     f"messages were written to {retry}: a listener of {view.group} returned RECONSUME_LATER "
                     f"or threw, and each such message comes back after a growing delay until "
                     f"maxReconsumeTimes failures (16 by default) move it to {dlq}.")
    interval_s = (view.sampled_at - ctx.previous.sampled_at) / 1000 if ctx.previous is not None else None
    if grown > 0:
        apart = f" ({interval_s:.0f} s apart)" if interval_s is not None and interval_s > 0 else ""
        each = (" Each is a delivery that was not ACKed within its invisible time and will be handed out "
                "again." if view.pop and grown_in - {retry} else "")
        parts.append(f"{n_of(grown, 'message')} {'was' if grown == 1 else 'were'} written to "
                     f"{and_list(sorted(grown_in))} between the two samples{apart}.{each}")
    names = [str(c["client"]) for c in clients]
    if names:
        title = (f"{and_list(names)} of {view.group} {'fails' if len(names) == 1 else 'fail'} to consume "
                 f"messages of {and_list(sorted({t for c in clients for t in c['topics']}))}")
    elif view.pop:
        title = f"Messages of {view.group} are delivered again: not ACKed in time"
    else:
        title = f"Clients of {view.group} fail to consume messages"
    fixes = []
    if concurrent or not clients:
        who = and_list([str(c["client"]) for c in concurrent]) or f"the clients of {view.group}"
        fixes.append(
            f"Find why the listener of {who} returns RECONSUME_LATER or throws (its application logs; "
            f"mqadmin consumerStatus -g {view.group} -i <client id> shows its failed TPS); each failed "
            f"message keeps coming back until it succeeds or reaches {dlq}. To give up on a message "
            f"sooner, lower setMaxReconsumeTimes on the consumer; once the listener is fixed, read the "
            f"dead letters with rmqctl dlq show "
            f"{view.group} and send them back with rmqctl dlq replay {view.group}."
            if not view.pop or (concurrent and not only_pop) else
            f"Find why the gRPC consumers of {view.group} fail or do not ACK (their application logs: a "
            f"push consumer's listener returning FAILURE or throwing, a simple consumer not calling ack "
            f"within its invisible duration); each message keeps coming back until it succeeds or the "
            f"group's retry policy sends it to {dlq} (rmqctl dlq show {view.group}).")
    if in_order:
        fixes.append(
            f"Find why the orderly listener of {and_list([str(c['client']) for c in in_order])} suspends or "
            f"throws (its application logs); the same message is retried until it succeeds, unless "
            f"setMaxReconsumeTimes makes the client give up on it (it then goes to {dlq}).")
    queue_rows = [{**q, "client": c["client"],
                   "diff": p.lag if (p := progress.get(MessageQueue(q["topic"], q["broker"], q["queue_id"])))
                   is not None else None}
                  for c in clients for q in c["queues"]]
    return [finding(
        ctx, "CONSUME_FAILURES", "warning",
        title,
        " ".join(parts),
        {"clients": clients, "queues": queue_rows, "failed_msgs_window": "1h", "retry_topic": retry,
         "retry_waiting": waiting_retry, **({"max_deliveries": view.max_deliveries} if view.pop else {}),
         "dlq_topic": dlq if concurrent or not clients else None, "dlq_messages": view.dlq_messages,
         "retry_messages_written": sum(now_retry.values()), "retry_growth": grown if ctx.previous else None,
         "interval_seconds": interval_s,
         **({"pop_retry_topics": pop_topics} if pop_topics else {})},
        " ".join(fixes),
    )]


# --- ORDERLY_QUEUE_SUSPENDED --------------------------------------------------------------------


def _orderly_held(view: GroupView) -> dict[tuple[str, MessageQueue], ProcessQueueInfo]:
    """(client, queue) → its process queue, for queues an orderly client holds locked with
    messages cached (retry topics left out: they are consumed concurrently)."""
    return {(cid, mq): pq for cid, info in view.running_infos.items() if info.consume_orderly
            for mq, pq in info.mq_table.items()
            if pq.locked and not pq.dropped and pq.cached_msg_count > 0 and not mq.topic.startswith(RETRY_PREFIX)}


def orderly_candidates(view: GroupView, *, failing_only: bool = False) -> list[tuple[str, MessageQueue]]:
    """Queues an orderly client holds locked, with messages waiting and its oldest cached message
    at (or below) the committed offset: one sample cannot tell whether they move. With
    ``failing_only``, only those whose topic the client reports failures for (a one-minute rate,
    so it can lag behind a queue that just stopped)."""
    progress = progress_by_queue(view)
    out = []
    for (cid, mq), pq in sorted(_orderly_held(view).items(), key=lambda kv: (kv[0][0], kv[0][1])):
        p = progress.get(mq)
        if p is None or not p.known or p.diff <= 0 or pq.cached_msg_min_offset > p.consumer_offset:
            continue
        status = view.running_infos[cid].status.get(mq.topic)
        if failing_only and (status is None or not status.failing):
            continue
        out.append((cid, mq))
    return out


def orderly_queue_suspended(ctx: CheckContext) -> list[Finding]:
    view = ctx.view
    progress = progress_by_queue(view)
    held = _orderly_held(view)
    before = _orderly_held(ctx.previous) if ctx.previous is not None else None
    rows: list[dict[str, Any]] = []
    if before is not None:
        for (cid, mq), pq in sorted(held.items(), key=lambda kv: (kv[0][0], kv[0][1])):
            old = before.get((cid, mq))
            p = progress.get(mq)
            if old is None or p is None or not p.known or p.diff <= 0:
                continue
            # the client's own offset (its offset store) and its oldest cached message did not move
            if (old.commit_offset, old.cached_msg_min_offset) != (pq.commit_offset, pq.cached_msg_min_offset):
                continue
            status = view.running_infos[cid].status.get(mq.topic)
            rows.append(_orderly_row(cid, mq, pq, p.consumer_offset, p.diff,
                                     status is not None and status.failing))
    else:
        for cid, mq in orderly_candidates(view, failing_only=True):
            p = progress[mq]
            rows.append(_orderly_row(cid, mq, held[(cid, mq)], p.consumer_offset, p.diff, True))
    if not rows:
        return []
    confirmed = before is not None
    names = "; ".join(f"{queues_text([MessageQueue(r['topic'], r['broker'], r['queue_id'])])} held by "
                      f"{r['client']} (consumer offset {r['consumer_offset']}, "
                      f"{n_of(r['cached_msg_count'], 'message')} cached, {r['diff']} waiting)"
                      for r in rows)
    failing = [r for r in rows if r["listener_fails"]]
    if confirmed:
        detail = (f"Orderly consumption is stopped on {n_of(len(rows), 'queue')}: {names}. Between the two "
                  f"samples the client's offset and its oldest cached message did not move while messages "
                  f"waited.")
    else:
        detail = (f"Orderly consumption looks stopped on {n_of(len(rows), 'queue')}: {names}. The client "
                  f"holds the queue locked with messages cached at its committed offset and its listener "
                  f"reports failures; one sample cannot show that the offset does not move (take two "
                  f"with --interval).")
    if failing:
        detail += (" An orderly listener that answers SUSPEND_CURRENT_QUEUE_A_MOMENT (or throws) keeps the "
                   "message in the client and retries it every second, forever by default: nothing goes "
                   "to the retry topic or the DLQ, every later message of the queue waits behind it, and "
                   "each retry refreshes the queue's last-consume time, so it does not look idle.")
    if len(failing) < len(rows):
        detail += (" Where the client's statistics show no failures (a rate over the last minute, which "
                   "lags), the listener has either not returned from the message or its failures are "
                   "not counted yet.")
    return [finding(
        ctx, "ORDERLY_QUEUE_SUSPENDED", "error" if confirmed else "warning",
        f"Orderly consumption of {view.group} is stopped on {n_of(len(rows), 'queue')}",
        detail,
        {"queues": rows, "samples": 2 if confirmed else 1},
        "Find the message the orderly listener cannot get past (the queue's consumer offset names it; "
        "application logs of the client): fix the listener or the message, or let it give up "
        "(setMaxReconsumeTimes on the consumer sends it to the DLQ after that many tries), or skip "
        "the message by resetting the group's offset on that queue past it.",
    )]


def _orderly_row(cid: str, mq: MessageQueue, pq: ProcessQueueInfo, offset: int, diff: int,
                 fails: bool) -> dict[str, Any]:
    return {**queue_dict(mq), "client": cid, "consumer_offset": offset, "diff": diff,
            "client_offset": pq.commit_offset, "cached_msg_count": pq.cached_msg_count,
            "cached_msg_min_offset": pq.cached_msg_min_offset, "locked": pq.locked,
            "last_consume_timestamp": pq.last_consume_timestamp or None, "listener_fails": fails}
