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
- orderly (``MessageListenerOrderly``, clustering): a queue is locked on its broker
  (LOCK_BATCH_MQ) before it is taken, and a refused one is tried again 500 ms later; the locks
  are renewed every 20 s (first after 1 s) and a queue whose renewal is refused is not consumed
  until it is locked again; a queue given up is unlocked at once (a hung listener's only 20 s
  after its last lock), everything at shutdown, nothing when the process dies;
- pulling, consuming and the offset store of the queues it holds are its base,
  :class:`~rmqctl.emulator.consume.QueueConsumer`; what it answers a broker relaying
  GET_CONSUMER_RUNNING_INFO is :mod:`~rmqctl.emulator.running_info`;
- a stall (scenario ``stall``, :meth:`SimulatedConsumer.stall`) is a listener that hangs for
  good: the client keeps heartbeating, rebalancing and pulling (until the per-queue flow control
  of 1000 cached messages stops it), but no message is consumed any more, so the committed
  offset of every queue it holds stays at its oldest cached message.

"Now" for every simulated process is the scheduler's clock, plus the latency of the
synchronous calls it made so far in the current rebalance (``RPC_MS`` each: the consumer-id
list, one offset query per queue it gains, one heartbeat per broker). That is what decides who
wins a subVersion race deterministically, the way it usually goes on a real cluster: a client
that gains queues must query their offsets before it bumps its version, so it stamps later than
a peer that only gives queues up (the tag-overwrite incident: the later subscriber wins).

Must not import the CLI, textual or pyspark, nor anything that does I/O.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping
from typing import Protocol

from rmqctl.emulator import running_info
from rmqctl.emulator.broker import BROKER_VERSION, BrokerState
from rmqctl.emulator.client_config import (
    CLIENT_INNER_PRODUCER,
    CLIENT_RESET_PAUSE_MS,
    HEARTBEAT_FIRST_MS,
    HEARTBEAT_INTERVAL_MS,
    LOCK_FIRST_MS,
    LOCK_INTERVAL_MS,
    PERSIST_FIRST_MS,
    PERSIST_INTERVAL_MS,
    PULL_DISPATCH_DELAY_MS,
    REBALANCE_INTERVAL_MS,
    REBALANCE_LATER_MS,
    ROUTE_POLL_FIRST_MS,
    ROUTE_POLL_INTERVAL_MS,
    RPC_MS,
    UNLOCK_DELAY_MS,
)
from rmqctl.emulator.clock import Scheduler, Timer
from rmqctl.emulator.consume import ProcessQueue, QueueConsumer
from rmqctl.emulator.groups import with_version
from rmqctl.emulator.namesrv import NameServerState
from rmqctl.emulator.scenario import ConsumerSpec
from rmqctl.emulator.store import StoredMessage
from rmqctl.model import RETRY_PREFIX, MessageQueue, Subscription, parse_tag_expression, sql92_subscription
from rmqctl.rebalance.strategies import (
    AllocationError,
    Strategy,
    get_strategy,
    java_sorted_ids,
)
from rmqctl.remoting.bodies import ConsumerData, HeartbeatData
from rmqctl.remoting.codes import ResponseCode
from rmqctl.remoting.frame import RemotingCommand


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

    def record_delivery(self, consumer: QueueConsumer, message: StoredMessage) -> None: ...

    def record_drop(self, consumer: QueueConsumer, message: StoredMessage) -> None: ...

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


