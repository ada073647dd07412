"""Simulated clients that behave like the Java push consumer and producer; no I/O.

:class:`SimulatedConsumer` mirrors ``DefaultMQPushConsumerImpl`` with ``RebalancePushImpl``:

- ``start()``: builds its SubscriptionData (subVersion = the time of the call), adds
  ``%RETRY%group`` with ``*`` in CLUSTERING mode, reads the routes, heartbeats every broker of
  its topics and rebalances at once; then heartbeats every 30 s (first after 1 s), polls routes
  every 30 s, rebalances every 20 s and whenever a broker sends NOTIFY_CONSUMER_IDS_CHANGED, and
  persists offsets every 5 s (first after 10 s);
- rebalance: only the client's OWN topics; cidAll is every client id registered on one broker
  of the topic's route, whatever they subscribe; the allocation strategy is the Java one from
  :mod:`rmqctl.rebalance.strategies`; a change of the allocation bumps that topic's subVersion
  to "now" and heartbeats at once (``RebalancePushImpl.messageQueueChanged``);
- pull: without ``postSubscriptionWhenPull`` the broker filters with the group's stored
  subscription; the client then drops every message whose tag is not in its own tagsSet
  (``PullAPIWrapper.processPullResult``); NO_NEW_MSG / NO_MATCHED_MSG commit the next offset when
  nothing is cached (``correctTagsOffset``), which is how filtered messages count as consumed; an
  error (24, 25 …) retries after 1 s;
- the offset store is the in-memory ``RemoteBrokerOffsetStore`` (piggybacked on pulls, persisted
  every 5 s, and on queue removal and shutdown); BROADCASTING uses a local store and never
  commits to the broker;
- a stall (scenario ``stall``, :meth:`SimulatedConsumer.stall`) is a listener that hangs for
  good: the client keeps heartbeating, rebalancing and pulling (until the per-queue flow control
  of 1000 cached messages stops it), but no message is consumed any more, so the committed
  offset of every queue it holds stays at its oldest cached message.

"Now" for every simulated process is the scheduler's clock, plus the latency of the
synchronous calls it made so far in the current rebalance (:data:`RPC_MS` each: the consumer-id
list, one offset query per queue it gains, one heartbeat per broker). That is what decides who
wins a subVersion race deterministically, the way it usually goes on a real cluster: a client
that gains queues must query their offsets before it bumps its version, so it stamps later than
a peer that only gives queues up (the tag-overwrite incident: the later subscriber wins).

Must not import the CLI, textual or pyspark, nor anything that does I/O.
"""

from __future__ import annotations

import datetime as dt
import zlib
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from rmqctl.emulator.broker import BROKER_VERSION, BrokerState
from rmqctl.emulator.clock import Scheduler, Timer
from rmqctl.emulator.groups import with_version
from rmqctl.emulator.namesrv import NameServerState
from rmqctl.emulator.pulls import FLAG_COMMIT_OFFSET, FLAG_SUBSCRIPTION, FLAG_SUSPEND, PullRequestHeader, PullResult
from rmqctl.emulator.scenario import ConsumerSpec
from rmqctl.emulator.store import MinuteRate, StoredMessage
from rmqctl.model import (
    RETRY_PREFIX,
    STRATEGY_CLASSES,
    ConsumerRunningInfo,
    ConsumeStatus,
    MessageQueue,
    ProcessQueueInfo,
    Subscription,
    parse_tag_expression,
    version_desc,
)
from rmqctl.rebalance.strategies import (
    AllocationError,
    Strategy,
    get_strategy,
    java_sorted_ids,
)
from rmqctl.remoting import bodies
from rmqctl.remoting.bodies import ConsumerData, HeartbeatData
from rmqctl.remoting.codes import RequestCode, ResponseCode
from rmqctl.remoting.frame import RemotingCommand

