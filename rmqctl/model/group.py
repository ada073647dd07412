"""The group view: everything known about one consumer group, and its per-queue progress.

Derived holdings (owners, unassigned queues, rebalances in progress) are computed here once, never
in a command or widget. Frozen dataclasses, no I/O; must not import anything from rmqctl but
``errors`` and this package.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from typing import Any

from rmqctl.errors import RmqctlError
from rmqctl.model.cluster import MessageQueue, TopicOffset, retry_topic_owner, sort_queues
from rmqctl.model.consumer import (
    ClientConnection,
    ConsumerRunningInfo,
    ProxyClients,
    RetryPolicy,
    Subscription,
    SubscriptionGroupConfig,
)
from rmqctl.model.names import RETRY_PREFIX
from rmqctl.records import dataclass


@dataclass(frozen=True, slots=True)
class QueueProgress:
    """Progress of one queue for a group, with the client that reports holding it."""

    queue: MessageQueue
    broker_offset: int
    consumer_offset: int
    pull_offset: int | None
    last_timestamp: int
    owner: str | None = None
    #: where the offsets come from: ``consume_stats`` (208), ``offset_table`` (the broker's offset
    #: table and topic stats, read per queue because consume stats left the topic out while it
    #: was absent from the group's subscription table), ``no_commit`` (a held queue the group never
    #: committed: consumer offset from the queue's min offset or its holder's running info) or
    #: ``unknown`` (neither could be read)
    offsets_from: str = "consume_stats"
    #: False for a topic the group has committed offsets for that no online client subscribes
    #: (left behind by a client that stopped): nobody pulls it, whatever waits there
    subscribed: bool = True

    @property
    def known(self) -> bool:
        """False when the offsets could not be read: the numbers of this row mean nothing."""
        return self.offsets_from != "unknown"

    @property
    def diff(self) -> int:
        """Lag in messages, as mqadmin's ``#Diff`` (broker offset − consumer offset); 0 for a row
        whose offsets are unknown, so use :attr:`lag` wherever "unknown" must not read as 0."""
        return self.broker_offset - self.consumer_offset

    @property
    def lag(self) -> int | None:
        """Lag in messages, or ``None`` when the offsets could not be read."""
        return self.diff if self.known else None

    @property
    def inflight(self) -> int | None:
        """Pulled but not committed (``pullOffset − consumerOffset``), or ``None`` when the pull
        offset or the row's offsets are unknown: nothing known to be in flight is not 0."""
        if self.pull_offset is None or not self.known:
            return None
        return max(0, self.pull_offset - self.consumer_offset)

    @property
    def last_consumed_ms(self) -> int | None:
        """Store time of the last consumed message (None when nothing was consumed yet)."""
        return self.last_timestamp or None

    def age_ms(self, now_ms: float) -> int | None:
        """Milliseconds from the last consumed message's store time to ``now_ms`` (never
        negative: clocks differ); None when nothing was consumed yet."""
        last = self.last_consumed_ms
        return None if last is None else max(0, int(now_ms - last))


@dataclass(frozen=True, slots=True)
class SampledMessage:
    """One message read back by offset (tools group, nothing committed), for tag accounting."""

    queue: MessageQueue
    offset: int
    tag: str | None
    reconsume_times: int = 0
    #: every property the message carries (``TAGS``, ``KEYS`` and the user's), what a SQL92
    #: filter reads; None when the source could not read them
    properties: Mapping[str, str] | None = None
    #: when the broker stored it, epoch ms (None when not read)
    store_timestamp: int | None = None


@dataclass(frozen=True, slots=True)
class TagSample:
    """The recent messages of one queue, read by offset: ``[from_offset, to_offset)``."""

    queue: MessageQueue
    from_offset: int
    to_offset: int
    messages: tuple[SampledMessage, ...] = ()

    def tag_counts(self, below: int | None = None, at_or_above: int | None = None) -> dict[str | None, int]:
        """Messages per tag, optionally only below / at or above an offset."""
        out: dict[str | None, int] = {}
        for m in self.messages:
            if below is not None and m.offset >= below:
                continue
            if at_or_above is not None and m.offset < at_or_above:
                continue
            out[m.tag] = out.get(m.tag, 0) + 1
        return out