class SimulatedConsumer(QueueConsumer):
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
        super().__init__()
        self.topic_queues: dict[str, list[MessageQueue]] = {}
        self.channels: dict[str, InProcessChannel] = {}
        self.rebalances = 0
        self.version_bumps = 0
        self._timers: list[Timer] = []
        self._rebalance_timer: Timer | None = None
        self._rebalance_pending = False
        self._rpc_ms = 0
        #: stand-ins for Java's identity hash codes in the ``toString`` of its parts
        self.identity_hashes = {name: _identity(f"{name}/{client_id}") for name in
                                ("strategy", "listener", "offset", "impl")}
        self.identity_hashes["self"] = _identity(client_id)

    # -- identity -----------------------------------------------------------------------------

    def user_subscriptions(self) -> list[Subscription]:
        return [s for t, s in self.subscriptions.items() if not t.startswith(RETRY_PREFIX)]

    def held_queues(self) -> list[MessageQueue]:
        return sorted(mq for mq, pq in self.pq_table.items() if not pq.dropped)

    # -- lifecycle ----------------------------------------------------------------------------

    def _begin(self) -> int:
        """Mark the client started and build its own subscriptions (``copySubscription``: every
        SubscriptionData is built now, with subVersion = now); the subVersion used."""
        now = self.scheduler.now_ms
        self.running = True
        self.started_ms = now
        self.stopped_ms = None
        self._rpc_ms = 0
        version = self.spec.sub_version
        if version is None:
            version = self.ctx.version_stamp(self.group, now)
        self.subscriptions = {
            topic: (sql92_subscription if topic in self.spec.sql_topics else parse_tag_expression)(
                topic, expr, version)
            for topic, expr in self.spec.subscriptions
        }
        return version

    def start(self) -> None:
        if self.running:
            return
        version = self._begin()
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
        if self.locks_queues:
            self._timers.append(call(LOCK_FIRST_MS, self._periodic, LOCK_INTERVAL_MS, self.lock_all))

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
        if self.locks_queues:
            # ``ConsumeMessageOrderlyService.shutdown``: unlockAll, so the others take over at once
            self._unlock(list(self.pq_table))
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
                if self.locks_queues:
                    self._release(pq)
                changed = True
        all_locked = True
        for mq in allocated:
            if mq in self.pq_table:
                continue
            if self.locks_queues and not self._lock(mq):
                # "add a new mq failed, because lock failed": left for a later rebalance
                all_locked = False
                continue
            self.offset_store.pop(mq, None)  # removeDirtyOffset
            next_offset = self._compute_pull_from_where(mq)
            if next_offset < 0:
                continue
            # an orderly client locked the queue on the broker before it pulls (LOCK_BATCH_MQ)
            pq = ProcessQueue(mq, next_offset, last_pull_ms=self.scheduler.now_ms, locked=self.spec.orderly,
                              last_lock_ms=self.scheduler.now_ms if self.spec.orderly else 0)
            self.pq_table[mq] = pq
            pq.pull_timer = self.scheduler.call_later(PULL_DISPATCH_DELAY_MS, self._pull, pq)
            changed = True
        if not all_locked:
            self.scheduler.call_later(REBALANCE_LATER_MS, self.rebalance_now)
        return changed

    # -- orderly: the broker's queue locks ------------------------------------------------------

    @property
    def locks_queues(self) -> bool:
        """An orderly consumer of a clustering group locks every queue it holds on its broker."""
        return self.spec.orderly and not self.broadcasting

    def _lock(self, mq: MessageQueue) -> bool:
        """``RebalanceImpl.lock``: LOCK_BATCH_MQ for one queue; True when the broker granted it."""
        broker = self.ctx.brokers.get(mq.broker_name)
        if broker is None:
            return False
        self._rpc_ms += RPC_MS
        return mq in broker.locks.try_lock_batch(self.group, (mq,), self.client_id)

    def _unlock(self, queues: list[MessageQueue]) -> None:
        """UNLOCK_BATCH_MQ, broker by broker (oneway: nothing waits for the answer)."""
        by_broker: dict[str, list[MessageQueue]] = {}
        for mq in queues:
            by_broker.setdefault(mq.broker_name, []).append(mq)
        for name, mqs in sorted(by_broker.items()):
            broker = self.ctx.brokers.get(name)
            if broker is not None:
                broker.locks.unlock_batch(self.group, mqs, self.client_id)

    def _release(self, pq: ProcessQueue) -> None:
        """``tryRemoveOrderMessageQueue`` (5.3): a queue given up is unlocked as soon as no
        listener call runs on it; a hung listener's queue only once ``UNLOCK_DELAY_MS`` passed
        since its lock was last taken or renewed."""
        pq.locked = False
        if self.stalled and pq.cached:
            at = max(self.scheduler.now_ms, pq.last_lock_ms + UNLOCK_DELAY_MS)
            self.scheduler.call_later(at - self.scheduler.now_ms, self._unlock, [pq.mq])
        else:
            self._unlock([pq.mq])

    def lock_all(self) -> None:
        """``RebalanceImpl.lockAll`` (every 20 s): renew the lock of every held queue, broker by
        broker; a queue the broker now refuses is marked unlocked, and its listener waits."""
        now = self.scheduler.now_ms
        by_broker: dict[str, list[ProcessQueue]] = {}
        for pq in self.pq_table.values():
            if not pq.dropped:
                by_broker.setdefault(pq.mq.broker_name, []).append(pq)
        for name, pqs in sorted(by_broker.items()):
            broker = self.ctx.brokers.get(name)
            if broker is None:
                continue
            self._rpc_ms += RPC_MS
            granted = broker.locks.try_lock_batch(self.group, [pq.mq for pq in pqs], self.client_id)
            for pq in pqs:
                was = pq.locked
                pq.locked = pq.mq in granted
                if pq.locked:
                    pq.last_lock_ms = now
                    if not was and pq.cached:
                        self._submit(pq, [pq.cached[o] for o in sorted(pq.cached)])

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

    # -- what the client tells admins -----------------------------------------------------------

    def reset_offset(self, topic: str, offsets: Mapping[MessageQueue, int]) -> None:
        """RESET_CONSUMER_CLIENT_OFFSET (220), ``MQClientInstance.resetOffset``: drop the process
        queues of the reset queues at once, then after 10 s store and persist the new offsets
        and rebalance, which creates the queues again from them."""
        if not self.running or self.broadcasting:
            return
        held = {mq: offset for mq, offset in offsets.items() if mq.topic == topic}
        for mq in held:
            pq = self.pq_table.get(mq)
            if pq is not None:
                pq.dropped = True
                if pq.pull_timer is not None:
                    pq.pull_timer.cancel()
        self.scheduler.call_later(CLIENT_RESET_PAUSE_MS, self._apply_reset, held)

    def _apply_reset(self, offsets: Mapping[MessageQueue, int]) -> None:
        if not self.running:
            return
        for mq, offset in offsets.items():
            self.pq_table.pop(mq, None)
            self.offset_store[mq] = offset
            broker = self.ctx.brokers.get(mq.broker_name)
            if broker is not None:
                broker.store.update_offset(self.group, mq.topic, mq.queue_id, offset)
        self.rebalance_now()

    def handle_server_request(self, request: RemotingCommand) -> RemotingCommand:
        """``ClientRemotingProcessor``: answers GET_CONSUMER_RUNNING_INFO relayed by a broker."""
        return running_info.answer_server_request(self, request)


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
             broker: str | None = None, keys: str | None = None, body: bytes = b"",
             properties: tuple[tuple[str, str], ...] = ()) -> StoredMessage | None:
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
                                     body=body, keys=keys, producer=self.group, properties=properties)
        self.sent += 1
        self.ctx.record_send(message)
        return message
