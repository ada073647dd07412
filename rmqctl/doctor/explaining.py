"""Explaining messages through a source: find the message, read each group's view and the
message's retry and dead-letter copies, and hand them to the pure verdict
(:func:`~rmqctl.doctor.explain.explain_message`).

:func:`explain` is what ``rmqctl msg explain`` calls. Where the queue's owner came from is the
caller's choice: ``ownership`` (recorded snapshots) when given and it knows the queue, the live
assignment otherwise; each explanation says which. Must not import the CLI, the TUI or pyspark.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import field

from rmqctl import errors
from rmqctl.doctor.explain import explain_message
from rmqctl.model import Explanation, Message, MessageRef, QueueOwnership, TraceEvent
from rmqctl.records import dataclass
from rmqctl.source import ClusterSource

#: who held a queue for a group when a message was stored (None: not known there)
OwnershipLookup = Callable[[str, Message], "QueueOwnership | None"]


@dataclass(frozen=True, slots=True)
class MessageFate:
    """One message and its verdict for each group explained."""

    message: Message
    explanations: tuple[Explanation, ...]


@dataclass(frozen=True, slots=True)
class ExplainResult:
    fates: tuple[MessageFate, ...]
    #: groups explained, in order
    groups: tuple[str, ...]
    errors: dict[str, errors.RmqctlError] = field(default_factory=dict)


async def _original(source: ClusterSource, message: Message) -> Message:
    """The message itself when ``message`` is a retry or dead-letter copy (found by its unique
    key on the topic the copy names), else ``message``."""
    if not (message.is_retry_copy or message.is_dead_letter) or message.unique_key is None:
        return message
    try:
        found = await source.find_messages(MessageRef(msg_id=message.unique_key, topic=message.origin_topic))
    except errors.NotFound:
        return message
    return next((m for m in found.value if m.queue.topic == message.origin_topic), message)


async def explain(source: ClusterSource, ref: MessageRef, groups: Sequence[str] = (), *,
                  ownership: OwnershipLookup | None = None) -> ExplainResult:
    """Each message ``ref`` names, explained for ``groups`` (default: every group that consumes
    its topic). A group that cannot be read gets ``unknown`` with the reason."""
    found = await source.find_messages(ref)
    failures: dict[str, errors.RmqctlError] = dict(found.errors)
    messages: list[Message] = []
    for message in found.value:
        original = await _original(source, message)
        if original not in messages:
            messages.append(original)
    fates = []
    explained: list[str] = list(dict.fromkeys(groups))
    for message in messages:
        names = list(explained)
        if not names:
            listed = await source.topic_groups(message.queue.topic)
            failures.update({f"groups:{k}": v for k, v in listed.errors.items()})
            names = listed.value
            explained.extend(g for g in names if g not in explained)
        traces = await source.message_traces(message)
        failures.update(traces.errors)
        results = []
        for group in names:
            results.append(await _explain_one(source, message, group, ownership, failures, traces.value))
        fates.append(MessageFate(message, tuple(results)))
    return ExplainResult(tuple(fates), tuple(explained), failures)


async def _explain_one(source: ClusterSource, message: Message, group: str, ownership: OwnershipLookup | None,
                       failures: dict[str, errors.RmqctlError], traces: Sequence[TraceEvent]) -> Explanation:
    try:
        view = await source.group_view(group)
    except errors.NotFound as exc:
        return Explanation(group, "unknown", str(exc), {}, None, (f"any broker's knowledge of {group}",))
    except errors.RmqctlError as exc:
        failures[f"group:{group}"] = exc
        return Explanation(group, "unknown", f"{group} could not be read: {exc}", {}, None, (f"{group}'s view",))
    failures.update({f"{group}:{k}": v for k, v in view.errors.items()})
    copies = await source.message_copies(group, message)
    failures.update({f"{group}:{k}": v for k, v in copies.errors.items()})
    owned = ownership(group, message) if ownership is not None else None
    explanation = explain_message(message, view, copies=copies.value, ownership=owned, traces=traces)
    if copies.unavailable:
        explanation = dataclasses.replace(explanation, missing=(*explanation.missing, *copies.unavailable.values()))
    if ownership is not None and owned is None and explanation.ownership_from == "live":
        explanation = Explanation(
            explanation.group, explanation.verdict, explanation.summary, explanation.evidence,
            explanation.ownership_from,
            (*explanation.missing, "a snapshot of the queue at or before the store time (the live owner is used)"))
    return explanation
