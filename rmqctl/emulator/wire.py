"""Body encoders that write exactly what a real broker or name server writes (fastjson dialect).

fastjson (``RemotingSerializable.encode``) writes bean properties alphabetically, omits null
properties, writes enums as their names, writes ``Map<Long|Integer, …>`` keys unquoted
(``{0:"127.0.0.1:10911"}``) and ``Map<MessageQueue, …>`` keys as object literals
(``{{"brokerName":"b","queueId":0,"topic":"T"}:{…}}``). The one exception is the name server's
topic route for clients of version ≥ V4_9_4 or asking ``acceptStandardJsonOnly``: that is written
with ``BrowserCompatible|QuoteFieldNames|MapSortField``, i.e. standard JSON with quoted keys and
non-ASCII escaped. Bodies are built as strings directly (not through a generic serializer)
because the admin reads of a 2,000-group cluster must stay fast; message-queue keys are cached.

Also decodes the request bodies the emulator accepts (HeartbeatData). Must not import the CLI,
textual or pyspark.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterable, Mapping, Sequence

from rmqctl import errors
from rmqctl.emulator.groups import ConsumerData, ConsumerGroupInfo, HeartbeatData
from rmqctl.emulator.store import TopicConfig
from rmqctl.model import (
    ClusterInfo,
    MessageQueue,
    OffsetEntry,
    ProcessQueueInfo,
    Subscription,
    SubscriptionGroupConfig,
    TopicOffset,
    TopicRoute,
)
from rmqctl.remoting import bodies, fastjson


def _s(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


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
    return f'{{"counter":{counter},"stateVersion":0,"timestamp":{timestamp}}}'


def _broker_data(name: str, cluster: str, addrs: Mapping[int, str], standard: bool) -> str:
    if standard:
        inner = ",".join(f'"{k}":{json.dumps(v)}' for k, v in sorted(addrs.items()))
        return (f'{{"brokerAddrs":{{{inner}}},"brokerName":{json.dumps(name)},'
                f'"cluster":{json.dumps(cluster)},"enableActingMaster":false}}')
    inner = ",".join(f"{k}:{_s(v)}" for k, v in sorted(addrs.items()))
    return (f'{{"brokerAddrs":{{{inner}}},"brokerName":{_s(name)},"cluster":{_s(cluster)},'
            f'"enableActingMaster":false}}')


def cluster_info(info: ClusterInfo) -> bytes:
    """ClusterInfo (106): always plain fastjson, so ``brokerAddrs`` keys are unquoted."""
    brokers = ",".join(
        f"{_s(name)}:{_broker_data(b.broker_name, b.cluster, b.addrs, False)}"
        for name, b in info.brokers.items()
    )
    clusters = ",".join(
        f"{_s(name)}:[{','.join(_s(b) for b in names)}]" for name, names in info.clusters.items()
    )
    return f'{{"brokerAddrTable":{{{brokers}}},"clusterAddrTable":{{{clusters}}}}}'.encode()


def topic_route(route: TopicRoute, *, standard: bool) -> bytes:
    """TopicRouteData (105); ``standard`` for version ≥ 401 or ``acceptStandardJsonOnly``."""
    enc = json.dumps if standard else _s
    brokers = ",".join(_broker_data(b.broker_name, b.cluster, b.addrs, standard)
                       for b in route.broker_datas)
    queues = ",".join(
        f'{{"brokerName":{enc(q.broker_name)},"perm":{q.perm},"readQueueNums":{q.read_queue_nums},'
        f'"topicSysFlag":{q.topic_sys_flag},"writeQueueNums":{q.write_queue_nums}}}'
        for q in route.queue_datas
    )
    order = f',"orderTopicConf":{enc(route.order_topic_conf)}' if route.order_topic_conf else ""
    return (f'{{"brokerDatas":[{brokers}],"filterServerTable":{{}}{order},'
            f'"queueDatas":[{queues}]}}').encode()


def topic_list(topics: Iterable[str], broker_addr: str | None = None) -> bytes:
    addr = f'"brokerAddr":{_s(broker_addr)},' if broker_addr else ""
    return f'{{{addr}"topicList":[{",".join(_s(t) for t in topics)}]}}'.encode()


def group_list(groups: Iterable[str]) -> bytes:
    return f'{{"groupList":[{",".join(_s(g) for g in groups)}]}}'.encode()


def consumer_id_list(ids: Iterable[str]) -> bytes:
    return f'{{"consumerIdList":[{",".join(_s(i) for i in ids)}]}}'.encode()


def kv_table(table: Mapping[str, str]) -> bytes:
    inner = ",".join(f"{_s(k)}:{_s(v)}" for k, v in table.items())
    return f'{{"table":{{{inner}}}}}'.encode()


def topic_stats(rows: Iterable[TopicOffset], put_tps: float) -> bytes:
    """TopicStatsTable (202)."""
    inner = ",".join(
        f'{queue_key(row.queue)}:{{"lastUpdateTimestamp":{row.last_update_timestamp},'
        f'"maxOffset":{row.max_offset},"minOffset":{row.min_offset}}}'
        for row in rows
    )
    return f'{{"offsetTable":{{{inner}}},"topicPutTps":{java_double(put_tps)}}}'.encode()


def consume_stats(rows: Iterable[tuple[MessageQueue, OffsetEntry]], consume_tps: float) -> bytes:
    """ConsumeStats (208): OffsetWrapper per queue, MessageQueue keys."""
    inner = ",".join(
        f'{queue_key(mq)}:{{"brokerOffset":{entry.broker_offset},"consumerOffset":{entry.consumer_offset},'
        f'"lastTimestamp":{entry.last_timestamp},"pullOffset":{entry.pull_offset}}}'
        for mq, entry in rows
    )
    return f'{{"consumeTps":{java_double(consume_tps)},"offsetTable":{{{inner}}}}}'.encode()


def subscription_data(sub: Subscription) -> str:
    """SubscriptionData (``filterClassSource`` is not serialized)."""
    codes = ",".join(str(c) for c in sub.codes)
    tags = ",".join(_s(t) for t in sub.tags)
    return (f'{{"classFilterMode":false,"codeSet":[{codes}],"expressionType":{_s(sub.expression_type)},'
            f'"subString":{_s(sub.expression)},"subVersion":{sub.sub_version},"tagsSet":[{tags}],'
            f'"topic":{_s(sub.topic)}}}')


def _connection(client_id: str, client_addr: str, language: str, version: int) -> str:
    return (f'{{"clientAddr":{_s(client_addr)},"clientId":{_s(client_id)},'
            f'"language":{_s(language)},"version":{version}}}')


def consumer_connection(group: ConsumerGroupInfo) -> bytes:
    """ConsumerConnection (203): live channels and the group's stored subscription table."""
    conns = ",".join(
        _connection(info.client_id, channel.remote_addr, info.language, info.version)
        for channel, info in group.channels.items()
    )
    subs = ",".join(f"{_s(t)}:{subscription_data(s)}" for t, s in group.subscriptions.items())
    return (f'{{"connectionSet":[{conns}],"consumeFromWhere":{_s(group.consume_from_where)},'
            f'"consumeType":{_s(group.consume_type)},"messageModel":{_s(group.message_model)},'
            f'"subscriptionTable":{{{subs}}}}}').encode()


