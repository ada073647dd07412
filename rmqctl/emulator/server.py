"""The emulator's remoting servers: one name server port and one port per broker (asyncio).

Each port speaks RocketMQ's native protocol (the codec in :mod:`rmqctl.remoting.frame`) and
answers what a real 5.x name server or broker answers, with the same body shapes
(:mod:`rmqctl.emulator.wire`): every admin request rmqctl's AdminClient sends, what the Java
``mqadmin`` needs for clusterList / topicRoute / topicStatus / consumerConnection /
consumerProgress / consumerStatus (105 of ``%RETRY%group``, 28, 208 with a topic, 351, and 307
relayed by the broker to the consumer, which answers itself), plus heartbeats, offsets, topic
creation, sending and pulling so real Java clients can join.

Server behaviour mirrored from ``NettyRemotingServer`` (5.x): responses are always JSON-headed
(5.x does not mirror the request's serialize type); an unknown request code gets 3
REQUEST_CODE_NOT_SUPPORTED with remark `` request type N not supported``; a frame that cannot be
decoded closes that connection only; oneway requests get no answer. Admin clients need no
heartbeat. Before handling any request the world is brought up to "now" (real-time serving).

Peers may be hostile, so each port is bounded by :class:`ServerLimits`: a connection silent for
``idle_timeout`` is closed (the broker's ``serverChannelMaxIdleTimeSeconds``, 120 s); at most
``max_connections`` are open at once (the next is closed on accept); one unfinished frame may
buffer at most ``max_frame_bytes``; replies queued for a peer that does not read stop the reading
of its requests at ``write_buffer_bytes`` until they drain, and a drain stalled for
``idle_timeout`` closes the connection. A bad frame is logged in one line and closes only its
connection.

Must not import the CLI, textual or pyspark.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import itertools
import logging
import math
import socket
import struct
import zlib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Self

from rmqctl import errors
from rmqctl.emulator import wire
from rmqctl.emulator.broker import BROKER_VERSION, BrokerState
from rmqctl.emulator.client import InProcessChannel
from rmqctl.emulator.groups import ClientChannelInfo
from rmqctl.emulator.pulls import PullRequestHeader, PullResult
from rmqctl.emulator.store import StoredMessage
from rmqctl.emulator.world import EmulatedCluster
from rmqctl.model import SubscriptionGroupConfig, version_desc
from rmqctl.remoting import fastjson, frame
from rmqctl.remoting.codes import RequestCode, ResponseCode
from rmqctl.remoting.connection import read_commands
from rmqctl.remoting.frame import FLAG_ONEWAY, FLAG_RESPONSE, RemotingCommand

log = logging.getLogger(__name__)

#: ``MessageDecoder.MESSAGE_MAGIC_CODE`` (v1 layout: one-byte topic length)
MESSAGE_MAGIC_CODE = -626843481
#: ``Broker2Client.callClient`` waits this long for the consumer
RELAY_TIMEOUT_S = 10.0
#: ``MQVersion.Version.V3_1_8_SNAPSHOT``: older consumers cannot answer 307
MIN_RUNNING_INFO_VERSION = 62
_V2_HEADER = {"a": "producerGroup", "b": "topic", "c": "defaultTopic", "d": "defaultTopicQueueNums",
              "e": "queueId", "f": "sysFlag", "g": "bornTimestamp", "h": "flag", "i": "properties",
              "j": "reconsumeTimes", "k": "unitMode", "l": "maxReconsumeTimes", "m": "batch",
              "n": "brokerName"}

@dataclass(frozen=True, slots=True)
class ServerLimits:
    """What one peer may make a remoting port hold or wait for (defaults documented in docs/)."""

    #: seconds without a byte from the peer (or without its reading our replies) before closing
    idle_timeout: float = 120.0
    #: open connections per port; the next one is closed as soon as it is accepted
    max_connections: int = 1024
    #: largest frame accepted, so the most one unfinished frame buffers (a 4 MiB message + header)
    max_frame_bytes: int = 4 * 1024 * 1024 + 64 * 1024
    #: replies queued for a peer before its further requests wait for them to drain
    write_buffer_bytes: int = 1024 * 1024

    def __post_init__(self) -> None:
        if not (math.isfinite(self.idle_timeout) and self.idle_timeout > 0):
            raise errors.UsageError(f"idle timeout must be a finite number of seconds > 0, not {self.idle_timeout:g}")
        if self.max_connections < 1:
            raise errors.UsageError("the connection cap must be at least 1")
        if not 1024 <= self.max_frame_bytes <= frame.MAX_FRAME_LENGTH:
            raise errors.UsageError(f"the frame size limit must be 1024..{frame.MAX_FRAME_LENGTH} bytes")
        if self.write_buffer_bytes < 1024:
            raise errors.UsageError("the write buffer limit must be at least 1024 bytes")


Result = RemotingCommand | None | Awaitable[RemotingCommand | None]
Handler = Callable[[RemotingCommand, "ServerConnection"], Result]


def respond(request: RemotingCommand, code: int, *, body: bytes = b"", remark: str | None = None,
            ext: Mapping[str, str] | None = None) -> RemotingCommand:
    """A response as a 5.x server writes it: JSON header, JAVA, the server's own version."""
    return RemotingCommand(code=int(code), opaque=request.opaque, flag=FLAG_RESPONSE,
                           language="JAVA", version=BROKER_VERSION, remark=remark,
                           ext_fields=dict(ext or {}), body=body)


