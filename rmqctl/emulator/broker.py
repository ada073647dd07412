"""One emulated broker's state and rules, mirrored from the Java broker; no I/O.

What is mirrored (class names are the Java ones):

- ``ConsumerManager`` / ``ConsumerGroupInfo``: one consumer table per group, channels keyed by
  connection (so one client id can be registered twice), and ONE subscription table per group,
  updated by every heartbeat with the exact ``updateSubscription`` rules: a new topic is added, an
  existing topic is replaced only by a strictly greater subVersion, topics absent from the
  heartbeat are removed; consumers are told the ids changed only when a channel was added or
  removed or a topic was added or removed (never for a replaced expression), and never for
  BROADCASTING groups (5.x).
- ``ClientManageProcessor.heartBeat``: the group config is auto-created and ``%RETRY%group`` is
  created with the group's ``retryQueueNums`` queues.
- ``PullMessageProcessor`` + ``DefaultMessageStore.getMessage``: without the SUBSCRIPTION sys flag
  (the push consumer's default) the pull is filtered by the group's STORED subscription, so
  possibly by another client's tags; a missing group or topic answers 24
  (SUBSCRIPTION_NOT_EXIST), a stored subVersion older than the request's answers 25
  (SUBSCRIPTION_NOT_LATEST); messages whose consume-queue tag code does not match are skipped and
  the next offset moves past them; an empty result long-polls until a matching message arrives or
  the suspend timeout ends; the request's piggybacked commit offset is stored.
- ``ConsumerOffsetManager``: offsets per ``topic@group`` plus the 5.x pull-offset table.
- ``AdminBrokerProcessor``: ConsumeStats, TopicStatsTable, consumer connections, runtime info.

The state is driven by a :class:`~rmqctl.emulator.clock.Scheduler`; server-to-client traffic
(NOTIFY_CONSUMER_IDS_CHANGED, the GET_CONSUMER_RUNNING_INFO relay) goes through the
:class:`Channel` protocol, implemented in-process by simulated clients and over TCP by the server.

Must not import the CLI, textual or pyspark, nor anything that does I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Protocol

from rmqctl.emulator.clock import Scheduler, Timer
from rmqctl.model import (
    BROKER_BUILTIN_GROUPS,
    DLQ_PREFIX,
    RETRY_PREFIX,
    SUB_ALL,
    Subscription,
    SubscriptionGroupConfig,
    java_string_hash,
    parse_tag_expression,
)
from rmqctl.remoting.codes import ResponseCode
from rmqctl.remoting.frame import RemotingCommand

PERM_INHERIT = 1
PERM_WRITE = 2
PERM_READ = 4

# PullSysFlag bits
FLAG_COMMIT_OFFSET = 0x1
FLAG_SUSPEND = 0x2
FLAG_SUBSCRIPTION = 0x4
FLAG_CLASS_FILTER = 0x8

#: ``MessageStoreConfig.messageDelayLevel`` in seconds (level 1 is the first)
DELAY_LEVELS_S = (1, 5, 10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200)
#: ``BrokerConfig.shortPollingTimeMills``: how long an empty pull is held without long polling
SHORT_POLLING_MS = 1_000
#: ``BrokerConfig.channelExpiredTimeout``
CHANNEL_EXPIRED_MS = 120_000
#: ``DefaultMessageStore.getMessage`` scans at most this many consume-queue entries per pull
#: (16000 bytes of 20-byte units) before answering NO_MATCHED_MESSAGE.
MAX_FILTER_SCAN = 800
#: what ``MQVersion.CURRENT_VERSION`` the emulated brokers claim (``V5_3_3``)
BROKER_VERSION = 479
BROKER_VERSION_DESC = "V5_3_3"

REMARK_GROUP_NOT_EXIST = "the consumer's group info not exist"
REMARK_SUB_NOT_EXIST = "the consumer's subscription not exist"
REMARK_SUB_NOT_LATEST = "the consumer's subscription not latest"
#: the FAQ pointer the broker appends to the two remarks above
FAQ_SUFFIX = "\nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details."


class Channel(Protocol):
    """A client connection as the broker sees it (a Netty ``Channel``)."""

    @property
    def channel_id(self) -> int: ...

    @property
    def remote_addr(self) -> str: ...

    def notify_consumer_ids_changed(self, group: str) -> None:
        """Oneway NOTIFY_CONSUMER_IDS_CHANGED (code 40)."""

    async def invoke(self, request: RemotingCommand, timeout: float) -> RemotingCommand:
        """Send a request to the client and wait for its answer (the 307 relay)."""
        ...


@dataclass(frozen=True, slots=True)
class TopicConfig:
    name: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int = PERM_READ | PERM_WRITE
    order: bool = False
    topic_sys_flag: int = 0
    topic_filter_type: str = "SINGLE_TAG"

    @property
    def readable(self) -> bool:
        return bool(self.perm & PERM_READ)

    @property
    def writable(self) -> bool:
        return bool(self.perm & PERM_WRITE)


@dataclass(frozen=True, slots=True)
class StoredMessage:
    """A message in a consume queue, with what the consume-queue entry carries (tag code)."""

    topic: str
    queue_id: int
    queue_offset: int
    tag: str | None
    tags_code: int
    store_timestamp: int
    born_timestamp: int
    msg_id: str
    #: emulator-wide sequence number, for delivery accounting
    seq: int
    body: bytes = b""
    keys: str | None = None
    producer: str = "default"
    #: how often the message was consumed and sent back (``reconsumeTimes``)
    reconsume_times: int = 0
    #: for a retry or dead-letter copy: the topic and emulator sequence number of the original
    origin_topic: str | None = None
    origin_seq: int | None = None


@dataclass(slots=True)
class ClientChannelInfo:
    channel: Channel
    client_id: str
    language: str
    version: int
    last_update_ms: int


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
    client_id: str
    consumers: tuple[ConsumerData, ...] = ()
    producers: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PullRequestHeader:
    consumer_group: str
    topic: str
    queue_id: int
    queue_offset: int
    sys_flag: int
    sub_version: int
    max_msg_nums: int = 32
    commit_offset: int = 0
    suspend_timeout_ms: int = 15_000
    subscription: str | None = None
    expression_type: str = "TAG"


@dataclass(frozen=True, slots=True)
class PullResult:
    code: int
    remark: str | None
    messages: tuple[StoredMessage, ...]
    next_begin_offset: int
    min_offset: int
    max_offset: int


PullResponder = Callable[[PullResult], None]


class ConsumerGroupInfo:
    """``ConsumerGroupInfo``: a group's live channels and its one stored subscription table."""

    __slots__ = (
        "channels",
        "consume_from_where",
        "consume_type",
        "last_update_ms",
        "message_model",
        "name",
        "subscriptions",
    )

    def __init__(self, name: str, consume_type: str, message_model: str, consume_from_where: str) -> None:
        self.name = name
        self.channels: dict[Channel, ClientChannelInfo] = {}
        self.subscriptions: dict[str, Subscription] = {}
        self.consume_type = consume_type
        self.message_model = message_model
        self.consume_from_where = consume_from_where
        self.last_update_ms = 0

    def update_channel(self, info: ClientChannelInfo, consume_type: str, message_model: str,
                       consume_from_where: str, now_ms: int) -> bool:
        # Group-level settings are overwritten by every heartbeat: the last writer wins.
        self.consume_type = consume_type
        self.message_model = message_model
        self.consume_from_where = consume_from_where
        old = self.channels.get(info.channel)
        updated = False
        if old is None:
            self.channels[info.channel] = info
            old = info
            updated = True
        elif old.client_id != info.client_id:
            # Same connection, another client id: replaced, but Java does not count it as a change.
            self.channels[info.channel] = info
            old = info
        self.last_update_ms = now_ms
        old.last_update_ms = now_ms
        return updated

    def update_subscription(self, subs: Iterable[Subscription], now_ms: int) -> bool:
        """The exact ``updateSubscription`` rules; True only when a topic was added or removed."""
        updated = False
        topics: set[str] = set()
        table = self.subscriptions
        for sub in subs:
            old = table.get(sub.topic)
            if old is None:
                table[sub.topic] = sub
                updated = True
            elif sub.sub_version > old.sub_version:
                # Replacing the expression of a known topic is NOT an update: nobody is notified.
                table[sub.topic] = sub
            topics.add(sub.topic)
        for topic in [t for t in table if t not in topics]:
            # Topics missing from THIS client's heartbeat are dropped for the whole group.
            del table[topic]
            updated = True
        self.last_update_ms = now_ms
        return updated

    def unregister_channel(self, channel: Channel) -> bool:
        return self.channels.pop(channel, None) is not None

    def client_ids(self) -> list[str]:
        """``getAllClientId``: one id per channel, duplicates included."""
        return [info.client_id for info in self.channels.values()]

    def find_channel(self, client_id: str) -> ClientChannelInfo | None:
        for info in self.channels.values():
            if info.client_id == client_id:
                return info
        return None


