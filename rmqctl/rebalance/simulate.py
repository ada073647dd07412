"""What-if allocation: who would hold which queue of a topic after adding or removing clients
or resizing brokers, and how that differs from what the clients report holding now.

Pure functions over plain values and group views: the front ends fetch a view and hand it in.
Must not import anything that does I/O, nor the CLI or TUI layers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import field

from rmqctl.errors import NotFound, UsageError
from rmqctl.model import DEFAULT_STRATEGY, RETRY_PREFIX, GroupView, MessageQueue
from rmqctl.rebalance.strategies import (
    AllocationError,
    get_strategy,
    java_sorted_ids,
    java_sorted_queues,
)
from rmqctl.records import dataclass


@dataclass(frozen=True, slots=True)
class Edits:
    """Changes to apply to the group and the topic before allocating."""

    add_clients: tuple[str, ...] = ()
    """Client ids to add. Adding an id already present simulates a duplicated client id."""
    remove_clients: tuple[str, ...] = ()
    """Client ids to remove (every channel with that id)."""
    queue_counts: Mapping[str, int] = field(default_factory=dict)
    """Broker name → its new number of read queues (0 drops the broker, a new name adds one)."""


@dataclass(frozen=True, slots=True)
class Mismatch:
    """How one client's reported queues differ from the simulated allocation."""

    missing: tuple[MessageQueue, ...]
    """Expected for this client but not reported as held."""
    unexpected: tuple[MessageQueue, ...]
    """Reported as held but not expected for this client."""


@dataclass(frozen=True, slots=True)
class SimulationResult:
    """The allocation a strategy computes for one topic, with what it leaves out."""

    strategy: str
    """The strategy's Java ``getName()``."""
    topic: str
    assignments: dict[str, list[MessageQueue]]
    """Every distinct client id (Java order) → its queues as a set would hold them: no
    duplicates, in Java order. A duplicated client id appears once; the share its second
    position would have had goes to nobody and shows up in ``unassigned_queues``."""
    idle_clients: list[str]
    """Clients that get no queue at all."""
    unassigned_queues: list[MessageQueue]
    """Queues of the topic that no client gets (a ``queue_id`` −1 POP entry covers its broker)."""
    mismatches: dict[str, Mismatch] | None = None
    """Only when the actual assignment was given: client id → difference, for clients that
    differ (an empty dict means everything matches)."""
    message_model: str = "CLUSTERING"
    """``BROADCASTING``: every client holds every queue, no strategy involved."""
    not_subscribed: list[str] = field(default_factory=list)
    """Clients of the group that do not subscribe the topic. RocketMQ still counts them in the
    topic's allocation (the broker lists every client of the group), but they never rebalance the
    topic, so the share they are given is held by nobody (it is in ``unassigned_queues``)."""
    moves: list[Move] | None = None
    """Only when the actual assignment was given: each queue whose holders change, from what the
    clients report now to the simulated allocation."""


@dataclass(frozen=True, slots=True)
class Move:
    """One queue whose holders differ between now and the simulation (``[]``: nobody)."""

    queue: MessageQueue
    before: tuple[str, ...]
    after: tuple[str, ...]

    def describe(self) -> str:
        """``broker-a/3: c1 → c2`` (``nobody`` for no holder)."""
        def who(cids: tuple[str, ...]) -> str:
            return " + ".join(cids) or "nobody"
        return f"{self.queue.broker_name}/{self.queue.queue_id}: {who(self.before)} → {who(self.after)}"


def moves_between(actual: Mapping[str, Iterable[MessageQueue]], simulated: Mapping[str, Iterable[MessageQueue]],
                  queues: Iterable[MessageQueue], topic: str) -> list[Move]:
    """Every queue of ``topic`` whose holders differ between ``actual`` and ``simulated``."""
    def holders(table: Mapping[str, Iterable[MessageQueue]]) -> dict[MessageQueue, tuple[str, ...]]:
        out: dict[MessageQueue, list[str]] = {}
        for cid in java_sorted_ids(set(table)):
            for mq in table[cid]:
                if mq.topic == topic:
                    out.setdefault(mq, []).append(cid)
        return {mq: tuple(cids) for mq, cids in out.items()}

    before, after = holders(actual), holders(simulated)
    everything = java_sorted_queues(set(queues) | set(before) | set(after))
    return [Move(mq, before.get(mq, ()), after.get(mq, ())) for mq in everything
            if before.get(mq, ()) != after.get(mq, ())]


