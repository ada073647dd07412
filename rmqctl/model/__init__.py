"""Domain model: frozen dataclasses that every layer exchanges.

Wire formats never cross a layer boundary; these objects do. Derived numbers (lag, inflight,
owner lookups, Java ordering) are properties here, never recomputed in a command or widget.
The package is cut by concern: ``names`` (reserved topics and groups), ``java`` (Java string and
version semantics), ``cluster`` (brokers, topics, queues), ``consumer`` (subscriptions, clients,
running info), ``group`` (the group view), ``history`` (which expression and owner judged a
consumed message, sample after sample), ``message`` (a stored message and its two ids),
``finding`` (doctor verdicts), ``sql92`` (the broker's SQL92 message filters) and ``formatting``
(display text for people). Every public name is re-exported here, so ``from rmqctl.model import
X`` is the way to reach them; ``sql92``'s are loaded when first asked for.

Must not import anything that does I/O, and nothing from the rest of rmqctl but ``errors``.
"""

from __future__ import annotations

import typing as _typing

from rmqctl.model.cluster import (
    BrokerData,
    BrokerRuntime,
    ClusterInfo,
    MessageQueue,
    QueueData,
    TopicKind,
    TopicOffset,
    TopicRoute,
    TopicStats,
    queue_of,
    retry_topic_groups,
    retry_topic_owner,
    sort_queues,
    topic_kind,
)
from rmqctl.model.consumer import (
    DEFAULT_RETRY_DELAYS_MS,
    DEFAULT_STRATEGY,
    SQL92,
    STRATEGY_CLASSES,
    ClientConnection,
    ConsumerConnection,
    ConsumerRunningInfo,
    ConsumeStats,
    ConsumeStatus,
    OffsetEntry,
    ProcessQueueInfo,
    ProxyClients,
    RetryPolicy,
    Subscription,
    SubscriptionGroupConfig,
    announced_proxy,
    client_sdk,
    parse_tag_expression,
    sql92_subscription,
)
from rmqctl.model.finding import SEVERITY_RANK, Finding, Severity
from rmqctl.model.formatting import format_millis, unpullable_reason
from rmqctl.model.group import GroupSummary, GroupView, QueueProgress, SampledMessage, TagSample
from rmqctl.model.history import HISTORY_DEPTH, ExpressionHistory, Observation, Reign, dated
from rmqctl.model.java import java_str_key, java_string_hash, version_desc, version_ordinal
from rmqctl.model.message import (
    TRACE_TOPIC,
    VERDICTS,
    Explanation,
    Message,
    MessageRef,
    QueueOwnership,
    TraceEvent,
    Verdict,
    decode_offset_message_id,
    decode_trace_events,
    encode_offset_message_id,
    encode_trace_events,
)
from rmqctl.model.names import (
    BROKER_BUILTIN_GROUPS,
    DEFAULT_PROXY_REMOTING_PORT,
    DLQ_PREFIX,
    HEARTBEAT_SYNC_GROUP,
    HEARTBEAT_SYNC_TOPIC,
    POP_RETRY_SEPARATOR_V1,
    POP_RETRY_SEPARATOR_V2,
    RETRY_PREFIX,
    SUB_ALL,
    SYSTEM_GROUPS,
    SYSTEM_TOPICS,
)

if _typing.TYPE_CHECKING:
    from rmqctl.model.sql92 import SQL92_MAX_CHARS, SQL92_MAX_DEPTH, Selector, Sql92Error, compile_sql92

#: the SQL92 filter language, loaded when first used: most commands never meet a SQL92 subscription
_SQL92_NAMES = frozenset({"SQL92_MAX_CHARS", "SQL92_MAX_DEPTH", "Selector", "Sql92Error", "compile_sql92"})


def __getattr__(name: str) -> _typing.Any:
    if name in _SQL92_NAMES:
        from rmqctl.model import sql92

        value = getattr(sql92, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_SQL92_NAMES})


__all__ = [
    "BROKER_BUILTIN_GROUPS", "DEFAULT_STRATEGY", "DLQ_PREFIX", "RETRY_PREFIX", "SEVERITY_RANK",
    "SQL92", "SQL92_MAX_CHARS", "TRACE_TOPIC", "VERDICTS", "SQL92_MAX_DEPTH", "STRATEGY_CLASSES", "SUB_ALL",
    "SYSTEM_GROUPS", "SYSTEM_TOPICS", "POP_RETRY_SEPARATOR_V1", "POP_RETRY_SEPARATOR_V2",
    "DEFAULT_PROXY_REMOTING_PORT", "HEARTBEAT_SYNC_GROUP",
    "ProxyClients", "announced_proxy", "client_sdk", "HEARTBEAT_SYNC_TOPIC",
    "BrokerData", "BrokerRuntime", "ClientConnection", "ClusterInfo", "ConsumeStats",
    "ConsumeStatus", "ConsumerConnection", "ConsumerRunningInfo", "Explanation", "Finding", "GroupSummary",
    "GroupView", "Message", "MessageQueue", "MessageRef", "OffsetEntry", "ProcessQueueInfo", "QueueData",
    "QueueOwnership", "QueueProgress", "SampledMessage", "Selector", "Severity", "Sql92Error", "Subscription",
    "DEFAULT_RETRY_DELAYS_MS", "RetryPolicy", "SubscriptionGroupConfig", "TagSample",
    "TopicKind", "TopicOffset", "TopicRoute", "TopicStats", "TraceEvent", "Verdict",
    "compile_sql92", "decode_offset_message_id", "decode_trace_events", "encode_offset_message_id",
    "encode_trace_events",
    "format_millis", "unpullable_reason", "java_str_key", "java_string_hash", "parse_tag_expression",
    "queue_of", "sort_queues", "sql92_subscription", "topic_kind", "version_desc", "version_ordinal",
    "retry_topic_groups", "retry_topic_owner",
    "HISTORY_DEPTH", "ExpressionHistory", "Observation", "Reign", "dated",
]
