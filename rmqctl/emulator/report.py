"""The documents an emulated cluster is read through: the run report, the clients list and the state dump.

**Run report** (``emulator run -o json``, :func:`run_report`)::

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
one of its tags; a SQL92 expression must be TRUE over *m*'s properties). *m* is **lost** when
some group wants it and no listener of that group has received it by the end of the run. A
message no group wants (filtered out by every subscription) is not lost; a message still waiting
behind a consumer offset (for example on a queue nobody holds) counts as lost, because nobody
received it within the scenario.
``lost_by_tag`` counts lost messages per tag, each message once however many groups lost it.

:func:`clients` is the control API's ``GET /v1/clients``; :func:`state` is its full dump.
Functions over an :class:`~rmqctl.emulator.world.EmulatedCluster`; they only read it.

Must not import the CLI, textual or pyspark.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rmqctl.model import MessageQueue, Subscription, parse_tag_expression, sql92_subscription
from rmqctl.remoting.codes import ResponseCode

if TYPE_CHECKING:
    from rmqctl.emulator.client import SimulatedConsumer
    from rmqctl.emulator.store import StoredMessage
    from rmqctl.emulator.world import EmulatedCluster


def _queue(mq: MessageQueue) -> dict[str, Any]:
    """A queue in the control API's answers, shaped as in every command's document."""
    return {"topic": mq.topic, "broker": mq.broker_name, "queue_id": mq.queue_id}


def _subscription(sub: Subscription) -> dict[str, Any]:
    """A broker-stored subscription in the state dump, shaped as in ``group show``'s document."""
    return {"topic": sub.topic, "expression": sub.expression, "expression_type": sub.expression_type,
            "tags": list(sub.tags), "sub_version": sub.sub_version}


def code_name(code: int) -> str:
    """``24`` → ``SUBSCRIPTION_NOT_EXIST (24)``: response codes are shown by name and number."""
    try:
        return f"{ResponseCode(code).name} ({code})"
    except ValueError:
        return f"response code {code}"


def report_keys(cluster: EmulatedCluster) -> list[tuple[str, SimulatedConsumer]]:
    """Every simulated consumer with its key: its client id, ``ID [n]`` for the n-th reuse of an id."""
    seen: dict[str, int] = {}
    out = []
    for consumer in cluster.consumers:
        n = seen.get(consumer.client_id, 0) + 1
        seen[consumer.client_id] = n
        out.append((consumer.client_id if n == 1 else f"{consumer.client_id} [{n}]", consumer))
    return out


def lost_messages(cluster: EmulatedCluster) -> list[StoredMessage]:
    """Messages wanted by some group that no listener of that group received (see module doc)."""
    wanting: dict[str, list[tuple[str, Subscription]]] = {}
    for consumer in cluster.consumers:
        for topic, expr in consumer.spec.subscriptions:
            sub = (sql92_subscription if topic in consumer.spec.sql_topics else parse_tag_expression)(topic, expr)
            wanting.setdefault(topic, []).append((consumer.group, sub))
    lost = []
    for message in cluster.messages:
        props = message.filter_properties()
        groups = {g for g, sub in wanting.get(message.topic, ()) if sub.wants(message.tag, props) is True}
        if groups - cluster.delivered.get(message.seq, set()):
            lost.append(message)
    return lost


def broker_subscriptions(cluster: EmulatedCluster) -> dict[str, dict[str, dict[str, dict[str, Any]]]]:
    """Every broker's stored subscription tables, by broker, group and topic."""
    return {
        name: {
            group: {topic: {"expression": sub.expression, "sub_version": sub.sub_version}
                    for topic, sub in sorted(info.subscriptions.items())}
            for group, info in sorted(broker.consumer_table.items())
        }
        for name, broker in sorted(cluster.brokers.items())
    }


def _count_by_tag(messages: list[StoredMessage]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for message in messages:
        tag = message.tag or ""
        counts[tag] = counts.get(tag, 0) + 1
    return counts


def _pull_errors(consumer: SimulatedConsumer) -> dict[str, int]:
    return {code_name(code): n for code, n in sorted(consumer.pull_errors.items())}


def run_report(cluster: EmulatedCluster) -> dict[str, Any]:
    """The ``emulator run`` document (see the module docstring)."""
    produced = _count_by_tag(cluster.messages)
    lost = _count_by_tag(lost_messages(cluster))
    consumers = {
        key: {
            "group": c.group,
            "received_by_tag": dict(sorted(c.received_by_tag.items())),
            "queues": [_queue(mq) for mq in c.held_queues()],
            "pull_errors": _pull_errors(c),
        }
        for key, c in report_keys(cluster)
    }
    return {
        "scenario": cluster.scenario.name,
        "at": cluster.elapsed,
        "consumers": consumers,
        "produced_by_tag": dict(sorted(produced.items())),
        "lost_by_tag": {tag: lost.get(tag, 0) for tag in sorted(produced)},
        "broker_subscriptions": broker_subscriptions(cluster),
    }


def clients(cluster: EmulatedCluster) -> list[dict[str, Any]]:
    """Every simulated consumer, running or not (control API ``GET /v1/clients``)."""
    t0 = cluster.t0_ms
    out = []
    for key, c in report_keys(cluster):
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
            "started_at": (c.started_ms - t0) / 1000 if c.started_ms else None,
            "stopped_at": (c.stopped_ms - t0) / 1000 if c.stopped_ms else None,
            "stalled_at": (c.stalled_ms - t0) / 1000 if c.stalled_ms is not None else None,
            "queues": [_queue(mq) for mq in c.held_queues()],
            "received_by_tag": dict(sorted(c.received_by_tag.items())),
            "pull_errors": _pull_errors(c),
        })
    return out


def state(cluster: EmulatedCluster) -> dict[str, Any]:
    """A full dump: clock, brokers (topics, offsets, consumer tables), clients, report."""
    brokers = {}
    for name, broker in sorted(cluster.brokers.items()):
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
                    "subscriptions": {t: _subscription(s) for t, s in sorted(info.subscriptions.items())},
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
        "scenario": cluster.scenario.name,
        "now_ms": cluster.scheduler.now_ms,
        "at": cluster.elapsed,
        "namesrv": cluster.namesrv_addr,
        "brokers": brokers,
        "clients": clients(cluster),
        "history": [
            {"at": (h.time_ms - cluster.t0_ms) / 1000, "broker": h.broker, "group": h.group,
             "topics": list(h.topics) if h.table is not None else None}
            for h in list(cluster.history)[-200:]
        ],
        "report": run_report(cluster),
    }