def queues_from_counts(topic: str, counts: Mapping[str, int]) -> list[MessageQueue]:
    """Queues ``0..n-1`` on each broker, e.g. ``{"broker-a": 8, "broker-b": 8}``, in Java order."""
    for broker, count in counts.items():
        if count < 0:
            raise UsageError(f"queue count for {broker} must be 0 or more, not {count}")
    return java_sorted_queues(
        MessageQueue(topic, broker, queue_id)
        for broker, count in counts.items()
        for queue_id in range(count)
    )


def synthetic_client_ids(count: int) -> list[str]:
    """Made-up client ids, one host each, that sort (Java order) in their numeric order.

    Up to 9 they read ``10.0.0.1@client-1`` …; from 10 on every octet and number has a fixed
    width (``10.100.100.100@client-01`` …), because ``10.0.0.10`` sorts before ``10.0.0.9``.
    """
    if count < 0:
        raise UsageError(f"client count must be 0 or more, not {count}")
    if count <= 9:
        return [f"10.0.0.{i}@client-{i}" for i in range(1, count + 1)]
    if count > 156**3:
        raise UsageError(f"at most {156**3} synthetic clients, not {count}")
    width = len(str(count))
    out = []
    for i in range(count):
        # Octets 100..255 all have three digits, so text order is numeric order.
        high, rest = divmod(i, 156 * 156)
        mid, low = divmod(rest, 156)
        out.append(f"10.{100 + high}.{100 + mid}.{100 + low}@client-{i + 1:0{width}d}")
    return out


def _apply_queue_edits(
    topic: str, queues: Iterable[MessageQueue], counts: Mapping[str, int]
) -> list[MessageQueue]:
    kept = [mq for mq in queues if mq.broker_name not in counts]
    return kept + queues_from_counts(topic, counts)


def _apply_client_edits(client_ids: Iterable[str], edits: Edits) -> list[str]:
    clients = list(client_ids)
    for cid in edits.remove_clients:
        if cid not in clients:
            raise UsageError(
                f"cannot remove client {cid!r}: it is not in the group",
                hint=("clients: " + ", ".join(java_sorted_ids(set(clients)))) if clients else None,
            )
        clients = [c for c in clients if c != cid]
    clients.extend(edits.add_clients)
    return clients


def _as_held(queues: Iterable[MessageQueue]) -> list[MessageQueue]:
    # The client (and, for POP, the broker) turns the strategy's list into a set.
    return java_sorted_queues(set(queues))


