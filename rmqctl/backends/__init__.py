"""The narrow read protocol every back end implements: what one broker (or a dashboard in front
of the brokers) can answer, one read at a time, with the broker named by its address.

A back end is a transport in httpx's sense: it turns one read into requests and the replies into
model objects, and nothing more. Group views, cluster-wide lists, fan-out over brokers, partial
results, not-found rules and the clock live once above it, in :mod:`rmqctl.service`. Each back end
declares in :class:`Capabilities` what it cannot supply; the service marks that data unavailable
(the doctor lists the checks that need it as skipped) and never calls a read a back end declares
it lacks. Nothing is probed with ``getattr``.

Implementations: :class:`rmqctl.backends.remoting.RemotingBackend` (the native protocol: a real
cluster or the emulator, embedded or served) and :class:`rmqctl.backends.dashboard.DashboardBackend`
(rocketmq-dashboard over HTTP). A 5.x proxy back end implements the same protocol.

Imports only the model and errors: never the CLI, the TUI, the emulator or pyspark.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import field
from typing import Protocol

from rmqctl import errors
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
from rmqctl.records import dataclass

__all__ = ["Backend", "Capabilities"]


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What a back end can supply, declared once; the service reads nothing else to decide."""

    #: :class:`~rmqctl.model.GroupView` fields this back end never fills, each with why (they go
    #: into ``GroupView.unavailable``, so renderers say "unavailable" and the doctor skips)
    unavailable: Mapping[str, str] = field(default_factory=dict)
    #: why, when the back end reads the connections of one broker only whatever address it is
    #: given; with several brokers the per-broker subscriptions and duplicate ids are unavailable
    connections_of_one_broker: str | None = None
    #: ``group_summaries`` answers the group list itself (else the service lists the groups from
    #: retry topics and every broker's ``subscription_groups`` and summarises each)
    lists_groups: bool = False
    #: ``subscription_groups(address)`` lists every group configured on a broker
    lists_subscription_groups: bool = True
    #: ``query_consumer_offset``: rows consume stats leave out are filled from the offset table
    queue_offsets: bool = True
    #: ``topics_by_consumer``: the topics a group has offsets for, so a group's summary can tell
    #: when consume stats left a topic out
    lists_group_topics: bool = False
    #: ``offset_topics``: the same for every group of a broker in one read of its offset table
    #: (a group list then asks one request per broker, not one per group and broker)
    reads_offset_table: bool = False
    #: ``topic_list`` is the name servers' own list, the table routes are read from: a topic it
    #: does not name has no route (views of many groups then ask one list for their dead-letter
    #: topics instead of one route each)
    lists_every_topic: bool = False
    #: ``broker_consume_stats``: many groups' consume stats in one read per broker (a group list
    #: then asks the others, groups the answer leaves out, one by one)
    broker_consume_stats: bool = False
    #: ``consumer_connections``: many groups' connections on one broker in one pipelined batch
    #: (a group list then asks them without a task per request)
    batches_connections: bool = False
    #: ``pull_by_offset``: recent messages are read back (read-only) to count real tags
    message_reads: bool = True
    #: why, when the back end cannot look one message up by its id or a key (``view_message``,
    #: ``query_messages``); ``None`` when it can
    message_lookups_unavailable: str | None = None
    #: why, when a look-up by a producer's id (``query_messages(unique_key=True)``) answers one
    #: message where the broker's index holds several (a message's retry copies share its id)
    one_copy_per_unique_key: str | None = None
    #: ``consumer_connection`` also answers for a 5.x proxy's remoting address (the service
    #: then adds the clients proxies list, gRPC ones included, to each group view)
    reads_proxies: bool = True
    #: the group's config is read for every group view (its retry policy and maximum of
    #: deliveries): each broker's ``subscription_groups`` when it lists them, else
    #: ``subscription_group``; a back end that answers it only at a cost too high says no
    reads_group_config: bool = True
    #: ``topic_message_types``: each topic's message type as a broker's topic configs declare it
    #: (one read per broker), so ``topic list`` types topics by more than their names
    reads_topic_configs: bool = True
    #: errors that end the whole command rather than one broker's read (a dashboard's failed
    #: re-login): the service's fan-out re-raises them
    fatal: tuple[type[errors.RmqctlError], ...] = ()


