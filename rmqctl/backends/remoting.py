"""The remoting back end: the read protocol over RocketMQ's native protocol.

One :class:`RemotingBackend` wraps one :class:`~rmqctl.remoting.admin.AdminClient` (name servers
tried in turn, pooled broker connections, ACL signing, one deadline per request). It reads a real
cluster and the emulator alike — embedded or served, the emulator speaks the same protocol — and
supplies every read of :class:`~rmqctl.backends.Backend` except the back end's own group list.

Must not import the CLI, the TUI, the emulator or pyspark.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

from rmqctl import errors
from rmqctl.backends import Capabilities
from rmqctl.model import (
    ClusterInfo,
    ConsumerConnection,
    ConsumerRunningInfo,
    ConsumeStats,
    GroupSummary,
    Message,
    SampledMessage,
    SubscriptionGroupConfig,
    TopicRoute,
    TopicStats,
)
from rmqctl.remoting.admin import AdminClient

#: a broker answers every read of the protocol, except a list of groups with their numbers
REMOTING = Capabilities(lists_group_topics=True, reads_offset_table=True, broker_consume_stats=True,
                        lists_every_topic=True, batches_connections=True)


class RemotingBackend:
    """Reads over the native protocol, through one admin client."""

    def __init__(self, admin: AdminClient) -> None:
        self.admin = admin

    @property
    def capabilities(self) -> Capabilities:
        return REMOTING

    async def close(self) -> None:
        await self.admin.close()

    async def cluster_info(self) -> ClusterInfo:
        return await self.admin.cluster_info()

    async def broker_runtime(self, address: str) -> dict[str, str]:
        return await self.admin.broker_runtime_info(address)

    async def topic_list(self) -> list[str]:
        return await self.admin.topic_list()

    async def topic_route(self, topic: str) -> TopicRoute:
        return await self.admin.topic_route(topic)

    async def topic_stats(self, address: str, topic: str) -> TopicStats:
        return await self.admin.topic_stats(address, topic)

    async def topic_message_types(self, address: str) -> Mapping[str, str]:
        configs = await self.admin.topic_configs(address)
        return {name: (config.message_type or "NORMAL").upper() for name, config in configs.items()}

    async def consumer_connection(self, address: str, group: str) -> ConsumerConnection:
        return await self.admin.consumer_connection(address, group)

    async def consumer_connections(
        self, address: str, groups: Sequence[str]
    ) -> Sequence[ConsumerConnection | errors.RmqctlError]:
        return await self.admin.consumer_connections(address, groups)

    async def consume_stats(self, address: str, group: str) -> ConsumeStats:
        return await self.admin.consume_stats(address, group)

    async def broker_consume_stats(self, address: str) -> Mapping[str, ConsumeStats]:
        # The broker's answer (GET_BROKER_CONSUME_STATS) covers the groups of its
        # subscription-group table, and rows up to each topic's *write* queue count where
        # GET_CONSUME_STATS has rows up to the *read* count: a group with a topic whose two
        # counts differ is left out, and read one by one like a group without a config.
        table, counts = await asyncio.gather(self.admin.broker_consume_stats(address),
                                             self.admin.topic_queue_counts(address))
        uneven = {name for name, (reads, writes) in counts.items() if reads != writes}
        if not uneven:
            return table
        if any(counts[name][1] == 0 for name in uneven):
            return {}  # such a topic has no row to tell its groups by: every group is read alone
        return {group: stats for group, stats in table.items()
                if not any(mq.topic in uneven for mq in stats.offsets)}

    async def consumer_running_info(self, address: str, group: str, client_id: str) -> ConsumerRunningInfo:
        return await self.admin.consumer_running_info(address, group, client_id)

    async def subscription_group(self, address: str, group: str) -> SubscriptionGroupConfig | None:
        # the broker's read of one group's config (352) creates the config when it has none
        # (5.3.3's findSubscriptionGroupConfig): its whole table is asked for instead
        return (await self.admin.subscription_groups(address)).get(group)

    async def subscription_groups(self, address: str) -> dict[str, SubscriptionGroupConfig]:
        return await self.admin.subscription_groups(address)

    async def group_summaries(
        self, *, include_system: bool
    ) -> tuple[list[GroupSummary], dict[str, errors.RmqctlError]]:
        raise errors.UsageError("a broker keeps no list of groups with their numbers")

    async def query_consumer_offset(self, address: str, group: str, topic: str, queue_id: int) -> int | None:
        return await self.admin.query_consumer_offset(address, group, topic, queue_id)

    async def topics_by_consumer(self, address: str, group: str) -> list[str]:
        return await self.admin.topics_by_consumer(address, group)

    async def offset_topics(self, address: str) -> Mapping[str, frozenset[str]]:
        by_group: dict[str, set[str]] = {}
        for topic, group in await self.admin.consumer_offsets(address):
            by_group.setdefault(group, set()).add(topic)
        return {group: frozenset(topics) for group, topics in by_group.items()}

    async def pull_by_offset(
        self, address: str, broker_name: str, topic: str, queue_id: int, offset: int, max_nums: int = 32
    ) -> list[SampledMessage]:
        return await self.admin.pull_by_offset(address, broker_name, topic, queue_id, offset, max_nums)

    async def pull_messages(
        self, address: str, broker_name: str, topic: str, queue_id: int, offset: int, max_nums: int = 32
    ) -> list[Message]:
        return await self.admin.pull_messages(address, broker_name, topic, queue_id, offset, max_nums)

    async def view_message(self, address: str, broker_name: str, physical_offset: int,
                           topic: str | None = None) -> Message | None:
        return await self.admin.view_message(address, broker_name, physical_offset, topic)

    async def query_messages(self, address: str, broker_name: str, topic: str, key: str, *,
                             unique_key: bool = False) -> list[Message]:
        return await self.admin.query_messages(address, broker_name, topic, key, unique_key=unique_key)

    async def topic_consumers(self, address: str, topic: str) -> list[str]:
        return await self.admin.topic_consumers(address, topic)

    async def search_offset(self, address: str, topic: str, queue_id: int, timestamp_ms: int) -> int:
        return await self.admin.search_offset(address, topic, queue_id, timestamp_ms)
