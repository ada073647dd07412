"""``rmqctl config …``: named contexts (name servers, timeout, credentials) in a TOML file.

Reaches the core through its public modules; must not import textual, pyspark or another
command module.
"""

from __future__ import annotations

from typing import Annotated

import typer

from rmqctl import errors
from rmqctl.cli.common import OutputOpt, settings
from rmqctl.cli.render import Table, View, emit
from rmqctl.config import Config
from rmqctl.connect import parse_namesrv

app = typer.Typer(help="Named contexts, like kubectl's.", no_args_is_help=True)

NameArg = Annotated[str, typer.Argument(help="Context name.", show_default=False)]


@app.command("view")
def view(ctx: typer.Context, output: OutputOpt = None) -> None:
    """Show the config file (secrets masked)."""
    opts = settings(ctx, output=output)
    cfg = Config.load()
    doc = cfg.redacted()
    rows = [
        {"current": "*" if name == cfg.current_context else "", "name": name,
         "namesrv": c.get("namesrv"), "timeout": c.get("timeout"),
         "access_key": c.get("access_key")}
        for name, c in doc["contexts"].items()
    ]
    columns = [("current", "CURRENT"), ("name", "NAME"), ("namesrv", "NAMESRV"),
               ("timeout", "TIMEOUT"), ("access_key", "ACCESS_KEY")]
    emit(View(doc, [Table(columns, rows, title=f"Config file: {doc['path']}")]), opts.output)


@app.command("use-context")
def use_context(ctx: typer.Context, name: NameArg) -> None:
    """Make NAME the current context."""
    cfg = Config.load()
    cfg.context(name)
    cfg.current_context = name
    cfg.save()
    typer.echo(f"Switched to context {name!r}.", err=True)


@app.command("set-context")
def set_context(
    ctx: typer.Context,
    name: NameArg,
    namesrv: Annotated[str | None, typer.Option("--namesrv", "-n", help="Name servers 'h1:9876;h2:9876'.")] = None,
    timeout: Annotated[float | None, typer.Option("--timeout", min=0.001, help="Request timeout, seconds.")] = None,
    access_key: Annotated[str | None, typer.Option("--access-key", help="ACL access key.")] = None,
    secret_key: Annotated[str | None, typer.Option(
        "--secret-key", help="ACL secret key (stored with mode 600).")] = None,
    use: Annotated[bool, typer.Option("--use", help="Also make it the current context.")] = False,
) -> None:
    """Create or update a context."""
    if namesrv is not None:
        parse_namesrv(namesrv)
    cfg = Config.load()
    entry = dict(cfg.contexts.get(name, {}))
    for key, value in (("namesrv", namesrv), ("timeout", timeout),
                       ("access_key", access_key), ("secret_key", secret_key)):
        if value is not None:
            entry[key] = value
    if "namesrv" not in entry:
        raise errors.UsageError(f"context {name!r} needs a name server", hint="pass -n host:9876")
    cfg.contexts[name] = entry
    if use or cfg.current_context is None:
        cfg.current_context = name
    cfg.save()
    typer.echo(f"Context {name!r} saved to {cfg.path}.", err=True)
