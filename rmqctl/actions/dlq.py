"""``dlq replay``: send a group's dead letters back to it, as a plan first.

A dead letter stays in ``%DLQ%GROUP`` for good; replaying sends a copy of each (body, tags, keys,
user properties, the original topic in ``RETRY_TOPIC``) with SEND_MESSAGE (10) to the group's own
retry topic ``%RETRY%GROUP``, which every client of the group subscribes: only this group consumes
it again, under its original topic, and other groups of that topic see nothing. The plan names the
dead letters by queue and offset (oldest first, at most ``limit``); applying reads each copy
back from the retry topic at the offset the broker stored it at and checks it carries its dead
letter (body, unique key, first topic), and appends the audit log. The dead letters
themselves are not removed: a second replay of the same range sends them again, so the audit
record keeps the range.

Must not import the CLI, textual or pyspark.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from rmqctl import errors
from rmqctl.actions import audit
from rmqctl.actions.permission import Writer
from rmqctl.actions.reset import _service, writes_of
from rmqctl.model import Message, MessageQueue, MessageRef
from rmqctl.source import ClusterSource

DLQ_PREFIX, RETRY_PREFIX = "%DLQ%", "%RETRY%"
#: what identifies the replaying tool to the broker (``producerGroup``)
PRODUCER_GROUP = "rmqctl-dlq-replay"
#: system properties a copy must not carry over (the broker sets them again, or they steer
#: delivery elsewhere: delay levels, the real topic of a scheduled message, transactions)
_DROPPED = frozenset({"DELAY", "REAL_TOPIC", "REAL_QID", "TRAN_MSG", "PGROUP", "MIN_OFFSET", "MAX_OFFSET",
                      "CLUSTER", "MSG_REGION", "TRACE_ON", "CONSUME_START_TIME", "WAIT", "TIMER_OUT_MS",
                      "ORIGIN_MESSAGE_ID"})
DEFAULT_LIMIT = 100


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """One dead letter to replay."""

    queue: MessageQueue
    offset: int
    msg_id: str
    #: the topic it was first sent to (``RETRY_TOPIC``), None when the broker did not say
    origin_topic: str | None
    tag: str | None
    reconsume_times: int
    message: Message


@dataclass(frozen=True, slots=True)
class ReplayPlan:
    group: str
    cluster: str
    target_topic: str
    letters: tuple[DeadLetter, ...]
    #: dead letters left out by the limit
    left_out: int


@dataclass(frozen=True, slots=True)
class ReplayOutcome:
    plan: ReplayPlan
    #: per dead letter (dlq queue name and offset): the copy's id and retry-topic offset, or the refusal
    sent: tuple[dict[str, Any], ...]
    stored: int
    audit_file: str

    @property
    def all_sent(self) -> bool:
        return self.stored == len(self.plan.letters) and all(s.get("status") == "sent" for s in self.sent)


async def plan_replay(source: ClusterSource, group: str, *, cluster: str, limit: int = DEFAULT_LIMIT) -> ReplayPlan:
    """The dead letters of ``group``, oldest first per queue, at most ``limit``."""
    topic = DLQ_PREFIX + group
    if topic not in await source.topics():  # no dead letter yet: the broker creates it with the first
        return ReplayPlan(group, cluster, RETRY_PREFIX + group, (), 0)
    stats = await source.topic_status(topic)
    if stats.errors:
        raise errors.RmqctlError(f"cannot read every queue of {topic}: " +
                                 "; ".join(f"{k}: {v}" for k, v in stats.errors.items()))
    positions = [(o.queue, n) for o in stats.value.offsets for n in range(o.min_offset, o.max_offset)]
    chosen = positions[:limit]

    async def read(queue: MessageQueue, offset: int) -> DeadLetter:
        found = await source.find_messages(MessageRef(topic=queue.topic, broker=queue.broker_name,
                                                      queue_id=queue.queue_id, offset=offset))
        (message,) = found.value[:1]
        props = dict(message.properties)
        return DeadLetter(queue, offset, message.msg_id, props.get("RETRY_TOPIC"), props.get("TAGS"),
                          message.reconsume_times, message)

    letters = tuple(await asyncio.gather(*(read(q, n) for q, n in chosen)))
    return ReplayPlan(group, cluster, RETRY_PREFIX + group, letters, len(positions) - len(chosen))


async def apply_replay(source: ClusterSource, plan: ReplayPlan, writer: Writer) -> ReplayOutcome:
    """Send each dead letter of ``plan`` to the group's retry topic, check it was stored, audit."""
    writes = writes_of(source)
    masters = await _service(source).masters()
    # each copy goes to the retry topic on the broker that holds the dead letter (the group's
    # retry topic lives where the group consumed)
    brokers = sorted(masters)
    record: dict[str, Any] = {
        "id": audit.new_id(audit.now_ms(), plan.group), "when_ts": audit.now_ms(), "action": "dlq replay",
        "who": {"os_user": writer.os_user, "access_key": writer.access_key}, "context": writer.context,
        "cluster": plan.cluster, "group": plan.group, "plan": replay_document(plan),
    }
    sent: list[dict[str, Any]] = []
    try:
        for letter in plan.letters:
            broker = letter.queue.broker_name if letter.queue.broker_name in brokers else brokers[0]
            props = {k: v for k, v in letter.message.properties.items() if k not in _DROPPED}
            props.setdefault("RETRY_TOPIC", letter.origin_topic or plan.target_topic)
            entry: dict[str, Any] = {"queue": f"{letter.queue.broker_name}/{letter.queue.queue_id}",
                                     "offset": letter.offset, "msg_id": letter.msg_id}
            try:
                copy_id, copy_offset = await writes.send_message(
                    masters[broker], plan.target_topic, 0, letter.message.body, props,
                    producer_group=PRODUCER_GROUP, born_ms=letter.message.born_timestamp)
                entry.update(status="sent", copy_id=copy_id, retry_offset=copy_offset, broker=broker)
            except errors.RemoteError as exc:
                entry.update(status="refused", code=exc.code, remark=exc.message)
            sent.append(entry)
        stored = 0
        for letter, entry in zip(plan.letters, sent, strict=True):
            if entry.get("status") != "sent":
                continue
            entry["read_back"] = await _read_back(source, plan.target_topic, entry, letter)
            stored += entry["read_back"] == "same"
    except errors.RmqctlError as exc:
        record["outcome"] = {"error": exc.message, "sent": sent}
        audit.append(record)
        raise
    outcome = ReplayOutcome(plan, tuple(sent), stored, str(audit.audit_path()))
    record["outcome"] = {"all_sent": outcome.all_sent, "stored": stored, "sent": sent}
    audit.append(record)
    return outcome


