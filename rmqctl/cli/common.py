"""Options shared by every command, defined once, and the runner that executes a command.

Every option here works both before the command group (``rmqctl -n h:9876 group list``) and
after the command (``rmqctl group list -n h:9876``, mqadmin's habit); the later one wins.
:func:`execute` opens the source (through :func:`rmqctl.connect.open_source`), runs the
command's coroutine, renders its :class:`~rmqctl.cli.render.View` and reports per-broker errors;
:func:`report_error` shows an error, the one way every front-end error is shown.

Must not import textual or pyspark.
"""

from __future__ import annotations

import contextlib
import math
import sys
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from rmqctl import errors
from rmqctl.cli.durations import DURATION, duration_parser
from rmqctl.cli.framework import with_shared_options
from rmqctl.cli.render import Console, OutputFormat, TableOptions, View, emit
from rmqctl.errors import ExitCode
from rmqctl.records import dataclass

if TYPE_CHECKING:  # the wire client loads with the first command that needs it, not with --help
    from rmqctl.connect import Target
    from rmqctl.source import ClusterSource

def _check_namesrv(value: str | None) -> str | None:
    # an empty -n (a runbook's unset variable) must not fall through to the current context
    if value is not None and not value.strip(" ;"):
        reject(errors.UsageError("-n/--namesrv is empty: give host:port (or leave the option out)"))
    return value


NamesrvOpt = Annotated[
    str | None,
    typer.Option("--namesrv", "-n", help="Name servers, 'host:9876;host2:9876' (env NAMESRV_ADDR).",
                 callback=_check_namesrv, show_default=False),
]
ContextOpt = Annotated[
    str | None, typer.Option("--context", help="Named context from the config file.", show_default=False)
]
OutputOpt = Annotated[
    OutputFormat | None,
    typer.Option("--output", "-o", help="Output format: table, json, jsonl or csv.",
                 case_sensitive=False, show_default=False),
]
def _check_timeout(value: float | None) -> float | None:
    from rmqctl.config import timeout_problem

    problem = None if value is None else timeout_problem(value)
    if problem:
        reject(errors.UsageError(f"--timeout {problem}"))
    return value


TimeoutOpt = Annotated[
    float | None,
    typer.Option("--timeout", help="Deadline of each request (seconds or 5s, 1m …), covering connect, "
                 "send, receive and parse (default 5s).", parser=duration_parser(above=None),
                 metavar=DURATION, callback=_check_timeout, show_default=False),
]
EmulatorOpt = Annotated[
    str | None,
    typer.Option("--emulator", help="Run against the built-in emulator: a scenario name or TOML file.",
                 show_default=False),
]
ProxyOpt = Annotated[
    str | None,
    typer.Option("--proxy", help="Also read the clients of these 5.x proxies' remoting ports, "
                 "'host:8080;host2:8080' (gRPC clients are listed by proxies only).", show_default=False),
]
TlsOpt = Annotated[
    bool | None,
    typer.Option("--tls", help="Speak TLS to the name servers, brokers and proxies (CA, client certificate "
                 "and checks from the context's tls_* keys; also RMQCTL_TLS=1).", show_default=False),
]
DashboardOpt = Annotated[
    str | None,
    typer.Option("--dashboard", help="Read the cluster through this rocketmq-dashboard URL "
                 "(login from RMQCTL_DASHBOARD_USER/RMQCTL_DASHBOARD_PASSWORD or the context).",
                 show_default=False),
]


def _check_at(value: float | None) -> float | None:
    if value is not None and not (math.isfinite(value) and value >= 0):
        reject(errors.UsageError(f"--at must be a finite number of seconds >= 0, not {value:g}"))
    return value


AtOpt = Annotated[
    float | None,
    typer.Option("--at", help="With --emulator: advance the scenario this far (seconds or 90s, 5m …).",
                 parser=duration_parser(above=None), metavar=DURATION, callback=_check_at, show_default=False),
]
NoHeadersOpt = Annotated[
    bool | None,
    typer.Option("--no-headers", help="Rows only: no titles, header line or footer (csv: no header).",
                 show_default=False),
]
TableKindOpt = Annotated[
    str | None,
    typer.Option("--table", help="With -o csv: which kind of row to print (default the first; "
                 "jsonl prints every kind).", show_default=False),
]
SortOpt = Annotated[
    str | None,
    typer.Option("--sort", help="Sort rows by this column (key or header, any case); -COLUMN sorts "
                 "descending.", show_default=False),
]
MatchOpt = Annotated[
    str | None,
    typer.Option("--match", help="Only rows whose name matches this regular expression.", show_default=False),
]


@dataclass(frozen=True)
class Settings:
    """The root options every command of this invocation shares."""

    namesrv: str | None = None
    context: str | None = None
    output: OutputFormat = OutputFormat.table
    timeout: float | None = None
    debug: bool = False
    emulator: str | None = None
    at: float | None = None
    dashboard: str | None = None
    proxy: str | None = None
    tls: bool | None = None
    no_headers: bool = False
    table: str | None = None

    @property
    def table_options(self) -> TableOptions:
        return TableOptions(no_headers=self.no_headers, kind=self.table)

    def merged(self, **overrides: Any) -> Settings:
        return replace(self, **{k: v for k, v in overrides.items() if v is not None})


