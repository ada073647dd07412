"""The command-line framework in one place: everything rmqctl asks of Typer beyond its plain API.

Command modules use only what Typer's tutorial shows: ``typer.Typer``, ``typer.Option`` and
``typer.Argument`` in ``Annotated`` aliases, ``typer.Context``, ``typer.Exit``,
``typer.BadParameter``. What the command line needs on top of that is written here, once, on the
extension points Typer documents (a ``typer.core.TyperGroup`` subclass passed as ``cls``,
``typer.main.get_command`` for the underlying Click command, ``typer.TyperException`` as the base
of every command-line mistake) and the Click ``Group``/``Context`` methods that command exposes:

* :class:`LazyGroup`: command groups imported only when used; running a command builds only that
  command of its group, while help, a typo and completion get the whole group;
* command-line mistakes reported as one ``rmqctl: error:`` line and a hint, exit 2;
* :func:`with_shared_options`: options every cluster command takes, declared once and added to a
  command's signature (Typer reads parameters from ``inspect.signature``, which honours
  ``__signature__``);
* :func:`with_optional_values`: options whose value may be left out (``--watch [SECONDS]``),
  which neither Typer nor Click parse;
* :func:`command_tree`: the commands, options and arguments as plain data, for the completion
  scripts.

``tests/unit/test_framework.py`` pins each of these against the installed Typer. Before widening
the version range in ``pyproject.toml``, run it under the new release (``python -m venv
--system-site-packages V && V/bin/pip install typer==X`` then ``PYTHONPATH=. V/bin/python -m
pytest tests/unit/test_framework.py``) and measure with ``bench/bench_startup.py --venv``.

Must not import textual or pyspark, nor anything of rmqctl: it knows commands, not clusters.
"""

from __future__ import annotations

import copy
import enum
import functools
import importlib
import inspect
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import field
from pathlib import PurePath
from typing import Any, ClassVar, NoReturn

import typer
import typer.main
from typer.core import TyperGroup

from rmqctl.records import dataclass

#: a Click command (group or single command) as Typer builds it; typed loosely because Typer
#: keeps the Click classes out of its public names
ClickCommand = Any


def click_command(app: typer.Typer) -> ClickCommand:
    """The Click command Typer builds for ``app`` (what ``app()`` runs)."""
    return typer.main.get_command(app)


def load_command(name: str, spec: str, only: str | None = None) -> ClickCommand:
    """The Click command for ``spec`` (``module:attribute``, a ``typer.Typer`` group or a command
    function), registered under ``name`` as ``add_typer``/``command`` would.

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
        holder.add_typer(target, name=name, cls=CommandGroup)
    else:
        holder.command(name)(target)
    command = click_command(holder)
    commands = getattr(command, "commands", None)
    return commands[name] if commands is not None and name in commands else command


def is_number(word: str) -> bool:
    """Whether ``word`` reads as a number (the default test of an optional value)."""
    try:
        float(word)
    except ValueError:
        return False
    return True


def with_optional_values(args: list[str], optional: Mapping[str, str],
                         is_value: Callable[[str], bool] = is_number) -> list[str]:
    """Insert ``optional[option]`` after each such option not followed by a word ``is_value``
    accepts.

    Typer (like Click) has no option whose value may be left out; kubectl's ``-w`` habit wants
    ``--watch`` alone to mean "every 2 s", so the bare option gets its value before parsing.
    Nothing after ``--`` is touched."""
    out: list[str] = []
    for i, arg in enumerate(args):
        if arg == "--":
            return out + args[i:]
        out.append(arg)
        if arg in optional and not (i + 1 < len(args) and is_value(args[i + 1])):
            out.append(optional[arg])
    return out


def command_line_error(exc: typer.TyperException, report: Callable[[str, str | None], None]) -> NoReturn:
    """Report a command-line mistake like every other error: ``report(message, hint)``, then exit
    with the mistake's code (2), instead of Typer's usage block and boxed message."""
    ctx = getattr(exc, "ctx", None)
    hint = None
    if ctx is not None:
        help_names = ctx.help_option_names
        hint = f"see '{ctx.command_path} {help_names[0] if help_names else '--help'}'"
    report(exc.format_message(), hint)
    raise typer.Exit(int(getattr(exc, "exit_code", 2)))


class CommandGroup(TyperGroup):
    """A command group that, run without a command (``rmqctl group``), prints its help and exits
    2 itself, rather than leaving Typer to raise that as a usage error (which can be told from a
    real mistake only by its class name). Every group of the command tree is one; command modules
    that nest a group declare it with ``typer.Typer(cls=CommandGroup)``."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if not args and self.no_args_is_help and not ctx.resilient_parsing:
            text = ctx.get_help()  # Typer's rich help prints itself and returns ""
            if text:
                typer.echo(text)
            raise typer.Exit(2)
        return super().parse_args(ctx, args)


