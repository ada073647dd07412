"""One emulated broker's message store and consumer offsets, mirrored from the Java broker; no I/O.

What is mirrored (class names are the Java ones):

- ``TopicConfigManager``: topic configs with their DataVersion, and the system topics created at start.
- ``DefaultMessageStore``: one consume queue per ``(topic, queueId)``, append-only (the emulator
  never deletes a message, so the min offset is always 0), each entry carrying the tag code the
  broker filters on; ``getOffsetInQueueByTime``; the ``MessageArrivingListener`` that wakes held
  pulls (:attr:`MessageStore.on_message_arriving`, set by :mod:`~rmqctl.emulator.pulls`).
- ``ConsumerOffsetManager``: offsets per ``topic@group`` plus the 5.x pull-offset table, and
  ``whichTopicByConsumer``.
- ``IndexService``: every message is found by ``topic#key`` for each of its keys and its unique key
  (``queryMessage``), and by its commit-log offset (``selectOneMessageByOffset``); the emulator's
  commit-log offset of a message is its cluster-wide sequence number times :data:`PHYSICAL_STRIDE`.
- ``SendMessageProcessor.consumerSendMsgBack`` + the schedule service: a failed message goes to
  ``%RETRY%group`` after its delay level, or to ``%DLQ%group`` after too many attempts.

Must not import the CLI, textual or pyspark, nor anything that does I/O; knows nothing of consumer
groups' channels or of pulls.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rmqctl.emulator.clock import Scheduler
from rmqctl.model import DLQ_PREFIX, RETRY_PREFIX, java_string_hash
from rmqctl.remoting.bodies import PERM_READ, PERM_WRITE, TopicConfig

PERM_INHERIT = 1

#: ``MessageStoreConfig.messageDelayLevel`` in seconds (level 1 is the first)
DELAY_LEVELS_S = (1, 5, 10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200)

#: Most read or write queues one topic may have in the emulator (scenario files, admin requests):
#: every per-queue table and listing walks them, and one topic created with millions of queues
#: stalled a served emulator for seconds. Real topics use a few to a few hundred.
MAX_QUEUES_PER_TOPIC = 1024

#: bytes of commit log the emulator counts per message: a message's commit-log offset is its
#: sequence number times this (unique in the cluster, growing with every message like the real one)
PHYSICAL_STRIDE = 256
#: ``MessageStoreConfig.defaultQueryMaxNum``: what a unique-key query answers at most
DEFAULT_QUERY_MAX_NUM = 32
#: ``MessageStoreConfig.maxMsgsNumBatch``: what a key query answers at most
MAX_MSGS_NUM_BATCH = 64


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
    #: the user's properties, in the order the producer set them
    properties: tuple[tuple[str, str], ...] = ()
    #: the sender's IP when it is not one of the emulated producers (a consumer's trace records)
    born_ip: str | None = None

    def filter_properties(self) -> dict[str, str]:
        """What a SQL92 filter reads: the user's properties plus ``TAGS`` and ``KEYS``."""
        props = dict(self.properties)
        if self.tag:
            props["TAGS"] = self.tag
        if self.keys:
            props["KEYS"] = self.keys
        return props

    @property
    def physical_offset(self) -> int:
        """The message's commit-log offset (what its offset message id encodes)."""
        return self.seq * PHYSICAL_STRIDE


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


