"""Consumer queue-allocation strategies, bit-exact with the Java client and the 5.x broker.

Each ``allocate_*`` function keeps the Java contract ``allocate(currentCID, mqAll, cidAll)``:
it takes the lists exactly as given (the Java caller, ``RebalanceImpl``, has already sorted
them) and returns what the Java strategy returns for that one client, in the same order.
The ``Strategy`` objects built by :func:`get_strategy` add ``allocate_all``, which sorts both
inputs the Java way and answers for every client at once, sharing the work (one hash ring,
one grouping by machine room) instead of repeating it per client.

Pure computation: must not import anything that does I/O, and nothing from rmqctl but
``model`` and ``errors``.
"""

from __future__ import annotations

import bisect
import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import field
from typing import Protocol, runtime_checkable

from rmqctl.errors import AllocationError as AllocationError
from rmqctl.errors import UnknownStrategyError as UnknownStrategyError
from rmqctl.model import MessageQueue, java_str_key, sort_queues
from rmqctl.records import dataclass

#: ``new AllocateMessageQueueConsistentHash()`` uses this many virtual nodes per client.
DEFAULT_VIRTUAL_NODES = 10
#: ``BrokerConfig.defaultPopShareQueueNum``: every POP client may pop from every queue.
DEFAULT_POP_SHARE_QUEUE_NUM = -1

Allocation = dict[str, list[MessageQueue]]


# ---------------------------------------------------------------------------------------------
# Java string helpers


def java_split(text: str, separator: str) -> list[str]:
    """``String.split(separator)`` for a single literal character, as Java does it.

    Java drops trailing empty strings (``"room1@"`` → ``["room1"]``, ``"a@b@"`` → ``["a", "b"]``,
    ``"@"`` → ``[]``) but keeps leading ones, and returns the whole string when the separator
    does not occur at all (so ``""`` → ``[""]``).
    """
    if separator not in text:
        return [text]
    parts = text.split(separator)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def java_utf8(text: str) -> bytes:
    """``text.getBytes(StandardCharsets.UTF_8)`` as Java computes it.

    Java strings are UTF-16, so a surrogate pair is one character and an unpaired surrogate is
    written as ``?``. A Python string may hold either; joining pairs through UTF-16 first and
    then replacing what is left gives Java's bytes.
    """
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        joined = text.encode("utf-16-be", "surrogatepass").decode("utf-16-be", "surrogatepass")
        return joined.encode("utf-8", "replace")


def md5_hash(key: str) -> int:
    """``ConsistentHashRouter.MD5Hash``: the first four digest bytes, big-endian, unsigned."""
    return int.from_bytes(hashlib.md5(java_utf8(key)).digest()[:4], "big")


def java_sorted_queues(queues: Iterable[MessageQueue]) -> list[MessageQueue]:
    """``Collections.sort(mqAll)``: topic, then broker name (UTF-16 order), then queue id."""
    return sort_queues(queues)


def java_sorted_ids(client_ids: Iterable[str]) -> list[str]:
    """``Collections.sort(cidAll)``: Java ``String`` order, i.e. by UTF-16 code units."""
    return sorted(client_ids, key=java_str_key)


# ---------------------------------------------------------------------------------------------
# The Java functions, one client at a time


def _check(current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]) -> bool:
    """``AbstractAllocateMessageQueueStrategy.check``: raise on empty input, False if absent."""
    if not current_cid:
        raise AllocationError("currentCID is empty")
    if not mq_all:
        raise AllocationError("mqAll is null or mqAll empty")
    if not cid_all:
        raise AllocationError("cidAll is null or cidAll empty")
    # Java logs "[BUG] ... not in cidAll" and hands this client nothing.
    return current_cid in cid_all