#: latency of one synchronous client→broker call, as the client's own clock sees it
RPC_MS = 1
HEARTBEAT_INTERVAL_MS = 30_000
HEARTBEAT_FIRST_MS = 1_000
REBALANCE_INTERVAL_MS = 20_000
ROUTE_POLL_INTERVAL_MS = 30_000
ROUTE_POLL_FIRST_MS = 10
PERSIST_INTERVAL_MS = 5_000
PERSIST_FIRST_MS = 10_000
PULL_DELAY_ON_EXCEPTION_MS = 1_000
PULL_DELAY_FLOW_CONTROL_MS = 50
PULL_DISPATCH_DELAY_MS = 500  # 5.x ``dispatchPullRequest(list, 500)``
OFFSET_ILLEGAL_DELAY_MS = 10_000
SUSPEND_TIMEOUT_MS = 15_000
PULL_BATCH_SIZE = 32
PULL_THRESHOLD_FOR_QUEUE = 1000
CLIENT_INNER_PRODUCER = "CLIENT_INNER_PRODUCER"


class ClusterContext(Protocol):
    """What a simulated client needs from the emulated world."""

    @property
    def scheduler(self) -> Scheduler: ...

    @property
    def brokers(self) -> Mapping[str, BrokerState]: ...

    @property
    def namesrv(self) -> NameServerState: ...

    @property
    def namesrv_addr(self) -> str: ...

    def version_stamp(self, group: str, at_ms: int) -> int: ...

    def next_port(self) -> int: ...

    def next_seq(self) -> int: ...

    def record_delivery(self, consumer: SimulatedConsumer, message: StoredMessage) -> None: ...

    def record_send(self, message: StoredMessage) -> None: ...


class InProcessChannel:
    """The connection of a simulated client to one broker, seen from the broker."""

    __slots__ = ("channel_id", "client", "remote_addr", "scheduler")

    def __init__(self, channel_id: int, remote_addr: str, client: SimulatedConsumer | SimulatedProducer,
                 scheduler: Scheduler) -> None:
        self.channel_id = channel_id
        self.remote_addr = remote_addr
        self.client = client
        self.scheduler = scheduler

    def notify_consumer_ids_changed(self, group: str) -> None:
        # A oneway frame: it reaches the client after the broker's current work is done.
        if isinstance(self.client, SimulatedConsumer):
            self.scheduler.call_later(0, self.client.on_consumer_ids_changed, group)

    async def invoke(self, request: RemotingCommand, timeout: float) -> RemotingCommand:
        return self.client.handle_server_request(request)

    def __repr__(self) -> str:
        return f"<channel {self.channel_id} {self.remote_addr}>"


@dataclass(slots=True)
class ProcessQueue:
    """``ProcessQueue`` plus the queue's ``PullRequest`` (one pull chain per queue)."""

    mq: MessageQueue
    next_offset: int
    dropped: bool = False
    last_pull_ms: int = 0
    last_consume_ms: int = 0
    cached: dict[int, StoredMessage] = field(default_factory=dict)
    queue_offset_max: int = -1
    pull_timer: Timer | None = None
    in_flight: bool = False


def _identity(salt: str) -> str:
    """A stable stand-in for Java's ``Object.hashCode`` in ``toString`` (``Class@1b2c3d4``)."""
    return format(zlib.crc32(salt.encode("utf-8")) & 0x7FFFFFFF, "x")


def default_ip(index: int) -> str:
    return f"10.0.{index // 250}.{index % 250 + 1}"


def default_client_id(spec: ConsumerSpec, index: int, start_ms_offset: int) -> str:
    """``ClientConfig.buildMQClientId``: ``ip@instanceName``; CLUSTERING consumers whose
    instanceName is still ``DEFAULT`` switch it to ``pid#nanoTime`` (4.9+), BROADCASTING keeps
    ``DEFAULT``. The pid and nanoTime are derived from the consumer's position and start time."""
    if spec.client_id:
        return spec.client_id
    ip = spec.ip or default_ip(index)
    if spec.instance_name and spec.instance_name != "DEFAULT":
        return f"{ip}@{spec.instance_name}"
    if spec.message_model == "BROADCASTING":
        return f"{ip}@DEFAULT"
    pid = 4000 + index
    nano = 91_000_000_000_000 + start_ms_offset * 1_000_000 + index * 7919
    return f"{ip}@{pid}#{nano}"


