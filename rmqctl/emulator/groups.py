"""One emulated broker's consumer groups, heartbeats and subscription tables: the incident rules; no I/O.

The classic consumer-group incidents come from these rules, mirrored from the Java broker (class
names are the Java ones):

- ``ConsumerManager`` / ``ConsumerGroupInfo``: one consumer table per group, channels keyed by
  connection (so one client id can be registered twice), and ONE subscription table per group,
  shared by all its clients and overwritten by every heartbeat with the exact
  ``updateSubscription`` rules:

  * a topic the table does not have is added;
  * an existing topic is replaced only by a strictly greater subVersion (a client that
    re-subscribes later wins; its expression, so its tags, becomes the whole group's);
  * topics absent from THIS client's heartbeat are removed for the whole group;
  * group-level settings (consume type, message model, consume-from-where) are simply
    overwritten by the last heartbeat.

  Consumers are told the ids changed (NOTIFY_CONSUMER_IDS_CHANGED, from
  ``DefaultConsumerIdsChangeListener``) only when a channel was added or removed or a topic was
  added or removed — never for a replaced expression — and never for BROADCASTING groups (5.x).
  The table lives only as long as the group has a channel.
- ``ClientManageProcessor.heartBeat``: the group config is auto-created
  (``SubscriptionGroupManager.findSubscriptionGroupConfig``) and ``%RETRY%group`` is created with
  the group's ``retryQueueNums`` queues; ``unregisterClient`` notifies even when nothing was removed.
- ``ClientHousekeepingService``: channels silent for ``channelExpiredTimeout`` are dropped
  without notifying anyone.

Server-to-client traffic (NOTIFY_CONSUMER_IDS_CHANGED, the GET_CONSUMER_RUNNING_INFO relay) goes
through the :class:`Channel` protocol, implemented in-process by simulated clients and over TCP by
the server.

Must not import the CLI, textual or pyspark, nor anything that does I/O; knows nothing of pulls.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Protocol

from rmqctl.emulator.clock import Scheduler
from rmqctl.emulator.store import MessageStore
from rmqctl.model import BROKER_BUILTIN_GROUPS, RETRY_PREFIX, Subscription, SubscriptionGroupConfig
from rmqctl.remoting.bodies import ConsumerData, HeartbeatData
from rmqctl.remoting.frame import RemotingCommand

#: ``BrokerConfig.channelExpiredTimeout``
CHANNEL_EXPIRED_MS = 120_000

#: called with (group, table or None) whenever a group's stored subscription table changes
SubscriptionListener = Callable[[str, dict[str, Subscription] | None], None]


class Channel(Protocol):
    """A client connection as the broker sees it (a Netty ``Channel``)."""

    @property
    def channel_id(self) -> int: ...

    @property
    def remote_addr(self) -> str: ...

    def notify_consumer_ids_changed(self, group: str) -> None:
        """Oneway NOTIFY_CONSUMER_IDS_CHANGED (code 40)."""

    async def invoke(self, request: RemotingCommand, timeout: float) -> RemotingCommand:
        """Send a request to the client and wait for its answer (the 307 relay)."""
        ...


@dataclass(slots=True)
class ClientChannelInfo:
    channel: Channel
    client_id: str
    language: str
    version: int
    last_update_ms: int


class ConsumerGroupInfo:
    """``ConsumerGroupInfo``: a group's live channels and its one stored subscription table."""

    __slots__ = (
        "channels",
        "consume_from_where",
        "consume_type",
        "last_update_ms",
        "message_model",
        "name",
        "subscriptions",
    )

    def __init__(self, name: str, consume_type: str, message_model: str, consume_from_where: str) -> None:
        self.name = name
        self.channels: dict[Channel, ClientChannelInfo] = {}
        self.subscriptions: dict[str, Subscription] = {}
        self.consume_type = consume_type
        self.message_model = message_model
        self.consume_from_where = consume_from_where
        self.last_update_ms = 0

    def update_channel(self, info: ClientChannelInfo, consume_type: str, message_model: str,
                       consume_from_where: str, now_ms: int) -> bool:
        # Group-level settings are overwritten by every heartbeat: the last writer wins.
        self.consume_type = consume_type
        self.message_model = message_model
        self.consume_from_where = consume_from_where
        old = self.channels.get(info.channel)
        updated = False
        if old is None:
            self.channels[info.channel] = info
            old = info
            updated = True
        elif old.client_id != info.client_id:
            # Same connection, another client id: replaced, but Java does not count it as a change.
            self.channels[info.channel] = info
            old = info
        self.last_update_ms = now_ms
        old.last_update_ms = now_ms
        return updated

    def update_subscription(self, subs: Iterable[Subscription], now_ms: int) -> bool:
        """The exact ``updateSubscription`` rules; True only when a topic was added or removed."""
        updated = False
        topics: set[str] = set()
        table = self.subscriptions
        for sub in subs:
            old = table.get(sub.topic)
            if old is None:
                table[sub.topic] = sub
                updated = True
            elif sub.sub_version > old.sub_version:
                # Replacing the expression of a known topic is NOT an update: nobody is notified.
                table[sub.topic] = sub
            topics.add(sub.topic)
        for topic in [t for t in table if t not in topics]:
            # Topics missing from THIS client's heartbeat are dropped for the whole group.
            del table[topic]
            updated = True
        self.last_update_ms = now_ms
        return updated

    def unregister_channel(self, channel: Channel) -> bool:
        return self.channels.pop(channel, None) is not None

    def client_ids(self) -> list[str]:
        """``getAllClientId``: one id per channel, duplicates included."""
        return [info.client_id for info in self.channels.values()]

    def find_channel(self, client_id: str) -> ClientChannelInfo | None:
        for info in self.channels.values():
            if info.client_id == client_id:
                return info
        return None


