"""Plans and outcomes of offset resets, and the plan file (``group reset -o json``) read back.

A :class:`ResetPlan` says, per queue, the committed offset seen when it was made, the target,
how many messages that skips or replays, and how it will be written (``server``: the broker
applies it itself; ``client``: the broker tells the online clients; ``offset-table``: the broker's
offset table only, which a live client overwrites with its next commit). A plan made with
``-o json`` is a file :func:`plan_from_document` reads back for ``--from-file``; the document is
written by :func:`plan_document`, beside it, and the two round-trip.

Imports only the model, errors and the duration grammar (documents in :mod:`rmqctl.report` are built from it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rmqctl import errors
from rmqctl.model import MessageQueue

#: the plan file's format; a file of another version is refused
PLAN_VERSION = 1
PLAN_KIND = "rmqctl-reset-plan"

#: the broker applies the reset itself (``useServerSideResetOffset``, 5.x): 222 with queue and offset
SERVER = "server"
#: the broker hands a by-time reset to every online client (220); they persist it
CLIENT = "client"
#: UPDATE_CONSUMER_OFFSET (15): the broker's table only; a live client overwrites it
OFFSET_TABLE = "offset-table"
METHODS = (SERVER, CLIENT, OFFSET_TABLE)

TARGET_KINDS = ("earliest", "latest", "time", "offset", "shift", "undo")


@dataclass(frozen=True, slots=True)
class ResetTarget:
    """What the user asked for: ``earliest``, ``latest``, ``time`` (``value`` epoch ms),
    ``offset`` (``value`` the offset), ``shift`` (``value`` ±N), or ``undo`` (each queue back to
    where a plan found it)."""

    kind: str
    value: int | None = None

    def describe(self) -> str:
        if self.kind == "time":
            return f"the first message stored at or after {self.value} (epoch ms)"
        if self.kind == "offset":
            return f"offset {self.value}"
        if self.kind == "shift":
            return f"shift by {self.value:+d}" if self.value is not None else "shift"
        if self.kind == "undo":
            return "where the reset found each queue"
        return self.kind


def time_target(text: str, now: float) -> int:
    """``--to-time``: an ISO 8601 time (UTC when it names no zone) or a duration ago (``2h``,
    ``30m``, ``90``) counted back from ``now`` (the source's clock, seconds); epoch ms."""
    from datetime import UTC, datetime

    from rmqctl.durations import duration_seconds

    try:
        seconds = duration_seconds(text)
    except ValueError:
        seconds = None
    if seconds is not None:
        if seconds < 0:
            raise errors.UsageError(f"--to-time {text}: a duration ago must not be negative")
        return int((now - seconds) * 1000)
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise errors.UsageError(f"--to-time takes an ISO time (2026-05-01T10:00:00Z) or a duration ago "
                                f"(2h, 30m), not {text!r}") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return int(when.timestamp() * 1000)


@dataclass(frozen=True, slots=True)
class QueueReset:
    """One queue of a plan."""

    queue: MessageQueue
    broker_addr: str
    #: the committed offset when the plan was made (None: the group never committed here)
    current: int | None
    target: int
    #: the queue's stored range when the plan was made
    min_offset: int
    max_offset: int
    #: SERVER, CLIENT or OFFSET_TABLE
    method: str
    #: the online client holding the queue when the plan was made
    owner: str | None = None

    @property
    def replay(self) -> int | None:
        """Messages consumed again (the target is behind the committed offset); None: unknown."""
        if self.current is None:
            return None
        return max(0, self.current - self.target)

    @property
    def skip(self) -> int | None:
        """Messages never consumed (the target is past the committed offset); None: unknown."""
        if self.current is None:
            return None
        return max(0, self.target - self.current)


@dataclass(frozen=True, slots=True)
class ClientEffect:
    """What one online client will do when the plan is applied."""

    client_id: str
    queues: tuple[MessageQueue, ...]
    effect: str


@dataclass(frozen=True, slots=True)
class ResetPlan:
    """A reset of one group's offsets, not yet applied."""

    group: str
    #: the cluster it was made against (``namesrv h:9876``, ``emulator …``)
    cluster: str
    target: ResetTarget
    #: the cluster's clock when it was made, epoch ms
    made_ts: int
    queues: tuple[QueueReset, ...]
    #: broker name → server-side reset on (True), off (False), unknown (None)
    server_side: Mapping[str, bool | None]
    clients: tuple[ClientEffect, ...] = ()

    @property
    def replay_total(self) -> int | None:
        values = [q.replay for q in self.queues]
        return None if any(v is None for v in values) else sum(v for v in values if v is not None)

    @property
    def skip_total(self) -> int | None:
        values = [q.skip for q in self.queues]
        return None if any(v is None for v in values) else sum(v for v in values if v is not None)


#: what a queue's read-back after applying says
APPLIED, OVERWRITTEN, REFUSED, NOT_APPLIED = "applied", "overwritten", "refused", "not-applied"


@dataclass(frozen=True, slots=True)
class QueueOutcome:
    """How one queue of a plan fared."""

    queue: MessageQueue
    target: int
    #: APPLIED, OVERWRITTEN (by ``client``), REFUSED (``code``, ``remark``) or NOT_APPLIED
    status: str
    #: the committed offset right after writing, and after the clients' next commit
    offset_written: int | None = None
    offset_after: int | None = None
    client: str | None = None
    code: int | None = None
    remark: str | None = None


@dataclass(frozen=True, slots=True)
class ResetOutcome:
    """An applied plan: each queue's outcome, and where its undo plan and audit record went."""

    plan: ResetPlan
    queues: tuple[QueueOutcome, ...]
    #: seconds waited for the clients' next commit before the final read-back
    waited_s: float
    undo_file: str | None = None
    audit_file: str | None = None

    @property
    def all_applied(self) -> bool:
        return all(q.status == APPLIED for q in self.queues)


# -- the plan file ------------------------------------------------------------------------------

def queue_name(mq: MessageQueue) -> str:
    """``topic@broker/queue``, how plans and outcomes name a queue to people."""
    return f"{mq.topic}@{mq.broker_name}/{mq.queue_id}"


def plan_document(plan: ResetPlan) -> dict[str, Any]:
    """The plan as ``-o json`` prints it and ``--from-file`` reads it."""
    return {
        "kind": PLAN_KIND,
        "version": PLAN_VERSION,
        "group": plan.group,
        "cluster": plan.cluster,
        "target": {"kind": plan.target.kind, "value": plan.target.value, "description": plan.target.describe()},
        "made_ts": plan.made_ts,
        "server_side_reset": dict(sorted(plan.server_side.items())),
        "replay_total": plan.replay_total,
        "skip_total": plan.skip_total,
        "queues": [
            {"topic": q.queue.topic, "broker": q.queue.broker_name, "queue_id": q.queue.queue_id,
             "broker_addr": q.broker_addr, "current": q.current, "target": q.target,
             "min_offset": q.min_offset, "max_offset": q.max_offset, "replay": q.replay, "skip": q.skip,
             "method": q.method, "owner": q.owner}
            for q in plan.queues
        ],
        "clients": [
            {"client_id": c.client_id, "queues": [queue_name(mq) for mq in c.queues], "effect": c.effect}
            for c in plan.clients
        ],
    }


def _field(data: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str,
           *, optional: bool = False) -> Any:
    value = data.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        raise errors.UsageError(f"plan file: {where}{key} is missing or of the wrong type")
    return value


def plan_from_document(data: Any) -> ResetPlan:
    """Read a plan file back (:func:`plan_document`'s shape); a malformed one is a UsageError."""
    if not isinstance(data, dict) or data.get("kind") != PLAN_KIND:
        raise errors.UsageError("not a reset plan (no \"kind\": \"rmqctl-reset-plan\")",
                                hint="make one with: rmqctl group reset GROUP --to-… -o json > plan.json")
    if data.get("version") != PLAN_VERSION:
        raise errors.UsageError(f"plan file version {data.get('version')!r} is not {PLAN_VERSION}")
    target = _field(data, "target", dict, "")
    kind = _field(target, "kind", str, "target.")
    if kind not in TARGET_KINDS:
        raise errors.UsageError(f"plan file: unknown target kind {kind!r}")
    queues = []
    for index, row in enumerate(_field(data, "queues", list, "")):
        where = f"queues[{index}]."
        if not isinstance(row, dict):
            raise errors.UsageError(f"plan file: queues[{index}] is not an object")
        method = _field(row, "method", str, where)
        if method not in METHODS:
            raise errors.UsageError(f"plan file: {where}method {method!r} is not one of {', '.join(METHODS)}")
        queues.append(QueueReset(
            queue=MessageQueue(_field(row, "topic", str, where), _field(row, "broker", str, where),
                               _field(row, "queue_id", int, where)),
            broker_addr=_field(row, "broker_addr", str, where),
            current=_field(row, "current", int, where, optional=True),
            target=_field(row, "target", int, where),
            min_offset=_field(row, "min_offset", int, where),
            max_offset=_field(row, "max_offset", int, where),
            method=method,
            owner=_field(row, "owner", str, where, optional=True),
        ))
    if not queues:
        raise errors.UsageError("plan file: the plan has no queue")
    by_name = {queue_name(q.queue): q.queue for q in queues}
    clients = []
    for index, row in enumerate(data.get("clients") or []):
        where = f"clients[{index}]."
        if not isinstance(row, dict):
            raise errors.UsageError(f"plan file: clients[{index}] is not an object")
        names = _field(row, "queues", list, where)
        clients.append(ClientEffect(_field(row, "client_id", str, where),
                                    tuple(by_name[n] for n in names if n in by_name),
                                    _field(row, "effect", str, where)))
    server_side = _field(data, "server_side_reset", dict, "")
    return ResetPlan(
        group=_field(data, "group", str, ""),
        cluster=_field(data, "cluster", str, ""),
        target=ResetTarget(kind, _field(target, "value", int, "target.", optional=True)),
        made_ts=_field(data, "made_ts", int, ""),
        queues=tuple(queues),
        server_side={str(k): (v if isinstance(v, bool) else None) for k, v in server_side.items()},
        clients=tuple(clients),
    )


def outcome_document(outcome: ResetOutcome) -> dict[str, Any]:
    """The result of ``group reset --execute``: the plan, each queue's outcome, undo and audit."""
    return {
        "plan": plan_document(outcome.plan),
        "all_applied": outcome.all_applied,
        "waited_s": outcome.waited_s,
        "undo_file": outcome.undo_file,
        "audit_file": outcome.audit_file,
        "queues": [
            {"topic": q.queue.topic, "broker": q.queue.broker_name, "queue_id": q.queue.queue_id,
             "target": q.target, "status": q.status, "offset_written": q.offset_written,
             "offset_after": q.offset_after, "client": q.client, "code": q.code, "remark": q.remark}
            for q in outcome.queues
        ],
    }
