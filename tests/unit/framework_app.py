"""A small command tree for tests/unit/test_framework.py: one group with a nested group, one single
command, shared options and an option with an optional value, built only with Typer's plain API
and :mod:`rmqctl.cli.framework`, as rmqctl's own command modules are.

Must not import anything of rmqctl but the framework.
"""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Annotated, Any

import typer

from rmqctl.cli.framework import CommandGroup, with_shared_options

#: what each command ran with, for the tests to read
CALLS: list[tuple[str, dict[str, Any]]] = []


class Colour(str, enum.Enum):
    red = "red"
    blue = "blue"


class Boom(Exception):
    """An error of the application's own, for the root group's ``command_failed``."""


SHARED: dict[str, Any] = {
    "region": Annotated[str | None, typer.Option("--region", "-r", help="Shared option.", show_default=False)],
    "verbose": Annotated[bool | None, typer.Option("--verbose", help="Shared flag.", show_default=False)],
}


def _combine(ctx: typer.Context, values: dict[str, Any]) -> dict[str, Any]:
    base = dict(ctx.find_object(dict) or {})
    base.update({k: v for k, v in values.items() if v is not None})
    return base


def shared(command: Any) -> Any:
    return with_shared_options(command, SHARED, _combine, into="opts")


things = typer.Typer(help="Things.", no_args_is_help=True)
nested = typer.Typer(help="Nested things.", no_args_is_help=True, cls=CommandGroup)
things.add_typer(nested, name="nested")


@things.command("one")
@shared
def one(ctx: typer.Context, name: Annotated[str, typer.Argument(help="A name.")], opts: dict[str, Any],
        colour: Annotated[Colour, typer.Option("--colour", help="A colour.")] = Colour.red,
        watch: Annotated[float | None, typer.Option("--watch", "-w", help="Every SECONDS.")] = None) -> None:
    """The first thing."""
    CALLS.append(("one", {"name": name, "opts": opts, "colour": colour.value, "watch": watch}))


@things.command("two")
def two(files: Annotated[list[Path], typer.Argument(help="Files.")],
        secret: Annotated[str | None, typer.Option("--secret", hidden=True)] = None) -> None:
    """The second thing."""
    CALLS.append(("two", {"files": [str(f) for f in files]}))


@things.command("fail")
def fail() -> None:
    """Raises the application's own error."""
    raise Boom("it broke")


@nested.command("deep")
def deep() -> None:
    """A command of the nested group."""
    CALLS.append(("deep", {}))


def single(count: Annotated[int, typer.Option("--count", min=1)] = 1) -> None:
    """A command without a group."""
    CALLS.append(("single", {"count": count}))