class ConsumerGroups:
    """The consumer and producer tables, group configs and heartbeat rules of one broker."""

    def __init__(self, scheduler: Scheduler, store: MessageStore) -> None:
        self.scheduler = scheduler
        self.store = store
        self.consumer_table: dict[str, ConsumerGroupInfo] = {}
        self.group_configs: dict[str, SubscriptionGroupConfig] = {}
        self.group_version = [0, scheduler.now_ms]
        self.auto_create_subscription_group = True
        self.producers: dict[str, dict[Channel, ClientChannelInfo]] = {}
        #: online subscribers per topic (``QUERY_TOPIC_CONSUME_BY_WHO``'s first half)
        self.topic_groups: dict[str, set[str]] = {}
        self.on_subscription_change: SubscriptionListener | None = None
        for group in BROKER_BUILTIN_GROUPS:
            self.group_configs[group] = SubscriptionGroupConfig(group)

    def find_group_config(self, group: str) -> SubscriptionGroupConfig | None:
        config = self.group_configs.get(group)
        if config is None and self.auto_create_subscription_group:
            # ``SubscriptionGroupManager.findSubscriptionGroupConfig`` auto-creates on lookup.
            config = SubscriptionGroupConfig(group)
            self.group_configs[group] = config
            self._bump_group_version()
        return config

    def delete_group_config(self, group: str) -> None:
        """``deleteSubscriptionGroupConfig``: gone until a lookup creates it again."""
        if self.group_configs.pop(group, None) is not None:
            self._bump_group_version()

    def set_group_config(self, config: SubscriptionGroupConfig) -> None:
        self.group_configs[config.group_name] = config
        self._bump_group_version()

    def _bump_group_version(self) -> None:
        self.group_version[0] += 1
        self.group_version[1] = self.scheduler.now_ms

    def heartbeat(self, channel: Channel, data: HeartbeatData, language: str, version: int) -> None:
        """``ClientManageProcessor.heartBeat`` (v1 heartbeats: every one carries subscriptions)."""
        now = self.scheduler.now_ms
        for consumer in data.consumers:
            config = self.find_group_config(consumer.group)
            if config is None:
                continue
            retry = RETRY_PREFIX + consumer.group
            if retry not in self.store.topics:
                self.store.create_topic(retry, config.retry_queue_nums, config.retry_queue_nums)
            info = ClientChannelInfo(channel, data.client_id, language, version, now)
            self.register_consumer(consumer, info, config.notify_consumer_ids_changed_enable)
        for group in data.producers:
            table = self.producers.setdefault(group, {})
            existing = table.get(channel)
            if existing is None:
                table[channel] = ClientChannelInfo(channel, data.client_id, language, version, now)
            else:
                existing.last_update_ms = now

    def register_consumer(self, data: ConsumerData, info: ClientChannelInfo, notify_enable: bool) -> bool:
        """``ConsumerManager.registerConsumer``."""
        now = self.scheduler.now_ms
        group = self.consumer_table.get(data.group)
        if group is None:
            group = ConsumerGroupInfo(data.group, data.consume_type, data.message_model,
                                      data.consume_from_where)
            self.consumer_table[data.group] = group
        for sub in data.subscriptions:
            self.topic_groups.setdefault(sub.topic, set()).add(data.group)
        before = dict(group.subscriptions) if self.on_subscription_change else None
        channel_added = group.update_channel(info, data.consume_type, data.message_model,
                                             data.consume_from_where, now)
        topics_changed = group.update_subscription(data.subscriptions, now)
        if before is not None and before != group.subscriptions and self.on_subscription_change:
            self.on_subscription_change(data.group, dict(group.subscriptions))
        if (channel_added or topics_changed) and notify_enable \
                and group.message_model != "BROADCASTING":
            self._notify(group)
        return channel_added or topics_changed

    def _notify(self, group: ConsumerGroupInfo) -> None:
        # ``DefaultConsumerIdsChangeListener`` CHANGE: every channel of the group, at once
        # (``realTimeNotifyConsumerChange`` = true).
        for channel in list(group.channels):
            channel.notify_consumer_ids_changed(group.name)

    def _notify_enabled(self, group: str) -> bool:
        config = self.group_configs.get(group)
        return config.notify_consumer_ids_changed_enable if config else True

    def unregister_client(self, channel: Channel, client_id: str, consumer_group: str | None,
                          producer_group: str | None) -> None:
        """``ClientManageProcessor.unregisterClient`` (code 35)."""
        if producer_group:
            self.producers.get(producer_group, {}).pop(channel, None)
        if consumer_group:
            self.unregister_consumer(consumer_group, channel, self._notify_enabled(consumer_group))

    def unregister_consumer(self, group_name: str, channel: Channel, notify_enable: bool) -> None:
        """``ConsumerManager.unregisterConsumer``: notifies even when nothing was removed."""
        group = self.consumer_table.get(group_name)
        if group is None:
            return
        group.unregister_channel(channel)
        self._drop_if_empty(group)
        if notify_enable and group.message_model != "BROADCASTING":
            self._notify(group)

    def channel_closed(self, channel: Channel) -> None:
        """``ConsumerManager.doChannelCloseEvent`` (and the producer side)."""
        for table in self.producers.values():
            table.pop(channel, None)
        for group in list(self.consumer_table.values()):
            if channel not in group.channels:
                continue
            del group.channels[channel]
            self._drop_if_empty(group)
            if group.message_model != "BROADCASTING":
                self._notify(group)

    def _drop_if_empty(self, group: ConsumerGroupInfo) -> None:
        # The subscription table lives only as long as the group has a channel.
        if group.channels:
            return
        del self.consumer_table[group.name]
        for topic in group.subscriptions:
            groups = self.topic_groups.get(topic)
            if groups is not None:
                groups.discard(group.name)
                if not groups:
                    del self.topic_groups[topic]
        if self.on_subscription_change:
            self.on_subscription_change(group.name, None)

    def expire_channels(self) -> list[str]:
        """``ClientHousekeepingService``: drop channels silent for 120 s (no CHANGE is sent)."""
        now = self.scheduler.now_ms
        expired = []
        for group in list(self.consumer_table.values()):
            for channel, info in list(group.channels.items()):
                if now - info.last_update_ms > CHANNEL_EXPIRED_MS:
                    del group.channels[channel]
                    expired.append(info.client_id)
            self._drop_if_empty(group)
        return expired

    def consumer_ids(self, group: str) -> list[str] | None:
        """GET_CONSUMER_LIST_BY_GROUP (38): None when the group has no channel (SYSTEM_ERROR)."""
        info = self.consumer_table.get(group)
        if info is None or not info.channels:
            return None
        return info.client_ids()

    def find_channel(self, group: str, client_id: str) -> ClientChannelInfo | None:
        info = self.consumer_table.get(group)
        return info.find_channel(client_id) if info else None

    def subscription_snapshot(self) -> dict[str, dict[str, Subscription]]:
        return {name: dict(info.subscriptions) for name, info in self.consumer_table.items()}


def retry_topic(group: str) -> str:
    return RETRY_PREFIX + group


def with_version(sub: Subscription, version: int) -> Subscription:
    return replace(sub, sub_version=version)
