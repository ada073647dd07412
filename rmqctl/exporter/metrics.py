"""The exporter's metrics: a ``prometheus_client`` collector over the last complete round.

:class:`RoundCollector` turns the :class:`~rmqctl.exporter.rounds.RoundResult` it holds into
metric families each time a registry collects it, so a scrape reads memory only. Each exporter
builds its own :class:`~prometheus_client.CollectorRegistry` (:func:`registry_for`): nothing goes
into the library's global registry. :func:`exposition` encodes a registry in the format an
``Accept`` header asks for (OpenMetrics or the classic text format), through the library's own
encoder. The metric names and labels are documented in ``docs/metrics.md``.

A number that could not be read is never exported as 0: the sample is left out (a group's lag
when some queue's offsets are unknown, a lag in seconds whose message could not be read back).
Must not import the CLI, textual or pyspark.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.samples import Sample

from rmqctl.exporter.rounds import GroupResult, RoundResult
from rmqctl.exporter.stuck import STATUSES
from rmqctl.model import MessageQueue

PREFIX = "rmqctl_"
#: per-queue series (lag, findings, verdicts) exported at most, by default
DEFAULT_MAX_QUEUE_SERIES = 10_000
#: verdict statuses exported per queue (the others are only counted per group)
QUEUE_STATUSES = ("STALLED", "ORPHANED", "LAGGING", "REWOUND")

_QUEUE_LABELS = ["group", "topic", "broker", "queue"]


@dataclass(frozen=True, slots=True)
class MetricOptions:
    """What the collector exports beyond the per-group series."""

    #: per-queue lag, lag in seconds and in-flight series
    per_queue: bool = False
    #: at most this many per-queue series in one scrape (all families together); the rest are
    #: counted in ``rmqctl_exporter_queue_series_dropped``
    max_queue_series: int = DEFAULT_MAX_QUEUE_SERIES


def _queue_labels(group: str, mq: MessageQueue) -> list[str]:
    return [group, mq.topic, mq.broker_name, str(mq.queue_id)]


class _Budget:
    """The per-queue series cap, shared by every family of one scrape."""

    def __init__(self, limit: int) -> None:
        self.left = limit
        self.dropped = 0

    def take(self) -> bool:
        if self.left > 0:
            self.left -= 1
            return True
        self.dropped += 1
        return False


def _by_topic(result: GroupResult) -> dict[str, list[MessageQueue]]:
    out: dict[str, list[MessageQueue]] = {}
    assert result.view is not None
    for p in result.view.progress:
        out.setdefault(p.queue.topic, []).append(p.queue)
    return out


def _finding_queues(evidence: Mapping[str, object]) -> list[tuple[str, str, str]]:
    """(topic, broker, queue id) of every queue a finding's evidence names."""
    rows = evidence.get("queues")
    out = []
    if isinstance(rows, list):
        for row in rows:
            if isinstance(row, Mapping) and "topic" in row and "broker" in row and "queue_id" in row:
                out.append((str(row["topic"]), str(row["broker"]), str(row["queue_id"])))
    return sorted(set(out))


