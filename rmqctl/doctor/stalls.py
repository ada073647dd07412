"""Progress checks: queues whose messages wait and do not move.

A queue stalls in its client (cached messages the listener does not finish, or an orderly queue
that cannot get or release its broker lock), between two samples (messages waiting, none consumed),
or because no client of the group is online at all.

Must not do I/O, and must not import the CLI, the TUI or pyspark.
"""

from __future__ import annotations

from typing import Any

from rmqctl.doctor.context import (
    CheckContext,
    and_list,
    are,
    finding,
    n_of,
    progress_by_queue,
    queue_dict,
    queues_text,
)
from rmqctl.model import (
    DEFAULT_PROXY_REMOTING_PORT,
    ConsumerRunningInfo,
    Finding,
    GroupView,
    MessageQueue,
    ProcessQueueInfo,
    version_ordinal,
)
from rmqctl.stuck import BLOCKED_AFTER_MS, POP_COMMIT_GRACE_MS, frozen_between, frozen_verdict

#: how long a held queue whose waiting messages the broker's filter drops can show no progress:
#: the broker holds a pull that finds nothing its filter passes for up to 15 s
#: (brokerSuspendMaxTimeMillis) before answering NO_MATCHED_MSG with the offset to skip to, and the
#: client commits that offset with its next pull or its 5 s offset persist (ms)
FILTER_QUIET_MS = 20_000


def filtering_may_explain(view: GroupView, mq: MessageQueue, still_ms: float) -> bool:
    """Whether broker-side filtering alone may explain that ``mq``'s consumer offset has not moved
    for ``still_ms``: its holder caches nothing (it waits on a pull the broker holds back) and the
    offset has been still for no longer than :data:`FILTER_QUIET_MS`. Without the holder's own
    report nothing is explained."""
    if still_ms > FILTER_QUIET_MS:
        return False
    for info in view.running_infos.values():
        pq = info.mq_table.get(mq)
        if pq is not None and not pq.dropped:
            return pq.cached_msg_count == 0
    return False


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


def _never_committed(ctx: CheckContext, cid: str, info: ConsumerRunningInfo, mq: MessageQueue,
                     pq: ProcessQueueInfo, backlog: int) -> dict[str, Any] | None:
    """Why one held queue the group never committed an offset for is blocked, or None: messages
    wait beyond its min offset and its client consumed none of them (or none for over 60 s)."""
    if info.consume_orderly or pq.dropped or backlog <= 0:
        return None
    if pq.last_consume_timestamp and ctx.now_ms - pq.last_consume_timestamp <= BLOCKED_AFTER_MS:
        return None
    return {**queue_dict(mq), "client": cid, "reason": "never committed", "backlog": backlog,
            "cached_msg_count": pq.cached_msg_count}


def _why_blocked(rows: list[dict[str, Any]]) -> str:
    """What one client's blocked queues (rows of one reason) have in common, in words."""
    queues = queues_text([MessageQueue(r["topic"], r["broker"], r["queue_id"]) for r in rows])
    reason = rows[0]["reason"]
    if reason == "never committed":
        backlog = sum(r["backlog"] for r in rows)
        return (f"{queues}, with {n_of(backlog, 'message')} waiting beyond an offset the group never "
                f"committed, none of them finished")
    if reason == "no consumption":
        cached = sum(r["cached_msg_count"] for r in rows)
        idle = max(r["idle_ms"] for r in rows) // 1000
        return f"{queues}, with {n_of(cached, 'cached message')} unconsumed for up to {idle} s"
    if reason == "not locked":
        return f"{queues}, orderly, without the broker lock it needs to consume"
    return f"{queues}, orderly, whose broker lock it could not release ({reason})"


