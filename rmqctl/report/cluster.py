"""The documents of ``cluster list`` and ``topic list|route|status``, built from model objects.

Must not import the CLI, the TUI, the doctor or pyspark.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NotRequired, TypedDict

from rmqctl.errors import RmqctlError
from rmqctl.model import BrokerRuntime, ClusterInfo, TopicRoute, TopicStats, topic_kind
from rmqctl.report.common import Errors, RowSet, error_rows, errors_doc


class ClusterListDoc(TypedDict):
    brokers: list[dict[str, Any]]
    errors: Errors


CLUSTER_COLUMNS = ("cluster", "broker", "broker_id", "addr", "version", "in_tps", "out_tps", "disk_ratio")


def cluster_list(info: ClusterInfo, runtimes: Iterable[BrokerRuntime],
                 errors: Mapping[str, RmqctlError]) -> ClusterListDoc:
    """``cluster list``: every broker (masters and slaves) of every cluster, with what its runtime
    info says (``null`` when that broker's runtime info could not be read)."""
    by_key = {(r.broker_name, r.broker_id): r for r in runtimes}
    rows = []
    for cluster_name, broker_name, broker_id, addr in info.broker_addresses():
        rt = by_key.get((broker_name, broker_id))
        rows.append({
            "cluster": cluster_name,
            "broker": broker_name,
            "broker_id": broker_id,
            "addr": addr,
            "version": rt.version if rt else None,
            "in_tps": rt.in_tps if rt else None,
            "out_tps": rt.out_tps if rt else None,
            "disk_ratio": rt.disk_ratio if rt else None,
        })
    return ClusterListDoc(brokers=rows, errors=errors_doc(errors))


def cluster_list_rows(doc: ClusterListDoc) -> list[RowSet]:
    return [RowSet("broker", CLUSTER_COLUMNS, doc["brokers"]), *error_rows(doc)]


class TopicListDoc(TypedDict):
    topics: list[dict[str, Any]]
    errors: Errors
    unavailable: NotRequired[dict[str, str]]


TOPIC_LIST_COLUMNS = ("topic", "type", "type_source")


def topic_list(info: ClusterInfo, topics: Iterable[str], *, system: bool,
               declared: Mapping[str, str] | None = None,
               unavailable: Mapping[str, str] | None = None) -> TopicListDoc:
    """``topic list``: each topic with its type and where the type comes from (``type_source``).
    A user's topic has the message type its brokers declare (``declared``: ``normal``, ``fifo``,
    ``delay``, ``transaction``, ``lite``, ``priority``; source ``broker``), else ``normal`` by its
    name (source ``name``); the others are typed by name (``retry``, ``dlq``, ``system``,
    ``cluster``, ``broker``). Only users' topics unless ``system``; ``unavailable`` says why some
    declared types could not be read."""
    declared = declared or {}
    rows: list[dict[str, Any]] = []
    for topic in topics:
        kind = topic_kind(topic, info)
        if not system and kind != "normal":
            continue
        if kind == "normal" and topic in declared:
            rows.append({"topic": topic, "type": declared[topic].lower(), "type_source": "broker"})
        else:
            rows.append({"topic": topic, "type": kind, "type_source": "name"})
    doc = TopicListDoc(topics=rows, errors={})
    if unavailable:
        doc["unavailable"] = dict(unavailable)
    return doc


def topic_list_rows(doc: TopicListDoc) -> list[RowSet]:
    return [RowSet("topic", TOPIC_LIST_COLUMNS, doc["topics"]), *error_rows(doc)]


class TopicRouteDoc(TypedDict):
    topic: str
    brokers: list[dict[str, Any]]
    order_topic_conf: str | None
    errors: Errors


ROUTE_COLUMNS = ("cluster", "broker", "addrs", "read_queues", "write_queues", "perm")


def topic_route(topic: str, route: TopicRoute) -> TopicRouteDoc:
    """``topic route``: each broker serving the topic, its addresses by broker id and queue counts."""
    brokers = {b.broker_name: b for b in route.broker_datas}
    rows: list[dict[str, Any]] = []
    for qd in sorted(route.queue_datas, key=lambda q: q.broker_name):
        bd = brokers.get(qd.broker_name)
        rows.append({
            "cluster": bd.cluster if bd else None,
            "broker": qd.broker_name,
            "addrs": {str(k): v for k, v in sorted(bd.addrs.items())} if bd else {},
            "read_queues": qd.read_queue_nums,
            "write_queues": qd.write_queue_nums,
            "perm": qd.perm,
        })
    return TopicRouteDoc(topic=topic, brokers=rows, order_topic_conf=route.order_topic_conf, errors={})


def topic_route_rows(doc: TopicRouteDoc) -> list[RowSet]:
    return [RowSet("route", ROUTE_COLUMNS, doc["brokers"]), *error_rows(doc)]


class TopicStatusDoc(TypedDict):
    topic: str
    queues: list[dict[str, Any]]
    put_tps: float | None
    errors: Errors


STATUS_COLUMNS = ("broker", "queue_id", "min_offset", "max_offset", "last_updated_ts")


def topic_status(topic: str, stats: TopicStats, errors: Mapping[str, RmqctlError]) -> TopicStatusDoc:
    """``topic status``: min/max offset and the last write of every queue."""
    rows: list[dict[str, Any]] = [{
        "broker": o.queue.broker_name,
        "queue_id": o.queue.queue_id,
        "min_offset": o.min_offset,
        "max_offset": o.max_offset,
        "last_updated_ts": o.last_update_timestamp or None,
    } for o in stats.offsets]
    return TopicStatusDoc(topic=topic, queues=rows, put_tps=stats.put_tps, errors=errors_doc(errors))


def topic_status_rows(doc: TopicStatusDoc) -> list[RowSet]:
    return [RowSet("queue", STATUS_COLUMNS, doc["queues"]), *error_rows(doc)]
