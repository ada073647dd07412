"""``group reset``: plan a reset of a group's offsets, apply it, verify it, audit it.

Planning reads, per queue of the group (narrowed to topics and queues), the committed offset,
the stored range and the target: ``earliest`` (the min offset), ``latest`` (the max offset: skip
the backlog), ``time`` (SEARCH_OFFSET_BY_TIMESTAMP), ``offset`` N (0 included: the broker accepts
any offset in ``[min, max]``) or ``shift`` ±N (clamped to the range). Each broker's
``useServerSideResetOffset`` (GET_BROKER_CONFIG; on by default from 5.2.0, absent before) picks how
a queue is written (see :mod:`rmqctl.actions.plan`):

- ``server``: INVOKE_BROKER_TO_RESET_OFFSET (222) with the queue and offset. The broker writes
  its offset table and keeps the reset aside: the owner's commits are ignored until its next pull
  of the queue, which answers OFFSET_MOVED to the target.
- ``client``: without server-side reset, for time targets over whole topics while clients are
  online: 222 by time; the broker sends each client RESET_CONSUMER_CLIENT_OFFSET (220) and the
  clients persist the targets.
- ``offset-table``: UPDATE_CONSUMER_OFFSET (15), for a group with no online client, or an exact
  offset without server-side reset. A live owner overwrites it with its next commit.

Applying re-reads the offsets of a plan from a file and refuses when they moved; writes the undo
plan; sends the writes; reads every queue back at once and again after the clients' commit
interval (5 s; 10 s for a reset through the clients, which pause that long before they store it);
and reports per queue applied, overwritten (by which client) or refused (the broker's code). A
reset through the clients is judged applied when the broker took it and the queue is at or past
its target: the read-back cannot tell a replay consumed to the end from a queue that never moved.
The audit log gets one record. Must not import the CLI, textual or pyspark.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from rmqctl import errors
from rmqctl.actions import audit
from rmqctl.actions.permission import Writer, no_permission_error
from rmqctl.actions.plan import (
    APPLIED,
    CLIENT,
    NOT_APPLIED,
    OFFSET_TABLE,
    OVERWRITTEN,
    REFUSED,
    SERVER,
    ClientEffect,
    QueueOutcome,
    QueueReset,
    ResetOutcome,
    ResetPlan,
    ResetTarget,
    plan_document,
    queue_name,
)
from rmqctl.backends.remoting import RemotingBackend
from rmqctl.model import GroupView, MessageQueue
from rmqctl.remoting.codes import RequestCode
from rmqctl.remoting.writes import OffsetWrites
from rmqctl.service import ClusterService
from rmqctl.source import ClusterSource

#: ``persistConsumerOffsetInterval``: a push consumer commits every queue it holds this often (ms)
CLIENT_COMMIT_INTERVAL_S = 5.0
#: ``MQClientInstance.resetOffset``: a client told to reset (220) drops its queues, sleeps 10 s,
#: then stores and persists the new offsets
CLIENT_RESET_PAUSE_S = 10.0
#: waited on top of one commit interval before the final read-back
VERIFY_MARGIN_S = 1.5
RETRY_PREFIX = "%RETRY%"
#: the broker config key, and its default when a 5.x broker does not list it
SERVER_SIDE_KEY = "useServerSideResetOffset"


def _service(source: ClusterSource) -> ClusterService:
    if isinstance(source, ClusterService) and isinstance(source.backend, RemotingBackend):
        return source
    raise errors.UsageError("offsets are reset over RocketMQ's native protocol; this source cannot write",
                            hint="name the name servers with -n or a context instead of --dashboard")


def writes_of(source: ClusterSource) -> OffsetWrites:
    """The offset writer behind ``source``: writes go over the native protocol only."""
    service = _service(source)
    assert isinstance(service.backend, RemotingBackend)
    return OffsetWrites(service.backend.admin)


@dataclass(frozen=True, slots=True)
class QueueSelector:
    """``--queue broker/id`` (a queue of every topic of the group on that broker)."""

    broker: str
    queue_id: int

    @classmethod
    def parse(cls, text: str) -> QueueSelector:
        broker, sep, qid = text.rpartition("/")
        if not sep or not broker or not qid.isdigit():
            raise errors.UsageError(f"--queue takes BROKER/QUEUE_ID (broker-a/0), not {text!r}")
        return cls(broker, int(qid))

    def matches(self, mq: MessageQueue) -> bool:
        return mq.broker_name == self.broker and mq.queue_id == self.queue_id


def _server_side(config: dict[str, str]) -> bool:
    """``useServerSideResetOffset`` from a broker's config; a broker that does not list it (4.x)
    has no server-side reset."""
    value = config.get(SERVER_SIDE_KEY)
    return value is not None and value.strip().lower() == "true"


def _effect(method: str, queues: Sequence[QueueReset]) -> str:
    count = len(queues)
    noun = "queue" if count == 1 else "queues"
    if method == SERVER:
        return (f"its next pull of each of its {count} {noun} answers OFFSET_MOVED; it drops what it "
                "cached and goes on from the target (its commits are ignored until then)")
    if method == CLIENT:
        return (f"the broker sends it RESET_CONSUMER_CLIENT_OFFSET (220) for its {count} {noun}; it "
                "suspends, drops what it cached, persists the targets and resumes")
    return (f"keeps its own position of its {count} {noun} and overwrites the reset with its next "
            f"commit (within {CLIENT_COMMIT_INTERVAL_S:g} s): stop it first, or use a broker with "
            "server-side reset")


async def plan_reset(
    source: ClusterSource,
    group: str,
    target: ResetTarget,
    *,
    cluster: str,
    topics: Sequence[str] = (),
    queues: Sequence[QueueSelector] = (),
) -> ResetPlan:
    """Plan resetting ``group`` (its queues of ``topics``, narrowed to ``queues``) to ``target``."""
    writes = writes_of(source)
    view = await source.group_view(group)
    # the group's retry topic only when named: resetting it replays or drops messages in retry
    rows = [p for p in view.progress
            if (p.queue.topic in topics if topics else not p.queue.topic.startswith(RETRY_PREFIX))
            and (not queues or any(s.matches(p.queue) for s in queues))]
    for topic in topics:
        if not any(p.queue.topic == topic for p in view.progress):
            raise errors.NotFound(f"group {group!r} has no queue of topic {topic!r}",
                                  hint=f"its topics: {', '.join(sorted({p.queue.topic for p in view.progress}))}")
    if not rows:
        raise errors.NotFound(f"no queue of group {group!r} matches --topic/--queue"
                              if topics or queues else f"group {group!r} has no queue to reset")
    masters = await _service(source).masters()
    brokers = sorted({p.queue.broker_name for p in rows})
    missing = [b for b in brokers if b not in masters]
    if missing:
        raise errors.ConnectionError(f"no master address for broker(s) {', '.join(missing)}")
    configs = dict(zip(brokers, await asyncio.gather(*(writes.broker_config(masters[b]) for b in brokers)),
                       strict=True))
    server_side = {b: _server_side(configs[b]) for b in brokers}
    online = bool(view.connections)

    async def read(mq: MessageQueue) -> tuple[int | None, int, int]:
        addr = masters[mq.broker_name]
        current, low, high = await asyncio.gather(
            writes.committed_offset(addr, group, mq.topic, mq.queue_id),
            writes.min_offset(addr, mq.topic, mq.queue_id),
            writes.max_offset(addr, mq.topic, mq.queue_id))
        return current, low, high

    mqs = [p.queue for p in rows]
    reads = await asyncio.gather(*(read(mq) for mq in mqs))
    owners = {p.queue: p.owner for p in rows}
    # by-time through the clients only over whole topics of a broker (the broker resets them all)
    whole = not queues
    planned = []
    for mq, (current, low, high) in zip(mqs, reads, strict=True):
        goal = await _target_offset(writes, masters[mq.broker_name], mq, target, current, low, high)
        if server_side[mq.broker_name]:
            method = SERVER
        elif online and whole and target.kind in ("earliest", "latest", "time"):
            method = CLIENT
        else:
            method = OFFSET_TABLE
        planned.append(QueueReset(mq, masters[mq.broker_name], current, goal, low, high, method, owners.get(mq)))
    return ResetPlan(group, cluster, target, int(source.clock.now() * 1000), tuple(planned), server_side,
                     _client_effects(view, planned))


async def _target_offset(writes: OffsetWrites, addr: str, mq: MessageQueue, target: ResetTarget,
                         current: int | None, low: int, high: int) -> int:
    name = queue_name(mq)
    if target.kind == "earliest":
        return low
    if target.kind == "latest":
        return high
    if target.kind == "time":
        assert target.value is not None
        return await writes.search_offset(addr, mq.topic, mq.queue_id, target.value)
    if target.kind == "offset":
        assert target.value is not None
        if not low <= target.value <= high:
            raise errors.UsageError(f"offset {target.value} is outside {name}'s stored range [{low}, {high}]",
                                    hint="narrow with --topic/--queue, or use --to-earliest/--to-latest")
        return target.value
    if target.kind == "shift":
        assert target.value is not None
        if current is None:
            raise errors.UsageError(f"{name}: the group never committed an offset here, so there is "
                                    "nothing to shift from", hint="use --to-offset, --to-earliest or --to-time")
        return min(high, max(low, current + target.value))
    raise errors.UsageError(f"cannot plan a reset to {target.kind!r}")


def _client_effects(view: GroupView, planned: Sequence[QueueReset]) -> tuple[ClientEffect, ...]:
    effects = []
    for conn in view.connections:
        held = [q for q in planned if q.owner == conn.client_id]
        if not held:
            effects.append(ClientEffect(conn.client_id, (), "holds none of these queues: unaffected"))
            continue
        methods = sorted({q.method for q in held})
        text = "; ".join(_effect(m, [q for q in held if q.method == m]) for m in methods)
        effects.append(ClientEffect(conn.client_id, tuple(q.queue for q in held), text))
    return tuple(effects)


def undo_plan(plan: ResetPlan, after: dict[MessageQueue, int | None]) -> ResetPlan:
    """The plan that puts each queue back where ``plan`` found it, from where it is ``after``
    (queues that were never committed cannot go back to "never" and are left out)."""
    queues = tuple(
        # an exact offset per queue: by-time through the clients cannot say it
        replace(q, current=after.get(q.queue), target=q.current,
                method=q.method if q.method != CLIENT else OFFSET_TABLE)
        for q in plan.queues if q.current is not None and min(q.min_offset, q.current) >= 0
    )
    return replace(plan, target=ResetTarget("undo"), queues=queues, clients=())


async def _read_offsets(writes: OffsetWrites, plan: ResetPlan) -> dict[MessageQueue, int | None]:
    values = await asyncio.gather(*(writes.committed_offset(q.broker_addr, plan.group, q.queue.topic, q.queue.queue_id)
                                    for q in plan.queues))
    return {q.queue: v for q, v in zip(plan.queues, values, strict=True)}


async def _readdress(source: ClusterSource, plan: ResetPlan) -> ResetPlan:
    """``plan`` with each queue's broker address as the name server gives it now (a plan file
    names brokers; their addresses may have moved)."""
    masters = await _service(source).masters()
    missing = sorted({q.queue.broker_name for q in plan.queues} - set(masters))
    if missing:
        raise errors.WriteRefused(f"the plan names broker(s) the cluster no longer lists: {', '.join(missing)}: "
                                  "nothing was written")
    return replace(plan, queues=tuple(replace(q, broker_addr=masters[q.queue.broker_name]) for q in plan.queues))


async def check_fresh(source: ClusterSource, plan: ResetPlan) -> None:
    """Refuse (exit 8) when a queue's committed offset moved since the plan was made."""
    now = await _read_offsets(writes_of(source), plan)
    moved = [f"{queue_name(q.queue)} was {_show(q.current)}, is {_show(now[q.queue])}"
             for q in plan.queues if now[q.queue] != q.current]
    if moved:
        more = f" (and {len(moved) - 5} more)" if len(moved) > 5 else ""
        raise errors.WriteRefused(
            f"the plan is stale, nothing was written: {'; '.join(moved[:5])}{more}",
            hint="make a new plan (the replay and skip counts changed), or stop the clients first")