class Backend(Protocol):
    """The reads one back end answers. ``address`` is a broker address from :meth:`cluster_info`.

    Raise :class:`~rmqctl.errors.TopicNotExist` for a topic without a route and
    :class:`~rmqctl.errors.ConsumerNotOnline` when a broker holds no channel of the group; any other
    failure of one read is a :class:`~rmqctl.errors.RmqctlError` the service keeps per broker.
    """

    @property
    def capabilities(self) -> Capabilities: ...

    async def close(self) -> None: ...

    # -- the cluster --------------------------------------------------------------------------

    async def cluster_info(self) -> ClusterInfo: ...

    async def broker_runtime(self, address: str) -> dict[str, str]: ...

    async def topic_list(self) -> list[str]: ...

    async def topic_route(self, topic: str) -> TopicRoute: ...

    async def topic_stats(self, address: str, topic: str) -> TopicStats: ...

    async def topic_message_types(self, address: str) -> Mapping[str, str]:
        """Every topic one broker keeps a config of, with the message type the config declares
        (its ``message.type`` attribute, upper case: ``NORMAL``, ``FIFO``, ``DELAY``,
        ``TRANSACTION``, 5.5's ``LITE`` and ``PRIORITY``; ``NORMAL`` when it names none, as the
        broker reads such a config) (only when ``reads_topic_configs``)."""
        ...

    # -- consumer groups ----------------------------------------------------------------------

    async def consumer_connection(self, address: str, group: str) -> ConsumerConnection: ...

    async def consumer_connections(
        self, address: str, groups: Sequence[str]
    ) -> Sequence[ConsumerConnection | errors.RmqctlError]:
        """:meth:`consumer_connection` of each of ``groups`` on one broker, in order: its answer or
        the error it raised, never raising itself (only when ``batches_connections``)."""
        ...

    async def consume_stats(self, address: str, group: str) -> ConsumeStats: ...

    async def broker_consume_stats(self, address: str) -> Mapping[str, ConsumeStats]:
        """The consume stats of many groups on one broker, by group, each exactly what
        :meth:`consume_stats` answers for it but for ``pull_offset``, which is ``None`` (only
        when ``broker_consume_stats``). A group left out is read with :meth:`consume_stats`."""
        ...

    async def consumer_running_info(self, address: str, group: str, client_id: str) -> ConsumerRunningInfo:
        """What ``client_id`` reports about itself, relayed by the broker at ``address``."""
        ...

    async def subscription_group(self, address: str, group: str) -> SubscriptionGroupConfig | None:
        """The group's stored config on one broker, ``None`` when it has none."""
        ...

    async def subscription_groups(self, address: str) -> dict[str, SubscriptionGroupConfig]:
        """Every group configured on one broker (only when ``lists_subscription_groups``)."""
        ...

    async def group_summaries(
        self, *, include_system: bool
    ) -> tuple[list[GroupSummary], dict[str, errors.RmqctlError]]:
        """The back end's own group list, with per-source errors (only when ``lists_groups``)."""
        ...

    # -- per queue ----------------------------------------------------------------------------

    async def query_consumer_offset(self, address: str, group: str, topic: str, queue_id: int) -> int | None:
        """The committed offset in the broker's offset table (only when ``queue_offsets``)."""
        ...

    async def topics_by_consumer(self, address: str, group: str) -> list[str]:
        """The topics ``group`` has committed offsets for on one broker (only when
        ``lists_group_topics``)."""
        ...

    async def offset_topics(self, address: str) -> Mapping[str, frozenset[str]]:
        """Every group with committed offsets on one broker, with the topics it has them for
        (only when ``reads_offset_table``)."""
        ...

    async def pull_by_offset(
        self, address: str, broker_name: str, topic: str, queue_id: int, offset: int, max_nums: int = 32
    ) -> list[SampledMessage]:
        """Messages from ``offset`` on, read without committing (only when ``message_reads``)."""
        ...

    async def search_offset(self, address: str, topic: str, queue_id: int, timestamp_ms: int) -> int:
        """The first offset of one queue stored at or after ``timestamp_ms`` (only when
        ``message_reads``)."""
        ...

    async def pull_messages(
        self, address: str, broker_name: str, topic: str, queue_id: int, offset: int, max_nums: int = 32
    ) -> list[Message]:
        """Like :meth:`pull_by_offset`, each message whole (only when ``message_reads``)."""
        ...

    # -- one message --------------------------------------------------------------------------

    async def topic_consumers(self, address: str, topic: str) -> list[str]:
        """The groups one broker knows to consume ``topic`` (online subscribers and groups with
        offsets on it; unless ``message_lookups_unavailable``)."""
        ...

    async def view_message(self, address: str, broker_name: str, physical_offset: int,
                           topic: str | None = None) -> Message | None:
        """The message at one commit-log offset of one broker, ``None`` when there is none
        (unless ``message_lookups_unavailable``)."""
        ...

    async def query_messages(self, address: str, broker_name: str, topic: str, key: str, *,
                             unique_key: bool = False) -> list[Message]:
        """Messages of ``topic`` on one broker found through its index by a key, or by a unique
        key (unless ``message_lookups_unavailable``)."""
        ...
