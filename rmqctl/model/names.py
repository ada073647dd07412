"""Names RocketMQ reserves: retry and dead-letter prefixes, system topics and groups.

Constants only; must not import anything from rmqctl.
"""

from __future__ import annotations

RETRY_PREFIX = "%RETRY%"
DLQ_PREFIX = "%DLQ%"
#: what joins group and topic in a POP retry topic: ``KeyBuilder.buildPopRetryTopicV1`` uses '_',
#: ``buildPopRetryTopicV2`` (a broker with ``enableRetryTopicV2``) '+'
POP_RETRY_SEPARATOR_V1 = "_"
POP_RETRY_SEPARATOR_V2 = "+"
#: The Java client and broker treat this expression as "everything".
SUB_ALL = "*"

#: ``TopicValidator``'s system topics (what GET_SYSTEM_TOPIC_LIST_FROM_NS lists, besides the
#: cluster and broker names every broker registers as topics). 5.5 brokers also create the
#: transaction topics of their RocksDB transaction store at start.
SYSTEM_TOPICS = frozenset(
    {"TBW102", "SELF_TEST_TOPIC", "OFFSET_MOVED_EVENT", "SCHEDULE_TOPIC_XXXX",
     "RMQ_SYS_TRANS_HALF_TOPIC", "rmq_sys_wheel_timer", "RMQ_SYS_TRACE_TOPIC",
     "RMQ_SYS_TRANS_OP_HALF_TOPIC", "TRANS_CHECK_MAX_TIME_TOPIC", "BenchmarkTest",
     "RMQ_SYS_ROCKSDB_TRANS_HALF_TOPIC", "RMQ_SYS_ROCKSDB_TRANS_OP_HALF_TOPIC"}
)
#: Groups ``SubscriptionGroupManager`` creates on every broker at start.
BROKER_BUILTIN_GROUPS = (
    "TOOLS_CONSUMER", "FILTERSRV_CONSUMER", "SELF_TEST_C_GROUP", "CID_ONS-HTTP-PROXY",
    "CID_ONSAPI_PULL", "CID_ONSAPI_PERMISSION", "CID_ONSAPI_OWNER", "CID_SYS_RMQ_TRANS",
)
#: The group every 5.x proxy in cluster mode consumes (BROADCASTING) to share its clients'
#: heartbeats with the other proxies: its connections on a broker are the proxies.
HEARTBEAT_SYNC_GROUP = "CID_DefaultHeartBeatSyncerTopic"
#: The topic the proxies of a cluster broadcast their clients' heartbeats on (one queue); each
#: message names the proxy that sent it (``localProxyId``: its address, remoting and gRPC ports).
HEARTBEAT_SYNC_TOPIC = "DefaultHeartBeatSyncerTopic"
#: ``ProxyConfig.remotingListenPort``'s default
DEFAULT_PROXY_REMOTING_PORT = 8080
#: Groups that are not user groups: the brokers' built-ins and what brokers and tools use.
SYSTEM_GROUPS = frozenset(
    {*BROKER_BUILTIN_GROUPS, "CID_RMQ_SYS_TRANS", HEARTBEAT_SYNC_GROUP}
)
