"""One emulated broker: its message store, consumer groups and pulls composed, plus the admin views; no I/O.

:class:`BrokerState` is what the server, the simulated clients and the world talk to. The rules
live in three parts, each mirroring its Java counterparts (see their docstrings):

- :mod:`~rmqctl.emulator.store`: topics, consume queues, consumer offsets, send-back
  (``TopicConfigManager``, ``DefaultMessageStore``, ``ConsumerOffsetManager``);
- :mod:`~rmqctl.emulator.groups`: consumer groups, heartbeats and the one subscription table per
  group, the rules behind the incidents (``ConsumerManager``, ``ConsumerGroupInfo``,
  ``ClientManageProcessor``);
- :mod:`~rmqctl.emulator.pulls`: pull processing and long polling (``PullMessageProcessor``,
  ``PullRequestHoldService``);
- :mod:`~rmqctl.emulator.locks`: the queue locks of orderly consumers (``RebalanceLockManager``).

This module adds what ``AdminBrokerProcessor`` answers from all three: ConsumeStats,
TopicStatsTable, QUERY_TOPIC_CONSUME_BY_WHO and runtime info. The state is driven by a
:class:`~rmqctl.emulator.clock.Scheduler`.

Must not import the CLI, textual or pyspark, nor anything that does I/O.
"""

from __future__ import annotations

from rmqctl.emulator.clock import Scheduler
from rmqctl.emulator.groups import Channel, ConsumerGroups
from rmqctl.emulator.locks import RebalanceLockManager
from rmqctl.emulator.pulls import PullProcessor
from rmqctl.emulator.store import MessageStore, MinuteRate
from rmqctl.model import ConsumeStats, MessageQueue, OffsetEntry, TopicOffset

#: what ``MQVersion.CURRENT_VERSION`` the emulated brokers claim (``V5_3_3``)
BROKER_VERSION = 479
BROKER_VERSION_DESC = "V5_3_3"