def producer_connection(connections: Iterable[tuple[str, str, str, int]]) -> bytes:
    conns = ",".join(_connection(cid, addr, lang, ver) for cid, addr, lang, ver in connections)
    return f'{{"connectionSet":[{conns}]}}'.encode()


def _process_queue_info(pq: ProcessQueueInfo) -> str:
    return (f'{{"cachedMsgCount":{pq.cached_msg_count},"cachedMsgMaxOffset":{pq.cached_msg_max_offset},'
            f'"cachedMsgMinOffset":{pq.cached_msg_min_offset},"cachedMsgSizeInMiB":{pq.cached_msg_size_mib},'
            f'"commitOffset":{pq.commit_offset},"droped":{_b(pq.dropped)},'
            f'"lastConsumeTimestamp":{pq.last_consume_timestamp},"lastLockTimestamp":{pq.last_lock_timestamp},'
            f'"lastPullTimestamp":{pq.last_pull_timestamp},"locked":{_b(pq.locked)},'
            f'"transactionMsgCount":0,"transactionMsgMaxOffset":0,"transactionMsgMinOffset":0,'
            f'"tryUnlockTimes":{pq.try_unlock_times}}}')


def consumer_running_info(
    properties: Mapping[str, str],
    subscriptions: Sequence[Subscription],
    mq_table: Sequence[tuple[MessageQueue, ProcessQueueInfo]],
    status_table: Mapping[str, tuple[float, float, float, float, float, int]],
    jstack: str | None = None,
) -> bytes:
    """ConsumerRunningInfo (307), as the Java consumer writes it."""
    parts = []
    if jstack is not None:
        parts.append(f'"jstack":{_s(jstack)}')
    parts.append('"mqPopTable":{}')
    mqs = ",".join(
        f"{queue_key(mq)}:{_process_queue_info(pq)}" for mq, pq in mq_table
    )
    parts.append(f'"mqTable":{{{mqs}}}')
    props = ",".join(f"{_s(k)}:{_s(v)}" for k, v in sorted(properties.items()))
    parts.append(f'"properties":{{{props}}}')
    status = ",".join(
        f'{_s(topic)}:{{"consumeFailedMsgs":{failed_msgs},"consumeFailedTPS":{java_double(failed)},'
        f'"consumeOKTPS":{java_double(ok)},"consumeRT":{java_double(crt)},'
        f'"pullRT":{java_double(prt)},"pullTPS":{java_double(ptps)}}}'
        for topic, (prt, ptps, crt, ok, failed, failed_msgs) in sorted(status_table.items())
    )
    parts.append(f'"statusTable":{{{status}}}')
    parts.append(f'"subscriptionSet":[{",".join(subscription_data(s) for s in subscriptions)}]')
    parts.append('"userConsumerInfo":{}')
    return ("{" + ",".join(parts) + "}").encode()


