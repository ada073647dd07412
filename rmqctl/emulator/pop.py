"""A simulated POP consumer (5.x): pop, invisible time, ACK, revive into the POP retry topic, DLQ.

A POP consumer holds no queue. It registers its group as ``CONSUME_POP`` and pops from every
readable queue of its topics (and from the group's POP retry topic of each, ``%RETRY%<group>_<topic>``
or ``+<topic>``); the broker hands it the next messages and moves the group's consumer offset at
once (POP commits when a message is popped, not when it is ACKed, and keeps no pull offset). Each
popped message stays invisible for ``invisible_s``:

- consumed: the client ACKs it and it is done;
- failed by the listener (``fail_tags``, or ``consume_result = "RECONSUME_LATER"``): the client
  changes its invisible time to the group's retry policy's wait (``nextDelayDuration`` of the
  group's ``groupRetryPolicy``: 10 s, 30 s, 1 min … by default);
- never ACKed (``no_ack_tags``): it stays invisible for the whole ``invisible_s``.

When that time ends, the broker revives the message into the POP retry topic of its topic as a new
copy whose reconsume times is one more (``PopReviveService.reviveRetry``), to be popped again. A
copy popped once its reconsume times reaches the group's maximum of deliveries (``retryMaxTimes +
1``, what the proxy gives gRPC clients) goes to ``%DLQ%<group>`` instead of the client
(``PopMessageResultFilterImpl``'s TO_DLQ).

Must not import the CLI, textual or pyspark, nor anything that does I/O.
"""

from __future__ import annotations

import zlib
from collections import deque
from collections.abc import Container

from rmqctl.emulator.broker import BrokerState
from rmqctl.emulator.client import SimulatedConsumer
from rmqctl.emulator.client_config import (
    HEARTBEAT_FIRST_MS,
    HEARTBEAT_INTERVAL_MS,
    PULL_BATCH_SIZE,
    ROUTE_POLL_FIRST_MS,
    ROUTE_POLL_INTERVAL_MS,
)
from rmqctl.emulator.store import MinuteRate, StoredMessage
from rmqctl.model import (
    DLQ_PREFIX,
    POP_RETRY_SEPARATOR_V1,
    POP_RETRY_SEPARATOR_V2,
    RETRY_PREFIX,
    MessageQueue,
    RetryPolicy,
    parse_tag_expression,
)

#: how often the consumer pops each queue (a long-polling pop answers as soon as messages come;
#: once a second is close enough for a virtual clock)
POP_INTERVAL_MS = 1_000


def pop_retry_topic(group: str, topic: str, topics: Container[str]) -> str:
    """The POP retry topic the broker revives ``group``'s messages of ``topic`` into: the one of
    both spellings that exists (``+`` with ``enableRetryTopicV2``), else ``_``."""
    v2 = f"{RETRY_PREFIX}{group}{POP_RETRY_SEPARATOR_V2}{topic}"
    if v2 in topics:
        return v2
    return f"{RETRY_PREFIX}{group}{POP_RETRY_SEPARATOR_V1}{topic}"


