"""``rmqctl config …``: named contexts (name servers, timeout, credentials) in a TOML file.

Reaches the core through its public modules; must not import textual, pyspark or another
command module.
"""

from __future__ import annotations

import getpass
import sys
from typing import Annotated

import typer

from rmqctl import errors
from rmqctl.cli.common import OutputOpt, console, settings
from rmqctl.cli.durations import DURATION, duration_parser
from rmqctl.cli.render import Table, View, emit
from rmqctl.config import Config
from rmqctl.connect import parse_namesrv
from rmqctl.report.config import config_view

app = typer.Typer(help="Named contexts, like kubectl's.", no_args_is_help=True)

NameArg = Annotated[str, typer.Argument(help="Context name.", show_default=False)]


@app.command("view")
def view(ctx: typer.Context, output: OutputOpt = None) -> None:
    """Show the config file (secrets masked)."""
    opts = settings(ctx, output=output)
    cfg = Config.load()
    doc = config_view(cfg.redacted())
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


def read_secret_stdin() -> str:
    """The secret key from the first line of stdin (a pipe, a file, a secret manager's output)."""
    line = sys.stdin.readline().rstrip("\r\n")
    if not line:
        raise errors.UsageError("--secret-key-stdin read no secret key from stdin",
                                hint="pipe it in: my-vault read rmq/sk | rmqctl config set-context …")
    return line


def prompt_secret(context: str) -> str:
    """Ask for the secret key on the terminal, without echo."""
    if not sys.stdin.isatty():
        raise errors.UsageError("cannot prompt for the secret key: stdin is not a terminal",
                                hint="pass it with --secret-key-stdin")
    try:
        secret = getpass.getpass(f"Secret key for context {context!r}: ", stream=sys.stderr)
    except EOFError:
        secret = ""
    if not secret:
        raise errors.UsageError("no secret key given")
    return secret


@app.command("set-context")
def set_context(
    ctx: typer.Context,
    name: NameArg,
    namesrv: Annotated[str | None, typer.Option("--namesrv", "-n", help="Name servers 'h1:9876;h2:9876'.")] = None,
    timeout: Annotated[float | None, typer.Option("--timeout", parser=duration_parser(at_least=0.001),
                                                  metavar=DURATION, help="Request timeout (5, 5s, 1m …).")] = None,
    access_key: Annotated[str | None, typer.Option(
        "--access-key", help="ACL access key (the secret key is then asked for, unless given another way).")] = None,
    secret_key_prompt: Annotated[bool, typer.Option(
        "--secret-key-prompt", help="Ask for the ACL secret key on the terminal, without echo.")] = False,
    secret_key_stdin: Annotated[bool, typer.Option(
        "--secret-key-stdin", help="Read the ACL secret key from the first line of stdin.")] = False,
    secret_key: Annotated[str | None, typer.Option(
        "--secret-key", help="ACL secret key as an argument: it shows in 'ps' and the shell history; "
                             "prefer --secret-key-prompt or --secret-key-stdin.")] = None,
    use: Annotated[bool, typer.Option("--use", help="Also make it the current context.")] = False,
    allow_writes: Annotated[bool | None, typer.Option(
        "--allow-writes/--read-only",
        help="Whether commands that change the cluster (group reset) may run with this context; a new "
             "context is read-only unless --allow-writes.", show_default=False)] = None,
    tls: Annotated[bool | None, typer.Option(
        "--tls/--no-tls", help="Speak TLS to the name servers, brokers and proxies.", show_default=False)] = None,
    tls_ca_file: Annotated[str | None, typer.Option(
        "--tls-ca-file", help="PEM CA file the servers' certificates are checked against (turns the check on).",
        show_default=False)] = None,
    tls_cert_file: Annotated[str | None, typer.Option(
        "--tls-cert-file", help="PEM client certificate, for servers that ask for one.", show_default=False)] = None,
    tls_key_file: Annotated[str | None, typer.Option(
        "--tls-key-file", help="PEM private key of the client certificate.", show_default=False)] = None,
    tls_verify: Annotated[bool | None, typer.Option(
        "--tls-verify/--tls-no-verify", help="Check the servers' certificate chain (default: when a CA file "
        "is given).", show_default=False)] = None,
) -> None:
    """Create or update a context (stored with mode 600)."""
    ways = [flag for flag, given in (("--secret-key", secret_key is not None),
                                     ("--secret-key-prompt", secret_key_prompt),
                                     ("--secret-key-stdin", secret_key_stdin)) if given]
    if len(ways) > 1:
        raise errors.UsageError(f"{' and '.join(ways)} cannot be combined", hint="give the secret key one way")
    if namesrv is not None:
        parse_namesrv(namesrv)
    cfg = Config.load()
    entry = dict(cfg.contexts.get(name, {}))
    if secret_key is not None:
        console.warn("--secret-key shows the secret in 'ps' and the shell history; "
                     "prefer --secret-key-prompt or --secret-key-stdin")
    elif secret_key_stdin:
        secret_key = read_secret_stdin()
    elif secret_key_prompt or (access_key is not None and "secret_key" not in entry and sys.stdin.isatty()):
        secret_key = prompt_secret(name)
    for key, value in (("namesrv", namesrv), ("timeout", timeout),
                       ("access_key", access_key), ("secret_key", secret_key), ("tls", tls),
                       ("tls_ca_file", tls_ca_file), ("tls_cert_file", tls_cert_file),
                       ("tls_key_file", tls_key_file), ("tls_verify", tls_verify)):
        if value is not None:
            entry[key] = value
    if allow_writes is not None:
        entry["read_only"] = not allow_writes
    elif name not in cfg.contexts:
        entry["read_only"] = True
    if "namesrv" not in entry:
        raise errors.UsageError(f"context {name!r} needs a name server", hint="pass -n host:9876")
    cfg.contexts[name] = entry
    if use or cfg.current_context is None:
        cfg.current_context = name
    cfg.save()
    typer.echo(f"Context {name!r} saved to {cfg.path}.", err=True)