def _show(value: int | None) -> str:
    return "never committed" if value is None else str(value)


async def apply_reset(
    source: ClusterSource,
    plan: ResetPlan,
    writer: Writer,
    *,
    from_file: bool = False,
    wait_s: float | None = None,
) -> ResetOutcome:
    """Apply ``plan``: refuse a stale plan from a file, write the undo plan, send the writes,
    verify after the clients' commit interval (``wait_s``), append the audit record."""
    writes = writes_of(source)
    if from_file:
        plan = await _readdress(source, plan)
        await check_fresh(source, plan)
    when = audit.now_ms()
    write_id = audit.new_id(when, plan.group)
    undo_path = audit.write_undo(write_id, plan_document(undo_plan(plan, {q.queue: q.target for q in plan.queues})))
    record: dict[str, object] = {
        "id": write_id, "when_ts": when, "action": "group reset",
        "who": {"os_user": writer.os_user, "access_key": writer.access_key},
        "context": writer.context, "cluster": plan.cluster, "group": plan.group,
        "plan": plan_document(plan), "undo_file": str(undo_path),
    }
    try:
        refused = await _send(writes, plan, writer)
        written = await _read_offsets(writes, plan)
        online = bool(plan.clients) and any(c.queues for c in plan.clients)
        pause = CLIENT_RESET_PAUSE_S if any(q.method == CLIENT for q in plan.queues) else CLIENT_COMMIT_INTERVAL_S
        waited = (pause + VERIFY_MARGIN_S) if wait_s is None else wait_s
        if not online:
            waited = 0.0
        if waited > 0:
            await source.clock.sleep(waited)
        after = await _read_offsets(writes, plan)
        outcomes = tuple(_judge(q, refused.get(q.queue), written[q.queue], after[q.queue]) for q in plan.queues)
    except errors.RmqctlError as exc:
        record["outcome"] = {"error": exc.message}
        audit.append(record)
        raise
    # the undo plan starts from where the queues are now, so it is fresh right after this run
    undo_doc = plan_document(undo_plan(plan, after))
    undo_path.write_text(json.dumps(undo_doc, indent=2) + "\n", encoding="utf-8")
    outcome = ResetOutcome(plan, outcomes, waited, str(undo_path), str(audit.audit_path()))
    record["outcome"] = {
        "all_applied": outcome.all_applied,
        "queues": [{"queue": queue_name(o.queue), "status": o.status, "target": o.target,
                    "offset_after": o.offset_after, "client": o.client, "code": o.code} for o in outcomes],
    }
    audit.append(record)
    return outcome


