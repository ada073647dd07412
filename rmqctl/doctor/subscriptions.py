"""Subscription checks: clients of one group that subscribe differently, and what the broker keeps.

The impact computations follow the broker and client rules: the broker stores ONE subscription
per (group, topic) and filters pulls by it (push consumers do not send their own); the client then
drops messages whose tag is not in its own subscription, and commits past both; every client of
the group takes part in every topic's allocation, so queues of a topic can land on clients that
never subscribed it and are then never pulled.

Must not do I/O, and must not import the CLI, the TUI or pyspark.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from typing import Any

from rmqctl.doctor.context import (
    CheckContext,
    and_list,
    are,
    backlog_text,
    client_sub,
    expected_allocation,
    expression_of,
    finding,
    n_of,
    progress_by_queue,
    queue_dict,
    queues_by_topic,
    queues_text,
)
from rmqctl.model import (
    RETRY_PREFIX,
    SUB_ALL,
    ExpressionHistory,
    Finding,
    GroupView,
    MessageQueue,
    Observation,
    QueueProgress,
    Reign,
    SampledMessage,
    Subscription,
    TagSample,
    dated,
    java_string_hash,
    sort_queues,
    unpullable_reason,
)
from rmqctl.records import dataclass

#: the label under which, without a message sample, every tag no client names is counted
OTHER_TAGS = "(any other tag)"


def _label(tag: str | None) -> str:
    return tag if tag is not None else ""


def _passes_broker(sub: Subscription, tag: str | None) -> bool | None:
    """The broker's pull filter by tag alone (tag hash codes; an untagged message has code 0);
    None for a SQL92 filter, which reads properties a tag does not tell."""
    if sub.is_sql92:
        return None
    if tag == OTHER_TAGS:
        return sub.is_all
    return sub.accepts_code(java_string_hash(tag) if tag else 0)


def _passes_client(sub: Subscription, tag: str | None) -> bool:
    """The client's own check after the pull (exact tag strings)."""
    if tag == OTHER_TAGS:
        return sub.is_all or sub.expression_type != "TAG"
    return sub.accepts(tag)


def _stored(view: GroupView, topic: str) -> tuple[Subscription | None, dict[str, str]]:
    """The broker-stored subscription of ``topic`` (first broker that has one) and per broker."""
    per_broker = {b: t[topic].expression for b, t in sorted(view.broker_subscriptions.items())
                  if topic in t}
    for _, table in sorted(view.broker_subscriptions.items()):
        if topic in table:
            return table[topic], per_broker
    return None, per_broker


def _holder_of_stored(view: GroupView, stored: Subscription) -> list[str]:
    """Clients whose own subscription is exactly what the broker keeps (same text and version)."""
    same = [(cid, s) for cid, subs in view.client_subscriptions.items()
            for s in subs if s.topic == stored.topic and s.expression == stored.expression]
    exact = [cid for cid, s in same if s.sub_version == stored.sub_version]
    # A client's version moves on with each allocation change after the broker stored a greater
    # one, so when no version matches, the clients with the very same expression are the source.
    return exact or [cid for cid, _ in same]


def holders_of_stored(view: GroupView, stored: Subscription) -> list[str]:
    """The clients whose own subscription is the one a broker stores (see :func:`_holder_of_stored`)."""
    return _holder_of_stored(view, stored)


def tag_conflict_topics(view: GroupView) -> list[str]:
    """Topics whose clients subscribe with different filters (what message sampling is for)."""
    out = []
    topics = sorted({s.topic for subs in view.client_subscriptions.values() for s in subs})
    for topic in topics:
        present = [s for cid in view.client_subscriptions if (s := client_sub(view, cid, topic)) is not None]
        if len(present) >= 2 and not all(present[0].same_filter(s) for s in present):
            out.append(topic)
    return out


# --- SUBSCRIPTION_TAG_CONFLICT ------------------------------------------------------------------


def _bump(counts: dict[str, int], tag: str | None) -> None:
    counts[_label(tag)] = counts.get(_label(tag), 0) + 1


