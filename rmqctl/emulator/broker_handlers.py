"""The request handlers of one emulated broker (:class:`BrokerService`).

Each handler answers what a real 5.x broker answers, with the same body shapes: every admin
request rmqctl's AdminClient sends, what the Java ``mqadmin`` needs (clusterList, topicStatus,
consumerConnection, consumerProgress, consumerStatus with 307 relayed to the consumer, which
answers itself), plus heartbeats, offsets, topic creation, sending and pulling so real Java
clients can join. The broker's rules live in :class:`~rmqctl.emulator.broker.BrokerState`; this
module only turns requests into calls on it and results into responses. Must not import the CLI,
textual or pyspark, nor the server's connection handling.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

from rmqctl import errors
from rmqctl.emulator.broker import BROKER_VERSION, BrokerState
from rmqctl.emulator.client import InProcessChannel, SimulatedConsumer
from rmqctl.emulator.groups import Channel, ClientChannelInfo
from rmqctl.emulator.handlers import Handler, Result, ext_bool, ext_int, respond
from rmqctl.emulator.pulls import PullRequestHeader, PullResult
from rmqctl.emulator.store import MAX_QUEUES_PER_TOPIC, PHYSICAL_STRIDE, StoredMessage
from rmqctl.emulator.world import EmulatedCluster
from rmqctl.model import (
    ClientConnection,
    ConsumerConnection,
    ConsumeStats,
    MessageQueue,
    Sql92Error,
    TopicStats,
    compile_sql92,
    encode_offset_message_id,
    version_desc,
)
from rmqctl.remoting import bodies
from rmqctl.remoting.codes import RequestCode, ResponseCode
from rmqctl.remoting.frame import RemotingCommand
from rmqctl.remoting.messages import MessageRecord, decode_properties, encode_message

#: ``Broker2Client.callClient`` waits this long for the consumer
RELAY_TIMEOUT_S = 10.0
#: ``MQVersion.Version.V3_1_8_SNAPSHOT``: older consumers cannot answer 307
MIN_RUNNING_INFO_VERSION = 62
#: the born host written into pulled messages (the emulated producers' address)
BORN_HOST = ("10.0.255.1", 0)
_V2_HEADER = {"a": "producerGroup", "b": "topic", "c": "defaultTopic", "d": "defaultTopicQueueNums",
              "e": "queueId", "f": "sysFlag", "g": "bornTimestamp", "h": "flag", "i": "properties",
              "j": "reconsumeTimes", "k": "unitMode", "l": "maxReconsumeTimes", "m": "batch",
              "n": "brokerName"}


#: properties the broker or the client library sets, kept apart from the user's
_SYSTEM_PROPERTIES = frozenset({"TAGS", "KEYS", "UNIQ_KEY", "WAIT", "RETRY_TOPIC", "MIN_OFFSET",
                                "MAX_OFFSET", "CONSUME_START_TIME", "REAL_TOPIC", "REAL_QID"})


def user_properties(props: dict[str, str]) -> tuple[tuple[str, str], ...]:
    """The properties a producer set itself (what SQL92 filters read besides TAGS and KEYS)."""
    return tuple((k, v) for k, v in props.items() if k not in _SYSTEM_PROPERTIES)


def message_record(message: StoredMessage, store_host: tuple[str, int],
                   born_host: tuple[str, int] = BORN_HOST) -> MessageRecord:
    """A stored message as a pull response carries it (``MessageDecoder`` v1)."""
    props = dict(message.properties)
    if message.tag:
        props["TAGS"] = message.tag
    if message.keys:
        props["KEYS"] = message.keys
    props["UNIQ_KEY"] = message.msg_id
    props["WAIT"] = "true"
    if message.origin_topic:
        props["RETRY_TOPIC"] = message.origin_topic  # the client restores the original topic
    if message.origin_seq is not None:
        # ``consumerSendMsgBack`` names the first message by the broker's id (its copies, on
        # the same broker, share its store host)
        props["ORIGIN_MESSAGE_ID"] = offset_message_id(store_host, message.origin_seq * PHYSICAL_STRIDE)
    return MessageRecord(
        topic=message.topic, queue_id=message.queue_id, queue_offset=message.queue_offset,
        physical_offset=message.physical_offset, born_timestamp=message.born_timestamp,
        store_timestamp=message.store_timestamp, body=message.body, properties=props,
        born_host=(message.born_ip, 0) if message.born_ip else born_host, store_host=store_host,
        reconsume_times=message.reconsume_times,
    )


def offset_message_id(store_host: tuple[str, int], physical_offset: int) -> str:
    """The broker's id of a message stored at ``physical_offset`` by a broker at ``store_host``
    (a host that is not an IP address is written as loopback, as in the records)."""
    host, port = store_host
    try:
        return encode_offset_message_id(host, port, physical_offset)
    except ValueError:
        return encode_offset_message_id("127.0.0.1", port, physical_offset)


#: ``Long.MAX_VALUE``, the end of a query's time range when none is sent
_END_OF_TIME = 2**63 - 1


class BrokerService:
    """Request handlers of one broker, over its :class:`~.broker.BrokerState`."""

    def __init__(self, cluster: EmulatedCluster, broker: BrokerState) -> None:
        self.cluster = cluster
        self.broker = broker

    def handlers(self) -> dict[int, Handler]:
        return {
            RequestCode.HEART_BEAT: self.heartbeat,
            RequestCode.UNREGISTER_CLIENT: self.unregister_client,
            RequestCode.GET_CONSUMER_LIST_BY_GROUP: self.consumer_list,
            RequestCode.QUERY_CONSUMER_OFFSET: self.query_offset,
            RequestCode.UPDATE_CONSUMER_OFFSET: self.update_offset,
            RequestCode.GET_MAX_OFFSET: self.max_offset,
            RequestCode.GET_MIN_OFFSET: self.min_offset,
            RequestCode.GET_EARLIEST_MSG_STORETIME: self.earliest_time,
            RequestCode.SEARCH_OFFSET_BY_TIMESTAMP: self.search_offset,
            RequestCode.GET_TOPIC_STATS_INFO: self.topic_stats,
            RequestCode.GET_CONSUMER_CONNECTION_LIST: self.consumer_connection,
            RequestCode.GET_CONSUME_STATS: self.consume_stats,
            RequestCode.GET_BROKER_CONSUME_STATS: self.broker_consume_stats,
            RequestCode.GET_CONSUMER_RUNNING_INFO: self.running_info,
            RequestCode.QUERY_TOPIC_CONSUME_BY_WHO: self.topic_consumers,
            RequestCode.QUERY_TOPICS_BY_CONSUMER: self.topics_by_consumer,
            RequestCode.QUERY_SUBSCRIPTION_BY_CONSUMER: self.subscription_by_consumer,
            RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG: self.all_group_configs,
            RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG: self.group_config,
            RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: self.update_group_config,
            RequestCode.GET_BROKER_RUNTIME_INFO: self.runtime_info,
            RequestCode.GET_BROKER_CONFIG: self.broker_config,
            RequestCode.GET_ALL_TOPIC_CONFIG: self.all_topic_configs,
            RequestCode.GET_TOPIC_CONFIG: self.topic_config,
            RequestCode.UPDATE_AND_CREATE_TOPIC: self.create_topic,
            RequestCode.GET_ALL_CONSUMER_OFFSET: self.all_offsets,
            RequestCode.GET_PRODUCER_CONNECTION_LIST: self.producer_connection,
            RequestCode.SEND_MESSAGE: self.send_message,
            RequestCode.SEND_MESSAGE_V2: self.send_message,
            RequestCode.PULL_MESSAGE: self.pull_message,
            RequestCode.VIEW_MESSAGE_BY_ID: self.view_message,
            RequestCode.QUERY_MESSAGE: self.query_message,
            RequestCode.INVOKE_BROKER_TO_RESET_OFFSET: self.reset_offset,
            RequestCode.DELETE_SUBSCRIPTIONGROUP: self.delete_group,
            RequestCode.DELETE_TOPIC_IN_BROKER: self.delete_topic,
            RequestCode.LOCK_BATCH_MQ: self.lock_batch,
            RequestCode.UNLOCK_BATCH_MQ: self.unlock_batch,
            RequestCode.CHECK_CLIENT_CONFIG: self.check_client_config,
        }

    # -- clients -------------------------------------------------------------------------------

    def heartbeat(self, cmd: RemotingCommand, conn: Channel) -> RemotingCommand:
        data = bodies.heartbeat_data(cmd.body)
        self.broker.heartbeat(conn, data, cmd.language, cmd.version)
        return respond(cmd, ResponseCode.SUCCESS,
                       ext={"IS_SUPPORT_HEART_BEAT_V2": "true", "IS_SUB_CHANGE": "true"})

    def unregister_client(self, cmd: RemotingCommand, conn: Channel) -> RemotingCommand:
        ext = cmd.ext_fields
        self.broker.unregister_client(conn, ext.get("clientID", ""), ext.get("consumerGroup"),
                                      ext.get("producerGroup"))
        return respond(cmd, ResponseCode.SUCCESS)

    def lock_batch(self, cmd: RemotingCommand, conn: Channel) -> RemotingCommand:
        """LOCK_BATCH_MQ (41), ``AdminBrokerProcessor.lockBatchMQ`` on a broker without replicas
        (``lockInStrictMode`` off): the queues now locked for the client, in ``lockOKMQSet``."""
        request = bodies.lock_batch_request(cmd.body)
        locked = self.broker.locks.try_lock_batch(request.group, request.queues, request.client_id)
        return respond(cmd, ResponseCode.SUCCESS, body=bodies.encode_lock_batch_response(locked))

    def unlock_batch(self, cmd: RemotingCommand, conn: Channel) -> RemotingCommand:
        """UNLOCK_BATCH_MQ (42): the client's own locks among the queues are dropped."""
        request = bodies.lock_batch_request(cmd.body)
        self.broker.locks.unlock_batch(request.group, request.queues, request.client_id)
        return respond(cmd, ResponseCode.SUCCESS)

    def check_client_config(self, cmd: RemotingCommand, conn: Channel) -> RemotingCommand:
        """CHECK_CLIENT_CONFIG (46), ``ClientManageProcessor.checkClientConfig``: a TAG
        subscription always passes; another type needs ``enablePropertyFilter`` and an expression
        the broker's filter compiles (SQL92 is the only type it knows)."""
        sub = bodies.check_client_request(cmd.body).subscription
        if sub is None or sub.expression_type in ("", "TAG"):
            return respond(cmd, ResponseCode.SUCCESS)
        if not self.broker.property_filter:
            return respond(cmd, ResponseCode.SYSTEM_ERROR,
                           remark=f"The broker does not support consumer to filter message by {sub.expression_type}")
        if not sub.is_sql92:
            # no filter is registered for the type: the lookup fails before anything is compiled
            return respond(cmd, ResponseCode.SUBSCRIPTION_PARSE_FAILED)
        try:
            compile_sql92(sub.expression)
        except Sql92Error as exc:
            return respond(cmd, ResponseCode.SUBSCRIPTION_PARSE_FAILED, remark=str(exc))
        return respond(cmd, ResponseCode.SUCCESS)

    def consumer_list(self, cmd: RemotingCommand, conn: Channel) -> RemotingCommand:
        group = cmd.ext_fields.get("consumerGroup", "")
        ids = self.broker.consumer_ids(group)
        if ids is None:
            return respond(cmd, ResponseCode.SYSTEM_ERROR, remark=f"no consumer for this group, {group}")
        return respond(cmd, ResponseCode.SUCCESS, body=bodies.encode_string_list("consumerIdList", ids))

    # -- offsets -------------------------------------------------------------------------------

    def query_offset(self, cmd: RemotingCommand, conn: Channel) -> RemotingCommand:
        ext = cmd.ext_fields
        offset = self.broker.query_consumer_offset(
            ext.get("consumerGroup", ""), ext.get("topic", ""), ext_int(ext, "queueId"),
            ext_bool(ext, "setZeroIfNotFound", True))
        if offset is None:
            return respond(cmd, ResponseCode.QUERY_NOT_FOUND,
                           remark="Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first")
        return respond(cmd, ResponseCode.SUCCESS, ext={"offset": str(offset)})

    def update_offset(self, cmd: RemotingCommand, conn: Channel) -> RemotingCommand:
        ext = cmd.ext_fields
        stored = self.broker.store.update_offset(ext.get("consumerGroup", ""), ext.get("topic", ""),
                                                 ext_int(ext, "queueId"), ext_int(ext, "commitOffset"))
        return respond(cmd, ResponseCode.SUCCESS, remark=None if stored else "Offset has been previously reset")

    def delete_group(self, cmd: RemotingCommand, conn: Channel) -> RemotingCommand:
        """DELETE_SUBSCRIPTIONGROUP (207): the group's config, and its offsets with ``cleanOffset``."""
        group = cmd.ext_fields.get("groupName", "")
        self.broker.groups.delete_group_config(group)
        if ext_bool(cmd.ext_fields, "cleanOffset", False):
            self.broker.store.remove_group_offsets(group)
        return respond(cmd, ResponseCode.SUCCESS)

    def delete_topic(self, cmd: RemotingCommand, conn: Channel) -> RemotingCommand:
        """DELETE_TOPIC_IN_BROKER (215): the topic's config and queues (and every group's offsets on it)."""
        self.broker.store.delete_topic(cmd.ext_fields.get("topic", ""))
        return respond(cmd, ResponseCode.SUCCESS)

    def reset_offset(self, cmd: RemotingCommand, conn: Channel) -> RemotingCommand:
        """INVOKE_BROKER_TO_RESET_OFFSET (222), ``AdminBrokerProcessor.resetOffset``: with
        server-side reset the broker assigns the offsets itself (one queue to ``offset``, or every
        readable queue by ``timestamp``); otherwise ``Broker2Client.resetOffset`` computes them by
        time and sends them to every online client (RESET_CONSUMER_CLIENT_OFFSET, 220)."""
        ext = cmd.ext_fields
        topic, group = ext.get("topic", ""), ext.get("group", "")
        timestamp = ext_int(ext, "timestamp")
        store = self.broker.store
        config = store.topics.get(topic)

        def by_time(queue_id: int) -> int:
            if timestamp < 0:
                return store.max_offset(topic, queue_id)
            return store.search_offset(topic, queue_id, timestamp)

        if store.server_side_reset:
            if config is None:
                return respond(cmd, ResponseCode.TOPIC_NOT_EXIST, remark=f"Topic {topic} does not exist")
            if group not in self.broker.group_configs:  # ``containsSubscriptionGroup``: no auto-creation
                return respond(cmd, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, remark=f"Group {group} does not exist")
            queue_id = ext_int(ext, "queueId", -1)
            table: dict[int, int] = {}
            if queue_id >= 0:
                raw = (ext.get("offset") or "").strip()
                if raw and raw != "-1":
                    offset = int(raw)
                    high = store.max_offset(topic, queue_id)
                    if offset < 0 or offset > high + 1:  # the emulated store keeps every message: min 0
                        return respond(cmd, ResponseCode.SYSTEM_ERROR,
                                       remark=f"Target offset {offset} not in consume queue range [0-{high}]")
                else:
                    offset = by_time(queue_id)
                table[queue_id] = offset
            else:
                table = {qid: by_time(qid) for qid in range(config.read_queue_nums)}
            for qid, offset in table.items():
                store.assign_reset(group, topic, qid, offset)
            body = bodies.encode_reset_offset_body(
                {MessageQueue(topic, self.broker.name, qid): offset for qid, offset in table.items()})
            return respond(cmd, ResponseCode.SUCCESS, body=body)
        if config is None:
            return respond(cmd, ResponseCode.TOPIC_NOT_EXIST,
                           remark=f"[reset-offset] reset offset failed, no topic in this broker. topic={topic}")
        force = ext_bool(ext, "isForce", False)
        offsets: dict[MessageQueue, int] = {}
        for qid in range(config.write_queue_nums):
            committed = store.stored_offset(group, topic, qid)
            if committed == -1:
                return respond(cmd, ResponseCode.SYSTEM_ERROR, remark=f"THe consumer group <{group}> not exist")
            wanted = max(0, by_time(qid))
            offsets[MessageQueue(topic, self.broker.name, qid)] = wanted if force or wanted < committed else committed
        info = self.broker.consumer_table.get(group)
        if info is None or not info.channels:
            return respond(cmd, ResponseCode.CONSUMER_NOT_ONLINE,
                           remark=f"Consumer not online, so can not reset offset, Group: {group} Topic: {topic} "
                                  f"Timestamp: {timestamp}")
        for channel in list(info.channels):
            # a oneway request: the client applies it after the broker's current work
            if isinstance(channel, InProcessChannel) and isinstance(channel.client, SimulatedConsumer):
                self.cluster.scheduler.call_later(0, channel.client.reset_offset, topic, dict(offsets))
        return respond(cmd, ResponseCode.SUCCESS, body=bodies.encode_reset_offset_body(offsets))

    def max_offset(self, cmd: RemotingCommand, conn: Channel) -> RemotingCommand:
        ext = cmd.ext_fields
        return respond(cmd, ResponseCode.SUCCESS,
                       ext={"offset": str(self.broker.max_offset(ext.get("topic", ""), ext_int(ext, "queueId")))})

    def min_offset(self, cmd: RemotingCommand, conn: Channel) -> RemotingCommand:
        return respond(cmd, ResponseCode.SUCCESS, ext={"offset": "0"})

    def earliest_time(self, cmd: RemotingCommand, conn: Channel) -> RemotingCommand:
        ext = cmd.ext_fields
        ts = self.broker.store_timestamp(ext.get("topic", ""), ext_int(ext, "queueId"), 0)
        return respond(cmd, ResponseCode.SUCCESS, ext={"timestamp": str(ts)})

    def search_offset(self, cmd: RemotingCommand, conn: Channel) -> RemotingCommand:
        ext = cmd.ext_fields
        offset = self.broker.search_offset(ext.get("topic", ""), ext_int(ext, "queueId"), ext_int(ext, "timestamp"))
        return respond(cmd, ResponseCode.SUCCESS, ext={"offset": str(offset)})

    def all_offsets(self, cmd: RemotingCommand, conn: Channel) -> RemotingCommand:
        version = (len(self.broker.offsets), self.cluster.now_ms)
        return respond(cmd, ResponseCode.SUCCESS, body=bodies.encode_consumer_offsets(self.broker.offsets, version))

    # -- admin views ---------------------------------------------------------------------------

    def topic_stats(self, cmd: RemotingCommand, conn: Channel) -> RemotingCommand:
        topic = cmd.ext_fields.get("topic", "")
        rows = self.broker.topic_stats(topic)
        if rows is None:
            return respond(cmd, ResponseCode.TOPIC_NOT_EXIST, remark=f"topic[{topic}] not exist")
        return respond(cmd, ResponseCode.SUCCESS,
                       body=bodies.encode_topic_stats(TopicStats(topic, tuple(rows), self.broker.topic_put_tps(topic))))

    def consumer_connection(self, cmd: RemotingCommand, conn: Channel) -> RemotingCommand:
        group = cmd.ext_fields.get("consumerGroup", "")
        info = self.broker.consumer_table.get(group)
        if info is None:
            return respond(cmd, ResponseCode.CONSUMER_NOT_ONLINE,
                           remark=f"the consumer group[{group}] not online")
        connections = tuple(ClientConnection(i.client_id, ch.remote_addr, i.language, i.version)
                            for ch, i in info.channels.items())
        view = ConsumerConnection(connections, info.subscriptions, info.consume_type, info.message_model,
                                  info.consume_from_where)
        return respond(cmd, ResponseCode.SUCCESS, body=bodies.encode_consumer_connection(view))

    def consume_stats(self, cmd: RemotingCommand, conn: Channel) -> RemotingCommand:
        ext = cmd.ext_fields
        group = ext.get("consumerGroup", "")
        topic_list = [t for t in (ext.get("topicList") or "").split(";") if t]
        rows, tps = self.broker.consume_stats(group, ext.get("topic") or None, topic_list=topic_list or None)
        return respond(cmd, ResponseCode.SUCCESS, body=bodies.encode_consume_stats(ConsumeStats(dict(rows), tps)))

    def broker_consume_stats(self, cmd: RemotingCommand, conn: Channel) -> RemotingCommand:
        # ``isOrder`` is required (@CFNotNull): a request without it is refused before the handler
        is_order = cmd.ext_fields.get("isOrder")
        if is_order is None:
            return respond(cmd, ResponseCode.SYSTEM_ERROR,
                           remark="org.apache.rocketmq.remoting.exception.RemotingCommandException: "
                                  "the custom field <isOrder> is null")
        groups = self.broker.broker_consume_stats(is_order.lower() == "true")
        return respond(cmd, ResponseCode.SUCCESS,
                       body=bodies.encode_broker_consume_stats(self.broker.addr, groups))

    def running_info(self, cmd: RemotingCommand, conn: Channel) -> Result:
        """``AdminBrokerProcessor.getConsumerRunningInfo`` → ``callConsumer``: relay to the client."""
        ext = cmd.ext_fields
        group, client_id = ext.get("consumerGroup", ""), ext.get("clientId", "")
        info = self.broker.find_channel(group, client_id)
        if info is None:
            return respond(cmd, ResponseCode.SYSTEM_ERROR,
                           remark=f"The Consumer <{group}> <{client_id}> not online")
        if info.version < MIN_RUNNING_INFO_VERSION:
            return respond(cmd, ResponseCode.SYSTEM_ERROR,
                           remark=f"The Consumer <{group}> Version <{version_desc(info.version)}> too low "
                                  "to finish, please upgrade it to V3_1_8_SNAPSHOT")
        relayed = RemotingCommand(code=RequestCode.GET_CONSUMER_RUNNING_INFO, language="JAVA",
                                  version=BROKER_VERSION, ext_fields=dict(ext), body=cmd.body)
        channel = info.channel
        if isinstance(channel, InProcessChannel):
            answer = channel.client.handle_server_request(relayed)
            return respond(cmd, answer.code, body=answer.body, remark=answer.remark)
        return self._relay(cmd, info, relayed)

    async def _relay(self, cmd: RemotingCommand, info: ClientChannelInfo, relayed: RemotingCommand) -> RemotingCommand:
        group, client_id = cmd.ext_fields.get("consumerGroup", ""), cmd.ext_fields.get("clientId", "")
        try:
            answer = await info.channel.invoke(relayed, RELAY_TIMEOUT_S)
        except (TimeoutError, errors.TimeoutError):
            return respond(cmd, ResponseCode.CONSUME_MSG_TIMEOUT,
                           remark=f"consumer <{group}> <{client_id}> Timeout: {int(RELAY_TIMEOUT_S * 1000)}ms")
        except errors.RmqctlError as exc:
            return respond(cmd, ResponseCode.SYSTEM_ERROR,
                           remark=f"invoke consumer <{group}> <{client_id}> Exception: {exc}")
        return respond(cmd, answer.code, body=answer.body, remark=answer.remark)

    def topic_consumers(self, cmd: RemotingCommand, conn: Channel) -> RemotingCommand:
        topic = cmd.ext_fields.get("topic", "")
        groups = self.broker.groups_of_topic(topic)
        return respond(cmd, ResponseCode.SUCCESS, body=bodies.encode_string_list("groupList", groups))

    def topics_by_consumer(self, cmd: RemotingCommand, conn: Channel) -> RemotingCommand:
        group = cmd.ext_fields.get("group", "")
        return respond(cmd, ResponseCode.SUCCESS,
                       body=bodies.encode_string_list("topicList", self.broker.topics_of_group(group),
                                                      broker_addr=self.broker.addr))

    def subscription_by_consumer(self, cmd: RemotingCommand, conn: Channel) -> RemotingCommand:
        group, topic = cmd.ext_fields.get("group", ""), cmd.ext_fields.get("topic", "")
        info = self.broker.consumer_table.get(group)
        sub = info.subscriptions.get(topic) if info else None
        return respond(cmd, ResponseCode.SUCCESS, body=bodies.encode_query_subscription(group, topic, sub))

    def all_group_configs(self, cmd: RemotingCommand, conn: Channel) -> RemotingCommand:
        version = (self.broker.group_version[0], self.broker.group_version[1])
        return respond(cmd, ResponseCode.SUCCESS,
                       body=bodies.encode_subscription_groups(self.broker.group_configs, version))

    def group_config(self, cmd: RemotingCommand, conn: Channel) -> RemotingCommand:
        group = cmd.ext_fields.get("group", "")
        config = self.broker.find_group_config(group)  # auto-creates, like the real broker
        if config is None:
            return respond(cmd, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                           remark=f"The consumer group {group} not exist")
        return respond(cmd, ResponseCode.SUCCESS, body=bodies.encode_subscription_group_config(config))

    def update_group_config(self, cmd: RemotingCommand, conn: Channel) -> RemotingCommand:
        try:
            config = bodies.subscription_group_config(cmd.body)
        except errors.ProtocolError as exc:
            return respond(cmd, ResponseCode.SYSTEM_ERROR, remark=str(exc))
        if not config.group_name:
            return respond(cmd, ResponseCode.SYSTEM_ERROR, remark="groupName is required")
        self.broker.set_group_config(config)
        return respond(cmd, ResponseCode.SUCCESS)

    def runtime_info(self, cmd: RemotingCommand, conn: Channel) -> RemotingCommand:
        return respond(cmd, ResponseCode.SUCCESS, body=bodies.encode_kv_table(self.broker.runtime_info()))

    def broker_config(self, cmd: RemotingCommand, conn: Channel) -> RemotingCommand:
        b = self.broker
        values = {
            "brokerClusterName": b.cluster, "brokerName": b.name, "brokerId": str(b.broker_id),
            "brokerIP1": b.addr.rsplit(":", 1)[0], "listenPort": b.addr.rsplit(":", 1)[1],
            "namesrvAddr": self.cluster.namesrv_addr, "autoCreateTopicEnable": "true",
            "autoCreateSubscriptionGroup": "true", "brokerRole": "ASYNC_MASTER",
            "defaultTopicQueueNums": "4", "longPollingEnable": "true",
            "notifyConsumerIdsChangedEnable": "true", "channelExpiredTimeout": "120000",
            "useServerSideResetOffset": str(b.store.server_side_reset).lower(),
            "enablePropertyFilter": str(b.property_filter).lower(),
        }
        version = f'{{"counter":{b.topic_version[0]},"stateVersion":0,"timestamp":{b.topic_version[1]}}}'
        return respond(cmd, ResponseCode.SUCCESS, body=bodies.encode_broker_config(values),
                       ext={"version": version})

    def all_topic_configs(self, cmd: RemotingCommand, conn: Channel) -> RemotingCommand:
        version = (self.broker.topic_version[0], self.broker.topic_version[1])
        return respond(cmd, ResponseCode.SUCCESS, body=bodies.encode_topic_configs(self.broker.topics, version))

    def topic_config(self, cmd: RemotingCommand, conn: Channel) -> RemotingCommand:
        topic = cmd.ext_fields.get("topic", "")
        config = self.broker.topics.get(topic)
        if config is None:
            return respond(cmd, ResponseCode.TOPIC_NOT_EXIST, remark=f"No topic in this broker. topic: {topic}")
        return respond(cmd, ResponseCode.SUCCESS, body=bodies.encode_topic_config(config))

    def create_topic(self, cmd: RemotingCommand, conn: Channel) -> RemotingCommand:
        ext = cmd.ext_fields
        topic = ext.get("topic", "")
        if not topic or topic.startswith("%") or len(topic) > 127:
            return respond(cmd, ResponseCode.INVALID_PARAMETER, remark=f"The specified topic {topic} is invalid")
        read, write = ext_int(ext, "readQueueNums", 8), ext_int(ext, "writeQueueNums", 8)
        if not (0 <= read <= MAX_QUEUES_PER_TOPIC and 0 <= write <= MAX_QUEUES_PER_TOPIC):
            return respond(cmd, ResponseCode.INVALID_PARAMETER,
                           remark=f"the emulator holds 0..{MAX_QUEUES_PER_TOPIC} read and write queues per topic, "
                                  f"not {read}/{write}")
        self.broker.create_topic(topic, read, write,
                                 ext_int(ext, "perm", 6), order=ext_bool(ext, "order"),
                                 topic_sys_flag=ext_int(ext, "topicSysFlag"))
        return respond(cmd, ResponseCode.SUCCESS)

    def producer_connection(self, cmd: RemotingCommand, conn: Channel) -> RemotingCommand:
        group = cmd.ext_fields.get("producerGroup", "")
        table = self.broker.producers.get(group)
        if not table:
            return respond(cmd, ResponseCode.SYSTEM_ERROR, remark=f"the producer group[{group}] not exist")
        return respond(cmd, ResponseCode.SUCCESS, body=bodies.encode_producer_connection(
            ClientConnection(i.client_id, ch.remote_addr, i.language, i.version) for ch, i in table.items()))

    # -- messages ------------------------------------------------------------------------------

    def send_message(self, cmd: RemotingCommand, conn: Channel) -> RemotingCommand:
        ext = cmd.ext_fields
        if cmd.code == RequestCode.SEND_MESSAGE_V2:
            ext = {_V2_HEADER.get(k, k): v for k, v in ext.items()}
        topic = ext.get("topic", "")
        if topic not in self.broker.topics:
            # autoCreateTopicEnable: the default topic's settings, capped by the request.
            count = min(ext_int(ext, "defaultTopicQueueNums", 4) or 4, 8)
            self.broker.create_topic(topic, count, count)
        config = self.broker.topics[topic]
        if not config.writable:
            return respond(cmd, ResponseCode.NO_PERMISSION,
                           remark=f"the topic[{topic}] sending message is forbidden")
        queue_id = ext_int(ext, "queueId")
        if not 0 <= queue_id < config.write_queue_nums:
            return respond(cmd, ResponseCode.SYSTEM_ERROR,
                           remark=f"request queueId[{queue_id}] is illegal, {topic}")
        props = decode_properties(ext.get("properties", ""))
        seq = self.cluster.next_seq()
        msg_id = props.get("UNIQ_KEY") or f"7F000001{seq:024X}"
        message = self.broker.put_message(topic, queue_id, props.get("TAGS"), seq=seq, msg_id=msg_id,
                                          born_ms=ext_int(ext, "bornTimestamp") or None, body=cmd.body,
                                          keys=props.get("KEYS"), producer=ext.get("producerGroup", ""),
                                          properties=user_properties(props),
                                          # a copy sent to a retry topic is consumed under its first topic
                                          origin_topic=props.get("RETRY_TOPIC") if topic.startswith("%RETRY%")
                                          else None)
        self.cluster.record_send(message)
        return respond(cmd, ResponseCode.SUCCESS, ext={
            "msgId": offset_message_id(self._store_host(), message.physical_offset), "queueId": str(queue_id),
            "queueOffset": str(message.queue_offset), "MSG_REGION": "DefaultRegion", "TRACE_ON": "true",
        })

    def pull_message(self, cmd: RemotingCommand, conn: Channel) -> Awaitable[RemotingCommand]:
        ext = cmd.ext_fields
        header = PullRequestHeader(
            consumer_group=ext.get("consumerGroup", ""), topic=ext.get("topic", ""),
            queue_id=ext_int(ext, "queueId"), queue_offset=ext_int(ext, "queueOffset"),
            sys_flag=ext_int(ext, "sysFlag"), sub_version=ext_int(ext, "subVersion"),
            max_msg_nums=ext_int(ext, "maxMsgNums", 32), commit_offset=ext_int(ext, "commitOffset"),
            suspend_timeout_ms=ext_int(ext, "suspendTimeoutMillis", 15_000),
            subscription=ext.get("subscription"), expression_type=ext.get("expressionType") or "TAG",
        )
        loop = asyncio.get_running_loop()
        future: asyncio.Future[RemotingCommand] = loop.create_future()
        store_host = self._store_host()

        def done(result: PullResult) -> None:
            if future.done():
                return
            body = b"".join(encode_message(message_record(m, store_host)) for m in result.messages)
            future.set_result(respond(cmd, result.code, body=body, remark=result.remark, ext={
                "suggestWhichBrokerId": "0", "nextBeginOffset": str(result.next_begin_offset),
                "minOffset": str(result.min_offset), "maxOffset": str(result.max_offset),
                "topicSysFlag": "0", "groupSysFlag": "0",
            }))

        self.broker.pull(conn, header, done)
        return future

    def _store_host(self) -> tuple[str, int]:
        host, _, port = self.broker.addr.rpartition(":")
        return host, int(port or 0)

    def view_message(self, cmd: RemotingCommand, conn: Channel) -> RemotingCommand:
        """``QueryMessageProcessor.viewMessageById``: the record at one commit-log offset."""
        offset = ext_int(cmd.ext_fields, "offset", -1)
        message = self.broker.message_at(offset)
        if message is None:
            return respond(cmd, ResponseCode.SYSTEM_ERROR, remark=f"can not find message by the offset, {offset}")
        return respond(cmd, ResponseCode.SUCCESS, body=encode_message(message_record(message, self._store_host())))

    def query_message(self, cmd: RemotingCommand, conn: Channel) -> RemotingCommand:
        """``QueryMessageProcessor.queryMessage``: messages found through the index, in one body."""
        ext = cmd.ext_fields
        found = self.broker.query_messages(
            ext.get("topic", ""), ext.get("key", ""), ext_int(ext, "maxNum", 32), ext_int(ext, "beginTimestamp"),
            ext_int(ext, "endTimestamp", _END_OF_TIME), unique_key=ext.get("_UNIQUE_KEY_QUERY") == "true")
        header = {"indexLastUpdateTimestamp": str(self.cluster.now_ms), "indexLastUpdatePhyoffset": "0"}
        if not found:
            return respond(cmd, ResponseCode.QUERY_NOT_FOUND,
                           remark="can not find message, maybe time range not correct", ext=header)
        store_host = self._store_host()
        body = b"".join(encode_message(message_record(m, store_host)) for m in found)
        return respond(cmd, ResponseCode.SUCCESS, body=body, ext=header)
