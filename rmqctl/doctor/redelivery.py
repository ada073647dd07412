"""REPEATED_REDELIVERY: messages of a POP group that come back again and again, found before
they reach the dead-letter queue.

Under POP, a message the consumer fails (a gRPC push consumer's FAILURE) or does not ACK within
its invisible time (a simple consumer that never ACKs it) is revived by the broker into the
group's POP retry topic of its topic (``%RETRY%<group>_<topic>`` or ``+<topic>``) as a new copy
whose reconsume times is one more than the last; it is delivered again from there, and once a copy
has been delivered ``retryMaxTimes + 1`` times (the group's config; 17 by default) the next one
goes to ``%DLQ%<group>`` instead. The newest copies in the retry topics (read back by offset,
read-only: :attr:`~rmqctl.model.GroupView.retry_samples`) therefore say how often each cycling
message has been delivered already and how many deliveries it has left.

Must not do I/O, and must not import the CLI, the TUI or pyspark.
"""

from __future__ import annotations

from typing import Any

from rmqctl.doctor.context import CheckContext, and_list, deliveries_text, finding, n_of
from rmqctl.model import DLQ_PREFIX, Finding, GroupView, RetryPolicy, SampledMessage

# how often a copy must have been delivered, and the broker's default maximum: rmqctl.stuck's, which
# the analyze stuck job's REDELIVERING verdict uses too
from rmqctl.stuck import DEFAULT_MAX_DELIVERIES, MIN_DELIVERIES
from rmqctl.watch import redelivery_topics

__all__ = ["DEFAULT_MAX_DELIVERIES", "EXAMPLES", "LIVE_SLACK_MS", "MIN_DELIVERIES", "cycling_copies", "message_key",
           "redelivery_topics", "repeated_redelivery"]

#: beyond the retry policy's wait before its next delivery, how long a copy stays a sign that its
#: message is still cycling: the broker revives a message some seconds after its invisible time
#: ends, and a simple consumer may ask for minutes of invisible time
LIVE_SLACK_MS = 5 * 60_000
#: copies named in the evidence at most
EXAMPLES = 5


def message_key(message: SampledMessage) -> str:
    """What stays the same across a message's copies: the id its producer gave it (``UNIQ_KEY``),
    else the id the broker keeps of the first copy (``ORIGIN_MESSAGE_ID``), else its position."""
    props = message.properties or {}
    return (props.get("UNIQ_KEY") or props.get("ORIGIN_MESSAGE_ID")
            or f"{message.queue.topic}@{message.queue.broker_name}:{message.queue.queue_id}#{message.offset}")


def cycling_copies(view: GroupView, policy: RetryPolicy) -> dict[str, SampledMessage]:
    """Message key → its newest sampled copy, for messages still cycling: the copy was stored
    recently enough that, had the message been ACKed or moved to the DLQ, no newer copy was due
    yet (its policy's wait plus :data:`LIVE_SLACK_MS`). A copy without a store time counts."""
    newest: dict[str, SampledMessage] = {}
    for sample in view.retry_samples.values():
        for message in sample.messages:
            key = message_key(message)
            held = newest.get(key)
            if held is None or message.reconsume_times > held.reconsume_times:
                newest[key] = message
    out = {}
    for key, message in newest.items():
        stored = message.store_timestamp
        window = policy.delay_ms(message.reconsume_times) + LIVE_SLACK_MS
        if stored is None or view.sampled_at - stored <= window:
            out[key] = message
    return out


def repeated_redelivery(ctx: CheckContext) -> list[Finding]:
    view = ctx.view
    if not view.pop or not view.retry_samples:
        return []
    policy = view.retry_policy or RetryPolicy()
    copies = cycling_copies(view, policy)
    most = view.max_deliveries
    limit = most if most is not None else DEFAULT_MAX_DELIVERIES
    # a copy revived after the last delivery is never delivered: popped, it goes to the DLQ (and
    # DLQ_BACKLOG counts it there)
    again = {k: m for k, m in copies.items() if MIN_DELIVERIES <= m.reconsume_times + 1 <= limit}
    if not again:
        return []
    highest = max(m.reconsume_times + 1 for m in again.values())
    left = max(0, limit - highest)
    topics = sorted({m.queue.topic for m in again.values()})
    sampled = sum(len(s.messages) for s in view.retry_samples.values())
    ordered = sorted(again.items(), key=lambda kv: (-kv[1].reconsume_times, kv[0]))
    examples: list[dict[str, Any]] = [
        {"key": key, "tag": m.tag, "deliveries": m.reconsume_times + 1, "topic": m.queue.topic,
         "broker": m.queue.broker_name, "queue_id": m.queue.queue_id, "offset": m.offset,
         "stored_ts": m.store_timestamp}
        for key, m in ordered[:EXAMPLES]]
    tags = sorted({m.tag for m in again.values() if m.tag})
    grown = _retry_growth(ctx, topics)
    dlq = DLQ_PREFIX + view.group
    detail = (
        f"{n_of(len(again), 'message')} of {view.group} {'keeps' if len(again) == 1 else 'keep'} coming back: "
        f"the newest copies in {and_list(topics)} ({sampled} {'copy' if sampled == 1 else 'copies'} read back) "
        f"show {'it' if len(again) == 1 else 'them'} delivered {MIN_DELIVERIES} to {highest} times"
        f"{' (tags ' + ', '.join(tags) + ')' if tags else ''}. Each copy is a delivery the consumer failed or "
        f"did not ACK within its invisible time: POP makes the message visible again, revives it into the "
        f"retry topic and delivers it once more, waiting per the retry policy ({policy.describe()}) when "
        f"the consumer fails it. After {deliveries_text(view)} it goes to {dlq}, which no client of the "
        f"group consumes: " + (f"the most delivered one has {left} {'delivery' if left == 1 else 'deliveries'} left."
                               if left else "the most delivered one goes there next."))
    if most is None:
        detail += " The group's config was not read: the broker's default maximum is assumed."
    if grown is not None and grown > 0:
        detail += f" {grown} copies were written to {and_list(topics)} between the two samples."
    return [finding(
        ctx, "REPEATED_REDELIVERY", "error" if left <= 1 else "warning",
        f"{n_of(len(again), 'message')} of {view.group} delivered up to {highest} of {limit} times, "
        f"on {'its' if len(again) == 1 else 'their'} way to {dlq}",
        detail,
        {"messages": len(again), "highest_delivery": highest, "max_deliveries": most,
         "deliveries_left": left, "retry_topics": topics, "sampled_copies": sampled,
         "retry_policy": policy.kind, "retry_growth": grown, "examples": examples},
        f"Find why the clients of {view.group} fail these messages or do not ACK them (their application "
        f"logs; the keys above, e.g. rmqctl msg show {examples[0]['key']}); a simple consumer must ACK "
        f"within the invisible time it asks for. To give them more deliveries before {dlq}, raise the "
        f"group's retryMaxTimes (mqadmin updateSubGroup -g {view.group} -r <n>); once in {dlq}, "
        f"rmqctl dlq replay {view.group} sends them back.",
    )]


def _retry_growth(ctx: CheckContext, topics: list[str]) -> int | None:
    """Copies written to ``topics`` between the previous sample and this one (None with one)."""
    if ctx.previous is None:
        return None
    before = {p.queue: p.broker_offset for p in ctx.previous.progress if p.queue.topic in topics and p.known}
    return sum(max(0, p.broker_offset - before[p.queue]) for p in ctx.view.progress
               if p.queue in before and p.known)