def _average_bounds(index: int, queue_count: int, client_count: int) -> tuple[int, int]:
    """Slice bounds of client ``index``'s contiguous block in ``AllocateMessageQueueAveragely``."""
    mod = queue_count % client_count
    if queue_count <= client_count:
        size = 1
    elif mod > 0 and index < mod:
        size = queue_count // client_count + 1
    else:
        size = queue_count // client_count
    start = index * size if (mod > 0 and index < mod) else index * size + mod
    # With more clients than queues, a client past the end gets start >= n and so nothing.
    return start, start + max(0, min(size, queue_count - start))


def allocate_avg(
    current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
) -> list[MessageQueue]:
    """``AVG``: contiguous blocks; the first ``n % c`` clients get one queue more."""
    if not _check(current_cid, mq_all, cid_all):
        return []
    # indexOf: a duplicated id always finds its first position, so the later one's block is
    # taken by nobody.
    start, stop = _average_bounds(cid_all.index(current_cid), len(mq_all), len(cid_all))
    return list(mq_all[start:stop])


def allocate_avg_by_circle(
    current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
) -> list[MessageQueue]:
    """``AVG_BY_CIRCLE``: client ``i`` gets queues ``i, i+c, i+2c, …``."""
    if not _check(current_cid, mq_all, cid_all):
        return []
    return list(mq_all[cid_all.index(current_cid) :: len(cid_all)])


class _HashRing:
    """``ConsistentHashRouter`` over client ids: a sorted ring of MD5 points, built once."""

    __slots__ = ("owners", "points")

    def __init__(self, cid_all: Sequence[str], virtual_nodes: int) -> None:
        owner_at: dict[int, str] = {}
        on_ring: dict[str, int] = {}
        for cid in cid_all:
            # addNode numbers a repeated id's replicas after the ones already on the ring, so a
            # duplicate gets fresh points (cid-10 … cid-19) and twice the weight. The count is
            # of points still on the ring: a point lost to a later collision is not counted.
            existing = on_ring.get(cid, 0)
            for replica in range(existing, existing + virtual_nodes):
                point = md5_hash(f"{cid}-{replica}")
                previous = owner_at.get(point)
                if previous is not None:
                    # TreeMap.put: on a collision the later client takes the point over.
                    on_ring[previous] -= 1
                owner_at[point] = cid
                on_ring[cid] = on_ring.get(cid, 0) + 1
        self.points = sorted(owner_at)
        self.owners = [owner_at[p] for p in self.points]

    def route(self, mq: MessageQueue) -> str | None:
        """``routeNode(mq.toString())``: first point at or after the hash, wrapping around."""
        if not self.points:
            return None
        at = bisect.bisect_left(self.points, md5_hash(mq.java_string()))
        return self.owners[at if at < len(self.points) else 0]


def allocate_consistent_hash(
    current_cid: str,
    mq_all: Sequence[MessageQueue],
    cid_all: Sequence[str],
    virtual_nodes: int = DEFAULT_VIRTUAL_NODES,
) -> list[MessageQueue]:
    """``CONSISTENT_HASH``: each queue goes to the ring point after its MD5; 0 nodes → ``[]``."""
    if virtual_nodes < 0:
        raise AllocationError(f"illegal virtualNodeCnt :{virtual_nodes}")
    if not _check(current_cid, mq_all, cid_all):
        return []
    ring = _HashRing(cid_all, virtual_nodes)
    return [mq for mq in mq_all if ring.route(mq) == current_cid]


def allocate_by_config(
    current_cid: str,
    mq_all: Sequence[MessageQueue],
    cid_all: Sequence[str],
    queues: Sequence[MessageQueue],
) -> list[MessageQueue]:
    """``CONFIG``: the configured list, whoever asks; Java runs no ``check`` here at all."""
    return list(queues)


def _machine_room_queues(
    mq_all: Sequence[MessageQueue], consumer_idcs: frozenset[str] | set[str]
) -> list[MessageQueue]:
    """Queues on brokers named ``<idc>@<name>`` whose idc the consumers serve."""
    out = []
    for mq in mq_all:
        parts = java_split(mq.broker_name, "@")
        if len(parts) == 2 and parts[0] in consumer_idcs:
            out.append(mq)
    return out


