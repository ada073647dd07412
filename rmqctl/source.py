"""The read API every front end uses: the :class:`ClusterSource` protocol and what opens one.

A source answers with model objects only. Operations that span brokers return their data plus
a per-broker error mapping (:class:`~rmqctl.service.Partial`), so a dead broker never hides the
others' rows and never vanishes silently. The one implementation is
:class:`~rmqctl.service.ClusterService` over a back end (:mod:`rmqctl.backends`); tests fake
this protocol, and the names cache wraps it. Every source carries its clock: the time its views
are stamped with and the time a watcher waits on.

Must not import the CLI, the TUI or pyspark.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import AbstractContextManager
from typing import Any, Protocol, runtime_checkable

from rmqctl.clock import Clock
from rmqctl.model import (
    BrokerRuntime,
    ClusterInfo,
    GroupSummary,
    GroupView,
    Message,
    MessageQueue,
    MessageRef,
    TopicRoute,
    TopicStats,
    TraceEvent,
)
from rmqctl.records import dataclass
from rmqctl.service import Partial

__all__ = ["ClusterSource", "Opened", "Partial"]


@runtime_checkable
class ClusterSource(Protocol):
    """What the CLI, doctor and TUI may ask of a cluster."""

    @property
    def clock(self) -> Clock:
        """The source's clock: every "now" a view is stamped with or a watcher waits on."""
        ...

    async def cluster(self) -> ClusterInfo: ...

    def sharing(self) -> AbstractContextManager[None]:
        """A scope in which reads many views repeat (the cluster and its masters) are made once
        and shared: one round over many groups."""
        ...

    async def broker_runtimes(
        self, info: ClusterInfo | None = None
    ) -> Partial[list[BrokerRuntime]]: ...

    async def topics(self) -> list[str]: ...

    async def topic_types(self) -> Partial[dict[str, str]]:
        """Each topic's message type as the brokers declare it (``NORMAL``, ``FIFO``, ``LITE`` …);
        what could not be read is named in ``unavailable`` (see ``ClusterService.topic_types``)."""
        ...

    async def topic_route(self, topic: str) -> TopicRoute: ...

    async def topic_status(self, topic: str) -> Partial[TopicStats]: ...

    async def groups(self, *, include_system: bool = False) -> Partial[list[str]]: ...

    async def group_summaries(
        self, *, include_system: bool = False
    ) -> Partial[list[GroupSummary]]: ...

    async def group_view(self, group: str, *, running_info: bool = True, serial: bool = False) -> GroupView:
        """Everything about ``group``. ``serial``: its brokers read one after another, for a
        caller that reads many views at once."""
        ...

    async def sample_messages(self, view: GroupView, topics: Iterable[str], *,
                              per_queue: int | None = None) -> GroupView:
        """``view`` with the recent messages of ``topics`` read back by offset (read-only), for
        counting what each tag went through; unchanged when the back end cannot read messages.
        ``per_queue``: how many of the newest messages of each queue (default: one pull's 32)."""
        ...

    async def find_messages(self, ref: MessageRef) -> Partial[list[Message]]:
        """The messages ``ref`` names (by id, key or position), oldest first; NotFound when none."""
        ...

    async def browse(self, topic: str, *, queue: MessageQueue | None = None, from_offset: int | None = None,
                     since_ms: int | None = None, limit: int = 32) -> Partial[list[Message]]:
        """Messages of ``topic`` read back without committing (see ``ClusterService.browse``)."""
        ...

    async def topic_groups(self, topic: str) -> Partial[list[str]]:
        """The consumer groups that subscribe ``topic`` or have offsets on it."""
        ...

    async def message_traces(self, message: Message) -> Partial[list[TraceEvent]]:
        """The consume records message tracing wrote for ``message`` (empty without tracing)."""
        ...

    async def message_copies(self, group: str, message: Message) -> Partial[list[Message]]:
        """The retry and dead-letter copies of ``message`` that ``group`` sent back."""
        ...

    async def oldest_unconsumed(self, view: GroupView, *, concurrency: int = 16) -> dict[MessageQueue, int]:
        """Store time (epoch ms) of the oldest unconsumed message of every queue with a backlog
        whose message could be read back; the others are absent (unknown, never 0)."""
        ...

    async def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class Opened:
    """An open source and what goes with it (see :func:`rmqctl.connect.open_source`)."""

    source: ClusterSource
    #: one line naming what is read, for status lines (``namesrv h1:9876``)
    label: str
    #: the source's clock (the wall clock, or an emulator's)
    clock: Clock
    #: the emulated cluster (an ``EmulatedCluster``) when the source is the embedded emulator
    cluster: Any = None