class SimulatedConsumer:
    """One ``DefaultMQPushConsumer`` (concurrently, push) in its own client instance."""

    consume_type = "CONSUME_PASSIVELY"

    def __init__(self, ctx: ClusterContext, spec: ConsumerSpec, index: int, client_id: str) -> None:
        self.ctx = ctx
        self.spec = spec
        self.index = index
        self.group = spec.group
        self.client_id = client_id
        self.ip = spec.ip or client_id.split("@", 1)[0] or default_ip(index)
        self.strategy: Strategy = get_strategy(spec.strategy, **dict(spec.strategy_options))
        self.running = False
        self.started_ms = 0
        self.stopped_ms: int | None = None
        #: when the listener hung for good (None: it consumes normally)
        self.stalled_ms: int | None = None
        #: ``RebalanceImpl.subscriptionInner``: topic -> the client's own SubscriptionData
        self.subscriptions: dict[str, Subscription] = {}
        self.topic_queues: dict[str, list[MessageQueue]] = {}
        self.pq_table: dict[MessageQueue, ProcessQueue] = {}
        self.offset_store: dict[MessageQueue, int] = {}
        self.local_offsets: dict[MessageQueue, int] = {}
        self.channels: dict[str, InProcessChannel] = {}
        self.received_by_tag: dict[str, int] = {}
        #: messages the broker delivered that the client's own tag filter dropped, per tag
        self.dropped_by_tag: dict[str, int] = {}
        self.received_total = 0
        #: every message the listener received, in order
        self.deliveries: list[StoredMessage] = []
        self.pull_errors: dict[int, int] = {}
        self.rebalances = 0
        self.version_bumps = 0
        self._timers: list[Timer] = []
        self._rebalance_timer: Timer | None = None
        self._rebalance_pending = False
        self._rpc_ms = 0
        self._consume_backlog: deque[tuple[ProcessQueue, StoredMessage]] = deque()
        self._busy_threads = 0
        self._pull_rate: dict[str, MinuteRate] = {}
        self._consume_rate: dict[str, MinuteRate] = {}
        self._failed_rate: dict[str, MinuteRate] = {}
        #: when each failed consumption happened, per queue topic (the last hour is reported)
        self._failed_times: dict[str, deque[int]] = {}
        self.consume_failures = 0
        tag = _identity(client_id)
        self._ids = {name: _identity(f"{name}/{client_id}") for name in
                     ("strategy", "listener", "offset", "impl")}
        self._ids["self"] = tag

    # -- identity -----------------------------------------------------------------------------

    @property
    def broadcasting(self) -> bool:
        return self.spec.message_model == "BROADCASTING"

    @property
    def scheduler(self) -> Scheduler:
        return self.ctx.scheduler

    def user_subscriptions(self) -> list[Subscription]:
        return [s for t, s in self.subscriptions.items() if not t.startswith(RETRY_PREFIX)]

    def held_queues(self) -> list[MessageQueue]:
        return sorted(mq for mq, pq in self.pq_table.items() if not pq.dropped)

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> None:
        if self.running:
            return
        now = self.scheduler.now_ms
        self.running = True
        self.started_ms = now
        self.stopped_ms = None
        # ``copySubscription``: every SubscriptionData is built now, with subVersion = now.
        self._rpc_ms = 0
        version = self.spec.sub_version
        if version is None:
            version = self.ctx.version_stamp(self.group, now)
        self.subscriptions = {
            topic: parse_tag_expression(topic, expr, version) for topic, expr in self.spec.subscriptions
        }
        if not self.broadcasting:
            retry = RETRY_PREFIX + self.group
            self.subscriptions[retry] = parse_tag_expression(retry, "*", version)
        self._refresh_routes()
        self.heartbeat()
        self.rebalance_now()
        call = self.scheduler.call_later
        self._timers = [
            call(HEARTBEAT_FIRST_MS, self._periodic, HEARTBEAT_INTERVAL_MS, self.heartbeat),
            call(ROUTE_POLL_FIRST_MS, self._periodic, ROUTE_POLL_INTERVAL_MS, self._refresh_routes),
            call(PERSIST_FIRST_MS, self._periodic, PERSIST_INTERVAL_MS, self.persist_all),
        ]

    def _periodic(self, period: int, fn: Callable[[], None]) -> None:
        if not self.running:
            return
        fn()
        if self.running:
            self._timers.append(self.scheduler.call_later(period, self._periodic, period, fn))
            if len(self._timers) > 16:
                self._timers = [t for t in self._timers if not t.cancelled and t.when >= self.scheduler.now_ms]

    def _stop(self) -> None:
        """Stop every timer and drop every process queue (common to shutdown and death)."""
        self.running = False
        self.stopped_ms = self.scheduler.now_ms
        for timer in self._timers:
            timer.cancel()
        if self._rebalance_timer is not None:
            self._rebalance_timer.cancel()
        for pq in self.pq_table.values():
            pq.dropped = True
            if pq.pull_timer is not None:
                pq.pull_timer.cancel()
        self.pq_table.clear()

    def shutdown(self) -> None:
        """``DefaultMQPushConsumerImpl.shutdown``: persist offsets, unregister, close channels."""
        if not self.running:
            return
        self.persist_all()
        self._stop()
        self._consume_backlog.clear()
        for name, channel in sorted(self.channels.items()):
            broker = self.ctx.brokers.get(name)
            if broker is not None:
                broker.unregister_client(channel, self.client_id, self.group, None)
                broker.unregister_client(channel, self.client_id, None, CLIENT_INNER_PRODUCER)
                broker.channel_closed(channel)
        self.channels.clear()

    def stall(self) -> None:
        """The listener hangs for good: messages already handed to it and every later one stay
        cached and unconsumed; heartbeats, rebalances, pulls and offset persistence go on."""
        if self.running and self.stalled_ms is None:
            self.stalled_ms = self.scheduler.now_ms

    @property
    def stalled(self) -> bool:
        return self.stalled_ms is not None

    def kill(self) -> None:
        """The process dies: nothing is persisted or unregistered; brokers see the sockets close."""
        if not self.running:
            return
        self._stop()
        for name, channel in sorted(self.channels.items()):
            broker = self.ctx.brokers.get(name)
            if broker is not None:
                broker.channel_closed(channel)
        self.channels.clear()

    # -- routes, channels, heartbeats ---------------------------------------------------------

    def _refresh_routes(self) -> None:
        for topic in self.subscriptions:
            queues = self.ctx.namesrv.read_queues(topic)
            if queues is None:
                self.topic_queues.pop(topic, None)
            else:
                self.topic_queues[topic] = queues

    def _brokers(self) -> list[str]:
        """``brokerAddrTable``: every broker of every route the client knows."""
        names: set[str] = set()
        for topic in self.subscriptions:
            route = self.ctx.namesrv.route(topic)
            if route is not None:
                names.update(b.broker_name for b in route.broker_datas)
        return sorted(names)

    def channel(self, broker_name: str) -> InProcessChannel:
        channel = self.channels.get(broker_name)
        if channel is None:
            port = self.ctx.next_port()
            channel = InProcessChannel(port, f"{self.ip}:{port}", self, self.scheduler)
            self.channels[broker_name] = channel
        return channel

    def heartbeat_data(self) -> HeartbeatData:
        consumer = ConsumerData(
            self.group, self.consume_type, self.spec.message_model, self.spec.consume_from_where,
            tuple(self.subscriptions.values()),
        )
        return HeartbeatData(self.client_id, (consumer,), (CLIENT_INNER_PRODUCER,))

    def heartbeat(self) -> None:
        """``sendHeartbeatToAllBrokerWithLock``: one full heartbeat to every known broker."""
        if not self.running:
            return
        data = self.heartbeat_data()
        for name in self._brokers():
            broker = self.ctx.brokers.get(name)
            if broker is not None:
                broker.heartbeat(self.channel(name), data, "JAVA", BROKER_VERSION)
                self._rpc_ms += RPC_MS

    # -- rebalance ------------------------------------------------------------------------------

    def on_consumer_ids_changed(self, group: str) -> None:
        if group == self.group:
            self.rebalance_now()

    def rebalance_now(self) -> None:
        """``rebalanceImmediately``: wake the rebalance service (wakeups coalesce)."""
        if not self.running or self._rebalance_pending:
            return
        if self._rebalance_timer is not None:
            self._rebalance_timer.cancel()
        self._rebalance_pending = True
        self._rebalance_timer = self.scheduler.call_later(0, self._do_rebalance)

    def _do_rebalance(self) -> None:
        self._rebalance_pending = False
        if not self.running:
            return
        self._rpc_ms = 0
        self.rebalances += 1
        for topic in list(self.subscriptions):
            if not self.running:
                return
            self._rebalance_topic(topic)
        # ``truncateMessageQueueNotMyTopic``
        for mq, pq in list(self.pq_table.items()):
            if mq.topic not in self.subscriptions:
                pq.dropped = True
                del self.pq_table[mq]
        if self.running and not self._rebalance_pending:
            self._rebalance_timer = self.scheduler.call_later(REBALANCE_INTERVAL_MS, self._do_rebalance)

    def find_consumer_ids(self, topic: str) -> list[str] | None:
        """``findConsumerIdList``: GET_CONSUMER_LIST_BY_GROUP to one broker of the route (Java
        picks a random one; the emulator takes the first, for determinism)."""
        route = self.ctx.namesrv.route(topic)
        if route is None or not route.broker_datas:
            return None
        broker = self.ctx.brokers.get(route.broker_datas[0].broker_name)
        self._rpc_ms += RPC_MS
        return broker.consumer_ids(self.group) if broker else None

    def _rebalance_topic(self, topic: str) -> None:
        mq_all = self.topic_queues.get(topic)
        if mq_all is None:
            return  # "doRebalance, but the topic not exist"
        target: list[MessageQueue]
        if self.broadcasting:
            target = mq_all
        else:
            cid_all = self.find_consumer_ids(topic)
            if not cid_all:
                return  # "get consumer id list failed"
            try:
                # mq_all is already in Java order (the route cache sorts it once).
                target = self.strategy.allocate(self.client_id, mq_all, java_sorted_ids(cid_all))
            except AllocationError:
                return
        if self._update_process_queues(topic, target):
            self._message_queue_changed(topic)

    def _update_process_queues(self, topic: str, allocated: list[MessageQueue]) -> bool:
        changed = False
        target = set(allocated)
        for mq, pq in list(self.pq_table.items()):
            if mq.topic == topic and mq not in target:
                pq.dropped = True
                if pq.pull_timer is not None:
                    pq.pull_timer.cancel()
                # ``removeUnnecessaryMessageQueue``: persist, then forget the offset.
                self._persist(mq)
                self.offset_store.pop(mq, None)
                del self.pq_table[mq]
                changed = True
        for mq in allocated:
            if mq in self.pq_table:
                continue
            self.offset_store.pop(mq, None)  # removeDirtyOffset
            next_offset = self._compute_pull_from_where(mq)
            if next_offset < 0:
                continue
            pq = ProcessQueue(mq, next_offset, last_pull_ms=self.scheduler.now_ms)
            self.pq_table[mq] = pq
            pq.pull_timer = self.scheduler.call_later(PULL_DISPATCH_DELAY_MS, self._pull, pq)
            changed = True
        return changed

    def _message_queue_changed(self, topic: str) -> None:
        # The allocation changed: bump this topic's subVersion to "now" and tell every broker.
        sub = self.subscriptions.get(topic)
        if sub is None:
            return
        stamp = self.ctx.version_stamp(self.group, self.scheduler.now_ms + self._rpc_ms)
        self.subscriptions[topic] = with_version(sub, stamp)
        self.version_bumps += 1
        self.heartbeat()

    def _compute_pull_from_where(self, mq: MessageQueue) -> int:
        """``RebalancePushImpl.computePullFromWhereWithException``."""
        broker = self.ctx.brokers.get(mq.broker_name)
        if broker is None:
            return -1
        if self.broadcasting:
            offset = self.local_offsets.get(mq, -1)
        else:
            self._rpc_ms += RPC_MS
            found = broker.query_consumer_offset(self.group, mq.topic, mq.queue_id)
            offset = -1 if found is None else found
            if found is not None:
                self.offset_store[mq] = found
        if offset >= 0:
            return offset
        cfw = self.spec.consume_from_where
        retry = mq.topic.startswith(RETRY_PREFIX)
        if cfw == "CONSUME_FROM_FIRST_OFFSET":
            return 0
        if not retry or cfw == "CONSUME_FROM_TIMESTAMP":
            self._rpc_ms += RPC_MS  # maxOffset / searchOffset
        if cfw == "CONSUME_FROM_TIMESTAMP":
            if retry:
                return broker.max_offset(mq.topic, mq.queue_id)
            return broker.search_offset(mq.topic, mq.queue_id, self.scheduler.now_ms - 30 * 60_000)
        return 0 if retry else broker.max_offset(mq.topic, mq.queue_id)

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
        rate = self._pull_rate.get(mq.topic)
        if rate is None:
            rate = self._pull_rate[mq.topic] = MinuteRate()
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
        if self.spec.consume_ms <= 0:
            for message in messages:
                self._consumed(pq, message)
            return
        self._consume_backlog.extend((pq, m) for m in messages)
        self._dispatch_consumers()

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
        if failed:
            # ``processConsumeResult``: every message of the batch is sent back to the broker
            # (``%RETRY%group`` after a delay, the DLQ after 16 tries); the stats count it as failed
            # under the topic of the queue it came from. The offset then moves on as for a success.
            self.consume_failures += 1
            failures = self._failed_rate.get(pq.mq.topic)
            if failures is None:
                failures = self._failed_rate[pq.mq.topic] = MinuteRate()
            failures.add(now, 1)
            self._failed_times.setdefault(pq.mq.topic, deque()).append(now)
            broker = self.ctx.brokers.get(pq.mq.broker_name)
            if broker is not None:
                broker.send_back(self.group, message, self.ctx.next_seq())
        rate = self._consume_rate.get(message.topic) if not failed else None
        if rate is None and not failed:
            rate = self._consume_rate[message.topic] = MinuteRate()
        if rate is not None:
            rate.add(now, 1)
        pq.last_consume_ms = now
        pq.cached.pop(message.queue_offset, None)
        # ``ProcessQueue.removeMessage``: the first offset still in flight, or max + 1.
        offset = min(pq.cached) if pq.cached else pq.queue_offset_max + 1
        self._update_offset(pq.mq, offset, increase_only=True)

    # -- offsets --------------------------------------------------------------------------------

    def _persist(self, mq: MessageQueue) -> None:
        if self.broadcasting:
            return
        offset = self.offset_store.get(mq)
        broker = self.ctx.brokers.get(mq.broker_name)
        if offset is not None and broker is not None:
            broker.commit_offset(self.group, mq.topic, mq.queue_id, offset)

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

    # -- what the client tells admins -----------------------------------------------------------

    def handle_server_request(self, request: RemotingCommand) -> RemotingCommand:
        """``ClientRemotingProcessor``: answers GET_CONSUMER_RUNNING_INFO relayed by a broker."""
        if request.code != RequestCode.GET_CONSUMER_RUNNING_INFO:
            return request.response(ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
                                    remark=f" request type {request.code} not supported")
        group = request.ext_fields.get("consumerGroup", "")
        if group != self.group or not self.running:
            return request.response(ResponseCode.SYSTEM_ERROR,
                                    remark=f"The Consumer Group <{group}> not exist in this consumer")
        jstack = request.ext_fields.get("jstackEnable", "false").lower() == "true"
        info = ConsumerRunningInfo(self.client_id, self.running_properties(), tuple(self.running_subscriptions()),
                                   dict(self.running_mq_table()), self.running_status())
        body = bodies.encode_consumer_running_info(info, jstack=self.fake_jstack() if jstack else None)
        return RemotingCommand(code=ResponseCode.SUCCESS, opaque=request.opaque, flag=1,
                               language="JAVA", version=BROKER_VERSION, body=body)

    def strategy_to_string(self) -> str:
        name = self.strategy.name
        cls = STRATEGY_CLASSES.get(name.split("-", 1)[0], STRATEGY_CLASSES["AVG"])
        return f"org.apache.rocketmq.client.consumer.rebalance.{cls}@{self._ids['strategy']}"

    def running_properties(self) -> dict[str, str]:
        """``MixAll.object2Properties(defaultMQPushConsumer)`` plus the PROP_* entries."""
        spec = self.spec
        instance = self.client_id.split("@", 1)[1] if "@" in self.client_id else "DEFAULT"
        consume_ts = dt.datetime.fromtimestamp((self.started_ms - 30 * 60_000) / 1000, dt.UTC)
        offset_store = ("LocalFileOffsetStore" if self.broadcasting else "RemoteBrokerOffsetStore")
        props = {
            "consumerGroup": self.group,
            "messageModel": spec.message_model,
            "consumeFromWhere": spec.consume_from_where,
            "consumeTimestamp": consume_ts.strftime("%Y%m%d%H%M%S"),
            "allocateMessageQueueStrategy": self.strategy_to_string(),
            "subscription": "{}",
            "messageListener": f"rmqctl.emulator.SimulatedListener@{self._ids['listener']}",
            "offsetStore": f"org.apache.rocketmq.client.consumer.store.{offset_store}@{self._ids['offset']}",
            "defaultMQPushConsumerImpl":
                f"org.apache.rocketmq.client.impl.consumer.DefaultMQPushConsumerImpl@{self._ids['impl']}",
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
            "namesrvAddr": self.ctx.namesrv_addr,
            "clientIP": self.ip,
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
            "PROP_CONSUMEORDERLY": "false",
            "PROP_THREADPOOL_CORE_SIZE": str(spec.consume_threads),
            "PROP_CONSUMER_START_TIMESTAMP": str(self.started_ms),
            "PROP_NAMESERVER_ADDR": self.ctx.namesrv_addr + ";",
            "PROP_CONSUME_TYPE": self.consume_type,
            "PROP_CLIENT_VERSION": version_desc(BROKER_VERSION),
        }
        return props

    def running_subscriptions(self) -> list[Subscription]:
        # A TreeSet ordered by ``topic + "@" + subString``.
        return sorted(self.subscriptions.values(), key=lambda s: f"{s.topic}@{s.expression}")

    def running_mq_table(self) -> list[tuple[MessageQueue, ProcessQueueInfo]]:
        out = []
        for mq in sorted(self.pq_table):
            pq = self.pq_table[mq]
            store = self.local_offsets if self.broadcasting else self.offset_store
            cached = pq.cached
            out.append((mq, ProcessQueueInfo(
                commit_offset=store.get(mq, -1),
                cached_msg_count=len(cached),
                cached_msg_min_offset=min(cached) if cached else 0,
                cached_msg_max_offset=max(cached) if cached else 0,
                cached_msg_size_mib=0,
                locked=False,
                dropped=pq.dropped,
                try_unlock_times=0,
                last_lock_timestamp=0,
                last_pull_timestamp=pq.last_pull_ms,
                last_consume_timestamp=pq.last_consume_ms,
            )))
        return out

    def running_status(self) -> dict[str, ConsumeStatus]:
        """statusTable: pull and consume rates per subscribed topic."""
        now = self.scheduler.now_ms
        out = {}
        for topic in sorted(self.subscriptions):
            pull = self._pull_rate.get(topic)
            consume = self._consume_rate.get(topic)
            failed = self._failed_rate.get(topic)
            times = self._failed_times.get(topic)
            while times and times[0] <= now - 3_600_000:
                times.popleft()
            out[topic] = ConsumeStatus(
                pull_rt=1.0 if pull else 0.0,
                pull_tps=pull.tps(now) if pull else 0.0,
                consume_rt=float(self.spec.consume_ms) if consume or failed else 0.0,
                consume_ok_tps=consume.tps(now) if consume else 0.0,
                consume_failed_tps=failed.tps(now) if failed else 0.0,
                consume_failed_msgs=len(times) if times else 0,
            )
        return out

    def fake_jstack(self) -> str:
        return (f'"ConsumeMessageThread_{self.group}_1" Id=42 WAITING\n'
                "\tat sun.misc.Unsafe.park(Native Method)\n")