def _machine_room_share(
    room_queues: Sequence[MessageQueue], index: int, client_count: int
) -> list[MessageQueue]:
    """A whole block of ``len // c`` queues, plus one of the remainder for the first clients."""
    per_client, rest = divmod(len(room_queues), client_count)
    out = list(room_queues[index * per_client : index * per_client + per_client])
    if rest > index:
        out.append(room_queues[index + per_client * client_count])
    return out


def allocate_by_machine_room(
    current_cid: str,
    mq_all: Sequence[MessageQueue],
    cid_all: Sequence[str],
    consumer_idcs: frozenset[str] | set[str],
) -> list[MessageQueue]:
    """``MACHINE_ROOM``: queues of the consumer idcs only, in blocks; other queues go nowhere."""
    if not _check(current_cid, mq_all, cid_all):
        return []
    room_queues = _machine_room_queues(mq_all, consumer_idcs)
    return _machine_room_share(room_queues, cid_all.index(current_cid), len(cid_all))


@runtime_checkable
class RoomResolver(Protocol):
    """``AllocateMachineRoomNearby.MachineRoomResolver``: where brokers and clients live."""

    def broker_room(self, mq: MessageQueue) -> str:
        """``brokerDeployIn``: the machine room of the broker serving ``mq``."""
        ...

    def client_room(self, client_id: str) -> str:
        """``consumerDeployIn``: the machine room of client ``client_id``."""
        ...


@dataclass(frozen=True, slots=True)
class RegexRoomResolver:
    """Rooms from regular expressions: the first capture group of the first match (``search``).

    A name the pattern does not match, or whose group did not take part, has no room; the
    nearby strategy then fails as Java's does for an empty room. Patterns are compiled with
    ``re.ASCII`` so that ``\\w``, ``\\d`` and ``\\s`` mean what they mean in ``java.util.regex``
    (ASCII only), and a resolver written with the same pattern in Java agrees.
    """

    broker_pattern: str
    """Searched in the broker name, e.g. ``r"^([^-]+)-"`` for ``hz-broker-a``."""
    client_pattern: str
    """Searched in the client id, e.g. ``r"@([^-]+)-"`` for ``10.0.0.1@hz-12345``."""
    _broker_re: re.Pattern[str] = field(init=False, repr=False, compare=False)
    _client_re: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for attr, pattern in (
            ("_broker_re", self.broker_pattern),
            ("_client_re", self.client_pattern),
        ):
            try:
                compiled = re.compile(pattern, re.ASCII)
            except re.error as exc:
                raise AllocationError(f"bad room pattern {pattern!r}: {exc}") from exc
            if compiled.groups < 1:
                raise AllocationError(
                    f"room pattern {pattern!r} has no capture group",
                    hint="the first group (…) of the match is the room name",
                )
            object.__setattr__(self, attr, compiled)

    @staticmethod
    def _room(pattern: re.Pattern[str], text: str) -> str:
        match = pattern.search(text)
        return (match.group(1) or "") if match else ""

    def broker_room(self, mq: MessageQueue) -> str:
        return self._room(self._broker_re, mq.broker_name)

    def client_room(self, client_id: str) -> str:
        return self._room(self._client_re, client_id)


def _rooms_of_queues(
    mq_all: Sequence[MessageQueue], resolver: RoomResolver
) -> dict[str, list[MessageQueue]]:
    rooms: dict[str, list[MessageQueue]] = {}
    for mq in mq_all:
        room = resolver.broker_room(mq)
        if not room:
            raise AllocationError(f"Machine room is null for mq {mq.java_string()}")
        rooms.setdefault(room, []).append(mq)
    return rooms