async def _send(writes: OffsetWrites, plan: ResetPlan, writer: Writer) -> dict[MessageQueue, errors.RemoteError]:
    """Send every write of ``plan``; the brokers' refusals per queue (other errors raise)."""
    refused: dict[MessageQueue, errors.RemoteError] = {}

    def note(queues: Iterable[QueueReset], code: int, exc: errors.RemoteError) -> None:
        for q in queues:
            if isinstance(exc, errors.NoPermission):
                exc = no_permission_error(exc, code, group=plan.group, topic=q.queue.topic,
                                          access_key=writer.access_key)
            refused[q.queue] = exc

    async def one(q: QueueReset) -> None:
        if q.method == CLIENT:
            return
        code = RequestCode.INVOKE_BROKER_TO_RESET_OFFSET if q.method == SERVER else RequestCode.UPDATE_CONSUMER_OFFSET
        try:
            if q.method == SERVER:
                await writes.reset_queue(q.broker_addr, plan.group, q.queue.topic, q.queue.queue_id, q.target)
            else:
                await writes.update_offset(q.broker_addr, plan.group, q.queue.topic, q.queue.queue_id, q.target)
        except errors.RemoteError as exc:
            note([q], code, exc)

    await asyncio.gather(*(one(q) for q in plan.queues))
    by_topic: dict[tuple[str, str], list[QueueReset]] = {}
    for q in plan.queues:
        if q.method == CLIENT:
            by_topic.setdefault((q.broker_addr, q.queue.topic), []).append(q)
    stamp = {"earliest": 0, "latest": -1}.get(plan.target.kind, plan.target.value)
    for (addr, topic), queues in sorted(by_topic.items()):
        try:
            await writes.reset_by_time(addr, plan.group, topic, -1 if stamp is None else stamp)
        except errors.RemoteError as exc:
            note(queues, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, exc)
    return refused