def settings(ctx: typer.Context, **overrides: Any) -> Settings:
    base = ctx.find_object(Settings) or Settings()
    return base.merged(**overrides)


_SHARED_OPTIONS: dict[str, Any] = {
    "namesrv": NamesrvOpt, "context": ContextOpt, "output": OutputOpt, "timeout": TimeoutOpt,
    "dashboard": DashboardOpt, "proxy": ProxyOpt, "emulator": EmulatorOpt, "at": AtOpt, "no_headers": NoHeadersOpt,
    "table": TableKindOpt, "tls": TlsOpt,
}


def _merged_settings(ctx: typer.Context, values: dict[str, Any]) -> Settings:
    if not values["no_headers"]:
        values["no_headers"] = None  # a flag not given must not undo a global --no-headers
    if not values["tls"]:
        values["tls"] = None  # nor a global --tls
    return settings(ctx, **values)


def cluster_options(command: Callable[..., None]) -> Callable[..., None]:
    """Give a command the shared cluster and output options (``-n``, ``--context``, ``--dashboard``,
    ``--emulator``, ``--at``, ``-o``, ``--timeout``, ``--no-headers``, ``--table``).

    The command declares ``ctx: typer.Context`` and ``opts: Settings`` instead of the options;
    it receives the global settings merged with whatever was given after the command.
    """
    return with_shared_options(command, _SHARED_OPTIONS, _merged_settings, into="opts")


console = Console()


def report_error(error: errors.RmqctlError, debug: bool = False) -> None:
    """The one place an error is shown: one line (and a hint) on stderr; the traceback with --debug."""
    if debug:
        traceback.print_exception(error, file=sys.stderr)
        if isinstance(error, errors.ProtocolError) and error.raw:
            sys.stderr.write(f"raw bytes: {error.raw[:2048]!r}\n")
    console.error(error.message, error.hint)


def reject(error: errors.UsageError) -> NoReturn:
    """Refuse an option's value from its callback: callbacks of options given before the command
    run while the command line is parsed, before :class:`RootGroup` can report anything."""
    report_error(error)
    raise typer.Exit(int(error.exit_code))


#: ``--watch`` takes an optional value (kubectl's ``-w`` habit): a bare ``--watch``/``-w`` (one
#: not followed by a duration) means this many seconds (:func:`rmqctl.cli.framework.with_optional_values`)
WATCH_OPTIONS = ("--watch", "-w")
DEFAULT_WATCH_SECONDS = "2"


def target(opts: Settings) -> Target:
    """What the command's options name, for :func:`rmqctl.connect.open_source`."""
    from rmqctl.connect import Target

    if opts.emulator is None and opts.at is not None:
        raise errors.UsageError("--at needs --emulator SCENARIO (it advances the emulated scenario)")
    return Target(namesrv=opts.namesrv, context=opts.context, timeout=opts.timeout,
                  emulator=opts.emulator, at=opts.at, dashboard=opts.dashboard, proxy=opts.proxy,
                  tls=opts.tls)


@contextlib.asynccontextmanager
async def progress_after(delay: float, label: str) -> AsyncIterator[None]:
    """A spinner with the elapsed time on stderr when the work takes longer than ``delay``
    seconds and stderr is a terminal; nothing otherwise (pipes, tests, scripts)."""
    if not (hasattr(sys.stderr, "isatty") and sys.stderr.isatty()):
        yield
        return
    import asyncio

    from rich.console import Console as RichConsole
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    progress = Progress(SpinnerColumn(), TextColumn(f"reading {label}"), TimeElapsedColumn(),
                        console=RichConsole(file=sys.stderr), transient=True)

    async def start_later() -> None:
        await asyncio.sleep(delay)
        progress.add_task("work", total=None)
        progress.start()

    starter = asyncio.create_task(start_later())
    try:
        yield
    finally:
        starter.cancel()
        progress.stop()


Failures = Mapping[str, errors.RmqctlError]
CommandResult = View | tuple[View, Failures]


def execute(
    opts: Settings, command: Callable[[ClusterSource], Awaitable[CommandResult]]
) -> None:
    """Run one command against its source, render the result, exit 5 when it is partial.

    The group and topic names the command reads are noted in the names cache (shell completion).
    """
    import asyncio

    from rmqctl.connect import open_source
    from rmqctl.namecache import RecordingSource, key_for

    async def main() -> CommandResult:
        async with open_source(target(opts)) as opened, progress_after(1.0, opened.label):
            key = key_for(namesrv=opts.namesrv, context=opts.context, emulator=opts.emulator)
            return await command(RecordingSource(opened.source, key) if key else opened.source)

    result = asyncio.run(main())
    view, failures = result if isinstance(result, tuple) else (result, {})
    emit(view, opts.output, options=opts.table_options)
    if failures:
        for name, message in failures.items():
            console.error(f"{name}: {message}")
        console.error(f"partial result: {len(failures)} source(s) failed; rows above are incomplete")
        raise typer.Exit(int(ExitCode.PARTIAL))