def not_supported(request: RemotingCommand) -> RemotingCommand:
    return respond(request, ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
                   remark=f" request type {request.code} not supported")


def _int(ext: Mapping[str, str], key: str, default: int = 0) -> int:
    try:
        return int(ext.get(key, default))
    except (TypeError, ValueError):
        return default


def _bool(ext: Mapping[str, str], key: str, default: bool = False) -> bool:
    value = ext.get(key)
    return default if value is None else value.lower() == "true"


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _log_handler_failure(cmd: RemotingCommand, exc: Exception) -> None:
    # One line per failed request (a peer can send many); the traceback only at debug level.
    log.warning("handler for code %s failed: %s: %s", cmd.code, type(exc).__name__, _one_line(str(exc)))
    log.debug("handler traceback", exc_info=exc)


class ServerConnection:
    """One accepted connection; also a broker :class:`~.groups.Channel` for TCP clients."""

    def __init__(self, server: RemotingServer, reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter, channel_id: int) -> None:
        self.server = server
        self.reader = reader
        self.writer = writer
        self.channel_id = channel_id
        peer = writer.get_extra_info("peername")
        self.remote_addr = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        self._pending: dict[int, asyncio.Future[RemotingCommand]] = {}
        self._opaque = itertools.count(1)
        self._tasks: set[asyncio.Task[None]] = set()
        self.closed = False

    def __hash__(self) -> int:
        return self.channel_id

    def __eq__(self, other: object) -> bool:
        return self is other

    @property
    def write_buffered(self) -> int:
        """Reply bytes queued in the transport, not yet taken by the peer."""
        return self.writer.transport.get_write_buffer_size()

    async def run(self) -> None:
        limits = self.server.limits
        self.writer.transport.set_write_buffer_limits(high=limits.write_buffer_bytes)
        try:
            async for cmd in read_commands(self.reader, max_frame_length=limits.max_frame_bytes,
                                           idle_timeout=limits.idle_timeout):
                self._dispatch(cmd)
                if self.write_buffered > limits.write_buffer_bytes:
                    # Backpressure: read no more requests until the peer takes our replies.
                    async with asyncio.timeout(limits.idle_timeout):
                        await self.writer.drain()
        except errors.ProtocolError as exc:
            # ``NettyDecoder``: a frame that does not decode closes this channel, nothing else.
            log.warning("%s: closing %s after a bad frame: %s", self.server.name, self.remote_addr,
                        _one_line(str(exc)))
        except errors.TimeoutError:
            log.debug("%s: closing %s, idle for %gs", self.server.name, self.remote_addr, limits.idle_timeout)
        except TimeoutError:
            log.debug("%s: closing %s, it has not read its replies for %gs", self.server.name,
                      self.remote_addr, limits.idle_timeout)
        except (ConnectionError, OSError, asyncio.IncompleteReadError):
            pass
        except Exception as exc:  # never a traceback per connection
            log.warning("%s: closing %s: %s: %s", self.server.name, self.remote_addr, type(exc).__name__,
                        _one_line(str(exc)))
        finally:
            self.close()

    def _dispatch(self, cmd: RemotingCommand) -> None:
        if cmd.is_response:
            future = self._pending.pop(cmd.opaque, None)
            if future is not None and not future.done():
                future.set_result(cmd)
            return
        try:
            result = self.server.handle(cmd, self)
        except Exception as exc:  # a handler bug answers SYSTEM_ERROR, like the Java catch-all
            _log_handler_failure(cmd, exc)
            result = respond(cmd, ResponseCode.SYSTEM_ERROR, remark=f"{type(exc).__name__}: {exc}")
        if result is None or isinstance(result, RemotingCommand):
            self._reply(cmd, result)
            return
        task = asyncio.ensure_future(self._await_reply(cmd, result))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _await_reply(self, cmd: RemotingCommand, pending: Awaitable[RemotingCommand | None]) -> None:
        try:
            result = await pending
        except Exception as exc:
            _log_handler_failure(cmd, exc)
            result = respond(cmd, ResponseCode.SYSTEM_ERROR, remark=f"{type(exc).__name__}: {exc}")
        self._reply(cmd, result)

    def _reply(self, cmd: RemotingCommand, result: RemotingCommand | None) -> None:
        if result is None or cmd.is_oneway:
            return
        self.send(result)

    def send(self, cmd: RemotingCommand) -> None:
        if self.closed:
            return
        try:
            self.writer.write(frame.encode(cmd))
        except (OSError, RuntimeError):
            self.close()

    # -- Channel protocol (broker -> client) -------------------------------------------------

    def notify_consumer_ids_changed(self, group: str) -> None:
        self.send(RemotingCommand(code=RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, opaque=next(self._opaque),
                                  flag=FLAG_ONEWAY, language="JAVA", version=BROKER_VERSION,
                                  ext_fields={"consumerGroup": group}))

    async def invoke(self, request: RemotingCommand, timeout: float) -> RemotingCommand:
        if self.closed:
            raise errors.ConnectionLost(f"channel {self.remote_addr} is closed")
        opaque = next(self._opaque) & 0x7FFFFFFF
        future: asyncio.Future[RemotingCommand] = asyncio.get_running_loop().create_future()
        self._pending[opaque] = future
        self.send(RemotingCommand(code=request.code, opaque=opaque, flag=0, language="JAVA",
                                  version=BROKER_VERSION, ext_fields=dict(request.ext_fields),
                                  body=request.body))
        try:
            return await asyncio.wait_for(future, timeout)
        finally:
            self._pending.pop(opaque, None)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        for future in self._pending.values():
            if not future.done():
                future.set_exception(errors.ConnectionLost(f"channel {self.remote_addr} closed"))
        self._pending.clear()
        for task in list(self._tasks):
            task.cancel()  # e.g. long-polling pulls that will never be answered now
        try:
            self.writer.close()
        except (OSError, RuntimeError):
            pass
        self.server.connection_closed(self)