class RoundCollector(Collector):
    """Collects the metrics of the last complete round (nothing before the first one)."""

    def __init__(self, options: MetricOptions = MetricOptions()) -> None:
        self.options = options
        self._lock = threading.Lock()
        self._round: RoundResult | None = None
        self._rounds_total = 0
        self._round_failures_total = 0
        self._last_scrape_seconds: float | None = None

    # -- what the exporter feeds in ---------------------------------------------------------------

    def publish(self, result: RoundResult) -> None:
        """Serve ``result`` from now on (the previous one stays until this call)."""
        with self._lock:
            self._round = result
            self._rounds_total += 1

    def round_failed(self) -> None:
        with self._lock:
            self._round_failures_total += 1

    def scraped(self, seconds: float) -> None:
        """How long the last scrape took to answer (reported by the next one)."""
        with self._lock:
            self._last_scrape_seconds = seconds

    @property
    def current(self) -> RoundResult | None:
        return self._round

    # -- Collector --------------------------------------------------------------------------------

    def describe(self) -> Iterable[Metric]:
        return []  # families vary with the round: registering must not collect

    def collect(self) -> Iterator[Metric]:
        yield from self.collect_self()
        yield from self.collect_round()

    def collect_self(self) -> Iterator[Metric]:
        """The exporter's own series (rounds, durations): cheap, read on every scrape."""
        with self._lock:
            rnd, rounds, failures, scrape = (self._round, self._rounds_total, self._round_failures_total,
                                             self._last_scrape_seconds)
        yield from self._exporter_metrics(rnd, rounds, failures, scrape)

    def collect_round(self) -> Iterator[Metric]:
        """The series of the last complete round: the same until the next round is published, so
        the metrics endpoint encodes them once per round and format."""
        yield from self.round_metrics(self._round)

    def round_metrics(self, rnd: RoundResult | None) -> Iterator[Metric]:
        """The series of ``rnd`` (none for no round)."""
        if rnd is None:
            return
        budget = _Budget(self.options.max_queue_series)
        yield from self._broker_metrics(rnd)
        yield from self._group_metrics(rnd)
        if self.options.per_queue:
            yield from self._queue_metrics(rnd, budget)
        yield from self._finding_metrics(rnd, budget)
        yield from self._verdict_metrics(rnd, budget)
        dropped = GaugeMetricFamily(PREFIX + "exporter_queue_series_dropped",
                                    "Per-queue series left out of this scrape by the cardinality cap.")
        dropped.add_metric([], budget.dropped)
        yield dropped

    def _exporter_metrics(self, rnd: RoundResult | None, rounds: int, failures: int,
                          scrape: float | None) -> Iterator[Metric]:
        total = CounterMetricFamily(PREFIX + "exporter_rounds", "Rounds completed since the exporter started.")
        total.add_metric([], rounds)
        yield total
        failed = CounterMetricFamily(PREFIX + "exporter_round_failures",
                                     "Rounds that failed as a whole (no group list, no broker).")
        failed.add_metric([], failures)
        yield failed
        if rnd is not None:
            duration = GaugeMetricFamily(PREFIX + "exporter_round_duration_seconds",
                                         "Host seconds the last complete round took.", unit="seconds")
            duration.add_metric([], rnd.duration_seconds)
            yield duration
            taken = GaugeMetricFamily(PREFIX + "exporter_round_timestamp_seconds",
                                      "When the served round was sampled (the cluster's clock).", unit="seconds")
            taken.add_metric([], rnd.taken_at)
            yield taken
            groups = GaugeMetricFamily(PREFIX + "exporter_groups", "Consumer groups polled in the served round.")
            groups.add_metric([], len(rnd.groups))
            yield groups
        if scrape is not None:
            seconds = GaugeMetricFamily(PREFIX + "exporter_scrape_duration_seconds",
                                        "Host seconds the previous scrape of this endpoint took to answer.",
                                        unit="seconds")
            seconds.add_metric([], scrape)
            yield seconds

    def _broker_metrics(self, rnd: RoundResult) -> Iterator[Metric]:
        up = GaugeMetricFamily(PREFIX + "broker_up", "1 when every read of the broker succeeded in the round.",
                               labels=["broker"])
        failed = CounterMetricFamily(PREFIX + "broker_read_errors",
                                     "Rounds in which a read of the broker failed, since the exporter started.",
                                     labels=["broker"])
        for name, broker in sorted(rnd.brokers.items()):
            up.add_metric([name], 1 if broker.up else 0)
            failed.add_metric([name], broker.errors_total)
        yield up
        yield failed

    def _group_metrics(self, rnd: RoundResult) -> Iterator[Metric]:
        g_up = GaugeMetricFamily(PREFIX + "group_up", "1 when the group could be read in the round.",
                                 labels=["group"])
        clients = GaugeMetricFamily(PREFIX + "group_clients_online", "Clients of the group connected to a broker.",
                                    labels=["group"])
        lag = GaugeMetricFamily(PREFIX + "group_lag_messages",
                                "Messages not yet consumed (broker offset - consumer offset), per topic.",
                                labels=["group", "topic"])
        unknown = GaugeMetricFamily(PREFIX + "group_lag_unknown_queues",
                                    "Queues whose offsets could not be read (their lag is unknown).",
                                    labels=["group", "topic"])
        lag_s = GaugeMetricFamily(PREFIX + "group_lag_seconds",
                                  "Age of the oldest unconsumed message (now - its store time), worst queue "
                                  "of the topic; left out when some queue's age is unknown.",
                                  labels=["group", "topic"], unit="seconds")
        inflight = GaugeMetricFamily(PREFIX + "group_inflight_messages",
                                     "Messages pulled by clients but not committed (pull offset - consumer "
                                     "offset).", labels=["group", "topic"])
        consume = GaugeMetricFamily(PREFIX + "group_consume_rate",
                                    "Messages per second the consumer offsets advanced since the previous round.",
                                    labels=["group", "topic"])
        produce = GaugeMetricFamily(PREFIX + "group_produce_rate",
                                    "Messages per second written to the group's queues since the previous round.",
                                    labels=["group", "topic"])
        dlq = GaugeMetricFamily(PREFIX + "group_dlq_messages", "Messages in the group's dead-letter queue.",
                                labels=["group"])
        statuses = GaugeMetricFamily(PREFIX + "group_queues_by_status",
                                     "Queues of the group per stuck verdict (as rmqctl analyze stuck).",
                                     labels=["group", "status"])
        for name, result in rnd.groups.items():
            g_up.add_metric([name], 0 if result.view is None else 1)
            view = result.view
            if view is None:
                continue
            clients.add_metric([name], len(view.client_ids))
            if "dlq" not in view.unavailable:
                dlq.add_metric([name], view.dlq_messages)
            progress = {p.queue: p for p in view.progress}
            pull_known = "pull_offset" not in view.unavailable
            for topic, queues in sorted(_by_topic(result).items()):
                rows = [progress[mq] for mq in queues]
                lags = [p.lag for p in rows]
                missing = sum(1 for x in lags if x is None)
                unknown.add_metric([name, topic], missing)
                if not missing:
                    lag.add_metric([name, topic], sum(max(0, x) for x in lags if x is not None))
                ages = [result.lag_seconds.get(mq) for mq in queues]
                if ages and all(a is not None for a in ages):
                    lag_s.add_metric([name, topic], max(a for a in ages if a is not None))
                flights = [p.inflight for p in rows]
                if pull_known and flights and all(f is not None for f in flights):
                    inflight.add_metric([name, topic], sum(f for f in flights if f is not None))
                if queues and all(mq in result.consume_rates for mq in queues):
                    consume.add_metric([name, topic], sum(result.consume_rates[mq] for mq in queues))
                if queues and all(mq in result.produce_rates for mq in queues):
                    produce.add_metric([name, topic], sum(result.produce_rates[mq] for mq in queues))
            counts = dict.fromkeys(STATUSES, 0)
            for verdict in result.verdicts:
                counts[verdict.status] += 1
            for status, n in counts.items():
                statuses.add_metric([name, status], n)
        yield from (g_up, clients, lag, unknown, lag_s, inflight, consume, produce, dlq, statuses)

    def _queue_metrics(self, rnd: RoundResult, budget: _Budget) -> Iterator[Metric]:
        lag = GaugeMetricFamily(PREFIX + "queue_lag_messages", "Messages not yet consumed in one queue.",
                                labels=_QUEUE_LABELS)
        lag_s = GaugeMetricFamily(PREFIX + "queue_lag_seconds",
                                  "Age of the queue's oldest unconsumed message (absent when unknown).",
                                  labels=_QUEUE_LABELS, unit="seconds")
        inflight = GaugeMetricFamily(PREFIX + "queue_inflight_messages", "Pulled but not committed, one queue.",
                                     labels=_QUEUE_LABELS)
        for name, result in rnd.groups.items():
            view = result.view
            if view is None:
                continue
            pull_known = "pull_offset" not in view.unavailable
            for p in view.progress:
                if p.lag is None or not budget.take():
                    continue
                labels = _queue_labels(name, p.queue)
                lag.add_metric(labels, max(0, p.lag))
                if p.queue in result.lag_seconds:
                    lag_s.add_metric(labels, result.lag_seconds[p.queue])
                if pull_known and p.inflight is not None:
                    inflight.add_metric(labels, p.inflight)
        yield from (lag, lag_s, inflight)

    def _finding_metrics(self, rnd: RoundResult, budget: _Budget) -> Iterator[Metric]:
        series = GaugeMetricFamily(
            PREFIX + "finding",
            "A doctor finding now (1): one series per queue the finding names, else one per finding.",
            labels=["code", "severity", "group", "topic", "broker", "queue"])
        info = GaugeMetricFamily(PREFIX + "finding_info", "A doctor finding now (1), with its title and fix.",
                                 labels=["code", "severity", "group", "title", "fix"])
        for name, result in rnd.groups.items():
            for f in result.findings:
                info.add_metric([f.code, f.severity, name, f.title, f.fix], 1)
                queues = _finding_queues(f.evidence)
                if not queues:
                    topic = f.evidence.get("topic")
                    series.add_metric([f.code, f.severity, name, str(topic) if isinstance(topic, str) else "", "",
                                       ""], 1)
                    continue
                for topic, broker, queue in queues:
                    if budget.take():
                        series.add_metric([f.code, f.severity, name, topic, broker, queue], 1)
        yield series
        yield info

    def _verdict_metrics(self, rnd: RoundResult, budget: _Budget) -> Iterator[Metric]:
        stuck = GaugeMetricFamily(
            PREFIX + "queue_stuck",
            "A queue whose stuck verdict is STALLED, ORPHANED, LAGGING or REWOUND (1), with the rule that "
            "gave it (the names of rmqctl analyze stuck).",
            labels=[*_QUEUE_LABELS, "status", "rule"])
        frozen = GaugeMetricFamily(PREFIX + "queue_frozen_since_timestamp_seconds",
                                   "Since when a stuck queue's consumer offset has not moved.",
                                   labels=_QUEUE_LABELS, unit="seconds")
        for name, result in rnd.groups.items():
            for v in result.verdicts:
                if v.status not in QUEUE_STATUSES or not budget.take():
                    continue
                labels = _queue_labels(name, v.queue)
                stuck.add_metric([*labels, v.status, v.rule], 1)
                if v.frozen_since_ms is not None:
                    frozen.add_metric(labels, v.frozen_since_ms / 1000)
        yield stuck
        yield frozen


