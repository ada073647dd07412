"""``rmqctl emulator …``: list, show and run scenarios, serve an emulated cluster, drive it.

``scenarios``/``show``/``run`` work on the virtual clock and need no network; ``serve`` listens on
loopback (a name server, one port per broker, and an HTTP control API) until Ctrl-C; ``ctl …``
talks to a served emulator's control API with httpx. Every command is a thin wrapper around
:mod:`rmqctl.emulator`.

Must not import textual or pyspark.
"""

from __future__ import annotations

import asyncio
import gc
import json
import math
import signal
import sys
from typing import Annotated, Any

import typer

from rmqctl import errors, report
from rmqctl.cli.common import OutputOpt, Settings, console, settings
from rmqctl.cli.durations import DURATION, duration_parser
from rmqctl.cli.framework import CommandGroup
from rmqctl.cli.render import OutputFormat, Table, View, emit
from rmqctl.cli.views import queues_text, report_view, tags_text
from rmqctl.errors import ExitCode

app = typer.Typer(help="The built-in RocketMQ emulator: scenarios, runs and a served cluster.",
                  no_args_is_help=True)
ctl = typer.Typer(help="Drive a served emulator through its HTTP control API.", no_args_is_help=True,
                  cls=CommandGroup)
app.add_typer(ctl, name="ctl")

ScenarioArg = Annotated[str, typer.Argument(help="A built-in scenario name or a scenario .toml file.",
                                            show_default=False)]
UrlOpt = Annotated[str | None, typer.Option("--url", envvar="RMQCTL_EMULATOR_URL",
                                            help="Control API URL printed by 'emulator serve'.",
                                            show_default=False)]
TokenOpt = Annotated[str | None, typer.Option("--token", envvar="RMQCTL_EMULATOR_TOKEN",
                                              help="Bearer token of the control API.", show_default=False)]


def _opts(ctx: typer.Context, output: OutputFormat | None) -> Settings:
    return settings(ctx, output=output)


# ---------------------------------------------------------------------------------------------
# Scenarios


@app.command("scenarios")
def scenarios(ctx: typer.Context, output: OutputOpt = None) -> None:
    """The built-in scenarios, each with a one-line description."""
    from rmqctl.emulator.scenario import builtin_scenarios

    opts = _opts(ctx, output)
    doc = report.scenarios(builtin_scenarios())
    emit(View(doc, [Table(list(report.SCENARIO_COLUMNS), doc["scenarios"], flexible=("description",))],
              records=report.scenarios_rows(doc)), opts.output)


@app.command("show")
def show(ctx: typer.Context, scenario: ScenarioArg, output: OutputOpt = None) -> None:
    """Print a scenario's TOML (copy a built-in to start your own), or its parsed form with -o json."""
    from rmqctl.emulator.scenario import load_scenario

    opts = _opts(ctx, output)
    spec = load_scenario(scenario)
    if opts.output is OutputFormat.table and spec.text:
        sys.stdout.write(spec.text if spec.text.endswith("\n") else spec.text + "\n")
        return
    doc = report.scenario(spec)
    emit(View(doc, [Table(["group", "client_id", "subscriptions", "start", "stop"], doc["consumers"],
                          flexible=("subscriptions",))], records=report.scenario_rows(doc)), opts.output)


@app.command("run")
def run(
    ctx: typer.Context,
    scenario: ScenarioArg,
    at: Annotated[float | None, typer.Option("--at", parser=duration_parser(at_least=0), metavar=DURATION,
                                             help="Stop this far into the scenario (seconds or 90s, 5m …; "
                                             "default: the scenario's duration).", show_default=False)] = None,
    output: OutputOpt = None,
) -> None:
    """Run a scenario to its end on the virtual clock and report who received what."""
    from rmqctl.emulator.scenario import load_scenario
    from rmqctl.emulator.world import run_scenario

    opts = _opts(ctx, output)
    doc = report.emulator_run(run_scenario(load_scenario(scenario), at).report())
    emit(report_view(doc), opts.output)


# ---------------------------------------------------------------------------------------------
# Serving