def simulate(
    strategy: str,
    topic: str,
    queues: Iterable[MessageQueue],
    client_ids: Iterable[str],
    *,
    edits: Edits | None = None,
    actual: Mapping[str, Iterable[MessageQueue]] | None = None,
    strategy_options: Mapping[str, object] | None = None,
    broadcasting: bool = False,
    not_subscribed: Iterable[str] = (),
) -> SimulationResult:
    """Allocate ``topic``'s queues among the clients as the named strategy would.

    ``queues`` are the topic's readable queues and ``client_ids`` the group's client ids (one per
    connection, duplicates kept); ``edits`` change either first. ``strategy_options`` go to
    :func:`~rmqctl.rebalance.strategies.get_strategy` (``{"vnodes": 20}`` and so on). ``actual`` maps
    client id → queues it reports holding; queues of other topics are ignored and a client
    missing from it counts as holding nothing. ``broadcasting``: every client holds every queue
    (the strategy is not used). ``not_subscribed``: clients that take part in the allocation but
    do not subscribe the topic; their share goes to nobody.
    """
    edits = edits or Edits()
    queue_list = list(queues)
    strangers = sorted({mq.topic for mq in queue_list if mq.topic != topic})
    if strangers:
        raise UsageError(
            f"queues of topic {strangers[0]!r} given for a simulation of topic {topic!r}",
            hint="allocation is per topic: pass only the queues of the simulated topic",
        )
    chosen = get_strategy(strategy.strip().upper(), **dict(strategy_options or {}))
    mq_all = java_sorted_queues(_apply_queue_edits(topic, queue_list, edits.queue_counts))
    cid_all = java_sorted_ids(_apply_client_edits(client_ids, edits))
    if broadcasting:
        # RebalanceImpl.rebalanceByTopic, BROADCASTING: each client takes the whole queue set.
        raw = {cid: list(mq_all) for cid in dict.fromkeys(cid_all)}
    else:
        try:
            raw = chosen.allocate_all_sorted(mq_all, cid_all)
        except AllocationError:
            if mq_all and cid_all:
                raise
            # A topic without queues: the Java rebalance fails for it and nobody holds anything.
            raw = {cid: [] for cid in dict.fromkeys(cid_all)}
    outsiders = [cid for cid in dict.fromkeys(not_subscribed) if cid in raw]
    for cid in outsiders:
        # Counted in the allocation (the broker lists it), but it never rebalances this topic.
        raw[cid] = []
    assignments = {cid: _as_held(qs) for cid, qs in raw.items()}

    held = {mq for qs in assignments.values() for mq in qs}
    any_queue_of = {(mq.topic, mq.broker_name) for mq in held if mq.queue_id == -1}
    unassigned = [
        mq for mq in mq_all if mq not in held and (mq.topic, mq.broker_name) not in any_queue_of
    ]
    idle = [cid for cid, qs in assignments.items() if not qs and cid not in outsiders]

    mismatches: dict[str, Mismatch] | None = None
    if actual is not None:
        mismatches = {}
        for cid in java_sorted_ids(set(assignments) | set(actual)):
            expected = set(assignments.get(cid, ()))
            reported = {mq for mq in actual.get(cid, ()) if mq.topic == topic}
            if expected != reported:
                mismatches[cid] = Mismatch(
                    missing=tuple(java_sorted_queues(expected - reported)),
                    unexpected=tuple(java_sorted_queues(reported - expected)),
                )
    return SimulationResult(
        strategy="BROADCASTING" if broadcasting else chosen.name,
        topic=topic,
        assignments=assignments,
        idle_clients=idle,
        unassigned_queues=unassigned,
        mismatches=mismatches,
        message_model="BROADCASTING" if broadcasting else "CLUSTERING",
        not_subscribed=java_sorted_ids(set(outsiders)),
        moves=None if actual is None else moves_between(actual, assignments, mq_all, topic),
    )


__all__ = [
    "Edits",
    "Mismatch",
    "Move",
    "SimulationResult",
    "queues_from_counts",
    "simulate",
    "synthetic_client_ids",
]


def live_topic(view: GroupView, topic: str | None = None) -> str:
    """The topic a what-if on ``view`` is about: ``topic`` when given, else the group's only
    (non-retry) topic; a group of several topics needs the choice made."""
    if topic:
        return topic
    topics = sorted({s.topic for subs in view.client_subscriptions.values() for s in subs}
                    | {t for t in view.topic_queues if not t.startswith(RETRY_PREFIX)})
    if len(topics) != 1:
        raise UsageError(
            f"group {view.group} consumes {len(topics)} topics; choose one with --topic",
            hint=("topics: " + ", ".join(topics)) if topics else None)
    return topics[0]


def simulate_group(
    view: GroupView,
    *,
    topic: str | None = None,
    strategy: str | None = None,
    client_ids: Iterable[str] | None = None,
    extra_queues: Iterable[MessageQueue] = (),
    edits: Edits | None = None,
    strategy_options: Mapping[str, object] | None = None,
) -> SimulationResult:
    """What-if on a live group: its topic's queues (plus ``extra_queues``), its clients (or
    ``client_ids``), the strategy its clients report (or ``strategy``), compared with what each
    client really holds."""
    chosen = live_topic(view, topic)
    queues = [*view.topic_queues.get(chosen, ()), *extra_queues]
    if not queues:
        raise NotFound(f"topic {chosen!r} has no readable queues")
    ids = list(client_ids) if client_ids is not None else [c.client_id for c in view.connections]
    # A client whose own report says it does not subscribe the topic still takes part in its
    # allocation (every client of the group does); its share is orphaned.
    outsiders = [cid for cid in ids if view.subscribes(cid, chosen) is False]
    return simulate(strategy or view.strategy or DEFAULT_STRATEGY, chosen, queues, ids, edits=edits,
                    actual=view.assignments() if view.running_infos else None,
                    strategy_options=strategy_options,
                    broadcasting=(view.message_model or "").upper() == "BROADCASTING",
                    not_subscribed=outsiders)
