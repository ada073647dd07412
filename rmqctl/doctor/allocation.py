"""Ownership and allocation checks: who holds which queue, against what the strategy computes.

In a CLUSTERING group each queue belongs to exactly one client, chosen by the clients' allocation
strategy over every client of the group; queues held by nobody are not pulled, queues held twice
are consumed twice. While a rebalance is visibly in progress these findings are held back.

Must not do I/O, and must not import the CLI, the TUI or pyspark.
"""

from __future__ import annotations

from typing import Any

from rmqctl.doctor.context import (
    CheckContext,
    and_list,
    are,
    backlog_text,
    expected_allocation,
    finding,
    n_of,
    progress_by_queue,
    queue_dict,
    queues_by_topic,
    queues_text,
)
from rmqctl.model import RETRY_PREFIX, Finding, sort_queues

#: findings about who holds what: held back while a rebalance is visibly in progress
ALLOCATION_CODES = frozenset({"IDLE_CONSUMERS", "ORPHANED_QUEUES", "UNEVEN_ALLOCATION", "QUEUE_HELD_TWICE"})


def idle_consumers(ctx: CheckContext) -> list[Finding]:
    view = ctx.view
    if not ctx.clustering or not view.running_infos:
        return []
    assignments = view.assignments()
    out = []
    topics = sorted({s.topic for subs in view.client_subscriptions.values() for s in subs})
    for topic in topics:
        subscribers = [c for c, subs in view.client_subscriptions.items()
                       if any(s.topic == topic for s in subs)]
        idle = sorted(c for c in subscribers
                      if not any(mq.topic == topic for mq in assignments.get(c, [])))
        if not idle:
            continue
        queues = len(view.topic_queues.get(topic, ())) or len(queues_by_topic(view, topic))
        clients = len(view.client_ids)
        why = (f"the topic has {n_of(queues, 'readable queue')} for {n_of(clients, 'client')}"
               if queues < clients else "the allocation strategy gave them none")
        out.append(finding(
            ctx, "IDLE_CONSUMERS", "warning",
            f"{n_of(len(idle), 'client')} of {view.group} {'holds' if len(idle) == 1 else 'hold'} "
            f"no queue of {topic}",
            f"{and_list(idle)} {'subscribes' if len(idle) == 1 else 'subscribe'} {topic} but "
            f"{'holds' if len(idle) == 1 else 'hold'} none of its queues because {why}. "
            f"{'It stays registered and receives' if len(idle) == 1 else 'They stay registered and receive'}"
            " nothing; adding consumers beyond the queue count does not add throughput.",
            {"topic": topic, "idle_clients": idle, "queues": queues, "clients": clients},
            f"Raise the read/write queue count of {topic} to at least {clients} "
            f"(mqadmin updateTopic -r/-w) or run fewer consumers.",
        ))
    return out


def orphaned_queues(ctx: CheckContext) -> list[Finding]:
    view = ctx.view
    if not view.online or not ctx.clustering:
        return []
    if any(k.startswith("client:") for k in view.errors) or not view.running_infos:
        return []  # without every client's own report we cannot tell who holds what
    subscribed = {s.topic for subs in view.client_subscriptions.values() for s in subs}
    subscribed |= {RETRY_PREFIX + view.group}
    progress = progress_by_queue(view)
    orphans = [mq for mq in view.unassigned() if mq.topic in subscribed or mq.topic in
               {t for table in view.broker_subscriptions.values() for t in table}]
    # A group that just started: the broker creates %RETRY%<group> on the first heartbeat, but
    # the clients allocate it only after their next route poll (up to 30 s later). Until then
    # no offset exists for it and it holds nothing, so it is not orphaned yet.
    orphans = [mq for mq in orphans if not (mq.topic.startswith(RETRY_PREFIX) and mq not in progress)]
    if not orphans:
        return []
    lags = {mq: progress[mq].lag if mq in progress else None for mq in orphans}
    lag = sum(v for v in lags.values() if v is not None)
    unknown = sort_queues(mq for mq, v in lags.items() if v is None)
    # A lag that could not be read may be anything: it never makes the verdict milder.
    backlog = backlog_text(lag, len(unknown))
    return [finding(
        ctx, "ORPHANED_QUEUES", "error" if lag > 0 or unknown else "warning",
        f"{n_of(len(orphans), 'queue')} of {view.group} {are(len(orphans))} held by no client",
        f"While the group is online ({and_list(sorted(view.running_infos))}), {queues_text(orphans)} "
        f"{are(len(orphans))} held by none of its clients, so nobody pulls {'it' if len(orphans) == 1 else 'them'}; "
        f"the backlog ({backlog}) grows until the allocation changes.",
        {"queues": [{**queue_dict(mq), "diff": lags[mq]} for mq in orphans], "total_diff": lag,
         "unknown_diff_queues": [queue_dict(mq) for mq in unknown]},
        "Look for the cause among the other findings (different topic sets, duplicate client ids, "
        "a CONFIG/MACHINE_ROOM strategy); restarting the clients forces a fresh rebalance.",
    )]