@functools.lru_cache(maxsize=100_000)
def subscription_group_config(cfg: SubscriptionGroupConfig) -> str:
    """SubscriptionGroupConfig (5.x properties; ``subscriptionDataSet`` is null and omitted)."""
    return (f'{{"attributes":{{}},"brokerId":{cfg.broker_id},'
            f'"consumeBroadcastEnable":{_b(cfg.consume_broadcast_enable)},'
            f'"consumeEnable":{_b(cfg.consume_enable)},"consumeFromMinEnable":true,'
            f'"consumeMessageOrderly":{_b(cfg.consume_message_orderly)},"consumeTimeoutMinute":15,'
            f'"groupName":{_s(cfg.group_name)},"groupRetryPolicy":{{"type":"CUSTOMIZED"}},'
            f'"groupSysFlag":0,"notifyConsumerIdsChangedEnable":{_b(cfg.notify_consumer_ids_changed_enable)},'
            f'"retryMaxTimes":{cfg.retry_max_times},"retryQueueNums":{cfg.retry_queue_nums},'
            f'"whichBrokerWhenConsumeSlowly":1}}')


def subscription_group_wrapper(configs: Mapping[str, SubscriptionGroupConfig],
                               version: tuple[int, int]) -> bytes:
    """SubscriptionGroupWrapper (201): every group config of the broker."""
    inner = ",".join(f"{_s(name)}:{subscription_group_config(cfg)}" for name, cfg in configs.items())
    return (f'{{"dataVersion":{data_version(*version)},'
            f'"subscriptionGroupTable":{{{inner}}}}}').encode()


