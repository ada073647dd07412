"""The emulated cluster: brokers, name server, simulated clients and the scenario's timeline.

:class:`EmulatedCluster` builds the brokers and topics of a :class:`~.scenario.Scenario`, schedules
its consumers' starts and stops and its produce steps on one scheduler, keeps the accounting the
run report needs, and offers the operations the control API exposes (start/stop a consumer,
produce, advance the clock, dump the state).

**Run report** (``emulator run -o json``)::

    {"scenario": NAME, "at": SECONDS,
     "consumers": {CLIENT_ID: {"group", "received_by_tag": {TAG: n},
                               "queues": [{"topic", "broker", "queue_id"}],
                               "pull_errors": {"NAME (code)": n}}},
     "produced_by_tag": {TAG: n}, "lost_by_tag": {TAG: n},
     "broker_subscriptions": {BROKER: {GROUP: {TOPIC: {"expression", "sub_version"}}}}}

``queues`` are the queues the client holds at the end (retry queues included); a client id used
by two simulated processes appears as ``ID`` and ``ID [2]``. Messages without a tag count under
the tag ``""``.

**Lost**, precisely: a produced message *m* on topic *T* with tag *t* is **wanted** by a group
*G* when at least one simulated consumer of *G* (started at any time in the run) subscribes *T*
with an expression whose own filter accepts *t* (``*`` accepts everything; otherwise *t* must be
one of its tags). *m* is **lost** when some group wants it and no listener of that group has
received it by the end of the run. A message no group wants (filtered out by every
subscription) is not lost; a message still waiting behind a consumer offset (for example on a
queue nobody holds) counts as lost, because nobody received it within the scenario.
``lost_by_tag`` counts lost messages per tag, each message once however many groups lost it.

Must not import the CLI, textual or pyspark.
"""

from __future__ import annotations

import functools
from collections import deque
from dataclasses import dataclass
from typing import Any

from rmqctl import errors
from rmqctl.emulator.broker import BrokerState
from rmqctl.emulator.client import SimulatedConsumer, SimulatedProducer, default_client_id
from rmqctl.emulator.clock import VIRTUAL_EPOCH_MS, Scheduler
from rmqctl.emulator.namesrv import NameServerState
from rmqctl.emulator.scenario import ConsumerSpec, ProduceSpec, Scenario
from rmqctl.emulator.store import StoredMessage
from rmqctl.model import Subscription, SubscriptionGroupConfig, parse_tag_expression
from rmqctl.remoting.codes import ResponseCode


