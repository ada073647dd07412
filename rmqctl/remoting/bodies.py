"""Turn decoded fastjson response bodies into model objects.

Field names are the Java bean property names fastjson writes (``brokerAddrTable``, ``droped``
…). Parsing is lenient the way an operator tool must be: unknown fields are ignored, numbers
that arrive as strings are accepted, and both ``droped`` (Java) and ``dropped`` (Go) are read.
Anything structurally wrong raises :class:`~rmqctl.errors.ProtocolError`.

Must not import the connection layer; only ``model``, ``errors`` and ``fastjson``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rmqctl import errors
from rmqctl.model import (
    BrokerData,
    ClientConnection,
    ClusterInfo,
    ConsumerConnection,
    ConsumerRunningInfo,
    ConsumeStats,
    ConsumeStatus,
    MessageQueue,
    OffsetEntry,
    ProcessQueueInfo,
    QueueData,
    Subscription,
    SubscriptionGroupConfig,
    TopicOffset,
    TopicRoute,
    TopicStats,
)
from rmqctl.remoting import fastjson


def _obj(value: Any, what: str) -> Mapping[Any, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise errors.ProtocolError(f"{what}: expected an object, got {type(value).__name__}")
    return value


def _int(value: Any, default: int = 0) -> int:
    if value is None:
        return default
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)):
        return int(value)
    try:
        return int(str(value).strip())
    except ValueError:
        try:
            return int(float(str(value)))
        except ValueError:
            return default


def _float(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


def _bool(value: Any, default: bool = False) -> bool:
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    return str(value).lower() == "true"


def parse_body(body: bytes, what: str) -> Mapping[Any, Any]:
    if not body:
        raise errors.ProtocolError(f"{what}: empty response body")
    return _obj(fastjson.loads(body), what)


def message_queue(key: Any) -> MessageQueue:
    """A ``MessageQueue`` map key (object literal or its JSON-string form)."""
    if isinstance(key, str) and key.startswith("{"):
        # BrowserCompatible output writes the object key as a JSON string of the object.
        key = fastjson.loads(key)
    if isinstance(key, fastjson.ObjectKey):
        data: Mapping[str, Any] = key.as_dict()
    elif isinstance(key, Mapping):
        data = key
    else:
        raise errors.ProtocolError(f"expected a MessageQueue key, got {key!r}")
    try:
        return MessageQueue(str(data["topic"]), str(data["brokerName"]), _int(data["queueId"]))
    except KeyError as exc:
        raise errors.ProtocolError(f"MessageQueue key lacks {exc}") from exc


def broker_data(data: Mapping[str, Any]) -> BrokerData:
    addrs = {_int(k): str(v) for k, v in _obj(data.get("brokerAddrs"), "brokerAddrs").items()}
    return BrokerData(str(data.get("brokerName", "")), str(data.get("cluster", "")), addrs)


def cluster_info(body: bytes) -> ClusterInfo:
    data = parse_body(body, "ClusterInfo")
    brokers = {
        str(name): broker_data(_obj(value, "BrokerData"))
        for name, value in _obj(data.get("brokerAddrTable"), "brokerAddrTable").items()
    }
    clusters = {
        str(name): tuple(sorted(str(b) for b in (names or ())))
        for name, names in _obj(data.get("clusterAddrTable"), "clusterAddrTable").items()
    }
    return ClusterInfo(brokers, clusters)


def topic_route(topic: str, body: bytes) -> TopicRoute:
    data = parse_body(body, "TopicRouteData")
    queue_datas = tuple(
        QueueData(
            broker_name=str(q.get("brokerName", "")),
            read_queue_nums=_int(q.get("readQueueNums")),
            write_queue_nums=_int(q.get("writeQueueNums")),
            perm=_int(q.get("perm")),
            # very old servers spelled it topicSynFlag
            topic_sys_flag=_int(q.get("topicSysFlag", q.get("topicSynFlag"))),
        )
        for q in data.get("queueDatas") or ()
    )
    broker_datas = tuple(broker_data(b) for b in data.get("brokerDatas") or ())
    return TopicRoute(topic, queue_datas, broker_datas, data.get("orderTopicConf"))


def string_list(body: bytes, field: str) -> list[str]:
    data = parse_body(body, field)
    return [str(v) for v in data.get(field) or ()]


def topic_stats(topic: str, body: bytes) -> TopicStats:
    data = parse_body(body, "TopicStatsTable")
    offsets = []
    for key, value in _obj(data.get("offsetTable"), "offsetTable").items():
        entry = _obj(value, "TopicOffset")
        offsets.append(
            TopicOffset(
                message_queue(key),
                _int(entry.get("minOffset")),
                _int(entry.get("maxOffset")),
                _int(entry.get("lastUpdateTimestamp")),
            )
        )
    tps = data.get("topicPutTps")
    return TopicStats(
        topic, tuple(sorted(offsets, key=lambda o: o.queue)), None if tps is None else _float(tps)
    )


def subscription(data: Mapping[str, Any]) -> Subscription:
    return Subscription(
        topic=str(data.get("topic", "")),
        expression=str(data.get("subString", "*")),
        tags=tuple(str(t) for t in data.get("tagsSet") or ()),
        codes=tuple(_int(c) for c in data.get("codeSet") or ()),
        sub_version=_int(data.get("subVersion")),
        expression_type=str(data.get("expressionType") or "TAG"),
    )


def consumer_connection(body: bytes) -> ConsumerConnection:
    data = parse_body(body, "ConsumerConnection")
    conns = tuple(
        sorted(
            (
                ClientConnection(
                    client_id=str(c.get("clientId", "")),
                    client_addr=str(c.get("clientAddr", "")),
                    language=str(c.get("language", "")),
                    version=_int(c.get("version")),
                )
                for c in data.get("connectionSet") or ()
            ),
            key=lambda c: c.client_id,
        )
    )
    subs = {
        str(topic): subscription(_obj(value, "SubscriptionData"))
        for topic, value in _obj(data.get("subscriptionTable"), "subscriptionTable").items()
    }
    return ConsumerConnection(
        conns,
        dict(sorted(subs.items())),
        data.get("consumeType"),
        data.get("messageModel"),
        data.get("consumeFromWhere"),
    )


def consume_stats(body: bytes) -> ConsumeStats:
    data = parse_body(body, "ConsumeStats")
    offsets: dict[MessageQueue, OffsetEntry] = {}
    for key, value in _obj(data.get("offsetTable"), "offsetTable").items():
        entry = _obj(value, "OffsetWrapper")
        pull = entry.get("pullOffset")
        offsets[message_queue(key)] = OffsetEntry(
            broker_offset=_int(entry.get("brokerOffset")),
            consumer_offset=_int(entry.get("consumerOffset")),
            pull_offset=None if pull is None else _int(pull),
            last_timestamp=_int(entry.get("lastTimestamp")),
        )
    return ConsumeStats(offsets, _float(data.get("consumeTps")))


def process_queue_info(data: Mapping[str, Any]) -> ProcessQueueInfo:
    return ProcessQueueInfo(
        commit_offset=_int(data.get("commitOffset")),
        cached_msg_count=_int(data.get("cachedMsgCount")),
        cached_msg_min_offset=_int(data.get("cachedMsgMinOffset")),
        cached_msg_max_offset=_int(data.get("cachedMsgMaxOffset")),
        cached_msg_size_mib=_int(data.get("cachedMsgSizeInMiB")),
        locked=_bool(data.get("locked")),
        dropped=_bool(data.get("droped", data.get("dropped"))),
        try_unlock_times=_int(data.get("tryUnlockTimes")),
        last_lock_timestamp=_int(data.get("lastLockTimestamp")),
        last_pull_timestamp=_int(data.get("lastPullTimestamp")),
        last_consume_timestamp=_int(data.get("lastConsumeTimestamp")),
    )


def consumer_running_info(client_id: str, body: bytes) -> ConsumerRunningInfo:
    data = parse_body(body, "ConsumerRunningInfo")
    props = {str(k): str(v) for k, v in _obj(data.get("properties"), "properties").items()}
    subs = tuple(
        sorted(
            (subscription(_obj(s, "SubscriptionData")) for s in data.get("subscriptionSet") or ()),
            key=lambda s: (s.topic, s.expression),
        )
    )
    table = {
        message_queue(k): process_queue_info(_obj(v, "ProcessQueueInfo"))
        for k, v in _obj(data.get("mqTable"), "mqTable").items()
    }
    status = {
        str(topic): ConsumeStatus(
            pull_rt=_float(row.get("pullRT")), pull_tps=_float(row.get("pullTPS")),
            consume_rt=_float(row.get("consumeRT")), consume_ok_tps=_float(row.get("consumeOKTPS")),
            consume_failed_tps=_float(row.get("consumeFailedTPS")),
            consume_failed_msgs=_int(row.get("consumeFailedMsgs")),
        )
        for topic, value in _obj(data.get("statusTable") or {}, "statusTable").items()
        for row in (_obj(value, "ConsumeStatus"),)
    }
    return ConsumerRunningInfo(client_id, props, subs, dict(sorted(table.items())), dict(sorted(status.items())))


def subscription_groups(body: bytes) -> dict[str, SubscriptionGroupConfig]:
    data = parse_body(body, "SubscriptionGroupWrapper")
    out = {}
    for name, value in _obj(data.get("subscriptionGroupTable"), "subscriptionGroupTable").items():
        cfg = _obj(value, "SubscriptionGroupConfig")
        out[str(name)] = SubscriptionGroupConfig(
            group_name=str(cfg.get("groupName", name)),
            consume_enable=_bool(cfg.get("consumeEnable"), True),
            consume_broadcast_enable=_bool(cfg.get("consumeBroadcastEnable"), True),
            consume_message_orderly=_bool(cfg.get("consumeMessageOrderly")),
            retry_queue_nums=_int(cfg.get("retryQueueNums"), 1),
            retry_max_times=_int(cfg.get("retryMaxTimes"), 16),
            broker_id=_int(cfg.get("brokerId")),
            notify_consumer_ids_changed_enable=_bool(
                cfg.get("notifyConsumerIdsChangedEnable"), True
            ),
        )
    return dict(sorted(out.items()))


def kv_table(body: bytes) -> dict[str, str]:
    data = parse_body(body, "KVTable")
    return {str(k): str(v) for k, v in _obj(data.get("table"), "table").items()}