def _judge(q: QueueReset, refusal: errors.RemoteError | None, written: int | None,
           after: int | None) -> QueueOutcome:
    """One queue's outcome from the broker's answer and the two read-backs."""
    if refusal is not None:
        return QueueOutcome(q.queue, q.target, REFUSED, written, after, code=refusal.code, remark=refusal.message)
    if after == q.target:
        return QueueOutcome(q.queue, q.target, APPLIED, written, after)
    overwritten = False
    if q.owner is not None and q.method == OFFSET_TABLE and after is not None and q.current is not None:
        # the owner's commit puts back its own position: at or past where it was for a rewind,
        # behind the target for a skip
        overwritten = after >= q.current if q.target < q.current else after < q.target
    if overwritten:
        return QueueOutcome(q.queue, q.target, OVERWRITTEN, written, after, client=q.owner)
    if after is not None and written == q.target and after > q.target and q.method != OFFSET_TABLE:
        # written as planned, then consumed on from the target by the group
        return QueueOutcome(q.queue, q.target, APPLIED, written, after)
    if after is not None and q.method == CLIENT and after >= q.target:
        return QueueOutcome(q.queue, q.target, APPLIED, written, after)
    if after is not None and q.method == OFFSET_TABLE and written == q.target and after > q.target \
            and (q.current is None or q.target >= q.current or after < q.current):
        return QueueOutcome(q.queue, q.target, APPLIED, written, after)
    return QueueOutcome(q.queue, q.target, NOT_APPLIED, written, after, client=q.owner)
