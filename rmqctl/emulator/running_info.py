"""What a simulated consumer tells admins: its side of the remoting protocol.

A broker relays GET_CONSUMER_RUNNING_INFO (307) to the client it names; the Java client's
``ClientRemotingProcessor`` answers with a ``ConsumerRunningInfo``: its properties (the bean's
fields plus the PROP_* entries), subscriptions, per-queue process-queue state and per-topic rates.
:func:`answer_server_request` builds that answer from a :class:`~rmqctl.emulator.client.SimulatedConsumer`'s
state, encoded with :mod:`rmqctl.remoting.bodies`; nothing here changes what the consumer does.

Must not import the CLI, textual or pyspark, nor anything that does I/O.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from rmqctl.emulator.broker import BROKER_VERSION
from rmqctl.emulator.client_config import (
    HEARTBEAT_INTERVAL_MS,
    PERSIST_INTERVAL_MS,
    PULL_BATCH_SIZE,
    PULL_DELAY_ON_EXCEPTION_MS,
    PULL_THRESHOLD_FOR_QUEUE,
    ROUTE_POLL_INTERVAL_MS,
)
from rmqctl.model import (
    STRATEGY_CLASSES,
    ConsumerRunningInfo,
    ConsumeStatus,
    MessageQueue,
    ProcessQueueInfo,
    Subscription,
    version_desc,
)
from rmqctl.remoting import bodies
from rmqctl.remoting.codes import RequestCode, ResponseCode
from rmqctl.remoting.frame import RemotingCommand

if TYPE_CHECKING:
    from rmqctl.emulator.client import SimulatedConsumer


def answer_server_request(consumer: SimulatedConsumer, request: RemotingCommand) -> RemotingCommand:
    """``ClientRemotingProcessor``: answers GET_CONSUMER_RUNNING_INFO relayed by a broker."""
    if request.code != RequestCode.GET_CONSUMER_RUNNING_INFO:
        return request.response(ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
                                remark=f" request type {request.code} not supported")
    group = request.ext_fields.get("consumerGroup", "")
    if group != consumer.group or not consumer.running:
        return request.response(ResponseCode.SYSTEM_ERROR,
                                remark=f"The Consumer Group <{group}> not exist in this consumer")
    jstack = request.ext_fields.get("jstackEnable", "false").lower() == "true"
    info = ConsumerRunningInfo(consumer.client_id, running_properties(consumer), tuple(running_subscriptions(consumer)),
                               dict(running_mq_table(consumer)), running_status(consumer))
    body = bodies.encode_consumer_running_info(info, jstack=fake_jstack(consumer) if jstack else None)
    return RemotingCommand(code=ResponseCode.SUCCESS, opaque=request.opaque, flag=1,
                           language="JAVA", version=BROKER_VERSION, body=body)


def strategy_to_string(consumer: SimulatedConsumer) -> str:
    name = consumer.strategy.name
    cls = STRATEGY_CLASSES.get(name.split("-", 1)[0], STRATEGY_CLASSES["AVG"])
    return f"org.apache.rocketmq.client.consumer.rebalance.{cls}@{consumer.identity_hashes['strategy']}"


def running_properties(consumer: SimulatedConsumer) -> dict[str, str]:
    """``MixAll.object2Properties(defaultMQPushConsumer)`` plus the PROP_* entries."""
    spec = consumer.spec
    instance = consumer.client_id.split("@", 1)[1] if "@" in consumer.client_id else "DEFAULT"
    consume_ts = dt.datetime.fromtimestamp((consumer.started_ms - 30 * 60_000) / 1000, dt.UTC)
    offset_store = ("LocalFileOffsetStore" if consumer.broadcasting else "RemoteBrokerOffsetStore")
    props = {
        "consumerGroup": consumer.group,
        "messageModel": spec.message_model,
        "consumeFromWhere": spec.consume_from_where,
        "consumeTimestamp": consume_ts.strftime("%Y%m%d%H%M%S"),
        "allocateMessageQueueStrategy": strategy_to_string(consumer),
        "subscription": "{}",
        "messageListener": f"rmqctl.emulator.SimulatedListener@{consumer.identity_hashes['listener']}",
        "offsetStore": f"org.apache.rocketmq.client.consumer.store.{offset_store}@{consumer.identity_hashes['offset']}",
        "defaultMQPushConsumerImpl":
            f"org.apache.rocketmq.client.impl.consumer.DefaultMQPushConsumerImpl@{consumer.identity_hashes['impl']}",
        "consumeThreadMin": str(spec.consume_threads),
        "consumeThreadMax": str(spec.consume_threads),
        "adjustThreadPoolNumsThreshold": "100000",
        "consumeConcurrentlyMaxSpan": "2000",
        "pullThresholdForQueue": str(PULL_THRESHOLD_FOR_QUEUE),
        "popThresholdForQueue": "96",
        "pullThresholdSizeForQueue": "100",
        "pullThresholdForTopic": "-1",
        "pullThresholdSizeForTopic": "-1",
        "pullInterval": "0",
        "consumeMessageBatchMaxSize": "1",
        "pullBatchSize": str(PULL_BATCH_SIZE),
        "pullBatchSizeInBytes": "262144",
        "postSubscriptionWhenPull": "true" if spec.post_subscription else "false",
        "unitMode": "false",
        "maxReconsumeTimes": "-1",
        "suspendCurrentQueueTimeMillis": "1000",
        "consumeTimeout": "15",
        "popInvisibleTime": "60000",
        "popBatchNums": "32",
        "awaitTerminationMillisWhenShutdown": "0",
        "clientRebalance": "true",
        "namesrvAddr": consumer.ctx.namesrv_addr,
        "clientIP": consumer.ip,
        "instanceName": instance,
        "clientCallbackExecutorThreads": "2",
        "namespaceInitialized": "false",
        "accessChannel": "LOCAL",
        "pollNameServerInterval": str(ROUTE_POLL_INTERVAL_MS),
        "heartbeatBrokerInterval": str(HEARTBEAT_INTERVAL_MS),
        "persistConsumerOffsetInterval": str(PERSIST_INTERVAL_MS),
        "pullTimeDelayMillsWhenException": str(PULL_DELAY_ON_EXCEPTION_MS),
        "traceMsgBatchNum": "10",
        "decodeReadBody": "true",
        "decodeDecompressBody": "true",
        "vipChannelEnabled": "false",
        "useHeartbeatV2": "false",
        "useTLS": "false",
        "socksProxyConfig": "{}",
        "mqClientApiTimeout": "3000",
        "detectTimeout": "200",
        "detectInterval": "2000",
        "language": "JAVA",
        "enableStreamRequestType": "false",
        "sendLatencyEnable": "false",
        "startDetectorEnable": "false",
        "enableHeartbeatChannelEventListener": "true",
        "enableTrace": "false",
        "maxPageSizeInGetMetadata": "2000",
        "PROP_CONSUMEORDERLY": "true" if spec.orderly else "false",
        "PROP_THREADPOOL_CORE_SIZE": str(spec.consume_threads),
        "PROP_CONSUMER_START_TIMESTAMP": str(consumer.started_ms),
        "PROP_NAMESERVER_ADDR": consumer.ctx.namesrv_addr + ";",
        "PROP_CONSUME_TYPE": consumer.consume_type,
        "PROP_CLIENT_VERSION": version_desc(BROKER_VERSION),
    }
    return props


def running_subscriptions(consumer: SimulatedConsumer) -> list[Subscription]:
    # A TreeSet ordered by ``topic + "@" + subString``.
    return sorted(consumer.subscriptions.values(), key=lambda s: f"{s.topic}@{s.expression}")


def running_mq_table(consumer: SimulatedConsumer) -> list[tuple[MessageQueue, ProcessQueueInfo]]:
    out = []
    for mq in sorted(consumer.pq_table):
        pq = consumer.pq_table[mq]
        store = consumer.local_offsets if consumer.broadcasting else consumer.offset_store
        cached = pq.cached
        out.append((mq, ProcessQueueInfo(
            commit_offset=store.get(mq, -1),
            cached_msg_count=len(cached),
            cached_msg_min_offset=min(cached) if cached else 0,
            cached_msg_max_offset=max(cached) if cached else 0,
            cached_msg_size_mib=0,
            locked=pq.locked,
            dropped=pq.dropped,
            try_unlock_times=0,
            last_lock_timestamp=pq.last_lock_ms,
            last_pull_timestamp=pq.last_pull_ms,
            last_consume_timestamp=pq.last_consume_ms,
        )))
    return out


def running_status(consumer: SimulatedConsumer) -> dict[str, ConsumeStatus]:
    """statusTable: pull and consume rates per subscribed topic."""
    now = consumer.scheduler.now_ms
    out = {}
    for topic in sorted(consumer.subscriptions):
        pull = consumer.pull_rate.get(topic)
        consume = consumer.consume_rate.get(topic)
        failed = consumer.failed_rate.get(topic)
        times = consumer.failed_times.get(topic)
        while times and times[0] <= now - 3_600_000:
            times.popleft()
        out[topic] = ConsumeStatus(
            pull_rt=1.0 if pull else 0.0,
            pull_tps=pull.tps(now) if pull else 0.0,
            consume_rt=float(consumer.spec.consume_ms) if consume or failed else 0.0,
            consume_ok_tps=consume.tps(now) if consume else 0.0,
            consume_failed_tps=failed.tps(now) if failed else 0.0,
            consume_failed_msgs=len(times) if times else 0,
        )
    return out


def fake_jstack(consumer: SimulatedConsumer) -> str:
    return (f'"ConsumeMessageThread_{consumer.group}_1" Id=42 WAITING\n'
            "\tat sun.misc.Unsafe.park(Native Method)\n")
