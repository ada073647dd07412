"""Client checks: processes that share one client id, and clients of one group set up differently.

Every client computes its own share of the queues from the client list the broker gives it, with
its own strategy and message model; two processes with one id take the same share, and clients
that differ in settings compute shares that overlap or leave gaps.

Must not do I/O, and must not import the CLI, the TUI or pyspark.
"""

from __future__ import annotations

from typing import Any

from rmqctl.doctor.context import (
    CheckContext,
    and_list,
    are,
    client_sub,
    finding,
    n_of,
    progress_by_queue,
    queue_dict,
    queues_text,
)
from rmqctl.model import RETRY_PREFIX, Finding, GroupView, MessageQueue


def duplicate_client_id(ctx: CheckContext) -> list[Finding]:
    dups = {cid: list(addrs) for cid, addrs in ctx.view.duplicate_clients.items()}
    if not dups:
        return []
    return [finding(
        ctx, "DUPLICATE_CLIENT_ID", "error",
        f"{n_of(len(dups), 'client id')} of {ctx.view.group} {are(len(dups))} used by more than one process",
        "; ".join(f"{cid} is used by {n_of(len(addrs), 'connection')} ({and_list(sorted(addrs))})"
                  for cid, addrs in sorted(dups.items()))
        + ". Each process with that id computes the same position in the allocation, so they consume "
        "the same queues twice while another share is held by nobody.",
        {"clients": dups},
        f"Give every process of {ctx.view.group} a unique instanceName (setInstanceName on the consumer, "
        "or -Drocketmq.client.name), or upgrade clients older than 4.9, which build ids from IP and PID "
        "only; mqadmin consumerConnection -g " + ctx.view.group + " lists each connection's address.",
    )]


def mixed_consumer_settings(ctx: CheckContext) -> list[Finding]:
    infos = ctx.view.running_infos
    if len(infos) < 2:
        return []
    settings: dict[str, dict[str, object]] = {
        "message_model": {c: i.message_model for c, i in infos.items()},
        "consume_type": {c: i.consume_type for c, i in infos.items()},
        "strategy": {c: i.strategy for c, i in infos.items()},
        "consume_orderly": {c: i.consume_orderly for c, i in infos.items()},
    }
    differing = {k: dict(sorted(v.items())) for k, v in settings.items() if len(set(v.values())) > 1}
    if not differing:
        return []
    return [finding(
        ctx, "MIXED_CONSUMER_SETTINGS", "warning",
        f"Clients of {ctx.view.group} run with different settings",
        "Clients of one group differ in "
        + "; ".join(f"{k} ({and_list([f'{c}: {_setting(v)}' for c, v in by_client.items()])})"
                    for k, by_client in differing.items())
        + ". Each client computes its share with its own strategy and model, so their allocations "
        "overlap or leave gaps, and the broker keeps only the last heartbeat's model and type for "
        "the group.",
        differing,
        "Configure every client of the group identically: "
        + "; ".join(_FIXES[k] for k in differing) + ".",
    )]


#: how each setting is made the same on every client, in the Java client's own terms
_FIXES = {
    "message_model": "the same setMessageModel (CLUSTERING or BROADCASTING)",
    "consume_type": "one kind of consumer (DefaultMQPushConsumer, or a pull / lite-pull consumer)",
    "strategy": "the same setAllocateMessageQueueStrategy",
    "consume_orderly": "the same listener kind (MessageListenerOrderly or MessageListenerConcurrently)",
}


def _setting(value: object) -> str:
    return "not reported" if value is None else str(value).lower() if isinstance(value, bool) else str(value)


def _shared_queue(view: GroupView, cid: str, mq: MessageQueue, client_offset: int,
                  consumer_offset: int) -> dict[str, Any]:
    """One queue a remoting client holds while POP moves the same offset: where the two stand,
    and, where the message sample covers the messages between them, their tags."""
    row: dict[str, Any] = {**queue_dict(mq), "holder": cid, "consumer_offset": consumer_offset,
                           "client_offset": client_offset,
                           "popped_past_client": max(0, consumer_offset - client_offset),
                           "behind_client": max(0, client_offset - consumer_offset)}
    sample = view.tag_samples.get(mq)
    low, high = sorted((client_offset, consumer_offset))
    if sample is not None and high > low and sample.from_offset <= low and sample.to_offset >= high:
        own = client_sub(view, cid, mq.topic)
        between = [m for m in sample.messages if low <= m.offset < high]
        row["sampled_tags"] = _tag_counts(between)
        if own is not None and consumer_offset > client_offset:
            row["holder_wants"] = sum(1 for m in between if own.wants(m.tag, m.properties) is not False)
    return row


def _tag_counts(messages: list[Any]) -> dict[str, int]:
    out: dict[str, int] = {}
    for m in messages:
        out[m.tag or ""] = out.get(m.tag or "", 0) + 1
    return dict(sorted(out.items()))