@dataclass
class _Tally:
    """Sampled messages of one topic by what happened to them, over all its queues."""

    received: dict[str, dict[str, int]]
    dropped: dict[str, dict[str, int]]
    filtered: dict[str, int] = field(default_factory=dict)
    pending: dict[str, int] = field(default_factory=dict)
    #: delivered to a client whose own SQL92 expression excludes them (it keeps them anyway)
    outside_filter: dict[str, dict[str, int]] = field(default_factory=dict)
    #: consumed, but the broker's filter cannot be judged (no properties, or a refused expression)
    unknown: dict[str, int] = field(default_factory=dict)
    #: stored before the broker's current expression (or the queue's current owner) was in place:
    #: another expression or client may have judged them, so they count as neither lost nor delivered
    earlier: dict[str, int] = field(default_factory=dict)
    #: judged by an expression and owner that only earlier samples show (consumed before they changed)
    reconstructed: dict[str, int] = field(default_factory=dict)

    def lost(self) -> dict[str, int]:
        """Per tag, sampled messages that were consumed without reaching any listener."""
        out = dict(self.filtered)
        for per_client in self.dropped.values():
            for tag, n in per_client.items():
                out[tag] = out.get(tag, 0) + n
        return dict(sorted(out.items()))

    def as_dict(self) -> dict[str, Any]:
        return {
            "received_by_client": {c: dict(sorted(v.items())) for c, v in sorted(self.received.items())},
            "dropped_by_client": {c: dict(sorted(v.items())) for c, v in sorted(self.dropped.items())},
            "filtered_by_broker": dict(sorted(self.filtered.items())),
            "pending": dict(sorted(self.pending.items())),
        }


@dataclass(frozen=True)
class _QueueFate:
    """Which tags of the universe one queue's broker filter and owner let through."""

    filtered_by_broker: list[str | None]
    dropped_by_client: list[str | None]
    delivered: list[str | None]


def _fate(filt: Subscription | None, own: Subscription | None, universe: list[str | None]) -> _QueueFate:
    """Without a broker filter (or an owner) nothing is known to be lost, and nothing delivered;
    nor is anything by tag alone under a SQL92 filter (it reads the message's properties)."""
    if filt is None:
        return _QueueFate([], [], [])
    lost_broker = [t for t in universe if _passes_broker(filt, t) is False]
    if own is None:
        return _QueueFate(lost_broker, [], [])
    lost_client = [t for t in universe if _passes_broker(filt, t) and not _passes_client(own, t)]
    delivered = [t for t in universe if _passes_broker(filt, t) and t not in lost_client]
    return _QueueFate(lost_broker, lost_client, delivered)


def _message_fate(filt: Subscription | None, own: Subscription | None, owner: str | None,
                  m: SampledMessage) -> str:
    """What happened to one consumed message: the broker's filter judged on its properties
    (SQL92) or tag, then the owner's own tag check."""
    if filt is None:
        return "pending"
    passed = filt.broker_passes(m.tag, m.properties)
    if passed is None:
        return "unknown"
    if not passed:
        return "filtered_by_broker"
    if owner is None or own is None:
        return "pending"
    return "delivered" if _passes_client(own, m.tag) else "dropped_by_client"


def _dated(view: GroupView, filt: Subscription | None, own: Subscription | None) -> int:
    """When the broker's expression and the queue's owner were both in place (0: unknown)."""
    return dated(view.sampled_at, filt, own)


def _count_sample(sample: TagSample, done_below: int, owner: str | None, filt: Subscription | None,
                  own: Subscription | None, tally: _Tally, history: ExpressionHistory,
                  current: Observation) -> dict[str, dict[str, int]]:
    """Per tag, how many sampled messages of one queue were delivered, dropped, filtered or are
    still pending (at or past the consumer offset); adds them to the topic's ``tally``. A consumed
    message is judged by the broker's expression and the owner that were in place when it was
    consumed, as ``history`` (earlier samples) and ``current`` (this one) tell; when they do not
    (stored before the current expression and owner were in place, and consumed before any
    sample saw them) it counts as ``before_current_expression``: another expression or client
    may have judged it, so it is neither lost nor delivered."""
    counts: dict[str, dict[str, int]] = {}
    for m in sample.messages:
        tag = m.tag
        who, whose = owner, own
        if m.offset >= done_below:
            kind = "pending"
        else:
            judged, earlier = history.judge(sample.queue, m.offset, m.store_timestamp, current)
            if judged is None:
                kind = "before_current_expression"
            else:
                reign = judged.reign
                kind = _message_fate(reign.filt, reign.own, reign.owner, m)
                if earlier:
                    _bump(tally.reconstructed, tag)
                    if reign.owner is not None:  # an owner that may have left since
                        tally.received.setdefault(reign.owner, {})
                        tally.dropped.setdefault(reign.owner, {})
                who, whose = reign.owner, reign.own
        if kind == "before_current_expression":
            _bump(tally.earlier, tag)
        elif kind == "pending":
            _bump(tally.pending, tag)
        elif kind == "unknown":
            _bump(tally.unknown, tag)
        elif kind == "filtered_by_broker":
            _bump(tally.filtered, tag)
        elif kind == "dropped_by_client" and who is not None:
            _bump(tally.dropped[who], tag)
        elif kind == "delivered" and who is not None and whose is not None:
            _bump(tally.received[who], tag)
            if whose.wants(tag, m.properties) is False:
                _bump(tally.outside_filter.setdefault(who, {}), tag)
        slot = counts.setdefault(_label(tag), {})
        slot[kind] = slot.get(kind, 0) + 1
    return dict(sorted(counts.items()))