def uneven_allocation(ctx: CheckContext) -> list[Finding]:
    view = ctx.view
    if not ctx.clustering or not view.running_infos or any(
        k.startswith("client:") for k in view.errors
    ):
        return []
    actual = view.assignments()
    out = []
    for topic in sorted(view.topic_queues):
        if topic.startswith(RETRY_PREFIX):
            continue
        expected = expected_allocation(view, topic)
        if expected is None:
            continue
        subscribers = {c for c, subs in view.client_subscriptions.items()
                       if any(s.topic == topic for s in subs)}
        mismatched = {}
        for cid in sorted(subscribers):
            have = sort_queues(mq for mq in actual.get(cid, []) if mq.topic == topic)
            want = sort_queues(expected.get(cid, []))
            if have != want:
                mismatched[cid] = {"holds": [queue_dict(m) for m in have], "expected": [queue_dict(m) for m in want]}
        counts = [len([m for m in actual.get(c, []) if m.topic == topic]) for c in sorted(subscribers)]
        if not mismatched:
            continue
        out.append(finding(
            ctx, "UNEVEN_ALLOCATION", "warning",
            f"The queues of {topic} are not allocated as the strategy implies",
            f"The clients of {view.group} hold {and_list([str(c) for c in counts])} queues of {topic} "
            f"({and_list([f'{c}: {n}' for c, n in zip(sorted(subscribers), counts, strict=True)])}), "
            f"which differs from what "
            f"their allocation strategy computes for the current clients and queues. Clients may "
            f"disagree about the client list or queue route, or a rebalance is still in progress.",
            {"topic": topic, "clients": mismatched},
            "Check that every client sees the same name servers and brokers; if it persists "
            "beyond 20 s (one rebalance period), restart the clients that deviate.",
        ))
    return out


def queue_held_twice(ctx: CheckContext) -> list[Finding]:
    """Queues two clients of a CLUSTERING group report holding at the same time."""
    view = ctx.view
    if not ctx.clustering or not view.running_infos:
        return []
    twice = view.held_twice()
    if not twice:
        return []
    progress = progress_by_queue(view)
    pairs = "; ".join(f"{mq.topic}@{mq.broker_name}/{mq.queue_id} by {and_list(cids)}" for mq, cids in twice.items())
    n = len(twice)
    return [finding(
        ctx, "QUEUE_HELD_TWICE", "error",
        f"{n_of(n, 'queue')} of {view.group} {are(n)} held by two clients at once",
        f"In a CLUSTERING group each queue belongs to one client, yet {pairs}. Both pull the same "
        f"messages, so each message is consumed twice, and their offset commits overwrite each other. "
        f"Clients that disagree on the client list or the queue route (or a rebalance in progress) "
        f"cause this.",
        {"queues": [{**queue_dict(mq), "clients": cids, "diff": progress[mq].diff if mq in progress else None}
                    for mq, cids in twice.items()]},
        "Check that every client sees the same name servers and brokers and uses the same allocation "
        "strategy; if it lasts beyond 20 s (one rebalance period), restart the clients named.",
    )]


def rebalance_in_progress(ctx: CheckContext) -> list[Finding]:
    state = ctx.view.rebalance_in_progress()
    if state is None:
        return []
    shared, unheld = state["shared"], state["unheld"]
    owners = ctx.view.owners()
    evidence: dict[str, Any] = {
        "shared_queues": [{**queue_dict(mq), "holders": owners.get(mq, [])} for mq in shared],
        "unheld_queues": [queue_dict(mq) for mq in unheld], "resampled": ctx.resampled,
    }
    return [finding(
        ctx, "REBALANCE_IN_PROGRESS", "info",
        f"Rebalance in progress in {ctx.view.group}",
        f"{len(shared)} queue(s) are held by two clients and {len(unheld)} by none, in topics every "
        f"client subscribes: the clients are still moving to the allocation of the new membership. "
        + ("The doctor sampled again and the holdings had still not settled, so allocation findings "
           "are reported as they stand." if ctx.resampled else
           "Allocation findings (idle, orphaned, uneven) are held back until a later sample."),
        evidence,
        "Wait one rebalance period (20 s; at once when the broker notifies) and check again.",
    )]
