"""One emulated broker's pull processing and long polling, mirrored from the Java broker; no I/O.

What is mirrored (class names are the Java ones):

- ``PullMessageProcessor`` + ``DefaultMessageStore.getMessage``: without the SUBSCRIPTION sys flag
  (the push consumer's default) the pull is filtered by the group's STORED subscription, so
  possibly by another client's tags; a missing group or topic answers 24
  (SUBSCRIPTION_NOT_EXIST), a stored subVersion older than the request's answers 25
  (SUBSCRIPTION_NOT_LATEST); messages whose consume-queue tag code does not match are skipped and
  the next offset moves past them; the request's piggybacked commit offset is stored.
- ``PullRequestHoldService``: an empty result long-polls until a message that passes the held
  request's filter arrives or the suspend timeout ends, then the whole request runs again; with
  long polling off it is held ``shortPollingTimeMills`` and arriving messages do not wake it.

Reads the group rules from :mod:`~rmqctl.emulator.groups` and messages and offsets from
:mod:`~rmqctl.emulator.store`. Must not import the CLI, textual or pyspark, nor anything that does I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from rmqctl.emulator.clock import Scheduler, Timer
from rmqctl.emulator.groups import Channel, ConsumerGroups
from rmqctl.emulator.store import MessageStore, MinuteRate, StoredMessage
from rmqctl.model import SUB_ALL, Subscription, parse_tag_expression
from rmqctl.remoting.codes import ResponseCode

# PullSysFlag bits
FLAG_COMMIT_OFFSET = 0x1
FLAG_SUSPEND = 0x2
FLAG_SUBSCRIPTION = 0x4
FLAG_CLASS_FILTER = 0x8

#: ``BrokerConfig.shortPollingTimeMills``: how long an empty pull is held without long polling
SHORT_POLLING_MS = 1_000
#: ``DefaultMessageStore.getMessage`` scans at most this many consume-queue entries per pull
#: (16000 bytes of 20-byte units) before answering NO_MATCHED_MESSAGE.
MAX_FILTER_SCAN = 800

REMARK_GROUP_NOT_EXIST = "the consumer's group info not exist"
REMARK_SUB_NOT_EXIST = "the consumer's subscription not exist"
REMARK_SUB_NOT_LATEST = "the consumer's subscription not latest"
#: the FAQ pointer the broker appends to the two remarks above
FAQ_SUFFIX = "\nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details."


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
K = TypeVar("K")


@dataclass(slots=True, eq=False)
class _Suspended:
    channel: Channel | None
    header: PullRequestHeader
    respond: PullResponder
    filter: Subscription
    timer: Timer | None = None
    done: bool = False


def _broker_accepts(sub: Subscription, message: StoredMessage) -> bool:
    """The broker's filter: tag hash codes from the consume queue, or (``enablePropertyFilter``)
    a SQL92 expression over the message's properties, which only an exact TRUE passes."""
    if sub.is_sql92:
        return sub.broker_passes(message.tag, message.filter_properties()) is True
    return sub.accepts_code(message.tags_code)


def _discard(index: dict[K, dict[_Suspended, None]], key: K, held: _Suspended) -> None:
    bucket = index.get(key)
    if bucket is not None:
        bucket.pop(held, None)
        if not bucket:
            del index[key]


