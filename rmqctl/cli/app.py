"""The ``rmqctl`` command: global options, and every command group registered by name.

Command modules are imported only when their command runs (or when help or the completion
generator asks for them): :data:`COMMANDS` maps each command's name to ``module:attribute``, a
``typer.Typer`` (a command group) or a plain function (a single command). Registering a new command
is one line there. Importing this module loads typer and the shared options, nothing of the core
that talks to a cluster.

Must not import textual or pyspark, nor any command module at module level.
"""

from __future__ import annotations

import copy
import importlib
import logging
import sys
from typing import Annotated, Any

import typer
import typer.main

from rmqctl import __version__
from rmqctl.cli.common import (
    AtOpt,
    ContextOpt,
    DashboardOpt,
    EmulatorOpt,
    NamesrvOpt,
    OutputOpt,
    RootGroup,
    Settings,
    TimeoutOpt,
)
from rmqctl.cli.render import OutputFormat
from rmqctl.errors import ExitCode

#: Command name -> ``module:attribute`` (a ``typer.Typer`` group or a command function), in help order.
COMMANDS: dict[str, str] = {
    "doctor": "rmqctl.cli.doctor_cmd:doctor",
    "demo": "rmqctl.cli.demo_cmd:demo",
    "tui": "rmqctl.cli.tui_cmd:tui",
    "cluster": "rmqctl.cli.cluster:app",
    "topic": "rmqctl.cli.topic:app",
    "group": "rmqctl.cli.group:app",
    "config": "rmqctl.cli.config_cmd:app",
    "rebalance": "rmqctl.cli.rebalance_cmd:app",
    "emulator": "rmqctl.cli.emulator_cmd:app",
    "snapshot": "rmqctl.cli.snapshot_cmd:app",
    "analyze": "rmqctl.cli.analyze_cmd:app",
    "completion": "rmqctl.cli.completion:completion",
}


def load_command(name: str, spec: str, only: str | None = None) -> Any:
    """The click command for one :data:`COMMANDS` entry, built as ``add_typer``/``command`` would.

    ``only``: when the entry is a command group and this names one of its commands, the group is
    built with that command alone (what running it needs; building every command's parameters
    costs a few milliseconds of each run)."""
    module_name, _, attribute = spec.partition(":")
    target = getattr(importlib.import_module(module_name), attribute)
    holder = typer.Typer(add_completion=False)
    if isinstance(target, typer.Typer):
        picked = [c for c in target.registered_commands if only is not None and c.name == only]
        if picked:
            target = copy.copy(target)
            target.registered_commands, target.registered_groups = picked, []
        holder.add_typer(target, name=name)
    else:
        holder.command(name)(target)
    command = typer.main.get_command(holder)
    commands = getattr(command, "commands", None)
    return commands[name] if commands is not None and name in commands else command


class LazyGroup(RootGroup):
    """The root group: commands added with ``add_typer``/``command`` plus :data:`COMMANDS`, loaded on use."""

    def list_commands(self, ctx: Any) -> list[str]:
        eager = super().list_commands(ctx)
        return [*eager, *(name for name in COMMANDS if name not in eager)]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        if command is None and cmd_name in COMMANDS:
            command = load_command(cmd_name, COMMANDS[cmd_name])
            self.add_command(command, cmd_name)
        return command

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        # Running ``rmqctl group show G`` builds the group with ``show`` alone; help, a typo or
        # shell completion get the whole group from get_command. The partial group is not kept.
        name = args[0] if args else None
        if name in COMMANDS and name not in self.commands and len(args) > 1 and not ctx.resilient_parsing:
            return name, load_command(name, COMMANDS[name], only=args[1]), args[1:]
        return super().resolve_command(ctx, args)


app = typer.Typer(
    name="rmqctl",
    help="See, explain and emulate Apache RocketMQ consumer groups.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    cls=LazyGroup,
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
    )


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:  # while the command line itself is parsed
        sys.stderr.write("rmqctl: error: interrupted\n")
        sys.exit(int(ExitCode.INTERRUPTED))


if __name__ == "__main__":
    main()
