"""The requests that change a cluster (offsets, groups, topics, messages sent back), and the reads
a reset is planned with.

:class:`OffsetWrites` sends, over an :class:`~rmqctl.remoting.admin.AdminClient`, what
``mqadmin``'s offset commands send: INVOKE_BROKER_TO_RESET_OFFSET (222: by time for a whole topic,
or on 5.x one queue to an offset, which the broker applies itself when ``useServerSideResetOffset``
is on and otherwise hands to the online clients with RESET_CONSUMER_CLIENT_OFFSET, 220) and
UPDATE_CONSUMER_OFFSET (15: the broker's offset table, which a live client overwrites with its
next commit), DELETE_SUBSCRIPTIONGROUP (207), DELETE_TOPIC_IN_BROKER (215) and
DELETE_TOPIC_IN_NAMESRV (216), SEND_MESSAGE (10: a dead letter sent back to its group), plus
GET_MIN_OFFSET (31), SEARCH_OFFSET_BY_TIMESTAMP (29) and GET_BROKER_CONFIG (26).

Only :mod:`rmqctl.actions` imports this module (an import-linter contract): every write is a plan
first, confirmed, verified and audited there. Must not import anything above the remoting layer.
"""

from __future__ import annotations

from collections.abc import Mapping

from rmqctl import errors
from rmqctl.model import MessageQueue
from rmqctl.remoting import bodies
from rmqctl.remoting.admin import AdminClient
from rmqctl.remoting.codes import RequestCode
from rmqctl.remoting.frame import RemotingCommand
from rmqctl.remoting.messages import encode_properties


def _offset(response: RemotingCommand, what: str, address: str) -> int:
    try:
        return int(response.ext_fields.get("offset", ""))
    except ValueError as exc:
        raise errors.ProtocolError(f"{what} answered no offset from {address}") from exc


class OffsetWrites:
    """Offset reads and writes against the brokers of one cluster, through ``admin``."""

    def __init__(self, admin: AdminClient) -> None:
        self.admin = admin

    # -- reads a plan needs -------------------------------------------------------------------

    async def min_offset(self, address: str, topic: str, queue_id: int) -> int:
        """GET_MIN_OFFSET (31): the oldest offset still stored in one queue."""
        response = await self.admin.call(address, RequestCode.GET_MIN_OFFSET, {"topic": topic, "queueId": queue_id})
        return _offset(response, "GET_MIN_OFFSET", address)

    async def max_offset(self, address: str, topic: str, queue_id: int) -> int:
        """GET_MAX_OFFSET (30): the next offset to be written in one queue."""
        return await self.admin.max_offset(address, topic, queue_id)

    async def search_offset(self, address: str, topic: str, queue_id: int, timestamp_ms: int) -> int:
        """SEARCH_OFFSET_BY_TIMESTAMP (29): the first offset stored at or after ``timestamp_ms``
        (the broker's lower boundary; the max offset when every message is older)."""
        response = await self.admin.call(
            address, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP,
            {"topic": topic, "queueId": queue_id, "timestamp": timestamp_ms, "boundaryType": "lower"})
        return _offset(response, "SEARCH_OFFSET_BY_TIMESTAMP", address)

    async def committed_offset(self, address: str, group: str, topic: str, queue_id: int) -> int | None:
        """QUERY_CONSUMER_OFFSET (14): the committed offset, ``None`` when nothing was committed."""
        return await self.admin.query_consumer_offset(address, group, topic, queue_id)

    async def broker_config(self, address: str) -> dict[str, str]:
        """GET_BROKER_CONFIG (26): the broker's configuration as ``key → value`` text."""
        return await self.admin.fetch(address, RequestCode.GET_BROKER_CONFIG, None,
                                      lambda r: bodies.broker_config(r.body))

    # -- writes -------------------------------------------------------------------------------

    async def reset_queue(self, address: str, group: str, topic: str, queue_id: int,
                          offset: int) -> dict[MessageQueue, int]:
        """INVOKE_BROKER_TO_RESET_OFFSET (222) for one queue to ``offset`` (``queueId`` and
        ``offset`` are 5.x header fields: a broker with ``useServerSideResetOffset`` assigns it
        and answers the queues it reset; it refuses an offset outside ``[min, max]``)."""
        return await self.admin.fetch(
            address, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
            {"topic": topic, "group": group, "queueId": queue_id, "offset": offset, "timestamp": 0,
             "isForce": True},
            lambda r: bodies.reset_offset_body(r.body))

    async def reset_by_time(self, address: str, group: str, topic: str,
                            timestamp_ms: int) -> dict[MessageQueue, int]:
        """INVOKE_BROKER_TO_RESET_OFFSET (222) for every queue of ``topic`` on one broker, by time
        (``-1``: the max offset), forced. Without server-side reset the broker sends each online
        client RESET_CONSUMER_CLIENT_OFFSET (220) and answers CONSUMER_NOT_ONLINE (206) when
        there is none."""
        return await self.admin.fetch(
            address, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
            {"topic": topic, "group": group, "timestamp": timestamp_ms, "isForce": True},
            lambda r: bodies.reset_offset_body(r.body))

    async def update_offset(self, address: str, group: str, topic: str, queue_id: int, offset: int) -> None:
        """UPDATE_CONSUMER_OFFSET (15): write the broker's offset table for one queue."""
        await self.admin.call(address, RequestCode.UPDATE_CONSUMER_OFFSET,
                              {"consumerGroup": group, "topic": topic, "queueId": queue_id, "commitOffset": offset})

    async def delete_group(self, address: str, group: str, *, clean_offset: bool) -> None:
        """DELETE_SUBSCRIPTIONGROUP (207): drop the group's config on one broker, and its committed
        offsets with ``clean_offset``."""
        await self.admin.call(address, RequestCode.DELETE_SUBSCRIPTIONGROUP,
                              {"groupName": group, "cleanOffset": clean_offset})

    async def delete_topic_in_broker(self, address: str, topic: str) -> None:
        """DELETE_TOPIC_IN_BROKER (215): drop a topic's config and queues on one broker."""
        await self.admin.call(address, RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": topic})

    async def delete_topic_in_namesrv(self, topic: str) -> None:
        """DELETE_TOPIC_IN_NAMESRV (216) on every name server, as mqadmin does."""
        for address in self.admin.namesrv:
            await self.admin.call(address, RequestCode.DELETE_TOPIC_IN_NAMESRV, {"topic": topic})

    async def send_message(self, address: str, topic: str, queue_id: int, body: bytes,
                           properties: Mapping[str, str], *, producer_group: str,
                           born_ms: int) -> tuple[str, int]:
        """SEND_MESSAGE (10) of one message to one queue; the broker's message id and queue offset."""
        response = await self.admin.call(address, RequestCode.SEND_MESSAGE, {
            "producerGroup": producer_group, "topic": topic, "defaultTopic": "TBW102",
            "defaultTopicQueueNums": 4, "queueId": queue_id, "sysFlag": 0, "bornTimestamp": born_ms,
            "flag": 0, "properties": encode_properties(properties), "reconsumeTimes": 0, "unitMode": False,
            "batch": False,
        }, body=body)
        try:
            return response.ext_fields.get("msgId", ""), int(response.ext_fields.get("queueOffset", ""))
        except ValueError as exc:
            raise errors.ProtocolError(f"SEND_MESSAGE answered no queue offset from {address}") from exc
