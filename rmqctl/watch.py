"""The watch service: sample consumer groups, poll them repeatedly, and say what changed.

Every front end that looks at a cluster over time stands on this module: ``doctor --interval``
(two samples), ``diagnose`` (many groups at once), the TUI's poll worker, the snapshot exporter
and ``--watch``. A :class:`Watcher` takes one :class:`Sample` per round — a
:class:`~rmqctl.model.GroupView` per group, fetched with bounded concurrency, and the error of
each group that could not be read — and hands out :class:`Round` objects with the previous and
current sample, the :class:`GroupChange` between them (clients that joined or left, queues
whose owner moved) and each group's :class:`~rmqctl.model.ExpressionHistory` (what every earlier
round saw of the broker's expression and the queues' owners, so a message consumed before the
expression changed is judged by what held then). With ``retry_copies``, each round also reads back
the newest copies in every POP group's retry topics (:func:`sample_retry_copies`, at most
:data:`REDELIVERY_SAMPLE` per queue), which REPEATED_REDELIVERY and the snapshots' deliveries column
need. The next round starts only after the previous one finished; time comes from an injected
:class:`Clock`, so the embedded emulator's virtual clock (or a test's fake clock) drives the same
loop as the wall clock.

Imports the model, errors and the source protocol only: never the CLI, textual or pyspark.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import field

from rmqctl import errors
from rmqctl.clock import Clock
from rmqctl.fanout import bounded, fan_out
from rmqctl.model import RETRY_PREFIX, ExpressionHistory, GroupView, MessageQueue, sort_queues
from rmqctl.records import dataclass
from rmqctl.source import ClusterSource

#: groups sampled at the same time by default (each view itself fans out to every broker)
DEFAULT_CONCURRENCY = 8
#: the newest copies of each POP retry queue read back per group and round (one pull)
REDELIVERY_SAMPLE = 32


@dataclass(frozen=True, slots=True)
class Sample:
    """One round's views, by group, and the error of every group that could not be read."""

    taken_at: float
    views: Mapping[str, GroupView]
    errors: Mapping[str, errors.RmqctlError] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class OwnerMove:
    """A queue whose holder changed between two samples (``None`` = held by nobody)."""

    queue: MessageQueue
    before: str | None
    after: str | None


@dataclass(frozen=True, slots=True)
class GroupChange:
    """What changed in one group between two samples."""

    group: str
    joined: tuple[str, ...] = ()
    left: tuple[str, ...] = ()
    moves: tuple[OwnerMove, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.joined or self.left or self.moves)

    def describe(self) -> str:
        """The change in plain words: ``c3 joined, c1 left — 6 queue(s) moved: …``."""
        parts = []
        if self.joined:
            parts.append(", ".join(self.joined) + " joined")
        if self.left:
            parts.append(", ".join(self.left) + " left")
        text = "; ".join(parts) or "rebalanced"
        if self.moves:
            shown = ", ".join(
                f"{m.queue.broker_name}/{m.queue.topic}/{m.queue.queue_id}: "
                f"{m.before or 'nobody'} → {m.after or 'nobody'}"
                for m in self.moves[:6]
            )
            more = f" and {len(self.moves) - 6} more" if len(self.moves) > 6 else ""
            text += f" — {len(self.moves)} queue(s) moved: {shown}{more}"
        return text


def holders(view: GroupView) -> dict[MessageQueue, str | None]:
    """Queue → the first client reporting it (``None`` for known queues nobody holds)."""
    out: dict[MessageQueue, str | None] = {mq: None for mq in view.known_queues()}
    for mq, owners in view.owners().items():
        out[mq] = owners[0]
    return out