class _Part(Collector):
    def __init__(self, collect: Callable[[], Iterator[Metric]]) -> None:
        self._collect = collect

    def describe(self) -> Iterable[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        return self._collect()


def registry_for(collector: RoundCollector) -> CollectorRegistry:
    """A registry of its own holding ``collector`` (never the library's global one)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    return registry


def exposition(registry: CollectorRegistry, accept: str | None = None) -> tuple[bytes, str]:
    """The registry's metrics in the format ``accept`` asks for: (body, content type)."""
    encoder, content_type = choose_encoder(accept or "")
    return encoder(registry), content_type


_EOF = b"# EOF\n"
#: formats (content types) the endpoint keeps encoded at most: the ones scraped last
MAX_FORMATS = 4
#: samples the encoder puts apart from the family's others (OpenMetrics' own series)
_APART = ("_created", "_gsum", "_gcount")

#: what one sample's encoded line depends on, in one flat tuple (it is kept for every sample of a
#: round): its name, value and timestamp, then its label names and their values
_SampleKey = tuple[object, ...]


def _encode_one(encoder: Callable[[CollectorRegistry], bytes], family: Metric) -> bytes:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Part(lambda: iter([family])))
    body = encoder(registry)
    return body[: -len(_EOF)] if body.endswith(_EOF) else body


