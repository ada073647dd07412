"""``group delete`` and ``group prune``: remove consumer groups, each a plan first.

Deleting a group sends DELETE_SUBSCRIPTIONGROUP (207) to every master broker (with
``cleanOffset`` only when asked: the committed offsets go too), and, only when asked, deletes the
group's retry and DLQ topics (DELETE_TOPIC_IN_BROKER, 215, on each broker; DELETE_TOPIC_IN_NAMESRV,
216, on each name server) — what ``mqadmin deleteSubGroup -c`` does. A group with an online client
is never deleted: its clients would create it again with their next heartbeat, and lose nothing
visible meanwhile. Verification reads every broker's group table (and, with offsets, the topics
the group still has offsets on) back. Pruning lists the groups with no online client and no
consumption for ``--idle``, each with its evidence, and deletes those as one plan each.

Must not import the CLI, textual or pyspark.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from typing import Any

from rmqctl import errors
from rmqctl.actions import audit
from rmqctl.actions.permission import Writer
from rmqctl.actions.reset import _service, writes_of
from rmqctl.model import GroupView
from rmqctl.source import ClusterSource

RETRY_PREFIX, DLQ_PREFIX = "%RETRY%", "%DLQ%"


@dataclass(frozen=True, slots=True)
class BrokerDelete:
    """One master broker's part of a delete: what it holds of the group now."""

    broker: str
    address: str
    has_config: bool
    #: topics the group has committed offsets on here
    offset_topics: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class DeletePlan:
    group: str
    cluster: str
    brokers: tuple[BrokerDelete, ...]
    #: the group's retry and DLQ topics that exist (deleted only with ``with_topics``)
    topics: tuple[str, ...]
    online_clients: tuple[str, ...]
    clean_offsets: bool
    with_topics: bool
    #: when the group last consumed (the newest store time of a consumed message), epoch ms
    last_consumed_ts: int | None = None


@dataclass(frozen=True, slots=True)
class BrokerDeleted:
    broker: str
    status: str  # deleted | refused | still-there
    code: int | None = None
    remark: str | None = None


@dataclass(frozen=True, slots=True)
class DeleteOutcome:
    plan: DeletePlan
    brokers: tuple[BrokerDeleted, ...]
    topics: dict[str, str]
    audit_file: str

    @property
    def all_deleted(self) -> bool:
        return all(b.status == "deleted" for b in self.brokers) and all(v == "deleted" for v in self.topics.values())


def last_consumed(view: GroupView) -> int | None:
    """The store time of the newest message the group consumed, over its queues (None: never)."""
    times = [p.last_timestamp for p in view.progress if p.last_timestamp > 0]
    return max(times) if times else None


async def plan_delete(source: ClusterSource, group: str, *, cluster: str, clean_offsets: bool,
                      with_topics: bool) -> DeletePlan:
    """Plan deleting ``group`` from every master broker."""
    service = _service(source)
    writes = writes_of(source)
    masters = await service.masters()
    try:
        view = await source.group_view(group, running_info=False)
    except errors.NotFound:
        view = None
    named = sorted(masters.items())
    tables = await asyncio.gather(*(writes.admin.subscription_groups(addr) for _, addr in named))
    offsets = await asyncio.gather(*(writes.admin.topics_by_consumer(addr, group) for _, addr in named))
    brokers = tuple(BrokerDelete(name, addr, group in table, tuple(t))
                    for (name, addr), table, t in zip(named, tables, offsets, strict=True))
    if not any(b.has_config or b.offset_topics for b in brokers) and view is None:
        raise errors.NotFound(f"no broker knows group {group!r}")
    known = set(await source.topics())
    topics = tuple(t for t in (RETRY_PREFIX + group, DLQ_PREFIX + group) if t in known)
    online = tuple(sorted(c.client_id for c in view.connections)) if view is not None else ()
    return DeletePlan(group, cluster, brokers, topics, online, clean_offsets, with_topics,
                      last_consumed(view) if view is not None else None)


def _check_offline(plan: DeletePlan) -> None:
    if plan.online_clients:
        raise errors.WriteRefused(
            f"group {plan.group!r} has {len(plan.online_clients)} online client(s) "
            f"({', '.join(plan.online_clients[:3])}): nothing was deleted",
            hint="stop its clients first: with a heartbeat they would create the group again")