def group_change(before: GroupView, after: GroupView) -> GroupChange:
    """Clients that joined or left and queues whose holder changed from ``before`` to ``after``."""
    old_clients, new_clients = set(before.client_ids), set(after.client_ids)
    old_owner, new_owner = holders(before), holders(after)
    moves = tuple(
        OwnerMove(mq, old_owner.get(mq), new_owner.get(mq))
        for mq in sort_queues(set(old_owner) | set(new_owner))
        if old_owner.get(mq) != new_owner.get(mq)
    )
    return GroupChange(
        after.group,
        joined=tuple(sorted(new_clients - old_clients)),
        left=tuple(sorted(old_clients - new_clients)),
        moves=moves,
    )


@dataclass(frozen=True, slots=True)
class Round:
    """One poll: its number (from 1), the previous sample and the current one."""

    number: int
    previous: Sample | None
    current: Sample
    #: per group, what every earlier round observed of its queues (the broker's expression, the
    #: owners, the consumer offsets): the doctor judges messages consumed before the current
    #: expression by it
    history: Mapping[str, ExpressionHistory] = field(default_factory=dict)

    def changes(self) -> dict[str, GroupChange]:
        """Groups whose membership or assignment changed since the previous round."""
        if self.previous is None:
            return {}
        out = {}
        for group, view in self.current.views.items():
            before = self.previous.views.get(group)
            if before is not None:
                change = group_change(before, view)
                if change:
                    out[group] = change
        return out


async def sample_groups(
    source: ClusterSource,
    groups: Sequence[str],
    *,
    clock: Clock | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    running_info: bool = True,
) -> Sample:
    """Views of ``groups`` read with at most ``concurrency`` at a time.

    A group that cannot be read leaves its error under its name and the others are still
    sampled; errors other than :class:`~rmqctl.errors.RmqctlError` propagate.
    """
    taken_at = (clock or source.clock).now()
    # more groups than are read at once: the views' reads fill the admin window between them,
    # so each view reads its brokers one after another, without a task per read
    targets = {g: g for g in groups}
    serial = len(targets) > concurrency
    views, failures = await fan_out(
        targets, lambda group: source.group_view(group, running_info=running_info, serial=serial), limit=concurrency)
    return Sample(taken_at, views, failures)


def redelivery_topics(view: GroupView) -> tuple[str, ...]:
    """The retry topics whose newest copies tell a POP group's redeliveries: its POP retry topics,
    and ``%RETRY%<group>`` too when remoting clients share the group (mixed); only those whose
    queues hold messages. Empty for a group that does not consume by POP."""
    if not view.pop:
        return ()
    wanted = set(view.pop_retry_topics)
    if view.consumption == "mixed":
        wanted.add(RETRY_PREFIX + view.group)
    return tuple(sorted({p.queue.topic for p in view.progress
                         if p.queue.topic in wanted and p.known and p.broker_offset > 0}))


async def sample_retry_copies(source: ClusterSource, view: GroupView) -> GroupView:
    """``view`` with the newest copies of its POP retry topics (:func:`redelivery_topics`), read
    back by offset, read-only, at most :data:`REDELIVERY_SAMPLE` per queue, when the source can:
    their reconsume times say how often each message came back (REPEATED_REDELIVERY). A read that
    fails leaves ``retry_samples`` empty and its error under ``errors["sample"]``."""
    topics = redelivery_topics(view)
    if not topics:
        return view
    # a POP retry topic is not among the topics the clients name: its queues are its rows
    rows: dict[str, list[MessageQueue]] = {}
    for p in view.progress:
        if p.queue.topic in topics:
            rows.setdefault(p.queue.topic, []).append(p.queue)
    probe = dataclasses.replace(view, topic_queues={**view.topic_queues, **{t: tuple(q) for t, q in rows.items()}})
    try:
        sampled = await source.sample_messages(probe, topics, per_queue=REDELIVERY_SAMPLE)
    except errors.RmqctlError as exc:
        return dataclasses.replace(view, errors={**view.errors, "sample": exc})
    return dataclasses.replace(view, retry_samples={mq: s for mq, s in sampled.tag_samples.items()
                                                    if mq.topic in topics}, errors=sampled.errors)