def _rooms_of_clients(cid_all: Sequence[str], resolver: RoomResolver) -> dict[str, list[str]]:
    rooms: dict[str, list[str]] = {}
    for cid in cid_all:
        room = resolver.client_room(cid)
        if not room:
            raise AllocationError(f"Machine room is null for consumer id {cid}")
        rooms.setdefault(room, []).append(cid)
    return rooms


def allocate_machine_room_nearby(
    current_cid: str,
    mq_all: Sequence[MessageQueue],
    cid_all: Sequence[str],
    inner: Strategy,
    resolver: RoomResolver,
) -> list[MessageQueue]:
    """``MACHINE_ROOM_NEARBY-<inner>``: own room's queues among own room's clients, first;
    then, in room-name order, the queues of every room without a live client, shared by all."""
    if not _check(current_cid, mq_all, cid_all):
        return []
    queue_rooms = _rooms_of_queues(mq_all, resolver)
    client_rooms = _rooms_of_clients(cid_all, resolver)
    my_room = resolver.client_room(current_cid)
    out: list[MessageQueue] = []
    own_queues = queue_rooms.pop(my_room, None)
    if own_queues:
        out.extend(inner.allocate(current_cid, own_queues, client_rooms[my_room]))
    # Java keeps the rooms in a TreeMap<String, …>, so orphan rooms come in UTF-16 order.
    for room in sorted(queue_rooms, key=java_str_key):
        if room not in client_rooms:
            out.extend(inner.allocate(current_cid, queue_rooms[room], cid_all))
    return out


def _allocate_pop_single(
    current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
) -> list[MessageQueue]:
    """``QueryAssignmentProcessor.allocate``: one queue each, wrapping when clients outnumber."""
    if not _check(current_cid, mq_all, cid_all):
        return []
    return [mq_all[cid_all.index(current_cid) % len(mq_all)]]


def _any_queue_of_each(mq_all: Sequence[MessageQueue]) -> list[MessageQueue]:
    # The broker builds MessageQueue(topic, broker, -1) per queue; once it turns the list
    # into a set that is one "pop from any queue of this broker" entry per broker.
    return [MessageQueue(mq.topic, mq.broker_name, -1) for mq in mq_all]


def allocate_pop(
    current_cid: str,
    mq_all: Sequence[MessageQueue],
    cid_all: Sequence[str],
    inner: Strategy,
    pop_share_queue_num: int = DEFAULT_POP_SHARE_QUEUE_NUM,
) -> list[MessageQueue]:
    """``QueryAssignmentProcessor.allocate4Pop`` (broker 5.x, POP mode), as a list.

    The broker turns this list into a set before answering, so duplicates (a client sharing
    its own share again through a duplicated id, or the ``-1`` entries) collapse there.
    """
    share = pop_share_queue_num
    if share <= 0 or share >= len(cid_all) - 1:
        # No check() on this path: every asker gets everything, even an unknown client.
        return _any_queue_of_each(mq_all)
    if len(cid_all) > len(mq_all):
        return _allocate_pop_single(current_cid, mq_all, cid_all)
    out = inner.allocate(current_cid, mq_all, cid_all)
    if current_cid in cid_all:
        index = cid_all.index(current_cid)
        for step in range(1, share + 1):
            out.extend(inner.allocate(cid_all[(index + step) % len(cid_all)], mq_all, cid_all))
    return out


# ---------------------------------------------------------------------------------------------
# Strategy objects