class RemotingServer:
    """A listening socket whose requests go to ``handlers[code]``."""

    def __init__(self, name: str, handlers: Mapping[int, Handler], *, sync: Callable[[], None] | None = None,
                 on_close: Callable[[ServerConnection], None] | None = None,
                 limits: ServerLimits | None = None) -> None:
        self.name = name
        self.limits = limits or ServerLimits()
        self.refused = 0
        self.handlers = dict(handlers)
        self.sync = sync
        self.on_close = on_close
        self.connections: set[ServerConnection] = set()
        self._server: asyncio.base_events.Server | None = None
        self._ids = itertools.count(1)
        self.port = 0
        self.host = ""

    async def start(self, host: str, port: int) -> None:
        try:
            self._server = await asyncio.start_server(self._accept, host, port, reuse_address=True)
        except OSError as exc:
            reason = "address already in use" if exc.errno == errno.EADDRINUSE else (exc.strerror or str(exc))
            raise errors.UsageError(
                f"cannot listen on {host}:{port} for the {self.name}: {reason}",
                hint="pick another port, or 0 for a free one",
            ) from exc
        sockname = self._server.sockets[0].getsockname()
        self.host, self.port = sockname[0], sockname[1]

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if len(self.connections) >= self.limits.max_connections:
            self.refused += 1
            log.warning("%s: refusing a connection from %s: %d connections open (the cap)", self.name,
                        writer.get_extra_info("peername"), len(self.connections))
            writer.close()
            return
        sock = writer.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
        conn = ServerConnection(self, reader, writer, next(self._ids))
        self.connections.add(conn)
        await conn.run()

    def handle(self, cmd: RemotingCommand, conn: ServerConnection) -> Result:
        if self.sync is not None:
            self.sync()
        handler = self.handlers.get(cmd.code)
        if handler is None:
            return not_supported(cmd)
        result = handler(cmd, conn)
        if self.sync is not None:
            # Run what the request made due right now (e.g. a send waking long-polling pulls)
            # instead of waiting for the clock driver's next tick.
            self.sync()
        return result

    def connection_closed(self, conn: ServerConnection) -> None:
        self.connections.discard(conn)
        if self.on_close is not None:
            self.on_close(conn)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for conn in list(self.connections):
            conn.close()
        if self._server is not None:
            with contextlib.suppress(TimeoutError, OSError):
                await asyncio.wait_for(self._server.wait_closed(), 2.0)
            self._server = None


# ---------------------------------------------------------------------------------------------
# Name server


