"""Doctor checks: pure functions from a :class:`~rmqctl.model.GroupView` to findings.

Each check mirrors one way RocketMQ loses or stalls messages because of how a consumer group is
set up. The impact computations follow the broker and client rules: the broker stores ONE
subscription per (group, topic) and filters pulls by it (push consumers do not send their own);
the client then drops messages whose tag is not in its own subscription, and commits past both;
every client of the group takes part in every topic's allocation, so queues of a topic can land on
clients that never subscribed it and are then never pulled.

Must not do I/O, and must not import the CLI, the TUI or pyspark.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rmqctl import errors
from rmqctl.model import (
    DEFAULT_STRATEGY,
    RETRY_PREFIX,
    SEVERITY_RANK,
    SUB_ALL,
    Finding,
    GroupView,
    MessageQueue,
    QueueProgress,
    Subscription,
    java_string_hash,
    sort_queues,
)

BLOCKED_AFTER_MS = 60_000
RETRY_WARNING_DIFF = 1_000


@dataclass(frozen=True)
class CheckContext:
    """Inputs of every check beyond the view itself."""

    view: GroupView
    previous: GroupView | None = None
    now_ms: int = 0
    #: the view is a second sample taken because the first showed a rebalance in progress
    resampled: bool = False

    @property
    def clustering(self) -> bool:
        models = {ri.message_model for ri in self.view.running_infos.values() if ri.message_model}
        model = self.view.message_model or next(iter(models), None)
        return model != "BROADCASTING"


Check = Callable[[CheckContext], list[Finding]]


def _n(count: int, noun: str) -> str:
    """``1 queue``, ``2 queues``: findings read as prose."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _are(count: int) -> str:
    return "is" if count == 1 else "are"


