"""Answers of read-only admin requests, kept while the emulated cluster does not change.

A served emulator under load (the load generator of the scale tests, an exporter polling
thousands of groups) is asked the same reads again and again: a group's connections
(GET_CONSUMER_CONNECTION_LIST), its consume stats (GET_CONSUME_STATS), a topic's offsets
(GET_TOPIC_STATS_INFO), the cluster and its routes, and each broker's whole tables (every group's
consume stats, group and topic configs, consumer offsets) that every ``group list`` reads.
Between two changes of the cluster the answer to the same request is the same bytes, so
:class:`ReplyCache` keeps each answer with the cluster's *version* at the time it was built and
hands it out again while the version holds.

The version is ``(now_ms, events run, changes)``: the emulated clock (rates and ages read it), the
scheduler's count of events run (every client's pull, commit, heartbeat and rebalance is an event),
and :attr:`EmulatedCluster.changes`, which counts what changes the cluster outside the scheduler:
every request that is not a cached read (a commit, a heartbeat, a topic created; the server counts
it before and after its handler), a connection that closed after such a request (one that only read,
an admin tool's, changed nothing), and the control API's actions. A cluster changed by direct calls
in the same process is not seen, which is why only ``emulator serve`` turns the cache on.

Must not import the CLI, textual or pyspark, nor the server's connection handling.
"""

from __future__ import annotations

from rmqctl.emulator.groups import Channel
from rmqctl.emulator.handlers import Handler, Result
from rmqctl.emulator.world import EmulatedCluster
from rmqctl.remoting.codes import RequestCode
from rmqctl.remoting.frame import RemotingCommand

#: requests whose answers depend only on the cluster's state, the clock and the request itself
#: (never on the connection they came on), and that change nothing
CACHED_READS = frozenset({
    RequestCode.GET_CONSUMER_CONNECTION_LIST,
    RequestCode.GET_CONSUME_STATS,
    RequestCode.GET_TOPIC_STATS_INFO,
    RequestCode.GET_BROKER_CLUSTER_INFO,
    RequestCode.GET_ROUTEINFO_BY_TOPIC,
    # the name server's topics and each broker's whole tables: the costliest answers to build,
    # asked by every group list (an uncached read in between would count as a change)
    RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
    RequestCode.GET_BROKER_CONSUME_STATS,
    RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG,
    RequestCode.GET_ALL_TOPIC_CONFIG,
    RequestCode.GET_ALL_CONSUMER_OFFSET,
})

#: answers kept at most (one per distinct request); the cache starts over when full
MAX_ENTRIES = 65_536


class ReplyCache:
    """The answers of :data:`CACHED_READS`, each with the cluster version it was built at, kept
    per server: one cache serves every port, and the same request asked of two brokers has two
    answers (each broker's own queues and offsets)."""

    def __init__(self, cluster: EmulatedCluster) -> None:
        self.cluster = cluster
        self.scheduler = cluster.scheduler
        self._answers: dict[tuple[object, ...], tuple[tuple[int, int, int], RemotingCommand]] = {}
        #: answers handed out again, and answers built (for the benchmarks and the tests)
        self.hits = 0
        self.misses = 0

    def version(self) -> tuple[int, int, int]:
        scheduler = self.scheduler
        return scheduler.now_ms, scheduler.events_run, self.cluster.changes

    def changed(self) -> None:
        """Something outside the scheduler may have changed the cluster."""
        self.cluster.changes += 1

    def answer(self, cmd: RemotingCommand, conn: Channel, handler: Handler, server: str = "") -> Result:
        """The answer of ``server`` (its name) to ``cmd``: the one it gave to the same request at
        the same version, or the handler's (kept when it answered at once)."""
        key = (server, cmd.code, cmd.version, tuple(cmd.ext_fields.items()))
        version = self.version()
        kept = self._answers.get(key)
        if kept is not None and kept[0] == version:
            self.hits += 1
            reply = kept[1]
            return RemotingCommand(code=reply.code, opaque=cmd.opaque, flag=reply.flag, language=reply.language,
                                   version=reply.version, remark=reply.remark, ext_fields=reply.ext_fields,
                                   body=reply.body, serialize_type=reply.serialize_type)
        self.misses += 1
        result = handler(cmd, conn)
        if isinstance(result, RemotingCommand):
            if len(self._answers) >= MAX_ENTRIES:
                self._answers.clear()
            self._answers[key] = (version, result)
        return result