def namesrv_handlers(cluster: EmulatedCluster) -> dict[int, Handler]:
    ns = cluster.namesrv

    def cluster_info(cmd: RemotingCommand, conn: ServerConnection) -> RemotingCommand:
        return respond(cmd, ResponseCode.SUCCESS, body=wire.cluster_info(ns.cluster_info()))

    def route(cmd: RemotingCommand, conn: ServerConnection) -> RemotingCommand:
        topic = cmd.ext_fields.get("topic", "")
        data = ns.route(topic)
        if data is None:
            return respond(cmd, ResponseCode.TOPIC_NOT_EXIST,
                           remark=f"No topic route info in name server for the topic: {topic}")
        # ``ClientRequestProcessor``: V4_9_4+ clients (or acceptStandardJsonOnly) get standard JSON.
        standard = cmd.version >= 401 or _bool(cmd.ext_fields, "acceptStandardJsonOnly")
        return respond(cmd, ResponseCode.SUCCESS, body=wire.topic_route(data, standard=standard))

    def all_topics(cmd: RemotingCommand, conn: ServerConnection) -> RemotingCommand:
        return respond(cmd, ResponseCode.SUCCESS, body=wire.topic_list(ns.all_topics()))

    def topics_by_cluster(cmd: RemotingCommand, conn: ServerConnection) -> RemotingCommand:
        topics = ns.topics_of_cluster(cmd.ext_fields.get("cluster", ""))
        return respond(cmd, ResponseCode.SUCCESS, body=wire.topic_list(topics or []))

    def system_topics(cmd: RemotingCommand, conn: ServerConnection) -> RemotingCommand:
        first = next(iter(sorted(cluster.brokers.values(), key=lambda b: b.name)), None)
        return respond(cmd, ResponseCode.SUCCESS,
                       body=wire.topic_list(ns.system_topics(), first.addr if first else None))

    def kv_list(cmd: RemotingCommand, conn: ServerConnection) -> RemotingCommand:
        namespace = cmd.ext_fields.get("namespace", "")
        table = ns.kv.get(namespace)
        if not table:
            return respond(cmd, ResponseCode.QUERY_NOT_FOUND, remark=f"No config item, Namespace: {namespace}")
        return respond(cmd, ResponseCode.SUCCESS, body=wire.kv_table(table))

    def kv_config(cmd: RemotingCommand, conn: ServerConnection) -> RemotingCommand:
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
    }


# ---------------------------------------------------------------------------------------------
# Broker


def encode_message(
    message: StoredMessage, store_host: tuple[str, int], born_host: tuple[str, int] = ("10.0.255.1", 0)
) -> bytes:
    """A message in the commit-log layout a pull response carries (``MessageDecoder`` v1)."""
    props = {}
    if message.tag:
        props["TAGS"] = message.tag
    if message.keys:
        props["KEYS"] = message.keys
    props["UNIQ_KEY"] = message.msg_id
    props["WAIT"] = "true"
    if message.origin_topic:
        props["RETRY_TOPIC"] = message.origin_topic  # the client restores the original topic
    properties = "".join(f"{k}\x01{v}\x02" for k, v in props.items()).encode("utf-8")
    topic = message.topic.encode("utf-8")
    body = message.body

    def host(addr: tuple[str, int]) -> bytes:
        try:
            ip = socket.inet_aton(addr[0])
        except OSError:
            ip = b"\x7f\x00\x00\x01"
        return ip + struct.pack(">i", addr[1])

    physical = message.seq * 256
    fixed = struct.pack(
        ">iiiiqqiq", MESSAGE_MAGIC_CODE, zlib.crc32(body) & 0x7FFFFFFF, message.queue_id, 0,
        message.queue_offset, physical, 0, message.born_timestamp,
    ) + host(born_host) + struct.pack(">q", message.store_timestamp) + host(store_host) + struct.pack(
        ">iq", message.reconsume_times, 0)
    rest = (struct.pack(">i", len(body)) + body + struct.pack(">b", len(topic)) + topic
            + struct.pack(">h", len(properties)) + properties)
    total = 4 + len(fixed) + len(rest)
    return struct.pack(">i", total) + fixed + rest


def _parse_properties(text: str) -> dict[str, str]:
    out = {}
    for item in text.split("\x02"):
        if "\x01" in item:
            key, _, value = item.partition("\x01")
            out[key] = value
    return out


