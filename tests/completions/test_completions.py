"""Completion scripts: committed files equal freshly generated ones, and they complete for real
in bash, zsh and fish (each shell runs the installed ``rmqctl`` on every TAB)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
import typer

from rmqctl.cli.app import app

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "completions"
BIN = Path(sys.executable).parent  # the venv's bin: python and the rmqctl console script


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("completions_generate", SCRIPTS / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def shell_env() -> dict[str, str]:
    if not (BIN / "rmqctl").exists():
        pytest.skip(f"no rmqctl console script next to {sys.executable} (pip install -e .)")
    return {"PATH": f"{BIN}{os.pathsep}/usr/bin{os.pathsep}/bin", "HOME": str(ROOT),
            "LANG": "C.UTF-8", "TERM": "xterm-256color"}


def need(shell: str) -> str:
    path = shutil.which(shell)
    if path is None:
        pytest.skip(f"{shell} is not installed (apt-get install -y {shell})")
    return path


def subcommands(*path: str) -> list[str]:
    """What Click knows: the names a completion must offer after ``rmqctl <path>``."""
    command = typer.main.get_command(app)
    for name in path:
        command = command.commands[name]  # type: ignore[attr-defined]
    names = command.commands.items()  # type: ignore[attr-defined]
    return sorted(n for n, c in names if not c.hidden)


# (words typed, expected completions); an empty last word means "after a space"
CASES = [
    (["rmqctl", "gr"], ["group"]),
    (["rmqctl", "group", ""], "group"),
    (["rmqctl", "-o", ""], ["csv", "json", "jsonl", "table"]),
    (["rmqctl", "group", "list", "--sy"], ["--system"]),
]


def expected(value: list[str] | str) -> list[str]:
    return subcommands(value) if isinstance(value, str) else value


def test_group_subcommands_are_the_documented_ones() -> None:
    assert {"list", "show", "progress", "assignment"} <= set(subcommands("group"))


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_committed_scripts_equal_freshly_generated(shell: str) -> None:
    gen = generator()
    committed = (SCRIPTS / gen.FILES[shell]).read_text(encoding="utf-8")
    assert committed == gen.render(shell), "stale: run python completions/generate.py"


def test_generator_check_mode_passes() -> None:
    proc = subprocess.run([sys.executable, str(SCRIPTS / "generate.py"), "--check"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize(("words", "want"), CASES, ids=[" ".join(w) for w, _ in CASES])
def test_bash(words: list[str], want: list[str] | str) -> None:
    bash = need("bash")
    script = (
        f"source {SCRIPTS / 'rmqctl.bash'}\n"
        'complete -p rmqctl\n'
        'COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 ))\n'
        '_rmqctl_completion rmqctl\n'
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    proc = subprocess.run([bash, "--norc", "--noprofile", "-c", script, "bash", *words],
                          capture_output=True, text=True, env=shell_env(), timeout=60)
    assert proc.returncode == 0, proc.stderr
    registration, *offered = proc.stdout.splitlines()
    assert registration == "complete -o default -F _rmqctl_completion rmqctl"
    assert sorted(offered) == expected(want)


@pytest.mark.parametrize(("words", "want"), CASES, ids=[" ".join(w) for w, _ in CASES])
def test_fish(words: list[str], want: list[str] | str) -> None:
    fish = need("fish")
    line = " ".join(words)
    proc = subprocess.run(
        [fish, "--no-config", "-c",
         f"source {SCRIPTS / 'rmqctl.fish'}; complete -C {line!r}"],
        capture_output=True, text=True, env=shell_env(), timeout=60)
    assert proc.returncode == 0, proc.stderr
    offered = [entry.split("\t", 1)[0] for entry in proc.stdout.splitlines()]
    assert sorted(offered) == expected(want)


class Tmux:
    """An interactive shell in a private tmux server, read back as the screen shows it."""

    def __init__(self, socket: str) -> None:
        self.base = [need("tmux"), "-L", socket, "-f", "/dev/null"]

    def run(self, *args: str) -> str:
        return subprocess.run([*self.base, *args], capture_output=True, text=True, check=True,
                              timeout=30).stdout

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", "t")

    def wait_for(self, predicate: str, timeout: float = 30.0) -> str:
        """Poll the screen until ``predicate`` appears on it (bounded; never a fixed sleep)."""
        deadline = time.monotonic() + timeout
        while True:
            text = self.screen()
            if predicate in text:
                return text
            if time.monotonic() > deadline:
                raise AssertionError(f"{predicate!r} never appeared; screen:\n{text}")
            time.sleep(0.05)


@pytest.fixture
def zsh_session(tmp_path: Path) -> Iterator[Tmux]:
    zsh = need("zsh")
    (tmp_path / ".zshrc").write_text(
        "autoload -Uz compinit && compinit -u -d $ZDOTDIR/.zcompdump\n"
        f"source {SCRIPTS / '_rmqctl'}\n"
        "PS1='READY%% '\n", encoding="utf-8")
    env = {**shell_env(), "HOME": str(tmp_path), "ZDOTDIR": str(tmp_path)}
    tmux = Tmux(f"rmqctl-test-{os.getpid()}")
    command = "env -i " + " ".join(f"{k}={v}" for k, v in env.items()) + f" {zsh} -i"
    tmux.run("new-session", "-d", "-x", "160", "-y", "40", "-s", "t", command)
    try:
        tmux.wait_for("READY%")
        yield tmux
    finally:
        tmux.run("kill-server")


def test_zsh_completes_in_an_interactive_shell(zsh_session: Tmux) -> None:
    zsh_session.run("send-keys", "-t", "t", "rmqctl gr", "Tab")
    zsh_session.wait_for("READY% rmqctl group\n")
    zsh_session.run("send-keys", "-t", "t", "Tab")
    text = zsh_session.wait_for(" -- ")
    listed = sorted(line.split(" -- ", 1)[0].strip() for line in text.splitlines()
                    if " -- " in line)
    assert listed == subcommands("group")
