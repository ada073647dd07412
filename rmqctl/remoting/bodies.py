"""Request and response bodies of the remoting protocol: each decoder beside its encoder.

A decoder (``cluster_info``, ``consume_stats`` …) turns a fastjson body into model objects; the
encoder next to it (``encode_cluster_info`` …) writes those objects back exactly as a real broker,
name server or Java client writes them, and ``decode(encode(x)) == x`` (property-tested). Field
names are the Java bean property names (``brokerAddrTable``, ``droped`` …).

Decoding is lenient the way an operator tool must be: unknown fields are ignored, numbers that
arrive as strings are accepted, and both ``droped`` (Java) and ``dropped`` (Go) are read.
Anything structurally wrong raises :class:`~rmqctl.errors.ProtocolError`.

Encoding follows fastjson (``RemotingSerializable.encode``): bean properties alphabetically, null
properties omitted, enums as their names, ``Map<Long|Integer, …>`` keys unquoted
(``{0:"127.0.0.1:10911"}``) and ``Map<MessageQueue, …>`` keys as object literals
(``{{"brokerName":"b","queueId":0,"topic":"T"}:{…}}``). The one exception is the name server's
topic route for clients of version ≥ V4_9_4 or asking ``acceptStandardJsonOnly``: standard JSON
with quoted keys (``BrowserCompatible|QuoteFieldNames|MapSortField``). Bodies are built as strings
directly, not through a generic serializer, because the admin reads of a 2,000-group cluster must
stay fast; message-queue keys are cached.

Must not import the connection layer; only ``model``, ``errors`` and ``fastjson``.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

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
    RetryPolicy,
    Subscription,
    SubscriptionGroupConfig,
    TopicOffset,
    TopicRoute,
    TopicStats,
    parse_tag_expression,
    queue_of,
)
from rmqctl.records import dataclass
from rmqctl.remoting import fastjson
from rmqctl.remoting.fastjson import encode_string as _encode_string

_K = TypeVar("_K")
_V = TypeVar("_V")

# ---------------------------------------------------------------------------------------------
# Writing the fastjson dialect


def _s(text: str) -> str:
    """A JSON string literal, as ``json.dumps(text, ensure_ascii=False)`` writes it."""
    return _encode_string(text)


def _b(value: bool) -> str:
    return "true" if value else "false"


def java_double(value: float) -> str:
    """``Double.toString``: plain decimals in [1e-3, 1e7), otherwise ``d.dddE±n``."""
    if math.isnan(value) or math.isinf(value):
        return "null"  # fastjson writes non-finite doubles as null
    if value == 0:
        return "0.0"
    magnitude = abs(value)
    if 1e-3 <= magnitude < 1e7:
        text = repr(float(value))
        return text if "." in text or "e" in text else text + ".0"
    mantissa, _, exponent = f"{value:.16e}".partition("e")
    mantissa = mantissa.rstrip("0")
    if mantissa.endswith("."):
        mantissa += "0"
    return f"{mantissa}E{int(exponent)}"


@functools.lru_cache(maxsize=200_000)
def mq_key(topic: str, broker_name: str, queue_id: int) -> str:
    """A ``MessageQueue`` map key the way fastjson writes it."""
    return f'{{"brokerName":{_s(broker_name)},"queueId":{queue_id},"topic":{_s(topic)}}}'


def queue_key(mq: MessageQueue) -> str:
    """:func:`mq_key` of a :class:`~rmqctl.model.MessageQueue`."""
    return mq_key(mq.topic, mq.broker_name, mq.queue_id)


def data_version(counter: int, timestamp: int) -> str:
    """A ``DataVersion`` object."""
    return f'{{"counter":{counter},"stateVersion":0,"timestamp":{timestamp}}}'


# ---------------------------------------------------------------------------------------------
# Reading the (lenient) fastjson dialect


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _obj(value: Any, what: str) -> Mapping[Any, Any]:
    if type(value) is dict:  # what the decoder gives: checked first
        return value
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
    if type(value) is int:  # nearly always: checked first
        return value
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
    if type(value) is float and math.isfinite(value):  # nearly always: checked first
        return value
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
    if value is True or value is False:
        return value
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    if isinstance(value, (str, int)):
        return str(value).lower() == "true"
    raise errors.ProtocolError(f"{what}: expected true or false, got {_kind(value)}")


def _str(value: Any, what: str, default: str = "") -> str:
    if type(value) is str:  # nearly always: checked first
        return value
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


# ---------------------------------------------------------------------------------------------
# Bodies: each decoder, then its encoder


def message_queue(key: Any) -> MessageQueue:
    """A ``MessageQueue`` map key (object literal or its JSON-string form)."""
    if type(key) is fastjson.ObjectKey and len(key) == 3:
        # the key as brokers write it: its three fields, sorted by name, of the right types
        (n0, broker), (n1, queue_id), (n2, topic) = key
        if (n0 == "brokerName" and n1 == "queueId" and n2 == "topic" and type(broker) is str
                and type(queue_id) is int and type(topic) is str):
            return queue_of(topic, broker, queue_id)
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
        return queue_of(_str(data["topic"], "MessageQueue.topic"),
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


def _encode_broker_data(b: BrokerData, standard: bool) -> str:
    if standard:
        inner = ",".join(f'"{k}":{json.dumps(v)}' for k, v in sorted(b.addrs.items()))
        return (f'{{"brokerAddrs":{{{inner}}},"brokerName":{json.dumps(b.broker_name)},'
                f'"cluster":{json.dumps(b.cluster)},"enableActingMaster":false}}')
    inner = ",".join(f"{k}:{_s(v)}" for k, v in sorted(b.addrs.items()))
    return (f'{{"brokerAddrs":{{{inner}}},"brokerName":{_s(b.broker_name)},"cluster":{_s(b.cluster)},'
            f'"enableActingMaster":false}}')


def encode_cluster_info(info: ClusterInfo) -> bytes:
    """ClusterInfo (106): always plain fastjson, so ``brokerAddrs`` keys are unquoted."""
    brokers = ",".join(f"{_s(name)}:{_encode_broker_data(b, False)}" for name, b in info.brokers.items())
    clusters = ",".join(
        f"{_s(name)}:[{','.join(_s(b) for b in names)}]" for name, names in info.clusters.items()
    )
    return f'{{"brokerAddrTable":{{{brokers}}},"clusterAddrTable":{{{clusters}}}}}'.encode()


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


def encode_topic_route(route: TopicRoute, *, standard: bool) -> bytes:
    """TopicRouteData (105); ``standard`` for version ≥ 401 or ``acceptStandardJsonOnly``."""
    enc = json.dumps if standard else _s
    brokers = ",".join(_encode_broker_data(b, standard) for b in route.broker_datas)
    queues = ",".join(
        f'{{"brokerName":{enc(q.broker_name)},"perm":{q.perm},"readQueueNums":{q.read_queue_nums},'
        f'"topicSysFlag":{q.topic_sys_flag},"writeQueueNums":{q.write_queue_nums}}}'
        for q in route.queue_datas
    )
    order = f',"orderTopicConf":{enc(route.order_topic_conf)}' if route.order_topic_conf is not None else ""
    return (f'{{"brokerDatas":[{brokers}],"filterServerTable":{{}}{order},'
            f'"queueDatas":[{queues}]}}').encode()


def string_list(body: bytes, field: str) -> list[str]:
    data = parse_body(body, field)
    return [_str(v, field) for v in _list(data.get(field), field)]


def encode_string_list(field: str, values: Iterable[str], *, broker_addr: str | None = None) -> bytes:
    """TopicList / GroupList / GetConsumerListByGroupResponseBody: one list of strings (a topic
    list of one broker also names the broker)."""
    addr = f'"brokerAddr":{_s(broker_addr)},' if broker_addr else ""
    return f'{{{addr}{_s(field)}:[{",".join(_s(v) for v in values)}]}}'.encode()


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


def encode_topic_stats(stats: TopicStats) -> bytes:
    """TopicStatsTable (202)."""
    inner = ",".join(
        f'{queue_key(row.queue)}:{{"lastUpdateTimestamp":{row.last_update_timestamp},'
        f'"maxOffset":{row.max_offset},"minOffset":{row.min_offset}}}'
        for row in stats.offsets
    )
    tps = "" if stats.put_tps is None else f',"topicPutTps":{java_double(stats.put_tps)}'
    return f'{{"offsetTable":{{{inner}}}{tps}}}'.encode()


def subscription(data: Mapping[str, Any]) -> Subscription:
    """A ``SubscriptionData`` as a client sends it in a heartbeat or a broker reports it.

    The broker stores the tag and code sets the client computed and never recomputes them, so
    they are taken as sent; only a TAG subscription that carries no sets at all (a client other
    than Java's) has them parsed from its expression.
    """
    topic, expression, version = data.get("topic"), data.get("subString"), data.get("subVersion")
    expression_type, tags, codes = data.get("expressionType"), data.get("tagsSet"), data.get("codeSet")
    if (type(topic) is str and type(expression) is str and type(version) is int and type(expression_type) is str
            and expression_type and type(tags) is list and type(codes) is list
            and (not tags or all(type(t) is str for t in tags)) and (not codes or all(type(c) is int for c in codes))):
        # every field of the type Java writes (nearly always): taken as it is
        return Subscription(topic=topic, expression=expression, tags=tuple(tags), codes=tuple(codes),
                            sub_version=version, expression_type=expression_type)
    return _subscription_general(data)


def _subscription_general(data: Mapping[str, Any]) -> Subscription:
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


def encode_subscription(sub: Subscription) -> str:
    """SubscriptionData, as an object inside a body (``filterClassSource`` is not serialized)."""
    codes = ",".join(str(c) for c in sub.codes)
    tags = ",".join(_s(t) for t in sub.tags)
    return (f'{{"classFilterMode":false,"codeSet":[{codes}],"expressionType":{_s(sub.expression_type)},'
            f'"subString":{_s(sub.expression)},"subVersion":{sub.sub_version},"tagsSet":[{tags}],'
            f'"topic":{_s(sub.topic)}}}')


def _client_connection(c: Mapping[str, Any]) -> ClientConnection:
    return ClientConnection(
        client_id=_str(c.get("clientId"), "Connection.clientId"),
        client_addr=_str(c.get("clientAddr"), "Connection.clientAddr"),
        language=_str(c.get("language"), "Connection.language"),
        version=_int(c.get("version"), "Connection.version"),
    )


def _encode_client_connection(c: ClientConnection) -> str:
    return (f'{{"clientAddr":{_s(c.client_addr)},"clientId":{_s(c.client_id)},'
            f'"language":{_s(c.language)},"version":{c.version}}}')


def consumer_connection(body: bytes) -> ConsumerConnection:
    # plain JSON, which the general parser reads at the C decoder's speed: a one-pass reader of
    # its layout was measured slower
    data = parse_body(body, "ConsumerConnection")
    conns = tuple(sorted(
        (_client_connection(c) for c in _objects(data.get("connectionSet"), "connectionSet")),
        key=lambda c: c.client_id,
    ))
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


def _opt_field(name: str, value: str | None) -> str:
    return "" if value is None else f'{_s(name)}:{_s(value)},'


def encode_consumer_connection(conn: ConsumerConnection) -> bytes:
    """ConsumerConnection (203): live channels and the group's stored subscription table."""
    conns = ",".join(_encode_client_connection(c) for c in conn.connections)
    subs = ",".join(f"{_s(t)}:{encode_subscription(s)}" for t, s in conn.subscriptions.items())
    return (f'{{"connectionSet":[{conns}],{_opt_field("consumeFromWhere", conn.consume_from_where)}'
            f'{_opt_field("consumeType", conn.consume_type)}{_opt_field("messageModel", conn.message_model)}'
            f'"subscriptionTable":{{{subs}}}}}').encode()


def producer_connection(body: bytes) -> tuple[ClientConnection, ...]:
    """ProducerConnection (204): the producer group's live channels, in the order written."""
    data = parse_body(body, "ProducerConnection")
    return tuple(_client_connection(c) for c in _objects(data.get("connectionSet"), "connectionSet"))


def encode_producer_connection(connections: Iterable[ClientConnection]) -> bytes:
    return f'{{"connectionSet":[{",".join(_encode_client_connection(c) for c in connections)}]}}'.encode()


def consume_stats(body: bytes) -> ConsumeStats:
    """ConsumeStats (208) of one group, pull offsets kept: read in one pass when laid out as
    brokers write it (see :func:`_object_as_written`), by the general parser otherwise."""
    text = _utf8(body)
    if text is not None:
        found = _consume_stats_as_written(text)
        if found is not None:
            return found
    return _consume_stats_general(body)


def _consume_stats_general(body: bytes) -> ConsumeStats:
    return _consume_stats_data(parse_body(body, "ConsumeStats"), pull_offsets=True)


def encode_consume_stats(stats: ConsumeStats) -> bytes:
    """ConsumeStats (208): OffsetWrapper per queue, MessageQueue keys."""
    inner = ",".join(
        f'{queue_key(mq)}:{{"brokerOffset":{entry.broker_offset},"consumerOffset":{entry.consumer_offset},'
        f'"lastTimestamp":{entry.last_timestamp}'
        + ("" if entry.pull_offset is None else f',"pullOffset":{entry.pull_offset}') + "}"
        for mq, entry in stats.offsets.items()
    )
    return f'{{"consumeTps":{java_double(stats.consume_tps)},"offsetTable":{{{inner}}}}}'.encode()


def _consume_stats_data(data: Mapping[Any, Any], *, pull_offsets: bool) -> ConsumeStats:
    offsets: dict[MessageQueue, OffsetEntry] = {}
    for key, value in _obj(data.get("offsetTable"), "offsetTable").items():
        entry = _obj(value, "OffsetWrapper")
        pull = entry.get("pullOffset") if pull_offsets else None
        offsets[message_queue(key)] = OffsetEntry(
            broker_offset=_int(entry.get("brokerOffset"), "OffsetWrapper.brokerOffset"),
            consumer_offset=_int(entry.get("consumerOffset"), "OffsetWrapper.consumerOffset"),
            pull_offset=None if pull is None else _int(pull, "OffsetWrapper.pullOffset"),
            last_timestamp=_int(entry.get("lastTimestamp"), "OffsetWrapper.lastTimestamp"),
        )
    return ConsumeStats(offsets, _float(data.get("consumeTps"), "consumeTps"))


def broker_consume_stats(body: bytes) -> dict[str, ConsumeStats]:
    """ConsumeStatsList (317): every group of the broker's subscription-group table, each with
    one ConsumeStats per topic, merged here into one per group (TPS summed).

    The broker never fills ``pullOffset`` in this answer (a 5.x broker writes 0, which would read
    as nothing pulled): it is decoded as unknown.

    A body laid out as brokers write it (fastjson's field order, no spaces, strings without
    escapes) is read in one pass, entry by entry, straight into the model; anything else, and
    anything wrong, takes the general parser, which gives the same result or names the error."""
    text = _utf8(body)
    if text is not None:
        found = _broker_consume_stats_as_written(text)
        if found is not None:
            return found
    return _broker_consume_stats_general(body)


def _utf8(body: bytes) -> str | None:
    """The body's text, None when it is empty or not UTF-8 (the general path names that)."""
    if not body:
        return None
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        return None


#: the patterns below are compiled on first use (``re`` keeps them): ``group show`` never needs them
_DOCUMENT_END = r"\}[ \t\n\r]*\Z"
#: a field's name without escapes, and its colon
_FIELD = r'"([^"\\\x00-\x1f]*)":'


def _fields_before(text: str, read: str, opener: str) -> int | None:
    """Where the value of the body's field ``read`` starts, just after its ``opener``, the
    fields before it read (as the general path reads them, and dropped as it drops them); None
    when the body does not open so."""
    if not text.startswith("{"):
        return None
    pos = 1
    scanner = fastjson.Scanner(text)
    field_at = re.compile(_FIELD).match
    while True:
        match = field_at(text, pos)
        if match is None:
            return None
        pos = match.end()
        if match.group(1) == read:
            return pos + 1 if text.startswith(opener, pos) else None
        start = pos
        try:
            _, pos = scanner.value_at(pos)
        except errors.ProtocolError:
            return None
        if text.count("[", start, pos) + text.count("{", start, pos) >= fastjson.MAX_DEPTH:
            return None  # it may nest a level too deep inside the body: the general path judges
        if not text.startswith(",", pos):
            return None
        pos += 1


def _rest_as_written(text: str, pos: int, read: str) -> bool:
    """Whether the object fields after ``pos`` (where the field ``read`` ended) close the body
    and leave the general parser nothing else to say: none, or further fields (read here and
    dropped, as the general path drops them) that parse and do not name ``read`` again."""
    if re.compile(_DOCUMENT_END).match(text, pos) is not None:
        return True
    if not text.startswith(",", pos):
        return False
    try:
        rest = fastjson.loads("{" + text[pos + 1:])
    except errors.ProtocolError:
        return False
    return isinstance(rest, dict) and read not in rest


#: pieces of the layout fastjson writes: a string without escapes or control characters, an
#: integer of at most 18 digits (a Java long has 19: longer ones take the general path) and a
#: number, each a group
_W_STR = r'"([^"\\\x00-\x1f]*)"'
_W_LONG = r"-?(?:0|[1-9][0-9]{0,17})"
_W_INT = f"({_W_LONG})"
_W_NUM = r"(-?(?:0|[1-9][0-9]{0,17})(?:\.[0-9]{1,40})?(?:[eE][-+]?[0-9]{1,3})?)"
_CSL_GROUP = r"\{" + _W_STR + r":\["
_CSL_STATS = r'\{"consumeTps":' + _W_NUM + r',"offsetTable":\{'
#: one ``MessageQueue`` key and its ``OffsetWrapper``, then the comma or brace after it
_CSL_ENTRY = (
    r'\{"brokerName":' + _W_STR + r',"queueId":' + _W_INT + r',"topic":' + _W_STR + r"\}:"
    r'\{"brokerOffset":' + _W_INT + r',"consumerOffset":' + _W_INT + r',"lastTimestamp":' + _W_INT
    + r'(?:,"pullOffset":' + _W_LONG + r")?\}([,}])")


def _written_number(token: str) -> float:
    """A JSON number token as the general path reads ``consumeTps``: a fraction or exponent as
    a float, an integer as an int, then as a float."""
    if "." in token or "e" in token or "E" in token:
        return float(token)
    return float(int(token))


def _broker_consume_stats_as_written(text: str) -> dict[str, ConsumeStats] | None:
    """:func:`broker_consume_stats` of a body in the layout brokers write, read in one pass; None
    at the first thing outside that layout (the general path then reads the body)."""
    at = _fields_before(text, "consumeStatsList", "[")
    if at is None:
        return None
    pos = at
    out: dict[str, ConsumeStats] = {}
    group_at, stats_at = re.compile(_CSL_GROUP).match, re.compile(_CSL_STATS).match
    entry_at = re.compile(_CSL_ENTRY).match
    startswith = text.startswith
    queue, entry_of = queue_of, OffsetEntry
    if startswith("]", pos):
        pos += 1
    else:
        while True:
            match = group_at(text, pos)
            if match is None:
                return None
            group = match.group(1)
            if group.startswith("{"):
                return None  # the general parser may read such a key as an object
            pos = match.end()
            offsets: dict[MessageQueue, OffsetEntry] = {}
            tps = 0.0
            if startswith("]", pos):
                pos += 1
            else:
                while True:
                    match = stats_at(text, pos)
                    if match is None:
                        return None
                    value = _written_number(match.group(1))
                    if not math.isfinite(value):
                        return None
                    tps += value
                    pos = match.end()
                    if startswith("}", pos):
                        pos += 1
                    else:
                        while True:
                            match = entry_at(text, pos)
                            if match is None:
                                return None
                            broker, queue_id, topic, broker_offset, consumer_offset, last, after = match.groups()
                            offsets[queue(topic, broker, int(queue_id))] = entry_of(
                                int(broker_offset), int(consumer_offset), None, int(last))
                            pos = match.end()
                            if after == "}":
                                break
                    if not startswith("}", pos):
                        return None
                    pos += 1
                    if startswith(",", pos):
                        pos += 1
                        continue
                    if startswith("]", pos):
                        pos += 1
                        break
                    return None
            if not startswith("}", pos):
                return None
            pos += 1
            prior = out.get(group)
            if prior is not None:  # merged as the general path merges a group listed twice
                offsets = {**prior.offsets, **offsets}
                tps += prior.consume_tps
            out[group] = ConsumeStats(offsets, tps)
            if startswith(",", pos):
                pos += 1
                continue
            if startswith("]", pos):
                pos += 1
                break
            return None
    return out if _rest_as_written(text, pos, "consumeStatsList") else None


# ---------------------------------------------------------------------------------------------
# Per-group answers read in one pass
#
# A round of the exporter reads, per group, its ConsumeStats (208) from every broker and each
# client's ConsumerRunningInfo (307): thousands of small bodies; and every broker's group configs
# (201), thousands of entries. Laid out as Java's fastjson writes them, each is read here in one
# pass straight into the model; anything else takes the general parser, which gives the same
# result or names the error. (A ConsumerConnection, 203, is plain JSON that the general parser
# reads at the C decoder's speed.)

#: a string of the layout, as a piece of a larger pattern (no group)
_W_TEXT = r'"[^"\\\x00-\x1f]*"'
_W_BOOL = r"(true|false)"
#: a ``SubscriptionData`` as Java writes it (its fields sorted by name); six groups: codes,
#: expression type, expression, version, tags, topic
_W_SUBSCRIPTION = (
    r'\{"classFilterMode":(?:true|false),"codeSet":\[((?:' + _W_LONG + ",)*" + _W_LONG + r')?\],"expressionType":'
    + _W_STR + r',"subString":' + _W_STR + r',"subVersion":' + _W_INT + r',"tagsSet":\[((?:' + _W_TEXT + ",)*"
    + _W_TEXT + r')?\],"topic":' + _W_STR + r"\}")
#: one ``mqTable`` entry of a ConsumerRunningInfo (a ``MessageQueue`` key, a ``ProcessQueueInfo``),
#: then the comma or brace after it
_RI_QUEUE = (
    r'\{"brokerName":' + _W_STR + r',"queueId":' + _W_INT + r',"topic":' + _W_STR + r'\}:\{"cachedMsgCount":'
    + _W_INT + r',"cachedMsgMaxOffset":' + _W_INT + r',"cachedMsgMinOffset":' + _W_INT + r',"cachedMsgSizeInMiB":'
    + _W_INT + r',"commitOffset":' + _W_INT + r',"droped":' + _W_BOOL + r',"lastConsumeTimestamp":' + _W_INT
    + r',"lastLockTimestamp":' + _W_INT + r',"lastPullTimestamp":' + _W_INT + r',"locked":' + _W_BOOL
    + r'(?:,"transactionMsgCount":' + _W_LONG + r',"transactionMsgMaxOffset":' + _W_LONG
    + r',"transactionMsgMinOffset":' + _W_LONG + r')?,"tryUnlockTimes":' + _W_INT + r"\}([,}])")
#: one ``statusTable`` entry (a topic and its ``ConsumeStatus``), then the comma or brace after it
_RI_STATUS = (
    _W_STR + r':\{"consumeFailedMsgs":' + _W_INT + r',"consumeFailedTPS":' + _W_NUM + r',"consumeOKTPS":' + _W_NUM
    + r',"consumeRT":' + _W_NUM + r',"pullRT":' + _W_NUM + r',"pullTPS":' + _W_NUM + r"\}([,}])")
#: one ``offsetTable`` entry of a group's ConsumeStats, its pull offset kept, then the comma or
#: brace after it
_CS_ENTRY = (
    r'\{"brokerName":' + _W_STR + r',"queueId":' + _W_INT + r',"topic":' + _W_STR + r"\}:"
    r'\{"brokerOffset":' + _W_INT + r',"consumerOffset":' + _W_INT + r',"lastTimestamp":' + _W_INT
    + r'(?:,"pullOffset":' + _W_INT + r")?\}([,}])")


#: a piece of a small JSON object: a character outside strings and brackets, a string without a
#: brace or an escape, or a flat array
_W_SMALL_PIECE = r'(?:[^{}"\[\]]|"[^"\\\x00-\x1f{}]*"|\[[^{}"\[\]]*\])*'
#: a JSON object of at most three levels (a group's retry policy): objects in it hold no object
_W_SMALL_OBJECT = r"\{" + _W_SMALL_PIECE + r"(?:\{" + _W_SMALL_PIECE + r"\}" + _W_SMALL_PIECE + r")*\}"
#: one entry of a 5.x broker's ``subscriptionGroupTable`` (a group's name, its
#: ``SubscriptionGroupConfig``), then the comma or brace after it; groups: key, attributes,
#: broker id, broadcast, enable, orderly, name, retry policy, notify, deliveries, retry queues, end
_SG_ENTRY = (
    _W_STR + r':\{"attributes":\{((?:' + _W_TEXT + ":" + _W_TEXT + ",)*" + _W_TEXT + ":" + _W_TEXT
    + r')?\},"brokerId":' + _W_INT + r',"consumeBroadcastEnable":' + _W_BOOL + r',"consumeEnable":' + _W_BOOL
    + r',"consumeFromMinEnable":(?:true|false),"consumeMessageOrderly":' + _W_BOOL + r',"consumeTimeoutMinute":'
    + _W_LONG + r',"groupName":' + _W_STR + r'(?:,"groupRetryPolicy":(' + _W_SMALL_OBJECT + r'))?,"groupSysFlag":'
    + _W_LONG + r',"notifyConsumerIdsChangedEnable":' + _W_BOOL + r',"retryMaxTimes":' + _W_INT
    + r',"retryQueueNums":' + _W_INT + r',"whichBrokerWhenConsumeSlowly":' + _W_LONG + r"\}([,}])")


class _Layouts:
    """The patterns above, each compiled on first use (``group show`` needs none of them) and then
    kept as an attribute: a reader of thousands of bodies a round looks its matcher up at the
    cost of an attribute."""

    _PATTERNS = {"field": _FIELD, "number": _W_NUM, "queue": _RI_QUEUE, "status": _RI_STATUS,
                 "offset": _CS_ENTRY, "subscription": _W_SUBSCRIPTION + r"([,\]])", "group_config": _SG_ENTRY}

    def __getattr__(self, name: str) -> Callable[[str, int], re.Match[str] | None]:
        matcher = re.compile(self._PATTERNS[name]).match
        setattr(self, name, matcher)
        return matcher


_LAYOUT = _Layouts()

#: reads one field's value where it starts in the text: the value and the position after it, or
#: None when the value is not laid out as written
_FieldReader = Callable[[str, int], "tuple[Any, int] | None"]


def _object_as_written(text: str, readers: Mapping[str, _FieldReader]) -> dict[str, Any] | None:
    """The values of the body's fields that ``readers`` name, each read where it starts by its
    reader; every other field read as the general parser reads it and dropped, as the general
    path drops it. The fields may come in any order; a field missing is missing here too.

    None at anything outside the layout Java's fastjson writes (the general path then reads the
    body): text that is not one object of fields without spaces, a field named twice (the general
    path keeps the last), a name with an escape or opening with a brace (the general parser may
    read it as an object), a reader's None, or a value the general parser would not read."""
    if not text.startswith('{"'):
        return None
    pos = 1
    found: dict[str, Any] = {}
    seen: set[str] = set()
    scanner: fastjson.Scanner | None = None
    field_at = _LAYOUT.field
    while True:
        match = field_at(text, pos)
        if match is None:
            return None
        name = match.group(1)
        if name in seen or name.startswith("{"):
            return None
        seen.add(name)
        pos = match.end()
        reader = readers.get(name)
        if reader is not None:
            read = reader(text, pos)
            if read is None:
                return None
            found[name], pos = read
        else:
            if scanner is None:
                scanner = fastjson.Scanner(text)
            start = pos
            try:
                _, pos = scanner.value_at(pos)
            except errors.ProtocolError:
                return None
            if text.count("[", start, pos) + text.count("{", start, pos) >= fastjson.MAX_DEPTH:
                return None  # it may nest a level too deep inside the body: the general path judges
        if not text.startswith(",", pos):
            break
        pos += 1
    if pos == len(text) - 1 and text.endswith("}") or re.compile(_DOCUMENT_END).match(text, pos) is not None:
        return found
    return None


def _w_number(token: str) -> float | None:
    """A number of the layout as :func:`_float` reads it; None when it is not finite (the
    general path names that)."""
    value = _written_number(token)
    return value if math.isfinite(value) else None


#: subscriptions read from running infos, by their written fields: a client tells the same ones
#: round after round, and one object for them compares by identity (emptied when full)
_SUBSCRIPTIONS: dict[tuple[str, ...], Subscription] = {}


def _w_subscription(groups: tuple[str, ...]) -> Subscription | None:
    """The subscription a :data:`_W_SUBSCRIPTION` match holds (its six groups), as
    :func:`subscription` reads it; None for a blank expression type (read otherwise there)."""
    found = _SUBSCRIPTIONS.get(groups)
    if found is not None:
        return found
    codes, expression_type, expression, version, tags, topic = groups
    if not expression_type:
        return None
    found = Subscription(topic=topic, expression=expression,
                         tags=tuple(tags[1:-1].split('","')) if tags else (),
                         codes=tuple(int(code) for code in codes.split(",")) if codes else (),
                         sub_version=int(version), expression_type=expression_type)
    if len(_SUBSCRIPTIONS) >= 1 << 14:
        _SUBSCRIPTIONS.clear()
    _SUBSCRIPTIONS[groups] = found
    return found


def _w_subscription_list(text: str, pos: int) -> tuple[list[Subscription], int] | None:
    """A JSON array of subscriptions (``subscriptionSet``)."""
    if not text.startswith("[", pos):
        return None
    pos += 1
    out: list[Subscription] = []
    if text.startswith("]", pos):
        return out, pos + 1
    sub_at = _LAYOUT.subscription
    while True:
        match = sub_at(text, pos)
        if match is None:
            return None
        groups = match.groups()
        sub = _w_subscription(groups[:6])
        if sub is None:
            return None
        out.append(sub)
        pos = match.end()
        if groups[6] == "]":
            return out, pos


def _w_properties(text: str, pos: int) -> tuple[dict[str, str], int] | None:
    """A map of strings (``properties``), read as the general parser reads it; None when a key
    or value is not a string, or a key opens with a brace (the general parser may read it as an
    object)."""
    if not text.startswith("{", pos):
        return None
    try:
        value, end = fastjson.Scanner(text).value_at(pos)
    except errors.ProtocolError:
        return None
    if type(value) is not dict:
        return None
    # the C decoder's keys are strings; a key opening with a brace follows a brace or a comma
    read = text[pos:end]
    if ',"{' in read or read.startswith('{"{') or not set(map(type, value.values())) <= {str}:
        return None
    return value, end  # strings only: one level deep


def _w_queue_table(text: str, pos: int) -> tuple[dict[MessageQueue, ProcessQueueInfo], int] | None:
    """``mqTable``: each queue the client holds and its process-queue state, in the queues'
    order (the model's)."""
    if not text.startswith("{", pos):
        return None
    pos += 1
    out: dict[MessageQueue, ProcessQueueInfo] = {}
    if text.startswith("}", pos):
        return out, pos + 1
    entry_at = _LAYOUT.queue
    queue, info = queue_of, ProcessQueueInfo
    # Java clients keep it in a TreeMap: in the queues' order already, told here for ASCII names
    # (whose order is Java's) without the sort the model's comparison would cost
    ordered, last = True, ("", "", -1)
    while True:
        match = entry_at(text, pos)
        if match is None:
            return None
        (broker, queue_id, topic, cached, cached_max, cached_min, cached_mib, commit, dropped, consumed, locked_at,
         pulled, locked, unlocks, after) = match.groups()
        number = int(queue_id)
        if ordered:
            here = (topic, broker, number)
            ordered = last < here and topic.isascii() and broker.isascii()
            last = here
        out[queue(topic, broker, number)] = info(
            int(commit), int(cached), int(cached_min), int(cached_max), int(cached_mib), locked == "true",
            dropped == "true", int(unlocks), int(locked_at), int(pulled), int(consumed))
        pos = match.end()
        if after == "}":
            return (out if ordered else dict(sorted(out.items()))), pos


def _w_status_table(text: str, pos: int) -> tuple[dict[str, ConsumeStatus], int] | None:
    """``statusTable``: each topic's rates."""
    if not text.startswith("{", pos):
        return None
    pos += 1
    out: dict[str, ConsumeStatus] = {}
    if text.startswith("}", pos):
        return out, pos + 1
    entry_at = _LAYOUT.status
    while True:
        match = entry_at(text, pos)
        if match is None:
            return None
        topic, failed_msgs, failed_tps, ok_tps, consume_rt, pull_rt, pull_tps, after = match.groups()
        pull_rt_, pull_tps_, consume_rt_, ok_tps_, failed_tps_ = (
            _w_number(pull_rt), _w_number(pull_tps), _w_number(consume_rt), _w_number(ok_tps), _w_number(failed_tps))
        if (pull_rt_ is None or pull_tps_ is None or consume_rt_ is None or ok_tps_ is None or failed_tps_ is None
                or topic.startswith("{")):
            return None
        out[topic] = ConsumeStatus(pull_rt_, pull_tps_, consume_rt_, ok_tps_, failed_tps_, int(failed_msgs))
        pos = match.end()
        if after == "}":
            return out, pos


_RUNNING_INFO_FIELDS: dict[str, _FieldReader] = {
    "properties": _w_properties, "subscriptionSet": _w_subscription_list, "mqTable": _w_queue_table,
    "statusTable": _w_status_table}


def _running_info_as_written(client_id: str, text: str) -> ConsumerRunningInfo | None:
    """:func:`consumer_running_info` of a body in the layout Java clients write, read in one
    pass; None at the first thing outside that layout."""
    found = _object_as_written(text, _RUNNING_INFO_FIELDS)
    if found is None:
        return None
    subs = found.get("subscriptionSet", ())
    table = found.get("mqTable", {})
    status = found.get("statusTable", {})
    return ConsumerRunningInfo(client_id, found.get("properties", {}),
                               tuple(sorted(subs, key=lambda s: (s.topic, s.expression))),
                               table, dict(sorted(status.items())))


def _w_offset_table(text: str, pos: int) -> tuple[dict[MessageQueue, OffsetEntry], int] | None:
    """A group's ``offsetTable`` (208), pull offsets kept (None where not written)."""
    if not text.startswith("{", pos):
        return None
    pos += 1
    out: dict[MessageQueue, OffsetEntry] = {}
    if text.startswith("}", pos):
        return out, pos + 1
    entry_at = _LAYOUT.offset
    queue, entry_of = queue_of, OffsetEntry
    while True:
        match = entry_at(text, pos)
        if match is None:
            return None
        broker, queue_id, topic, broker_offset, consumer_offset, last, pull, after = match.groups()
        out[queue(topic, broker, int(queue_id))] = entry_of(
            int(broker_offset), int(consumer_offset), None if pull is None else int(pull), int(last))
        pos = match.end()
        if after == "}":
            return out, pos


def _w_tps(text: str, pos: int) -> tuple[float, int] | None:
    match = _LAYOUT.number(text, pos)
    if match is None:
        return None
    value = _w_number(match.group(1))
    return None if value is None else (value, match.end())


_CONSUME_STATS_FIELDS: dict[str, _FieldReader] = {"consumeTps": _w_tps, "offsetTable": _w_offset_table}


def _consume_stats_as_written(text: str) -> ConsumeStats | None:
    """:func:`consume_stats` of a body in the layout brokers write, read in one pass; None at
    the first thing outside that layout."""
    found = _object_as_written(text, _CONSUME_STATS_FIELDS)
    if found is None:
        return None
    return ConsumeStats(found.get("offsetTable", {}), found.get("consumeTps", 0.0))


def _broker_consume_stats_general(body: bytes) -> dict[str, ConsumeStats]:
    data = parse_body(body, "ConsumeStatsList")
    out: dict[str, ConsumeStats] = {}
    for item in _objects(data.get("consumeStatsList"), "consumeStatsList"):
        for name, per_topic in item.items():
            group = _str(name, "consumeStatsList key")
            offsets: dict[MessageQueue, OffsetEntry] = {}
            tps = 0.0
            for topic_stats in _objects(per_topic, "ConsumeStats"):
                stats = _consume_stats_data(topic_stats, pull_offsets=False)
                offsets.update(stats.offsets)
                tps += stats.consume_tps
            if group in out:  # the broker lists each group once; merged all the same
                offsets = {**out[group].offsets, **offsets}
                tps += out[group].consume_tps
            out[group] = ConsumeStats(offsets, tps)
    return out


def encode_broker_consume_stats(broker_addr: str,
                                groups: Iterable[tuple[str, Iterable[ConsumeStats]]]) -> bytes:
    """ConsumeStatsList as ``fetchAllConsumeStatsInBroker`` writes it: one map per group, one
    ConsumeStats per topic, ``pullOffset`` left at 0, and the totals (the in-flight total is then
    minus the consumer offsets, as the broker computes it)."""
    total = inflight = 0
    parts = []
    for group, per_topic in groups:
        topics = []
        for stats in per_topic:
            for e in stats.offsets.values():
                total += e.broker_offset - e.consumer_offset
                inflight += (e.pull_offset or 0) - e.consumer_offset
            topics.append(encode_consume_stats(stats).decode())
        parts.append(f"{{{_s(group)}:[{','.join(topics)}]}}")
    return (f'{{"brokerAddr":{_s(broker_addr)},"consumeStatsList":[{",".join(parts)}],'
            f'"totalDiff":{total},"totalInflightDiff":{inflight}}}').encode()


def process_queue_info(data: Mapping[str, Any]) -> ProcessQueueInfo:
    get = data.get
    return ProcessQueueInfo(
        commit_offset=_int(get("commitOffset"), "ProcessQueueInfo.commitOffset"),
        cached_msg_count=_int(get("cachedMsgCount"), "ProcessQueueInfo.cachedMsgCount"),
        cached_msg_min_offset=_int(get("cachedMsgMinOffset"), "ProcessQueueInfo.cachedMsgMinOffset"),
        cached_msg_max_offset=_int(get("cachedMsgMaxOffset"), "ProcessQueueInfo.cachedMsgMaxOffset"),
        cached_msg_size_mib=_int(get("cachedMsgSizeInMiB"), "ProcessQueueInfo.cachedMsgSizeInMiB"),
        locked=_bool(get("locked"), "ProcessQueueInfo.locked"),
        dropped=_bool(get("droped", get("dropped")), "ProcessQueueInfo.droped"),
        try_unlock_times=_int(get("tryUnlockTimes"), "ProcessQueueInfo.tryUnlockTimes"),
        last_lock_timestamp=_int(get("lastLockTimestamp"), "ProcessQueueInfo.lastLockTimestamp"),
        last_pull_timestamp=_int(get("lastPullTimestamp"), "ProcessQueueInfo.lastPullTimestamp"),
        last_consume_timestamp=_int(get("lastConsumeTimestamp"), "ProcessQueueInfo.lastConsumeTimestamp"),
    )


def encode_process_queue_info(pq: ProcessQueueInfo) -> str:
    return (f'{{"cachedMsgCount":{pq.cached_msg_count},"cachedMsgMaxOffset":{pq.cached_msg_max_offset},'
            f'"cachedMsgMinOffset":{pq.cached_msg_min_offset},"cachedMsgSizeInMiB":{pq.cached_msg_size_mib},'
            f'"commitOffset":{pq.commit_offset},"droped":{_b(pq.dropped)},'
            f'"lastConsumeTimestamp":{pq.last_consume_timestamp},"lastLockTimestamp":{pq.last_lock_timestamp},'
            f'"lastPullTimestamp":{pq.last_pull_timestamp},"locked":{_b(pq.locked)},'
            f'"transactionMsgCount":0,"transactionMsgMaxOffset":0,"transactionMsgMinOffset":0,'
            f'"tryUnlockTimes":{pq.try_unlock_times}}}')


def consumer_running_info(client_id: str, body: bytes) -> ConsumerRunningInfo:
    """ConsumerRunningInfo (307), written by the client: read in one pass when laid out as Java
    clients write it (see :func:`_object_as_written`; the fields the model does not keep, such as
    ``jstack`` or ``mqPopTable``, read and dropped), by the general parser otherwise."""
    text = _utf8(body)
    if text is not None:
        found = _running_info_as_written(client_id, text)
        if found is not None:
            return found
    return _consumer_running_info_general(client_id, body)


def _consumer_running_info_general(client_id: str, body: bytes) -> ConsumerRunningInfo:
    data = parse_body(body, "ConsumerRunningInfo")
    raw_props = _obj(data.get("properties"), "properties")
    props: dict[str, str] = dict(raw_props)
    if not all(type(k) is str and type(v) is str for k, v in props.items()):
        props = {_str(k, "properties key"): _str(v, "properties") for k, v in raw_props.items()}
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


#: the properties written last, by their items: a client's properties do not change while it runs
_PROPERTIES_JSON: dict[tuple[tuple[str, str], ...], str] = {}


def _properties_json(properties: Mapping[str, str]) -> str:
    """The entries of a running info's ``properties``, sorted, as JSON writes them."""
    key = tuple(properties.items())
    written = _PROPERTIES_JSON.get(key)
    if written is None:
        written = ",".join(f"{_s(k)}:{_s(v)}" for k, v in sorted(key))
        if len(_PROPERTIES_JSON) >= 4096:
            _PROPERTIES_JSON.clear()
        _PROPERTIES_JSON[key] = written
    return written


def encode_consumer_running_info(info: ConsumerRunningInfo, *, jstack: str | None = None) -> bytes:
    """ConsumerRunningInfo (307), as the Java consumer writes it: subscriptions and queues in the
    order given (the Java client's are a TreeSet and a TreeMap), properties sorted."""
    parts = []
    if jstack is not None:
        parts.append(f'"jstack":{_s(jstack)}')
    parts.append('"mqPopTable":{}')
    mqs = ",".join(f"{queue_key(mq)}:{encode_process_queue_info(pq)}" for mq, pq in info.mq_table.items())
    parts.append(f'"mqTable":{{{mqs}}}')
    parts.append(f'"properties":{{{_properties_json(info.properties)}}}')
    status = ",".join(
        f'{_s(topic)}:{{"consumeFailedMsgs":{st.consume_failed_msgs},'
        f'"consumeFailedTPS":{java_double(st.consume_failed_tps)},"consumeOKTPS":{java_double(st.consume_ok_tps)},'
        f'"consumeRT":{java_double(st.consume_rt)},"pullRT":{java_double(st.pull_rt)},'
        f'"pullTPS":{java_double(st.pull_tps)}}}'
        for topic, st in sorted(info.status.items())
    )
    parts.append(f'"statusTable":{{{status}}}')
    parts.append(f'"subscriptionSet":[{",".join(encode_subscription(s) for s in info.subscriptions)}]')
    parts.append('"userConsumerInfo":{}')
    return ("{" + ",".join(parts) + "}").encode()


def _group_config(cfg: Mapping[Any, Any], default_name: str) -> SubscriptionGroupConfig:
    get = cfg.get
    name, enable, broadcast, orderly = (get("groupName"), get("consumeEnable"), get("consumeBroadcastEnable"),
                                        get("consumeMessageOrderly"))
    queues, deliveries, broker_id, notify, attributes = (get("retryQueueNums"), get("retryMaxTimes"), get("brokerId"),
                                                         get("notifyConsumerIdsChangedEnable"), get("attributes"))
    if (type(name) is str and type(enable) is bool and type(broadcast) is bool and type(orderly) is bool
            and type(queues) is int and type(deliveries) is int and type(broker_id) is int and type(notify) is bool
            and type(attributes) is dict):
        # every field of the type Java writes (nearly always): taken as it is
        return SubscriptionGroupConfig(
            group_name=name, consume_enable=enable, consume_broadcast_enable=broadcast,
            consume_message_orderly=orderly, retry_queue_nums=queues, retry_max_times=deliveries,
            broker_id=broker_id, notify_consumer_ids_changed_enable=notify,
            retry_policy=_retry_policy(get("groupRetryPolicy")), lite_bind_topic=_lite_bind_topic(attributes))
    return _group_config_general(cfg, default_name)


def _group_config_general(cfg: Mapping[Any, Any], default_name: str) -> SubscriptionGroupConfig:
    def flag(field: str, default: bool) -> bool:
        return _bool(cfg.get(field), "SubscriptionGroupConfig." + field, default)

    def num(field: str, default: int) -> int:
        return _int(cfg.get(field), "SubscriptionGroupConfig." + field, default)

    return SubscriptionGroupConfig(
        group_name=_str(cfg.get("groupName"), "SubscriptionGroupConfig.groupName", default_name),
        consume_enable=flag("consumeEnable", True),
        consume_broadcast_enable=flag("consumeBroadcastEnable", True),
        consume_message_orderly=flag("consumeMessageOrderly", False),
        retry_queue_nums=num("retryQueueNums", 1),
        retry_max_times=num("retryMaxTimes", 16),
        broker_id=num("brokerId", 0),
        notify_consumer_ids_changed_enable=flag("notifyConsumerIdsChangedEnable", True),
        retry_policy=_retry_policy(cfg.get("groupRetryPolicy")),
        lite_bind_topic=_lite_bind_topic(_obj(cfg.get("attributes"), "SubscriptionGroupConfig.attributes")),
    )


#: 5.5's group attribute naming the LITE topic a lite group consumes (``SubscriptionGroupAttributes``)
LITE_BIND_TOPIC = "lite.bind.topic"


def _lite_bind_topic(attributes: Mapping[Any, Any]) -> str | None:
    """The group's lite binding: the broker stores attribute keys bare, an update request names
    them with a leading '+'; a blank value binds nothing (as the broker reads it)."""
    for key in (LITE_BIND_TOPIC, "+" + LITE_BIND_TOPIC):
        value = attributes.get(key)
        if value is not None:
            topic = _str(value, "SubscriptionGroupConfig.attributes." + LITE_BIND_TOPIC).strip()
            return topic or None
    return None


def _retry_policy(value: Any) -> RetryPolicy | None:
    """``GroupRetryPolicy`` (5.x): its type and the parameters of that type's policy; ``None``
    when the config carries none (a 4.x broker)."""
    if value is None:
        return None
    doc = _obj(value, "groupRetryPolicy")
    kind = _str(doc.get("type"), "groupRetryPolicy.type", "CUSTOMIZED").upper() or "CUSTOMIZED"
    custom = doc.get("customizedRetryPolicy")
    exponential = doc.get("exponentialRetryPolicy")
    delays = None
    if custom is not None:
        table = _obj(custom, "customizedRetryPolicy").get("next")
        if table is not None:
            delays = tuple(_int(d, "customizedRetryPolicy.next[]") for d in _list(table, "customizedRetryPolicy.next"))
    initial = longest = factor = None
    if exponential is not None:
        exp = _obj(exponential, "exponentialRetryPolicy")

        def opt(field: str) -> int | None:
            return None if exp.get(field) is None else _int(exp.get(field), "exponentialRetryPolicy." + field)

        initial, longest, factor = opt("initial"), opt("max"), opt("multiplier")
    return RetryPolicy(kind, delays, initial, longest, factor)


def _retry_policy_json(policy: RetryPolicy) -> str:
    # fastjson writes the fields alphabetically
    parts = []
    if policy.delays_ms is not None:
        parts.append(f'"customizedRetryPolicy":{{"next":[{",".join(str(d) for d in policy.delays_ms)}]}}')
    exp = [f'"{name}":{v}' for name, v in (("initial", policy.initial_ms), ("max", policy.max_ms),
                                          ("multiplier", policy.multiplier)) if v is not None]
    if exp:
        parts.append(f'"exponentialRetryPolicy":{{{",".join(exp)}}}')
    parts.append(f'"type":{_s(policy.kind)}')
    return "{" + ",".join(parts) + "}"


def subscription_group_config(body: bytes) -> SubscriptionGroupConfig:
    """One SubscriptionGroupConfig (352, and the body of 200 that creates or updates one)."""
    return _group_config(parse_body(body, "SubscriptionGroupConfig"), "")


@functools.lru_cache(maxsize=100_000)
def _group_config_json(cfg: SubscriptionGroupConfig) -> str:
    # 5.x properties; ``subscriptionDataSet`` is null and omitted, and so is a retry policy the
    # config does not have (a 4.x broker's)
    policy = "" if cfg.retry_policy is None else f'"groupRetryPolicy":{_retry_policy_json(cfg.retry_policy)},'
    attributes = "" if cfg.lite_bind_topic is None else f'{_s(LITE_BIND_TOPIC)}:{_s(cfg.lite_bind_topic)}'
    return (f'{{"attributes":{{{attributes}}},"brokerId":{cfg.broker_id},'
            f'"consumeBroadcastEnable":{_b(cfg.consume_broadcast_enable)},'
            f'"consumeEnable":{_b(cfg.consume_enable)},"consumeFromMinEnable":true,'
            f'"consumeMessageOrderly":{_b(cfg.consume_message_orderly)},"consumeTimeoutMinute":15,'
            f'"groupName":{_s(cfg.group_name)},{policy}'
            f'"groupSysFlag":0,"notifyConsumerIdsChangedEnable":{_b(cfg.notify_consumer_ids_changed_enable)},'
            f'"retryMaxTimes":{cfg.retry_max_times},"retryQueueNums":{cfg.retry_queue_nums},'
            f'"whichBrokerWhenConsumeSlowly":1}}')


def encode_subscription_group_config(cfg: SubscriptionGroupConfig) -> bytes:
    return _group_config_json(cfg).encode()


#: the group tables read last, by their bodies: a broker answers the same bytes (its data
#: version with them) round after round while no group's config changes
_GROUP_TABLES: dict[bytes, dict[str, SubscriptionGroupConfig]] = {}
#: bodies kept at most (the cache starts over when full)
_GROUP_TABLES_KEPT = 8


def subscription_groups(body: bytes) -> dict[str, SubscriptionGroupConfig]:
    """SubscriptionGroupWrapper (201): every group config of a broker, by group name. Read in
    one pass when laid out as 5.x brokers write it (see :func:`_object_as_written`), by the
    general parser otherwise (a 4.x broker's configs lack fields the layout has); the same body
    read again is not parsed again."""
    kept = _GROUP_TABLES.get(body)
    if kept is None:
        kept = _subscription_groups(body)
        if len(_GROUP_TABLES) >= _GROUP_TABLES_KEPT:
            _GROUP_TABLES.clear()
        _GROUP_TABLES[body] = kept
    return dict(kept)  # the configs are frozen; the table is the caller's


def _subscription_groups(body: bytes) -> dict[str, SubscriptionGroupConfig]:
    text = _utf8(body)
    if text is not None:
        found = _object_as_written(text, _GROUP_TABLE_FIELDS)
        if found is not None:
            table: dict[str, SubscriptionGroupConfig] = found.get("subscriptionGroupTable", {})
            return table
    return _subscription_groups_general(body)


#: retry policies read, by their text (a cluster's groups share a few)
_POLICIES: dict[str, RetryPolicy | None] = {}


def _w_retry_policy(written: str) -> RetryPolicy | None:
    """The retry policy of its text, as the general path reads it (raises its error)."""
    policy = _POLICIES.get(written)
    if policy is None:
        policy = _retry_policy(fastjson.loads(written))
        if len(_POLICIES) >= 1024:
            _POLICIES.clear()
        _POLICIES[written] = policy
    return policy


def _w_group_table(text: str, pos: int) -> tuple[dict[str, SubscriptionGroupConfig], int] | None:
    """``subscriptionGroupTable``: every group's config, sorted by name (as the model keeps them)."""
    if not text.startswith("{", pos):
        return None
    pos += 1
    out: dict[str, SubscriptionGroupConfig] = {}
    if text.startswith("}", pos):
        return out, pos + 1
    entry_at = _LAYOUT.group_config
    config, true = SubscriptionGroupConfig, "true"
    while True:
        match = entry_at(text, pos)
        if match is None:
            return None
        (key, attributes, broker_id, broadcast, enable, orderly, name, policy, notify, deliveries, queues,
         after) = match.groups()
        if key.startswith("{"):
            return None  # the general parser may read such a key as an object
        try:
            lite = _lite_bind_topic(json.loads("{" + attributes + "}")) if attributes else None
            retry = None if policy is None else _w_retry_policy(policy)
        except (errors.ProtocolError, ValueError):
            return None  # the general path names the error
        out[key] = config(name, enable == true, broadcast == true, orderly == true, int(queues), int(deliveries),
                          int(broker_id), notify == true, retry, lite)
        pos = match.end()
        if after == "}":
            return dict(sorted(out.items())), pos


_GROUP_TABLE_FIELDS: dict[str, _FieldReader] = {"subscriptionGroupTable": _w_group_table}


def _subscription_groups_general(body: bytes) -> dict[str, SubscriptionGroupConfig]:
    data = parse_body(body, "SubscriptionGroupWrapper")
    out = {}
    for name, value in _obj(data.get("subscriptionGroupTable"), "subscriptionGroupTable").items():
        key = _str(name, "subscriptionGroupTable key")
        out[key] = _group_config(_obj(value, "SubscriptionGroupConfig"), key)
    return dict(sorted(out.items()))


def encode_subscription_groups(configs: Mapping[str, SubscriptionGroupConfig], version: tuple[int, int]) -> bytes:
    inner = ",".join(f"{_s(name)}:{_group_config_json(cfg)}" for name, cfg in configs.items())
    return (f'{{"dataVersion":{data_version(*version)},'
            f'"subscriptionGroupTable":{{{inner}}}}}').encode()


def kv_table(body: bytes) -> dict[str, str]:
    """KVTable (28 runtime info, 219 a name-server namespace)."""
    data = parse_body(body, "KVTable")
    return {_str(k, "table key"): _str(v, "table") for k, v in _obj(data.get("table"), "table").items()}


def encode_kv_table(table: Mapping[str, str]) -> bytes:
    inner = ",".join(f"{_s(k)}:{_s(v)}" for k, v in table.items())
    return f'{{"table":{{{inner}}}}}'.encode()


PERM_WRITE = 2
PERM_READ = 4


@dataclass(frozen=True, slots=True)
class TopicConfig:
    """A broker's config of one topic (``TopicConfig``)."""

    name: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int = PERM_READ | PERM_WRITE
    order: bool = False
    topic_sys_flag: int = 0
    topic_filter_type: str = "SINGLE_TAG"
    #: its ``message.type`` attribute (5.x: ``NORMAL``, ``FIFO``, ``DELAY``, ``TRANSACTION``,
    #: 5.5 adds ``LITE`` and ``PRIORITY``); ``None`` when the config names none (a 4.x broker)
    message_type: str | None = None

    @property
    def readable(self) -> bool:
        return bool(self.perm & PERM_READ)

    @property
    def writable(self) -> bool:
        return bool(self.perm & PERM_WRITE)


def _topic_config(data: Mapping[Any, Any], default_name: str) -> TopicConfig:
    get = data.get
    name, reads, writes, perm, order, flag, kind, attributes = (
        get("topicName"), get("readQueueNums"), get("writeQueueNums"), get("perm"), get("order"),
        get("topicSysFlag"), get("topicFilterType"), get("attributes"))
    if (type(name) is str and type(reads) is int and type(writes) is int and type(perm) is int
            and type(order) is bool and type(flag) is int and type(kind) is str and type(attributes) is dict):
        # every field of the type Java writes (nearly always): taken as it is
        return TopicConfig(name=name, read_queue_nums=reads, write_queue_nums=writes, perm=perm, order=order,
                           topic_sys_flag=flag, topic_filter_type=kind, message_type=_message_type(attributes))
    return _topic_config_general(data, default_name)


def _topic_config_general(data: Mapping[Any, Any], default_name: str) -> TopicConfig:
    return TopicConfig(
        name=_str(data.get("topicName"), "TopicConfig.topicName", default_name),
        read_queue_nums=_int(data.get("readQueueNums"), "TopicConfig.readQueueNums", 16),
        write_queue_nums=_int(data.get("writeQueueNums"), "TopicConfig.writeQueueNums", 16),
        perm=_int(data.get("perm"), "TopicConfig.perm", PERM_READ | PERM_WRITE),
        order=_bool(data.get("order"), "TopicConfig.order"),
        topic_sys_flag=_int(data.get("topicSysFlag"), "TopicConfig.topicSysFlag"),
        topic_filter_type=_str(data.get("topicFilterType"), "TopicConfig.topicFilterType", "SINGLE_TAG"),
        message_type=_message_type(_obj(data.get("attributes"), "TopicConfig.attributes")),
    )


#: the topic attribute naming the kind of messages a 5.x topic takes (``TopicAttributes``)
MESSAGE_TYPE = "message.type"


def _message_type(attributes: Mapping[Any, Any]) -> str | None:
    """The topic's ``message.type``: stored bare, named with a leading '+' in an update request;
    blank names none."""
    for key in (MESSAGE_TYPE, "+" + MESSAGE_TYPE):
        value = attributes.get(key)
        if value is not None:
            return _str(value, "TopicConfig.attributes." + MESSAGE_TYPE).strip() or None
    return None


def topic_config(body: bytes) -> TopicConfig:
    """One TopicConfig (351)."""
    return _topic_config(parse_body(body, "TopicConfig"), "")


def _topic_config_json(tc: TopicConfig) -> str:
    attributes = "" if tc.message_type is None else f'{_s(MESSAGE_TYPE)}:{_s(tc.message_type)}'
    return (f'{{"attributes":{{{attributes}}},"order":{_b(tc.order)},"perm":{tc.perm},'
            f'"readQueueNums":{tc.read_queue_nums},"topicFilterType":{_s(tc.topic_filter_type)},'
            f'"topicName":{_s(tc.name)},"topicSysFlag":{tc.topic_sys_flag},'
            f'"writeQueueNums":{tc.write_queue_nums}}}')


def encode_topic_config(tc: TopicConfig) -> bytes:
    return _topic_config_json(tc).encode()


def topic_configs(body: bytes) -> dict[str, TopicConfig]:
    """TopicConfigAndMappingSerializeWrapper (21): every topic config of a broker, by name."""
    data = parse_body(body, "TopicConfigSerializeWrapper")
    out = {}
    for name, value in _obj(data.get("topicConfigTable"), "topicConfigTable").items():
        key = _str(name, "topicConfigTable key")
        out[key] = _topic_config(_obj(value, "TopicConfig"), key)
    return out


def topic_queue_counts(body: bytes) -> dict[str, tuple[int, int]]:
    """Each topic's read and write queue counts from a broker's topic configs (21), by name: what
    :func:`topic_configs` says of them, read in one pass where the body is laid out as brokers
    write it (no config built), by :func:`topic_configs` otherwise."""
    text = _utf8(body)
    if text is not None:
        found = _topic_queue_counts_as_written(text)
        if found is not None:
            return found
    return {name: (config.read_queue_nums, config.write_queue_nums) for name, config in topic_configs(body).items()}


#: one topic config as brokers write it (its fields sorted by name, string attributes), keyed by
#: its name, then the comma or brace after it; groups: key, read count, write count, end
_TOPIC_ENTRY = (
    _W_STR + r':\{"attributes":\{(?:"[^"\\\x00-\x1f]*":"[^"\\\x00-\x1f]*"'
    r'(?:,"[^"\\\x00-\x1f]*":"[^"\\\x00-\x1f]*")*)?\},"order":(?:true|false),"perm":' + _W_LONG
    + r',"readQueueNums":' + _W_INT + r',"topicFilterType":"[^"\\\x00-\x1f]*","topicName":"[^"\\\x00-\x1f]*"'
    r',"topicSysFlag":' + _W_LONG + r',"writeQueueNums":' + _W_INT + r"\}([,}])")


def _topic_queue_counts_as_written(text: str) -> dict[str, tuple[int, int]] | None:
    """:func:`topic_queue_counts` of a body in the layout brokers write, read in one pass; None
    at the first thing outside that layout."""

    def take(groups: tuple[str, ...]) -> tuple[str, tuple[int, int]] | None:
        name, reads, writes, _ = groups
        if name.startswith("{"):
            return None  # the general parser may read such a key as an object
        return name, (int(reads), int(writes))

    return _table_as_written(text, "topicConfigTable", _TOPIC_ENTRY, take)


def _table_as_written(text: str, field: str, entry: str,
                      take: Callable[[tuple[str, ...]], tuple[_K, _V] | None]) -> dict[_K, _V] | None:
    """The body's map ``field`` read in one pass: each entry matched by the pattern ``entry``
    (its last group the comma or brace after it), made a key and value by ``take`` from the
    match's groups (None: outside the layout); None at the first thing outside the layout
    brokers write."""
    at = _fields_before(text, field, "{")
    if at is None:
        return None
    pos = at
    out: dict[_K, _V] = {}
    entry_at = re.compile(entry).match
    if text.startswith("}", pos):
        pos += 1
    else:
        while True:
            match = entry_at(text, pos)
            if match is None:
                return None
            groups = match.groups()
            item = take(groups)
            if item is None:
                return None
            out[item[0]] = item[1]
            pos = match.end()
            if groups[-1] == "}":
                break
    return out if _rest_as_written(text, pos, field) else None


def encode_topic_configs(topics: Mapping[str, TopicConfig], version: tuple[int, int]) -> bytes:
    inner = ",".join(f"{_s(name)}:{_topic_config_json(tc)}" for name, tc in topics.items())
    return (f'{{"dataVersion":{data_version(*version)},"mappingDataVersion":{data_version(0, version[1])},'
            f'"topicConfigTable":{{{inner}}},"topicQueueMappingDetailMap":{{}},'
            f'"topicQueueMappingInfoMap":{{}}}}').encode()


def consumer_offsets(body: bytes) -> dict[tuple[str, str], dict[int, int]]:
    """ConsumerOffsetManager's JSON (43): ``(topic, group)`` → {queue id: committed offset}.

    Read in one pass when laid out as brokers write it (as :func:`broker_consume_stats`), by
    the general parser otherwise."""
    text = _utf8(body)
    if text is not None:
        found = _consumer_offsets_as_written(text)
        if found is not None:
            return found
    return _consumer_offsets_general(body)


#: one ``topic@group`` and its queues' offsets (``{0:5,1:7}``), then the comma or brace after it
_OFFSETS_ENTRY = (_W_STR + r":\{((?:" + _W_LONG + ":" + _W_LONG + ",)*" + _W_LONG + ":" + _W_LONG
                  + r")?\}([,}])")


def _consumer_offsets_as_written(text: str) -> dict[tuple[str, str], dict[int, int]] | None:
    """:func:`consumer_offsets` of a body in the layout brokers write, read in one pass; None at
    the first thing outside that layout."""

    def take(groups: tuple[str, ...]) -> tuple[tuple[str, str], dict[int, int]] | None:
        key, queues, _ = groups
        topic, sep, group = key.partition("@")
        if not sep or key.startswith("{"):
            return None  # the general path names a key that is not topic@group
        table: dict[int, int] = {}
        if queues:
            for pair in queues.split(","):
                queue_id, _, offset = pair.partition(":")
                table[int(queue_id)] = int(offset)
        return (topic, group), table

    return _table_as_written(text, "offsetTable", _OFFSETS_ENTRY, take)


def _consumer_offsets_general(body: bytes) -> dict[tuple[str, str], dict[int, int]]:
    data = parse_body(body, "ConsumerOffsetSerializeWrapper")
    out: dict[tuple[str, str], dict[int, int]] = {}
    for key, table in _obj(data.get("offsetTable"), "offsetTable").items():
        topic, sep, group = _str(key, "offsetTable key").partition("@")
        if not sep:
            raise errors.ProtocolError(f"offsetTable key {str(key)[:40]!r} is not topic@group")
        out[(topic, group)] = {
            _int(q, "offsetTable queue id"): _int(o, "offsetTable offset") for q, o in _obj(table, "offsets").items()
        }
    return out


def encode_consumer_offsets(offsets: Mapping[tuple[str, str], Mapping[int, int]], version: tuple[int, int]) -> bytes:
    inner = ",".join(
        f"{_s(f'{topic}@{group}')}:{{{','.join(f'{q}:{o}' for q, o in sorted(table.items()))}}}"
        for (topic, group), table in sorted(offsets.items())
    )
    return f'{{"dataVersion":{data_version(*version)},"offsetTable":{{{inner}}}}}'.encode()


def query_subscription(body: bytes) -> tuple[str, str, Subscription | None]:
    """QuerySubscriptionResponseBody (345): group, topic and the broker's stored subscription."""
    data = parse_body(body, "QuerySubscriptionResponseBody")
    sub = data.get("subscriptionData")
    return (_str(data.get("group"), "group"), _str(data.get("topic"), "topic"),
            None if sub is None else subscription(_obj(sub, "SubscriptionData")))


def encode_query_subscription(group: str, topic: str, sub: Subscription | None) -> bytes:
    body = f'{{"group":{_s(group)}'
    if sub is not None:
        body += f',"subscriptionData":{encode_subscription(sub)}'
    return (body + f',"topic":{_s(topic)}}}').encode()


def broker_config(body: bytes) -> dict[str, str]:
    """GET_BROKER_CONFIG (26): a Java properties text (``key=value`` lines), not JSON."""
    out = {}
    for line in body.decode("utf-8", "replace").splitlines():
        if not line.strip() or line.lstrip().startswith(("#", "!")):
            continue
        key, _, value = line.partition("=")
        out[key] = value
    return out


def encode_broker_config(values: Mapping[str, str]) -> bytes:
    """``MixAll.properties2String``: one ``key=value`` line per entry, unescaped."""
    return "".join(f"{k}={v}\n" for k, v in values.items()).encode()


def reset_offset_body(body: bytes) -> dict[MessageQueue, int]:
    """ResetOffsetBody: the answer of INVOKE_BROKER_TO_RESET_OFFSET (222) and the body of
    RESET_CONSUMER_CLIENT_OFFSET (220), ``{"offsetTable":{{mq}:offset,…}}`` with MessageQueue keys.
    An empty body (a broker that reset nothing it could name) is an empty table."""
    if not body.strip():
        return {}
    data = parse_body(body, "ResetOffsetBody")
    return {message_queue(key): _int(value, "ResetOffsetBody.offsetTable")
            for key, value in _obj(data.get("offsetTable", {}), "offsetTable").items()}


def encode_reset_offset_body(offsets: Mapping[MessageQueue, int]) -> bytes:
    """``ResetOffsetBody.encode``: fastjson's object keys for the queues."""
    inner = ",".join(f"{queue_key(mq)}:{offset}" for mq, offset in offsets.items())
    return f'{{"offsetTable":{{{inner}}}}}'.encode()


# ---------------------------------------------------------------------------------------------
# Request bodies


@dataclass(frozen=True, slots=True)
class ConsumerData:
    """One group's part of a heartbeat (``ConsumerData``)."""

    group: str
    consume_type: str
    message_model: str
    consume_from_where: str
    subscriptions: tuple[Subscription, ...]
    unit_mode: bool = False


@dataclass(frozen=True, slots=True)
class HeartbeatData:
    """A client's heartbeat (``HeartbeatData``): its id, its consumer groups, its producer groups."""

    client_id: str
    consumers: tuple[ConsumerData, ...] = ()
    producers: tuple[str, ...] = ()


def heartbeat_data(body: bytes) -> HeartbeatData:
    """Decode a HEART_BEAT (34) body; raises ProtocolError when it is not a HeartbeatData."""
    data = fastjson.loads(body) if body else {}
    if not isinstance(data, dict):
        raise errors.ProtocolError("HeartbeatData: expected an object", body)
    consumers = []
    for item in _list(data.get("consumerDataSet"), "HeartbeatData.consumerDataSet"):
        if not isinstance(item, dict):
            continue
        subs = tuple(
            subscription(s) for s in _list(item.get("subscriptionDataSet"), "ConsumerData.subscriptionDataSet")
            if isinstance(s, dict)
        )
        consumers.append(ConsumerData(
            str(item.get("groupName", "")),
            str(item.get("consumeType") or "CONSUME_PASSIVELY"),
            str(item.get("messageModel") or "CLUSTERING"),
            str(item.get("consumeFromWhere") or "CONSUME_FROM_LAST_OFFSET"),
            subs,
            bool(item.get("unitMode", False)),
        ))
    producers = tuple(
        str(p.get("groupName", "")) for p in _list(data.get("producerDataSet"), "HeartbeatData.producerDataSet")
        if isinstance(p, dict)
    )
    return HeartbeatData(str(data.get("clientID", "")), tuple(consumers), producers)


def encode_heartbeat_data(data: HeartbeatData) -> bytes:
    """A HeartbeatData the way the Java client sends it."""
    consumers = ",".join(
        f'{{"consumeFromWhere":{_s(c.consume_from_where)},"consumeType":{_s(c.consume_type)},'
        f'"groupName":{_s(c.group)},"messageModel":{_s(c.message_model)},'
        f'"subscriptionDataSet":[{",".join(encode_subscription(s) for s in c.subscriptions)}],'
        f'"unitMode":{_b(c.unit_mode)}}}'
        for c in data.consumers
    )
    producers = ",".join(f'{{"groupName":{_s(p)}}}' for p in data.producers)
    return (f'{{"clientID":{_s(data.client_id)},"consumerDataSet":[{consumers}],'
            f'"heartbeatFingerprint":0,"producerDataSet":[{producers}],"withoutSub":false}}').encode()


@dataclass(frozen=True, slots=True)
class LockBatchRequest:
    """``LockBatchRequestBody`` (LOCK_BATCH_MQ, 41) and ``UnlockBatchRequestBody`` (42), which
    share one shape: a consumer's queues to lock or unlock for its group."""

    group: str
    client_id: str
    queues: frozenset[MessageQueue]
    only_this_broker: bool = False


def _queue_set(value: Any, what: str) -> frozenset[MessageQueue]:
    return frozenset(message_queue(item) for item in _objects(value, what))


def lock_batch_request(body: bytes) -> LockBatchRequest:
    """Decode a LOCK_BATCH_MQ / UNLOCK_BATCH_MQ body (``mqSet`` is a JSON array of queues)."""
    data = parse_body(body, "LockBatchRequestBody")
    return LockBatchRequest(
        _str(data.get("consumerGroup"), "LockBatchRequestBody.consumerGroup"),
        _str(data.get("clientId"), "LockBatchRequestBody.clientId"),
        _queue_set(data.get("mqSet") or [], "LockBatchRequestBody.mqSet"),
        _bool(data.get("onlyThisBroker"), "LockBatchRequestBody.onlyThisBroker"),
    )


def _queue_array(queues: Iterable[MessageQueue]) -> str:
    return "[" + ",".join(queue_key(mq) for mq in sorted(queues)) + "]"


def encode_lock_batch_request(request: LockBatchRequest) -> bytes:
    """A LockBatchRequestBody the way the Java client sends it."""
    return (f'{{"clientId":{_s(request.client_id)},"consumerGroup":{_s(request.group)},'
            f'"mqSet":{_queue_array(request.queues)},"onlyThisBroker":{_b(request.only_this_broker)}}}').encode()


def lock_batch_response(body: bytes) -> frozenset[MessageQueue]:
    """``LockBatchResponseBody``: the queues the broker locked for the client (``lockOKMQSet``)."""
    data = parse_body(body, "LockBatchResponseBody")
    return _queue_set(data.get("lockOKMQSet") or [], "LockBatchResponseBody.lockOKMQSet")


def encode_lock_batch_response(queues: Iterable[MessageQueue]) -> bytes:
    return f'{{"lockOKMQSet":{_queue_array(queues)}}}'.encode()


@dataclass(frozen=True, slots=True)
class CheckClientRequest:
    """``CheckClientRequestBody`` (CHECK_CLIENT_CONFIG, 46): a consumer's non-TAG subscription,
    sent to every broker before the consumer starts."""

    client_id: str
    group: str
    subscription: Subscription | None


def check_client_request(body: bytes) -> CheckClientRequest:
    data = parse_body(body, "CheckClientRequestBody")
    raw = data.get("subscriptionData")
    return CheckClientRequest(
        _str(data.get("clientId"), "CheckClientRequestBody.clientId"),
        _str(data.get("group"), "CheckClientRequestBody.group"),
        subscription(_obj(raw, "CheckClientRequestBody.subscriptionData")) if raw is not None else None,
    )


def encode_check_client_request(request: CheckClientRequest) -> bytes:
    sub = "" if request.subscription is None else f',"subscriptionData":{encode_subscription(request.subscription)}'
    return f'{{"clientId":{_s(request.client_id)},"group":{_s(request.group)}{sub}}}'.encode()
