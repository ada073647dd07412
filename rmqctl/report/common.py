"""What every document shares: rows for ``jsonl``/``csv``, the ``errors`` object, and the one
JSON shape of each model object that documents embed (a queue, a subscription, a client
connection, a finding).

Nothing else turns a model object into a dict for output: the model keeps no output dicts.
Must not import the CLI, the TUI, the doctor or pyspark.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypedDict

from rmqctl.errors import RmqctlError
from rmqctl.model import ClientConnection, Finding, MessageQueue, Subscription
from rmqctl.records import dataclass


@dataclass(frozen=True, slots=True)
class RowSet:
    """One kind of row of a document: ``jsonl`` prints each row with ``"kind": kind`` first;
    ``csv`` prints one kind, with ``columns`` as its header."""

    kind: str
    columns: tuple[str, ...]
    rows: Sequence[Mapping[str, Any]]


class QueueDict(TypedDict):
    topic: str
    broker: str
    queue_id: int


Errors = dict[str, str]


def errors_doc(errors: Mapping[str, RmqctlError | str]) -> Errors:
    """``{"broker-a": "TOPIC_NOT_EXIST (17) from …: …"}``: what made a document partial."""
    return {name: str(err) for name, err in sorted(errors.items())}


def error_rows(doc: Mapping[str, Any]) -> list[RowSet]:
    """The document's errors as rows of kind ``error`` (only when there are some)."""
    errs = doc.get("errors") or {}
    if not errs:
        return []
    return [RowSet("error", ("source", "message"), [{"source": k, "message": v} for k, v in errs.items()])]


def queue_doc(mq: MessageQueue) -> QueueDict:
    """A queue as every document shows it: ``{"topic", "broker", "queue_id"}``."""
    return QueueDict(topic=mq.topic, broker=mq.broker_name, queue_id=mq.queue_id)


def queues_doc(queues: Iterable[MessageQueue]) -> list[QueueDict]:
    return [queue_doc(mq) for mq in queues]


def subscription_doc(sub: Subscription) -> dict[str, Any]:
    """A subscription as stored by a broker or sent by a client."""
    return {
        "topic": sub.topic,
        "expression": sub.expression,
        "expression_type": sub.expression_type,
        "tags": list(sub.tags),
        "sub_version": sub.sub_version,
    }


def connection_doc(conn: ClientConnection) -> dict[str, Any]:
    """A client connection; ``version`` is the Java enum name (``V5_3_3``), ``null`` for a gRPC
    client (a proxy lists it with the proxy's own version); ``sdk`` is ``remoting`` or ``grpc``;
    ``proxy`` the proxy that lists it (``null`` when a broker does)."""
    return {
        "client_id": conn.client_id,
        "client_addr": conn.client_addr,
        "language": conn.language,
        "version": conn.sdk_version,
        "sdk": conn.sdk,
        "proxy": conn.proxy,
    }


def finding_doc(finding: Finding) -> dict[str, Any]:
    """A doctor finding whole: ``detail``, ``evidence`` (an object) and ``fix`` included."""
    return {
        "code": finding.code,
        "severity": finding.severity,
        "group": finding.group,
        "title": finding.title,
        "detail": finding.detail,
        "evidence": dict(finding.evidence),
        "fix": finding.fix,
    }


#: the broker's ConsumeType names as operators say them (the same in every document)
CONSUME_TYPES = {"CONSUME_PASSIVELY": "PUSH", "CONSUME_ACTIVELY": "PULL", "CONSUME_POP": "POP"}


def consume_type(raw: str | None) -> str | None:
    """``CONSUME_PASSIVELY`` → ``PUSH``, ``CONSUME_ACTIVELY`` → ``PULL``, ``CONSUME_POP`` → ``POP``."""
    return CONSUME_TYPES.get(raw or "", raw) if raw else None


def queue_labels(queues: Iterable[Mapping[str, Any]]) -> list[str]:
    """``topic@broker/queue_id`` per queue, for tables."""
    return [f"{q['topic']}@{q['broker']}/{q['queue_id']}" for q in queues]