class BrokerService:
    """Request handlers of one broker, over its :class:`~.broker.BrokerState`."""

    def __init__(self, cluster: EmulatedCluster, broker: BrokerState) -> None:
        self.cluster = cluster
        self.broker = broker

    def handlers(self) -> dict[int, Handler]:
        return {
            RequestCode.HEART_BEAT: self.heartbeat,
            RequestCode.UNREGISTER_CLIENT: self.unregister_client,
            RequestCode.GET_CONSUMER_LIST_BY_GROUP: self.consumer_list,
            RequestCode.QUERY_CONSUMER_OFFSET: self.query_offset,
            RequestCode.UPDATE_CONSUMER_OFFSET: self.update_offset,
            RequestCode.GET_MAX_OFFSET: self.max_offset,
            RequestCode.GET_MIN_OFFSET: self.min_offset,
            RequestCode.GET_EARLIEST_MSG_STORETIME: self.earliest_time,
            RequestCode.SEARCH_OFFSET_BY_TIMESTAMP: self.search_offset,
            RequestCode.GET_TOPIC_STATS_INFO: self.topic_stats,
            RequestCode.GET_CONSUMER_CONNECTION_LIST: self.consumer_connection,
            RequestCode.GET_CONSUME_STATS: self.consume_stats,
            RequestCode.GET_CONSUMER_RUNNING_INFO: self.running_info,
            RequestCode.QUERY_TOPIC_CONSUME_BY_WHO: self.topic_consumers,
            RequestCode.QUERY_TOPICS_BY_CONSUMER: self.topics_by_consumer,
            RequestCode.QUERY_SUBSCRIPTION_BY_CONSUMER: self.subscription_by_consumer,
            RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG: self.all_group_configs,
            RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG: self.group_config,
            RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: self.update_group_config,
            RequestCode.GET_BROKER_RUNTIME_INFO: self.runtime_info,
            RequestCode.GET_BROKER_CONFIG: self.broker_config,
            RequestCode.GET_ALL_TOPIC_CONFIG: self.all_topic_configs,
            RequestCode.GET_TOPIC_CONFIG: self.topic_config,
            RequestCode.UPDATE_AND_CREATE_TOPIC: self.create_topic,
            RequestCode.GET_ALL_CONSUMER_OFFSET: self.all_offsets,
            RequestCode.GET_PRODUCER_CONNECTION_LIST: self.producer_connection,
            RequestCode.SEND_MESSAGE: self.send_message,
            RequestCode.SEND_MESSAGE_V2: self.send_message,
            RequestCode.PULL_MESSAGE: self.pull_message,
        }

    # -- clients -------------------------------------------------------------------------------

    def heartbeat(self, cmd: RemotingCommand, conn: ServerConnection) -> RemotingCommand:
        data = wire.heartbeat_data(cmd.body)
        self.broker.heartbeat(conn, data, cmd.language, cmd.version)
        return respond(cmd, ResponseCode.SUCCESS,
                       ext={"IS_SUPPORT_HEART_BEAT_V2": "true", "IS_SUB_CHANGE": "true"})

    def unregister_client(self, cmd: RemotingCommand, conn: ServerConnection) -> RemotingCommand:
        ext = cmd.ext_fields
        self.broker.unregister_client(conn, ext.get("clientID", ""), ext.get("consumerGroup"),
                                      ext.get("producerGroup"))
        return respond(cmd, ResponseCode.SUCCESS)

    def consumer_list(self, cmd: RemotingCommand, conn: ServerConnection) -> RemotingCommand:
        group = cmd.ext_fields.get("consumerGroup", "")
        ids = self.broker.consumer_ids(group)
        if ids is None:
            return respond(cmd, ResponseCode.SYSTEM_ERROR, remark=f"no consumer for this group, {group}")
        return respond(cmd, ResponseCode.SUCCESS, body=wire.consumer_id_list(ids))

    # -- offsets -------------------------------------------------------------------------------

    def query_offset(self, cmd: RemotingCommand, conn: ServerConnection) -> RemotingCommand:
        ext = cmd.ext_fields
        offset = self.broker.query_consumer_offset(
            ext.get("consumerGroup", ""), ext.get("topic", ""), _int(ext, "queueId"),
            _bool(ext, "setZeroIfNotFound", True))
        if offset is None:
            return respond(cmd, ResponseCode.QUERY_NOT_FOUND,
                           remark="Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first")
        return respond(cmd, ResponseCode.SUCCESS, ext={"offset": str(offset)})

    def update_offset(self, cmd: RemotingCommand, conn: ServerConnection) -> RemotingCommand:
        ext = cmd.ext_fields
        self.broker.commit_offset(ext.get("consumerGroup", ""), ext.get("topic", ""),
                                  _int(ext, "queueId"), _int(ext, "commitOffset"))
        return respond(cmd, ResponseCode.SUCCESS)

    def max_offset(self, cmd: RemotingCommand, conn: ServerConnection) -> RemotingCommand:
        ext = cmd.ext_fields
        return respond(cmd, ResponseCode.SUCCESS,
                       ext={"offset": str(self.broker.max_offset(ext.get("topic", ""), _int(ext, "queueId")))})

    def min_offset(self, cmd: RemotingCommand, conn: ServerConnection) -> RemotingCommand:
        return respond(cmd, ResponseCode.SUCCESS, ext={"offset": "0"})

    def earliest_time(self, cmd: RemotingCommand, conn: ServerConnection) -> RemotingCommand:
        ext = cmd.ext_fields
        ts = self.broker.store_timestamp(ext.get("topic", ""), _int(ext, "queueId"), 0)
        return respond(cmd, ResponseCode.SUCCESS, ext={"timestamp": str(ts)})

    def search_offset(self, cmd: RemotingCommand, conn: ServerConnection) -> RemotingCommand:
        ext = cmd.ext_fields
        offset = self.broker.search_offset(ext.get("topic", ""), _int(ext, "queueId"), _int(ext, "timestamp"))
        return respond(cmd, ResponseCode.SUCCESS, ext={"offset": str(offset)})

    def all_offsets(self, cmd: RemotingCommand, conn: ServerConnection) -> RemotingCommand:
        version = (len(self.broker.offsets), self.cluster.now_ms)
        return respond(cmd, ResponseCode.SUCCESS, body=wire.consumer_offsets(self.broker.offsets, version))

    # -- admin views ---------------------------------------------------------------------------

    def topic_stats(self, cmd: RemotingCommand, conn: ServerConnection) -> RemotingCommand:
        topic = cmd.ext_fields.get("topic", "")
        rows = self.broker.topic_stats(topic)
        if rows is None:
            return respond(cmd, ResponseCode.TOPIC_NOT_EXIST, remark=f"topic[{topic}] not exist")
        return respond(cmd, ResponseCode.SUCCESS,
                       body=wire.topic_stats(rows, self.broker.topic_put_tps(topic)))

    def consumer_connection(self, cmd: RemotingCommand, conn: ServerConnection) -> RemotingCommand:
        group = cmd.ext_fields.get("consumerGroup", "")
        info = self.broker.consumer_table.get(group)
        if info is None:
            return respond(cmd, ResponseCode.CONSUMER_NOT_ONLINE,
                           remark=f"the consumer group[{group}] not online")
        return respond(cmd, ResponseCode.SUCCESS, body=wire.consumer_connection(info))

    def consume_stats(self, cmd: RemotingCommand, conn: ServerConnection) -> RemotingCommand:
        ext = cmd.ext_fields
        group = ext.get("consumerGroup", "")
        topic_list = [t for t in (ext.get("topicList") or "").split(";") if t]
        rows, tps = self.broker.consume_stats(group, ext.get("topic") or None, topic_list=topic_list or None)
        return respond(cmd, ResponseCode.SUCCESS, body=wire.consume_stats(rows, tps))

    def running_info(self, cmd: RemotingCommand, conn: ServerConnection) -> Result:
        """``AdminBrokerProcessor.getConsumerRunningInfo`` → ``callConsumer``: relay to the client."""
        ext = cmd.ext_fields
        group, client_id = ext.get("consumerGroup", ""), ext.get("clientId", "")
        info = self.broker.find_channel(group, client_id)
        if info is None:
            return respond(cmd, ResponseCode.SYSTEM_ERROR,
                           remark=f"The Consumer <{group}> <{client_id}> not online")
        if info.version < MIN_RUNNING_INFO_VERSION:
            return respond(cmd, ResponseCode.SYSTEM_ERROR,
                           remark=f"The Consumer <{group}> Version <{version_desc(info.version)}> too low "
                                  "to finish, please upgrade it to V3_1_8_SNAPSHOT")
        relayed = RemotingCommand(code=RequestCode.GET_CONSUMER_RUNNING_INFO, language="JAVA",
                                  version=BROKER_VERSION, ext_fields=dict(ext), body=cmd.body)
        channel = info.channel
        if isinstance(channel, InProcessChannel):
            answer = channel.client.handle_server_request(relayed)
            return respond(cmd, answer.code, body=answer.body, remark=answer.remark)
        return self._relay(cmd, info, relayed)

    async def _relay(self, cmd: RemotingCommand, info: ClientChannelInfo, relayed: RemotingCommand) -> RemotingCommand:
        group, client_id = cmd.ext_fields.get("consumerGroup", ""), cmd.ext_fields.get("clientId", "")
        try:
            answer = await info.channel.invoke(relayed, RELAY_TIMEOUT_S)
        except TimeoutError:
            return respond(cmd, ResponseCode.CONSUME_MSG_TIMEOUT,
                           remark=f"consumer <{group}> <{client_id}> Timeout: {int(RELAY_TIMEOUT_S * 1000)}ms")
        except errors.RmqctlError as exc:
            return respond(cmd, ResponseCode.SYSTEM_ERROR,
                           remark=f"invoke consumer <{group}> <{client_id}> Exception: {exc}")
        return respond(cmd, answer.code, body=answer.body, remark=answer.remark)

    def topic_consumers(self, cmd: RemotingCommand, conn: ServerConnection) -> RemotingCommand:
        topic = cmd.ext_fields.get("topic", "")
        return respond(cmd, ResponseCode.SUCCESS, body=wire.group_list(self.broker.groups_of_topic(topic)))

    def topics_by_consumer(self, cmd: RemotingCommand, conn: ServerConnection) -> RemotingCommand:
        group = cmd.ext_fields.get("group", "")
        return respond(cmd, ResponseCode.SUCCESS,
                       body=wire.topic_list(self.broker.topics_of_group(group), self.broker.addr))

    def subscription_by_consumer(self, cmd: RemotingCommand, conn: ServerConnection) -> RemotingCommand:
        group, topic = cmd.ext_fields.get("group", ""), cmd.ext_fields.get("topic", "")
        info = self.broker.consumer_table.get(group)
        sub = info.subscriptions.get(topic) if info else None
        return respond(cmd, ResponseCode.SUCCESS, body=wire.query_subscription(group, topic, sub))

    def all_group_configs(self, cmd: RemotingCommand, conn: ServerConnection) -> RemotingCommand:
        version = (self.broker.group_version[0], self.broker.group_version[1])
        return respond(cmd, ResponseCode.SUCCESS,
                       body=wire.subscription_group_wrapper(self.broker.group_configs, version))

    def group_config(self, cmd: RemotingCommand, conn: ServerConnection) -> RemotingCommand:
        group = cmd.ext_fields.get("group", "")
        config = self.broker.find_group_config(group)  # auto-creates, like the real broker
        if config is None:
            return respond(cmd, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                           remark=f"The consumer group {group} not exist")
        return respond(cmd, ResponseCode.SUCCESS, body=wire.subscription_group_config(config).encode())

    def update_group_config(self, cmd: RemotingCommand, conn: ServerConnection) -> RemotingCommand:
        try:
            data = fastjson.loads(cmd.body)
        except errors.ProtocolError as exc:
            return respond(cmd, ResponseCode.SYSTEM_ERROR, remark=str(exc))
        if not isinstance(data, dict) or not data.get("groupName"):
            return respond(cmd, ResponseCode.SYSTEM_ERROR, remark="groupName is required")

        def flag(key: str, default: bool) -> bool:
            value = data.get(key, default)
            return value if isinstance(value, bool) else str(value).lower() == "true"

        self.broker.set_group_config(SubscriptionGroupConfig(
            str(data["groupName"]), consume_enable=flag("consumeEnable", True),
            consume_broadcast_enable=flag("consumeBroadcastEnable", True),
            consume_message_orderly=flag("consumeMessageOrderly", False),
            retry_queue_nums=int(data.get("retryQueueNums", 1)),
            retry_max_times=int(data.get("retryMaxTimes", 16)),
            broker_id=int(data.get("brokerId", 0)),
            notify_consumer_ids_changed_enable=flag("notifyConsumerIdsChangedEnable", True),
        ))
        return respond(cmd, ResponseCode.SUCCESS)

    def runtime_info(self, cmd: RemotingCommand, conn: ServerConnection) -> RemotingCommand:
        return respond(cmd, ResponseCode.SUCCESS, body=wire.kv_table(self.broker.runtime_info()))

    def broker_config(self, cmd: RemotingCommand, conn: ServerConnection) -> RemotingCommand:
        b = self.broker
        values = {
            "brokerClusterName": b.cluster, "brokerName": b.name, "brokerId": str(b.broker_id),
            "brokerIP1": b.addr.rsplit(":", 1)[0], "listenPort": b.addr.rsplit(":", 1)[1],
            "namesrvAddr": self.cluster.namesrv_addr, "autoCreateTopicEnable": "true",
            "autoCreateSubscriptionGroup": "true", "brokerRole": "ASYNC_MASTER",
            "defaultTopicQueueNums": "4", "longPollingEnable": "true",
            "notifyConsumerIdsChangedEnable": "true", "channelExpiredTimeout": "120000",
        }
        version = f'{{"counter":{b.topic_version[0]},"stateVersion":0,"timestamp":{b.topic_version[1]}}}'
        return respond(cmd, ResponseCode.SUCCESS, body=wire.broker_config_properties(values),
                       ext={"version": version})

    def all_topic_configs(self, cmd: RemotingCommand, conn: ServerConnection) -> RemotingCommand:
        version = (self.broker.topic_version[0], self.broker.topic_version[1])
        return respond(cmd, ResponseCode.SUCCESS, body=wire.topic_config_wrapper(self.broker.topics, version))

    def topic_config(self, cmd: RemotingCommand, conn: ServerConnection) -> RemotingCommand:
        topic = cmd.ext_fields.get("topic", "")
        config = self.broker.topics.get(topic)
        if config is None:
            return respond(cmd, ResponseCode.TOPIC_NOT_EXIST, remark=f"No topic in this broker. topic: {topic}")
        return respond(cmd, ResponseCode.SUCCESS, body=wire.topic_config(config).encode())

    def create_topic(self, cmd: RemotingCommand, conn: ServerConnection) -> RemotingCommand:
        ext = cmd.ext_fields
        topic = ext.get("topic", "")
        if not topic or topic.startswith("%") or len(topic) > 127:
            return respond(cmd, ResponseCode.INVALID_PARAMETER, remark=f"The specified topic {topic} is invalid")
        self.broker.create_topic(topic, _int(ext, "readQueueNums", 8), _int(ext, "writeQueueNums", 8),
                                 _int(ext, "perm", 6), order=_bool(ext, "order"),
                                 topic_sys_flag=_int(ext, "topicSysFlag"))
        return respond(cmd, ResponseCode.SUCCESS)

    def producer_connection(self, cmd: RemotingCommand, conn: ServerConnection) -> RemotingCommand:
        group = cmd.ext_fields.get("producerGroup", "")
        table = self.broker.producers.get(group)
        if not table:
            return respond(cmd, ResponseCode.SYSTEM_ERROR, remark=f"the producer group[{group}] not exist")
        return respond(cmd, ResponseCode.SUCCESS, body=wire.producer_connection(
            (i.client_id, ch.remote_addr, i.language, i.version) for ch, i in table.items()))

    # -- messages ------------------------------------------------------------------------------

    def send_message(self, cmd: RemotingCommand, conn: ServerConnection) -> RemotingCommand:
        ext = cmd.ext_fields
        if cmd.code == RequestCode.SEND_MESSAGE_V2:
            ext = {_V2_HEADER.get(k, k): v for k, v in ext.items()}
        topic = ext.get("topic", "")
        if topic not in self.broker.topics:
            # autoCreateTopicEnable: the default topic's settings, capped by the request.
            count = min(_int(ext, "defaultTopicQueueNums", 4) or 4, 8)
            self.broker.create_topic(topic, count, count)
        config = self.broker.topics[topic]
        if not config.writable:
            return respond(cmd, ResponseCode.NO_PERMISSION,
                           remark=f"the topic[{topic}] sending message is forbidden")
        queue_id = _int(ext, "queueId")
        if not 0 <= queue_id < config.write_queue_nums:
            return respond(cmd, ResponseCode.SYSTEM_ERROR,
                           remark=f"request queueId[{queue_id}] is illegal, {topic}")
        props = _parse_properties(ext.get("properties", ""))
        seq = self.cluster.next_seq()
        msg_id = props.get("UNIQ_KEY") or f"7F000001{seq:024X}"
        message = self.broker.put_message(topic, queue_id, props.get("TAGS"), seq=seq, msg_id=msg_id,
                                          born_ms=_int(ext, "bornTimestamp") or None, body=cmd.body,
                                          keys=props.get("KEYS"), producer=ext.get("producerGroup", ""))
        self.cluster.record_send(message)
        return respond(cmd, ResponseCode.SUCCESS, ext={
            "msgId": f"7F000001{seq:024X}", "queueId": str(queue_id),
            "queueOffset": str(message.queue_offset), "MSG_REGION": "DefaultRegion", "TRACE_ON": "true",
        })

    def pull_message(self, cmd: RemotingCommand, conn: ServerConnection) -> Awaitable[RemotingCommand]:
        ext = cmd.ext_fields
        header = PullRequestHeader(
            consumer_group=ext.get("consumerGroup", ""), topic=ext.get("topic", ""),
            queue_id=_int(ext, "queueId"), queue_offset=_int(ext, "queueOffset"),
            sys_flag=_int(ext, "sysFlag"), sub_version=_int(ext, "subVersion"),
            max_msg_nums=_int(ext, "maxMsgNums", 32), commit_offset=_int(ext, "commitOffset"),
            suspend_timeout_ms=_int(ext, "suspendTimeoutMillis", 15_000),
            subscription=ext.get("subscription"), expression_type=ext.get("expressionType") or "TAG",
        )
        loop = asyncio.get_running_loop()
        future: asyncio.Future[RemotingCommand] = loop.create_future()
        host, _, port = self.broker.addr.rpartition(":")
        store_host = (host, int(port or 0))

        def done(result: PullResult) -> None:
            if future.done():
                return
            body = b"".join(encode_message(m, store_host) for m in result.messages)
            future.set_result(respond(cmd, result.code, body=body, remark=result.remark, ext={
                "suggestWhichBrokerId": "0", "nextBeginOffset": str(result.next_begin_offset),
                "minOffset": str(result.min_offset), "maxOffset": str(result.max_offset),
                "topicSysFlag": "0", "groupSysFlag": "0",
            }))

        self.broker.pull(conn, header, done)
        return future