def is_copy_of(letter: DeadLetter, copy: Message) -> bool:
    """Whether ``copy`` (read back from the retry topic) carries ``letter``: its body, its unique
    key and its first topic."""
    props, origin = dict(copy.properties), dict(letter.message.properties)
    first = letter.origin_topic or props.get("RETRY_TOPIC")
    return (copy.body == letter.message.body and props.get("UNIQ_KEY") == origin.get("UNIQ_KEY")
            and props.get("RETRY_TOPIC") == first)


async def _read_back(source: ClusterSource, topic: str, entry: dict[str, Any], letter: DeadLetter) -> str:
    """Read the copy at the offset the broker stored it at: ``same`` (it is the dead letter's
    copy), ``different`` (another message is there) or ``missing`` (nothing could be read)."""
    ref = MessageRef(topic=topic, broker=entry["broker"], queue_id=0, offset=entry["retry_offset"])
    try:
        found = await source.find_messages(ref)
    except errors.RmqctlError:
        return "missing"
    return "same" if any(is_copy_of(letter, m) for m in found.value) else "different"


def replay_document(plan: ReplayPlan) -> dict[str, Any]:
    return {
        "group": plan.group, "cluster": plan.cluster, "target_topic": plan.target_topic, "left_out": plan.left_out,
        "dead_letters": [{"topic": d.queue.topic, "broker": d.queue.broker_name, "queue_id": d.queue.queue_id,
                          "offset": d.offset, "msg_id": d.msg_id, "origin_topic": d.origin_topic, "tag": d.tag,
                          "reconsume_times": d.reconsume_times} for d in plan.letters],
    }


def replay_outcome_document(outcome: ReplayOutcome) -> dict[str, Any]:
    return {"plan": replay_document(outcome.plan), "all_sent": outcome.all_sent, "stored": outcome.stored,
            "sent": list(outcome.sent), "audit_file": outcome.audit_file}
