"""The emulated cluster: brokers, name server, simulated clients and the scenario's timeline.

:class:`EmulatedCluster` builds the brokers and topics of a :class:`~.scenario.Scenario`, schedules
its consumers' starts and stops and its produce steps on one scheduler, keeps the accounting the
run report needs, and offers the operations the control API exposes (start/stop a consumer,
produce, advance the clock, dump the state).

The run report, the clients list and the state dump built from this accounting are in
:mod:`~rmqctl.emulator.report`.

Must not import the CLI, textual or pyspark.
"""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rmqctl import errors
from rmqctl.emulator.broker import BrokerState
from rmqctl.emulator.client import SimulatedConsumer, SimulatedProducer, default_client_id
from rmqctl.emulator.clock import VIRTUAL_EPOCH_MS, Scheduler
from rmqctl.emulator.consume import QueueConsumer
from rmqctl.emulator.namesrv import NameServerState
from rmqctl.emulator.pop import SimulatedPopConsumer
from rmqctl.emulator.report import run_report
from rmqctl.emulator.scenario import ConsumerSpec, ProduceSpec, Scenario
from rmqctl.emulator.store import StoredMessage
from rmqctl.model import RETRY_PREFIX, TRACE_TOPIC, Subscription, SubscriptionGroupConfig

#: how many subscription-table changes :attr:`EmulatedCluster.history` keeps
HISTORY_LIMIT = 10_000


@dataclass(frozen=True, slots=True)
class SubscriptionChange:
    """One change of a broker's stored subscription table for a group (None: group dropped)."""

    time_ms: int
    broker: str
    group: str
    table: tuple[tuple[str, str, int], ...] | None  # (topic, expression, subVersion)

    @property
    def topics(self) -> tuple[str, ...]:
        return tuple(t for t, _, _ in self.table or ())