class _Lines:
    """One format's encoding that keeps each sample's line from the previous encoding.

    A round's series mostly repeat the previous round's (groups that did not move): each family is
    encoded as the library encodes it — its header, then one line per sample in order — but only
    the samples not seen last time go through the encoder (all of a family's at once); the others'
    lines are the ones it wrote then. What the lines cannot be told apart for goes through the
    encoder whole. Only the last encoding's lines are kept."""

    def __init__(self, encoder: Callable[[CollectorRegistry], bytes]) -> None:
        self.encoder = encoder
        self._lines: dict[_SampleKey, bytes] = {}
        self._heads: dict[tuple[str, str, str, str], bytes] = {}

    def encode(self, families: Iterable[Metric]) -> bytes:
        kept = self._lines
        lines: dict[_SampleKey, bytes] = {}
        out: list[bytes] = []
        for family in families:
            part = self._family(family, kept, lines)
            out.append(_encode_one(self.encoder, family) if part is None else part)
        self._lines = lines
        whole = b"".join(out)
        # the encoder's end of the exposition (OpenMetrics' "# EOF"), as it writes it
        return whole + _encode_one_tail(self.encoder)

    def _family(self, family: Metric, kept: Mapping[_SampleKey, bytes],
                lines: dict[_SampleKey, bytes]) -> bytes | None:
        head_key = (family.name, family.documentation, family.type, family.unit)
        head = self._heads.get(head_key)
        if head is None:
            head = self._heads[head_key] = _encode_one(self.encoder, _empty(family))
        keys: list[_SampleKey] = []
        missing: dict[_SampleKey, Sample] = {}
        apart = {family.name + suffix for suffix in _APART}
        for sample in family.samples:
            value = sample.value
            if (sample.exemplar is not None or sample.native_histogram is not None or sample.name in apart
                    or value != value):
                return None
            labels = sample.labels
            # what the line depends on: name, value (0 and -0 apart), timestamp, label names and values
            key: _SampleKey = (sample.name, value if value else (value, math.copysign(1.0, value)),
                               sample.timestamp, *labels, *labels.values())
            keys.append(key)
            if key not in kept and key not in lines and key not in missing:
                missing[key] = sample
        fresh: dict[_SampleKey, bytes] = {}
        if missing:
            only = _empty(family)
            only.samples = list(missing.values())
            body = _encode_one(self.encoder, only)
            if not body.startswith(head):
                return None
            encoded = body[len(head):].splitlines(keepends=True)
            if len(encoded) != len(missing):
                return None
            fresh = dict(zip(missing, encoded, strict=True))
        parts = [head]
        for key in keys:
            line = fresh.get(key) or lines.get(key) or kept[key]
            lines[key] = line
            parts.append(line)
        return b"".join(parts)