async def apply_delete(source: ClusterSource, plan: DeletePlan, writer: Writer) -> DeleteOutcome:
    """Delete what ``plan`` says, after checking again that no client is online; verify; audit."""
    writes = writes_of(source)
    try:
        view = await source.group_view(plan.group, running_info=False)
        online = tuple(sorted(c.client_id for c in view.connections))
    except errors.NotFound:
        online = ()
    _check_offline(replace(plan, online_clients=online))
    record: dict[str, Any] = {
        "id": audit.new_id(audit.now_ms(), plan.group), "when_ts": audit.now_ms(), "action": "group delete",
        "who": {"os_user": writer.os_user, "access_key": writer.access_key}, "context": writer.context,
        "cluster": plan.cluster, "group": plan.group, "plan": delete_document(plan),
    }
    refused: dict[str, errors.RemoteError] = {}

    async def one(b: BrokerDelete) -> None:
        try:
            await writes.delete_group(b.address, plan.group, clean_offset=plan.clean_offsets)
        except errors.RemoteError as exc:
            refused[b.broker] = exc

    try:
        await asyncio.gather(*(one(b) for b in plan.brokers))
        topics: dict[str, str] = {}
        if plan.with_topics:
            for topic in plan.topics:
                try:
                    await asyncio.gather(*(writes.delete_topic_in_broker(b.address, topic) for b in plan.brokers))
                    await writes.delete_topic_in_namesrv(topic)
                    topics[topic] = "deleted"
                except errors.RemoteError as exc:
                    topics[topic] = f"refused: {exc.message}"
        tables = await asyncio.gather(*(writes.admin.subscription_groups(b.address) for b in plan.brokers))
        left = await asyncio.gather(*(writes.admin.topics_by_consumer(b.address, plan.group) for b in plan.brokers))
        results = []
        for b, table, offsets in zip(plan.brokers, tables, left, strict=True):
            if b.broker in refused:
                refusal = refused[b.broker]
                results.append(BrokerDeleted(b.broker, "refused", refusal.code, refusal.message))
            elif plan.group in table or (plan.clean_offsets and offsets):
                results.append(BrokerDeleted(b.broker, "still-there"))
            else:
                results.append(BrokerDeleted(b.broker, "deleted"))
        if plan.with_topics:
            known = set(await source.topics())
            for topic in plan.topics:
                if topics.get(topic) == "deleted" and topic in known:
                    topics[topic] = "still-there"
    except errors.RmqctlError as exc:
        record["outcome"] = {"error": exc.message}
        audit.append(record)
        raise
    outcome = DeleteOutcome(plan, tuple(results), topics, str(audit.audit_path()))
    record["outcome"] = {"all_deleted": outcome.all_deleted,
                         "brokers": [{"broker": r.broker, "status": r.status, "code": r.code} for r in results],
                         "topics": topics}
    audit.append(record)
    return outcome


def delete_document(plan: DeletePlan) -> dict[str, Any]:
    """``group delete``'s plan as a document."""
    return {
        "group": plan.group, "cluster": plan.cluster, "online_clients": list(plan.online_clients),
        "clean_offsets": plan.clean_offsets, "with_topics": plan.with_topics,
        "last_consumed_ts": plan.last_consumed_ts,
        "brokers": [{"broker": b.broker, "address": b.address, "has_config": b.has_config,
                     "offset_topics": list(b.offset_topics)} for b in plan.brokers],
        "topics": list(plan.topics),
    }


def delete_outcome_document(outcome: DeleteOutcome) -> dict[str, Any]:
    return {
        "plan": delete_document(outcome.plan), "all_deleted": outcome.all_deleted,
        "brokers": [{"broker": r.broker, "status": r.status, "code": r.code, "remark": r.remark}
                    for r in outcome.brokers],
        "topics": dict(outcome.topics), "audit_file": outcome.audit_file,
    }


@dataclass(frozen=True, slots=True)
class PruneCandidate:
    """One group ``group prune`` looked at, with its evidence and verdict."""

    group: str
    online_clients: int
    last_consumed_ts: int | None
    consume_tps: float
    #: prune, or why not
    verdict: str
    plan: DeletePlan | None = None


#: a listed group no broker keeps a config or offsets of: nothing of it is left to delete
GONE = "gone: no broker keeps its config or offsets"


async def plan_prune(source: ClusterSource, *, idle_s: float, cluster: str, clean_offsets: bool,
                     with_topics: bool) -> list[PruneCandidate]:
    """The groups with no online client, no consume TPS and no message consumed for ``idle_s``
    seconds (or never), each with a delete plan; the others with the reason they stay."""
    summaries = await source.group_summaries()
    now_ms = int(source.clock.now() * 1000)
    cutoff = now_ms - int(idle_s * 1000)
    out = []
    for summary in sorted(summaries.value, key=lambda s: s.group):
        if summary.clients:
            out.append(PruneCandidate(summary.group, summary.clients, None, summary.consume_tps,
                                      f"kept: {summary.clients} online client(s)"))
            continue
        try:
            plan = await plan_delete(source, summary.group, cluster=cluster, clean_offsets=clean_offsets,
                                     with_topics=with_topics)
        except errors.NotFound:
            # listed by what is left of it (its retry topic, after a delete without --with-topics)
            out.append(PruneCandidate(summary.group, summary.clients, None, summary.consume_tps, GONE))
            continue
        last = plan.last_consumed_ts
        if plan.online_clients:
            verdict = f"kept: {len(plan.online_clients)} online client(s)"
        elif summary.consume_tps > 0:
            verdict = f"kept: consuming ({summary.consume_tps:g} msg/s)"
        elif last is not None and last >= cutoff:
            verdict = "kept: consumed within the idle period"
        else:
            verdict = "prune"
        out.append(PruneCandidate(summary.group, len(plan.online_clients), last, summary.consume_tps, verdict,
                                  plan if verdict == "prune" else None))
    return out
