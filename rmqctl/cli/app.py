"""The ``rmqctl`` command: global options, and every command group registered by name.

Command modules are imported only when their command runs (or when help or the completion
generator asks for them): :data:`COMMANDS` maps each command's name to ``module:attribute``, a
``typer.Typer`` (a command group) or a plain function (a single command). Registering a new command
is one line there. How that loading works, and everything else asked of Typer beyond its plain
API, is in :mod:`rmqctl.cli.framework`. Importing this module loads typer and the shared options,
nothing of the core that talks to a cluster.

Must not import textual or pyspark, nor any command module at module level.
"""

from __future__ import annotations

import logging
import sys
from typing import Annotated

import typer

from rmqctl import __version__, errors
from rmqctl.cli import start_up_done
from rmqctl.cli.common import (
    DEFAULT_WATCH_SECONDS,
    WATCH_OPTIONS,
    AtOpt,
    ContextOpt,
    DashboardOpt,
    EmulatorOpt,
    NamesrvOpt,
    OutputOpt,
    ProxyOpt,
    Settings,
    TimeoutOpt,
    TlsOpt,
    console,
    report_error,
)
from rmqctl.cli.framework import LazyGroup
from rmqctl.cli.render import OutputFormat
from rmqctl.durations import duration_seconds
from rmqctl.errors import ExitCode

#: Command name -> ``module:attribute`` (a ``typer.Typer`` group or a command function), in help order.
COMMANDS: dict[str, str] = {
    "doctor": "rmqctl.cli.doctor_cmd:doctor",
    "demo": "rmqctl.cli.demo_cmd:demo",
    "tui": "rmqctl.cli.tui_cmd:tui",
    "cluster": "rmqctl.cli.cluster:app",
    "topic": "rmqctl.cli.topic:app",
    "group": "rmqctl.cli.group:app",
    "msg": "rmqctl.cli.msg_cmd:app",
    "dlq": "rmqctl.cli.dlq_cmd:app",
    "config": "rmqctl.cli.config_cmd:app",
    "rebalance": "rmqctl.cli.rebalance_cmd:app",
    "emulator": "rmqctl.cli.emulator_cmd:app",
    "snapshot": "rmqctl.cli.snapshot_cmd:app",
    "analyze": "rmqctl.cli.analyze_cmd:app",
    "exporter": "rmqctl.cli.exporter_cmd:exporter",
    "completion": "rmqctl.cli.completion:completion",
}


class RootGroup(LazyGroup):
    """The ``rmqctl`` command group: runs a command and turns what it raises into an exit code.

    Every :class:`~rmqctl.errors.RmqctlError` is reported once here, with its documented exit
    code, and so is every mistake on the command line; Ctrl-C anywhere in a command exits 130.
    Commands simply raise.
    """

    lazy_commands = COMMANDS
    optional_values = dict.fromkeys(WATCH_OPTIONS, DEFAULT_WATCH_SECONDS)

    def is_optional_value(self, word: str) -> bool:
        try:
            duration_seconds(word)
        except ValueError:
            return False
        return True

    def report(self, message: str, hint: str | None) -> None:
        console.error(message, hint)

    def command_loaded(self) -> None:
        start_up_done()

    def command_failed(self, ctx: typer.Context, exc: BaseException) -> None:
        if isinstance(exc, errors.RmqctlError):
            opts = ctx.find_object(Settings) or Settings()
            report_error(exc, opts.debug)
            raise typer.Exit(int(exc.exit_code)) from None
        if isinstance(exc, KeyboardInterrupt):
            console.error("interrupted")
            raise typer.Exit(int(ExitCode.INTERRUPTED)) from None


app = typer.Typer(
    name="rmqctl",
    help="See, explain and emulate Apache RocketMQ consumer groups.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    cls=RootGroup,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"rmqctl {__version__}")
        raise typer.Exit()


@app.callback()
def main_callback(
    ctx: typer.Context,
    namesrv: NamesrvOpt = None,
    context: ContextOpt = None,
    output: OutputOpt = None,
    timeout: TimeoutOpt = None,
    emulator: EmulatorOpt = None,
    at: AtOpt = None,
    dashboard: DashboardOpt = None,
    proxy: ProxyOpt = None,
    tls: TlsOpt = None,
    debug: Annotated[bool, typer.Option("--debug", help="Tracebacks and wire logs on stderr.")] = False,
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    """Global options apply to every command; the same options after a command override them."""
    if debug:
        logging.basicConfig(level=logging.DEBUG, stream=sys.stderr)
    ctx.obj = Settings(
        namesrv=namesrv,
        context=context,
        output=output or OutputFormat.table,
        timeout=timeout,
        debug=debug,
        emulator=emulator,
        at=at,
        dashboard=dashboard,
        proxy=proxy,
        tls=tls or None,
    )


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:  # while the command line itself is parsed
        sys.stderr.write("rmqctl: error: interrupted\n")
        sys.exit(int(ExitCode.INTERRUPTED))


if __name__ == "__main__":
    main()