class EmulatedCluster:
    """A whole emulated cluster on one scheduler (virtual by default)."""

    def __init__(self, scenario: Scenario, *, scheduler: Scheduler | None = None,
                 record_history: bool = True) -> None:
        self.scenario = scenario
        self.scheduler = scheduler or Scheduler(VIRTUAL_EPOCH_MS)
        self.t0_ms = self.scheduler.now_ms
        #: messages each produce step has sent so far (its property values rotate through them)
        self._produced: dict[int, int] = {}
        self.namesrv_addr = "127.0.0.1:9876"
        #: changes made outside the scheduler's events (requests, closed connections, the
        #: control API): part of the version under which a served emulator keeps answers
        self.changes = 0
        self.brokers: dict[str, BrokerState] = {}
        for spec in scenario.brokers:
            broker = BrokerState(spec.name, spec.cluster, self.scheduler)
            broker.pulls.long_polling = spec.long_polling
            broker.store.server_side_reset = spec.server_side_reset
            broker.property_filter = spec.property_filter
            if record_history:
                broker.groups.on_subscription_change = functools.partial(self._on_subscription_change, spec.name)
            self.brokers[spec.name] = broker
        self.namesrv = NameServerState(self.brokers)
        for topic in scenario.topics:
            for name in scenario.topic_brokers(topic):
                self.brokers[name].create_topic(topic.name, topic.read_queues, topic.write_queues,
                                                topic.perm, order=topic.order, message_type=topic.message_type)
        if any(c.trace for c in scenario.consumers) and self.brokers and not any(
                TRACE_TOPIC in b.store.topics for b in self.brokers.values()):
            # a broker with traceTopicEnable creates the trace topic with one queue
            next(iter(self.brokers.values())).create_topic(TRACE_TOPIC, 1, 1)
        for group in scenario.groups:
            config = SubscriptionGroupConfig(
                group.name, consume_enable=group.consume_enable,
                consume_broadcast_enable=group.consume_broadcast_enable,
                consume_message_orderly=group.consume_message_orderly,
                retry_queue_nums=group.retry_queue_nums, retry_max_times=group.retry_max_times,
                notify_consumer_ids_changed_enable=group.notify_consumer_ids_changed_enable,
            )
            for broker in self.brokers.values():
                broker.set_group_config(config)
            for topic_name in group.pop_topics:
                # the broker keeps one retry topic per POP group and topic (KeyBuilder's
                # buildPopRetryTopic), on every broker serving the topic
                topic_spec = scenario.topic(topic_name)
                separator = "+" if group.pop_retry_v2 else "_"
                retry = f"{RETRY_PREFIX}{group.name}{separator}{topic_name}"
                for name in scenario.topic_brokers(topic_spec) if topic_spec else ():
                    if retry not in self.brokers[name].store.topics:
                        self.brokers[name].create_topic(retry, group.retry_queue_nums, group.retry_queue_nums)
        self.consumers: list[SimulatedConsumer] = []
        self.producers: dict[str, SimulatedProducer] = {}
        #: changes of every broker's stored subscription tables, oldest first (bounded)
        self.history: deque[SubscriptionChange] = deque(maxlen=HISTORY_LIMIT)
        self.messages: list[StoredMessage] = []
        #: message seq -> groups whose listener received it
        self.delivered: dict[int, set[str]] = {}
        #: message seq -> (group, client id) of each client whose own tag filter dropped it
        self.dropped: dict[int, set[tuple[str, str]]] = {}
        self._seq = 0
        self._port = 50_000
        for consumer_spec in scenario.consumers:
            start_ms = self.t0_ms + _ms(consumer_spec.start)
            consumer = self._new_consumer(consumer_spec, start_ms)
            self.scheduler.call_at(start_ms, consumer.start)
            if consumer_spec.stall is not None:
                self.scheduler.call_at(self.t0_ms + _ms(consumer_spec.stall), consumer.stall)
            if consumer_spec.stop is not None:
                self.scheduler.call_at(self.t0_ms + _ms(consumer_spec.stop), consumer.shutdown)
        for step in scenario.produce:
            if step.interval <= 0:
                self.scheduler.call_at(self.t0_ms + _ms(step.at), self._produce_step, step, step.count)
            else:
                for k in range(step.count):
                    self.scheduler.call_at(self.t0_ms + _ms(step.at + k * step.interval),
                                           self._produce_step, step, 1)

    # -- time -------------------------------------------------------------------------------

    @property
    def now_ms(self) -> int:
        return self.scheduler.now_ms

    @property
    def elapsed(self) -> float:
        """Seconds of scenario time since the cluster was built."""
        return (self.scheduler.now_ms - self.t0_ms) / 1000

    def run_until(self, seconds: float) -> None:
        """Advance the (virtual) clock to ``seconds`` of scenario time, running every event."""
        self.scheduler.run_until(self.t0_ms + _ms(seconds))

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise errors.UsageError("cannot move the clock backwards")
        self.scheduler.run_until(self.scheduler.now_ms + _ms(seconds))

    # -- what clients ask of the world ------------------------------------------------------

    def version_stamp(self, group: str, at_ms: int) -> int:
        """The subVersion a client of ``group`` writes at its own clock time ``at_ms``
        (``System.currentTimeMillis()``). One place to change if versions ever need skew."""
        return at_ms

    def next_port(self) -> int:
        self._port += 1
        if self._port > 65_000:
            self._port = 20_000
        return self._port

    def next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def record_send(self, message: StoredMessage) -> None:
        self.messages.append(message)

    def record_delivery(self, consumer: QueueConsumer, message: StoredMessage) -> None:
        # a retry copy that is finally consumed delivers the original message
        seq = message.origin_seq if message.origin_seq is not None else message.seq
        groups = self.delivered.get(seq)
        if groups is None:
            self.delivered[seq] = {consumer.group}
        else:
            groups.add(consumer.group)

    def record_drop(self, consumer: QueueConsumer, message: StoredMessage) -> None:
        seq = message.origin_seq if message.origin_seq is not None else message.seq
        self.dropped.setdefault(seq, set()).add((consumer.group, consumer.client_id))

    def _on_subscription_change(self, broker_name: str, group: str,
                                table: dict[str, Subscription] | None) -> None:
        frozen = None if table is None else tuple(
            (t, s.expression, s.sub_version) for t, s in sorted(table.items()))
        self.history.append(SubscriptionChange(self.scheduler.now_ms, broker_name, group, frozen))

    # -- clients ----------------------------------------------------------------------------

    def _new_consumer(self, spec: ConsumerSpec, start_ms: int) -> SimulatedConsumer:
        index = len(self.consumers)
        client_id = default_client_id(spec, index, start_ms - self.t0_ms)
        kind = SimulatedPopConsumer if spec.pop else SimulatedConsumer
        consumer = kind(self, spec, index, client_id)
        self.consumers.append(consumer)
        return consumer

    def start_consumer(self, spec: ConsumerSpec) -> SimulatedConsumer:
        """Start a new simulated consumer now (control API)."""
        for topic, _ in spec.subscriptions:
            if self.namesrv.route(topic) is None:
                raise errors.NotFound(f"topic {topic!r} does not exist in the emulated cluster")
        self.changes += 1
        consumer = self._new_consumer(spec, self.scheduler.now_ms)
        consumer.start()
        return consumer

    def find_consumers(self, client_id: str) -> list[SimulatedConsumer]:
        return [c for c in self.consumers if c.client_id == client_id]

    def stop_consumer(self, client_id: str, *, kill: bool = False) -> SimulatedConsumer:
        running = [c for c in self.find_consumers(client_id) if c.running]
        if not running:
            known = self.find_consumers(client_id)
            raise errors.NotFound(
                f"no running simulated consumer {client_id!r}"
                + (" (it is already stopped)" if known else ""))
        self.changes += 1
        consumer = running[0]
        consumer.kill() if kill else consumer.shutdown()
        return consumer

    def producer(self, name: str = "default") -> SimulatedProducer:
        producer = self.producers.get(name)
        if producer is None:
            producer = SimulatedProducer(self, name, f"10.0.255.{len(self.producers) + 1}")
            self.producers[name] = producer
        return producer

    def produce(self, topic: str, count: int = 1, tag: str | None = None, *, queue: int | None = None,
                broker: str | None = None, producer: str = "default", keys: str | None = None,
                body: bytes = b"",
                properties: Sequence[tuple[str, Sequence[str]]] = ()) -> list[StoredMessage]:
        """Send ``count`` messages; ``properties`` gives each name a list of values that the
        messages take in turn (message k gets value ``k % len(values)``)."""
        route = self.namesrv.route(topic)
        if route is None:
            raise errors.NotFound(f"topic {topic!r} does not exist in the emulated cluster")
        if broker is not None and broker not in {q.broker_name for q in route.queue_datas}:
            raise errors.UsageError(f"topic {topic!r} is not on broker {broker!r}")
        if queue is not None:
            name = broker or route.queue_datas[0].broker_name
            qd = next(q for q in route.queue_datas if q.broker_name == name)
            if not 0 <= queue < qd.write_queue_nums:
                raise errors.UsageError(f"queue {queue} does not exist on {name} for {topic!r}")
        self.changes += 1
        sender = self.producer(producer)
        sent = []
        for k in range(count):
            props = tuple((name, values[k % len(values)]) for name, values in properties if values)
            message = sender.send(topic, tag, queue=queue, broker=broker, keys=keys, body=body,
                                  properties=props)
            if message is None:
                raise errors.UsageError(f"topic {topic!r} has no writable queue")
            sent.append(message)
        return sent

    def _produce_step(self, step: ProduceSpec, count: int) -> None:
        # with an interval each message is its own step: rotate the values by how many went before
        done = self._produced.get(id(step), 0)
        self._produced[id(step)] = done + count
        rotated = tuple((name, tuple(values[(done + i) % len(values)] for i in range(len(values))))
                        for name, values in step.properties if values)
        self.produce(step.topic, count, step.tag, queue=step.queue, broker=step.broker,
                     producer=step.producer, keys=step.keys, properties=rotated)

    # -- reports ----------------------------------------------------------------------------

    def report(self) -> dict[str, Any]:
        """The ``emulator run`` document (:func:`~rmqctl.emulator.report.run_report`)."""
        return run_report(self)


def _ms(seconds: float) -> int:
    return round(seconds * 1000)


def run_scenario(scenario: Scenario, at: float | None = None) -> EmulatedCluster:
    """Build the cluster and run the virtual clock to ``at`` (default: the scenario's duration)."""
    cluster = EmulatedCluster(scenario)
    cluster.run_until(scenario.duration if at is None else at)
    return cluster