def _empty(family: Metric) -> Metric:
    return Metric(family.name, family.documentation, family.type, family.unit)


def _encode_one_tail(encoder: Callable[[CollectorRegistry], bytes]) -> bytes:
    body = encoder(CollectorRegistry(auto_describe=False))
    return body if body == _EOF else b""


class CachedExposition:
    """The collector's metrics for a scrape: the round's series built once per round and encoded
    once per round and format (a scrape of thousands of groups then costs a copy), the exporter's
    own series every time.

    :meth:`warm` encodes a new round ahead of the scrapes in the formats scrapers asked for so far
    (both before the first scrape): a Prometheus server asks for one, so the round is not encoded
    in a format nobody reads; a scrape in a format not asked for before encodes it then, once.
    Only the :data:`MAX_FORMATS` formats asked for last are kept (a format's content type carries
    the version the ``Accept`` header names, which a scraper may vary at will)."""

    def __init__(self, collector: RoundCollector) -> None:
        self.collector = collector
        self._self = CollectorRegistry(auto_describe=False)
        self._self.register(_Part(collector.collect_self))
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[RoundResult | None, bytes]] = {}
        #: per format, the lines of the last encoding (a new round re-encodes only what changed)
        self._lines: dict[str, _Lines] = {}
        #: the round's metric families, built once for every format (round, families)
        self._built: tuple[RoundResult | None, list[Metric]] | None = None
        #: content type → an Accept header asking for it, for every format scraped so far
        self._asked: dict[str, str | None] = {}

    def _families(self, current: RoundResult | None) -> list[Metric]:
        if self._built is None or self._built[0] is not current:
            self._built = (current, list(self.collector.round_metrics(current)))
        return self._built[1]

    def _encoded(self, accept: str | None, current: RoundResult | None) -> tuple[bytes, str]:
        """The round's series in ``accept``'s format (under the lock)."""
        encoder, content_type = choose_encoder(accept or "")
        cached = self._cache.get(content_type)
        if cached is None or cached[0] is not current:
            lines = self._lines.get(content_type)
            if lines is None:
                lines = self._lines[content_type] = _Lines(encoder)
            cached = (current, lines.encode(self._families(current)))
            self._cache[content_type] = cached
        return cached[1], content_type

    def warm(self) -> None:
        """Encode the current round now (the exporter calls it off the event loop after publishing
        a round, so that no scrape pays for the encoding)."""
        current = self.collector.current
        with self._lock:
            asked = list(self._asked.values()) or [None, "application/openmetrics-text; version=1.0.0"]
            for accept in asked:
                self._encoded(accept, current)
            if self._asked:  # the formats encoded before the first scrape that nobody asked for
                for content_type in set(self._cache) - set(self._asked):
                    self._forget(content_type)
            self._built = None  # every format asked for is encoded: the families are not kept

    def _forget(self, content_type: str) -> None:
        """Stop keeping ``content_type`` encoded (under the lock)."""
        self._asked.pop(content_type, None)
        self._cache.pop(content_type, None)
        self._lines.pop(content_type, None)

    def render(self, accept: str | None = None) -> tuple[bytes, str]:
        head, body, content_type = self.render_parts(accept)
        return head + body, content_type

    def render_parts(self, accept: str | None = None) -> tuple[bytes, bytes, str]:
        """The exporter's own series and the round's (encoded once), to be sent one after the
        other: a scrape of megabytes copies nothing."""
        encoder, content_type = choose_encoder(accept or "")
        current = self.collector.current
        with self._lock:
            self._asked.pop(content_type, None)
            self._asked[content_type] = accept  # the last asked for, last
            while len(self._asked) > MAX_FORMATS:
                self._forget(next(iter(self._asked)))
            for unasked in set(self._cache) - set(self._asked):  # encoded before the first scrape
                if len(self._cache) >= MAX_FORMATS:
                    self._forget(unasked)
            body, _ = self._encoded(accept, current)
        head = encoder(self._self)
        if head.endswith(_EOF):  # OpenMetrics: one "# EOF", at the very end
            head = head[: -len(_EOF)]
        return head, body, content_type
