"""What became of one message for one consumer group: one verdict, with the evidence.

The verdict follows the path a message takes to a push consumer, and the doctor's knowledge of
each step (:mod:`rmqctl.doctor.subscriptions`):

1. a consumer that failed it sent it back: copies in ``%RETRY%<group>`` (``retried``) and, once
   it gave up, in ``%DLQ%<group>`` (``dead_lettered``);
2. the queue's consumer offset is at or below the message: it has not been pulled yet
   (``waiting``, behind so many messages) — or never will be, because the client holding the
   queue does not subscribe the topic (``never_pulled``: every client of a group takes part in
   every topic's allocation);
3. the offset is past it: the broker filtered the pull with the ONE subscription it stores per
   (group, topic) — tag hash codes or SQL92 over the properties — and whatever did not match
   never left the broker (``filtered_by_broker``, naming the stored expression and the clients
   whose subscription it is); what passed reached the client holding the queue, which drops
   every message whose tag string is not in its own subscription (``dropped_by_client``) and
   hands the rest to its listener (``consumed``). Both filters commit past what they drop.

The owner is the one the caller names (from recorded snapshots, or the live assignment): the
explanation says which. Where a fact is missing the verdict is ``unknown`` and says what is
missing; it never reads as consumed for want of data.

Pure: no I/O; must not import the CLI, the TUI, pyspark or the service.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rmqctl import errors
from rmqctl.doctor.context import client_sub, expected_allocation, queue_dict
from rmqctl.doctor.subscriptions import holders_of_stored
from rmqctl.model import (
    Explanation,
    GroupView,
    Message,
    QueueOwnership,
    Subscription,
    TraceEvent,
    compile_sql92,
    format_millis,
    parse_tag_expression,
)


def live_ownership(view: GroupView, message: Message) -> QueueOwnership:
    """Who holds the message's queue now, by the clients' own running infos. A queue nobody
    holds goes to the client the group's strategy allocates it to when that client does not
    subscribe the topic: every client takes a share of every topic, and never pulls a topic it
    does not subscribe (what the snapshots record as the owner too)."""
    mq = message.queue
    owners = view.owners().get(mq, [])
    if owners:
        return QueueOwnership(owners[0], view.subscribes(owners[0], mq.topic), "live", view.sampled_at or None)
    if view.message_model != "BROADCASTING":
        allocation = expected_allocation(view, mq.topic) or {}
        for cid, assigned in allocation.items():
            if mq in assigned and view.subscribes(cid, mq.topic) is False:
                return QueueOwnership(cid, False, "live", view.sampled_at or None)
    return QueueOwnership(None, None, "live", view.sampled_at or None)


def broker_passes(sub: Subscription, message: Message) -> bool | None:
    """Would the broker's pull filter let ``message`` through ``sub``? (tag hash codes, or SQL92
    over its properties; None when the expression cannot be evaluated)."""
    return sub.broker_passes(message.tags, dict(message.properties))


def browse_filter(topic: str, *, tag: str | None = None, sql: str | None = None) -> Subscription | None:
    """The subscription ``--tag``/``--sql`` name, checked the way the broker checks an expression
    (a SQL92 expression it would refuse is a :class:`~rmqctl.model.Sql92Error`); None for none."""
    if tag is not None and sql is not None:
        raise errors.UsageError("filter by --tag or by --sql, not both")
    if sql is not None:
        compile_sql92(sql)
        return Subscription(topic, sql, expression_type="SQL92")
    if tag is not None:
        return parse_tag_expression(topic, tag)
    return None


def client_keeps(sub: Subscription, message: Message) -> bool:
    """The client's own check after a pull: the exact tag string (SQL92 is left to the broker)."""
    return sub.accepts(message.tags)