class SimulatedPopConsumer(SimulatedConsumer):
    """A POP consumer of one group (see the module docstring)."""

    consume_type = "CONSUME_POP"
    #: pop rounds so far (which queue of each topic the next round pops)
    _round = 0

    def start(self) -> None:
        if self.running:
            return
        version = self._begin()
        # no %RETRY%<group>: POP revives into a retry topic per topic, which the consumer pops too
        for topic, _ in self.spec.subscriptions:
            retry = self.retry_topic(topic)
            self.subscriptions[retry] = parse_tag_expression(retry, "*", version)
        self._refresh_routes()
        self.heartbeat()
        call = self.scheduler.call_later
        self._timers = [
            call(HEARTBEAT_FIRST_MS, self._periodic, HEARTBEAT_INTERVAL_MS, self.heartbeat),
            call(ROUTE_POLL_FIRST_MS, self._periodic, ROUTE_POLL_INTERVAL_MS, self._refresh_routes),
        ]
        self._next_pop(0)

    def retry_topic(self, topic: str) -> str:
        brokers = [self.ctx.brokers[b] for b in sorted(self.ctx.brokers)]
        for broker in brokers:
            name = pop_retry_topic(self.group, topic, broker.store.topics)
            if name in broker.store.topics:
                return name
        return pop_retry_topic(self.group, topic, ())

    # a POP consumer holds no queue: nothing to rebalance, nothing to persist
    def rebalance_now(self) -> None:
        return

    def persist_all(self) -> None:
        return

    # -- popping ------------------------------------------------------------------------------

    def _draw(self, salt: str) -> int:
        """A number drawn from the client id and the round: random-looking, the same every run."""
        return zlib.crc32(f"{self.client_id}/{self._round}/{salt}".encode())

    def _next_pop(self, delay_ms: int) -> None:
        if self.running:
            self._timers.append(self.scheduler.call_later(delay_ms, self.pop_all))
            if len(self._timers) > 16:
                self._timers = [t for t in self._timers if not t.cancelled and t.when >= self.scheduler.now_ms]

    def pop_all(self) -> None:
        """One pop request per topic: like the broker's, it starts at a random queue and goes
        round the queues until its batch is full. The next request follows after a wait drawn
        around :data:`POP_INTERVAL_MS` (a long-polling request returns as messages come, to
        whichever client's request is waiting), so the clients of the group share the messages."""
        if not self.running:
            return
        self._round += 1
        if not self.stalled:
            for topic in sorted(self.subscriptions):
                queues = self.topic_queues.get(topic, ())
                start = self._draw(topic) % len(queues) if queues else 0
                room = PULL_BATCH_SIZE
                for k in range(len(queues)):
                    room -= self._pop(queues[(start + k) % len(queues)], room)
                    if room <= 0:
                        break
        self._next_pop(POP_INTERVAL_MS // 2 + self._draw("wait") % POP_INTERVAL_MS)

    def _pop(self, mq: MessageQueue, room: int) -> int:
        """Pop up to ``room`` messages of one queue; returns how many were taken."""
        broker = self.ctx.brokers.get(mq.broker_name)
        if broker is None:
            return 0
        store = broker.store
        offset = store.stored_offset(self.group, mq.topic, mq.queue_id)
        end = store.max_offset(mq.topic, mq.queue_id)
        if offset < 0:
            # a POP group's first pop of a queue starts at its end (a retry topic at its start)
            offset = 0 if mq.topic.startswith(RETRY_PREFIX) else end
        taken = store.queue(mq.topic, mq.queue_id)[offset:min(end, offset + room)]
        # POP moves the consumer offset when it hands messages out, not when they are ACKed
        store.commit_offset(self.group, mq.topic, mq.queue_id, offset + len(taken))
        if not taken:
            return 0
        now = self.scheduler.now_ms
        self.pull_rate.setdefault(mq.topic, MinuteRate()).add(now, 1)
        sub = self.subscriptions.get(mq.topic)
        config = broker.group_configs.get(self.group)
        most = (config.retry_max_times if config is not None else 16) + 1
        for message in taken:
            if sub is not None and not sub.accepts(message.tag):
                continue  # filtered by the broker: passed over, the offset moves on
            if message.reconsume_times >= most:
                self._to_dlq(broker, message)
                continue
            self.scheduler.call_later(self.spec.consume_ms, self._listen, mq, message)
        return len(taken)

    def _listen(self, mq: MessageQueue, message: StoredMessage) -> None:
        if not self.running or self.stalled:
            self._revive_later(mq, message, int(self.spec.invisible_s * 1000))
            return
        now = self.scheduler.now_ms
        tag = message.tag or ""
        self.received_by_tag[tag] = self.received_by_tag.get(tag, 0) + 1
        self.received_total += 1
        self.deliveries.append(message)
        if tag in self.spec.no_ack_tags:
            self._revive_later(mq, message, int(self.spec.invisible_s * 1000))
            return
        if tag in self.spec.fail_tags or self.spec.consume_result == "RECONSUME_LATER":
            self.consume_failures += 1
            self.failed_rate.setdefault(mq.topic, MinuteRate()).add(now, 1)
            self.failed_times.setdefault(mq.topic, deque()).append(now)
            broker = self.ctx.brokers.get(mq.broker_name)
            config = broker.group_configs.get(self.group) if broker is not None else None
            policy = (config.retry_policy if config is not None else None) or RetryPolicy()
            self._revive_later(mq, message, policy.delay_ms(message.reconsume_times))
            return
        self.ctx.record_delivery(self, message)
        self.consume_rate.setdefault(message.topic, MinuteRate()).add(now, 1)

    def _revive_later(self, mq: MessageQueue, message: StoredMessage, delay_ms: int) -> None:
        self.scheduler.call_later(delay_ms, self._revive, mq.broker_name, message)

    def _revive(self, broker_name: str, message: StoredMessage) -> None:
        """``reviveRetry``: a new copy in the POP retry topic, reconsume times one more."""
        broker = self.ctx.brokers.get(broker_name)
        if broker is None:
            return
        origin = message.origin_topic or message.topic
        retry = message.topic if message.topic.startswith(RETRY_PREFIX) else self.retry_topic(origin)
        if retry not in broker.store.topics:
            broker.create_topic(retry, 1, 1)
        broker.store.put_message(
            retry, 0, message.tag, seq=self.ctx.next_seq(), msg_id=message.msg_id, body=message.body,
            keys=message.keys, reconsume_times=message.reconsume_times + 1, origin_topic=origin,
            origin_seq=message.origin_seq if message.origin_seq is not None else message.seq,
            properties=message.properties)

    def _to_dlq(self, broker: BrokerState, message: StoredMessage) -> None:
        target = DLQ_PREFIX + self.group
        if target not in broker.store.topics:
            broker.create_topic(target, 1, 1)
        broker.store.put_message(
            target, 0, message.tag, seq=self.ctx.next_seq(), msg_id=message.msg_id, body=message.body,
            keys=message.keys, reconsume_times=message.reconsume_times, origin_topic=message.origin_topic,
            origin_seq=message.origin_seq, properties=message.properties)

    def held_queues(self) -> list[MessageQueue]:
        return []
