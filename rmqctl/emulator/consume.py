"""The per-queue half of a simulated push consumer: pull chains, the listener, the offset store.

Mirrors ``DefaultMQPushConsumerImpl.pullMessage`` / ``PullAPIWrapper`` and the concurrent
consume service:

- pull: without ``postSubscriptionWhenPull`` the broker filters with the group's stored
  subscription; the client then drops every message whose tag is not in its own tagsSet
  (``PullAPIWrapper.processPullResult``); NO_NEW_MSG / NO_MATCHED_MSG commit the next offset when
  nothing is cached (``correctTagsOffset``), which is how filtered messages count as consumed; an
  error (24, 25 …) retries after 1 s; more than 1000 cached messages pause the queue's pulls;
- consume: ``consume_threads`` listener calls of ``consume_ms`` each; RECONSUME_LATER sends the
  message back to the broker (retry topic, then DLQ) and counts it as failed; a stalled listener
  never returns, so its messages stay cached and the offset stays at the oldest of them;
- the offset store is the in-memory ``RemoteBrokerOffsetStore`` (piggybacked on pulls, persisted
  every 5 s, and on queue removal and shutdown); BROADCASTING uses a local store and never
  commits to the broker.

:class:`QueueConsumer` is the base of :class:`~rmqctl.emulator.client.SimulatedConsumer`, which
owns the lifecycle, heartbeats and rebalance that create and drop the process queues. Must not
import the CLI, textual or pyspark, nor anything that does I/O.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rmqctl.emulator.client_config import (
    OFFSET_ILLEGAL_DELAY_MS,
    PULL_BATCH_SIZE,
    PULL_DELAY_FLOW_CONTROL_MS,
    PULL_DELAY_ON_EXCEPTION_MS,
    PULL_THRESHOLD_FOR_QUEUE,
    SUSPEND_CURRENT_QUEUE_MS,
    SUSPEND_TIMEOUT_MS,
)
from rmqctl.emulator.clock import Scheduler, Timer
from rmqctl.emulator.groups import Channel
from rmqctl.emulator.pulls import FLAG_COMMIT_OFFSET, FLAG_SUBSCRIPTION, FLAG_SUSPEND, PullRequestHeader, PullResult
from rmqctl.emulator.scenario import ConsumerSpec
from rmqctl.emulator.store import MinuteRate, StoredMessage
from rmqctl.model import RETRY_PREFIX, TRACE_TOPIC, MessageQueue, Subscription, TraceEvent, encode_trace_events
from rmqctl.remoting.codes import ResponseCode

if TYPE_CHECKING:
    from rmqctl.emulator.client import ClusterContext


@dataclass(slots=True)
class ProcessQueue:
    """``ProcessQueue`` plus the queue's ``PullRequest`` (one pull chain per queue)."""

    mq: MessageQueue
    next_offset: int
    dropped: bool = False
    last_pull_ms: int = 0
    last_consume_ms: int = 0
    cached: dict[int, StoredMessage] = field(default_factory=dict)
    #: orderly: the broker lock the client holds on the queue, and when it was taken or renewed
    locked: bool = False
    last_lock_ms: int = 0
    #: orderly: the local retry of a suspended head message is scheduled
    suspended: bool = False
    queue_offset_max: int = -1
    pull_timer: Timer | None = None
    in_flight: bool = False