class PullProcessor:
    """PULL_MESSAGE over one broker's store and groups, with the held (suspended) requests."""

    def __init__(self, scheduler: Scheduler, store: MessageStore, groups: ConsumerGroups) -> None:
        self.scheduler = scheduler
        self.store = store
        self.groups = groups
        #: ``longPollingEnable``; without it an empty pull is held ``shortPollingTimeMills`` and
        #: arriving messages do not wake it (the hold service re-checks it when that time is up)
        self.long_polling = True
        #: held requests by queue, and by the connection that sent them: each bucket is an
        #: insertion-ordered dict used as a set, so holding, waking and dropping one is O(1) and a
        #: closed connection's requests go at once (with their timers' references)
        self._suspended: dict[tuple[str, int], dict[_Suspended, None]] = {}
        self._by_channel: dict[Channel | None, dict[_Suspended, None]] = {}
        self._released = 0
        self.get_total = 0
        self.get_found = 0
        self.get_miss = 0
        self.get_rate = MinuteRate()
        self._group_get_rate: dict[tuple[str, str], MinuteRate] = {}
        store.on_message_arriving = self.message_arriving

    def pull(self, channel: Channel | None, header: PullRequestHeader, respond: PullResponder) -> None:
        """PULL_MESSAGE (11); ``respond`` is called now or, after long polling, later."""
        self._process_pull(channel, header, respond, allow_suspend=True)

    def message_arriving(self, message: StoredMessage) -> None:
        """``PullRequestHoldService.notifyMessageArriving``: wake the pulls held on the message's
        queue whose filter accepts it."""
        waiting = self._suspended.get((message.topic, message.queue_id))
        if not waiting:
            return
        for held in [h for h in waiting if _broker_accepts(h.filter, message)]:
            # Re-run the pull on the pull executor; deferring it lets the rest of this send
            # batch land first.
            self._release(held)
            self.scheduler.call_later(0, self._rerun, held)

    def channel_closed(self, channel: Channel) -> None:
        """Requests held for a closed connection are dropped unanswered."""
        for held in list(self._by_channel.get(channel, ())):
            self._release(held)

    def suspended_pulls(self) -> int:
        return sum(len(w) for w in self._suspended.values())

    def _hold(self, held: _Suspended) -> None:
        self._suspended.setdefault((held.header.topic, held.header.queue_id), {})[held] = None
        self._by_channel.setdefault(held.channel, {})[held] = None

    def _release(self, held: _Suspended) -> None:
        """No longer held: out of both indexes, its timer cancelled."""
        held.done = True
        if held.timer is not None:
            held.timer.cancel()
        _discard(self._suspended, (held.header.topic, held.header.queue_id), held)
        _discard(self._by_channel, held.channel, held)
        self._released += 1
        if self._released >= 4096:  # now and then, let the heap forget the cancelled timers
            self._released = 0
            self.scheduler.compact()

    def group_get_tps(self, group: str, topic: str) -> float | None:
        """The group's pulled messages per second on ``topic`` (None when it never got any)."""
        rate = self._group_get_rate.get((group, topic))
        return rate.tps(self.scheduler.now_ms) if rate is not None else None

    def _rerun(self, held: _Suspended) -> None:
        # ``executeRequestWhenWakeup``: the whole request is processed again, subscription checks
        # included, but it may not suspend again and does not store the commit offset again.
        self._process_pull(held.channel, held.header, held.respond, allow_suspend=False)

    def _timeout(self, held: _Suspended) -> None:
        if held.done:
            return
        self._release(held)
        self._rerun(held)

    def _error(self, code: int, remark: str, respond: PullResponder) -> None:
        respond(PullResult(code, remark, (), 0, 0, 0))

    def _process_pull(self, channel: Channel | None, header: PullRequestHeader,
                      respond: PullResponder, *, allow_suspend: bool) -> None:
        topic_config = self.store.topics.get(header.topic)
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
        config = self.groups.find_group_config(header.consumer_group)
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
            group = self.groups.consumer_table.get(header.consumer_group)
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

        messages = self.store.queue(header.topic, header.queue_id)
        max_offset = len(messages)
        reset = self.store.take_reset(header.consumer_group, header.topic, header.queue_id)
        if reset is not None:
            # ``GetMessageStatus.OFFSET_RESET``: an admin reset this queue server-side; the pull
            # answers OFFSET_MOVED to it (the piggybacked commit is still stored, as the broker
            # does, and the client's fix of the offset follows at once)
            self.store.pull_offsets.setdefault((header.topic, header.consumer_group), {})[header.queue_id] = reset
            if allow_suspend and header.sys_flag & FLAG_COMMIT_OFFSET:
                self.store.commit_offset(header.consumer_group, header.topic, header.queue_id, header.commit_offset)
            self.get_miss += 1
            respond(PullResult(ResponseCode.PULL_OFFSET_MOVED, "OFFSET_RESET", (), reset, 0, max_offset))
            return
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
                if _broker_accepts(sub, message):
                    found.append(message)
                position += 1
            if found:
                status = "FOUND"
            next_begin = position

        # ``tryCommitOffset``: the pull offset always, the consumer offset only on first processing.
        self.store.pull_offsets.setdefault((header.topic, header.consumer_group), {})[header.queue_id] = next_begin
        if allow_suspend and header.sys_flag & FLAG_COMMIT_OFFSET:
            self.store.commit_offset(header.consumer_group, header.topic, header.queue_id, header.commit_offset)

        now = self.scheduler.now_ms
        if status == "FOUND":
            code = ResponseCode.SUCCESS
            self.get_found += 1
            self.get_total += len(found)
            self.get_rate.add(now, len(found))
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
            self._hold(held)
            return
        respond(PullResult(code, status, tuple(found), next_begin, 0, max_offset))