class MessageStore:
    """Topics, consume queues and consumer offsets of one broker."""

    def __init__(self, scheduler: Scheduler) -> None:
        self.scheduler = scheduler
        self.topics: dict[str, TopicConfig] = {}
        self.topic_version = [0, scheduler.now_ms]  # DataVersion counter, timestamp
        self._queues: dict[tuple[str, int], list[StoredMessage]] = {}
        #: ``topic@group`` offsets, stored as (topic, group) -> {queueId: offset}
        self.offsets: dict[tuple[str, str], dict[int, int]] = {}
        self.pull_offsets: dict[tuple[str, str], dict[int, int]] = {}
        self._offset_topics: dict[str, dict[str, None]] = {}
        #: ``useServerSideResetOffset`` (default true from 5.2.0)
        self.server_side_reset = True
        #: ``resetOffsetTable``: resets assigned by an admin, (topic, group) -> {queueId: offset};
        #: each lives until the group's next pull of the queue takes it
        self.reset_offsets: dict[tuple[str, str], dict[int, int]] = {}
        #: called with a topic's name whenever this broker creates or changes it
        self.on_topic_change: Callable[[str], None] | None = None
        #: ``MessageArrivingListener``: called with every message right after it is stored
        self.on_message_arriving: Callable[[StoredMessage], None] | None = None
        self.put_total = 0
        self.put_bytes = 0
        self.put_rate = MinuteRate()
        self._topic_put_rate: dict[str, MinuteRate] = {}
        #: ``IndexService``: ``(topic, key)`` → messages, for each key and the unique key
        self._index: dict[tuple[str, str], list[StoredMessage]] = {}
        #: commit-log offset → message
        self._by_physical: dict[int, StoredMessage] = {}

    # -- topics and messages ----------------------------------------------------------------

    def create_system_topics(self, cluster: str, broker_name: str) -> None:
        # What ``TopicConfigManager`` creates at start (autoCreateTopicEnable=true keeps TBW102).
        self.create_topic("TBW102", 8, 8, PERM_READ | PERM_WRITE | PERM_INHERIT)
        self.create_topic("SELF_TEST_TOPIC", 1, 1)
        self.create_topic("OFFSET_MOVED_EVENT", 1, 1)
        self.create_topic("SCHEDULE_TOPIC_XXXX", 18, 18)
        self.create_topic("RMQ_SYS_TRANS_HALF_TOPIC", 1, 1)
        self.create_topic("rmq_sys_wheel_timer", 1, 1)
        self.create_topic(cluster, 16, 16, PERM_READ | PERM_WRITE)
        self.create_topic(broker_name, 1, 1, PERM_READ | PERM_WRITE)

    def create_topic(self, name: str, read: int, write: int, perm: int = PERM_READ | PERM_WRITE,
                     *, order: bool = False, topic_sys_flag: int = 0,
                     message_type: str | None = None) -> TopicConfig:
        config = TopicConfig(name, read, write, perm, order, topic_sys_flag, message_type=message_type)
        self.topics[name] = config
        self.topic_version[0] += 1
        self.topic_version[1] = self.scheduler.now_ms
        if self.on_topic_change is not None:
            self.on_topic_change(name)
        return config

    def delete_topic(self, name: str) -> None:
        """``deleteTopicConfig`` and the topic's queues and offsets (``ConsumerOffsetManager.cleanOffsetByTopic``)."""
        if self.topics.pop(name, None) is None:
            return
        for queue_key in [k for k in self._queues if k[0] == name]:
            del self._queues[queue_key]
        for table in (self.offsets, self.pull_offsets, self.reset_offsets):
            for key in [k for k in table if k[0] == name]:
                del table[key]
        for topics in self._offset_topics.values():
            topics.pop(name, None)
        self.topic_version[0] += 1
        self.topic_version[1] = self.scheduler.now_ms
        if self.on_topic_change is not None:
            self.on_topic_change(name)

    def remove_group_offsets(self, group: str) -> None:
        """``ConsumerOffsetManager.removeOffset``: every committed offset of ``group``."""
        for table in (self.offsets, self.pull_offsets, self.reset_offsets):
            for key in [k for k in table if k[1] == group]:
                del table[key]
        self._offset_topics.pop(group, None)

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
                    origin_seq: int | None = None,
                    properties: tuple[tuple[str, str], ...] = (), born_ip: str | None = None) -> StoredMessage:
        """Append to a consume queue and tell the arriving-message listener (long polling)."""
        now = self.scheduler.now_ms
        queue = self._queues.setdefault((topic, queue_id), [])
        # A message without tags has tags code 0 (``MessageExtBrokerInner.tagsString2tagsCode``).
        code = java_string_hash(tag) if tag else 0
        message = StoredMessage(topic, queue_id, len(queue), tag, code, now,
                                born_ms if born_ms is not None else now, msg_id, seq, body, keys,
                                producer, reconsume_times, origin_topic, origin_seq, properties, born_ip)
        queue.append(message)
        self._by_physical[message.physical_offset] = message
        for key in {*(keys or "").split(" "), msg_id} - {""}:
            self._index.setdefault((topic, key), []).append(message)
        self.put_total += 1
        self.put_bytes += 200 + len(body)
        self.put_rate.add(now, 1)
        self._topic_put_rate.setdefault(topic, MinuteRate()).add(now, 1)
        if self.on_message_arriving is not None:
            self.on_message_arriving(message)
        return message

    def message_at(self, physical_offset: int) -> StoredMessage | None:
        """``selectOneMessageByOffset``: the message stored at one commit-log offset."""
        return self._by_physical.get(physical_offset)

    def query_messages(self, topic: str, key: str, max_num: int, begin_ms: int, end_ms: int,
                       *, unique_key: bool) -> list[StoredMessage]:
        """``queryMessage`` through the index: messages of ``topic`` stored within
        ``[begin_ms, end_ms]`` whose keys or unique key is ``key``, the newest ``max_num`` (a
        unique-key query answers up to :data:`DEFAULT_QUERY_MAX_NUM`, a key query up to
        :data:`MAX_MSGS_NUM_BATCH`). Like the broker's hash index, the answer does not say which
        of the two matched: the asker filters."""
        limit = DEFAULT_QUERY_MAX_NUM if unique_key else min(max(0, max_num), MAX_MSGS_NUM_BATCH)
        hits = [m for m in self._index.get((topic, key), ()) if begin_ms <= m.store_timestamp <= end_ms]
        return hits[-limit:] if limit else []

    def topic_put_tps(self, topic: str) -> float:
        rate = self._topic_put_rate.get(topic)
        return rate.tps(self.scheduler.now_ms) if rate else 0.0

    # -- offsets ----------------------------------------------------------------------------

    def commit_offset(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        """``ConsumerOffsetManager.commitOffset``: overwrite (a smaller value is only logged)."""
        self.offsets.setdefault((topic, group), {})[queue_id] = offset
        self._offset_topics.setdefault(group, {})[topic] = None

    def update_offset(self, group: str, topic: str, queue_id: int, offset: int) -> bool:
        """UPDATE_CONSUMER_OFFSET (15): committed unless a server-side reset of the queue waits for
        the group's next pull (``ConsumerManageProcessor``: "Offset has been previously reset",
        answered SUCCESS all the same). False when ignored."""
        if self.server_side_reset and queue_id in self.reset_offsets.get((topic, group), {}):
            return False
        self.commit_offset(group, topic, queue_id, offset)
        return True

    def assign_reset(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        """``ConsumerOffsetManager.assignResetOffset``: keep the reset for the next pull and write
        the offset table too (what a client overwrites at once is the pull's business)."""
        if queue_id < 0 or offset < 0:
            return
        self.reset_offsets.setdefault((topic, group), {})[queue_id] = offset
        self.commit_offset(group, topic, queue_id, offset)

    def take_reset(self, group: str, topic: str, queue_id: int) -> int | None:
        """``queryThenEraseResetOffset``: the waiting reset of a queue, erased; ``None`` without one
        (or with server-side reset off, when it is erased all the same and not used)."""
        table = self.reset_offsets.get((topic, group))
        offset = table.pop(queue_id, None) if table else None
        return offset if self.server_side_reset else None

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
                             keys=message.keys, reconsume_times=times, origin_topic=origin, origin_seq=origin_seq,
                             properties=message.properties)
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
                         origin_seq=origin_seq, properties=message.properties)