class SimulatedProducer:
    """A ``DefaultMQProducer`` sending round robin over the topic's writable queues."""

    def __init__(self, ctx: ClusterContext, group: str, ip: str = "10.0.255.1") -> None:
        self.ctx = ctx
        self.group = group
        self.ip = ip
        self.client_id = f"{ip}@producer-{group}"
        self._next: dict[str, int] = {}
        self.channels: dict[str, InProcessChannel] = {}
        self.sent = 0

    def handle_server_request(self, request: RemotingCommand) -> RemotingCommand:
        return request.response(ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
                                remark=f" request type {request.code} not supported")

    def _channel(self, broker: BrokerState) -> InProcessChannel:
        channel = self.channels.get(broker.name)
        if channel is None:
            port = self.ctx.next_port()
            channel = InProcessChannel(port, f"{self.ip}:{port}", self, self.ctx.scheduler)
            self.channels[broker.name] = channel
            broker.heartbeat(channel, HeartbeatData(self.client_id, (), (self.group,)), "JAVA",
                             BROKER_VERSION)
        return channel

    def publish_queues(self, topic: str) -> list[MessageQueue]:
        """``TopicPublishInfo.messageQueueList``: writable queue data sorted by broker name."""
        return self.ctx.namesrv.write_queues(topic)

    def send(self, topic: str, tag: str | None, *, queue: int | None = None,
             broker: str | None = None, keys: str | None = None, body: bytes = b"") -> StoredMessage | None:
        if queue is None:
            queues = self.publish_queues(topic)
            if not queues:
                return None
            # ``selectOneMessageQueue``: the index only grows (Java starts it at a random value).
            index = self._next.get(topic, 0)
            self._next[topic] = index + 1
            mq = queues[index % len(queues)]
        else:
            if broker is None:
                route = self.ctx.namesrv.route(topic)
                if route is None or not route.queue_datas:
                    return None
                broker = route.queue_datas[0].broker_name
            mq = MessageQueue(topic, broker, queue)
        target = self.ctx.brokers.get(mq.broker_name)
        if target is None or topic not in target.topics:
            return None
        self._channel(target)
        seq = self.ctx.next_seq()
        message = target.put_message(mq.topic, mq.queue_id, tag, seq=seq, msg_id=f"7F000001{seq:024X}",
                                     body=body, keys=keys, producer=self.group)
        self.sent += 1
        self.ctx.record_send(message)
        return message