@dataclass(slots=True)
class _Suspended:
    channel: Channel | None
    header: PullRequestHeader
    respond: PullResponder
    filter: Subscription
    timer: Timer | None = None
    done: bool = False


class MinuteRate:
    """Events per second over the last minute (what the broker's StatsItem minute TPS shows)."""

    __slots__ = ("buckets",)

    def __init__(self) -> None:
        self.buckets: dict[int, int] = {}

    def add(self, now_ms: int, count: int) -> None:
        second = now_ms // 1000
        self.buckets[second] = self.buckets.get(second, 0) + count
        if len(self.buckets) > 120:
            for old in [s for s in self.buckets if s < second - 60]:
                del self.buckets[old]

    def tps(self, now_ms: int, window_s: int = 60) -> float:
        second = now_ms // 1000
        total = sum(c for s, c in self.buckets.items() if second - window_s < s <= second)
        return total / window_s


class BrokerState:
    """Topics, consume queues, consumer table, offsets and long-polling pulls of one broker."""

    def __init__(self, name: str, cluster: str, scheduler: Scheduler, *, broker_id: int = 0,
                 system_topics: bool = True) -> None:
        self.name = name
        self.cluster = cluster
        self.broker_id = broker_id
        self.scheduler = scheduler
        #: advertised ``host:port``; the server sets the real one when it binds
        self.addr = "127.0.0.1:10911"
        self.boot_ms = scheduler.now_ms
        self.topics: dict[str, TopicConfig] = {}
        self.topic_version = [0, scheduler.now_ms]  # DataVersion counter, timestamp
        self._queues: dict[tuple[str, int], list[StoredMessage]] = {}
        self.consumer_table: dict[str, ConsumerGroupInfo] = {}
        self.group_configs: dict[str, SubscriptionGroupConfig] = {}
        self.group_version = [0, scheduler.now_ms]
        self.auto_create_subscription_group = True
        #: ``longPollingEnable``; without it an empty pull is held ``shortPollingTimeMills`` and
        #: arriving messages do not wake it (the hold service re-checks it when that time is up)
        self.long_polling = True
        #: ``topic@group`` offsets, stored as (topic, group) -> {queueId: offset}
        self.offsets: dict[tuple[str, str], dict[int, int]] = {}
        self.pull_offsets: dict[tuple[str, str], dict[int, int]] = {}
        self._offset_topics: dict[str, dict[str, None]] = {}
        self.producers: dict[str, dict[Channel, ClientChannelInfo]] = {}
        self.topic_groups: dict[str, set[str]] = {}
        self._suspended: dict[tuple[str, int], list[_Suspended]] = {}
        #: called with a topic's name whenever this broker creates or changes it
        self.on_topic_change: Callable[[str], None] | None = None
        #: called with (broker, group, table or None) whenever a group's stored table changes
        self.on_subscription_change: Callable[[BrokerState, str, dict[str, Subscription] | None], None] | None = None
        self.put_total = 0
        self.get_total = 0
        self.put_bytes = 0
        self._put_rate = MinuteRate()
        self._get_rate = MinuteRate()
        self._topic_put_rate: dict[str, MinuteRate] = {}
        self._group_get_rate: dict[tuple[str, str], MinuteRate] = {}
        self.get_found = 0
        self.get_miss = 0
        for group in BROKER_BUILTIN_GROUPS:
            self.group_configs[group] = SubscriptionGroupConfig(group)
        if system_topics:
            self._create_system_topics()

    # -- topics and messages ----------------------------------------------------------------

    def _create_system_topics(self) -> None:
        # What ``TopicConfigManager`` creates at start (autoCreateTopicEnable=true keeps TBW102).
        self.create_topic("TBW102", 8, 8, PERM_READ | PERM_WRITE | PERM_INHERIT)
        self.create_topic("SELF_TEST_TOPIC", 1, 1)
        self.create_topic("OFFSET_MOVED_EVENT", 1, 1)
        self.create_topic("SCHEDULE_TOPIC_XXXX", 18, 18)
        self.create_topic("RMQ_SYS_TRANS_HALF_TOPIC", 1, 1)
        self.create_topic("rmq_sys_wheel_timer", 1, 1)
        self.create_topic(self.cluster, 16, 16, PERM_READ | PERM_WRITE)
        self.create_topic(self.name, 1, 1, PERM_READ | PERM_WRITE)

    def create_topic(self, name: str, read: int, write: int, perm: int = PERM_READ | PERM_WRITE,
                     *, order: bool = False, topic_sys_flag: int = 0) -> TopicConfig:
        config = TopicConfig(name, read, write, perm, order, topic_sys_flag)
        self.topics[name] = config
        self.topic_version[0] += 1
        self.topic_version[1] = self.scheduler.now_ms
        if self.on_topic_change is not None:
            self.on_topic_change(name)
        return config

    def user_topics(self) -> list[str]:
        return [t for t in self.topics if not t.startswith(RETRY_PREFIX)]

    def queue(self, topic: str, queue_id: int) -> list[StoredMessage]:
        return self._queues.get((topic, queue_id), [])

    def max_offset(self, topic: str, queue_id: int) -> int:
        return len(self._queues.get((topic, queue_id), ()))

    def min_offset(self, topic: str, queue_id: int) -> int:
        return 0  # the emulator never deletes messages

    def store_timestamp(self, topic: str, queue_id: int, offset: int) -> int:
        messages = self._queues.get((topic, queue_id), ())
        return messages[offset].store_timestamp if 0 <= offset < len(messages) else 0

    def search_offset(self, topic: str, queue_id: int, timestamp: int) -> int:
        """``getOffsetInQueueByTime``: first offset stored at or after ``timestamp``."""
        messages = self._queues.get((topic, queue_id), ())
        for message in messages:
            if message.store_timestamp >= timestamp:
                return message.queue_offset
        return len(messages)

    def earliest_message_time(self) -> int:
        times = [q[0].store_timestamp for q in self._queues.values() if q]
        return min(times) if times else 0

    def put_message(self, topic: str, queue_id: int, tag: str | None, *, seq: int, msg_id: str,
                    born_ms: int | None = None, body: bytes = b"", keys: str | None = None,
                    producer: str = "default", reconsume_times: int = 0, origin_topic: str | None = None,
                    origin_seq: int | None = None) -> StoredMessage:
        """Append to a consume queue and wake long-polling pulls whose filter matches it."""
        now = self.scheduler.now_ms
        queue = self._queues.setdefault((topic, queue_id), [])
        # A message without tags has tags code 0 (``MessageExtBrokerInner.tagsString2tagsCode``).
        code = java_string_hash(tag) if tag else 0
        message = StoredMessage(topic, queue_id, len(queue), tag, code, now,
                                born_ms if born_ms is not None else now, msg_id, seq, body, keys,
                                producer, reconsume_times, origin_topic, origin_seq)
        queue.append(message)
        self.put_total += 1
        self.put_bytes += 200 + len(body)
        self._put_rate.add(now, 1)
        self._topic_put_rate.setdefault(topic, MinuteRate()).add(now, 1)
        waiting = self._suspended.get((topic, queue_id))
        if waiting:
            still: list[_Suspended] = []
            for held in waiting:
                if held.done:
                    continue
                if held.filter.accepts_code(code):
                    # ``PullRequestHoldService.notifyMessageArriving``: re-run the pull on the pull
                    # executor; deferring it lets the rest of this send batch land first.
                    held.done = True
                    if held.timer is not None:
                        held.timer.cancel()
                    self.scheduler.call_later(0, self._rerun, held)
                else:
                    still.append(held)
            self._suspended[(topic, queue_id)] = still
        return message

    # -- groups and heartbeats --------------------------------------------------------------

    def find_group_config(self, group: str) -> SubscriptionGroupConfig | None:
        config = self.group_configs.get(group)
        if config is None and self.auto_create_subscription_group:
            # ``SubscriptionGroupManager.findSubscriptionGroupConfig`` auto-creates on lookup.
            config = SubscriptionGroupConfig(group)
            self.group_configs[group] = config
            self.group_version[0] += 1
            self.group_version[1] = self.scheduler.now_ms
        return config

    def set_group_config(self, config: SubscriptionGroupConfig) -> None:
        self.group_configs[config.group_name] = config
        self.group_version[0] += 1
        self.group_version[1] = self.scheduler.now_ms

    def heartbeat(self, channel: Channel, data: HeartbeatData, language: str, version: int) -> None:
        """``ClientManageProcessor.heartBeat`` (v1 heartbeats: every one carries subscriptions)."""
        now = self.scheduler.now_ms
        for consumer in data.consumers:
            config = self.find_group_config(consumer.group)
            if config is None:
                continue
            retry = RETRY_PREFIX + consumer.group
            if retry not in self.topics:
                self.create_topic(retry, config.retry_queue_nums, config.retry_queue_nums)
            info = ClientChannelInfo(channel, data.client_id, language, version, now)
            self.register_consumer(consumer, info, config.notify_consumer_ids_changed_enable)
        for group in data.producers:
            table = self.producers.setdefault(group, {})
            existing = table.get(channel)
            if existing is None:
                table[channel] = ClientChannelInfo(channel, data.client_id, language, version, now)
            else:
                existing.last_update_ms = now

    def register_consumer(self, data: ConsumerData, info: ClientChannelInfo, notify_enable: bool) -> bool:
        """``ConsumerManager.registerConsumer``."""
        now = self.scheduler.now_ms
        group = self.consumer_table.get(data.group)
        if group is None:
            group = ConsumerGroupInfo(data.group, data.consume_type, data.message_model,
                                      data.consume_from_where)
            self.consumer_table[data.group] = group
        for sub in data.subscriptions:
            self.topic_groups.setdefault(sub.topic, set()).add(data.group)
        before = dict(group.subscriptions) if self.on_subscription_change else None
        channel_added = group.update_channel(info, data.consume_type, data.message_model,
                                             data.consume_from_where, now)
        topics_changed = group.update_subscription(data.subscriptions, now)
        if before is not None and before != group.subscriptions and self.on_subscription_change:
            self.on_subscription_change(self, data.group, dict(group.subscriptions))
        if (channel_added or topics_changed) and notify_enable \
                and group.message_model != "BROADCASTING":
            self._notify(group)
        return channel_added or topics_changed

    def _notify(self, group: ConsumerGroupInfo) -> None:
        # ``DefaultConsumerIdsChangeListener`` CHANGE: every channel of the group, at once
        # (``realTimeNotifyConsumerChange`` = true).
        for channel in list(group.channels):
            channel.notify_consumer_ids_changed(group.name)

    def _notify_enabled(self, group: str) -> bool:
        config = self.group_configs.get(group)
        return config.notify_consumer_ids_changed_enable if config else True

    def unregister_client(self, channel: Channel, client_id: str, consumer_group: str | None,
                          producer_group: str | None) -> None:
        """``ClientManageProcessor.unregisterClient`` (code 35)."""
        if producer_group:
            self.producers.get(producer_group, {}).pop(channel, None)
        if consumer_group:
            self.unregister_consumer(consumer_group, channel, self._notify_enabled(consumer_group))

    def unregister_consumer(self, group_name: str, channel: Channel, notify_enable: bool) -> None:
        """``ConsumerManager.unregisterConsumer``: notifies even when nothing was removed."""
        group = self.consumer_table.get(group_name)
        if group is None:
            return
        group.unregister_channel(channel)
        if not group.channels:
            # The subscription table lives only as long as the group has a channel.
            del self.consumer_table[group_name]
            self._drop_topic_groups(group)
            if self.on_subscription_change:
                self.on_subscription_change(self, group_name, None)
        if notify_enable and group.message_model != "BROADCASTING":
            self._notify(group)

    def channel_closed(self, channel: Channel) -> None:
        """``ConsumerManager.doChannelCloseEvent`` (and the producer side)."""
        for table in self.producers.values():
            table.pop(channel, None)
        for name, group in list(self.consumer_table.items()):
            if channel not in group.channels:
                continue
            del group.channels[channel]
            if not group.channels:
                del self.consumer_table[name]
                self._drop_topic_groups(group)
                if self.on_subscription_change:
                    self.on_subscription_change(self, name, None)
            if group.message_model != "BROADCASTING":
                self._notify(group)
        for waiting in self._suspended.values():
            for held in waiting:
                if held.channel is channel:
                    held.done = True
                    if held.timer is not None:
                        held.timer.cancel()

    def _drop_topic_groups(self, group: ConsumerGroupInfo) -> None:
        for topic in group.subscriptions:
            groups = self.topic_groups.get(topic)
            if groups is not None:
                groups.discard(group.name)
                if not groups:
                    del self.topic_groups[topic]

    def expire_channels(self) -> list[str]:
        """``ClientHousekeepingService``: drop channels silent for 120 s (no CHANGE is sent)."""
        now = self.scheduler.now_ms
        expired = []
        for name, group in list(self.consumer_table.items()):
            for channel, info in list(group.channels.items()):
                if now - info.last_update_ms > CHANNEL_EXPIRED_MS:
                    del group.channels[channel]
                    expired.append(info.client_id)
            if not group.channels:
                del self.consumer_table[name]
                self._drop_topic_groups(group)
                if self.on_subscription_change:
                    self.on_subscription_change(self, name, None)
        return expired

    def consumer_ids(self, group: str) -> list[str] | None:
        """GET_CONSUMER_LIST_BY_GROUP (38): None when the group has no channel (SYSTEM_ERROR)."""
        info = self.consumer_table.get(group)
        if info is None or not info.channels:
            return None
        return info.client_ids()

    def find_channel(self, group: str, client_id: str) -> ClientChannelInfo | None:
        info = self.consumer_table.get(group)
        return info.find_channel(client_id) if info else None

    # -- offsets ----------------------------------------------------------------------------

    def commit_offset(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        """``ConsumerOffsetManager.commitOffset``: overwrite (a smaller value is only logged)."""
        self.offsets.setdefault((topic, group), {})[queue_id] = offset
        self._offset_topics.setdefault(group, {})[topic] = None

    def stored_offset(self, group: str, topic: str, queue_id: int) -> int:
        """``queryOffset``: −1 when nothing is stored."""
        return self.offsets.get((topic, group), {}).get(queue_id, -1)

    def query_consumer_offset(self, group: str, topic: str, queue_id: int,
                              set_zero_if_not_found: bool = True) -> int | None:
        """QUERY_CONSUMER_OFFSET (14): the stored offset, else 0 when offset 0 is still in memory
        (always true here: nothing is ever deleted), else None (QUERY_NOT_FOUND)."""
        offset = self.stored_offset(group, topic, queue_id)
        if offset >= 0:
            return offset
        if not set_zero_if_not_found:
            return None
        if self.max_offset(topic, queue_id) > 0:
            return 0
        return None

    def topics_of_group(self, group: str) -> list[str]:
        """``whichTopicByConsumer``: topics the group has committed offsets for."""
        return sorted(self._offset_topics.get(group, ()))

    def groups_of_topic(self, topic: str) -> list[str]:
        """QUERY_TOPIC_CONSUME_BY_WHO: online subscribers plus groups with offsets on the topic."""
        groups = set(self.topic_groups.get(topic, ()))
        groups.update(g for (t, g) in self.offsets if t == topic)
        return sorted(groups)

    # -- consumer send-back -----------------------------------------------------------------

    def send_back(self, group: str, message: StoredMessage, seq: int, max_reconsume_times: int = 16) -> str:
        """``consumerSendMsgBack`` for a message the listener failed: a copy goes to
        ``%RETRY%group`` after delay level ``3 + reconsumeTimes`` (10 s, 30 s, 1 min …), or to
        ``%DLQ%group`` once it failed ``max_reconsume_times`` times. Returns the target topic."""
        origin = message.origin_topic or message.topic
        origin_seq = message.origin_seq if message.origin_seq is not None else message.seq
        times = message.reconsume_times
        if times >= max_reconsume_times:
            target = DLQ_PREFIX + group
            if target not in self.topics:
                self.create_topic(target, 1, 1)
            self.put_message(target, 0, message.tag, seq=seq, msg_id=message.msg_id, body=message.body,
                             keys=message.keys, reconsume_times=times, origin_topic=origin, origin_seq=origin_seq)
            return target
        target = RETRY_PREFIX + group
        if target not in self.topics:
            self.create_topic(target, 1, 1)
        level = min(3 + times, len(DELAY_LEVELS_S))
        self.scheduler.call_later(
            DELAY_LEVELS_S[level - 1] * 1000, self._put_retry, target, message, seq, times + 1, origin, origin_seq)
        return target

    def _put_retry(self, target: str, message: StoredMessage, seq: int, times: int, origin: str,
                   origin_seq: int) -> None:
        queues = self.topics[target].write_queue_nums if target in self.topics else 1
        self.put_message(target, seq % max(1, queues), message.tag, seq=seq, msg_id=message.msg_id,
                         body=message.body, keys=message.keys, reconsume_times=times, origin_topic=origin,
                         origin_seq=origin_seq)

    # -- pulls ------------------------------------------------------------------------------

    def pull(self, channel: Channel | None, header: PullRequestHeader, respond: PullResponder) -> None:
        """PULL_MESSAGE (11); ``respond`` is called now or, after long polling, later."""
        self._process_pull(channel, header, respond, allow_suspend=True)

    def _rerun(self, held: _Suspended) -> None:
        # ``executeRequestWhenWakeup``: the whole request is processed again, subscription checks
        # included, but it may not suspend again and does not store the commit offset again.
        self._process_pull(held.channel, held.header, held.respond, allow_suspend=False)

    def _timeout(self, held: _Suspended) -> None:
        if held.done:
            return
        held.done = True
        self._rerun(held)

    def _error(self, code: int, remark: str, respond: PullResponder) -> None:
        respond(PullResult(code, remark, (), 0, 0, 0))

    def _process_pull(self, channel: Channel | None, header: PullRequestHeader,
                      respond: PullResponder, *, allow_suspend: bool) -> None:
        topic_config = self.topics.get(header.topic)
        if topic_config is None:
            self._error(ResponseCode.TOPIC_NOT_EXIST,
                        f"topic[{header.topic}] not exist, apply first please!", respond)
            return
        if not topic_config.readable:
            self._error(ResponseCode.NO_PERMISSION,
                        f"the topic[{header.topic}] pulling message is forbidden", respond)
            return
        if not 0 <= header.queue_id < topic_config.read_queue_nums:
            self._error(ResponseCode.SYSTEM_ERROR,
                        f"queueId[{header.queue_id}] is illegal, topic:[{header.topic}] "
                        f"topicConfig.readQueueNums:[{topic_config.read_queue_nums}]", respond)
            return
        config = self.find_group_config(header.consumer_group)
        if config is None:
            self._error(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                        f"subscription group [{header.consumer_group}] does not exist", respond)
            return
        if not config.consume_enable:
            self._error(ResponseCode.NO_PERMISSION,
                        f"subscription group no permission, {header.consumer_group}", respond)
            return

        if header.sys_flag & FLAG_SUBSCRIPTION:
            # The request carries its own expression: the broker filters with it, no version check.
            sub = parse_tag_expression(header.topic, header.subscription or SUB_ALL, header.sub_version)
        else:
            group = self.consumer_table.get(header.consumer_group)
            if group is None:
                self._error(ResponseCode.SUBSCRIPTION_NOT_EXIST, REMARK_GROUP_NOT_EXIST + FAQ_SUFFIX, respond)
                return
            if group.message_model == "BROADCASTING" and not config.consume_broadcast_enable:
                self._error(ResponseCode.NO_PERMISSION,
                            f"the consumer group[{header.consumer_group}] can not consume by broadcast way",
                            respond)
                return
            stored = group.subscriptions.get(header.topic)
            if stored is None:
                self._error(ResponseCode.SUBSCRIPTION_NOT_EXIST, REMARK_SUB_NOT_EXIST + FAQ_SUFFIX, respond)
                return
            if stored.sub_version < header.sub_version:
                self._error(ResponseCode.SUBSCRIPTION_NOT_LATEST, REMARK_SUB_NOT_LATEST, respond)
                return
            # Possibly ANOTHER client's expression: the stored entry is the group's, not the caller's.
            sub = stored

        messages = self._queues.get((header.topic, header.queue_id), [])
        max_offset = len(messages)
        offset = header.queue_offset
        found: list[StoredMessage] = []
        if max_offset == 0:
            status = "NO_MESSAGE_IN_QUEUE"
            next_begin = 0
        elif offset < 0:
            status = "OFFSET_TOO_SMALL"
            next_begin = 0
        elif offset == max_offset:
            status = "OFFSET_OVERFLOW_ONE"
            next_begin = offset
        elif offset > max_offset:
            status = "OFFSET_OVERFLOW_BADLY"
            next_begin = 0  # min offset is 0, so the store corrects to it
        else:
            status = "NO_MATCHED_MESSAGE"
            position = offset
            limit = min(max_offset, offset + MAX_FILTER_SCAN)
            batch = max(1, header.max_msg_nums)
            while position < limit and len(found) < batch:
                message = messages[position]
                if sub.accepts_code(message.tags_code):
                    found.append(message)
                position += 1
            if found:
                status = "FOUND"
            next_begin = position

        # ``tryCommitOffset``: the pull offset always, the consumer offset only on first processing.
        self.pull_offsets.setdefault((header.topic, header.consumer_group), {})[header.queue_id] = next_begin
        if allow_suspend and header.sys_flag & FLAG_COMMIT_OFFSET:
            self.commit_offset(header.consumer_group, header.topic, header.queue_id, header.commit_offset)

        now = self.scheduler.now_ms
        if status == "FOUND":
            code = ResponseCode.SUCCESS
            self.get_found += 1
            self.get_total += len(found)
            self._get_rate.add(now, len(found))
            key = (header.consumer_group, header.topic)
            rate = self._group_get_rate.get(key)
            if rate is None:
                rate = self._group_get_rate[key] = MinuteRate()
            rate.add(now, len(found))
        elif status == "NO_MATCHED_MESSAGE":
            code = ResponseCode.PULL_RETRY_IMMEDIATELY
            self.get_miss += 1
        elif status == "NO_MESSAGE_IN_QUEUE":
            code = ResponseCode.PULL_OFFSET_MOVED if offset != 0 else ResponseCode.PULL_NOT_FOUND
            self.get_miss += 1
        elif status == "OFFSET_OVERFLOW_ONE":
            code = ResponseCode.PULL_NOT_FOUND
            self.get_miss += 1
        else:
            code = ResponseCode.PULL_OFFSET_MOVED
            self.get_miss += 1

        if code == ResponseCode.PULL_NOT_FOUND and allow_suspend and header.sys_flag & FLAG_SUSPEND:
            # Long polling: hold the request until a message that passes THIS filter arrives, or
            # the client's suspend timeout (15 s for push consumers) runs out.
            held = _Suspended(channel, header, respond, sub)
            if not self.long_polling:
                held.timer = self.scheduler.call_later(SHORT_POLLING_MS, self._timeout, held)
                return
            held.timer = self.scheduler.call_later(max(1, header.suspend_timeout_ms), self._timeout, held)
            waiting = self._suspended.setdefault((header.topic, header.queue_id), [])
            if len(waiting) > 64:
                waiting[:] = [w for w in waiting if not w.done]
            waiting.append(held)
            return
        respond(PullResult(code, status, tuple(found), next_begin, 0, max_offset))

    def suspended_pulls(self) -> int:
        return sum(1 for w in self._suspended.values() for h in w if not h.done)

    # -- admin views ------------------------------------------------------------------------

    def consume_stats_topics(self, group: str, topic: str | None,
                             topic_list: list[str] | None = None) -> list[str]:
        """``getTopicsForCollectingConsumeStats``: offsets topics (or the given one), minus topics
        missing from the group's subscription table when the group has any subscription; an
        explicit topic list (5.3.2+) is taken as is."""
        if topic_list:
            return list(topic_list)
        topics = [topic] if topic else self.topics_of_group(group)
        info = self.consumer_table.get(group)
        if info is not None and info.subscriptions:
            topics = [t for t in topics if t in info.subscriptions]
        return topics

    def consume_stats(self, group: str, topic: str | None = None, *, topic_list: list[str] | None = None
                      ) -> tuple[list[tuple[str, int, int, int, int, int]], float]:
        """GET_CONSUME_STATS (208): rows (topic, queueId, brokerOffset, consumerOffset,
        pullOffset, lastTimestamp) and the group's consume TPS."""
        rows = []
        tps = 0.0
        now = self.scheduler.now_ms
        for name in self.consume_stats_topics(group, topic, topic_list):
            config = self.topics.get(name)
            if config is None:
                continue
            committed = self.offsets.get((name, group), {})
            pulled = self.pull_offsets.get((name, group), {})
            for qid in range(config.read_queue_nums):
                broker_offset = self.max_offset(name, qid)
                consumer_offset = max(0, committed.get(qid, -1))
                pull_offset = max(consumer_offset, pulled.get(qid, -1))
                last = self.store_timestamp(name, qid, consumer_offset - 1) if consumer_offset > 0 else 0
                rows.append((name, qid, broker_offset, consumer_offset, pull_offset, last))
            rate = self._group_get_rate.get((group, name))
            if rate is not None:
                tps += rate.tps(now)
        return rows, tps

    def topic_stats(self, topic: str) -> list[tuple[int, int, int, int]] | None:
        """GET_TOPIC_STATS_INFO (202): rows (queueId, minOffset, maxOffset, lastUpdateTimestamp)."""
        config = self.topics.get(topic)
        if config is None:
            return None
        rows = []
        for qid in range(max(config.read_queue_nums, config.write_queue_nums)):
            max_offset = self.max_offset(topic, qid)
            last = self.store_timestamp(topic, qid, max_offset - 1) if max_offset > 0 else 0
            rows.append((qid, 0, max_offset, last))
        return rows

    def topic_put_tps(self, topic: str) -> float:
        rate = self._topic_put_rate.get(topic)
        return rate.tps(self.scheduler.now_ms) if rate else 0.0

    def runtime_info(self) -> dict[str, str]:
        """GET_BROKER_RUNTIME_INFO (28): the keys ``prepareRuntimeInfo`` and the store write."""
        now = self.scheduler.now_ms
        up = max(0, now - self.boot_ms) // 1000
        runtime = f"[ {up // 86400} days, {up // 3600 % 24} hours, {up // 60 % 60} minutes, {up % 60} seconds ]"
        put = self._put_rate
        get = self._get_rate
        total_times = max(1, self.put_total)

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
            "msgPutTotalTodayNow": str(self.put_total),
            "msgGetTotalYesterdayMorning": "0",
            "msgGetTotalTodayMorning": "0",
            "msgGetTotalTodayNow": str(self.get_total),
            "putTps": tps3(put),
            "getTransferredTps": tps3(get),
            "getFoundTps": tps3(get),
            "getMissTps": "0.00 0.00 0.00",
            "getTotalTps": tps3(get),
            "putMessageEntireTimeMax": "1",
            "putMessageTimesTotal": str(total_times),
            "putMessageFailedTimes": "0",
            "putMessageSizeTotal": str(self.put_bytes),
            "putMessageDistributeTime": "[<=0ms]:0 [0~10ms]:0 [10~50ms]:0 [50~100ms]:0 "
                                        "[100~200ms]:0 [200~500ms]:0 [500ms~1s]:0 [1~2s]:0 "
                                        "[2~3s]:0 [3~4s]:0 [4~5s]:0 [5~10s]:0 [10s~]:0 ",
            "putMessageAverageSize": str(self.put_bytes / total_times),
            "dispatchMaxBuffer": "0",
            "getMessageEntireTimeMax": "1",
            "putLatency99": "0.00",
            "putLatency999": "0.00",
            "commitLogDiskRatio": "0.1",
            "consumeQueueDiskRatio": "0.1",
            "commitLogMinOffset": "0",
            "commitLogMaxOffset": str(self.put_bytes),
            "dispatchBehindBytes": "0",
            "pageCacheLockTimeMills": "0",
            "earliestMessageTimeStamp": str(self.earliest_message_time()),
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

    def subscription_snapshot(self) -> dict[str, dict[str, Subscription]]:
        return {name: dict(info.subscriptions) for name, info in self.consumer_table.items()}


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


def retry_topic(group: str) -> str:
    return RETRY_PREFIX + group


def with_version(sub: Subscription, version: int) -> Subscription:
    return replace(sub, sub_version=version)