@app.command("serve")
def serve(
    ctx: typer.Context,
    scenario: Annotated[str, typer.Option("--scenario", "-s", help="Built-in scenario name or .toml file.",
                                          show_default=False)],
    speed: Annotated[float, typer.Option("--speed", min=0.001, help="Run the real-time clock N times faster.")] = 1.0,
    clock: Annotated[str, typer.Option("--clock", help="real (wall clock) or virtual (moves only on "
                                       "'ctl advance').")] = "real",
    namesrv_port: Annotated[int, typer.Option("--namesrv-port", min=0, max=65535,
                                              help="Name server port (0: a free one).")] = 0,
    control_port: Annotated[int, typer.Option("--control-port", min=0, max=65535,
                                              help="Control API port (0: a free one).")] = 0,
    bind: Annotated[str, typer.Option("--bind", help="Address to listen on.")] = "127.0.0.1",
    token: TokenOpt = None,
    at: Annotated[float, typer.Option("--at", parser=duration_parser(above=None), metavar=DURATION,
                                      help="Virtual clock: start this far into the scenario.")] = 0.0,
    idle_timeout: Annotated[float, typer.Option(
        "--idle-timeout", parser=duration_parser(above=None), metavar=DURATION,
        help="Close a remoting connection silent (or not reading replies) this long.")] = 120.0,
    max_connections: Annotated[int, typer.Option(
        "--max-connections", help="Open connections per port; the next one is closed at once.")] = 1024,
    max_frame_bytes: Annotated[int, typer.Option(
        "--max-frame-bytes", help="Largest frame accepted (bounds what one connection buffers).")] = 4 * 1024 * 1024
    + 64 * 1024,
    write_buffer_bytes: Annotated[int, typer.Option(
        "--write-buffer-bytes", help="Unread reply bytes per connection before its requests wait.")] = 1024 * 1024,
    memory_bytes: Annotated[int, typer.Option(
        "--memory-bytes", help="Unfinished frames plus unread replies over all connections; above it "
        "clients that do not read are closed first.")] = 256 * 1024 * 1024,
    request_timeout: Annotated[float, typer.Option(
        "--request-timeout", parser=duration_parser(above=None), metavar=DURATION,
        help="Time a control-API client has to send one request.")] = 10.0,
    output: OutputOpt = None,
) -> None:
    """Serve a scenario on real sockets until Ctrl-C: point mqadmin or rmqctl -n at it."""
    from rmqctl.emulator.registry import ServedEmulator, register, unregister
    from rmqctl.emulator.scenario import load_scenario
    from rmqctl.emulator.serve import Served, ServeOptions, serve_emulator
    from rmqctl.emulator.server import ServerLimits

    opts = _opts(ctx, output)
    if clock not in ("real", "virtual"):
        raise errors.UsageError(f"--clock must be 'real' or 'virtual', not {clock!r}")
    spec = load_scenario(scenario)
    for name, value in (("--speed", speed), ("--at", at), ("--request-timeout", request_timeout)):
        if not math.isfinite(value) or (value <= 0 and name != "--at"):
            raise errors.UsageError(f"{name} must be a finite number > 0, not {value:g}")
    limits = ServerLimits(idle_timeout=idle_timeout, max_connections=max_connections,
                          max_frame_bytes=max_frame_bytes, write_buffer_bytes=write_buffer_bytes,
                          memory_bytes=memory_bytes)
    options = ServeOptions(clock=clock, speed=speed, bind=bind, namesrv_port=namesrv_port,
                           control_port=control_port, token=token, at=at, limits=limits,
                           request_timeout=request_timeout, own_heap=True)
    interrupted: dict[str, int | None] = {"signal": None}
    noted: list[ServedEmulator | None] = []

    def ready(served: Served) -> None:
        # noted so that 'emulator ctl' and 'rmqctl tui' find this server without --url
        noted.append(register(served.control, served.scenario, served.namesrv))
        # This process only serves now: keep the cyclic GC from rescanning the whole built world
        # on every collection (it would add pauses to admin requests on large scenarios).
        gc.collect()
        gc.freeze()
        if opts.output is OutputFormat.json or opts.output is OutputFormat.jsonl:
            sys.stdout.write(json.dumps(report.served(served)) + "\n")
        else:
            sys.stdout.write(f"namesrv {served.namesrv}\ncontrol {served.control}\n")
            for name, addr in served.brokers.items():
                sys.stdout.write(f"broker  {name} {addr}\n")
        sys.stdout.flush()
        console.stream.write(
            f"emulator '{served.scenario}' serving ({served.clock} clock"
            + (f", x{served.speed:g}" if served.clock == "real" else "")
            + f"); export NAMESRV_ADDR={served.namesrv}; Ctrl-C to stop\n")
        console.stream.flush()

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()

        def on_signal(signum: int) -> None:
            interrupted["signal"] = signum
            stop.set()

        for signum in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(signum, on_signal, signum)
            except (NotImplementedError, RuntimeError):
                pass
        await serve_emulator(spec, options, stop=stop, ready=ready)

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        interrupted["signal"] = signal.SIGINT
    finally:
        for entry in noted:
            unregister(entry)
    if interrupted["signal"] == signal.SIGINT:
        console.stream.write("emulator stopped\n")
        raise typer.Exit(int(ExitCode.INTERRUPTED))


