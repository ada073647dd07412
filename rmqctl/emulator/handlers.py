"""Request handling shared by the emulator's ports, and the name server's request handlers.

A handler takes the request and the :class:`~rmqctl.emulator.groups.Channel` it came on and
returns the answer now, ``None`` (no answer), or an awaitable of the answer (a long-polling pull,
a relayed request). :func:`respond` builds an answer the way a 5.x server writes it; the name
server's handlers answer from :class:`~rmqctl.emulator.namesrv.NameServerState` with the body
encoders of :mod:`rmqctl.remoting.bodies`. Must not import the CLI, textual or pyspark, nor the
server's connection handling.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

from rmqctl.emulator.broker import BROKER_VERSION
from rmqctl.emulator.groups import Channel
from rmqctl.emulator.world import EmulatedCluster
from rmqctl.remoting import bodies
from rmqctl.remoting.codes import RequestCode, ResponseCode
from rmqctl.remoting.frame import FLAG_RESPONSE, RemotingCommand

Result = RemotingCommand | None | Awaitable[RemotingCommand | None]
Handler = Callable[[RemotingCommand, Channel], Result]


def respond(request: RemotingCommand, code: int, *, body: bytes = b"", remark: str | None = None,
            ext: Mapping[str, str] | None = None) -> RemotingCommand:
    """A response as a 5.x server writes it: JSON header, JAVA, the server's own version."""
    return RemotingCommand(code=int(code), opaque=request.opaque, flag=FLAG_RESPONSE,
                           language="JAVA", version=BROKER_VERSION, remark=remark,
                           ext_fields=dict(ext or {}), body=body)


def not_supported(request: RemotingCommand) -> RemotingCommand:
    return respond(request, ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
                   remark=f" request type {request.code} not supported")


def ext_int(ext: Mapping[str, str], key: str, default: int = 0) -> int:
    """A header field as Java's ``Integer.parseInt`` would take it; ``default`` when absent or bad."""
    try:
        return int(ext.get(key, default))
    except (TypeError, ValueError):
        return default


def ext_bool(ext: Mapping[str, str], key: str, default: bool = False) -> bool:
    value = ext.get(key)
    return default if value is None else value.lower() == "true"


# ---------------------------------------------------------------------------------------------
# Name server


def namesrv_handlers(cluster: EmulatedCluster) -> dict[int, Handler]:
    ns = cluster.namesrv

    def cluster_info(cmd: RemotingCommand, conn: Channel) -> RemotingCommand:
        return respond(cmd, ResponseCode.SUCCESS, body=bodies.encode_cluster_info(ns.cluster_info()))

    def route(cmd: RemotingCommand, conn: Channel) -> RemotingCommand:
        topic = cmd.ext_fields.get("topic", "")
        data = ns.route(topic)
        if data is None:
            return respond(cmd, ResponseCode.TOPIC_NOT_EXIST,
                           remark=f"No topic route info in name server for the topic: {topic}")
        # ``ClientRequestProcessor``: V4_9_4+ clients (or acceptStandardJsonOnly) get standard JSON.
        standard = cmd.version >= 401 or ext_bool(cmd.ext_fields, "acceptStandardJsonOnly")
        return respond(cmd, ResponseCode.SUCCESS, body=bodies.encode_topic_route(data, standard=standard))

    def all_topics(cmd: RemotingCommand, conn: Channel) -> RemotingCommand:
        return respond(cmd, ResponseCode.SUCCESS, body=bodies.encode_string_list("topicList", ns.all_topics()))

    def topics_by_cluster(cmd: RemotingCommand, conn: Channel) -> RemotingCommand:
        topics = ns.topics_of_cluster(cmd.ext_fields.get("cluster", ""))
        return respond(cmd, ResponseCode.SUCCESS, body=bodies.encode_string_list("topicList", topics or []))

    def system_topics(cmd: RemotingCommand, conn: Channel) -> RemotingCommand:
        first = next(iter(sorted(cluster.brokers.values(), key=lambda b: b.name)), None)
        return respond(cmd, ResponseCode.SUCCESS,
                       body=bodies.encode_string_list(
                           "topicList", ns.system_topics(), broker_addr=first.addr if first else None))

    def kv_list(cmd: RemotingCommand, conn: Channel) -> RemotingCommand:
        namespace = cmd.ext_fields.get("namespace", "")
        table = ns.kv.get(namespace)
        if not table:
            return respond(cmd, ResponseCode.QUERY_NOT_FOUND, remark=f"No config item, Namespace: {namespace}")
        return respond(cmd, ResponseCode.SUCCESS, body=bodies.encode_kv_table(table))

    def kv_config(cmd: RemotingCommand, conn: Channel) -> RemotingCommand:
        namespace, key = cmd.ext_fields.get("namespace", ""), cmd.ext_fields.get("key", "")
        value = ns.kv.get(namespace, {}).get(key)
        if value is None:
            return respond(cmd, ResponseCode.QUERY_NOT_FOUND,
                           remark=f"No config item, Namespace: {namespace} Key: {key}")
        return respond(cmd, ResponseCode.SUCCESS, ext={"value": value})

    return {
        RequestCode.GET_BROKER_CLUSTER_INFO: cluster_info,
        RequestCode.GET_ROUTEINFO_BY_TOPIC: route,
        RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER: all_topics,
        RequestCode.GET_TOPICS_BY_CLUSTER: topics_by_cluster,
        RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS: system_topics,
        RequestCode.GET_KVLIST_BY_NAMESPACE: kv_list,
        RequestCode.GET_KV_CONFIG: kv_config,
        # routes are built from the brokers' topic tables: a topic deleted there is gone here
        RequestCode.DELETE_TOPIC_IN_NAMESRV: lambda cmd, conn: respond(cmd, ResponseCode.SUCCESS),
    }