def blocked_queue(ctx: CheckContext) -> list[Finding]:
    uncommitted = {p.queue: p.diff for p in ctx.view.progress if p.offsets_from == "no_commit"}
    rows = []
    for cid, info in sorted(ctx.view.running_infos.items()):
        if info.consume_type not in (None, "CONSUME_PASSIVELY"):
            continue
        for mq, pq in info.mq_table.items():
            row = _blocked(ctx, cid, info, mq, pq)
            if row is None and mq in uncommitted:
                row = _never_committed(ctx, cid, info, mq, pq, uncommitted[mq])
            elif row is not None and row["reason"] == "no consumption" and uncommitted.get(mq, 0) > 0:
                # a listener hung on its very first messages: no commit exists, so nothing but
                # this finding shows the backlog
                row = {**row, "reason": "never committed", "backlog": uncommitted[mq]}
            if row is not None:
                rows.append(row)
    if not rows:
        return []
    group = ctx.view.group
    by_client: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for r in rows:
        kind = r["reason"] if not r["reason"].startswith("unlock failed") else "unlock failed"
        by_client.setdefault(r["client"], {}).setdefault(kind, []).append(r)
    parts = [f"{cid} holds " + "; and ".join(_why_blocked(rs) for rs in kinds.values())
             for cid, kinds in by_client.items()]
    reasons = {r["reason"] for r in rows}
    clients = and_list(list(by_client))
    fix = (f"Take a thread dump of {clients} (mqadmin consumerStatus -g {group} -i <client id> -s) and "
           f"find the listener thread stuck in consumeMessage; fix it, or restart the client to release "
           f"its queues.")
    if "never committed" in reasons:
        fix += (" A queue the group never committed restarts from the consumer's consumeFromWhere: with "
                "CONSUME_FROM_LAST_OFFSET that can skip its backlog, so set an offset first (mqadmin "
                f"resetOffsetByTime -g {group} -t <topic> -s <time>) if those messages must be consumed.")
    if any(r.startswith(("not locked", "unlock failed")) for r in reasons):
        fix += (" The broker gives an orderly queue's lock to another client only once its holder unlocks "
                "it or the lock goes 60 s without renewal (mqadmin consumerStatus shows who holds it).")
    return [finding(
        ctx, "BLOCKED_QUEUE", "error",
        f"{n_of(len(rows), 'queue')} of {group} {are(len(rows))} blocked in "
        f"{clients if len(by_client) == 1 else 'their clients'}",
        ". ".join(parts) + ". A blocked queue's committed offset stays at its oldest unfinished "
        "message (or, never committed, there is none), so its lag only grows.",
        {"queues": rows},
        fix,
    )]


def unseen_grpc_brokers(view: GroupView) -> dict[str, str]:
    """The 5.x brokers (name → release) of a view no proxy answered for: gRPC clients connect to a
    rocketmq-proxy, never to a broker, so without a proxy's list they cannot be seen. Empty when a
    proxy was read, or when no broker is 5.x (or its release was not read)."""
    if any(p.error is None for p in view.proxies):
        return {}
    first_5x = version_ordinal("V5_0_0")
    return {b: v for b, v in sorted(view.broker_versions.items()) if version_ordinal(v) >= first_5x}


def offline_group_backlog(ctx: CheckContext) -> list[Finding]:
    view = ctx.view
    if view.online:
        return []
    rows = [p for p in view.progress if p.known and p.diff > 0]
    unknown = [p.queue for p in view.progress if not p.known]
    if not rows and not unknown:
        return []
    total = sum(p.diff for p in rows)
    group = view.group
    unseen = unseen_grpc_brokers(view)
    parts = []
    if rows:
        parts.append(f"{queues_text([p.queue for p in rows])} {'holds' if len(rows) == 1 else 'hold'} "
                     f"{n_of(total, 'unconsumed message')}")
    if unknown:
        parts.append(f"the offsets of {queues_text(unknown)} could not be read (their backlog is unknown)")
    detail = (f"No client of {group} is connected, and " + "; ".join(parts) + ": nothing is consumed until a "
              "consumer starts (or the messages expire with the commit log).")
    fix = (f"Start a consumer of {group}: it resumes from the committed offsets. If the group is retired, "
           f"delete it on its brokers (mqadmin deleteSubscriptionGroup -g {group}) together with its offsets.")
    if unseen:
        releases = and_list([f"{b} {v}" for b, v in unseen.items()])
        failed = [f"{p.address} ({p.error})" for p in view.proxies if p.error is not None]
        detail = (f"No broker lists a client of {group}, and " + "; ".join(parts) + ". The brokers run "
                  f"RocketMQ 5.x ({releases}) and no proxy was read"
                  + (f" (tried: {'; '.join(failed)})" if failed else "")
                  + ": gRPC clients (rocketmq-client-java 5.x and the other gRPC SDKs) connect to a "
                  "rocketmq-proxy, never to a broker, so the brokers cannot list them, and this group "
                  "may have live POP consumers after all. If it has none, nothing is consumed until a "
                  "consumer starts (or the messages expire with the commit log).")
        fix = (f"Read the group through its proxies: rmqctl --proxy host:port doctor {group} (a "
               f"rocketmq-proxy's remoting port, {DEFAULT_PROXY_REMOTING_PORT} by default; or proxy = "
               f"[...] in the context). If no proxy lists a client either, s" + fix[1:])
    return [finding(
        ctx, "OFFLINE_GROUP_BACKLOG", "warning",
        f"{group} has no online client and {n_of(total, 'message')} waiting" if total else
        f"{group} has no online client and an unknown backlog",
        detail,
        {"total_diff": total, "queues": [{**queue_dict(p.queue), "diff": p.diff} for p in rows],
         "unknown_diff_queues": [queue_dict(mq) for mq in unknown],
         **({"unread_proxy_brokers": unseen} if unseen else {})},
        fix,
    )]