class LazyGroup(CommandGroup):
    """A root command group whose commands are imported when used, that reports command-line
    mistakes as one line, and that hands every other error a command raises to
    :meth:`command_failed`.

    Subclasses set :attr:`lazy_commands` (command name -> ``module:attribute``, in help order),
    :attr:`optional_values` (see :func:`with_optional_values`) and override
    :meth:`is_optional_value`, :meth:`report` and :meth:`command_failed`; the group is given to
    ``typer.Typer(cls=...)``.
    """

    lazy_commands: ClassVar[Mapping[str, str]] = {}
    optional_values: ClassVar[Mapping[str, str]] = {}

    def is_optional_value(self, word: str) -> bool:
        """Whether ``word``, after an option of :attr:`optional_values`, is that option's value."""
        return is_number(word)

    def report(self, message: str, hint: str | None) -> None:
        """Show one command-line mistake (stderr)."""
        typer.echo(f"error: {message}" + (f"\nhint: {hint}" if hint else ""), err=True)

    def command_failed(self, ctx: typer.Context, exc: BaseException) -> None:
        """Map an error a command raised to an exit (raise ``typer.Exit``); return to let it pass."""

    def command_loaded(self) -> None:
        """Called once a command's module has been loaded, before the command runs."""

    def list_commands(self, ctx: Any) -> list[str]:
        eager = super().list_commands(ctx)
        return [*eager, *(name for name in self.lazy_commands if name not in eager)]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        if command is None and cmd_name in self.lazy_commands:
            command = load_command(cmd_name, self.lazy_commands[cmd_name])
            self.add_command(command, cmd_name)
            self.command_loaded()
        return command

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        # Running ``rmqctl group show G`` builds the group with ``show`` alone; help, a typo or
        # shell completion get the whole group from get_command. The partial group is not kept.
        name = args[0] if len(args) > 1 and not ctx.resilient_parsing else ""
        if name in self.lazy_commands and name not in self.commands:
            command = load_command(name, self.lazy_commands[name], only=args[1])
            self.command_loaded()
            return name, command, args[1:]
        return super().resolve_command(ctx, args)

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        try:
            args = with_optional_values(args, self.optional_values, self.is_optional_value)
            return super().parse_args(ctx, args)
        except typer.TyperException as exc:  # an option of the root (``rmqctl --bogus``)
            command_line_error(exc, self.report)

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except typer.TyperException as exc:  # the command's and its group's options and arguments
            command_line_error(exc, self.report)
        except (Exception, KeyboardInterrupt) as exc:
            if isinstance(exc, (typer.Exit, typer.Abort)):
                raise
            self.command_failed(ctx, exc)
            raise


def with_shared_options(
    command: Callable[..., None],
    options: Mapping[str, Any],
    combine: Callable[[typer.Context, dict[str, Any]], Any],
    into: str,
) -> Callable[..., None]:
    """``command`` taking, besides its own parameters, every option of ``options`` (parameter
    name -> ``Annotated`` type with a ``typer.Option``, default ``None``).

    The command declares ``ctx: typer.Context`` and a parameter named ``into`` in their place;
    that parameter receives ``combine(ctx, values)``, ``values`` being each shared option's value
    (``None`` when not given)."""
    signature = inspect.signature(command, eval_str=True)
    params = [p for p in signature.parameters.values() if p.name != into]
    params += [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=annotation)
        for name, annotation in options.items()
    ]

    @functools.wraps(command)
    def wrapper(**kwargs: Any) -> None:
        values = {name: kwargs.pop(name, None) for name in options}
        command(**kwargs, **{into: combine(kwargs["ctx"], values)})

    wrapper.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in params}
    return wrapper


@dataclass
class ParamShape:
    """One option or argument of a command, as the completion scripts need it."""

    name: str
    #: ``--long``/``-s`` names and ``--no-x`` secondary names; empty for an argument
    names: list[str] = field(default_factory=list)
    #: names that take a value (not flags or counters)
    value_names: list[str] = field(default_factory=list)
    is_argument: bool = False
    #: an argument that takes any number of values
    variadic: bool = False
    #: the fixed values it accepts, if any
    choices: list[str] = field(default_factory=list)
    #: the value is a path
    is_path: bool = False


@dataclass
class CommandShape:
    """One command: its words after the program name, subcommands, options and arguments."""

    path: str
    subcommands: list[str] = field(default_factory=list)
    params: list[ParamShape] = field(default_factory=list)


def _annotation(param: Any) -> Any:
    # typer keeps the declared type on the parameter; click keeps only ``type``
    annotation = getattr(getattr(param, "type_descriptor", None), "annotation", None)
    args = typing.get_args(annotation)
    return args[0] if typing.get_origin(annotation) in (list, tuple) and args else annotation


def _param_shape(param: Any) -> ParamShape:
    annotation = _annotation(param)
    click_type = getattr(param, "type", None)
    choices: Sequence[Any] = getattr(click_type, "choices", None) or []
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        choices = list(annotation)
    is_path = (isinstance(annotation, type) and issubclass(annotation, PurePath)) or \
        getattr(click_type, "name", "") in ("path", "file", "filename")
    shape = ParamShape(param.name or "", is_path=is_path,
                       choices=[str(c.value if isinstance(c, enum.Enum) else c) for c in choices])
    if param.param_type_name == "option":
        shape.names = [*param.opts, *param.secondary_opts]
        if not param.is_flag and not getattr(param, "count", False):
            shape.value_names = list(param.opts)
    else:
        shape.is_argument = True
        shape.variadic = param.nargs == -1
    return shape


def command_tree(root: ClickCommand) -> list[CommandShape]:
    """Every visible command under ``root`` (from :func:`click_command`), root first, depth first
    in help order, with its visible options and arguments."""
    shapes: list[CommandShape] = []
    ctx = typer.Context(root)

    def visit(command: Any, path: str) -> None:
        shape = CommandShape(path)
        shape.params = [_param_shape(p) for p in command.params
                        if not getattr(p, "hidden", False) and p.param_type_name in ("option", "argument")]
        shapes.append(shape)
        if hasattr(command, "list_commands"):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                if sub is None or getattr(sub, "hidden", False):
                    continue
                shape.subcommands.append(name)
                visit(sub, f"{path} {name}".strip())

    visit(root, "")
    return shapes
