"""Options shared by every command, defined once, and the runner that executes a command.

Every option here works both before the command group (``rmqctl -n h:9876 group list``) and
after the command (``rmqctl group list -n h:9876``, mqadmin's habit); the later one wins.
:func:`execute` opens the source (a cluster or the embedded emulator), runs the command's
coroutine, renders its :class:`~rmqctl.cli.render.View`, reports per-broker errors and maps
every error to its documented exit code in one place.

Must not import textual or pyspark.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import logging
import math
import sys
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from typing import Annotated, Any, NoReturn

import typer

from rmqctl import errors
from rmqctl.cli.render import Console, OutputFormat, View, emit
from rmqctl.config import resolve, timeout_problem
from rmqctl.errors import ExitCode
from rmqctl.remoting.admin import AdminClient, parse_namesrv
from rmqctl.source import ClusterSource, RemotingSource

NamesrvOpt = Annotated[
    str | None,
    typer.Option("--namesrv", "-n", help="Name servers, 'host:9876;host2:9876' (env NAMESRV_ADDR).",
                 show_default=False),
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
    problem = None if value is None else timeout_problem(value)
    if problem:
        fail(errors.UsageError(f"--timeout {problem}"))
    return value


TimeoutOpt = Annotated[
    float | None,
    typer.Option("--timeout", help="Deadline of each request in seconds, covering connect, send, "
                 "receive and parse (default 5).", callback=_check_timeout, show_default=False),
]
EmulatorOpt = Annotated[
    str | None,
    typer.Option("--emulator", help="Run against the built-in emulator: a scenario name or TOML file.",
                 show_default=False),
]
def _check_at(value: float | None) -> float | None:
    if value is not None and not (math.isfinite(value) and value >= 0):
        fail(errors.UsageError(f"--at must be a finite number of seconds >= 0, not {value:g}"))
    return value


AtOpt = Annotated[
    float | None,
    typer.Option("--at", help="With --emulator: advance the scenario to this many seconds.",
                 callback=_check_at, show_default=False),
]


@dataclass(frozen=True)
class Settings:
    namesrv: str | None = None
    context: str | None = None
    output: OutputFormat = OutputFormat.table
    timeout: float | None = None
    debug: bool = False
    emulator: str | None = None
    at: float | None = None

    def merged(self, **overrides: Any) -> Settings:
        return replace(self, **{k: v for k, v in overrides.items() if v is not None})


def settings(ctx: typer.Context, **overrides: Any) -> Settings:
    base = ctx.find_object(Settings) or Settings()
    return base.merged(**overrides)


_SHARED_OPTIONS: dict[str, Any] = {
    "namesrv": NamesrvOpt, "context": ContextOpt, "output": OutputOpt, "timeout": TimeoutOpt,
}


def cluster_options(command: Callable[..., None]) -> Callable[..., None]:
    """Give a command the shared ``-n``/``--context``/``-o``/``--timeout`` options.

    The command declares ``ctx: typer.Context`` and ``opts: Settings`` instead of the four options;
    it receives the global settings merged with whatever was given after the command.
    """
    signature = inspect.signature(command, eval_str=True)
    params = [p for p in signature.parameters.values() if p.name != "opts"]
    params += [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=annotation)
        for name, annotation in _SHARED_OPTIONS.items()
    ]

    @functools.wraps(command)
    def wrapper(**kwargs: Any) -> None:
        overrides = {name: kwargs.pop(name, None) for name in _SHARED_OPTIONS}
        command(**kwargs, opts=settings(kwargs["ctx"], **overrides))

    wrapper.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in params}
    return wrapper


console = Console()


def fail(error: errors.RmqctlError, debug: bool = False) -> NoReturn:
    if debug:
        traceback.print_exception(error, file=sys.stderr)
        if isinstance(error, errors.ProtocolError) and error.raw:
            sys.stderr.write(f"raw bytes: {error.raw[:2048]!r}\n")
    console.error(error.message, error.hint)
    raise typer.Exit(int(error.exit_code))


@contextlib.asynccontextmanager
async def open_source(opts: Settings) -> AsyncIterator[ClusterSource]:
    """The source a command reads: the embedded emulator or a cluster's name servers."""
    if opts.emulator:
        from rmqctl.emulator.embedded import embedded_source

        async with embedded_source(opts.emulator, at=opts.at, timeout=opts.timeout) as source:
            yield source
        return
    target = resolve(namesrv=opts.namesrv, context=opts.context, timeout=opts.timeout)
    admin = AdminClient(
        parse_namesrv(target.namesrv), timeout=target.timeout, credentials=target.credentials
    )
    source = RemotingSource(admin)
    try:
        yield source
    finally:
        await source.close()


CommandResult = View | tuple[View, Mapping[str, str]]


def execute(
    opts: Settings, command: Callable[[ClusterSource], Awaitable[CommandResult]]
) -> None:
    """Run one command end to end and exit with the documented code."""
    if opts.debug:
        logging.basicConfig(level=logging.DEBUG, stream=sys.stderr)

    async def main() -> CommandResult:
        async with open_source(opts) as source:
            return await command(source)

    try:
        result = asyncio.run(main())
    except errors.RmqctlError as exc:
        fail(exc, opts.debug)
    except KeyboardInterrupt:
        console.error("interrupted")
        raise typer.Exit(int(ExitCode.INTERRUPTED)) from None
    view, failures = result if isinstance(result, tuple) else (result, {})
    emit(view, opts.output)
    if failures:
        for name, message in failures.items():
            console.error(f"{name}: {message}")
        console.error(f"partial result: {len(failures)} source(s) failed; rows above are incomplete")
        raise typer.Exit(int(ExitCode.PARTIAL))