# ---------------------------------------------------------------------------------------------
# The whole emulator on sockets


class EmulatorServer:
    """The name server and every broker of an :class:`EmulatedCluster` on TCP ports."""

    def __init__(self, cluster: EmulatedCluster, *, host: str = "127.0.0.1", namesrv_port: int = 0,
                 broker_ports: Mapping[str, int] | None = None, advertise: str | None = None,
                 sync: Callable[[], None] | None = None, limits: ServerLimits | None = None) -> None:
        self.cluster = cluster
        self.host = host
        self.namesrv_port = namesrv_port
        self.broker_ports = dict(broker_ports or {})
        self.advertise = advertise or (host if host not in ("0.0.0.0", "::", "") else "127.0.0.1")
        self.sync = sync
        self.limits = limits or ServerLimits()
        self.namesrv = RemotingServer("name server", namesrv_handlers(cluster), sync=sync, limits=self.limits)
        self.brokers: dict[str, RemotingServer] = {}
        for name, broker in cluster.brokers.items():
            service = BrokerService(cluster, broker)
            self.brokers[name] = RemotingServer(f"broker {name}", service.handlers(), sync=sync,
                                                on_close=broker.channel_closed, limits=self.limits)

    @property
    def namesrv_addr(self) -> str:
        return f"{self.advertise}:{self.namesrv.port}"

    def broker_addrs(self) -> dict[str, str]:
        return {name: b.addr for name, b in sorted(self.cluster.brokers.items())}

    async def start(self) -> None:
        try:
            await self.namesrv.start(self.host, self.namesrv_port)
            for name, server in self.brokers.items():
                await server.start(self.host, self.broker_ports.get(name, 0))
                self.cluster.brokers[name].addr = f"{self.advertise}:{server.port}"
        except BaseException:
            await self.stop()
            raise
        self.cluster.namesrv_addr = self.namesrv_addr
        self.cluster.namesrv.invalidate()  # routes carry the broker addresses just bound

    async def stop(self) -> None:
        await asyncio.gather(self.namesrv.stop(), *(b.stop() for b in self.brokers.values()),
                             return_exceptions=True)

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


