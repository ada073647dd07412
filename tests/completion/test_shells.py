"""Completions typed in real bash, zsh and fish (tmux panes) and read back from the screen.

Each shell runs with ``PATH`` set to a directory holding only a stand-in ``rmqctl`` that notes each
run (fish completes a command's arguments only when the command is on ``PATH``): completion works
there only because a TAB runs no program at all (no Python, no ``cat``), and every test checks that
the stand-in never ran — the script holds the command tree and reads the names cache and the config
file with shell builtins. The names cache is filled by running
ordinary rmqctl commands against the embedded emulator, or written by hand as a user's cache
would look, literal file names included.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.completion.terminal import PROMPT, ROOT, SHELLS, Terminal, listing, prompt_lines, same_words

pytestmark = pytest.mark.timeout(120)


class Shell:
    """A shell with the completion loaded, its own cache and config dirs, and no programs on PATH."""

    def __init__(self, name: str, tmp: Path, *, sourced: bool = False, **env: str) -> None:
        self.name = name
        self.sourced = sourced
        self.cache = tmp / "cache" / "rmqctl" / "names"
        self.config = tmp / "config" / "rmqctl" / "config.toml"
        home = tmp / "home"
        programs = tmp / "no-programs"
        for d in (self.cache, self.config.parent, home, programs):
            d.mkdir(parents=True, exist_ok=True)
        self.runs = tmp / "rmqctl-runs"
        stand_in = programs / "rmqctl"
        stand_in.write_text(f"#!/bin/sh\necho \"$*\" >> '{self.runs}'\nexit 1\n")
        stand_in.chmod(0o755)
        base = {"PATH": str(programs), "XDG_CACHE_HOME": str(tmp / "cache"),
                "XDG_CONFIG_HOME": str(tmp / "config")}
        self.env = {**base, **env}
        self.home = home  # also the shell's working directory
        self.term: Terminal | None = None

    def start(self) -> Shell:
        self.term = Terminal(self.name, self.home, self.env, sourced=self.sourced)
        return self

    def offered(self, typed: str, expected: set[str]) -> None:
        """TAB after ``typed`` lists exactly ``expected``."""
        assert self.term is not None
        self.term.type(typed)
        self.term.key("Tab")
        screen = self.term.wait_for(lambda s: expected <= set(listing(s)) or same_words(listing(s), expected),
                                    what=f"{sorted(expected)} offered after {typed!r}")
        assert same_words(listing(screen), expected), screen

    def completes_to(self, typed: str, line: str) -> None:
        """TAB after ``typed`` turns the line into ``line`` (and lists nothing); ``#`` marks the end."""
        assert self.term is not None
        self.term.type(typed)
        self.term.key("Tab")
        self.term.type("#")
        screen = self.term.wait_for(lambda s: any(p.endswith("#") for p in prompt_lines(s)),
                                    what=f"the line after TAB on {typed!r}")
        assert prompt_lines(screen)[-1] == line + "#", screen
        assert listing(screen) == [], screen

    def offers_nothing(self, typed: str) -> None:
        self.completes_to(typed, typed)

    def reset(self) -> None:
        """Empty line, clear screen: the next TAB's listing is the only one shown."""
        assert self.term is not None
        self.term.key("C-u", "C-l")
        self.term.wait_for(lambda s: s.strip() == PROMPT.strip(), what="a cleared screen")

    def close(self) -> None:
        """Stop the shell; a TAB that ran ``rmqctl`` fails the test."""
        if self.term is not None:
            self.term.close()
        runs = self.runs.read_text() if self.runs.exists() else ""
        assert runs == "", f"a TAB ran rmqctl: {runs!r}"


@pytest.fixture(params=SHELLS)
def shell_name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def shell(shell_name: str, tmp_path: Path) -> Iterator[Shell]:
    sh = Shell(shell_name, tmp_path).start()
    yield sh
    sh.close()


def write_cache(directory: Path, file_name: str, lines: list[str]) -> None:
    (directory / file_name).write_text("".join(line + "\n" for line in lines), encoding="utf-8")


# --- the static tree: commands, options, option values -------------------------------------------


def test_commands_and_subcommands(shell: Shell) -> None:
    shell.completes_to("rmqctl gr", "rmqctl group ")
    shell.reset()
    shell.offered("rmqctl group ", {"list", "show", "progress", "assignment", "reset", "delete", "prune"})


def test_zsh_script_sourced_after_compinit(tmp_path: Path) -> None:
    """The README's zsh line sources the script instead of putting it on $fpath."""
    sh = Shell("zsh", tmp_path, sourced=True).start()
    try:
        write_cache(sh.cache, "namesrv_10.0.0.1_9876.groups", NAMESRV_GROUPS)
        sh.offered("rmqctl group ", {"list", "show", "progress", "assignment", "reset", "delete", "prune"})
        sh.reset()
        sh.completes_to("rmqctl -n 10.0.0.1:9876 doctor pay", "rmqctl -n 10.0.0.1:9876 doctor payment ")
    finally:
        sh.close()


def test_options_and_their_values(shell: Shell) -> None:
    shell.completes_to("rmqctl group show --out", "rmqctl group show --output ")
    shell.reset()
    shell.offered("rmqctl doctor --fail-on ", {"never", "warning", "error"})


def test_value_after_equals(shell: Shell) -> None:
    shell.completes_to("rmqctl doctor --fail-on=w", "rmqctl doctor --fail-on=warning ")


