"""rmqctl.cli.framework against the installed Typer: every promise the module makes, on a small
command tree of its own (tests/unit/framework_app.py), so a Typer release that breaks one fails
here by name. Run this file under a new Typer before widening the range in pyproject.toml."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import pytest
import typer
from typer.testing import CliRunner

from rmqctl.cli.framework import CommandGroup, LazyGroup, click_command, command_tree, with_optional_values
from tests.unit.framework_app import CALLS, Boom

ROOT = Path(__file__).resolve().parents[2]
REPORTS: list[tuple[str, str | None]] = []


class Root(LazyGroup):
    lazy_commands = {"things": "tests.unit.framework_app:things", "single": "tests.unit.framework_app:single"}
    optional_values = {"--watch": "2", "-w": "2"}

    def report(self, message: str, hint: str | None) -> None:
        REPORTS.append((message, hint))

    def command_failed(self, ctx: typer.Context, exc: BaseException) -> None:
        if isinstance(exc, Boom):
            REPORTS.append((f"failed: {exc}", None))
            raise typer.Exit(7) from None


def make_app() -> typer.Typer:
    app = typer.Typer(name="prog", cls=Root, no_args_is_help=True, add_completion=False,
                      pretty_exceptions_enable=False, context_settings={"help_option_names": ["-h", "--help"]})

    @app.callback()
    def main(ctx: typer.Context,
             region: Annotated[str | None, typer.Option("--region", "-r", show_default=False)] = None) -> None:
        """The program."""
        ctx.obj = {"region": region} if region else {}

    return app


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    CALLS.clear()
    REPORTS.clear()
    yield


def run(*args: str) -> Any:
    return CliRunner().invoke(make_app(), list(args), prog_name="prog")


def test_running_a_command_builds_only_that_command_of_its_group() -> None:
    root = click_command(make_app())
    with root.make_context("prog", ["things", "one", "x"], resilient_parsing=True) as ctx:
        ctx.resilient_parsing = False  # as when the command line is run
        name, group, rest = root.resolve_command(ctx, ["things", "one", "x"])
        assert (name, rest, sorted(group.commands)) == ("things", ["one", "x"], ["one"])
        assert "things" not in root.commands  # the partial group is not kept
        # help, a typo or completion: the whole group, which is then registered
        for args in (["things", "-h"], ["things", "onw"], ["things"]):
            _, whole, _ = root.resolve_command(ctx, args)
            assert sorted(whole.commands) == ["fail", "nested", "one", "two"], args
        assert root.list_commands(ctx) == ["things", "single"]
    assert run("things", "one", "x").exit_code == 0
    assert CALLS == [("one", {"name": "x", "opts": {}, "colour": "red", "watch": None})]


def test_a_single_command_and_a_nested_group_run() -> None:
    assert run("single", "--count", "3").exit_code == 0
    assert run("things", "nested", "deep").exit_code == 0
    assert CALLS == [("single", {"count": 3}), ("deep", {})]


@pytest.mark.parametrize(("args", "message", "hint"), [
    (["--bogus", "things", "one", "x"], "No such option: --bogus", "see 'prog -h'"),
    (["things", "one", "x", "--bogus"], "No such option: --bogus", "see 'prog things one -h'"),
    (["things", "--bogus"], "No such option: --bogus", "see 'prog things -h'"),
    (["things", "onw"], "No such command 'onw'. Did you mean 'one'?", "see 'prog things -h'"),
    (["nothing"], "No such command 'nothing'.", "see 'prog -h'"),
    (["things", "one"], "Missing argument 'name'.", "see 'prog things one -h'"),
    (["things", "one", "x", "--colour", "green"], "Invalid value for '--colour'", "see 'prog things one -h'"),
    (["single", "--count", "0"], "Invalid value for '--count'", "see 'prog single -h'"),
])
def test_a_command_line_mistake_is_reported_once_and_exits_2(args: list[str], message: str, hint: str) -> None:
    result = run(*args)
    assert result.exit_code == 2
    assert result.stdout == "" and result.stderr == ""  # nothing of Typer's own usage block or box
    assert len(REPORTS) == 1 and REPORTS[0][0].startswith(message) and REPORTS[0][1] == hint, REPORTS
    assert CALLS == []


@pytest.mark.parametrize("args", [[], ["things"], ["things", "nested"]])
def test_a_group_without_its_command_prints_its_help_and_exits_2(args: list[str]) -> None:
    result = run(*args)
    assert result.exit_code == 2 and REPORTS == []
    words = {(): ["things", "single"], ("things",): ["one", "two", "nested"], ("things", "nested"): ["deep"]}
    assert all(word in result.stdout for word in words[tuple(args)]), result.stdout
    assert "Usage:" in result.stdout and "Error" not in result.output


def test_an_error_of_the_application_goes_to_command_failed() -> None:
    result = run("things", "fail")
    assert result.exit_code == 7 and REPORTS == [("failed: it broke", None)]


def test_shared_options_are_taken_before_and_after_the_command() -> None:
    assert run("-r", "eu", "things", "one", "x").exit_code == 0
    assert run("-r", "eu", "things", "one", "x", "--region", "us", "--verbose").exit_code == 0
    assert run("things", "one", "x", "-r", "ap").exit_code == 0
    assert [c[1]["opts"] for c in CALLS] == [{"region": "eu"}, {"region": "us", "verbose": True}, {"region": "ap"}]


def test_an_option_with_an_optional_value() -> None:
    for args in (["-w"], ["--watch", "5"], ["--watch", "0.5", "-w"]):
        assert run("things", "one", "x", *args).exit_code == 0
    assert run("things", "one", "--watch", "y").exit_code == 0  # not a number: the bare option
    assert run("things", "two", "--", "-w").exit_code == 0  # after --, an argument like any other
    assert [c[1].get("watch") for c in CALLS[:4]] == [2.0, 5.0, 2.0, 2.0]
    assert CALLS[3][1]["name"] == "y" and CALLS[4] == ("two", {"files": ["-w"]})
    assert with_optional_values(["-w", "--", "-w"], {"-w": "2"}) == ["-w", "2", "--", "-w"]
    # the application says what a value looks like (rmqctl: a duration)
    assert with_optional_values(["-w", "5s", "-w", "x"], {"-w": "2"}, lambda w: w.endswith("s")) == [
        "-w", "5s", "-w", "2", "x"]


def test_the_command_tree_as_plain_data() -> None:
    shapes = {s.path: s for s in command_tree(click_command(make_app()))}
    assert list(shapes) == ["", "things", "things one", "things two", "things fail", "things nested",
                            "things nested deep", "single"]
    assert shapes[""].subcommands == ["things", "single"]
    assert shapes["things"].subcommands == ["one", "two", "fail", "nested"]
    one = {p.name: p for p in shapes["things one"].params}
    assert sorted(one) == ["colour", "name", "region", "verbose", "watch"]
    assert one["name"].is_argument and not one["name"].variadic and not one["name"].is_path
    assert (one["colour"].names, one["colour"].value_names, one["colour"].choices) == (
        ["--colour"], ["--colour"], ["red", "blue"])
    assert one["watch"].value_names == ["--watch", "-w"] and one["watch"].choices == []
    assert one["region"].names == ["--region", "-r"]
    assert one["verbose"].names == ["--verbose"] and one["verbose"].value_names == []  # a flag
    two = {p.name: p for p in shapes["things two"].params}
    assert list(two) == ["files"]  # --secret is hidden
    assert two["files"].is_argument and two["files"].variadic and two["files"].is_path
    assert [p.name for p in shapes["single"].params] == ["count"]


def _groups(command: Any, ctx: Any, path: str) -> Iterator[tuple[str, Any]]:
    if hasattr(command, "list_commands"):
        yield path, command
        for name in command.list_commands(ctx):
            yield from _groups(command.get_command(ctx, name), ctx, f"{path} {name}".strip())


def test_every_group_of_rmqctl_is_a_framework_group() -> None:
    # a group that is not would leave "rmqctl GROUP" to Typer, which raises its help as an error
    from rmqctl.cli.app import app

    root = click_command(app)
    groups = dict(_groups(root, typer.Context(root), ""))
    assert {"", "group", "emulator", "emulator ctl"} <= set(groups)
    assert {path for path, g in groups.items() if not isinstance(g, CommandGroup)} == set()


def test_only_the_framework_module_reaches_past_typers_plain_api() -> None:
    # typer.core, typer.main, the Click inside Typer, or Click itself: only rmqctl/cli/framework.py
    allowed = {"rmqctl/cli/framework.py"}
    offenders = {}
    for path in [*(ROOT / "rmqctl").rglob("*.py"), *(ROOT / "tui").rglob("*.py")]:
        names = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module)
        bad = sorted(n for n in names if n == "click" or n.startswith(("click.", "typer.")))
        name = path.relative_to(ROOT).as_posix()
        if bad and name not in allowed:
            offenders[name] = bad
    assert offenders == {}