@dataclass(frozen=True, slots=True)
class GroupView:
    """Everything rmqctl knows about one consumer group across all brokers.

    ``errors`` maps a broker name (or ``client:<id>``) to the error that made this view
    partial; an empty mapping means the view is complete.
    """

    group: str
    connections: tuple[ClientConnection, ...]
    broker_subscriptions: Mapping[str, Mapping[str, Subscription]]
    running_infos: Mapping[str, ConsumerRunningInfo]
    progress: tuple[QueueProgress, ...]
    consume_type: str | None = None
    message_model: str | None = None
    consume_from_where: str | None = None
    #: readable queues per subscribed topic, from the name server routes (for assignment checks)
    topic_queues: Mapping[str, tuple[MessageQueue, ...]] = field(default_factory=dict)
    #: queues of ``%DLQ%<group>`` with their offsets (empty when the group has no DLQ topic)
    dlq: tuple[TopicOffset, ...] = ()
    #: client ids that more than one connection uses on one broker → those client addresses
    duplicate_clients: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: wall-clock time the view was sampled, epoch milliseconds
    sampled_at: int = 0
    errors: Mapping[str, RmqctlError] = field(default_factory=dict)
    #: data this source cannot supply (a field such as ``pull_offset`` → why); shown as
    #: "unavailable", never as zero, and the doctor skips the checks that need it
    unavailable: Mapping[str, str] = field(default_factory=dict)
    #: recent messages per queue of topics whose clients subscribe different tags (read back by
    #: offset, nothing committed); empty when not sampled (``--no-sample``) or not needed
    tag_samples: Mapping[MessageQueue, TagSample] = field(default_factory=dict)
    #: what each 5.x proxy read for this view lists (gRPC clients are listed by proxies only)
    proxies: tuple[ProxyClients, ...] = ()
    #: broker name → its release (``V5_3_3``), read only for a view no broker or proxy lists a
    #: client of: on 5.x, gRPC clients behind a proxy rmqctl did not read are invisible to the
    #: brokers; empty when not read or when no broker answered
    broker_versions: Mapping[str, str] = field(default_factory=dict)
    #: the newest copies in the group's retry topics (read back by offset, nothing committed), whose
    #: reconsume times tell how often a message came back; empty when not sampled
    retry_samples: Mapping[MessageQueue, TagSample] = field(default_factory=dict)
    #: the group's stored config on each broker that keeps one (broker name → config): its retry
    #: policy and maximum of deliveries; empty when not read (a dashboard) or no broker has one
    group_configs: Mapping[str, SubscriptionGroupConfig] = field(default_factory=dict)
    #: holdings derived once per view (a dashboard and the doctor ask many times); not part of
    #: the view's value: excluded from comparison, and ``replace`` starts it afresh
    _derived: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def online(self) -> bool:
        return bool(self.connections)

    @property
    def pop_retry_topics(self) -> tuple[str, ...]:
        """The group's POP retry topics among its progress rows (``%RETRY%<group>_<topic>`` or
        ``+<topic>``): offsets there mean the group has consumed by POP."""
        topics = {p.queue.topic for p in self.progress} | set(self.topic_queues)
        out = []
        for topic in sorted(topics):
            owner = retry_topic_owner(topic, topics=topics, groups={self.group})
            if owner is not None and owner[0] == self.group and owner[1] is not None:
                out.append(topic)
        return tuple(out)

    @property
    def consumption(self) -> str | None:
        """How the group consumes: ``pop`` (the broker hands each message to whichever client
        pops next: every gRPC client, and remoting clients registered as CONSUME_POP), ``push``
        (remoting clients that divide the queues among themselves), ``mixed`` (both at once, on
        the same offsets) or ``None`` when nothing tells (no client, no POP retry topic)."""
        pop = any(c.sdk == "grpc" for c in self.connections) or (self.consume_type or "") == "CONSUME_POP"
        push = any(c.sdk != "grpc" for c in self.connections) and (self.consume_type or "") != "CONSUME_POP"
        if pop and push:
            return "mixed"
        if pop or (not self.connections and self.pop_retry_topics):
            return "pop"
        return "push" if push else None

    @property
    def pop(self) -> bool:
        """Whether messages are handed out by POP (``pop`` or ``mixed``): no client owns a queue."""
        return self.consumption in ("pop", "mixed")

    @property
    def retry_policy(self) -> RetryPolicy | None:
        """The group's retry policy (the first broker's, by name), ``None`` when no config was
        read or it names none (a 4.x broker)."""
        return next((c.retry_policy for _, c in sorted(self.group_configs.items())), None)

    @property
    def lite_bind_topic(self) -> str | None:
        """5.5: the LITE topic the group is bound to (the first broker's config that names one, by
        broker name); ``None`` for a group of no lite topic, or when no config was read."""
        return next((c.lite_bind_topic for _, c in sorted(self.group_configs.items()) if c.lite_bind_topic), None)

    @property
    def max_deliveries(self) -> int | None:
        """How often a POP consumer gets a message before it goes to the DLQ (``retryMaxTimes +
        1``; the fewest when brokers differ); ``None`` when no config was read."""
        return min((c.max_deliveries for c in self.group_configs.values()), default=None)

    @property
    def retry_max_times(self) -> int | None:
        """The group's ``retryMaxTimes`` (the fewest when brokers differ), ``None`` when not read."""
        return min((c.retry_max_times for c in self.group_configs.values()), default=None)

    @property
    def client_ids(self) -> tuple[str, ...]:
        """Client ids, sorted; a duplicated id appears once (see ``duplicate_clients``)."""
        return tuple(sorted({c.client_id for c in self.connections}))

    def client_channels(self) -> list[str]:
        """The group's client ids as the broker lists them to a rebalancing client: one per
        connection, so a duplicated id appears once per process (Java's ``cidAll``)."""
        out = []
        for cid in self.client_ids:
            out.extend([cid] * max(1, len(self.duplicate_clients.get(cid, ()))))
        return out

    @property
    def dlq_messages(self) -> int:
        return sum(max(0, o.max_offset - o.min_offset) for o in self.dlq)

    @property
    def client_subscriptions(self) -> dict[str, tuple[Subscription, ...]]:
        """Each client's own subscriptions (from its running info), retry topic excluded."""
        subs: dict[str, tuple[Subscription, ...]] | None = self._derived.get("client_subscriptions")
        if subs is None:
            # the doctor's checks ask a dozen times per view
            subs = self._derived["client_subscriptions"] = {
                cid: info.user_subscriptions() for cid, info in sorted(self.running_infos.items())
            }
        return dict(subs)

    @property
    def total_diff(self) -> int:
        return sum(p.diff for p in self.progress)

    @property
    def total_inflight(self) -> int | None:
        """Inflight summed over the rows that know it; ``None`` when rows exist and none does."""
        known = [n for p in self.progress if (n := p.inflight) is not None]
        return sum(known) if known or not self.progress else None

    @property
    def strategy(self) -> str | None:
        """The allocation strategy every client reports, or ``None`` when they differ or none
        reported one."""
        names = {info.strategy for info in self.running_infos.values() if info.strategy}
        return names.pop() if len(names) == 1 else None

    def progress_by_queue(self) -> Mapping[MessageQueue, QueueProgress]:
        """Each queue's progress row, by its queue (kept with the view: the doctor's checks ask
        for it many times; not to be changed)."""
        by_queue: dict[MessageQueue, QueueProgress] | None = self._derived.get("by_queue")
        if by_queue is None:
            by_queue = self._derived["by_queue"] = {p.queue: p for p in self.progress}
        return by_queue

    def _holdings(self) -> dict[str, tuple[MessageQueue, ...]]:
        held: dict[str, tuple[MessageQueue, ...]] | None = self._derived.get("holdings")
        if held is None:
            out: dict[str, list[MessageQueue]] = {cid: [] for cid in self.client_ids}
            for cid, info in self.running_infos.items():
                out.setdefault(cid, []).extend(mq for mq, pq in info.mq_table.items() if not pq.dropped)
            held = self._derived["holdings"] = {cid: tuple(sort_queues(qs)) for cid, qs in sorted(out.items())}
        return held

    def _owners(self) -> dict[MessageQueue, tuple[str, ...]]:
        owners: dict[MessageQueue, tuple[str, ...]] | None = self._derived.get("owners")
        if owners is None:
            out: dict[MessageQueue, list[str]] = {}
            for cid, queues in self._holdings().items():
                for mq in queues:
                    out.setdefault(mq, []).append(cid)
            owners = self._derived["owners"] = {mq: tuple(cids) for mq, cids in out.items()}
        return owners

    def assignments(self) -> dict[str, list[MessageQueue]]:
        """Client id → queues it reports holding (from running infos), sorted Java-style."""
        return {cid: list(queues) for cid, queues in self._holdings().items()}

    def held(self) -> Mapping[str, tuple[MessageQueue, ...]]:
        """:meth:`assignments` as the view keeps it (not to be changed): what reads it only need
        not copy it."""
        return self._holdings()

    def holders(self) -> Mapping[MessageQueue, tuple[str, ...]]:
        """:meth:`owners` as the view keeps it (not to be changed): what reads it only need not
        copy it."""
        return self._owners()

    def owners(self) -> dict[MessageQueue, list[str]]:
        """Queue → every client that reports holding it (two or more is itself a problem)."""
        return {mq: list(cids) for mq, cids in self._owners().items()}

    def held_twice(self) -> dict[MessageQueue, list[str]]:
        """Queue → its holders, for queues that two or more clients report holding at once.

        Empty for a BROADCASTING group, where every client holds every queue by design."""
        if (self.message_model or "").upper() == "BROADCASTING":
            return {}
        owners = self._owners()
        return {mq: list(owners[mq]) for mq in sort_queues(mq for mq, cids in owners.items() if len(cids) > 1)}

    def known_queues(self) -> list[MessageQueue]:
        """Every queue the group should be consuming: progress rows plus route queues."""
        known: list[MessageQueue] | None = self._derived.get("known_queues")
        if known is None:  # the doctor asks several times per view
            seen = {p.queue for p in self.progress}
            for queues in self.topic_queues.values():
                seen.update(queues)
            known = self._derived["known_queues"] = sort_queues(seen)
        return list(known)

    @property
    def failed_brokers(self) -> dict[str, RmqctlError]:
        """Brokers whose reads failed for this view (``errors`` minus client, route and DLQ keys)."""
        return {name: err for name, err in sorted(self.errors.items()) if ":" not in name}

    def subscribes(self, client_id: str, topic: str) -> bool | None:
        """Does ``client_id`` subscribe ``topic`` (its retry topic included), by its own running
        info; None when that client's running info is not known."""
        info = self.running_infos.get(client_id)
        if info is None:
            return None
        return any(s.topic == topic for s in info.subscriptions)

    def unassigned(self) -> list[MessageQueue]:
        """Queues of the group's topics that no online client reports holding."""
        owners = self._owners()
        return [mq for mq in self.known_queues() if mq not in owners]

    @property
    def unknown_lag_queues(self) -> list[MessageQueue]:
        """Queues whose offsets could not be read (their lag is unknown, not 0)."""
        return [p.queue for p in self.progress if not p.known]

    def rebalance_in_progress(self) -> dict[str, list[MessageQueue]] | None:
        """Queues held by two clients (``shared``) or by none (``unheld``) in topics every client
        subscribes: with a strategy that always covers every queue once (AVG, AVG_BY_CIRCLE,
        CONSISTENT_HASH) and unique client ids, that only happens while clients are still moving
        to a new allocation after a membership change. ``None`` when the holdings look settled."""
        if "rebalance" not in self._derived:  # the doctor asks twice per view
            self._derived["rebalance"] = self._rebalance_in_progress()
        state: dict[str, list[MessageQueue]] | None = self._derived["rebalance"]
        return None if state is None else {k: list(v) for k, v in state.items()}

    def _rebalance_in_progress(self) -> dict[str, list[MessageQueue]] | None:
        if not self.running_infos or self.duplicate_clients or len(self.running_infos) < len(self.client_ids):
            return None
        if self.message_model == "BROADCASTING" or any(
            i.message_model == "BROADCASTING" or i.consume_orderly for i in self.running_infos.values()
        ):
            return None
        if self.strategy not in ("AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH"):
            return None
        subs = self.client_subscriptions
        common = set.intersection(*({s.topic for s in ss} for ss in subs.values())) if subs else set()
        common.add(RETRY_PREFIX + self.group)
        owners = self._owners()
        shared = sort_queues(mq for mq, holders in owners.items() if len(holders) > 1 and mq.topic in common)
        # A group that just started: the broker creates %RETRY%<group> on the first heartbeat and
        # the clients allocate it only after their next route poll (up to 30 s), so until an
        # offset exists for it nobody holding it is not a rebalance.
        with_offsets = {p.queue for p in self.progress}
        unheld = sort_queues(mq for t in common for mq in self.topic_queues.get(t, ()) if mq not in owners
                            and (mq in with_offsets or not mq.topic.startswith(RETRY_PREFIX)))
        if not shared and not unheld:
            return None
        return {"shared": shared, "unheld": unheld}

    def unpullable(self) -> list[MessageQueue]:
        """Held queues whose pulls fail now: the queue's broker keeps no subscription for its topic
        in the group's table (push consumers then get SUBSCRIPTION_NOT_EXIST, code 24, on every
        pull) while messages wait or the lag is unknown (the words for people:
        :func:`rmqctl.model.formatting.unpullable_reason`)."""
        out: list[MessageQueue] = []
        progress = {p.queue: p for p in self.progress}
        for mq in self._owners():
            table = self.broker_subscriptions.get(mq.broker_name)
            if table is None or mq.topic in table or mq.topic.startswith(RETRY_PREFIX):
                continue
            row = progress.get(mq)
            lag = row.lag if row is not None else None
            if lag is None or lag > 0:
                out.append(mq)
        return sorted(out)


@dataclass(frozen=True, slots=True)
class GroupSummary:
    """One line of ``rmqctl group list``."""

    group: str
    clients: int
    consume_type: str | None
    message_model: str | None
    version: str | None
    #: the lag summed over the brokers' consume stats; None when it could not be read (a
    #: dashboard that answers -1 for a group whose consume stats it could not read)
    total_diff: int | None
    consume_tps: float = 0.0
    error: str | None = None
    #: topics the group has offsets for that consume stats left out: ``total_diff`` counts
    #: only the others, so the group's real total is unknown
    unknown_diff_topics: tuple[str, ...] = ()
    #: the line is a cached answer (a dashboard's group list that this login may not rebuild), so
    #: its clients and lag are as old as ``cached_at``, not read now
    cached: bool = False
    #: when the cached line was built (epoch ms); None when live, or when the cache does not say
    cached_at: int | None = None