class BrokerState:
    """One broker: a :class:`MessageStore`, its :class:`ConsumerGroups` and its :class:`PullProcessor`.

    The parts' data and operations that callers use are also reachable here under the same names,
    so a call site reads ``broker.heartbeat(...)`` whichever part holds the rule.
    """

    def __init__(self, name: str, cluster: str, scheduler: Scheduler, *, broker_id: int = 0,
                 system_topics: bool = True) -> None:
        self.name = name
        self.cluster = cluster
        self.broker_id = broker_id
        self.scheduler = scheduler
        #: advertised ``host:port``; the server sets the real one when it binds
        self.addr = "127.0.0.1:10911"
        self.boot_ms = scheduler.now_ms
        self.store = MessageStore(scheduler)
        self.groups = ConsumerGroups(scheduler, self.store)
        self.pulls = PullProcessor(scheduler, self.store, self.groups)
        #: the queue locks orderly consumers take (LOCK_BATCH_MQ / UNLOCK_BATCH_MQ)
        self.locks = RebalanceLockManager(scheduler)
        #: ``enablePropertyFilter``: SQL92 subscriptions are accepted (CHECK_CLIENT_CONFIG) and
        #: filtered on message properties
        self.property_filter = True
        store, groups, pulls = self.store, self.groups, self.pulls
        # The message store (the containers are shared, never rebound).
        self.topics = store.topics
        self.topic_version = store.topic_version
        self.offsets = store.offsets
        self.pull_offsets = store.pull_offsets
        self.create_topic = store.create_topic
        self.queue = store.queue
        self.max_offset = store.max_offset
        self.store_timestamp = store.store_timestamp
        self.search_offset = store.search_offset
        self.put_message = store.put_message
        self.message_at = store.message_at
        self.query_messages = store.query_messages
        self.topic_put_tps = store.topic_put_tps
        self.commit_offset = store.commit_offset
        self.stored_offset = store.stored_offset
        self.query_consumer_offset = store.query_consumer_offset
        self.topics_of_group = store.topics_of_group
        self.send_back = store.send_back
        # The consumer groups.
        self.consumer_table = groups.consumer_table
        self.group_configs = groups.group_configs
        self.group_version = groups.group_version
        self.producers = groups.producers
        self.find_group_config = groups.find_group_config
        self.set_group_config = groups.set_group_config
        self.heartbeat = groups.heartbeat
        self.unregister_client = groups.unregister_client
        self.expire_channels = groups.expire_channels
        self.consumer_ids = groups.consumer_ids
        self.find_channel = groups.find_channel
        # The pulls.
        self.pull = pulls.pull
        self.suspended_pulls = pulls.suspended_pulls
        if system_topics:
            store.create_system_topics(cluster, name)

    def channel_closed(self, channel: Channel) -> None:
        """A client connection closed: ``ConsumerManager.doChannelCloseEvent`` (and the producer
        side), then the pulls held for it are dropped."""
        self.groups.channel_closed(channel)
        self.pulls.channel_closed(channel)

    # -- admin views ------------------------------------------------------------------------

    def groups_of_topic(self, topic: str) -> list[str]:
        """QUERY_TOPIC_CONSUME_BY_WHO: online subscribers plus groups with offsets on the topic."""
        groups = set(self.groups.topic_groups.get(topic, ()))
        groups.update(g for (t, g) in self.store.offsets if t == topic)
        return sorted(groups)

    def consume_stats_topics(self, group: str, topic: str | None,
                             topic_list: list[str] | None = None) -> list[str]:
        """``getTopicsForCollectingConsumeStats``: offsets topics (or the given one), minus topics
        missing from the group's subscription table when the group has any subscription; an
        explicit topic list (5.3.2+) is taken as is."""
        if topic_list:
            return list(topic_list)
        topics = [topic] if topic else self.store.topics_of_group(group)
        info = self.groups.consumer_table.get(group)
        if info is not None and info.subscriptions:
            topics = [t for t in topics if t in info.subscriptions]
        return topics

    def consume_stats(self, group: str, topic: str | None = None, *, topic_list: list[str] | None = None
                      ) -> tuple[list[tuple[MessageQueue, OffsetEntry]], float]:
        """GET_CONSUME_STATS (208): one row per queue, in the order written, and the group's
        consume TPS."""
        rows = []
        tps = 0.0
        store = self.store
        for name in self.consume_stats_topics(group, topic, topic_list):
            config = store.topics.get(name)
            if config is None:
                continue
            committed = store.offsets.get((name, group), {})
            pulled = store.pull_offsets.get((name, group), {})
            for qid in range(config.read_queue_nums):
                consumer_offset = max(0, committed.get(qid, -1))
                entry = OffsetEntry(
                    broker_offset=store.max_offset(name, qid),
                    consumer_offset=consumer_offset,
                    pull_offset=max(consumer_offset, pulled.get(qid, -1)),
                    last_timestamp=store.store_timestamp(name, qid, consumer_offset - 1) if consumer_offset > 0 else 0,
                )
                rows.append((MessageQueue(name, self.name, qid), entry))
            rate = self.pulls.group_get_tps(group, name)
            if rate is not None:
                tps += rate
        return rows, tps

    def broker_consume_stats(self, is_order: bool) -> list[tuple[str, list[ConsumeStats]]]:
        """GET_BROKER_CONSUME_STATS (317), ``fetchAllConsumeStatsInBroker``: every group of the
        subscription-group table, each with one ConsumeStats per topic it has offsets for; the
        topics left out as GET_CONSUME_STATS leaves them out (no config, or missing from the
        group's subscription table while it has one), and with ``is_order`` every topic not
        ordered. Rows go up to the *write* queue count, and ``pullOffset`` stays 0."""
        store = self.store
        out = []
        for group in list(self.group_configs):
            per_topic = []
            for name in self.consume_stats_topics(group, None):
                config = store.topics.get(name)
                if config is None or (is_order and not config.order):
                    continue
                committed = store.offsets.get((name, group), {})
                rows = {}
                for qid in range(config.write_queue_nums):
                    consumer_offset = max(0, committed.get(qid, -1))
                    rows[MessageQueue(name, self.name, qid)] = OffsetEntry(
                        broker_offset=store.max_offset(name, qid),
                        consumer_offset=consumer_offset,
                        pull_offset=0,
                        last_timestamp=store.store_timestamp(name, qid, consumer_offset - 1)
                        if consumer_offset > 0 else 0,
                    )
                per_topic.append(ConsumeStats(rows, self.pulls.group_get_tps(group, name) or 0.0))
            out.append((group, per_topic))
        return out

    def topic_stats(self, topic: str) -> list[TopicOffset] | None:
        """GET_TOPIC_STATS_INFO (202): one row per queue, None when the topic does not exist."""
        config = self.store.topics.get(topic)
        if config is None:
            return None
        rows = []
        for qid in range(max(config.read_queue_nums, config.write_queue_nums)):
            max_offset = self.store.max_offset(topic, qid)
            last = self.store.store_timestamp(topic, qid, max_offset - 1) if max_offset > 0 else 0
            rows.append(TopicOffset(MessageQueue(topic, self.name, qid), 0, max_offset, last))
        return rows

    def runtime_info(self) -> dict[str, str]:
        """GET_BROKER_RUNTIME_INFO (28): the keys ``prepareRuntimeInfo`` and the store write."""
        now = self.scheduler.now_ms
        up = max(0, now - self.boot_ms) // 1000
        runtime = f"[ {up // 86400} days, {up // 3600 % 24} hours, {up // 60 % 60} minutes, {up % 60} seconds ]"
        put = self.store.put_rate
        get = self.pulls.get_rate
        total_times = max(1, self.store.put_total)

        def tps3(rate: MinuteRate) -> str:
            return f"{rate.tps(now, 10):.2f} {rate.tps(now, 60):.2f} {rate.tps(now, 60):.2f}"

        capacity = 100 * 1024 ** 3
        info = {
            "bootTimestamp": str(self.boot_ms),
            "runtime": runtime,
            "brokerVersionDesc": BROKER_VERSION_DESC,
            "brokerVersion": str(BROKER_VERSION),
            "brokerActive": "true",
            "msgPutTotalYesterdayMorning": "0",
            "msgPutTotalTodayMorning": "0",
            "msgPutTotalTodayNow": str(self.store.put_total),
            "msgGetTotalYesterdayMorning": "0",
            "msgGetTotalTodayMorning": "0",
            "msgGetTotalTodayNow": str(self.pulls.get_total),
            "putTps": tps3(put),
            "getTransferredTps": tps3(get),
            "getFoundTps": tps3(get),
            "getMissTps": "0.00 0.00 0.00",
            "getTotalTps": tps3(get),
            "putMessageEntireTimeMax": "1",
            "putMessageTimesTotal": str(total_times),
            "putMessageFailedTimes": "0",
            "putMessageSizeTotal": str(self.store.put_bytes),
            "putMessageDistributeTime": "[<=0ms]:0 [0~10ms]:0 [10~50ms]:0 [50~100ms]:0 "
                                        "[100~200ms]:0 [200~500ms]:0 [500ms~1s]:0 [1~2s]:0 "
                                        "[2~3s]:0 [3~4s]:0 [4~5s]:0 [5~10s]:0 [10s~]:0 ",
            "putMessageAverageSize": str(self.store.put_bytes / total_times),
            "dispatchMaxBuffer": "0",
            "getMessageEntireTimeMax": "1",
            "putLatency99": "0.00",
            "putLatency999": "0.00",
            "commitLogDiskRatio": "0.1",
            "consumeQueueDiskRatio": "0.1",
            "commitLogMinOffset": "0",
            "commitLogMaxOffset": str(self.store.put_bytes),
            "dispatchBehindBytes": "0",
            "pageCacheLockTimeMills": "0",
            "earliestMessageTimeStamp": str(self.store.earliest_message_time()),
            "startAcceptSendRequestTimeStamp": "0",
            "timerReadBehind": "0",
            "timerOffsetBehind": "0",
            "timerCongestNum": "0",
            "timerEnqueueTps": "0.0",
            "timerDequeueTps": "0.0",
            "remainTransientStoreBufferNumbs": "2147483647",
            "remainHowManyDataToFlush": "0 B",
            "commitLogDirCapacity": f"Total : {_human(capacity)}, Free : {_human(capacity * 9 // 10)}.",
            "sendThreadPoolQueueSize": "0",
            "sendThreadPoolQueueCapacity": "10000",
            "pullThreadPoolQueueSize": "0",
            "pullThreadPoolQueueCapacity": "100000",
            "litePullThreadPoolQueueSize": "0",
            "litePullThreadPoolQueueCapacity": "100000",
            "queryThreadPoolQueueSize": "0",
            "queryThreadPoolQueueCapacity": "20000",
            "ackThreadPoolQueueSize": "0",
            "ackThreadPoolQueueCapacity": "100000",
            "sendThreadPoolQueueHeadWaitTimeMills": "0",
            "pullThreadPoolQueueHeadWaitTimeMills": "0",
            "queryThreadPoolQueueHeadWaitTimeMills": "0",
            "litePullThreadPoolQueueHeadWaitTimeMills": "0",
            "ackThreadPoolQueueHeadWaitTimeMills": "0",
            "EndTransactionQueueSize": "0",
            "EndTransactionThreadPoolQueueCapacity": "100000",
        }
        return info


def _human(size: int) -> str:
    """``MixAll.humanReadableByteCount(bytes, false)`` (binary units)."""
    if size < 1024:
        return f"{size} B"
    units = "KMGTPE"
    exp = 0
    value = float(size)
    while value >= 1024 and exp < len(units):
        value /= 1024
        exp += 1
    return f"{value:.1f} {units[exp - 1]}iB"