def _left_queues(ctx: CheckContext) -> tuple[list[str], list[dict[str, Any]]]:
    """The remoting clients of the previous sample that are gone now while POP goes on, and per queue
    they held then, how far POP has moved the consumer offset past what they had committed."""
    view, before = ctx.view, ctx.previous
    if before is None or before.consumption != "mixed" or view.consumption != "pop":
        return [], []
    online = {c.client_id for c in view.connections}
    gone = sorted(c.client_id for c in before.connections if c.sdk != "grpc" and c.client_id not in online)
    progress = progress_by_queue(view)
    queues = []
    for cid in gone:
        info = before.running_infos.get(cid)
        for mq, pq in sorted(info.mq_table.items()) if info is not None else ():
            p = progress.get(mq)
            if pq.dropped or mq.topic.startswith(RETRY_PREFIX) or p is None or not p.known:
                continue
            row = _shared_queue(view, cid, mq, pq.commit_offset, p.consumer_offset)
            own = client_sub(before, cid, mq.topic)  # what it subscribed when it was last seen
            if "sampled_tags" in row and own is not None and p.consumer_offset > pq.commit_offset:
                low, high = pq.commit_offset, p.consumer_offset
                between = [m for m in view.tag_samples[mq].messages if low <= m.offset < high]
                row["holder_wants"] = sum(1 for m in between if own.wants(m.tag, m.properties) is not False)
            queues.append(row)
    return gone, queues


def _left_finding(ctx: CheckContext, gone: list[str], queues: list[dict[str, Any]]) -> list[Finding]:
    """MIXED_CONSUMPTION after the group's remoting clients left: what POP passed over since is lost to them."""
    view = ctx.view
    popping = sorted(c.client_id for c in view.connections if c.sdk == "grpc")
    ahead = [q for q in queues if q["popped_past_client"] > 0]
    total = sum(q["popped_past_client"] for q in ahead)
    counted = [q for q in ahead if "holder_wants" in q]
    lost = sum(q["holder_wants"] for q in counted) if len(counted) == len(ahead) else None
    detail = (
        f"At the previous sample {n_of(len(gone), 'remoting client')} ({and_list(gone)}) held queues of "
        f"{view.group} beside {n_of(len(popping), 'gRPC client')} ({and_list(popping)}) popping from them; "
        f"{'it is' if len(gone) == 1 else 'they are'} no longer online, and POP goes on moving the same consumer "
        "offsets, past the messages its own filter passes over (tags only the remoting clients subscribe). A "
        "remoting client that comes back resumes from the broker's offset, so those messages are never "
        "delivered to anyone.")
    if ahead:
        detail += (f" Since then POP has moved the offsets past {n_of(total, 'message')} on "
                   f"{n_of(len(ahead), 'queue')} ("
                   + "; ".join(f"{_where(q)}: {q['holder']}'s {q['client_offset']} -> {q['consumer_offset']}"
                               for q in ahead) + ").")
        if lost is not None:
            detail += (f" The message sample covers them: {n_of(lost, 'message')} of them match the subscription "
                       "the remoting client had (" + "; ".join(f"{_where(q)}: {_tags(q['sampled_tags'])}"
                                                             for q in counted)
                       + f"); at most {lost} {'is' if lost == 1 else 'are'} lost to it, fewer only by those it "
                       "consumed itself between the previous sample and leaving, which no sample shows.")
        else:
            detail += (f" Their tags were not {'all ' if counted else ''}sampled: up to {n_of(total, 'message')} "
                       "may be lost to it; how many it wanted is unknown.")
        detail += " More are passed over for as long as it stays away."
    elif not queues:
        detail += " The queues it held could not be compared (its running info was not read): nothing is counted."
    else:
        detail += " POP has not moved the offsets past what it committed yet: nothing is lost so far."
    return [finding(
        ctx, "MIXED_CONSUMPTION", "error",
        f"The remoting clients of {view.group} left while gRPC (POP) clients pop its queues",
        detail,
        {"remoting_clients": [], "grpc_clients": popping, "left_clients": gone, "queues": queues,
         "popped_past_client": total if queues else None, "behind_client": None,
         # an upper bound of what the returning client will never see; None when the sample does not tell
         "lost_if_restarted": lost if queues else None},
        f"Do not restart the remoting clients in {view.group}: give them a group of their own and set its "
        f"start before the first message they have not consumed (rmqctl group reset, or mqadmin "
        f"resetOffsetByTime -g <new group> -t <topic> -s <time>), or move the gRPC clients to a new group.",
    )]


