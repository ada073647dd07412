"""The ``rmqctl`` command: global options and the command groups composed with ``add_typer``.

Must not import textual or pyspark at module level (the TUI command imports it lazily).
"""

from __future__ import annotations

from typing import Annotated

import typer

from rmqctl import __version__
from rmqctl.cli import (
    cluster,
    config_cmd,
    demo_cmd,
    doctor_cmd,
    emulator_cmd,
    group,
    rebalance_cmd,
    topic,
    tui_cmd,
)
from rmqctl.cli.common import (
    AtOpt,
    ContextOpt,
    EmulatorOpt,
    NamesrvOpt,
    OutputOpt,
    Settings,
    TimeoutOpt,
)
from rmqctl.cli.render import OutputFormat

app = typer.Typer(
    name="rmqctl",
    help="See, explain and emulate Apache RocketMQ consumer groups.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(cluster.app, name="cluster")
app.add_typer(topic.app, name="topic")
app.add_typer(group.app, name="group")
app.add_typer(config_cmd.app, name="config")
app.add_typer(rebalance_cmd.app, name="rebalance")
app.add_typer(emulator_cmd.app, name="emulator")
app.command("doctor")(doctor_cmd.doctor)
app.command("demo")(demo_cmd.demo)
app.command("tui")(tui_cmd.tui)


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
    debug: Annotated[bool, typer.Option("--debug", help="Tracebacks and wire logs on stderr.")] = False,
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    """Global options apply to every command; the same options after a command override them."""
    ctx.obj = Settings(
        namesrv=namesrv,
        context=context,
        output=output or OutputFormat.table,
        timeout=timeout,
        debug=debug,
        emulator=emulator,
        at=at,
    )


def main() -> None:
    app()


if __name__ == "__main__":
    main()
