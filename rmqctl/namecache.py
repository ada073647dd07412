"""The names cache: consumer group and topic names seen on each cluster, for shell completion.

Ordinary commands refresh it as a side effect: ``group list`` and ``topic list`` replace a
cluster's list, a group view adds its group and topics, a topic's route adds the topic (only user
topics are kept, not retry, DLQ or system topics). The completion scripts read the files
directly, in the shell, so a TAB never runs Python and never touches the network.

Layout, under ``$XDG_CACHE_HOME/rmqctl/names/`` (default ``~/.cache/rmqctl/names/``): one file
per cluster key and kind, ``<key>.groups`` and ``<key>.topics``. The key names what the command
read, with the precedence :class:`rmqctl.connect.Target` uses: ``emulator:<scenario>``, else
``namesrv:<-n value>``, else ``context:<--context>``, else ``namesrv:$NAMESRV_ADDR``, else
``context:<current-context>``; in the file name every character outside ``[A-Za-z0-9._-]``
becomes ``_``. A file is the line :data:`HEADER`, then one name per line, sorted. The scripts
ignore a file whose first line is not the header and every line that is not a valid RocketMQ
name, so a corrupt cache completes nothing. Files are replaced atomically (write, then rename);
failing to write never fails the command.

Must not import the CLI, textual or pyspark; at module level only the standard library
(``rmqctl.config`` and ``rmqctl.model`` are imported where needed).
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterable, Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
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
    from rmqctl.source import ClusterSource, Partial

#: First line of every cache file; a file without it is ignored.
HEADER = "# rmqctl names v1"
#: The characters RocketMQ accepts in topic and group names (its ``TopicValidator`` rule).
NAME_PATTERN = r"^[%|a-zA-Z0-9_-]+$"
GROUPS = "groups"
TOPICS = "topics"
_NAME = re.compile(NAME_PATTERN)
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CACHE_HOME/rmqctl/names`` (default ``~/.cache/rmqctl/names``)."""
    env = os.environ if env is None else env
    base = env.get("XDG_CACHE_HOME") or str(Path(env.get("HOME") or Path.home()) / ".cache")
    return Path(base) / "rmqctl" / "names"


def cache_key(
    *,
    namesrv: str | None,
    context: str | None,
    emulator: str | os.PathLike[str] | None,
    env_namesrv: str | None,
    current_context: str | None,
) -> str | None:
    """The cluster key for what one invocation reads, or ``None`` when it names no cluster."""
    if emulator is not None:
        return f"emulator:{emulator}"
    if namesrv:
        return f"namesrv:{namesrv}"
    if context:
        return f"context:{context}"
    if env_namesrv:
        return f"namesrv:{env_namesrv}"
    if current_context:
        return f"context:{current_context}"
    return None


def key_for(*, namesrv: str | None, context: str | None, emulator: str | os.PathLike[str] | None) -> str | None:
    """:func:`cache_key` with ``NAMESRV_ADDR`` and the config file's current context filled in."""
    current = None
    if emulator is None and not namesrv and not context and not os.environ.get("NAMESRV_ADDR"):
        from rmqctl.config import Config
        from rmqctl.errors import RmqctlError

        try:
            current = Config.load().current_context
        except RmqctlError:
            return None
    return cache_key(namesrv=namesrv, context=context, emulator=emulator,
                     env_namesrv=os.environ.get("NAMESRV_ADDR"), current_context=current)


def cache_file(key: str, kind: str, directory: Path | None = None) -> Path:
    """The file holding ``kind`` (``groups`` or ``topics``) names for cluster ``key``."""
    return (directory or cache_dir()) / f"{_UNSAFE.sub('_', key)}.{kind}"


def read_names(key: str, kind: str, directory: Path | None = None) -> list[str]:
    """The cached names, as the completion scripts read them: nothing when missing or corrupt."""
    try:
        lines = cache_file(key, kind, directory).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return []
    if not lines or lines[0] != HEADER:
        return []
    return [line for line in lines[1:] if _NAME.match(line)]