def code_name(code: int) -> str:
    """``24`` → ``SUBSCRIPTION_NOT_EXIST (24)``: response codes are shown by name and number."""
    try:
        return f"{ResponseCode(code).name} ({code})"
    except ValueError:
        return f"response code {code}"

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
        self.namesrv_addr = "127.0.0.1:9876"
        self.brokers: dict[str, BrokerState] = {}
        for spec in scenario.brokers:
            broker = BrokerState(spec.name, spec.cluster, self.scheduler)
            broker.pulls.long_polling = spec.long_polling
            if record_history:
                broker.groups.on_subscription_change = functools.partial(self._on_subscription_change, spec.name)
            self.brokers[spec.name] = broker
        self.namesrv = NameServerState(self.brokers)
        for topic in scenario.topics:
            for name in scenario.topic_brokers(topic):
                self.brokers[name].create_topic(topic.name, topic.read_queues, topic.write_queues,
                                                topic.perm, order=topic.order)
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
        self.consumers: list[SimulatedConsumer] = []
        self.producers: dict[str, SimulatedProducer] = {}
        #: changes of every broker's stored subscription tables, oldest first (bounded)
        self.history: deque[SubscriptionChange] = deque(maxlen=HISTORY_LIMIT)
        self.messages: list[StoredMessage] = []
        #: message seq -> groups whose listener received it
        self.delivered: dict[int, set[str]] = {}
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

    def record_delivery(self, consumer: SimulatedConsumer, message: StoredMessage) -> None:
        # a retry copy that is finally consumed delivers the original message
        seq = message.origin_seq if message.origin_seq is not None else message.seq
        groups = self.delivered.get(seq)
        if groups is None:
            self.delivered[seq] = {consumer.group}
        else:
            groups.add(consumer.group)

    def _on_subscription_change(self, broker_name: str, group: str,
                                table: dict[str, Subscription] | None) -> None:
        frozen = None if table is None else tuple(
            (t, s.expression, s.sub_version) for t, s in sorted(table.items()))
        self.history.append(SubscriptionChange(self.scheduler.now_ms, broker_name, group, frozen))

    # -- clients ----------------------------------------------------------------------------

    def _new_consumer(self, spec: ConsumerSpec, start_ms: int) -> SimulatedConsumer:
        index = len(self.consumers)
        client_id = default_client_id(spec, index, start_ms - self.t0_ms)
        consumer = SimulatedConsumer(self, spec, index, client_id)
        self.consumers.append(consumer)
        return consumer

    def start_consumer(self, spec: ConsumerSpec) -> SimulatedConsumer:
        """Start a new simulated consumer now (control API)."""
        for topic, _ in spec.subscriptions:
            if self.namesrv.route(topic) is None:
                raise errors.NotFound(f"topic {topic!r} does not exist in the emulated cluster")
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
                body: bytes = b"") -> list[StoredMessage]:
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
        sender = self.producer(producer)
        sent = []
        for _ in range(count):
            message = sender.send(topic, tag, queue=queue, broker=broker, keys=keys, body=body)
            if message is None:
                raise errors.UsageError(f"topic {topic!r} has no writable queue")
            sent.append(message)
        return sent

    def _produce_step(self, step: ProduceSpec, count: int) -> None:
        self.produce(step.topic, count, step.tag, queue=step.queue, broker=step.broker,
                     producer=step.producer, keys=step.keys)

    # -- reports ----------------------------------------------------------------------------

    def _report_keys(self) -> list[tuple[str, SimulatedConsumer]]:
        seen: dict[str, int] = {}
        out = []
        for consumer in self.consumers:
            n = seen.get(consumer.client_id, 0) + 1
            seen[consumer.client_id] = n
            out.append((consumer.client_id if n == 1 else f"{consumer.client_id} [{n}]", consumer))
        return out

    def lost_messages(self) -> list[StoredMessage]:
        """Messages wanted by some group that no listener of that group received (see module doc)."""
        wanting: dict[str, list[tuple[str, Subscription]]] = {}
        for consumer in self.consumers:
            for topic, expr in consumer.spec.subscriptions:
                wanting.setdefault(topic, []).append((consumer.group, parse_tag_expression(topic, expr)))
        lost = []
        for message in self.messages:
            groups = {g for g, sub in wanting.get(message.topic, ()) if sub.accepts(message.tag)}
            if groups - self.delivered.get(message.seq, set()):
                lost.append(message)
        return lost

    def broker_subscriptions(self) -> dict[str, dict[str, dict[str, dict[str, Any]]]]:
        return {
            name: {
                group: {topic: {"expression": sub.expression, "sub_version": sub.sub_version}
                        for topic, sub in sorted(info.subscriptions.items())}
                for group, info in sorted(broker.consumer_table.items())
            }
            for name, broker in sorted(self.brokers.items())
        }

    def report(self) -> dict[str, Any]:
        """The ``emulator run`` document (see the module docstring)."""
        produced: dict[str, int] = {}
        for message in self.messages:
            tag = message.tag or ""
            produced[tag] = produced.get(tag, 0) + 1
        lost: dict[str, int] = {}
        for message in self.lost_messages():
            tag = message.tag or ""
            lost[tag] = lost.get(tag, 0) + 1
        consumers = {
            key: {
                "group": c.group,
                "received_by_tag": dict(sorted(c.received_by_tag.items())),
                "queues": [mq.as_dict() for mq in c.held_queues()],
                "pull_errors": {code_name(code): n for code, n in sorted(c.pull_errors.items())},
            }
            for key, c in self._report_keys()
        }
        return {
            "scenario": self.scenario.name,
            "at": self.elapsed,
            "consumers": consumers,
            "produced_by_tag": dict(sorted(produced.items())),
            "lost_by_tag": {tag: lost.get(tag, 0) for tag in sorted(produced)},
            "broker_subscriptions": self.broker_subscriptions(),
        }

    def clients(self) -> list[dict[str, Any]]:
        """Every simulated consumer, running or not (control API ``GET /v1/clients``)."""
        out = []
        for key, c in self._report_keys():
            out.append({
                "client_id": c.client_id,
                "key": key,
                "group": c.group,
                "running": c.running,
                "message_model": c.spec.message_model,
                "strategy": c.strategy.name,
                "subscriptions": {s.topic: s.expression for s in c.user_subscriptions()}
                or dict(c.spec.subscriptions),
                "sub_versions": {t: s.sub_version for t, s in c.subscriptions.items()},
                "started_at": (c.started_ms - self.t0_ms) / 1000 if c.started_ms else None,
                "stopped_at": (c.stopped_ms - self.t0_ms) / 1000 if c.stopped_ms else None,
                "stalled_at": (c.stalled_ms - self.t0_ms) / 1000 if c.stalled_ms is not None else None,
                "queues": [mq.as_dict() for mq in c.held_queues()],
                "received_by_tag": dict(sorted(c.received_by_tag.items())),
                "pull_errors": {code_name(k): v for k, v in sorted(c.pull_errors.items())},
            })
        return out

    def state(self) -> dict[str, Any]:
        """A full dump: clock, brokers (topics, offsets, consumer tables), clients, report."""
        brokers = {}
        for name, broker in sorted(self.brokers.items()):
            brokers[name] = {
                "cluster": broker.cluster,
                "addr": broker.addr,
                "topics": {
                    t: {"read_queues": c.read_queue_nums, "write_queues": c.write_queue_nums,
                        "perm": c.perm,
                        "max_offsets": [broker.max_offset(t, q) for q in range(c.read_queue_nums)]}
                    for t, c in sorted(broker.topics.items())
                },
                "consumer_groups": {
                    g: {
                        "consume_type": info.consume_type,
                        "message_model": info.message_model,
                        "connections": [
                            {"client_id": ci.client_id, "client_addr": ch.remote_addr,
                             "language": ci.language, "version": ci.version}
                            for ch, ci in info.channels.items()
                        ],
                        "subscriptions": {t: s.as_dict() for t, s in sorted(info.subscriptions.items())},
                    }
                    for g, info in sorted(broker.consumer_table.items())
                },
                "offsets": {
                    f"{topic}@{group}": {str(q): o for q, o in sorted(table.items())}
                    for (topic, group), table in sorted(broker.offsets.items())
                },
                "suspended_pulls": broker.suspended_pulls(),
            }
        return {
            "scenario": self.scenario.name,
            "now_ms": self.scheduler.now_ms,
            "at": self.elapsed,
            "namesrv": self.namesrv_addr,
            "brokers": brokers,
            "clients": self.clients(),
            "history": [
                {"at": (h.time_ms - self.t0_ms) / 1000, "broker": h.broker, "group": h.group,
                 "topics": list(h.topics) if h.table is not None else None}
                for h in list(self.history)[-200:]
            ],
            "report": self.report(),
        }


def _ms(seconds: float) -> int:
    return round(seconds * 1000)


def run_scenario(scenario: Scenario, at: float | None = None) -> EmulatedCluster:
    """Build the cluster and run the virtual clock to ``at`` (default: the scenario's duration)."""
    cluster = EmulatedCluster(scenario)
    cluster.run_until(scenario.duration if at is None else at)
    return cluster
