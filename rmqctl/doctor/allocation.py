"""Ownership and allocation checks: who holds which queue, against what the strategy computes.

In a CLUSTERING group each queue belongs to exactly one client, chosen by the clients' allocation
strategy over every client of the group; queues held by nobody are not pulled, queues held twice
are consumed twice. While a rebalance is visibly in progress these findings are held back.

Must not do I/O, and must not import the CLI, the TUI or pyspark.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rmqctl import errors
from rmqctl.doctor.context import (
    PER_CLIENT_STRATEGIES,
    CheckContext,
    and_list,
    are,
    backlog_text,
    finding,
    n_of,
    progress_by_queue,
    queue_dict,
    queues_by_topic,
    queues_text,
)
from rmqctl.model import DEFAULT_STRATEGY, RETRY_PREFIX, Finding, GroupView, MessageQueue, sort_queues

#: findings about who holds what: held back while a rebalance is visibly in progress
ALLOCATION_CODES = frozenset({"IDLE_CONSUMERS", "ORPHANED_QUEUES", "UNEVEN_ALLOCATION", "QUEUE_HELD_TWICE"})


def idle_consumers(ctx: CheckContext) -> list[Finding]:
    view = ctx.view
    if not ctx.clustering or not view.running_infos:
        return []
    assignments = view.held()
    out = []
    topics = sorted({s.topic for subs in view.client_subscriptions.values() for s in subs})
    for topic in topics:
        subscribers = [c for c, subs in view.client_subscriptions.items()
                       if any(s.topic == topic for s in subs)]
        idle = sorted(c for c in subscribers
                      if not any(mq.topic == topic for mq in assignments.get(c, [])))
        if not idle:
            continue
        topic_queues = sort_queues(view.topic_queues.get(topic, ()) or queues_by_topic(view, topic))
        queues = len(topic_queues)
        clients = len(view.client_ids)
        few = queues < clients
        own = {c: _own_allocation(view, topic, c) for c in idle}
        names = sorted({name for name, _ in own.values()})
        deviating = [c for c in idle if own[c][1]]
        over = f"over {n_of(len(view.client_channels()), 'client')} and {n_of(queues, 'queue')}"
        if few:
            why = f"the topic has {n_of(queues, 'readable queue')} for {n_of(clients, 'client')}"
        elif deviating:
            why = (("its own strategy computes queues for it that it does not hold (" if len(deviating) == 1
                    else "their own strategy computes queues for them that they do not hold (")
                   + "; ".join(f"{c}: {own[c][0]} {over} gives {queues_text(own[c][1] or [])}"
                               for c in deviating) + ")")
        else:
            why = f"the allocation strategy gave {'it' if len(idle) == 1 else 'them'} none ({and_list(names)} {over})"
        holders = sorted({c for c, held in assignments.items() if any(mq.topic == topic for mq in held)})
        progress = progress_by_queue(view)
        lags = [progress[mq].lag if mq in progress else None for mq in topic_queues]
        backlog = backlog_text(sum(v for v in lags if v is not None), sum(1 for v in lags if v is None))
        where = (f" {queues_text(topic_queues)} {'is' if queues == 1 else 'are'} held by "
                 f"{and_list(holders) if holders else 'no client'} (backlog: {backlog})."
                 if topic_queues else "")
        if few:
            grow = ("give the topic at least as many queues as the group has clients "
                    f"(mqadmin updateTopic -c <cluster> -t {topic} -r {clients} -w {clients}) or run "
                    f"{n_of(clients - queues, 'consumer')} fewer")
        elif deviating:
            grow = (f"see UNEVEN_ALLOCATION: check that {and_list(deviating)} "
                    f"{'sees' if len(deviating) == 1 else 'see'} the same name servers "
                    f"and brokers as the rest of the group (mqadmin topicRoute -t {topic}); if it lasts beyond "
                    f"one rebalance period (20 s), restart {and_list(deviating)}")
        else:
            grow = (f"allocate with AVG or AVG_BY_CIRCLE (setAllocateMessageQueueStrategy) on every client: "
                    f"{and_list(names)} leaves {'it' if len(idle) == 1 else 'them'} empty for these clients and "
                    f"queues; or give {topic} more queues (mqadmin updateTopic -c <cluster> -t {topic} -r/-w)")
        out.append(finding(
            ctx, "IDLE_CONSUMERS", "warning",
            f"{n_of(len(idle), 'client')} of {view.group} {'holds' if len(idle) == 1 else 'hold'} "
            f"no queue of {topic}",
            f"{and_list(idle)} {'subscribes' if len(idle) == 1 else 'subscribe'} {topic} but "
            f"{'holds' if len(idle) == 1 else 'hold'} none of its queues because {why}.{where} "
            f"{'It stays registered and receives' if len(idle) == 1 else 'They stay registered and receive'}"
            " nothing; adding consumers beyond the queue count does not add throughput.",
            {"topic": topic, "idle_clients": idle, "queues": queues, "clients": clients},
            f"To put {and_list(idle)} to work, {grow}.",
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


def _own_allocation(view: GroupView, topic: str, cid: str) -> tuple[str, list[MessageQueue] | None]:
    """The strategy ``cid`` reports (AVG, the push consumer's default, when it names none) and
    the queues of ``topic`` that strategy computes for it over every client of the group, the
    way the client's own rebalance does; ``None`` when it cannot be recomputed (CONFIG,
    MACHINE_ROOM and nearby strategies depend on per-client settings; a custom class)."""
    from rmqctl.rebalance.strategies import get_strategy

    info = view.running_infos.get(cid)
    name = (info.strategy if info is not None else None) or DEFAULT_STRATEGY
    queues = view.topic_queues.get(topic)
    if not queues or name in PER_CLIENT_STRATEGIES:
        return name, None
    try:
        computed = get_strategy(name).allocate_all(list(queues), view.client_channels())
    except errors.RmqctlError:
        return name, None
    return name, sort_queues(computed.get(cid, []))


def uneven_allocation(ctx: CheckContext) -> list[Finding]:
    """Each client against what ITS OWN strategy computes (a Java client rebalances with the
    strategy it was built with, over every client of the group): a difference is a warning; an
    imbalance the strategies themselves produce is information, never a reason to restart."""
    view = ctx.view
    if not ctx.clustering or not view.running_infos or any(
        k.startswith("client:") for k in view.errors
    ):
        return []
    actual = view.held()
    out = []
    for topic in sorted(view.topic_queues):
        if topic.startswith(RETRY_PREFIX):
            continue
        subscribers = sorted(c for c, subs in view.client_subscriptions.items()
                             if any(s.topic == topic for s in subs))
        held = {c: sort_queues(mq for mq in actual.get(c, []) if mq.topic == topic) for c in subscribers}
        own = {c: _own_allocation(view, topic, c) for c in subscribers}
        strategies = {c: name for c, (name, _) in own.items()}
        if not subscribers or any(want is None for _, want in own.values()):
            continue  # a client whose share cannot be recomputed: nobody can be judged against it
        computed = {c: want or [] for c, (_, want) in own.items()}
        mismatched = [c for c in subscribers if held[c] != computed[c]]
        counts = {c: len(held[c]) for c in subscribers}
        if not mismatched and (len(subscribers) < 2 or max(counts.values()) - min(counts.values()) <= 1):
            continue  # every client holds its computed share, and the shares are even
        progress = progress_by_queue(view)
        evidence_clients = {c: {"holds": [queue_dict(m) for m in held[c]],
                                "expected": [queue_dict(m) for m in computed[c]]} for c in subscribers}
        names = sorted(set(strategies.values()))
        strategy_text = (f"every client of {view.group} allocates with {names[0]}" if len(names) == 1
                         else "the clients of " + view.group + " allocate with different strategies ("
                         + and_list([f"{c}: {strategies[c]}" for c in subscribers]) + ")")
        over = (f"over the {n_of(len(view.client_channels()), 'client')} and "
                f"{n_of(len(view.topic_queues[topic]), 'queue')} of {topic}")
        if mismatched:
            one_off = len(mismatched) == 1
            parts = []
            for c in mismatched:
                extra = [m for m in held[c] if m not in computed[c]]
                missing = [m for m in computed[c] if m not in held[c]]
                what = [f"holds {queues_text(extra)} that its strategy {strategies[c]} gives to another client"
                        if extra else "",
                        f"does not hold {queues_text(missing)} that {strategies[c]} computes for it"
                        f" (backlog there: {_waiting(missing, progress)})" if missing else ""]
                parts.append(f"{c} " + " and ".join(w for w in what if w))
            out.append(finding(
                ctx, "UNEVEN_ALLOCATION", "warning",
                f"The queues of {topic} are not allocated as the strategy implies",
                f"{strategy_text[0].upper()}{strategy_text[1:]}. {over[0].upper()}{over[1:]}, "
                f"{n_of(len(mismatched), 'client')} {'holds' if one_off else 'hold'} other queues than "
                f"{'its' if one_off else 'their'} own strategy computes: " + "; ".join(parts) + ". "
                + ("Every other client holds exactly its computed share. " if len(mismatched) < len(subscribers)
                   else "")
                + "A client that sees another client list or queue route than the others, or a rebalance "
                  "still in progress, causes this.",
                {"topic": topic, "clients": {c: evidence_clients[c] for c in mismatched},
                 "strategies": strategies},
                f"Check that {and_list(mismatched)} {'uses' if one_off else 'use'} the same namesrvAddr as "
                f"the rest of the group and {'sees' if one_off else 'see'} every broker of {topic} (mqadmin "
                f"topicRoute -t {topic}; mqadmin consumerConnection -g {view.group} lists the clients the "
                f"broker knows); if it lasts beyond one rebalance period (20 s, "
                f"rocketmq.client.rebalance.waitInterval), restart {and_list(mismatched)} only.",
            ))
            continue
        out.append(finding(
            ctx, "UNEVEN_ALLOCATION", "info",
            f"{', '.join(names)} {'splits' if len(names) == 1 else 'split'} the queues of {topic} unevenly "
            f"in {view.group}",
            f"{strategy_text[0].upper()}{strategy_text[1:]}, and every client holds exactly the share its "
            f"strategy computes {over}; the shares are uneven: "
            + "; ".join(f"{c} holds {queues_text(held[c]) if held[c] else 'no queue'} "
                        f"({n_of(counts[c], 'queue')})" for c in subscribers)
            + ". This is the strategy's own answer for these clients and queues, not a fault: restarting "
              "a client changes nothing.",
            {"topic": topic, "clients": evidence_clients, "strategies": strategies},
            f"If the load must be even, give {topic} more queues (mqadmin updateTopic -t {topic} -r/-w "
            f"with a multiple of the client count) or allocate with AVG or AVG_BY_CIRCLE "
            f"(setAllocateMessageQueueStrategy with AllocateMessageQueueAveragely or "
            f"AllocateMessageQueueAveragelyByCircle on every client).",
        ))
    return out


def _waiting(queues: list[MessageQueue], progress: Mapping[MessageQueue, Any]) -> str:
    """The messages waiting on ``queues`` in words; unreadable offsets are unknown, never 0."""
    lags = [progress[mq].lag if mq in progress else None for mq in queues]
    return backlog_text(sum(v for v in lags if v is not None), sum(1 for v in lags if v is None))


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
    lags = [progress[mq].lag if mq in progress else None for mq in twice]
    backlog = backlog_text(sum(v for v in lags if v is not None), sum(1 for v in lags if v is None))
    return [finding(
        ctx, "QUEUE_HELD_TWICE", "error",
        f"{n_of(n, 'queue')} of {view.group} {are(n)} held by two clients at once",
        f"In a CLUSTERING group each queue belongs to one client, yet {pairs}. Both pull the same "
        f"messages (backlog there: {backlog}), so each message is consumed twice, and their offset "
        f"commits overwrite each other. "
        f"Clients that disagree on the client list or the queue route (or a rebalance in progress) "
        f"cause this.",
        {"queues": [{**queue_dict(mq), "clients": cids, "diff": progress[mq].diff if mq in progress else None}
                    for mq, cids in twice.items()]},
        "Check that every client sees the same name servers and brokers and uses the same allocation "
        "strategy (mqadmin topicRoute, mqadmin consumerConnection -g " + ctx.view.group + "); if it lasts "
        "beyond 20 s (one rebalance period), restart "
        + and_list(sorted({c for cids in twice.values() for c in cids})) + ".",
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
        " ".join(filter(None, [
            ("Held by two clients at once: "
             + "; ".join(f"{queues_text([mq])} by {and_list(owners.get(mq, []))}" for mq in shared) + "."
             if shared else ""),
            (f"Held by no client: {queues_text(unheld)}." if unheld else "")]))
        + f" All are in topics every client of {ctx.view.group} ({and_list(sorted(ctx.view.running_infos))}) "
        "subscribes: the clients are still moving to the allocation of the new membership. "
        + ("The doctor sampled again and the holdings had still not settled, so allocation findings "
           "are reported as they stand." if ctx.resampled else
           "Allocation findings (idle, orphaned, uneven) are held back until a later sample."),
        evidence,
        f"Wait one rebalance period (20 s, rocketmq.client.rebalance.waitInterval; at once when the broker "
        f"notifies the clients of a membership change) and run rmqctl doctor {ctx.view.group} again.",
    )]