@runtime_checkable
class Strategy(Protocol):
    """An allocation strategy: the Java ``getName()`` plus one-client and all-client answers."""

    @property
    def name(self) -> str:
        """The Java ``getName()`` (``AVG``, ``MACHINE_ROOM_NEARBY-AVG`` …)."""
        ...

    def allocate(
        self, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        """Java ``allocate``: inputs used as given (already sorted by the caller)."""
        ...

    def allocate_all(self, mq_all: Iterable[MessageQueue], cid_all: Iterable[str]) -> Allocation:
        """Sort both inputs like ``RebalanceImpl`` and answer for every client.

        Keys are the distinct client ids in Java order; each value is exactly the list that
        client's own ``allocate`` call returns. A client id listed twice appears once, because
        both of its processes compute the same list: with the index-based strategies (AVG,
        AVG_BY_CIRCLE, MACHINE_ROOM) both take the first position's share and the second
        position's share goes to nobody (it shows up as unassigned queues); CONSISTENT_HASH
        instead gives the id a second set of ring points. Raises :class:`AllocationError`
        where ``allocate`` would raise for any client; no clients at all gives ``{}``.
        """
        ...

    def allocate_all_sorted(
        self, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> Allocation:
        """:meth:`allocate_all` for inputs already in Java order."""
        ...


def _first_index(cid_all: Sequence[str]) -> dict[str, int]:
    """``cidAll.indexOf`` for every distinct id at once (the first position wins)."""
    first: dict[str, int] = {}
    for index, cid in enumerate(cid_all):
        first.setdefault(cid, index)
    return first


def _check_all(mq_all: Sequence[MessageQueue], cid_all: Sequence[str]) -> bool:
    """``check`` for every client at once; False when there is no client to ask at all."""
    if not cid_all:
        return False
    if not all(cid_all):
        raise AllocationError("currentCID is empty")
    if not mq_all:
        raise AllocationError("mqAll is null or mqAll empty")
    return True


class _SortingStrategy:
    """Shared ``allocate_all``: sort the Java way, then compute for sorted input."""

    __slots__ = ()

    def allocate_all(self, mq_all: Iterable[MessageQueue], cid_all: Iterable[str]) -> Allocation:
        return self.allocate_all_sorted(java_sorted_queues(mq_all), java_sorted_ids(cid_all))

    def allocate_all_sorted(
        self, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> Allocation:
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class AveragelyStrategy(_SortingStrategy):
    """``AllocateMessageQueueAveragely`` (the push and lite-pull consumers' default)."""

    @property
    def name(self) -> str:
        return "AVG"

    def allocate(
        self, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        return allocate_avg(current_cid, mq_all, cid_all)

    def allocate_all_sorted(
        self, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> Allocation:
        if not _check_all(mq_all, cid_all):
            return {}
        n, c = len(mq_all), len(cid_all)
        out: Allocation = {}
        for cid, index in _first_index(cid_all).items():
            start, stop = _average_bounds(index, n, c)
            out[cid] = list(mq_all[start:stop])
        return out


@dataclass(frozen=True, slots=True)
class AveragelyByCircleStrategy(_SortingStrategy):
    """``AllocateMessageQueueAveragelyByCircle``: round robin over the sorted queues."""

    @property
    def name(self) -> str:
        return "AVG_BY_CIRCLE"

    def allocate(
        self, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        return allocate_avg_by_circle(current_cid, mq_all, cid_all)

    def allocate_all_sorted(
        self, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> Allocation:
        if not _check_all(mq_all, cid_all):
            return {}
        c = len(cid_all)
        return {cid: list(mq_all[index::c]) for cid, index in _first_index(cid_all).items()}


@dataclass(frozen=True, slots=True)
class ConsistentHashStrategy(_SortingStrategy):
    """``AllocateMessageQueueConsistentHash(virtualNodeCnt)`` with the default MD5 hash."""

    virtual_nodes: int = DEFAULT_VIRTUAL_NODES
    """Ring points per client; 0 leaves the ring empty and every client without queues."""

    def __post_init__(self) -> None:
        if self.virtual_nodes < 0:
            raise AllocationError(f"illegal virtualNodeCnt :{self.virtual_nodes}")

    @property
    def name(self) -> str:
        return "CONSISTENT_HASH"

    def allocate(
        self, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        return allocate_consistent_hash(current_cid, mq_all, cid_all, self.virtual_nodes)

    def allocate_all_sorted(
        self, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> Allocation:
        if not _check_all(mq_all, cid_all):
            return {}
        out: Allocation = {cid: [] for cid in _first_index(cid_all)}
        ring = _HashRing(cid_all, self.virtual_nodes)
        for mq in mq_all:
            owner = ring.route(mq)
            if owner is not None:
                out[owner].append(mq)
        return out


@dataclass(frozen=True, slots=True)
class ConfigStrategy(_SortingStrategy):
    """``AllocateMessageQueueByConfig``: every client gets the same configured queues."""

    queues: tuple[MessageQueue, ...] = ()
    """The ``messageQueueList``, returned as is (order kept, not filtered by mqAll)."""

    @property
    def name(self) -> str:
        return "CONFIG"

    def allocate(
        self, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        return allocate_by_config(current_cid, mq_all, cid_all, self.queues)

    def allocate_all_sorted(
        self, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> Allocation:
        return {cid: list(self.queues) for cid in _first_index(cid_all)}


@dataclass(frozen=True, slots=True)
class MachineRoomStrategy(_SortingStrategy):
    """``AllocateMessageQueueByMachineRoom``: only brokers named ``<idc>@<name>`` of our idcs."""

    consumer_idcs: frozenset[str] = frozenset()
    """The ``consumeridcs`` set: idc prefixes whose brokers this group consumes."""

    @property
    def name(self) -> str:
        return "MACHINE_ROOM"

    def allocate(
        self, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        return allocate_by_machine_room(current_cid, mq_all, cid_all, self.consumer_idcs)

    def allocate_all_sorted(
        self, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> Allocation:
        if not _check_all(mq_all, cid_all):
            return {}
        room_queues = _machine_room_queues(mq_all, self.consumer_idcs)
        c = len(cid_all)
        return {
            cid: _machine_room_share(room_queues, index, c)
            for cid, index in _first_index(cid_all).items()
        }


@dataclass(frozen=True, slots=True)
class MachineRoomNearbyStrategy(_SortingStrategy):
    """``AllocateMachineRoomNearby(inner, resolver)``: stay in your room unless one is orphaned."""

    inner: Strategy
    """The strategy that splits each room's queues (``AVG`` in most deployments)."""
    resolver: RoomResolver
    """Tells the machine room of a broker and of a client."""

    @property
    def name(self) -> str:
        return f"MACHINE_ROOM_NEARBY-{self.inner.name}"

    def allocate(
        self, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        return allocate_machine_room_nearby(current_cid, mq_all, cid_all, self.inner, self.resolver)

    def allocate_all_sorted(
        self, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> Allocation:
        if not _check_all(mq_all, cid_all):
            return {}
        queue_rooms = _rooms_of_queues(mq_all, self.resolver)
        client_rooms = _rooms_of_clients(cid_all, self.resolver)
        # Sub-lists of sorted lists are still sorted, as the Java inner strategy sees them.
        own = {
            room: self.inner.allocate_all_sorted(queue_rooms[room], clients)
            for room, clients in client_rooms.items()
            if room in queue_rooms
        }
        orphans = [
            self.inner.allocate_all_sorted(queue_rooms[room], cid_all)
            for room in sorted(queue_rooms, key=java_str_key)
            if room not in client_rooms
        ]
        out: Allocation = {}
        for room, clients in client_rooms.items():
            for cid in clients:
                mine = list(own[room][cid]) if room in own else []
                for shared in orphans:
                    mine.extend(shared[cid])
                out[cid] = mine
        return {cid: out[cid] for cid in _first_index(cid_all)}


@dataclass(frozen=True, slots=True)
class PopStrategy(_SortingStrategy):
    """The 5.x broker's POP-mode assignment (``allocate4Pop``) around ``AVG``/``AVG_BY_CIRCLE``.

    Not a client strategy: the broker computes it when a group's topic is in POP mode. Its
    rmqctl name is ``POP-<inner>``. Like :func:`allocate_pop`, results are the broker's lists
    before it makes them sets (one ``queue_id`` −1 entry per queue, shares possibly repeated).
    """

    inner: Strategy
    """The strategy the client asked for by name (the broker knows only AVG and AVG_BY_CIRCLE)."""
    pop_share_queue_num: int = DEFAULT_POP_SHARE_QUEUE_NUM
    """How many following clients' shares each client may also pop; ≤ 0 or ≥ c−1 means all."""

    @property
    def name(self) -> str:
        return f"POP-{self.inner.name}"

    def allocate(
        self, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        return allocate_pop(current_cid, mq_all, cid_all, self.inner, self.pop_share_queue_num)

    def allocate_all_sorted(
        self, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> Allocation:
        share, c, n = self.pop_share_queue_num, len(cid_all), len(mq_all)
        first = _first_index(cid_all)
        if share <= 0 or share >= c - 1:
            everything = _any_queue_of_each(mq_all)
            return {cid: list(everything) for cid in first}
        if c > n:
            _check_all(mq_all, cid_all)
            return {cid: [mq_all[index % n]] for cid, index in first.items()}
        shares = self.inner.allocate_all_sorted(mq_all, cid_all)
        out: Allocation = {}
        for cid, index in first.items():
            mine = list(shares[cid])
            for step in range(1, share + 1):
                mine.extend(shares[cid_all[(index + step) % c]])
            out[cid] = mine
        return out


# ---------------------------------------------------------------------------------------------
# Lookup by name

_NEARBY_PREFIX = "MACHINE_ROOM_NEARBY-"
_POP_PREFIX = "POP-"
#: Plain strategies by their Java ``getName()``.
BASE_STRATEGY_NAMES = ("AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH", "CONFIG", "MACHINE_ROOM")
#: Inner strategies the 5.x broker registers for server-side (and so POP) assignment.
BROKER_STRATEGY_NAMES = ("AVG", "AVG_BY_CIRCLE")
#: Every name :func:`get_strategy` accepts (nearby wrappers may nest further).
STRATEGY_NAMES = (
    *BASE_STRATEGY_NAMES,
    *(_NEARBY_PREFIX + inner for inner in BASE_STRATEGY_NAMES),
    *(_POP_PREFIX + inner for inner in BROKER_STRATEGY_NAMES),
)
_OPTIONS = {
    "vnodes": "CONSISTENT_HASH",
    "queues": "CONFIG",
    "consumer_idcs": "MACHINE_ROOM",
    "resolver": "MACHINE_ROOM_NEARBY-*",
    "broker_pattern": "MACHINE_ROOM_NEARBY-*",
    "client_pattern": "MACHINE_ROOM_NEARBY-*",
    "pop_share_queue_num": "POP-*",
}


def get_strategy(name: str, **options: object) -> Strategy:
    """The strategy whose Java ``getName()`` is ``name``.

    Options (``None`` means "not given"; one that the named strategy does not use is an error):

    - ``vnodes: int`` — CONSISTENT_HASH virtual nodes per client (default 10);
    - ``queues: Iterable[MessageQueue]`` — CONFIG's fixed list (default empty);
    - ``consumer_idcs: Iterable[str]`` — MACHINE_ROOM's idcs (default none);
    - ``resolver: RoomResolver``, or ``broker_pattern`` + ``client_pattern`` for a
      :class:`RegexRoomResolver` — required by ``MACHINE_ROOM_NEARBY-<inner>``;
    - ``pop_share_queue_num: int`` — ``POP-AVG``/``POP-AVG_BY_CIRCLE`` (default −1).
    """
    given = {key: value for key, value in options.items() if value is not None}
    for key in given:
        if key not in _OPTIONS:
            raise UnknownStrategyError(
                f"unknown strategy option {key!r}",
                hint="options: " + ", ".join(f"{k} ({v})" for k, v in _OPTIONS.items()),
            )
    used: set[str] = set()
    strategy = _build(name, given, used)
    unused = sorted(set(given) - used)
    if unused:
        raise UnknownStrategyError(
            f"option {unused[0]!r} does not apply to strategy {name}",
            hint=f"{unused[0]} belongs to {_OPTIONS[unused[0]]}",
        )
    return strategy


def _unknown(name: str) -> UnknownStrategyError:
    return UnknownStrategyError(
        f"unknown allocation strategy {name!r}; valid names: {', '.join(STRATEGY_NAMES)}",
        hint="names are the Java getName() values; MACHINE_ROOM_NEARBY- takes any inner name",
    )


def _build(name: str, options: Mapping[str, object], used: set[str]) -> Strategy:
    if name == "AVG":
        return AveragelyStrategy()
    if name == "AVG_BY_CIRCLE":
        return AveragelyByCircleStrategy()
    if name == "CONSISTENT_HASH":
        used.add("vnodes")
        vnodes = options.get("vnodes", DEFAULT_VIRTUAL_NODES)
        if not isinstance(vnodes, int) or isinstance(vnodes, bool):
            raise AllocationError(f"vnodes must be an integer, not {vnodes!r}")
        return ConsistentHashStrategy(vnodes)
    if name == "CONFIG":
        used.add("queues")
        queues = options.get("queues", ())
        if not isinstance(queues, Iterable):
            raise AllocationError("CONFIG queues must be a list of MessageQueue")
        config = tuple(queues)
        if not all(isinstance(mq, MessageQueue) for mq in config):
            raise AllocationError("CONFIG queues must be a list of MessageQueue")
        return ConfigStrategy(config)
    if name == "MACHINE_ROOM":
        used.add("consumer_idcs")
        idcs = options.get("consumer_idcs", ())
        if isinstance(idcs, str) or not isinstance(idcs, Iterable):
            raise AllocationError("consumer_idcs must be a collection of idc names")
        return MachineRoomStrategy(frozenset(str(idc) for idc in idcs))
    if name.startswith(_NEARBY_PREFIX):
        inner = _build(name[len(_NEARBY_PREFIX) :], options, used)
        used.update(("resolver", "broker_pattern", "client_pattern"))
        return MachineRoomNearbyStrategy(inner, _resolver(options))
    if name.startswith(_POP_PREFIX):
        inner_name = name[len(_POP_PREFIX) :]
        if inner_name not in BROKER_STRATEGY_NAMES:
            raise UnknownStrategyError(
                f"unknown allocation strategy {name!r}: the broker assigns POP queues only "
                f"with {' or '.join(BROKER_STRATEGY_NAMES)}",
                hint="valid names: " + ", ".join(STRATEGY_NAMES),
            )
        used.add("pop_share_queue_num")
        share = options.get("pop_share_queue_num", DEFAULT_POP_SHARE_QUEUE_NUM)
        if not isinstance(share, int) or isinstance(share, bool):
            raise AllocationError(f"pop_share_queue_num must be an integer, not {share!r}")
        return PopStrategy(_build(inner_name, options, used), share)
    raise _unknown(name)


def _resolver(options: Mapping[str, object]) -> RoomResolver:
    resolver = options.get("resolver")
    broker_pattern = options.get("broker_pattern")
    client_pattern = options.get("client_pattern")
    if resolver is not None:
        if broker_pattern is not None or client_pattern is not None:
            raise AllocationError("give either resolver or broker_pattern/client_pattern, not both")
        if not isinstance(resolver, RoomResolver):
            raise AllocationError("resolver must have broker_room(mq) and client_room(cid)")
        return resolver
    if isinstance(broker_pattern, str) and isinstance(client_pattern, str):
        return RegexRoomResolver(broker_pattern, client_pattern)
    raise AllocationError(
        "MACHINE_ROOM_NEARBY needs a machine-room resolver",
        hint="pass resolver=…, or broker_pattern=… and client_pattern=… (first group = room)",
    )
