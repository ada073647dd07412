"""The dashboard's REST replies, decoded into model objects (sans-I/O).

Every reply of the classic dashboard (1.0.0 up to the unreleased 2.1.1 line) is HTTP 200 with an
envelope ``{"status": 0|-1, "data": …, "errMsg": …}``; failures of the admin calls behind it come
back as ``status`` −1 with the Java exception's text, and a few (Spring Security's CSRF check, an
unknown path) as Spring's own error document ``{"timestamp", "status": 403, "error", "path"}``.
:func:`unwrap` checks both on every reply. ``Map<MessageQueue, …>`` keys arrive as the Java
``toString`` (``MessageQueue [topic=T, brokerName=b, queueId=0]``) and are parsed by
:func:`message_queue`. Field names are Jackson's bean names (``droped`` included).

Must not import httpx or anything that does I/O; only ``model``, ``errors`` and the remoting
body helpers (which are sans-I/O too).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from rmqctl import errors
from rmqctl.model import (
    BrokerRuntime,
    ClientConnection,
    ClusterInfo,
    ConsumerConnection,
    ConsumerRunningInfo,
    ConsumeStats,
    ConsumeStatus,
    GroupSummary,
    Message,
    MessageQueue,
    OffsetEntry,
    QueueProgress,
    SubscriptionGroupConfig,
    TopicOffset,
    TopicRoute,
    TopicStats,
    encode_offset_message_id,
    version_ordinal,
)
from rmqctl.remoting import bodies

_MQ_KEY = re.compile(r"^MessageQueue \[topic=(?P<topic>.*), brokerName=(?P<broker>.*), queueId=(?P<qid>-?\d+)\]$")
#: the RocketMQ response code inside a Java exception text: "CODE: 17  DESC: …"
_REMOTE_CODE = re.compile(r"CODE:\s*(-?\d+)\s+DESC:\s*(?P<desc>.*)", re.DOTALL)


class DashboardRefused(errors.RemoteError):
    """The dashboard answered ``status`` ≠ 0 (or Spring's error document) for an API path."""

    def __init__(self, path: str, status: int, message: str, *, code: int | None = None) -> None:
        self.path = path
        self.status = status
        self.remote_code = code
        super().__init__(status, message)
        self.message = f"dashboard refused {path}: {first_line(message) or 'no message'}"
        self.args = (self.message,)


def first_line(text: str | None) -> str:
    """The Java exception class prefix and the trailing FAQ link are noise on one error line."""
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    match = _REMOTE_CODE.search(line)
    if match:
        line = match.group("desc").strip()
    return line


def remote_code(text: str | None) -> int | None:
    """The RocketMQ response code a ``status: -1`` message carries, if any (17 = topic not exist)."""
    match = _REMOTE_CODE.search(text or "")
    return int(match.group(1)) if match else None


def decode_json(body: bytes, path: str) -> Any:
    try:
        return json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise errors.ProtocolError(f"dashboard reply to {path} is not JSON", raw=body[:2048]) from exc


def unwrap(doc: Any, path: str) -> Any:
    """The ``data`` of an envelope; :class:`DashboardRefused` for ``status`` ≠ 0 or Spring's error."""
    if not isinstance(doc, Mapping):
        raise errors.ProtocolError(f"dashboard reply to {path} is not an object",
                                   raw=json.dumps(doc)[:2048].encode())
    if "error" in doc and "path" in doc and "data" not in doc:
        status = doc.get("status")
        raise DashboardRefused(path, status if isinstance(status, int) else -1,
                               f"HTTP {status} {doc.get('error') or ''}".strip())
    if "status" not in doc:
        raise errors.ProtocolError(f"dashboard reply to {path} has no status field",
                                   raw=json.dumps(doc)[:2048].encode())
    status = doc["status"]
    if status != 0:
        message = str(doc.get("errMsg") or "")
        raise DashboardRefused(path, status if isinstance(status, int) else -1, message,
                               code=remote_code(message))
    return doc.get("data")


def obj(value: Any, what: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise errors.ProtocolError(f"{what}: expected an object, got {type(value).__name__}")
    return value


def seq(value: Any, what: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise errors.ProtocolError(f"{what}: expected a list, got {type(value).__name__}")
    return value


def _float(value: Any) -> float:
    if isinstance(value, bool) or value is None:
        return 0.0
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


def _int(value: Any, default: int = 0) -> int:
    if isinstance(value, bool) or value is None:
        return default
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def message_queue(key: str) -> MessageQueue:
    """Parse a ``MessageQueue.toString()`` map key. Topic and broker names cannot hold ``, ``
    followed by ``brokerName=`` in practice; the regex is anchored at both ends for the rest."""
    match = _MQ_KEY.match(key.strip())
    if match is None:
        raise errors.ProtocolError(f"not a MessageQueue key: {key!r}", raw=key.encode()[:512])
    return MessageQueue(match.group("topic"), match.group("broker"), int(match.group("qid")))


# -- cluster and topics --------------------------------------------------------------------------


def cluster_list(data: Any) -> tuple[ClusterInfo, dict[str, dict[int, dict[str, str]]]]:
    """``/cluster/list.query``: the name server's cluster table and each broker's runtime table."""
    doc = obj(data, "cluster list")
    info_doc = obj(doc.get("clusterInfo"), "clusterInfo")
    brokers = {str(name): bodies.broker_data(obj(value, "BrokerData"))
               for name, value in obj(info_doc.get("brokerAddrTable"), "brokerAddrTable").items()}
    clusters = {str(name): tuple(sorted(str(b) for b in seq(names, "clusterAddrTable")))
                for name, names in obj(info_doc.get("clusterAddrTable"), "clusterAddrTable").items()}
    runtimes: dict[str, dict[int, dict[str, str]]] = {}
    for name, by_id in obj(doc.get("brokerServer"), "brokerServer").items():
        runtimes[str(name)] = {_int(bid): {str(k): str(v) for k, v in obj(table, "runtime").items()}
                               for bid, table in obj(by_id, "brokerServer entry").items()}
    return ClusterInfo(brokers, clusters), runtimes


def broker_runtimes(info: ClusterInfo, tables: Mapping[str, Mapping[int, Mapping[str, str]]]) -> list[BrokerRuntime]:
    out = []
    for cluster_name, broker_name, broker_id, addr in info.broker_addresses():
        table = tables.get(broker_name, {}).get(broker_id)
        if table is not None:
            out.append(BrokerRuntime(broker_name, broker_id, addr, cluster_name, dict(table)))
    return out


def topic_list(data: Any) -> list[str]:
    return sorted(str(t) for t in seq(obj(data, "topic list").get("topicList"), "topicList"))


def topic_route(topic: str, data: Any) -> TopicRoute:
    # the dashboard's TopicRouteData has the remoting body's field names
    return bodies.topic_route(topic, json.dumps(obj(data, "TopicRouteData")).encode())


def topic_stats(topic: str, data: Any) -> TopicStats:
    doc = obj(data, "TopicStatsTable")
    offsets = []
    for key, value in obj(doc.get("offsetTable"), "offsetTable").items():
        entry = obj(value, "TopicOffset")
        offsets.append(TopicOffset(message_queue(key), _int(entry.get("minOffset")),
                                   _int(entry.get("maxOffset")), _int(entry.get("lastUpdateTimestamp"))))
    tps = doc.get("topicPutTps")
    return TopicStats(topic, tuple(sorted(offsets, key=lambda o: o.queue)),
                      None if tps is None else float(tps))


# -- consumer groups -----------------------------------------------------------------------------

#: 2.x renames the brokers' built-in groups in its list unless asked not to
SYS_PREFIX = "%SYS%"


def _epoch_ms(value: Any) -> int | None:
    """A Jackson ``Date``: ISO-8601 with an offset (``2026-11-22T23:01:37.346+00:00``) or epoch ms."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if not isinstance(value, str) or not value:
        return None
    import datetime as dt  # only for the cached group list

    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.timezone.utc)
    return int(parsed.timestamp() * 1000)


def group_summary(entry: Any, *, cached: bool = False) -> GroupSummary:
    """One ``GroupConsumeInfo`` of ``/consumer/groupList.query`` or ``group.refresh.all``; ``cached``: the
    entry is the 2.x dashboard's cache, built at its ``updateTime``."""
    doc = obj(entry, "GroupConsumeInfo")
    name = str(doc.get("group") or "")
    if name.startswith(SYS_PREFIX):
        name = name[len(SYS_PREFIX):]
    count = _int(doc.get("count"))
    version = doc.get("version")
    # diffTotal is -1 when the dashboard could not read the group's consume stats: unknown, not 0
    diff_total = _int(doc.get("diffTotal"))
    diff = diff_total if diff_total >= 0 else None
    return GroupSummary(
        group=name,
        clients=count,
        consume_type=doc.get("consumeType") if count else None,
        message_model=doc.get("messageModel") if count else None,
        version=str(version) if version and count else None,
        total_diff=diff,
        consume_tps=float(_int(doc.get("consumeTps"))),
        cached=cached,
        cached_at=_epoch_ms(doc.get("updateTime")) if cached else None,
    )


def is_system_summary(entry: Any) -> bool:
    doc = obj(entry, "GroupConsumeInfo")
    return doc.get("subGroupType") == "SYSTEM" or str(doc.get("group") or "").startswith(SYS_PREFIX)


def consumer_connection(data: Any) -> ConsumerConnection:
    """``/consumer/consumerConnection.query``: the remoting body's shape plus ``versionDesc``."""
    doc = obj(data, "ConsumerConnection")
    conns = []
    for c in seq(doc.get("connectionSet"), "connectionSet"):
        conn = obj(c, "Connection")
        version = conn.get("version")
        if version is None and conn.get("versionDesc"):
            version = version_ordinal(str(conn["versionDesc"]))
        conns.append(ClientConnection(str(conn.get("clientId", "")), str(conn.get("clientAddr", "")),
                                      str(conn.get("language", "")), _int(version)))
    subs = {str(topic): bodies.subscription(obj(value, "SubscriptionData"))
            for topic, value in obj(doc.get("subscriptionTable"), "subscriptionTable").items()}
    return ConsumerConnection(tuple(sorted(conns, key=lambda c: c.client_id)), dict(sorted(subs.items())),
                              doc.get("consumeType"), doc.get("messageModel"), doc.get("consumeFromWhere"))


def consumer_running_info(client_id: str, data: Any) -> ConsumerRunningInfo:
    doc = obj(data, "ConsumerRunningInfo")
    props = {str(k): str(v) for k, v in obj(doc.get("properties"), "properties").items()}
    subs = tuple(sorted((bodies.subscription(obj(s, "SubscriptionData"))
                         for s in seq(doc.get("subscriptionSet"), "subscriptionSet")),
                        key=lambda s: (s.topic, s.expression)))
    table = {message_queue(str(k)): bodies.process_queue_info(obj(v, "ProcessQueueInfo"))
             for k, v in obj(doc.get("mqTable"), "mqTable").items()}
    return ConsumerRunningInfo(client_id, props, subs, dict(sorted(table.items())),
                               consume_status_table(doc.get("statusTable")))


def consume_status_table(data: Any) -> dict[str, ConsumeStatus]:
    """A running info's ``statusTable`` (topic → ``ConsumeStatus``, Jackson's bean names: ``pullRT``,
    ``consumeOKTPS`` …): the client's own consume rates and failures. Absent (a client too old to
    keep them) it is empty, which the model reads as no rates reported."""
    table = {}
    for topic, value in obj(data or {}, "statusTable").items():
        row = obj(value, "ConsumeStatus")
        table[str(topic)] = ConsumeStatus(
            pull_rt=_float(row.get("pullRT")), pull_tps=_float(row.get("pullTPS")),
            consume_rt=_float(row.get("consumeRT")), consume_ok_tps=_float(row.get("consumeOKTPS")),
            consume_failed_tps=_float(row.get("consumeFailedTPS")),
            consume_failed_msgs=_int(row.get("consumeFailedMsgs")))
    return dict(sorted(table.items()))


def queue_progress(data: Any) -> list[QueueProgress]:
    """``/consumer/queryTopicByConsumer.query``: one ``TopicConsumerInfo`` per topic (per broker in
    2.x). ``QueueStatInfo`` has no pull offset, so ``pull_offset`` is None; ``owner`` is left to the
    caller (the dashboard's ``clientInfo`` is empty when any client's running info failed)."""
    rows: dict[MessageQueue, QueueProgress] = {}
    for topic_info in seq(data, "TopicConsumerInfo list"):
        info = obj(topic_info, "TopicConsumerInfo")
        topic = str(info.get("topic", ""))
        for q in seq(info.get("queueStatInfoList"), "queueStatInfoList"):
            stat = obj(q, "QueueStatInfo")
            mq = MessageQueue(topic, str(stat.get("brokerName", "")), _int(stat.get("queueId")))
            rows[mq] = QueueProgress(mq, _int(stat.get("brokerOffset")), _int(stat.get("consumerOffset")),
                                     None, _int(stat.get("lastTimestamp")),
                                     str(stat["clientInfo"]) if stat.get("clientInfo") else None)
    return [rows[mq] for mq in sorted(rows)]


def consume_stats(data: Any) -> ConsumeStats:
    """``/consumer/queryTopicByConsumer.query`` as one broker's ``ConsumeStats``: the rows of
    :func:`queue_progress` (no pull offset: ``QueueStatInfo`` has none). The reply carries no
    consume rate, so ``consume_tps`` is left at 0 (the dashboard's group list has the group's)."""
    offsets = {row.queue: OffsetEntry(row.broker_offset, row.consumer_offset, None, row.last_timestamp)
               for row in queue_progress(data)}
    return ConsumeStats(offsets)


def subscription_group_config(group: str, data: Any) -> SubscriptionGroupConfig:
    """A ``SubscriptionGroupConfig`` of ``/consumer/examineSubscriptionGroupConfig.query``."""
    doc = obj(data or {}, "SubscriptionGroupConfig")

    def flag(name: str, default: bool) -> bool:
        value = doc.get(name)
        return value if isinstance(value, bool) else default

    return SubscriptionGroupConfig(
        group_name=str(doc.get("groupName") or group),
        consume_enable=flag("consumeEnable", True),
        consume_broadcast_enable=flag("consumeBroadcastEnable", True),
        consume_message_orderly=flag("consumeMessageOrderly", False),
        retry_queue_nums=_int(doc.get("retryQueueNums"), 1),
        retry_max_times=_int(doc.get("retryMaxTimes"), 16),
        broker_id=_int(doc.get("brokerId"), 0),
        notify_consumer_ids_changed_enable=flag("notifyConsumerIdsChangedEnable", True),
    )


def message_view(data: Any, broker_of: Mapping[str, str]) -> tuple[Message, bool]:
    """A ``MessageView`` (``/message/viewMessage.query``'s ``messageView``, each entry of
    ``queryMessageByTopicAndKey``) as a :class:`~rmqctl.model.Message`, and whether its broker was
    known. Hosts arrive as Jackson writes an ``InetSocketAddress`` (``"127.0.0.1:10911"``); the
    broker is the one whose address is the store host (``broker_of``: address -> broker name).
    The body arrives as text (the dashboard decodes it as UTF-8), so a binary body is not
    byte-exact."""
    doc = obj(data, "MessageView")
    store_host = str(doc.get("storeHost") or "")
    host, _, port = store_host.rpartition(":")
    physical = _int(doc.get("commitLogOffset"))
    try:
        offset_id = encode_offset_message_id(host.strip("[]/"), int(port), physical)
    except ValueError:
        offset_id = ""
    broker = broker_of.get(store_host)
    props = doc.get("properties")
    body = doc.get("messageBody")
    message = Message(
        queue=MessageQueue(str(doc.get("topic") or ""), broker or "", _int(doc.get("queueId"))),
        queue_offset=_int(doc.get("queueOffset")), physical_offset=physical, offset_msg_id=offset_id,
        born_timestamp=_int(doc.get("bornTimestamp")), store_timestamp=_int(doc.get("storeTimestamp")),
        born_host=str(doc.get("bornHost") or ""), store_host=store_host,
        properties={str(k): str(v) for k, v in props.items()} if isinstance(props, Mapping) else {},
        body=body.encode("utf-8") if isinstance(body, str) else b"",
        reconsume_times=_int(doc.get("reconsumeTimes")), sys_flag=_int(doc.get("sysFlag")),
        flag=_int(doc.get("flag")), prepared_transaction_offset=_int(doc.get("preparedTransactionOffset")),
    )
    return message, broker is not None