def explain_message(message: Message, view: GroupView, *, copies: Sequence[Message] = (),
                    ownership: QueueOwnership | None = None, traces: Sequence[TraceEvent] = ()) -> Explanation:
    """The verdict on ``message`` for ``view.group``.

    ``copies`` are the message's retry and dead-letter copies of this group (found by its unique
    key); ``ownership`` who held its queue (default: the live assignment of ``view``); ``traces``
    the consume records message tracing wrote for it (a listener that returned success is
    ``consumed`` even before its offset is committed).
    """
    group = view.group
    topic = message.queue.topic
    base: dict[str, Any] = {"queue": queue_dict(message.queue), "queue_offset": message.queue_offset,
                            "tags": message.tags}

    dead = [c for c in copies if c.is_dead_letter]
    retried = [c for c in copies if c.is_retry_copy]
    if dead or retried:
        return _sent_back(group, base, retried, dead, view)

    traced = _traced_success(view.group, traces)
    if traced is not None:
        before, after = traced
        row = next((p for p in view.progress if p.queue == message.queue), None)
        evidence = {**base, "consumed_by_host": after.client_host, "consumed_ts": before.timestamp if before else None,
                    "finished_ts": after.timestamp, "cost_ms": after.cost_ms,
                    "committed": (message.queue_offset < row.consumer_offset) if row is not None and row.known
                    else None, "from_trace": True}
        when = f" at {format_millis(before.timestamp)}" if before and before.timestamp else ""
        return Explanation(group, "consumed", (
            f"Consumed (message trace): a client of {group} on {after.client_host or 'an unknown host'} ran its "
            f"listener{when}, which returned success in {after.cost_ms} ms."
            + ("" if evidence["committed"] is not False else " Its offset is not committed yet.")), evidence)

    if (view.message_model or "").upper() == "BROADCASTING":
        return Explanation(group, "unknown", (
            f"{group} is a BROADCASTING group: each client keeps its own offsets, which no broker "
            "holds, so whether each client passed the message is not known here."), base, None,
            ("each client's local offsets (BROADCASTING)",))
    own = ownership or live_ownership(view, message)
    row = next((p for p in view.progress if p.queue == message.queue), None)
    consumer_offset = row.consumer_offset if row is not None and row.known else None
    evidence = {**base, "consumer_offset": consumer_offset, "broker_offset": row.broker_offset if row else None,
                "owner": own.owner, "owner_subscribes": own.subscribed}
    subscribed_by_group = (any(s.topic == topic for subs in view.client_subscriptions.values() for s in subs)
                           or any(topic in t for t in view.broker_subscriptions.values()))

    if consumer_offset is None or message.queue_offset >= consumer_offset:
        if own.owner is not None and own.subscribed is False:
            return Explanation(group, "never_pulled", (
                f"{_where(message)} is allocated to {own.owner}, which does not subscribe {topic}: the queue is never "
                f"pulled, so the message waits there for good (every client of {group} takes part in "
                f"{topic}'s allocation)."), evidence, own.source)
        if consumer_offset is None:
            if not subscribed_by_group:
                return Explanation(group, "unknown", f"{group} neither subscribes {topic} nor has an offset on "
                                   f"{_where(message)}.", evidence, own.source,
                                   (f"a subscription of {topic} by {group}",))
            missing = (f"{group}'s offset on {_where(message)}",)
            return Explanation(group, "unknown", f"{group} has no readable offset on {_where(message)}, so "
                               "whether it passed the message is not known.", evidence, own.source, missing)
        behind = message.queue_offset - consumer_offset
        evidence["behind"] = behind
        holder = (f"held by {own.owner}" if own.owner is not None
                  else "held by no client of the group")
        will = _would_be_lost(message, view, own.owner)
        if will is not None:
            evidence["when_pulled"] = will
        return Explanation(group, "waiting", (
            f"Not consumed yet: {_where(message)} is {holder}; {behind} message(s) of the queue come "
            f"before it (consumer offset {consumer_offset})."
            + (f" When pulled it will be {will.replace('_', ' ')}." if will else "")), evidence, own.source)

    # The group's offset is past the message: the broker's filter, then the owner's own.
    if own.undetermined is not None:
        return Explanation(group, "unknown", (
            f"{group} committed past the message, but which expression and client judged it is not known: "
            f"{own.undetermined}."), evidence, own.source, ("the expression the broker held when it was consumed",))
    # recorded snapshots say what the broker held then; the live view what it holds now
    stored = own.stored or view.broker_subscriptions.get(message.queue.broker_name, {}).get(topic)
    caveats: tuple[str, ...] = ()
    if stored is None:
        # The table lost the topic since (it flips with each heartbeat when clients subscribe
        # different topics); a pull only succeeds while the topic is in it, put there by a
        # subscribing client's heartbeat: when those clients all filter alike, that was it.
        subs = [s for subs in view.client_subscriptions.values() for s in subs if s.topic == topic]
        if not subs or not all(subs[0].same_filter(s) for s in subs):
            return Explanation(group, "unknown", (
                f"{group} committed past the message, but {message.queue.broker_name} keeps no subscription of "
                f"{topic} for it now, so how the pull was filtered is not known."), evidence, own.source,
                (f"{message.queue.broker_name}'s stored subscription of {topic}",))
        stored = subs[0]
        caveats = (f"{message.queue.broker_name} keeps no subscription of {topic} now; the filter is the one "
                   "every subscribing client sends",)
    evidence["stored_expression"] = stored.expression
    evidence["stored_expression_type"] = stored.expression_type
    passes = broker_passes(stored, message)
    if passes is False:
        holders = holders_of_stored(view, stored)
        evidence["stored_by"] = holders
        whose = f" (the subscription of {', '.join(holders)})" if holders else ""
        return Explanation(group, "filtered_by_broker", (
            f"The broker filtered it out: {message.queue.broker_name} stores {stored.expression!r} for {topic} in "
            f"{group}{whose}, which a message tagged {message.tags or '(no tag)'} does not match; the "
            f"group's offset moved past it without any client seeing it."), evidence, own.source, caveats)
    if passes is None:
        return Explanation(group, "unknown", f"The stored expression {stored.expression!r} "
                           f"({stored.expression_type}) cannot be evaluated here.", evidence, own.source,
                           ("an evaluation of the stored expression", *caveats))
    if own.owner is None:
        return Explanation(group, "unknown", (
            f"It passed the broker's filter and {group} committed past it, but which client held "
            f"{_where(message)} is not known."), evidence, own.source, ("the queue's owner", *caveats))
    own_sub = own.owner_subscription or client_sub(view, own.owner, topic)
    if own_sub is None:
        missing = (f"{own.owner}'s own subscription (its running info)",)
        return Explanation(group, "unknown", (
            f"It passed the broker's filter and {group} committed past it; whether {own.owner} kept it "
            "depends on its own subscription, which is not known."), evidence, own.source, (*missing, *caveats))
    evidence["owner_expression"] = own_sub.expression
    if not client_keeps(own_sub, message):
        return Explanation(group, "dropped_by_client", (
            f"Delivered to {own.owner}, which dropped it: its own subscription {own_sub.expression!r} does "
            f"not name {message.tags or '(no tag)'}, while the broker filters with {stored.expression!r}; "
            f"the offset moved past it."), evidence, own.source, caveats)
    return Explanation(group, "consumed", (
        f"Consumed: {own.owner} holds {_where(message)} and the group's offset ({consumer_offset}) is past "
        f"it; both filters let it through."), evidence, own.source, caveats)