def mixed_consumption(ctx: CheckContext) -> list[Finding]:
    """Remoting clients that divide the queues and gRPC clients that pop from them, in one group (or, after
    the previous sample, remoting clients gone while POP goes on moving their offsets)."""
    view = ctx.view
    if view.consumption != "mixed":
        gone, left = _left_queues(ctx)
        return _left_finding(ctx, gone, left) if gone else []
    popping = sorted(c.client_id for c in view.connections if c.sdk == "grpc")
    dividing = sorted(c.client_id for c in view.connections if c.sdk != "grpc")
    progress = progress_by_queue(view)
    queues = []
    for cid, info in sorted(view.running_infos.items()):
        for mq, pq in sorted(info.mq_table.items()):
            p = progress.get(mq)
            if pq.dropped or mq.topic.startswith(RETRY_PREFIX) or p is None or not p.known:
                continue
            if pq.commit_offset != p.consumer_offset:
                queues.append(_shared_queue(view, cid, mq, pq.commit_offset, p.consumer_offset))
    detail = (
        f"{n_of(len(dividing), 'remoting client')} ({and_list(dividing)}) "
        + ("holds the group's queues and commits the offset it has consumed up to" if len(dividing) == 1 else
           "divide the queues among themselves and each commits the offset it has consumed up to")
        + f", while {n_of(len(popping), 'gRPC client')} ({and_list(popping)}) "
        f"{'pops' if len(popping) == 1 else 'pop'} from the same queues through a proxy, and POP moves the "
        "same consumer "
        "offsets as it hands messages out. Each kind overwrites the other's progress: when a remoting "
        "client commits an offset below the one POP reached, POP hands those messages out again "
        "(duplicates); when POP moves the offset past messages its own filter passes over (tags only the "
        "remoting clients subscribe), a remoting client that restarts or takes the queue over in a "
        "rebalance starts from that offset, and those messages are never delivered to anyone.")
    ahead = [q for q in queues if q["popped_past_client"] > 0]
    behind = [q for q in queues if q["behind_client"] > 0]
    if ahead:
        total = sum(q["popped_past_client"] for q in ahead)
        detail += (f" Now the broker's offset is ahead of the holding remoting client's own on "
                   f"{n_of(len(ahead), 'queue')}, by {n_of(total, 'message')} ("
                   + "; ".join(f"{_where(q)}: {q['consumer_offset']} against {q['holder']}'s "
                               f"{q['client_offset']}" for q in ahead)
                   + "): those were popped, or passed over, by POP before the remoting client committed them.")
        wanted = [q for q in ahead if "holder_wants" in q]
        if wanted:
            lost = sum(q["holder_wants"] for q in wanted)
            detail += (f" The message sample covers {n_of(len(wanted), 'such queue')}: {lost} of those "
                       f"messages match the holding client's own subscription ("
                       + "; ".join(f"{_where(q)}: {_tags(q['sampled_tags'])}" for q in wanted)
                       + "), and are lost to it if it restarts now.")
        elif view.tag_samples:
            detail += " The message sample does not cover those offsets: their tags are unknown."
        else:
            detail += " No message sample was read, so their tags are unknown."
    if behind:
        total = sum(q["behind_client"] for q in behind)
        detail += (f" On {n_of(len(behind), 'queue')} the holding remoting client has consumed beyond the "
                   f"broker's offset, by {n_of(total, 'message')} ("
                   + "; ".join(f"{_where(q)}: {q['consumer_offset']} against {q['holder']}'s "
                               f"{q['client_offset']}" for q in behind)
                   + "): POP hands those out again from the broker's offset, unless the remoting client's "
                     "next commit (every 5 s) moves it first.")
    if not queues and view.running_infos:
        detail += (" In this sample the broker's offsets and the remoting clients' own agree on every queue "
                   "they hold: nothing can be counted now, which does not make the group safe.")
    elif not view.running_infos:
        detail += " No remoting client's running info was read, so the offsets cannot be compared."
    return [finding(
        ctx, "MIXED_CONSUMPTION", "error",
        f"{view.group} is consumed by remoting clients and gRPC (POP) clients at once",
        detail,
        {"remoting_clients": dividing, "grpc_clients": popping, "queues": queues,
         # without a remoting client's own offsets nothing was compared: unknown, not 0
         "popped_past_client": sum(q["popped_past_client"] for q in queues) if view.running_infos else None,
         "behind_client": sum(q["behind_client"] for q in queues) if view.running_infos else None},
        f"Give the gRPC clients and the remoting clients consumer groups of their own: move one kind to a "
        f"new group and set that group's start (rmqctl group reset, or mqadmin resetOffsetByTime -g <new "
        f"group> -t <topic> -s <time>) so it neither re-reads nor skips; until then do not restart the "
        f"remoting clients of {view.group}, since a restarted one resumes from an offset POP may have moved "
        f"past its messages.",
    )]


def _where(q: dict[str, Any]) -> str:
    return queues_text([MessageQueue(q["topic"], q["broker"], q["queue_id"])])


def _tags(counts: dict[str, int]) -> str:
    return ", ".join(f"{t or '(no tag)'} {n}" for t, n in counts.items())