def lag_not_advancing(ctx: CheckContext) -> list[Finding]:
    # a BROADCASTING group keeps its offsets on the clients: the broker's numbers say nothing of it
    if ctx.previous is None or (ctx.view.message_model or "").upper() == "BROADCASTING":
        return []
    if ctx.view.pop and ctx.view.sampled_at - ctx.previous.sampled_at < POP_COMMIT_GRACE_MS:
        return []
    before = progress_by_queue(ctx.previous)
    interval_ms = max(0, ctx.view.sampled_at - ctx.previous.sampled_at)
    rows = []
    for p in ctx.view.progress:
        old = before.get(p.queue)
        # two samples closer than the broker may hold a filtered pull prove nothing about a client
        # that waits on one; a topic no online client subscribes is judged like any queue nobody
        # holds (ORPHANED), and ABANDONED_TOPIC_BACKLOG says why nobody does
        if old is None or not (p.known and old.known):
            continue
        # frozen as rmqctl.stuck defines it (the evidence analyze stuck needs too): same holder, same
        # committed offset, messages waiting at both samples, new ones or not (asked first: most
        # queues are not, and then what filtering may explain does not matter)
        if frozen_between(p.queue.topic, (old.owner, old.consumer_offset, old.diff),
                          (p.owner, p.consumer_offset, p.diff)) and \
                not filtering_may_explain(ctx.view, p.queue, interval_ms):
            # rmqctl.stuck's verdict (STALLED or ORPHANED), the same whenever the run began
            subscribes = None if p.owner is None else ctx.view.subscribes(p.owner, p.queue.topic)
            rows.append({**queue_dict(p.queue), "broker_offset": [old.broker_offset, p.broker_offset],
                         "consumer_offset": [old.consumer_offset, p.consumer_offset],
                         "diff": p.diff, "owner": p.owner,
                         "verdict": frozen_verdict(p.owner, subscribes, pop=ctx.view.pop),
                         **({"topic_subscribed": False} if not p.subscribed else {})})
    if not rows:
        return []
    seconds = interval_ms / 1000
    group = ctx.view.group
    by_owner: dict[str | None, list[dict[str, Any]]] = {}
    for r in rows:
        by_owner.setdefault(r["owner"], []).append(r)
    parts = []
    for owner, rs in sorted(by_owner.items(), key=lambda kv: (kv[0] is None, kv[0] or "")):
        queues = queues_text([MessageQueue(r["topic"], r["broker"], r["queue_id"]) for r in rs])
        arrived = sum(r["broker_offset"][1] - r["broker_offset"][0] for r in rs)
        waiting = sum(r["diff"] for r in rs)
        who = f"{owner} holds {queues}" if owner else f"no client holds {queues}"
        left = sorted({r["topic"] for r in rs if r.get("topic_subscribed") is False})
        if left:
            who += (f" (no online client subscribes {and_list(left)}: see ABANDONED_TOPIC_BACKLOG)" if owner is None
                    else " (which no online client subscribes: see ABANDONED_TOPIC_BACKLOG)")
        if arrived:
            parts.append(f"{who}: {n_of(arrived, 'new message')} arrived and none was consumed "
                         f"({n_of(waiting, 'message')} now wait)")
        else:
            parts.append(f"{who}: none of {n_of(waiting, 'waiting message')} was consumed and no new "
                         f"message arrived")
    owners = [o for o in by_owner if o is not None]
    fixes = []
    if owners:
        fixes.append(f"Take a thread dump of {and_list(sorted(owners))} (mqadmin consumerStatus -g {group} "
                     f"-i <client id> -s) to find the listener stuck or failing in consumeMessage (see "
                     f"BLOCKED_QUEUE and CONSUME_FAILURES).")
    if any(r.get("topic_subscribed") is not False for r in by_owner.get(None, [])):
        fixes.append(f"Queues no client holds are consumed by nobody until a rebalance gives them to a "
                     f"client: check that the group's clients are online and subscribe their topics "
                     f"(mqadmin consumerConnection -g {group}; see ORPHANED_QUEUES).")
    if any(r.get("topic_subscribed") is False for r in rows):
        fixes.append(f"A topic no online client of {group} subscribes is consumed by nobody until a client of "
                     f"the group subscribes it again; dropped on purpose, its offsets and backlog stay on the "
                     f"brokers (see ABANDONED_TOPIC_BACKLOG).")
    return [finding(
        ctx, "LAG_NOT_ADVANCING", "error",
        f"{n_of(len(rows), 'queue')} of {group} "
        + ("received messages but consumed none" if any(r["broker_offset"][1] > r["broker_offset"][0] for r in rows)
           else "consumed none of the messages waiting"),
        f"Between two samples {seconds:.0f} s apart, " + "; ".join(parts) + ".",
        {"interval_seconds": seconds, "queues": rows},
        " ".join(fixes),
    )]