class QueueConsumer:
    """Pull chains, listener and offset store of one consumer (see the module docstring)."""

    # Set by the consumer this is the base of:
    ctx: ClusterContext
    spec: ConsumerSpec
    group: str
    client_id: str
    ip: str
    running: bool
    #: when the listener hung for good (None: it consumes normally)
    stalled_ms: int | None
    #: ``RebalanceImpl.subscriptionInner``: topic -> the client's own SubscriptionData
    subscriptions: dict[str, Subscription]

    def __init__(self) -> None:
        self.pq_table: dict[MessageQueue, ProcessQueue] = {}
        self.offset_store: dict[MessageQueue, int] = {}
        self.local_offsets: dict[MessageQueue, int] = {}
        self.received_by_tag: dict[str, int] = {}
        #: messages the broker delivered that the client's own tag filter dropped, per tag
        self.dropped_by_tag: dict[str, int] = {}
        self.received_total = 0
        #: every message the listener received, in order
        self.deliveries: list[StoredMessage] = []
        self.pull_errors: dict[int, int] = {}
        #: pulls, successful and failed consumptions per minute, per topic
        self.pull_rate: dict[str, MinuteRate] = {}
        self.consume_rate: dict[str, MinuteRate] = {}
        self.failed_rate: dict[str, MinuteRate] = {}
        #: when each failed consumption happened, per queue topic (the last hour is reported)
        self.failed_times: dict[str, deque[int]] = {}
        self.consume_failures = 0
        self._consume_backlog: deque[tuple[ProcessQueue, StoredMessage]] = deque()
        self._busy_threads = 0

    @property
    def broadcasting(self) -> bool:
        return self.spec.message_model == "BROADCASTING"

    @property
    def scheduler(self) -> Scheduler:
        return self.ctx.scheduler

    @property
    def stalled(self) -> bool:
        return self.stalled_ms is not None

    def channel(self, broker_name: str) -> Channel:
        """The client's connection to a broker (opened on first use)."""
        raise NotImplementedError

    def rebalance_now(self) -> None:
        """Wake the rebalance service."""
        raise NotImplementedError

    # -- pulling --------------------------------------------------------------------------------

    def _schedule_pull(self, pq: ProcessQueue, delay_ms: int = 0) -> None:
        if pq.dropped or not self.running:
            return
        pq.pull_timer = self.scheduler.call_later(delay_ms, self._pull, pq)

    def _pull(self, pq: ProcessQueue) -> None:
        pq.pull_timer = None
        if pq.dropped or not self.running or pq.in_flight:
            return
        now = self.scheduler.now_ms
        pq.last_pull_ms = now
        if len(pq.cached) > PULL_THRESHOLD_FOR_QUEUE:
            self._schedule_pull(pq, PULL_DELAY_FLOW_CONTROL_MS)
            return
        mq = pq.mq
        sub = self.subscriptions.get(mq.topic)
        broker = self.ctx.brokers.get(mq.broker_name)
        if sub is None or broker is None:
            self._schedule_pull(pq, PULL_DELAY_ON_EXCEPTION_MS)
            return
        sys_flag = FLAG_SUSPEND
        commit = 0
        if not self.broadcasting:
            commit = self.offset_store.get(mq, -1)
            if commit > 0:
                sys_flag |= FLAG_COMMIT_OFFSET
            else:
                commit = 0
        expression = None
        if self.spec.post_subscription:
            sys_flag |= FLAG_SUBSCRIPTION
            expression = sub.expression
        header = PullRequestHeader(
            consumer_group=self.group, topic=mq.topic, queue_id=mq.queue_id,
            queue_offset=pq.next_offset, sys_flag=sys_flag, sub_version=sub.sub_version,
            max_msg_nums=PULL_BATCH_SIZE, commit_offset=commit,
            suspend_timeout_ms=SUSPEND_TIMEOUT_MS, subscription=expression,
        )
        pq.in_flight = True
        rate = self.pull_rate.get(mq.topic)
        if rate is None:
            rate = self.pull_rate[mq.topic] = MinuteRate()
        rate.add(now, 1)
        broker.pull(self.channel(mq.broker_name), header, lambda result: self._on_pull(pq, result))

    def _on_pull(self, pq: ProcessQueue, result: PullResult) -> None:
        pq.in_flight = False
        if pq.dropped or not self.running:
            return
        code = result.code
        if code == ResponseCode.SUCCESS:
            sub = self.subscriptions.get(pq.mq.topic)
            keep = [m for m in result.messages if sub is not None and sub.accepts(m.tag)]
            for message in result.messages:
                if sub is None or not sub.accepts(message.tag):
                    tag = message.tag or ""
                    self.dropped_by_tag[tag] = self.dropped_by_tag.get(tag, 0) + 1
                    self.ctx.record_drop(self, message)
            pq.next_offset = result.next_begin_offset
            if keep:
                self._submit(pq, keep)
            # FOUND with everything dropped by the client filter: pull again, offset NOT stored.
            self._schedule_pull(pq)
        elif code in (ResponseCode.PULL_NOT_FOUND, ResponseCode.PULL_RETRY_IMMEDIATELY):
            pq.next_offset = result.next_begin_offset
            self._correct_tags_offset(pq)
            self._schedule_pull(pq)
        elif code == ResponseCode.PULL_OFFSET_MOVED:
            # OFFSET_ILLEGAL: drop the queue, fix its offset after 10 s and rebalance again.
            pq.next_offset = result.next_begin_offset
            pq.dropped = True
            self.scheduler.call_later(OFFSET_ILLEGAL_DELAY_MS, self._fix_illegal_offset, pq)
        else:
            self.pull_errors[code] = self.pull_errors.get(code, 0) + 1
            self._schedule_pull(pq, PULL_DELAY_ON_EXCEPTION_MS)

    def _fix_illegal_offset(self, pq: ProcessQueue) -> None:
        if not self.running:
            return
        self._update_offset(pq.mq, pq.next_offset, increase_only=False)
        self._persist(pq.mq)
        if self.pq_table.get(pq.mq) is pq:
            del self.pq_table[pq.mq]
        self.rebalance_now()

    def _correct_tags_offset(self, pq: ProcessQueue) -> None:
        if not pq.cached:
            self._update_offset(pq.mq, pq.next_offset, increase_only=True)

    def _update_offset(self, mq: MessageQueue, offset: int, *, increase_only: bool) -> None:
        store = self.local_offsets if self.broadcasting else self.offset_store
        old = store.get(mq)
        if old is None or not increase_only or offset > old:
            store[mq] = offset

    # -- consuming ------------------------------------------------------------------------------

    def _submit(self, pq: ProcessQueue, messages: list[StoredMessage]) -> None:
        for message in messages:
            pq.cached[message.queue_offset] = message
            pq.queue_offset_max = max(pq.queue_offset_max, message.queue_offset)
        if self.stalled:
            return  # the hung listener never takes them: they stay cached, the offset stays put
        if self.spec.orderly and not self.broadcasting and not pq.locked:
            return  # ``tryLockLaterAndReconsume``: no broker lock, no orderly consumption
        if self._suspends(pq):
            if not pq.suspended:
                pq.suspended = True
                self.scheduler.call_later(max(0, self.spec.consume_ms), self._suspend_head, pq)
            return
        if self.spec.consume_ms <= 0:
            for message in messages:
                self._consumed(pq, message)
            return
        self._consume_backlog.extend((pq, m) for m in messages)
        self._dispatch_consumers()

    def _suspends(self, pq: ProcessQueue) -> bool:
        """Does the orderly listener answer SUSPEND_CURRENT_QUEUE_A_MOMENT on this queue?"""
        return (self.spec.orderly and pq.mq.queue_id in self.spec.suspend_queues
                and not pq.mq.topic.startswith(RETRY_PREFIX))

    def _suspend_head(self, pq: ProcessQueue) -> None:
        """``ConsumeMessageOrderlyService``: the listener got the queue's first message and
        answered SUSPEND_CURRENT_QUEUE_A_MOMENT. The message goes back into the process queue
        (``makeMessageToConsumeAgain``), counts as a failed consumption, and is tried again after
        ``suspendCurrentQueueTimeMillis`` (1 s); the retries never end (``maxReconsumeTimes`` is
        unbounded for orderly consumers), nothing is sent to the retry topic, and the offset stays
        at the message while the queue's last-consume time is refreshed on every try."""
        if pq.dropped or not self.running or not pq.cached or not pq.locked:
            pq.suspended = False  # without its lock the queue waits until the lock is renewed
            return
        now = self.scheduler.now_ms
        self.consume_failures += 1
        failures = self.failed_rate.get(pq.mq.topic)
        if failures is None:
            failures = self.failed_rate[pq.mq.topic] = MinuteRate()
        failures.add(now, 1)
        self.failed_times.setdefault(pq.mq.topic, deque()).append(now)
        pq.last_consume_ms = now
        self._update_offset(pq.mq, min(pq.cached), increase_only=True)
        self.scheduler.call_later(SUSPEND_CURRENT_QUEUE_MS + max(0, self.spec.consume_ms),
                                  self._suspend_head, pq)

    def _dispatch_consumers(self) -> None:
        if self.stalled:
            return
        while self._busy_threads < self.spec.consume_threads and self._consume_backlog:
            pq, message = self._consume_backlog.popleft()
            if pq.dropped:
                continue
            self._busy_threads += 1
            self.scheduler.call_later(self.spec.consume_ms, self._finish_consume, pq, message)

    def _finish_consume(self, pq: ProcessQueue, message: StoredMessage) -> None:
        if self.stalled:
            return  # this listener call never returns: its thread stays busy, the message cached
        self._busy_threads -= 1
        if self.running:
            self._consumed(pq, message)
            self._dispatch_consumers()

    def _consumed(self, pq: ProcessQueue, message: StoredMessage) -> None:
        if pq.dropped:
            return  # "the message queue not be able to consume, because it's dropped"
        now = self.scheduler.now_ms
        failed = self.spec.consume_result == "RECONSUME_LATER"
        if not failed:
            self.ctx.record_delivery(self, message)
        tag = message.tag or ""
        self.received_by_tag[tag] = self.received_by_tag.get(tag, 0) + 1
        self.received_total += 1
        self.deliveries.append(message)
        if self.spec.trace:
            self._trace(message, now, success=not failed)
        if failed:
            # ``processConsumeResult``: every message of the batch is sent back to the broker
            # (``%RETRY%group`` after a delay, the DLQ after 16 tries); the stats count it as failed
            # under the topic of the queue it came from. The offset then moves on as for a success.
            self.consume_failures += 1
            failures = self.failed_rate.get(pq.mq.topic)
            if failures is None:
                failures = self.failed_rate[pq.mq.topic] = MinuteRate()
            failures.add(now, 1)
            self.failed_times.setdefault(pq.mq.topic, deque()).append(now)
            broker = self.ctx.brokers.get(pq.mq.broker_name)
            if broker is not None:
                broker.send_back(self.group, message, self.ctx.next_seq())
        rate = self.consume_rate.get(message.topic) if not failed else None
        if rate is None and not failed:
            rate = self.consume_rate[message.topic] = MinuteRate()
        if rate is not None:
            rate.add(now, 1)
        pq.last_consume_ms = now
        pq.cached.pop(message.queue_offset, None)
        # ``ProcessQueue.removeMessage``: the first offset still in flight, or max + 1.
        offset = min(pq.cached) if pq.cached else pq.queue_offset_max + 1
        self._update_offset(pq.mq, offset, increase_only=True)

    def _trace(self, message: StoredMessage, now: int, *, success: bool) -> None:
        """A consumer with message tracing on (``enableMsgTrace``) records each consumption: a
        ``SubBefore`` when the listener took the message and a ``SubAfter`` when it returned, sent
        to the trace topic keyed by the message's unique key and its own keys, from the
        consumer's host."""
        route = self.ctx.namesrv.route(TRACE_TOPIC)
        broker = self.ctx.brokers.get(route.queue_datas[0].broker_name) if route and route.queue_datas else None
        if broker is None:
            return  # no trace topic: the client's trace dispatcher fails to send, and says nothing
        seq = self.ctx.next_seq()
        request = f"{self.client_id}-{seq}"
        cost = max(0, self.spec.consume_ms)
        body = encode_trace_events([
            TraceEvent("SubBefore", message.msg_id, self.group, request, timestamp=now - cost,
                       retry_times=message.reconsume_times),
            TraceEvent("SubAfter", message.msg_id, self.group, request, timestamp=now, success=success,
                       cost_ms=cost),
        ])
        keys = " ".join(dict.fromkeys([message.msg_id, *(message.keys or "").split()]))
        broker.put_message(TRACE_TOPIC, 0, None, seq=seq, msg_id=f"7F000001{seq:024X}", body=body, keys=keys,
                           producer=f"{self.client_id}-trace", born_ip=self.ip)

    # -- offsets --------------------------------------------------------------------------------

    def _persist(self, mq: MessageQueue) -> None:
        if self.broadcasting:
            return
        offset = self.offset_store.get(mq)
        broker = self.ctx.brokers.get(mq.broker_name)
        if offset is not None and broker is not None:
            # UPDATE_CONSUMER_OFFSET: ignored while a server-side reset of the queue waits
            broker.store.update_offset(self.group, mq.topic, mq.queue_id, offset)

    def persist_all(self) -> None:
        """``RemoteBrokerOffsetStore.persistAll``: UPDATE_CONSUMER_OFFSET for held queues only."""
        if self.broadcasting:
            return
        held = set(self.pq_table)
        for mq in sorted(self.offset_store):
            if mq in held:
                self._persist(mq)
            else:
                del self.offset_store[mq]
