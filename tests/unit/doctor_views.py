"""Small hand-built group views for the doctor's tables: a few clients, queues and offsets each.

Nothing here computes an expected verdict; the tests state those from docs/findings.md and
RocketMQ's rules.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rmqctl.model import (
    ClientConnection,
    ConsumerRunningInfo,
    ConsumeStatus,
    Finding,
    GroupView,
    MessageQueue,
    ProcessQueueInfo,
    QueueProgress,
    Subscription,
    parse_tag_expression,
)

G = "orders-consumer"
RETRY = "%RETRY%" + G
DLQ = "%DLQ%" + G
A, B, C = "10.0.0.1@a", "10.0.0.2@b", "10.0.0.3@c"
#: the sampled_at of every view unless a test says otherwise (epoch ms)
NOW = 1_700_000_000_000

AVG_CLASS = "org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely@1b2c"
CONFIG_CLASS = "org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueByConfig@77aa"
ROOM_CLASS = "org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueByMachineRoom@5e9f"


def qs(topic: str, n: int, broker: str = "broker-a") -> list[MessageQueue]:
    return [MessageQueue(topic, broker, i) for i in range(n)]


def sub(topic: str, expression: str = "*", version: int = 1) -> Subscription:
    return parse_tag_expression(topic, expression, version)


def client(cid: str, subs: Sequence[Subscription], held: Iterable[MessageQueue] = (), *,
           pq: Mapping[MessageQueue, ProcessQueueInfo] | None = None, orderly: bool = False,
           model: str = "CLUSTERING", consume_type: str = "CONSUME_PASSIVELY", strategy: str = AVG_CLASS,
           status: Mapping[str, ConsumeStatus] | None = None) -> ConsumerRunningInfo:
    """A client's own report: its subscriptions and the queues it holds (``pq`` overrides the
    process-queue state of some of them)."""
    props = {"PROP_CONSUME_TYPE": consume_type, "messageModel": model,
             "allocateMessageQueueStrategy": strategy, "PROP_CONSUMEORDERLY": str(orderly).lower()}
    table = {mq: ProcessQueueInfo() for mq in held}
    table.update(pq or {})
    return ConsumerRunningInfo(cid, props, tuple(subs), table, dict(status or {}))


def conn(cid: str, addr: str | None = None) -> ClientConnection:
    return ClientConnection(cid, addr or cid.split("@")[0] + ":5000", "JAVA", 479)


def row(mq: MessageQueue, broker_offset: int, consumer_offset: int, owner: str | None = None, *,
        known: bool = True) -> QueueProgress:
    return QueueProgress(mq, broker_offset, consumer_offset, consumer_offset, 0, owner,
                         "consume_stats" if known else "unknown")


def group(clients: Sequence[ConsumerRunningInfo], topics: Mapping[str, Sequence[MessageQueue]], *,
          stored: Mapping[str, Mapping[str, Subscription]] | None = None,
          progress: Sequence[QueueProgress] = (), online: Sequence[str] | None = None,
          model: str | None = "CLUSTERING", sampled_at: int = NOW, **extra: Any) -> GroupView:
    """A view of group G. ``stored`` is broker → topic → the subscription that broker keeps; by
    default broker-a keeps the subscription of the client listed last (the latest heartbeat).
    ``online`` names the connected clients (default: every client given)."""
    if stored is None:
        table: dict[str, Subscription] = {}
        for info in clients:
            table.update({s.topic: s for s in info.subscriptions})
        stored = {"broker-a": table}
    ids = [i.client_id for i in clients] if online is None else list(online)
    return GroupView(
        group=G, connections=tuple(conn(c) for c in ids), broker_subscriptions=stored,
        running_infos={i.client_id: i for i in clients}, progress=tuple(progress),
        message_model=model, consume_type="CONSUME_PASSIVELY",
        topic_queues={t: tuple(q) for t, q in topics.items()}, sampled_at=sampled_at, **extra)


def codes(findings: Iterable[Finding]) -> list[str]:
    return [f.code for f in findings]


def one(findings: Iterable[Finding], code: str) -> Finding:
    """The one finding with ``code`` (fails when there are none or several)."""
    found = [f for f in findings if f.code == code]
    assert len(found) == 1, f"expected one {code}, got {codes(findings)}"
    return found[0]


def qids(rows: Iterable[Mapping[str, Any]]) -> list[tuple[str, str, int]]:
    """(topic, broker, queue id) of evidence rows, in their order."""
    return [(r["topic"], r["broker"], r["queue_id"]) for r in rows]