def _lost_sentence(lost_everywhere: list[str | None], named: list[str]) -> str:
    """``Messages tagged a or b and messages with any other tag are never consumed …``."""
    tagged = [_label(t) or "(no tag)" for t in lost_everywhere if t != OTHER_TAGS]
    parts = [f"messages tagged {' or '.join(tagged)}"] if tagged else []
    if OTHER_TAGS in lost_everywhere:
        if tagged:
            parts.append("messages with any other tag")
        elif named:
            parts.append(f"messages with any tag other than {' or '.join(named)}")
        else:
            return " No message is consumed by anyone in this group."
    lost = " and ".join(parts)
    return f" {lost[0].upper()}{lost[1:]} are never consumed by anyone in this group."


def _filter_kinds(subs: list[Subscription]) -> str:
    """What differs between the filters, in the title's words: ``tags`` when every filter is a
    tag expression, ``SQL92 expressions`` when every one is SQL92, ``filter expressions (SQL92 and
    tags)`` when both kinds meet."""
    sql = [s.is_sql92 for s in subs]
    if not any(sql):
        return "tags"
    return "SQL92 expressions" if all(sql) else "filter expressions (SQL92 and tags)"


def _filter_text(sub: Subscription) -> str:
    """A client's filter as the detail names it: a SQL92 expression says so (its text alone
    could read as a tag)."""
    return f"SQL92 {sub.expression!r}" if sub.is_sql92 else sub.expression