#: the --strategy values, by hand: the five allocation classes of the Java client (averagely,
#: averagely by circle, consistent hash, by config, by machine room), machine-room-nearby around
#: each of those five, and the two POP variants
STRATEGIES = {
    "AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH", "CONFIG", "MACHINE_ROOM",
    "MACHINE_ROOM_NEARBY-AVG", "MACHINE_ROOM_NEARBY-AVG_BY_CIRCLE", "MACHINE_ROOM_NEARBY-CONSISTENT_HASH",
    "MACHINE_ROOM_NEARBY-CONFIG", "MACHINE_ROOM_NEARBY-MACHINE_ROOM",
    "POP-AVG", "POP-AVG_BY_CIRCLE",
}


def test_strategy_names(shell: Shell) -> None:
    shell.offered("rmqctl rebalance simulate --strategy ", STRATEGIES)


def test_scenario_names(shell: Shell) -> None:
    shell.offered("rmqctl --emulator tag-", {"tag-overwrite", "tag-overwrite-4q"})


def test_scenario_files(shell: Shell) -> None:
    (shell.home / "my-incident.toml").write_text("")
    shell.completes_to("rmqctl emulator run my-", "rmqctl emulator run my-incident.toml ")


# --- names from the cache ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def emulator_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The cache as ordinary commands leave it: ``group list`` and ``topic list`` on the emulator."""
    home = tmp_path_factory.mktemp("xdg-cache")
    env = {**os.environ, "XDG_CACHE_HOME": str(home), "PYTHONPATH": str(ROOT)}
    for args in (["group", "list"], ["topic", "list"]):
        proc = subprocess.run([sys.executable, "-m", "rmqctl", "--emulator", "tag-overwrite", *args],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
    return home


def test_names_that_ordinary_commands_cached(shell_name: str, tmp_path: Path, emulator_cache: Path) -> None:
    sh = Shell(shell_name, tmp_path, XDG_CACHE_HOME=str(emulator_cache)).start()
    try:
        sh.completes_to("rmqctl --emulator tag-overwrite group show ",
                        "rmqctl --emulator tag-overwrite group show test-consumer ")
        sh.reset()
        sh.completes_to("rmqctl --emulator tag-overwrite topic route T",
                        "rmqctl --emulator tag-overwrite topic route TopicTest2 ")
        sh.reset()
        sh.offers_nothing("rmqctl --emulator healthy group show ")  # another cluster: nothing cached
    finally:
        sh.close()


NAMESRV_GROUPS = ["# rmqctl names v1", "order-audit", "order-service", "payment"]
PROD_GROUPS = ["# rmqctl names v1", "prod-orders", "prod-billing"]


def test_the_cluster_on_the_line_picks_the_names(shell: Shell) -> None:
    write_cache(shell.cache, "namesrv_10.0.0.1_9876.groups", NAMESRV_GROUPS)
    write_cache(shell.cache, "context_prod.groups", PROD_GROUPS)
    shell.offered("rmqctl group show -n 10.0.0.1:9876 order-", {"order-audit", "order-service"})
    shell.reset()
    shell.offered("rmqctl --context prod doctor payment prod-", {"prod-orders", "prod-billing"})


def test_namesrv_addr_then_the_current_context(shell_name: str, tmp_path: Path) -> None:
    sh = Shell(shell_name, tmp_path, NAMESRV_ADDR="10.0.0.1:9876")
    write_cache(sh.cache, "namesrv_10.0.0.1_9876.groups", NAMESRV_GROUPS)
    write_cache(sh.cache, "context_prod.groups", PROD_GROUPS)
    sh.config.write_text('current-context = "prod"\n\n[contexts.prod]\nnamesrv = "10.0.0.2:9876"\n\n'
                         '[contexts.staging]\nnamesrv = "10.0.0.3:9876"\n')
    sh.start()
    try:
        sh.completes_to("rmqctl group progress pay", "rmqctl group progress payment ")
    finally:
        sh.close()
    del sh.env["NAMESRV_ADDR"]
    sh.start()
    try:
        sh.offered("rmqctl group progress prod-", {"prod-orders", "prod-billing"})
        sh.reset()
        sh.offered("rmqctl config use-context ", {"prod", "staging"})
    finally:
        sh.close()


def test_missing_or_corrupt_cache_completes_nothing(shell: Shell) -> None:
    shell.offers_nothing("rmqctl group show -n 10.0.0.1:9876 ")  # no cache at all
    write_cache(shell.cache, "namesrv_10.0.0.1_9876.groups", ["order-audit", "order-service"])  # no header
    shell.reset()
    shell.offers_nothing("rmqctl group show -n 10.0.0.1:9876 ")
    (shell.cache / "namesrv_10.0.0.2_9876.groups").write_bytes(b"\x00\xff\xfe garbage \x1b[2J\n\x00")
    shell.reset()
    shell.offers_nothing("rmqctl group show -n 10.0.0.2:9876 ")
    write_cache(shell.cache, "namesrv_10.0.0.3_9876.groups",
                ["# rmqctl names v1", "$(touch pwned)", "bad name", "ok-group"])
    shell.reset()
    shell.completes_to("rmqctl group show -n 10.0.0.3:9876 ", "rmqctl group show -n 10.0.0.3:9876 ok-group ")
