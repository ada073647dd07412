"""The exporter as a service: rounds on its own schedule, served from memory, written to files.

:func:`run_exporter` takes a round every ``interval`` seconds on a fixed cadence (a round that
overruns its slot skips the missed ticks), publishes each complete round to the metrics
collector (served at ``/metrics`` by :class:`MetricsServer`, a thread of its own, so a scrape
reads the last complete round and never waits on a broker) and, with a snapshot directory,
writes it as Parquet snapshot rows. Each round logs one line on stderr. SIGINT and SIGTERM stop
it: the round in progress is cancelled, the snapshot files are flushed, the server is closed and
the result says which signal stopped it. ``once`` takes one round and returns.

Must not import the CLI, textual or pyspark; pyarrow is imported only with a snapshot directory.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as _dt
import signal
import socket
import socketserver
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from rmqctl import errors
from rmqctl.exporter.metrics import CachedExposition, MetricOptions, RoundCollector
from rmqctl.exporter.rounds import RoundMaker, RoundResult
from rmqctl.exporter.stuck import StuckJudge
from rmqctl.source import Opened

if TYPE_CHECKING:
    from rmqctl.snapshot.export import SnapshotSink

#: groups a round reads at the same time (``--concurrency``). The requests in flight do not grow
#: with it: the back end sends at most its own window at a time (16 over the native protocol,
#: 8 through a dashboard), whatever the groups.
#: What grows is the work ready while those requests are out: with 16 groups, the round often
#: had every group at its checks or between reads and the window half empty, waiting on the
#: brokers; with 64 it stays full more often (bench/bench_exporter.py at 2,000 groups, three
#: runs of 30-40 rounds in turns with 16: the median round 4-7 % shorter).
GROUP_CONCURRENCY = 64
#: where ``--listen`` binds when given without a host
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 9464
_LOOPBACK = ("127.0.0.1", "localhost", "::1")


@dataclass(frozen=True, slots=True)
class ExporterOptions:
    interval: float = 30.0
    #: (host, port) of the metrics endpoint, or None for none
    listen: tuple[str, int] | None = None
    #: directory of Parquet snapshot files, or None
    snapshots: Path | None = None
    once: bool = False
    concurrency: int = GROUP_CONCURRENCY
    #: read back each backlog's oldest message for the lag in seconds
    lag_time: bool = True
    #: sample the tags of conflicting topics (as ``doctor`` does; ``--no-sample``)
    sample_tags: bool = True
    #: seconds of rounds the stuck verdicts look back over (``analyze stuck --window``)
    stuck_window: float = 600.0
    broker_times: bool = True
    metrics: MetricOptions = field(default_factory=MetricOptions)


@dataclass(frozen=True, slots=True)
class ExporterResult:
    rounds: int
    last: RoundResult | None
    interrupted: signal.Signals | None = None
    snapshot_files: tuple[Path, ...] = ()


def parse_listen(text: str) -> tuple[str, int]:
    """``HOST:PORT``, ``:PORT``, ``PORT`` or ``[v6]:PORT`` → (host, port); the host defaults to loopback."""
    text = text.strip()
    host, sep, port_text = text.rpartition(":")
    if not sep:
        host, port_text = "", text
    host = host.strip("[]") or DEFAULT_HOST
    try:
        port = int(port_text)
    except ValueError:
        raise errors.UsageError(f"--listen {text!r}: expected HOST:PORT, e.g. 127.0.0.1:{DEFAULT_PORT}") from None
    if not 0 <= port <= 65535:
        raise errors.UsageError(f"--listen {text!r}: the port must be 0..65535")
    return host, port


def is_loopback(host: str) -> bool:
    return host in _LOOPBACK or host.startswith("127.")


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
        pass


class _ThreadingServer(socketserver.ThreadingMixIn, WSGIServer):
    daemon_threads = True
    allow_reuse_address = True


class _ThreadingServer6(_ThreadingServer):
    address_family = socket.AF_INET6


class MetricsServer:
    """``/metrics`` over HTTP in a thread of its own, from the collector's last complete round."""

    def __init__(self, collector: RoundCollector, host: str, port: int) -> None:
        self.collector = collector
        self.exposition = CachedExposition(collector)
        server_class = _ThreadingServer6 if ":" in host else _ThreadingServer
        try:
            self._server = make_server(host, port, self._app, server_class=server_class, handler_class=_QuietHandler)
        except OSError as exc:
            raise errors.UsageError(f"cannot listen on {host}:{port} for the metrics: {exc.strerror or exc}") from None
        self.host = host
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, name="rmqctl-metrics", daemon=True)

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/metrics"

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    def _app(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path != "/metrics":
            body = b"rmqctl exporter: metrics at /metrics\n"
            start_response("200 OK" if path == "/" else "404 Not Found",
                           [("Content-Type", "text/plain; charset=utf-8")])
            return [body]
        started = time.perf_counter()
        head, body, content_type = self.exposition.render_parts(environ.get("HTTP_ACCEPT"))
        self.collector.scraped(time.perf_counter() - started)
        start_response("200 OK", [("Content-Type", content_type), ("Content-Length", str(len(head) + len(body)))])
        return [head, body]


def _stderr_line(message: str) -> None:
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


def round_line(result: RoundResult) -> str:
    """The one log line of a round."""
    at = _dt.datetime.fromtimestamp(result.taken_at, _dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    down = [b for b, s in result.brokers.items() if not s.up]
    failed = result.failed_groups
    findings = result.findings
    errors_ = sum(1 for f in findings if f.severity == "error")
    text = (f"rmqctl exporter: round {result.number} at {at}: {len(result.groups)} group(s), "
            f"{len(failed)} unreadable, {len(result.brokers)} broker(s), {len(down)} down"
            f"{' (' + ', '.join(down) + ')' if down else ''}, {len(findings)} finding(s) ({errors_} error), "
            f"{result.duration_seconds:.2f}s")
    return text


class _Stop:
    """SIGINT/SIGTERM → an event, remembering which signal came first."""

    def __init__(self) -> None:
        self.event = asyncio.Event()
        self.signal: signal.Signals | None = None

    def _on(self, sig: signal.Signals) -> None:
        if self.signal is None:
            self.signal = sig
        self.event.set()

    @contextlib.contextmanager
    def installed(self, enabled: bool) -> Iterator[None]:
        if not enabled:
            yield
            return
        loop = asyncio.get_running_loop()
        added = []
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, self._on, sig)
                added.append(sig)
            except (NotImplementedError, RuntimeError, ValueError):  # not the main thread
                pass
        try:
            yield
        finally:
            for sig in added:
                loop.remove_signal_handler(sig)


async def _until(event: asyncio.Event, work: asyncio.Future[Any]) -> bool:
    """Wait for ``work`` or ``event``; True when ``work`` finished first (else it is cancelled)."""
    waiter = asyncio.ensure_future(event.wait())
    try:
        await asyncio.wait({work, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
    if work.done():
        return True
    work.cancel()
    with contextlib.suppress(asyncio.CancelledError, errors.RmqctlError):
        await work
    return False


async def run_exporter(
    opened: Opened,
    groups: Sequence[str] | None,
    options: ExporterOptions,
    *,
    collector: RoundCollector | None = None,
    log: Callable[[str], None] = _stderr_line,
    ready: Callable[[MetricsServer], None] | None = None,
    handle_signals: bool = True,
    stop: asyncio.Event | None = None,
) -> ExporterResult:
    """Run the exporter over ``groups`` (every group, listed each round, when None) until a
    signal, ``stop``, or (``once``) one round."""
    if not options.interval > 0:
        raise errors.UsageError(f"the exporter interval must be positive, not {options.interval}")
    collector = collector or RoundCollector(options.metrics)
    maker = RoundMaker(opened.source, groups, concurrency=options.concurrency, lag_time=options.lag_time,
                       sample_tags=options.sample_tags, stuck=StuckJudge(int(options.stuck_window * 1000)),
                       own_heap=True)
    sink: SnapshotSink | None = None
    if options.snapshots is not None:
        from rmqctl.snapshot.export import SnapshotSink

        sink = SnapshotSink(opened.source, options.snapshots, broker_times=options.broker_times,
                            concurrency=options.concurrency)
    server: MetricsServer | None = None
    stopper = _Stop()
    stop_event = stop or stopper.event
    if stop is not None:
        stopper.event = stop
    rounds = 0
    last: RoundResult | None = None
    clock = opened.clock
    try:
        if options.listen is not None and not options.once:
            server = MetricsServer(collector, *options.listen)
            server.start()
            log(f"rmqctl exporter: serving {server.url} ({opened.label}), a round every {options.interval:g}s")
            if ready is not None:
                ready(server)
        with stopper.installed(handle_signals):
            start = clock.now()
            tick = 0
            while not stop_event.is_set():
                if rounds:
                    tick = max(tick + 1, int((clock.now() - start) // options.interval) + 1)
                    pause = asyncio.ensure_future(clock.sleep(max(0.0, start + tick * options.interval - clock.now())))
                    if not await _until(stop_event, pause):
                        break
                work = asyncio.ensure_future(maker.take())
                if not await _until(stop_event, work):
                    break
                try:
                    result = work.result()
                except errors.RmqctlError as exc:
                    collector.round_failed()
                    log(f"rmqctl exporter: round failed: {exc}")
                    if options.once:
                        raise
                    rounds += 1
                    continue
                if sink is not None and result.watch_round is not None:
                    await sink.add(result.watch_round)
                collector.publish(result)
                if server is not None:
                    await asyncio.to_thread(server.exposition.warm)
                last = result
                rounds += 1
                log(round_line(result))
                if options.once:
                    break
    finally:
        maker.heap.release()
        if server is not None:
            server.close()
        if sink is not None:
            sink.close()
    return ExporterResult(rounds, last, stopper.signal, tuple(sink.files) if sink is not None else ())