def _traced_success(group: str, traces: Sequence[TraceEvent]) -> tuple[TraceEvent | None, TraceEvent] | None:
    """The first successful consumption by ``group`` in the traces (its SubBefore, SubAfter)."""
    befores = {e.request_id: e for e in traces if e.kind == "SubBefore"}
    for after in traces:
        if after.kind != "SubAfter" or not after.success:
            continue
        before = befores.get(after.request_id)
        if (after.group or (before.group if before else None)) == group:
            return before, after
    return None


def _where(message: Message) -> str:
    return f"{message.queue.broker_name}/{message.queue.queue_id}"


def _would_be_lost(message: Message, view: GroupView, owner: str | None) -> str | None:
    """What the filters will do to a waiting message when it is pulled (None: it will pass, or
    that is not known)."""
    stored = view.broker_subscriptions.get(message.queue.broker_name, {}).get(message.queue.topic)
    if stored is None:
        return None
    if broker_passes(stored, message) is False:
        return "filtered_by_broker"
    own = client_sub(view, owner, message.queue.topic) if owner is not None else None
    if own is not None and not client_keeps(own, message):
        return "dropped_by_client"
    return None


def _sent_back(group: str, base: dict[str, Any], retried: Sequence[Message], dead: Sequence[Message],
               view: GroupView) -> Explanation:
    """A consumer failed the message: its copies say how often and where it is now."""
    evidence = {**base, "retry_copies": len(retried), "dlq_copies": len(dead),
                "reconsume_times": max((c.reconsume_times for c in (*retried, *dead)), default=0)}
    if dead:
        last = dead[-1]
        evidence["dlq_queue"] = queue_dict(last.queue)
        evidence["dlq_queue_offset"] = last.queue_offset
        evidence["dead_lettered_ts"] = last.store_timestamp
        return Explanation(group, "dead_lettered", (
            f"Dead-lettered: {group}'s consumers failed it {evidence['reconsume_times'] + 1} time(s) "
            f"({len(retried)} cop{'y' if len(retried) == 1 else 'ies'} in %RETRY%{group}), then the "
            f"broker moved it to %DLQ%{group} (queue offset {last.queue_offset}), where no one consumes it."),
            evidence)
    last = retried[-1]
    row = next((p for p in view.progress if p.queue == last.queue), None)
    waiting = row is None or not row.known or last.queue_offset >= row.consumer_offset
    evidence["latest_copy_queue"] = queue_dict(last.queue)
    evidence["latest_copy_offset"] = last.queue_offset
    evidence["latest_copy_waiting"] = waiting if row is not None and row.known else None
    state = ("the latest copy waits to be consumed" if waiting
             else "the group's offset is past the latest copy")
    return Explanation(group, "retried", (
        f"Retried {len(retried)} time(s): {group}'s consumers failed it and sent it back to "
        f"%RETRY%{group}; {state}."), evidence)