# ---------------------------------------------------------------------------------------------
# Control API client


def _served_url() -> str:
    """The only served emulator's control URL; several running need ``--url``."""
    from rmqctl.emulator.registry import live_emulators

    running = live_emulators()
    if not running:
        raise errors.UsageError("no served emulator found and no control API URL given",
                                hint="start one with 'rmqctl emulator serve', or pass --url / set RMQCTL_EMULATOR_URL")
    if len(running) > 1:
        listed = ", ".join(f"{e.url} ({e.scenario})" for e in running)
        raise errors.UsageError(f"{len(running)} served emulators are running: {listed}",
                                hint="choose one with --url (or RMQCTL_EMULATOR_URL)")
    return running[0].url


def _call(url: str | None, token: str | None, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    from rmqctl.emulator.control_client import HttpControl

    where = url or _served_url()

    async def call() -> Any:
        control = HttpControl(where, token=token, timeout=30.0)
        try:
            return await control.request(method, path, body)
        finally:
            await control.close()

    return asyncio.run(call())


def _ctl(ctx: typer.Context, output: OutputFormat | None, url: str | None, token: str | None, method: str,
         path: str, body: dict[str, Any] | None, view: Any) -> None:
    opts = _opts(ctx, output)
    doc = _call(url, token, method, path, body)
    emit(view(doc), opts.output)


def _clients_view(doc: dict[str, Any]) -> View:
    rows = [
        {"client_id": c["key"], "group": c["group"], "running": c["running"],
         "subscriptions": " ".join(f"{t}={e}" for t, e in c["subscriptions"].items()),
         "queues": queues_text(c["queues"]), "received": tags_text(c["received_by_tag"])}
        for c in doc["clients"]
    ]
    document = report.clients(doc)
    return View(document, [Table(["client_id", "group", "running", "subscriptions", "queues", "received"], rows,
                                 flexible=("queues", "subscriptions"))],
                records=report.clients_rows(document))


def _doc_view(doc: Any) -> View:
    document = report.control_result(doc)
    rows = [{"key": k, "value": json.dumps(v) if isinstance(v, (dict, list)) else v}
            for k, v in document.items() if k != "errors"]
    return View(document, [Table(["key", "value"], rows, flexible=("value",))],
                records=report.control_result_rows(document))


@ctl.command("clients")
def ctl_clients(ctx: typer.Context, url: UrlOpt = None, token: TokenOpt = None,
                output: OutputOpt = None) -> None:
    """Every simulated consumer: group, subscriptions, queues held, messages received."""
    _ctl(ctx, output, url, token, "GET", "/v1/clients", None, _clients_view)


@ctl.command("start-consumer")
def ctl_start_consumer(
    ctx: typer.Context,
    group: Annotated[str, typer.Option("--group", "-g", help="Consumer group.", show_default=False)],
    topic: Annotated[str, typer.Option("--topic", "-t", help="Topic to subscribe.", show_default=False)],
    expr: Annotated[str, typer.Option("--expr", "-e", help="Tag expression, e.g. 'TagA || TagB'.")] = "*",
    client_id: Annotated[str | None, typer.Option("--client-id", help="Client id (default: Java's form).",
                                                  show_default=False)] = None,
    strategy: Annotated[str, typer.Option("--strategy", help="Allocation strategy (Java getName()).")] = "AVG",
    broadcasting: Annotated[bool, typer.Option("--broadcasting", help="BROADCASTING instead of CLUSTERING.")] = False,
    url: UrlOpt = None,
    token: TokenOpt = None,
    output: OutputOpt = None,
) -> None:
    """Start a simulated push consumer now."""
    body = {"group": group, "topic": topic, "expr": expr, "client_id": client_id, "strategy": strategy.upper(),
            "message_model": "BROADCASTING" if broadcasting else "CLUSTERING"}
    _ctl(ctx, output, url, token, "POST", "/v1/consumers", body, _doc_view)


@ctl.command("stop-consumer")
def ctl_stop_consumer(
    ctx: typer.Context,
    client_id: Annotated[str, typer.Argument(help="Client id of a running simulated consumer.", show_default=False)],
    kill: Annotated[bool, typer.Option(
        "--kill", help="Die without unregistering (brokers see the socket close).")] = False,
    url: UrlOpt = None,
    token: TokenOpt = None,
    output: OutputOpt = None,
) -> None:
    """Shut a simulated consumer down (persists offsets and unregisters, like shutdown())."""
    _ctl(ctx, output, url, token, "POST", "/v1/consumers/stop", {"client_id": client_id, "kill": kill}, _doc_view)


@ctl.command("produce")
def ctl_produce(
    ctx: typer.Context,
    topic: Annotated[str, typer.Option("--topic", "-t", help="Topic.", show_default=False)],
    tag: Annotated[str | None, typer.Option("--tag", help="Message tag (none: no tag).", show_default=False)] = None,
    count: Annotated[int, typer.Option("--count", "-c", min=1, help="How many messages.")] = 1,
    queue: Annotated[int | None, typer.Option("--queue", min=0, help="Fixed queue id (default round robin).",
                                              show_default=False)] = None,
    broker: Annotated[str | None, typer.Option("--broker", help="Broker of --queue.", show_default=False)] = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
    output: OutputOpt = None,
) -> None:
    """Send tagged messages (round robin over writable queues, like DefaultMQProducer)."""
    body = {"topic": topic, "tag": tag, "count": count, "queue": queue, "broker": broker}

    def view(doc: dict[str, Any]) -> View:
        document = report.produced(doc)
        return View(document, [Table(list(report.MESSAGE_COLUMNS), document.get("messages", []),
                                     title=f"{doc['sent']} sent")],
                    records=report.produced_rows(document))

    _ctl(ctx, output, url, token, "POST", "/v1/produce", body, view)


@ctl.command("advance")
def ctl_advance(
    ctx: typer.Context,
    seconds: Annotated[float, typer.Argument(parser=duration_parser(at_least=0), metavar=DURATION,
                                             help="How far to move the virtual clock (30, 30s, 5m …).",
                                             show_default=False)],
    url: UrlOpt = None,
    token: TokenOpt = None,
    output: OutputOpt = None,
) -> None:
    """Move the virtual clock forward (only for 'serve --clock virtual')."""
    _ctl(ctx, output, url, token, "POST", "/v1/advance", {"seconds": seconds}, _doc_view)


@ctl.command("state")
def ctl_state(ctx: typer.Context, url: UrlOpt = None, token: TokenOpt = None,
              output: OutputOpt = None) -> None:
    """The emulator's full state (clock, brokers with their topics, offsets and consumer tables,
    clients, run report) as JSON; -o jsonl or csv give one row per client."""
    opts = _opts(ctx, output)
    doc = _call(url, token, "GET", "/v1/state", None)
    document = report.state(doc)
    fmt = OutputFormat.json if opts.output is OutputFormat.table else opts.output
    emit(View(document, records=report.state_rows(document)), fmt)

