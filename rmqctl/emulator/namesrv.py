"""The emulated name server's view: clusters, broker addresses and topic routes; no I/O.

A real broker registers its topic table with the name server every 30 s and right after a topic
changes (``registerIncrementBrokerData``). The emulator shares one process, so the name server
reads the brokers' tables directly: a route is always current. Routes list every broker serving
the topic, sorted by broker name, like ``RouteInfoManager.pickupTopicRouteData`` (whose HashMap
order is unspecified).

Must not import the CLI, textual or pyspark.
"""

from __future__ import annotations

from collections.abc import Mapping

from rmqctl.emulator.broker import BrokerState
from rmqctl.model import SYSTEM_TOPICS, BrokerData, ClusterInfo, MessageQueue, QueueData, TopicRoute, java_str_key


class NameServerState:
    """Answers what the name server answers, from the brokers' live tables."""

    def __init__(self, brokers: Mapping[str, BrokerState]) -> None:
        self.brokers = brokers
        #: ``KVConfigManager`` namespaces (ORDER_TOPIC_CONFIG …)
        self.kv: dict[str, dict[str, str]] = {}
        # Routes are read on every client heartbeat, rebalance and send: cache them per topic
        # until a broker changes that topic (or an address changes: :meth:`invalidate`).
        self._routes: dict[str, TopicRoute | None] = {}
        self._read_queues: dict[str, list[MessageQueue] | None] = {}
        self._write_queues: dict[str, list[MessageQueue]] = {}
        for broker in brokers.values():
            broker.store.on_topic_change = self.topic_changed

    def topic_changed(self, topic: str) -> None:
        self._routes.pop(topic, None)
        self._read_queues.pop(topic, None)
        self._write_queues.pop(topic, None)

    def invalidate(self) -> None:
        self._routes.clear()
        self._read_queues.clear()
        self._write_queues.clear()

    def broker_data(self, broker: BrokerState) -> BrokerData:
        return BrokerData(broker.name, broker.cluster, {broker.broker_id: broker.addr})

    def cluster_info(self) -> ClusterInfo:
        clusters: dict[str, list[str]] = {}
        for broker in self.brokers.values():
            clusters.setdefault(broker.cluster, []).append(broker.name)
        return ClusterInfo(
            {name: self.broker_data(b) for name, b in sorted(self.brokers.items())},
            {c: tuple(sorted(names)) for c, names in sorted(clusters.items())},
        )

    def route(self, topic: str) -> TopicRoute | None:
        try:
            return self._routes[topic]
        except KeyError:
            route = self._routes[topic] = self._build_route(topic)
            return route

    def read_queues(self, topic: str) -> list[MessageQueue] | None:
        """``topicRouteData2TopicSubscribeInfo``: readable queues in Java order (shared; do not
        mutate), or None when the topic has no route."""
        try:
            return self._read_queues[topic]
        except KeyError:
            route = self.route(topic)
            queues = None if route is None else sorted(
                (MessageQueue(topic, qd.broker_name, i)
                 for qd in route.queue_datas if qd.readable for i in range(qd.read_queue_nums)),
                key=lambda mq: (java_str_key(mq.broker_name), mq.queue_id))
            self._read_queues[topic] = queues
            return queues

    def write_queues(self, topic: str) -> list[MessageQueue]:
        """``TopicPublishInfo.messageQueueList``: writable queues, brokers sorted by name."""
        try:
            return self._write_queues[topic]
        except KeyError:
            route = self.route(topic)
            queues = [] if route is None else [
                MessageQueue(topic, qd.broker_name, i)
                for qd in sorted(route.queue_datas, key=lambda q: q.broker_name) if qd.writable
                for i in range(qd.write_queue_nums)
            ]
            self._write_queues[topic] = queues
            return queues

    def _build_route(self, topic: str) -> TopicRoute | None:
        queue_datas = []
        broker_datas = []
        for name in sorted(self.brokers):
            broker = self.brokers[name]
            config = broker.topics.get(topic)
            if config is None:
                continue
            queue_datas.append(
                QueueData(name, config.read_queue_nums, config.write_queue_nums, config.perm,
                          config.topic_sys_flag)
            )
            broker_datas.append(self.broker_data(broker))
        if not queue_datas:
            return None
        order_conf = self.kv.get("ORDER_TOPIC_CONFIG", {}).get(topic)
        return TopicRoute(topic, tuple(queue_datas), tuple(broker_datas), order_conf)

    def all_topics(self) -> list[str]:
        topics: set[str] = set()
        for broker in self.brokers.values():
            topics.update(broker.topics)
        return sorted(topics)

    def topics_of_cluster(self, cluster: str) -> list[str] | None:
        members = [b for b in self.brokers.values() if b.cluster == cluster]
        if not members:
            return None
        topics: set[str] = set()
        for broker in members:
            topics.update(broker.topics)
        return sorted(topics)

    def system_topics(self) -> list[str]:
        out = set(SYSTEM_TOPICS) & set(self.all_topics())
        for broker in self.brokers.values():
            # Cluster and broker names are registered as topics too.
            out.add(broker.cluster)
            out.add(broker.name)
        return sorted(out)