class Watcher:
    """Polls ``groups`` (every group of the cluster when ``None``) every ``interval`` seconds."""

    def __init__(
        self,
        source: ClusterSource,
        groups: Sequence[str] | None = None,
        *,
        interval: float = 2.0,
        clock: Clock | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        running_info: bool = True,
        retry_copies: bool = False,
    ) -> None:
        if not interval > 0:
            raise errors.UsageError(f"the watch interval must be positive, not {interval}")
        self.source = source
        self.groups = list(groups) if groups is not None else None
        self.interval = interval
        self.clock = clock or source.clock
        self.concurrency = concurrency
        self.running_info = running_info
        #: read back each POP group's newest retry copies every round (:func:`sample_retry_copies`)
        self.retry_copies = retry_copies
        self.last: Round | None = None
        #: per group, the expression history of every round so far (groups that vanish are dropped)
        self.histories: dict[str, ExpressionHistory] = {}
        #: errors of listing the groups on the last round that listed them (``--all``)
        self.list_errors: Mapping[str, errors.RmqctlError] = {}

    async def group_names(self) -> list[str]:
        if self.groups is not None:
            return self.groups
        listed = await self.source.groups()
        self.list_errors = dict(listed.errors)
        return list(listed.value)

    async def poll(self) -> Round:
        """Take one sample now and return it as the next round."""
        sample = await sample_groups(
            self.source,
            await self.group_names(),
            clock=self.clock,
            concurrency=self.concurrency,
            running_info=self.running_info,
        )
        if self.retry_copies:
            sample = await self._with_retry_copies(sample)
        previous = self.last.current if self.last else None
        before = self.histories
        self.last = Round((self.last.number + 1) if self.last else 1, previous, sample, before)
        histories: dict[str, ExpressionHistory] = {}
        for group, view in sample.views.items():
            try:
                histories[group] = before.get(group, ExpressionHistory()).observed(view)
            except Exception:  # noqa: BLE001 - a view the history cannot read is the round's to report
                # (its consumers fail on the same data and say so); what earlier rounds saw is kept
                if group in before:
                    histories[group] = before[group]
        histories.update({g: before[g] for g in sample.errors if g in before})  # unreadable this round
        self.histories = histories
        return self.last

    async def _with_retry_copies(self, sample: Sample) -> Sample:
        """``sample`` with every POP group's retry copies read back (bounded concurrency)."""
        wanted = [g for g, v in sample.views.items() if redelivery_topics(v)]
        if not wanted:
            return sample
        sampled = await bounded(wanted, lambda group: sample_retry_copies(self.source, sample.views[group]),
                                self.concurrency)
        return dataclasses.replace(sample, views={**sample.views, **dict(zip(wanted, sampled, strict=True))})

    async def rounds(self, count: int | None = None) -> AsyncIterator[Round]:
        """Poll, yield, wait ``interval``, repeat; ``count`` rounds or forever.

        The wait starts after the consumer of a round hands control back, so a slow consumer
        (a file write, a redraw) never makes two polls overlap.
        """
        done = 0
        while count is None or done < count:
            if done:
                await self.clock.sleep(self.interval)
            yield await self.poll()
            done += 1


def consume_rates(before: GroupView, after: GroupView, seconds: float) -> dict[tuple[str, str, int], float]:
    """Messages per second each queue's consumer offset advanced between two samples taken
    ``seconds`` apart, keyed like a document's queue: ``(topic, broker, queue_id)``. A queue in
    only one sample has no rate; an offset moved backwards (a reset) counts as 0."""
    if seconds <= 0:
        return {}
    earlier = {p.queue: p.consumer_offset for p in before.progress}
    out = {}
    for p in after.progress:
        if p.queue in earlier:
            key = (p.queue.topic, p.queue.broker_name, p.queue.queue_id)
            out[key] = max(0, p.consumer_offset - earlier[p.queue]) / seconds
    return out
