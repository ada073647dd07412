"""Turn decoded fastjson response bodies into model objects.

Field names are the Java bean property names fastjson writes (``brokerAddrTable``, ``droped``
…). Parsing is lenient the way an operator tool must be: unknown fields are ignored, numbers
that arrive as strings are accepted, and both ``droped`` (Java) and ``dropped`` (Go) are read.
Anything structurally wrong raises :class:`~rmqctl.errors.ProtocolError`.

Must not import the connection layer; only ``model``, ``errors`` and ``fastjson``.
"""

from __future__ import annotations

import math
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
    parse_tag_expression,
)
from rmqctl.remoting import fastjson


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _obj(value: Any, what: str) -> Mapping[Any, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise errors.ProtocolError(f"{what}: expected an object, got {_kind(value)}")
    return value


def _list(value: Any, what: str) -> list[Any] | tuple[Any, ...]:
    if value is None:
        return ()
    if not isinstance(value, (list, tuple)):
        raise errors.ProtocolError(f"{what}: expected a list, got {_kind(value)}")
    return value


def _objects(value: Any, what: str) -> list[Mapping[Any, Any]]:
    return [_obj(item, what) for item in _list(value, what + "[]")]


def _int(value: Any, what: str, default: int = 0) -> int:
    if value is None:
        return default
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise errors.ProtocolError(f"{what}: expected an integer, got {value}")
        return int(value)
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return default
        if len(text) <= 40:  # a Java long has 19 digits; longer strings are not numbers we read
            try:
                return int(text)
            except ValueError:
                try:
                    number = float(text)
                except ValueError:
                    pass
                else:
                    if math.isfinite(number):
                        return int(number)
        raise errors.ProtocolError(f"{what}: expected an integer, got {text[:40]!r}")
    raise errors.ProtocolError(f"{what}: expected an integer, got {_kind(value)}")


def _float(value: Any, what: str) -> float:
    if value is None:
        return 0.0
    if isinstance(value, (bool, int, float)) or (isinstance(value, str) and len(value) <= 40):
        try:
            number = float(value)
        except (ValueError, OverflowError):
            number = math.nan
        if math.isfinite(number):
            return number
    raise errors.ProtocolError(f"{what}: expected a finite number, got {_kind(value)}")


def _bool(value: Any, what: str, default: bool = False) -> bool:
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    if isinstance(value, (str, int)):
        return str(value).lower() == "true"
    raise errors.ProtocolError(f"{what}: expected true or false, got {_kind(value)}")


def _str(value: Any, what: str, default: str = "") -> str:
    if value is None:
        return default
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    raise errors.ProtocolError(f"{what}: expected a string, got {_kind(value)}")


def _opt_str(value: Any, what: str) -> str | None:
    return None if value is None else _str(value, what)


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
        raise errors.ProtocolError(f"expected a MessageQueue key, got {_kind(key)}")
    try:
        return MessageQueue(_str(data["topic"], "MessageQueue.topic"),
                            _str(data["brokerName"], "MessageQueue.brokerName"),
                            _int(data["queueId"], "MessageQueue.queueId"))
    except KeyError as exc:
        raise errors.ProtocolError(f"MessageQueue key lacks {exc}") from exc


def broker_data(data: Mapping[str, Any]) -> BrokerData:
    addrs = {_int(k, "brokerAddrs key"): _str(v, "brokerAddrs")
             for k, v in _obj(data.get("brokerAddrs"), "brokerAddrs").items()}
    return BrokerData(_str(data.get("brokerName"), "BrokerData.brokerName"),
                      _str(data.get("cluster"), "BrokerData.cluster"), addrs)


def cluster_info(body: bytes) -> ClusterInfo:
    data = parse_body(body, "ClusterInfo")
    brokers = {
        _str(name, "brokerAddrTable key"): broker_data(_obj(value, "BrokerData"))
        for name, value in _obj(data.get("brokerAddrTable"), "brokerAddrTable").items()
    }
    clusters = {
        _str(name, "clusterAddrTable key"): tuple(
            sorted(_str(b, "clusterAddrTable") for b in _list(names, "clusterAddrTable"))
        )
        for name, names in _obj(data.get("clusterAddrTable"), "clusterAddrTable").items()
    }
    return ClusterInfo(brokers, clusters)


def topic_route(topic: str, body: bytes) -> TopicRoute:
    data = parse_body(body, "TopicRouteData")
    queue_datas = tuple(
        QueueData(
            broker_name=_str(q.get("brokerName"), "QueueData.brokerName"),
            read_queue_nums=_int(q.get("readQueueNums"), "QueueData.readQueueNums"),
            write_queue_nums=_int(q.get("writeQueueNums"), "QueueData.writeQueueNums"),
            perm=_int(q.get("perm"), "QueueData.perm"),
            # very old servers spelled it topicSynFlag
            topic_sys_flag=_int(q.get("topicSysFlag", q.get("topicSynFlag")), "QueueData.topicSysFlag"),
        )
        for q in _objects(data.get("queueDatas"), "queueDatas")
    )
    broker_datas = tuple(broker_data(b) for b in _objects(data.get("brokerDatas"), "brokerDatas"))
    return TopicRoute(topic, queue_datas, broker_datas,
                      _opt_str(data.get("orderTopicConf"), "orderTopicConf"))


def string_list(body: bytes, field: str) -> list[str]:
    data = parse_body(body, field)
    return [_str(v, field) for v in _list(data.get(field), field)]


def topic_stats(topic: str, body: bytes) -> TopicStats:
    data = parse_body(body, "TopicStatsTable")
    offsets = []
    for key, value in _obj(data.get("offsetTable"), "offsetTable").items():
        entry = _obj(value, "TopicOffset")
        offsets.append(
            TopicOffset(
                message_queue(key),
                _int(entry.get("minOffset"), "TopicOffset.minOffset"),
                _int(entry.get("maxOffset"), "TopicOffset.maxOffset"),
                _int(entry.get("lastUpdateTimestamp"), "TopicOffset.lastUpdateTimestamp"),
            )
        )
    tps = data.get("topicPutTps")
    return TopicStats(
        topic, tuple(sorted(offsets, key=lambda o: o.queue)),
        None if tps is None else _float(tps, "topicPutTps"),
    )


def subscription(data: Mapping[str, Any]) -> Subscription:
    """A ``SubscriptionData`` as a client sends it in a heartbeat or a broker reports it.

    The broker stores the tag and code sets the client computed and never recomputes them, so
    they are taken as sent; only a TAG subscription that carries no sets at all (a client other
    than Java's) has them parsed from its expression.
    """
    topic = _str(data.get("topic"), "SubscriptionData.topic")
    expression = _str(data.get("subString"), "SubscriptionData.subString", "*")
    version = _int(data.get("subVersion"), "SubscriptionData.subVersion")
    expression_type = _str(data.get("expressionType"), "SubscriptionData.expressionType") or "TAG"
    if expression_type == "TAG" and data.get("tagsSet") is None and data.get("codeSet") is None:
        return parse_tag_expression(topic, expression, version)
    return Subscription(
        topic=topic,
        expression=expression,
        tags=tuple(_str(t, "SubscriptionData.tagsSet") for t in _list(data.get("tagsSet"), "tagsSet")),
        codes=tuple(_int(c, "SubscriptionData.codeSet") for c in _list(data.get("codeSet"), "codeSet")),
        sub_version=version,
        expression_type=expression_type,
    )


def consumer_connection(body: bytes) -> ConsumerConnection:
    data = parse_body(body, "ConsumerConnection")
    conns = tuple(
        sorted(
            (
                ClientConnection(
                    client_id=_str(c.get("clientId"), "Connection.clientId"),
                    client_addr=_str(c.get("clientAddr"), "Connection.clientAddr"),
                    language=_str(c.get("language"), "Connection.language"),
                    version=_int(c.get("version"), "Connection.version"),
                )
                for c in _objects(data.get("connectionSet"), "connectionSet")
            ),
            key=lambda c: c.client_id,
        )
    )
    subs = {
        _str(topic, "subscriptionTable key"): subscription(_obj(value, "SubscriptionData"))
        for topic, value in _obj(data.get("subscriptionTable"), "subscriptionTable").items()
    }
    return ConsumerConnection(
        conns,
        dict(sorted(subs.items())),
        _opt_str(data.get("consumeType"), "consumeType"),
        _opt_str(data.get("messageModel"), "messageModel"),
        _opt_str(data.get("consumeFromWhere"), "consumeFromWhere"),
    )


def consume_stats(body: bytes) -> ConsumeStats:
    data = parse_body(body, "ConsumeStats")
    offsets: dict[MessageQueue, OffsetEntry] = {}
    for key, value in _obj(data.get("offsetTable"), "offsetTable").items():
        entry = _obj(value, "OffsetWrapper")
        pull = entry.get("pullOffset")
        offsets[message_queue(key)] = OffsetEntry(
            broker_offset=_int(entry.get("brokerOffset"), "OffsetWrapper.brokerOffset"),
            consumer_offset=_int(entry.get("consumerOffset"), "OffsetWrapper.consumerOffset"),
            pull_offset=None if pull is None else _int(pull, "OffsetWrapper.pullOffset"),
            last_timestamp=_int(entry.get("lastTimestamp"), "OffsetWrapper.lastTimestamp"),
        )
    return ConsumeStats(offsets, _float(data.get("consumeTps"), "consumeTps"))


def process_queue_info(data: Mapping[str, Any]) -> ProcessQueueInfo:
    def num(name: str) -> int:
        return _int(data.get(name), "ProcessQueueInfo." + name)

    return ProcessQueueInfo(
        commit_offset=num("commitOffset"),
        cached_msg_count=num("cachedMsgCount"),
        cached_msg_min_offset=num("cachedMsgMinOffset"),
        cached_msg_max_offset=num("cachedMsgMaxOffset"),
        cached_msg_size_mib=num("cachedMsgSizeInMiB"),
        locked=_bool(data.get("locked"), "ProcessQueueInfo.locked"),
        dropped=_bool(data.get("droped", data.get("dropped")), "ProcessQueueInfo.droped"),
        try_unlock_times=num("tryUnlockTimes"),
        last_lock_timestamp=num("lastLockTimestamp"),
        last_pull_timestamp=num("lastPullTimestamp"),
        last_consume_timestamp=num("lastConsumeTimestamp"),
    )


def consumer_running_info(client_id: str, body: bytes) -> ConsumerRunningInfo:
    data = parse_body(body, "ConsumerRunningInfo")
    props = {_str(k, "properties key"): _str(v, "properties")
             for k, v in _obj(data.get("properties"), "properties").items()}
    subs = tuple(
        sorted(
            (subscription(s) for s in _objects(data.get("subscriptionSet"), "subscriptionSet")),
            key=lambda s: (s.topic, s.expression),
        )
    )
    table = {
        message_queue(k): process_queue_info(_obj(v, "ProcessQueueInfo"))
        for k, v in _obj(data.get("mqTable"), "mqTable").items()
    }
    status = {
        str(topic): ConsumeStatus(
            pull_rt=_float(row.get("pullRT"), "ConsumeStatus.pullRT"),
            pull_tps=_float(row.get("pullTPS"), "ConsumeStatus.pullTPS"),
            consume_rt=_float(row.get("consumeRT"), "ConsumeStatus.consumeRT"),
            consume_ok_tps=_float(row.get("consumeOKTPS"), "ConsumeStatus.consumeOKTPS"),
            consume_failed_tps=_float(row.get("consumeFailedTPS"), "ConsumeStatus.consumeFailedTPS"),
            consume_failed_msgs=_int(row.get("consumeFailedMsgs"), "ConsumeStatus.consumeFailedMsgs"),
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
        key = _str(name, "subscriptionGroupTable key")

        def flag(field: str, default: bool, cfg: Mapping[Any, Any] = cfg) -> bool:
            return _bool(cfg.get(field), "SubscriptionGroupConfig." + field, default)

        def num(field: str, default: int, cfg: Mapping[Any, Any] = cfg) -> int:
            return _int(cfg.get(field), "SubscriptionGroupConfig." + field, default)

        out[key] = SubscriptionGroupConfig(
            group_name=_str(cfg.get("groupName"), "SubscriptionGroupConfig.groupName", key),
            consume_enable=flag("consumeEnable", True),
            consume_broadcast_enable=flag("consumeBroadcastEnable", True),
            consume_message_orderly=flag("consumeMessageOrderly", False),
            retry_queue_nums=num("retryQueueNums", 1),
            retry_max_times=num("retryMaxTimes", 16),
            broker_id=num("brokerId", 0),
            notify_consumer_ids_changed_enable=flag("notifyConsumerIdsChangedEnable", True),
        )
    return dict(sorted(out.items()))


def kv_table(body: bytes) -> dict[str, str]:
    data = parse_body(body, "KVTable")
    return {_str(k, "table key"): _str(v, "table") for k, v in _obj(data.get("table"), "table").items()}