def _counts_text(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{tag or '(no tag)'} {n}" for tag, n in sorted(counts.items()))


def _sampled_sentences(tally: _Tally) -> str:
    """What the sample shows, in numbers: lost per tag, kept outside a client's own filter, and
    what could not be judged."""
    out = ""
    lost = tally.lost()
    if lost:
        out += (f" Of the sampled messages already consumed, {sum(lost.values())} reached no "
                f"listener of this group ({_counts_text(lost)}).")
    for client, counts in sorted(tally.outside_filter.items()):
        if counts:
            out += (f" {client} received {sum(counts.values())} message(s) its own SQL92 expression "
                    f"excludes ({_counts_text(counts)}).")
    if tally.earlier:
        out += (f" {sum(tally.earlier.values())} consumed message(s) were stored before the broker's "
                f"current expression and the queue's current owner were in place (their subVersion), "
                f"so another expression or client may have judged them: they are counted as unknown, "
                f"neither lost nor delivered ({_counts_text(tally.earlier)}).")
    if tally.unknown:
        out += (f" {sum(tally.unknown.values())} consumed message(s) cannot be judged: the broker's "
                f"SQL92 filter needs properties that could not be read, or is an expression the "
                f"broker refuses ({_counts_text(tally.unknown)}).")
    return out


def sample_window(samples: Mapping[MessageQueue, TagSample]) -> str:
    """``the last 32 message(s) of each queue (TopicA@broker-a queue 0: offsets 10..41, queue 1:
    none)``: queues named as in every finding, grouped by topic and broker."""
    per_queue = max(s.to_offset - s.from_offset for s in samples.values())
    by_place: dict[tuple[str, str], list[str]] = {}
    for mq, s in sorted(samples.items()):
        span = f"offsets {s.from_offset}..{s.to_offset - 1}" if s.to_offset > s.from_offset else "none"
        by_place.setdefault((mq.topic, mq.broker_name), []).append(f"queue {mq.queue_id}: {span}")
    ranges = "; ".join(f"{topic}@{broker} " + ", ".join(parts) for (topic, broker), parts in by_place.items())
    return f"the last {per_queue} message(s) of each queue ({ranges})"


def _sample_basis(samples: Mapping[MessageQueue, TagSample]) -> str:
    if not samples:
        return (f"No message sample was taken, so tags no client names are counted together "
                f"as {OTHER_TAGS!r}.")
    total = sum(len(s.messages) for s in samples.values())
    return (f"Counts cover only a sample of {total} message(s), {sample_window(samples)}, read back "
            f"without committing; older messages are not counted (doctor --sample N or all reads "
            f"more).")


def _tag_conflict(ctx: CheckContext, topic: str, owners: Mapping[MessageQueue, list[str]],
                  progress: Mapping[MessageQueue, QueueProgress]) -> Finding:
    view = ctx.view
    subs = {cid: client_sub(view, cid, topic) for cid in view.client_subscriptions}
    present = {cid: s for cid, s in subs.items() if s is not None}
    stored, per_broker = _stored(view, topic)
    stored_by_broker = {b: t[topic] for b, t in view.broker_subscriptions.items() if topic in t}
    named = sorted({t for s in present.values() for t in s.tags} | (set(stored.tags) if stored else set()))
    samples = {mq: s for mq, s in view.tag_samples.items() if mq.topic == topic}
    universe: list[str | None]
    if samples:
        seen = {m.tag for s in samples.values() for m in s.messages}
        universe = sorted(set(named) | seen, key=lambda t: (t is None, t or ""))
    else:
        universe = [*named, OTHER_TAGS]

    history = ctx.history or ExpressionHistory.of([ctx.previous] if ctx.previous is not None else [])
    queue_rows = []
    delivered_anywhere: set[str | None] = set()
    tally = _Tally({cid: {} for cid in present}, {cid: {} for cid in present})
    for mq in queues_by_topic(view, topic):
        holders = owners.get(mq, [])
        owner = holders[0] if holders else None
        own = subs.get(owner) if owner else None
        fate = _fate(stored_by_broker.get(mq.broker_name, stored), own, universe)
        delivered_anywhere.update(fate.delivered)
        row: dict[str, Any] = {
            **queue_dict(mq), "owner": owner, "owner_expression": expression_of(own) if owner else None,
            "filtered_by_broker": [_label(t) for t in fate.filtered_by_broker],
            "dropped_by_client": [_label(t) for t in fate.dropped_by_client],
            "delivered_tags": [_label(t) for t in fate.delivered],
        }
        sample = samples.get(mq)
        if sample is not None:
            p = progress.get(mq)
            done_below = p.consumer_offset if p is not None and p.known else sample.from_offset
            filt = stored_by_broker.get(mq.broker_name, stored)
            # subVersion is the client's clock (ms) when it last subscribed or re-balanced: the
            # broker's copy dates its expression, the owner's its current holdings; a version
            # later than the sample itself is no time to compare with (a skewed clock, a pinned
            # version) and dates nothing
            since = _dated(view, filt, own)
            row["expression_since_ms"] = since or None
            current = Observation(view.sampled_at, done_below, Reign(filt, owner, own))
            row["sample"] = {"from_offset": sample.from_offset, "to_offset": sample.to_offset,
                             "counts": _count_sample(sample, done_below, owner, filt, own, tally, history, current)}
        queue_rows.append(row)

    # a tag a SQL92 filter may pass (its properties decide) is not known to be lost
    filters = [*stored_by_broker.values(), *([stored] if stored else [])]
    undecided = {t for t in universe if any(_passes_broker(f, t) is None for f in filters)}
    lost_everywhere = [t for t in universe if t not in delivered_anywhere and t not in undecided]
    winners = _holder_of_stored(view, stored) if stored else []
    losers = sorted(cid for cid, s in present.items() if stored is None or not s.same_filter(stored))
    starved = sorted(
        cid for cid in losers
        if not any(stored is not None and _passes_broker(stored, t) is not False
                   and _passes_client(present[cid], t) for t in universe)
    )
    held = f" and currently holds {expression_of(stored)!r}" if stored else ""
    if stored and winners:
        held += f" (from {', '.join(winners)})"
    kinds = _filter_kinds([*present.values(), *([stored] if stored else [])])
    detail = (
        f"Clients of group {view.group} subscribe topic {topic} with different "
        f"{'expressions' if kinds == 'tags' else kinds} "
        f"({'; '.join(f'{c}: {_filter_text(s)}' for c, s in sorted(present.items()))}). The broker "
        f"keeps one subscription per topic for the whole group{held}. It filters every pull by "
        f"that expression, and each client then drops what its own expression does not match; "
        f"both are committed as consumed, so the lag shows 0 while messages vanish."
    )
    if starved:
        detail += f" {', '.join(starved)} can receive nothing at all."
    if lost_everywhere:
        detail += _lost_sentence(lost_everywhere, named)
    if samples:
        detail += _sampled_sentences(tally)
    sql_clients = sorted(c for c, s in present.items() if s.is_sql92)
    if sql_clients and not samples:
        detail += (" Without a message sample nothing can be said about the SQL92 expressions "
                   f"({and_list(sql_clients)}): they read message properties, not tags.")
    elif sql_clients:
        detail += (f" A SQL92 client ({and_list(sql_clients)}) keeps whatever the broker sends it: "
                   f"the client library filters by tag only.")
    detail += " " + _sample_basis(samples)
    wants_all = any(s.is_all for s in present.values())
    union = sorted({t for s in present.values() for t in s.tags})
    suggestion = SUB_ALL if wants_all or not union else " || ".join(union)
    fix = (f"Give every client of {view.group} the same subscription for {topic} ({suggestion!r}, "
           f"which narrows no client's), or put clients that need different tags into separate "
           f"consumer groups; then restart them so the broker stores one expression.")
    if sql_clients:
        fix = (f"Put clients that filter {topic} differently into separate consumer groups (one per "
               f"expression): "
               + ("two SQL92 expressions" if len(sql_clients) == len(present) else
                  "a SQL92 expression and a tag expression")
               + " cannot share a group's single stored subscription; then restart them so the broker "
               "stores one expression each.")
    evidence: dict[str, Any] = {
        "topic": topic,
        "client_expressions": {c: expression_of(s) for c, s in sorted(present.items())},
        "broker_expression": per_broker,
        "broker_holds_from": winners,
        "losing_clients": losers,
        "starved_clients": starved,
        "tags_never_consumed": [_label(t) for t in lost_everywhere],
        "sql92_clients": sql_clients,
        "sampled": bool(samples),
        "tag_basis": "sample" if samples else "named tags plus every other tag",
        "queues": queue_rows,
    }
    if samples:
        evidence["counts"] = tally.as_dict()
        evidence["sample_window"] = {"per_queue": max(s.to_offset - s.from_offset for s in samples.values()),
                                     "messages": sum(len(s.messages) for s in samples.values())}
        evidence["lost_in_sample"] = tally.lost()
        evidence["delivered_outside_own_filter"] = {c: dict(sorted(v.items()))
                                                    for c, v in sorted(tally.outside_filter.items()) if v}
        evidence["unjudged_in_sample"] = dict(sorted(tally.unknown.items()))
        evidence["consumed_before_current_expression"] = dict(sorted(tally.earlier.items()))
        evidence["judged_by_previous_sample"] = dict(sorted(tally.reconstructed.items()))
    return finding(
        ctx, "SUBSCRIPTION_TAG_CONFLICT", "error",
        f"Clients of {view.group} subscribe {topic} with different {kinds}",
        detail, evidence, fix,
    )


def subscription_tag_conflict(ctx: CheckContext) -> list[Finding]:
    topics = tag_conflict_topics(ctx.view)
    if not topics:
        return []
    owners = ctx.view.owners()
    progress = progress_by_queue(ctx.view)
    return [_tag_conflict(ctx, topic, owners, progress) for topic in topics]


# --- SUBSCRIPTION_TOPIC_CONFLICT ----------------------------------------------------------------


def unpullable_held(ctx: CheckContext) -> dict[MessageQueue, str]:
    """Held queues that cannot be pulled: their topic is missing from the broker's table now, or
    (two samples) the same client held them both times, messages waited and the consumer offset
    did not move while the client cached nothing."""
    view = ctx.view
    out = {mq: unpullable_reason(mq.topic, mq.broker_name) for mq in view.unpullable()}
    if ctx.previous is None:
        return out
    before = progress_by_queue(ctx.previous)
    before_owners = ctx.previous.holders()
    owners = view.holders()
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


def subscription_topic_conflict(ctx: CheckContext) -> list[Finding]:
    view = ctx.view
    if not ctx.clustering:
        return []
    topic_sets = {cid: frozenset(s.topic for s in subs)
                  for cid, subs in view.client_subscriptions.items()}
    if len(set(topic_sets.values())) < 2:
        return []
    progress = progress_by_queue(view)
    all_topics = sorted(set().union(*topic_sets.values()))
    per_topic: list[dict[str, Any]] = []
    stuck_held = unpullable_held(ctx)
    for topic in all_topics:
        non_subscribers = sorted(c for c, ts in topic_sets.items() if topic not in ts)
        if not non_subscribers:
            continue
        expected = expected_allocation(view, topic) or {}
        orphaned = sort_queues(mq for cid in non_subscribers for mq in expected.get(cid, []))
        per_topic.append({
            "topic": topic,
            "subscribed_by": sorted(c for c, ts in topic_sets.items() if topic in ts),
            "not_subscribed_by": non_subscribers,
            "never_pulled_queues": [
                {**queue_dict(mq), "allocated_to": next((c for c in non_subscribers
                                                        if mq in expected.get(c, [])), None),
                 "diff": progress[mq].lag if mq in progress else None}
                for mq in orphaned
            ],
            "unpullable_queues": [{**queue_dict(mq), "owner": next(iter(view.owners().get(mq, [])), None),
                                   "diff": progress[mq].lag if mq in progress else None, "reason": why}
                                  for mq, why in stuck_held.items() if mq.topic == topic],
        })
    stuck = sum(len(t["never_pulled_queues"]) for t in per_topic)
    allocated = {MessageQueue(q["topic"], q["broker"], q["queue_id"]): q["allocated_to"]
                 for t in per_topic for q in t["never_pulled_queues"] if q["allocated_to"] is not None}
    never = sort_queues(allocated)
    to_whom = sorted(set(allocated.values()))
    lag = sum(q["diff"] or 0 for t in per_topic for q in t["never_pulled_queues"])
    unknown = sum(1 for t in per_topic for q in t["never_pulled_queues"] if q["diff"] is None)
    lag_text = backlog_text(lag, unknown)
    held_text = ""
    if stuck_held:
        held_text = (f" {n_of(len(stuck_held), 'queue')} {are(len(stuck_held))} held but cannot be pulled now "
                     f"({queues_text(list(stuck_held))}): "
                     f"their topic is missing from the broker's table, so every pull fails while "
                     f"messages wait.")
    detail = (
        f"Clients of group {view.group} subscribe different topics "
        f"({'; '.join(f'{c}: {and_list(sorted(ts))}' for c, ts in sorted(topic_sets.items()))}). The broker "
        f"keeps the topic set of whichever client heartbeated last, so the others' pulls fail with "
        f"'the consumer's subscription not exist' and progress comes in bursts. Every client also "
        f"takes part in every topic's allocation, so {n_of(stuck, 'queue')} {are(stuck)} allocated to clients "
        f"that never subscribed them"
        + (f" ({'; '.join(f'{queues_text([q for q in never if allocated[q] == c])} to {c}' for c in to_whom)})"
           if never else "")
        + f": nobody pulls them and their lag ({lag_text}) only grows."
        + held_text
    )
    return [finding(
        ctx, "SUBSCRIPTION_TOPIC_CONFLICT", "error",
        f"Clients of {view.group} subscribe different topics",
        detail, {"client_topics": {c: sorted(ts) for c, ts in sorted(topic_sets.items())},
                 "topics": per_topic},
        "Use one consumer group per distinct topic set: every client of a group must subscribe "
        "exactly the same topics (and expressions).",
    )]


# --- BROKER_SUBSCRIPTION_DIVERGENCE -------------------------------------------------------------


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
            if (own := client_sub(view, cid, topic)) is not None
            and any(not own.same_filter(s) for s in stored.values())
        )
        if not brokers_differ and not clients_differ:
            continue
        out.append(finding(
            ctx, "BROKER_SUBSCRIPTION_DIVERGENCE", "warning",
            f"The broker-stored subscription of {topic} does not match every client",
            f"For topic {topic} the brokers store "
            f"{'; '.join(f'{b}: {s.expression!r} (v{s.sub_version})' for b, s in stored.items())}"
            + (f" and {and_list(missing)} {'stores' if len(missing) == 1 else 'store'} nothing" if missing else "")
            + (f", while {and_list(clients_differ)} {'subscribes' if len(clients_differ) == 1 else 'subscribe'}"
               " differently" if clients_differ else "")
            + ". Pulls are filtered by the broker's copy, not by what each client asked for.",
            {"topic": topic,
             "broker_expressions": {b: {"expression": s.expression, "sub_version": s.sub_version}
                                    for b, s in stored.items()},
             "brokers_without_topic": missing,
             "clients_differing": {c: expression_of(client_sub(view, c, topic)) for c in clients_differ}},
            "Make every client of the group subscribe identically; the broker's copy converges "
            "within one heartbeat (30 s) once they agree.",
        ))
    return out