def _and(names: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    if len(names) <= 2:
        return " and ".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


def _q(mq: MessageQueue) -> dict[str, Any]:
    return mq.as_dict()


def _finding(ctx: CheckContext, code: str, severity: str, title: str, detail: str,
             evidence: Mapping[str, Any], fix: str) -> Finding:
    return Finding(code, severity, ctx.view.group, title, detail, dict(evidence), fix)  # type: ignore[arg-type]


def _expr(sub: Subscription | None) -> str:
    return sub.expression if sub is not None else "(not subscribed)"


def _stored(view: GroupView, topic: str) -> tuple[Subscription | None, dict[str, str]]:
    """The broker-stored subscription of ``topic`` (first broker that has one) and per broker."""
    per_broker = {b: t[topic].expression for b, t in sorted(view.broker_subscriptions.items())
                  if topic in t}
    for _, table in sorted(view.broker_subscriptions.items()):
        if topic in table:
            return table[topic], per_broker
    return None, per_broker


def _client_sub(view: GroupView, cid: str, topic: str) -> Subscription | None:
    info = view.running_infos.get(cid)  # not view.client_subscriptions, which builds all clients
    if info is None:
        return None
    return next((s for s in info.user_subscriptions() if s.topic == topic), None)


def _holder_of_stored(view: GroupView, stored: Subscription) -> list[str]:
    """Clients whose own subscription is exactly what the broker keeps (same text and version)."""
    same = [(cid, s) for cid, subs in view.client_subscriptions.items()
            for s in subs if s.topic == stored.topic and s.expression == stored.expression]
    exact = [cid for cid, s in same if s.sub_version == stored.sub_version]
    # A client's version moves on with each allocation change after the broker stored a greater
    # one, so when no version matches, the clients with the very same expression are the source.
    return exact or [cid for cid, _ in same]


def _queues_by_topic(view: GroupView, topic: str) -> list[MessageQueue]:
    queues = set(view.topic_queues.get(topic, ()))
    queues.update(p.queue for p in view.progress if p.queue.topic == topic)
    return sort_queues(queues)


def _progress(view: GroupView) -> dict[MessageQueue, QueueProgress]:
    return {p.queue: p for p in view.progress}


# ---------------------------------------------------------------------------------------------


#: the label under which, without a message sample, every tag no client names is counted
OTHER_TAGS = "(any other tag)"


def _label(tag: str | None) -> str:
    return tag if tag is not None else ""


def _passes_broker(sub: Subscription, tag: str | None) -> bool:
    """The broker's pull filter (tag hash codes; an untagged message has code 0)."""
    if tag == OTHER_TAGS:
        return sub.is_all or sub.expression_type != "TAG"
    return sub.accepts_code(java_string_hash(tag) if tag else 0)


def _passes_client(sub: Subscription, tag: str | None) -> bool:
    """The client's own check after the pull (exact tag strings)."""
    if tag == OTHER_TAGS:
        return sub.is_all or sub.expression_type != "TAG"
    return sub.accepts(tag)


def tag_conflict_topics(view: GroupView) -> list[str]:
    """Topics whose clients subscribe with different filters (what message sampling is for)."""
    out = []
    topics = sorted({s.topic for subs in view.client_subscriptions.values() for s in subs})
    for topic in topics:
        present = [s for cid in view.client_subscriptions if (s := _client_sub(view, cid, topic)) is not None]
        if len(present) >= 2 and not all(present[0].same_filter(s) for s in present):
            out.append(topic)
    return out


def subscription_tag_conflict(ctx: CheckContext) -> list[Finding]:
    view = ctx.view
    out = []
    owners = view.owners()
    progress = _progress(view)
    for topic in tag_conflict_topics(view):
        subs = {cid: _client_sub(view, cid, topic) for cid in view.client_subscriptions}
        present = {cid: s for cid, s in subs.items() if s is not None}
        stored, per_broker = _stored(view, topic)
        stored_by_broker = {b: t[topic] for b, t in view.broker_subscriptions.items() if topic in t}
        named = sorted({t for s in present.values() for t in s.tags} | (set(stored.tags) if stored else set()))
        samples = {mq: s for mq, s in view.tag_samples.items() if mq.topic == topic}
        sampled = bool(samples)
        universe: list[str | None]
        if sampled:
            seen = {m.tag for s in samples.values() for m in s.messages}
            universe = sorted(set(named) | seen, key=lambda t: (t is None, t or ""))
        else:
            universe = [*named, OTHER_TAGS]
        queue_rows = []
        delivered_anywhere: set[str | None] = set()
        received: dict[str, dict[str, int]] = {cid: {} for cid in present}
        dropped: dict[str, dict[str, int]] = {cid: {} for cid in present}
        filtered: dict[str, int] = {}
        pending: dict[str, int] = {}
        for mq in _queues_by_topic(view, topic):
            holders = owners.get(mq, [])
            owner = holders[0] if holders else None
            own = subs.get(owner) if owner else None
            filt = stored_by_broker.get(mq.broker_name, stored)
            lost_broker = [t for t in universe if filt is not None and not _passes_broker(filt, t)]
            lost_client = [t for t in universe if filt is not None and own is not None
                           and _passes_broker(filt, t) and not _passes_client(own, t)]
            delivered = [t for t in universe if filt is not None and own is not None
                         and t not in lost_broker and t not in lost_client]
            delivered_anywhere.update(delivered)
            row: dict[str, Any] = {
                **_q(mq), "owner": owner, "owner_expression": _expr(own) if owner else None,
                "filtered_by_broker": [_label(t) for t in lost_broker],
                "dropped_by_client": [_label(t) for t in lost_client],
                "delivered_tags": [_label(t) for t in delivered],
            }
            sample = samples.get(mq)
            p = progress.get(mq)
            if sample is not None:
                done_below = p.consumer_offset if p is not None and p.known else sample.from_offset
                counts: dict[str, dict[str, int]] = {}
                for m in sample.messages:
                    tag = m.tag
                    if m.offset >= done_below:
                        kind = "pending"
                        pending[_label(tag)] = pending.get(_label(tag), 0) + 1
                    elif tag in lost_broker:
                        kind = "filtered_by_broker"
                        filtered[_label(tag)] = filtered.get(_label(tag), 0) + 1
                    elif tag in lost_client and owner is not None:
                        kind = "dropped_by_client"
                        dropped[owner][_label(tag)] = dropped[owner].get(_label(tag), 0) + 1
                    elif owner is not None and tag in delivered:
                        kind = "delivered"
                        received[owner][_label(tag)] = received[owner].get(_label(tag), 0) + 1
                    else:
                        kind = "pending"
                        pending[_label(tag)] = pending.get(_label(tag), 0) + 1
                    slot = counts.setdefault(_label(tag), {})
                    slot[kind] = slot.get(kind, 0) + 1
                row["sample"] = {"from_offset": sample.from_offset, "to_offset": sample.to_offset,
                                 "counts": dict(sorted(counts.items()))}
            queue_rows.append(row)
        lost_everywhere = [t for t in universe if t not in delivered_anywhere]
        winners = _holder_of_stored(view, stored) if stored else []
        losers = sorted(cid for cid, s in present.items() if stored is None or not s.same_filter(stored))
        starved = sorted(
            cid for cid in losers
            if not any(stored is not None and _passes_broker(stored, t) and _passes_client(present[cid], t)
                       for t in universe)
        )
        held = f" and currently holds {_expr(stored)!r}" if stored else ""
        if stored and winners:
            held += f" (from {', '.join(winners)})"
        detail = (
            f"Clients of group {view.group} subscribe topic {topic} with different expressions "
            f"({'; '.join(f'{c}: {_expr(s)}' for c, s in sorted(present.items()))}). The broker "
            f"keeps one subscription per topic for the whole group{held}. It filters every pull by "
            f"that expression, and each client then drops what its own expression does not match; "
            f"both are committed as consumed, so the lag shows 0 while messages vanish."
        )
        if starved:
            detail += f" {', '.join(starved)} can receive nothing at all."
        if lost_everywhere:
            tagged = [_label(t) or "(no tag)" for t in lost_everywhere if t != OTHER_TAGS]
            parts = [f"messages tagged {' or '.join(tagged)}"] if tagged else []
            if OTHER_TAGS in lost_everywhere:
                if tagged:
                    parts.append("messages with any other tag")
                elif named:
                    parts.append(f"messages with any tag other than {' or '.join(named)}")
                else:
                    parts.append("every message")
            lost = " and ".join(parts)
            detail += f" {lost[0].upper()}{lost[1:]} are never consumed by anyone in this group."
        if sampled:
            total = sum(len(s.messages) for s in samples.values())
            basis = (f"Tags are those of a sample of {total} recent message(s) (up to "
                     f"{max(s.to_offset - s.from_offset for s in samples.values())} per queue, read "
                     f"back without committing).")
        else:
            basis = (f"No message sample was taken, so tags no client names are counted together "
                     f"as {OTHER_TAGS!r}.")
        detail += " " + basis
        wants_all = any(s.is_all for s in present.values())
        union = sorted({t for s in present.values() for t in s.tags})
        suggestion = SUB_ALL if wants_all or not union else " || ".join(union)
        evidence: dict[str, Any] = {
            "topic": topic,
            "client_expressions": {c: _expr(s) for c, s in sorted(present.items())},
            "broker_expression": per_broker,
            "broker_holds_from": winners,
            "losing_clients": losers,
            "starved_clients": starved,
            "tags_never_consumed": [_label(t) for t in lost_everywhere],
            "sampled": sampled,
            "tag_basis": "sample" if sampled else "named tags plus every other tag",
            "queues": queue_rows,
        }
        if sampled:
            evidence["counts"] = {
                "received_by_client": {c: dict(sorted(v.items())) for c, v in sorted(received.items())},
                "dropped_by_client": {c: dict(sorted(v.items())) for c, v in sorted(dropped.items())},
                "filtered_by_broker": dict(sorted(filtered.items())),
                "pending": dict(sorted(pending.items())),
            }
        out.append(_finding(
            ctx, "SUBSCRIPTION_TAG_CONFLICT", "error",
            f"Clients of {view.group} subscribe {topic} with different tags",
            detail, evidence,
            f"Give every client of {view.group} the same subscription for {topic} ({suggestion!r}, "
            f"which narrows no client's), or put clients that need different tags into separate "
            f"consumer groups; then restart them so the broker stores one expression.",
        ))
    return out


def _expected_allocation(view: GroupView, topic: str) -> dict[str, list[MessageQueue]] | None:
    """What the clients' strategy assigns for ``topic`` over ALL clients of the group."""
    from rmqctl.rebalance.strategies import get_strategy

    queues = view.topic_queues.get(topic)
    if not queues or not view.client_ids:
        return None
    try:
        strategy = get_strategy(view.strategy or DEFAULT_STRATEGY)
    except errors.RmqctlError:  # a strategy we cannot reproduce (CONFIG, a custom class)
        return None
    return strategy.allocate_all(list(queues), view.client_channels())


def subscription_topic_conflict(ctx: CheckContext) -> list[Finding]:
    view = ctx.view
    if not ctx.clustering:
        return []
    topic_sets = {cid: frozenset(s.topic for s in subs)
                  for cid, subs in view.client_subscriptions.items()}
    if len(set(topic_sets.values())) < 2:
        return []
    progress = _progress(view)
    all_topics = sorted(set().union(*topic_sets.values()))
    per_topic: list[dict[str, Any]] = []
    stuck_held = _unpullable_held(ctx)
    for topic in all_topics:
        non_subscribers = sorted(c for c, ts in topic_sets.items() if topic not in ts)
        if not non_subscribers:
            continue
        expected = _expected_allocation(view, topic) or {}
        orphaned = sort_queues(mq for cid in non_subscribers for mq in expected.get(cid, []))
        per_topic.append({
            "topic": topic,
            "subscribed_by": sorted(c for c, ts in topic_sets.items() if topic in ts),
            "not_subscribed_by": non_subscribers,
            "never_pulled_queues": [
                {**_q(mq), "allocated_to": next((c for c in non_subscribers
                                                 if mq in expected.get(c, [])), None),
                 "diff": progress[mq].lag if mq in progress else None}
                for mq in orphaned
            ],
            "unpullable_queues": [{**_q(mq), "owner": next(iter(view.owners().get(mq, [])), None),
                                   "diff": progress[mq].lag if mq in progress else None, "reason": why}
                                  for mq, why in stuck_held.items() if mq.topic == topic],
        })
    stuck = sum(len(t["never_pulled_queues"]) for t in per_topic)
    lag = sum(q["diff"] or 0 for t in per_topic for q in t["never_pulled_queues"])
    unknown = sum(1 for t in per_topic for q in t["never_pulled_queues"] if q["diff"] is None)
    lag_text = _backlog_text(lag, unknown)
    held_text = ""
    if stuck_held:
        held_text = (f" {_n(len(stuck_held), 'queue')} {_are(len(stuck_held))} held but cannot be pulled now "
                     f"({', '.join(f'{mq.topic}/{mq.broker_name}/{mq.queue_id}' for mq in stuck_held)}): "
                     f"their topic is missing from the broker's table, so every pull fails while "
                     f"messages wait.")
    detail = (
        f"Clients of group {view.group} subscribe different topics "
        f"({'; '.join(f'{c}: {_and(sorted(ts))}' for c, ts in sorted(topic_sets.items()))}). The broker "
        f"keeps the topic set of whichever client heartbeated last, so the others' pulls fail with "
        f"'the consumer's subscription not exist' and progress comes in bursts. Every client also "
        f"takes part in every topic's allocation, so {_n(stuck, 'queue')} {_are(stuck)} allocated to clients that "
        f"never subscribed them: nobody pulls them and their lag ({lag_text}) only grows."
        + held_text
    )
    return [_finding(
        ctx, "SUBSCRIPTION_TOPIC_CONFLICT", "error",
        f"Clients of {view.group} subscribe different topics",
        detail, {"client_topics": {c: sorted(ts) for c, ts in sorted(topic_sets.items())},
                 "topics": per_topic},
        "Use one consumer group per distinct topic set: every client of a group must subscribe "
        "exactly the same topics (and expressions).",
    )]


def _unpullable_held(ctx: CheckContext) -> dict[MessageQueue, str]:
    """Held queues that cannot be pulled: their topic is missing from the broker's table now, or
    (two samples) the same client held them both times, messages waited and the consumer offset
    did not move while the client cached nothing."""
    view = ctx.view
    out = dict(view.unpullable())
    if ctx.previous is None:
        return out
    before = _progress(ctx.previous)
    before_owners = ctx.previous.owners()
    owners = view.owners()
    cached = {mq: pq.cached_msg_count for info in view.running_infos.values()
              for mq, pq in info.mq_table.items() if not pq.dropped}
    for p in view.progress:
        old = before.get(p.queue)
        if old is None or not p.known or not old.known or p.queue in out:
            continue
        holders = owners.get(p.queue)
        if not holders or before_owners.get(p.queue) != holders or cached.get(p.queue, 0) > 0:
            continue
        if p.diff > 0 and old.diff > 0 and p.consumer_offset == old.consumer_offset:
            out[p.queue] = (f"held by {holders[0]}, but its consumer offset stayed at "
                            f"{p.consumer_offset} while {p.diff} message(s) waited and nothing was cached")
    return dict(sorted(out.items()))


def broker_subscription_divergence(ctx: CheckContext) -> list[Finding]:
    view = ctx.view
    out = []
    topics = sorted({t for table in view.broker_subscriptions.values() for t in table
                     if not t.startswith(RETRY_PREFIX)})
    for topic in topics:
        stored = {b: t[topic] for b, t in sorted(view.broker_subscriptions.items()) if topic in t}
        missing = sorted(b for b, t in view.broker_subscriptions.items() if topic not in t)
        first = next(iter(stored.values()))
        brokers_differ = bool(missing) or any(not first.same_filter(s) for s in stored.values())
        clients_differ = sorted(
            cid for cid in view.client_subscriptions
            if (own := _client_sub(view, cid, topic)) is not None
            and any(not own.same_filter(s) for s in stored.values())
        )
        if not brokers_differ and not clients_differ:
            continue
        out.append(_finding(
            ctx, "BROKER_SUBSCRIPTION_DIVERGENCE", "warning",
            f"The broker-stored subscription of {topic} does not match every client",
            f"For topic {topic} the brokers store "
            f"{'; '.join(f'{b}: {s.expression!r} (v{s.sub_version})' for b, s in stored.items())}"
            + (f" and {_and(missing)} {'stores' if len(missing) == 1 else 'store'} nothing" if missing else "")
            + (f", while {_and(clients_differ)} {'subscribes' if len(clients_differ) == 1 else 'subscribe'}"
               " differently" if clients_differ else "")
            + ". Pulls are filtered by the broker's copy, not by what each client asked for.",
            {"topic": topic,
             "broker_expressions": {b: {"expression": s.expression, "sub_version": s.sub_version}
                                    for b, s in stored.items()},
             "brokers_without_topic": missing,
             "clients_differing": {c: _expr(_client_sub(view, c, topic)) for c in clients_differ}},
            "Make every client of the group subscribe identically; the broker's copy converges "
            "within one heartbeat (30 s) once they agree.",
        ))
    return out


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
        queues = len(view.topic_queues.get(topic, ())) or len(_queues_by_topic(view, topic))
        clients = len(view.client_ids)
        why = (f"the topic has {_n(queues, 'readable queue')} for {_n(clients, 'client')}"
               if queues < clients else "the allocation strategy gave them none")
        out.append(_finding(
            ctx, "IDLE_CONSUMERS", "warning",
            f"{_n(len(idle), 'client')} of {view.group} {'holds' if len(idle) == 1 else 'hold'} "
            f"no queue of {topic}",
            f"{_and(idle)} {'subscribes' if len(idle) == 1 else 'subscribe'} {topic} but "
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
    progress = _progress(view)
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
    backlog = _backlog_text(lag, len(unknown))
    return [_finding(
        ctx, "ORPHANED_QUEUES", "error" if lag > 0 or unknown else "warning",
        f"{_n(len(orphans), 'queue')} of {view.group} {_are(len(orphans))} held by no client",
        f"While the group is online, {_n(len(orphans), 'queue')} {_are(len(orphans))} held by none of its "
        f"clients, so nobody pulls {'it' if len(orphans) == 1 else 'them'}; the backlog ({backlog}) grows "
        f"until the allocation changes.",
        {"queues": [{**_q(mq), "diff": lags[mq]} for mq in orphans], "total_diff": lag,
         "unknown_diff_queues": [_q(mq) for mq in unknown]},
        "Look for the cause among the other findings (different topic sets, duplicate client ids, "
        "a CONFIG/MACHINE_ROOM strategy); restarting the clients forces a fresh rebalance.",
    )]


def duplicate_client_id(ctx: CheckContext) -> list[Finding]:
    dups = {cid: list(addrs) for cid, addrs in ctx.view.duplicate_clients.items()}
    if not dups:
        return []
    return [_finding(
        ctx, "DUPLICATE_CLIENT_ID", "error",
        f"{_n(len(dups), 'client id')} of {ctx.view.group} {_are(len(dups))} used by more than one process",
        "Several connections share one client id. Each computes the same position in the "
        "allocation, so they consume the same queues twice while another share is held by nobody.",
        {"clients": dups},
        "Give every process a unique instanceName (or upgrade clients older than 4.9, which build "
        "ids from IP and PID only).",
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
        expected = _expected_allocation(view, topic)
        if expected is None:
            continue
        subscribers = {c for c, subs in view.client_subscriptions.items()
                       if any(s.topic == topic for s in subs)}
        mismatched = {}
        for cid in sorted(subscribers):
            have = sort_queues(mq for mq in actual.get(cid, []) if mq.topic == topic)
            want = sort_queues(expected.get(cid, []))
            if have != want:
                mismatched[cid] = {"holds": [_q(m) for m in have], "expected": [_q(m) for m in want]}
        counts = [len([m for m in actual.get(c, []) if m.topic == topic]) for c in sorted(subscribers)]
        if not mismatched:
            continue
        out.append(_finding(
            ctx, "UNEVEN_ALLOCATION", "warning",
            f"The queues of {topic} are not allocated as the strategy implies",
            f"The clients of {view.group} hold {_and([str(c) for c in counts])} queues of {topic} "
            f"({_and([f'{c}: {n}' for c, n in zip(sorted(subscribers), counts, strict=True)])}), "
            f"which differs from what "
            f"their allocation strategy computes for the current clients and queues. Clients may "
            f"disagree about the client list or queue route, or a rebalance is still in progress.",
            {"topic": topic, "clients": mismatched},
            "Check that every client sees the same name servers and brokers; if it persists "
            "beyond 20 s (one rebalance period), restart the clients that deviate.",
        ))
    return out


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
    return [_finding(
        ctx, "MIXED_CONSUMER_SETTINGS", "warning",
        f"Clients of {ctx.view.group} run with different settings",
        "Clients of one group differ in " + ", ".join(differing) + ". Each client computes its "
        "share with its own strategy and model, so their allocations overlap or leave gaps, and "
        "the broker keeps only the last heartbeat's model and type for the group.",
        differing,
        "Configure every client of the group identically (message model, push/pull, orderly, "
        "allocation strategy).",
    )]


def blocked_queue(ctx: CheckContext) -> list[Finding]:
    rows = []
    for cid, info in sorted(ctx.view.running_infos.items()):
        if info.consume_type not in (None, "CONSUME_PASSIVELY"):
            continue
        for mq, pq in info.mq_table.items():
            if pq.dropped and not info.consume_orderly:
                continue
            if info.consume_orderly:
                if not pq.locked:
                    rows.append({**_q(mq), "client": cid, "reason": "not locked"})
                elif pq.dropped and pq.try_unlock_times > 0:
                    rows.append({**_q(mq), "client": cid,
                                 "reason": f"unlock failed {pq.try_unlock_times} times"})
            elif pq.cached_msg_count > 0 and pq.last_consume_timestamp and \
                    ctx.now_ms - pq.last_consume_timestamp > BLOCKED_AFTER_MS:
                rows.append({**_q(mq), "client": cid, "reason": "no consumption",
                             "idle_ms": ctx.now_ms - pq.last_consume_timestamp,
                             "cached_msg_count": pq.cached_msg_count})
    if not rows:
        return []
    return [_finding(
        ctx, "BLOCKED_QUEUE", "error",
        f"{_n(len(rows), 'queue')} of {ctx.view.group} {_are(len(rows))} blocked in their client",
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
    return [_finding(
        ctx, "OFFLINE_GROUP_BACKLOG", "warning",
        f"{view.group} has no online client and {_n(total, 'message')} waiting",
        f"No client of {view.group} is connected, and {_n(len(rows), 'queue')} "
        f"{'holds' if len(rows) == 1 else 'hold'} {_n(total, 'unconsumed message')} that will wait until "
        f"a consumer starts (or expire with the "
        f"commit log).",
        {"total_diff": total, "queues": [{**_q(p.queue), "diff": p.diff} for p in rows]},
        "Start the group's consumers, or delete the group's offsets if it is retired.",
    )]


def retry_backlog(ctx: CheckContext) -> list[Finding]:
    rows = [p for p in ctx.view.progress if p.queue.topic.startswith(RETRY_PREFIX) and p.diff > 0]
    if not rows:
        return []
    total = sum(p.diff for p in rows)
    return [_finding(
        ctx, "RETRY_BACKLOG", "warning" if total >= RETRY_WARNING_DIFF else "info",
        f"{_n(total, 'message')} {'waits' if total == 1 else 'wait'} in {RETRY_PREFIX}{ctx.view.group}",
        "Messages the listener failed to consume wait in the retry topic with growing delays "
        "(10 s up to 2 h); after 16 failures they move to the dead-letter queue.",
        {"total_diff": total, "queues": [{**_q(p.queue), "diff": p.diff} for p in rows]},
        "Find why the listener returns RECONSUME_LATER or throws (application logs).",
    )]


def dlq_backlog(ctx: CheckContext) -> list[Finding]:
    total = ctx.view.dlq_messages
    if total <= 0:
        return []
    return [_finding(
        ctx, "DLQ_BACKLOG", "warning",
        f"{_n(total, 'message')} {'sits' if total == 1 else 'sit'} in %DLQ%{ctx.view.group}",
        "These messages failed consumption 16 times and were moved to the dead-letter queue; "
        "nobody consumes it by default, so they are lost to the application unless replayed.",
        {"messages": total, "queues": [{**_q(o.queue), "messages": o.max_offset - o.min_offset}
                                       for o in ctx.view.dlq]},
        "Inspect and replay the DLQ messages (e.g. resend them to the original topic) after "
        "fixing the consumer.",
    )]


def lag_not_advancing(ctx: CheckContext) -> list[Finding]:
    if ctx.previous is None:
        return []
    before = _progress(ctx.previous)
    rows = []
    for p in ctx.view.progress:
        old = before.get(p.queue)
        if old is None or p.diff <= 0:
            continue
        if p.broker_offset > old.broker_offset and p.consumer_offset <= old.consumer_offset:
            rows.append({**_q(p.queue), "broker_offset": [old.broker_offset, p.broker_offset],
                         "consumer_offset": [old.consumer_offset, p.consumer_offset],
                         "diff": p.diff, "owner": p.owner})
    if not rows:
        return []
    seconds = max(0, ctx.view.sampled_at - ctx.previous.sampled_at) / 1000
    return [_finding(
        ctx, "LAG_NOT_ADVANCING", "error",
        f"{_n(len(rows), 'queue')} of {ctx.view.group} received messages but consumed none",
        f"Between two samples {seconds:.0f} s apart, new messages arrived on {_n(len(rows), 'queue')} "
        f"while their consumer offset did not move.",
        {"interval_seconds": seconds, "queues": rows},
        "Check the owner column: no owner means the queue is orphaned; an owner means its "
        "listener is stuck or failing (see BLOCKED_QUEUE).",
    )]


def _backlog_text(known: int, unknown_queues: int) -> str:
    """A backlog in words; queues whose offsets could not be read are said to be unknown, never 0."""
    if not unknown_queues:
        return f"{_n(known, 'message')} now"
    unknown = f"unknown for {_n(unknown_queues, 'queue')}"
    return f"{_n(known, 'message')} now, {unknown}" if known else unknown


def queue_held_twice(ctx: CheckContext) -> list[Finding]:
    """Queues two clients of a CLUSTERING group report holding at the same time."""
    view = ctx.view
    if not ctx.clustering or not view.running_infos:
        return []
    twice = view.held_twice()
    if not twice:
        return []
    progress = _progress(view)
    pairs = "; ".join(f"{mq.topic}@{mq.broker_name}/{mq.queue_id} by {_and(cids)}" for mq, cids in twice.items())
    n = len(twice)
    return [_finding(
        ctx, "QUEUE_HELD_TWICE", "error",
        f"{_n(n, 'queue')} of {view.group} {_are(n)} held by two clients at once",
        f"In a CLUSTERING group each queue belongs to one client, yet {pairs}. Both pull the same "
        f"messages, so each message is consumed twice, and their offset commits overwrite each other. "
        f"Clients that disagree on the client list or the queue route (or a rebalance in progress) "
        f"cause this.",
        {"queues": [{**_q(mq), "clients": cids, "diff": progress[mq].diff if mq in progress else None}
                    for mq, cids in twice.items()]},
        "Check that every client sees the same name servers and brokers and uses the same allocation "
        "strategy; if it lasts beyond 20 s (one rebalance period), restart the clients named.",
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
            "queues": [_q(mq) for mq in owners.get(cid, []) if mq.topic in failing],
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
    return [_finding(
        ctx, "CONSUME_FAILURES", "warning",
        f"Clients of {view.group} fail to consume messages",
        detail,
        {"clients": clients, "retry_topic": retry,
         "retry_messages_written": sum(now_retry.values()), "retry_growth": grown if ctx.previous else None},
        "Find why the listener returns RECONSUME_LATER or throws (application logs of the clients "
        "named); messages keep coming back until it succeeds or they reach the DLQ.",
    )]


def rebalance_in_progress(ctx: CheckContext) -> list[Finding]:
    state = ctx.view.rebalance_in_progress()
    if state is None:
        return []
    shared, unheld = state["shared"], state["unheld"]
    owners = ctx.view.owners()
    return [_finding(
        ctx, "REBALANCE_IN_PROGRESS", "info",
        f"Rebalance in progress in {ctx.view.group}",
        f"{len(shared)} queue(s) are held by two clients and {len(unheld)} by none, in topics every "
        f"client subscribes: the clients are still moving to the allocation of the new membership. "
        + ("The doctor sampled again and the holdings had still not settled, so allocation findings "
           "are reported as they stand." if ctx.resampled else
           "Allocation findings (idle, orphaned, uneven) are held back until a later sample."),
        {"shared_queues": [{**_q(mq), "holders": owners.get(mq, [])} for mq in shared],
         "unheld_queues": [_q(mq) for mq in unheld], "resampled": ctx.resampled},
        "Wait one rebalance period (20 s; at once when the broker notifies) and check again.",
    )]


#: findings about who holds what: held back while a rebalance is visibly in progress
ALLOCATION_CODES = frozenset({"IDLE_CONSUMERS", "ORPHANED_QUEUES", "UNEVEN_ALLOCATION", "QUEUE_HELD_TWICE"})


CHECKS: Sequence[tuple[str, Check]] = (
    ("SUBSCRIPTION_TAG_CONFLICT", subscription_tag_conflict),
    ("SUBSCRIPTION_TOPIC_CONFLICT", subscription_topic_conflict),
    ("BROKER_SUBSCRIPTION_DIVERGENCE", broker_subscription_divergence),
    ("IDLE_CONSUMERS", idle_consumers),
    ("ORPHANED_QUEUES", orphaned_queues),
    ("DUPLICATE_CLIENT_ID", duplicate_client_id),
    ("UNEVEN_ALLOCATION", uneven_allocation),
    ("MIXED_CONSUMER_SETTINGS", mixed_consumer_settings),
    ("BLOCKED_QUEUE", blocked_queue),
    ("OFFLINE_GROUP_BACKLOG", offline_group_backlog),
    ("RETRY_BACKLOG", retry_backlog),
    ("DLQ_BACKLOG", dlq_backlog),
    ("LAG_NOT_ADVANCING", lag_not_advancing),
    ("QUEUE_HELD_TWICE", queue_held_twice),
    ("CONSUME_FAILURES", consume_failures),
    ("REBALANCE_IN_PROGRESS", rebalance_in_progress),
)

CODES = tuple(code for code, _ in CHECKS)

#: GroupView fields a check cannot do without; when the source lists one as unavailable
#: (``GroupView.unavailable``) the check is skipped and the skip is reported, never silently passed
NEEDS: Mapping[str, tuple[str, ...]] = {
    "BROKER_SUBSCRIPTION_DIVERGENCE": ("broker_subscriptions",),
    "DUPLICATE_CLIENT_ID": ("duplicate_clients",),
    "SUBSCRIPTION_TAG_CONFLICT": ("running_infos",),
    "SUBSCRIPTION_TOPIC_CONFLICT": ("running_infos",),
    "IDLE_CONSUMERS": ("running_infos",),
    "ORPHANED_QUEUES": ("running_infos",),
    "UNEVEN_ALLOCATION": ("running_infos",),
    "MIXED_CONSUMER_SETTINGS": ("running_infos",),
    "BLOCKED_QUEUE": ("running_infos",),
    "QUEUE_HELD_TWICE": ("running_infos",),
}


def skipped_checks(view: GroupView) -> dict[str, str]:
    """Check code → why it cannot run on this view (data the source could not supply)."""
    out = {}
    for code, fields in NEEDS.items():
        missing = [f for f in fields if f in view.unavailable]
        if missing:
            out[code] = "; ".join(f"needs {f}: {view.unavailable[f]}" for f in missing)
    return out


def run_checks(view: GroupView, previous: GroupView | None = None, *,
               now_ms: int | None = None, only: Iterable[str] | None = None,
               resampled: bool = False) -> list[Finding]:
    """Every finding for one group, most severe first.

    While holdings overlap or leave gaps after a membership change (a rebalance in progress),
    allocation findings are held back and REBALANCE_IN_PROGRESS says why; with ``resampled``
    (the caller already sampled again once) they are reported as they stand.
    """
    ctx = CheckContext(view, previous, now_ms if now_ms is not None else view.sampled_at, resampled)
    wanted = set(only) if only else None
    skipped = skipped_checks(view)
    moving = view.rebalance_in_progress() is not None
    findings: list[Finding] = []
    for code, check in CHECKS:
        if code in skipped or (moving and not resampled and code in ALLOCATION_CODES):
            continue
        if wanted is None or code in wanted:
            findings.extend(check(ctx))
    return sorted(findings, key=lambda f: -SEVERITY_RANK[f.severity])