def topic_config(tc: TopicConfig) -> str:
    return (f'{{"attributes":{{}},"order":{_b(tc.order)},"perm":{tc.perm},'
            f'"readQueueNums":{tc.read_queue_nums},"topicFilterType":{_s(tc.topic_filter_type)},'
            f'"topicName":{_s(tc.name)},"topicSysFlag":{tc.topic_sys_flag},'
            f'"writeQueueNums":{tc.write_queue_nums}}}')


def topic_config_wrapper(topics: Mapping[str, TopicConfig], version: tuple[int, int]) -> bytes:
    """TopicConfigAndMappingSerializeWrapper (21)."""
    inner = ",".join(f"{_s(name)}:{topic_config(tc)}" for name, tc in topics.items())
    return (f'{{"dataVersion":{data_version(*version)},"mappingDataVersion":{data_version(0, version[1])},'
            f'"topicConfigTable":{{{inner}}},"topicQueueMappingDetailMap":{{}},'
            f'"topicQueueMappingInfoMap":{{}}}}').encode()


def consumer_offsets(offsets: Mapping[tuple[str, str], Mapping[int, int]], version: tuple[int, int]) -> bytes:
    """ConsumerOffsetManager's JSON (43): ``topic@group`` -> {queueId: offset}."""
    inner = ",".join(
        f"{_s(f'{topic}@{group}')}:{{{','.join(f'{q}:{o}' for q, o in sorted(table.items()))}}}"
        for (topic, group), table in sorted(offsets.items())
    )
    return f'{{"dataVersion":{data_version(*version)},"offsetTable":{{{inner}}}}}'.encode()


def query_subscription(group: str, topic: str, sub: Subscription | None) -> bytes:
    body = f'{{"group":{_s(group)}'
    if sub is not None:
        body += f',"subscriptionData":{subscription_data(sub)}'
    return (body + f',"topic":{_s(topic)}}}').encode()


def broker_config_properties(values: Mapping[str, str]) -> bytes:
    """GET_BROKER_CONFIG (26): a Java properties text, not JSON."""
    return "".join(f"{k}={v}\n" for k, v in values.items()).encode()


# ---------------------------------------------------------------------------------------------
# Request bodies


def heartbeat_data(body: bytes) -> HeartbeatData:
    """Decode a HEART_BEAT (34) body; raises ProtocolError when it is not a HeartbeatData."""
    data = fastjson.loads(body) if body else {}
    if not isinstance(data, dict):
        raise errors.ProtocolError("HeartbeatData: expected an object", body)
    consumers = []
    for item in data.get("consumerDataSet") or ():
        if not isinstance(item, dict):
            continue
        subs = tuple(
            bodies.subscription(s) for s in item.get("subscriptionDataSet") or () if isinstance(s, dict)
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
        str(p.get("groupName", "")) for p in data.get("producerDataSet") or () if isinstance(p, dict)
    )
    return HeartbeatData(str(data.get("clientID", "")), tuple(consumers), producers)


def heartbeat_body(data: HeartbeatData) -> bytes:
    """Encode a HeartbeatData the way the Java client sends it (for test clients)."""
    consumers = ",".join(
        f'{{"consumeFromWhere":{_s(c.consume_from_where)},"consumeType":{_s(c.consume_type)},'
        f'"groupName":{_s(c.group)},"messageModel":{_s(c.message_model)},'
        f'"subscriptionDataSet":[{",".join(subscription_data(s) for s in c.subscriptions)}],'
        f'"unitMode":{_b(c.unit_mode)}}}'
        for c in data.consumers
    )
    producers = ",".join(f'{{"groupName":{_s(p)}}}' for p in data.producers)
    return (f'{{"clientID":{_s(data.client_id)},"consumerDataSet":[{consumers}],'
            f'"heartbeatFingerprint":0,"producerDataSet":[{producers}],"withoutSub":false}}').encode()