def write_names(key: str, kind: str, names: Iterable[str], *, merge: bool = False,
                directory: Path | None = None) -> None:
    """Store ``names`` for cluster ``key`` (added to what is there with ``merge``); never raises."""
    wanted = {n for n in names if _NAME.match(n)}
    current = read_names(key, kind, directory)
    if merge:
        wanted |= set(current)
    if sorted(wanted) == current and cache_file(key, kind, directory).exists():
        return
    path = cache_file(key, kind, directory)
    text = "\n".join([HEADER, *sorted(wanted)]) + "\n"
    try:
        import tempfile  # only when the names changed, which most commands do not see

        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(text)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError:
        pass  # a read-only or full cache directory costs completions, never the command


class RecordingSource:
    """A :class:`~rmqctl.source.ClusterSource` that notes the group and topic names it returns."""

    def __init__(self, inner: ClusterSource, key: str, directory: Path | None = None) -> None:
        self.inner = inner
        self.key = key
        self.directory = directory
        self._cluster: ClusterInfo | None = None

    @property
    def clock(self) -> Clock:
        return self.inner.clock

    def _note(self, kind: str, names: Iterable[str], *, merge: bool) -> None:
        write_names(self.key, kind, names, merge=merge, directory=self.directory)

    def _user_topics(self, names: Iterable[str]) -> list[str]:
        """Only user topics: retry, DLQ and system topics, cluster and broker names are noise at TAB."""
        from rmqctl.model import topic_kind

        return [n for n in names if topic_kind(n, self._cluster) == "normal"]

    async def cluster(self) -> ClusterInfo:
        self._cluster = await self.inner.cluster()
        return self._cluster

    def sharing(self) -> AbstractContextManager[None]:
        return self.inner.sharing()

    async def broker_runtimes(self, info: ClusterInfo | None = None) -> Partial[list[BrokerRuntime]]:
        return await self.inner.broker_runtimes(info)

    async def topics(self) -> list[str]:
        topics = await self.inner.topics()
        self._note(TOPICS, self._user_topics(topics), merge=False)
        return topics

    async def topic_types(self) -> Partial[dict[str, str]]:
        return await self.inner.topic_types()

    async def topic_route(self, topic: str) -> TopicRoute:
        route = await self.inner.topic_route(topic)
        self._note(TOPICS, self._user_topics([topic]), merge=True)
        return route

    async def topic_status(self, topic: str) -> Partial[TopicStats]:
        return await self.inner.topic_status(topic)

    async def groups(self, *, include_system: bool = False) -> Partial[list[str]]:
        result = await self.inner.groups(include_system=include_system)
        self._note(GROUPS, result.value, merge=bool(result.errors))
        return result

    async def group_summaries(self, *, include_system: bool = False) -> Partial[list[GroupSummary]]:
        result = await self.inner.group_summaries(include_system=include_system)
        self._note(GROUPS, [s.group for s in result.value], merge=bool(result.errors))
        return result

    async def group_view(self, group: str, *, running_info: bool = True, serial: bool = False) -> GroupView:
        view = await self.inner.group_view(group, running_info=running_info, serial=serial)
        if view.connections or view.progress or view.broker_subscriptions:
            self._note(GROUPS, [view.group], merge=True)
        if view.topic_queues:
            self._note(TOPICS, self._user_topics(view.topic_queues), merge=True)
        return view

    async def sample_messages(self, view: GroupView, topics: Iterable[str], *,
                              per_queue: int | None = None) -> GroupView:
        return await self.inner.sample_messages(view, topics, per_queue=per_queue)

    async def find_messages(self, ref: MessageRef) -> Partial[list[Message]]:
        return await self.inner.find_messages(ref)

    async def browse(self, topic: str, *, queue: MessageQueue | None = None, from_offset: int | None = None,
                     since_ms: int | None = None, limit: int = 32) -> Partial[list[Message]]:
        return await self.inner.browse(topic, queue=queue, from_offset=from_offset, since_ms=since_ms, limit=limit)

    async def topic_groups(self, topic: str) -> Partial[list[str]]:
        return await self.inner.topic_groups(topic)

    async def message_traces(self, message: Message) -> Partial[list[TraceEvent]]:
        return await self.inner.message_traces(message)

    async def message_copies(self, group: str, message: Message) -> Partial[list[Message]]:
        return await self.inner.message_copies(group, message)

    async def oldest_unconsumed(self, view: GroupView, *, concurrency: int = 16) -> dict[MessageQueue, int]:
        return await self.inner.oldest_unconsumed(view, concurrency=concurrency)

    async def close(self) -> None:
        await self.inner.close()
