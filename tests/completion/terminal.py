"""A real shell in a tmux pane: type keys, read the screen, wait on what it shows (bounded).

Every wait polls ``tmux capture-pane`` until a condition holds or its deadline passes; nothing
sleeps to synchronise. The shell gets its environment through ``env`` on its command line: tmux
gives a new pane the client's ``PATH`` whatever ``new-session -e`` says. A missing tmux or shell is
one line (a skip, or a failure under ``RMQCTL_REQUIRE_REAL_CLUSTER=1``), not a time-out.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from tests.harness.plugin import require_program

ROOT = Path(__file__).resolve().parents[2]
COMPLETIONS = ROOT / "completions"
PROMPT = "PROMPT> "
SHELLS = ("bash", "zsh", "fish")


def shell_command(shell: str, home: Path, *, sourced: bool = False) -> list[str]:
    """Start ``shell`` interactive, with no user config, a fixed prompt and rmqctl's completion,
    installed as the README says: sourced by bash; autoloaded by zsh (from ``$fpath``; sourced
    after compinit with ``sourced``) and fish (from ``$fish_complete_path``)."""
    exe = require_program(shell, path="/usr/bin:/bin:/usr/local/bin", hint=f"apt-get install {shell}")
    if shell == "bash":
        rc = home / ".bashrc-test"
        rc.write_text(
            f"PS1='{PROMPT}'\n"
            "bind 'set show-all-if-ambiguous on'\n"
            "bind 'set completion-query-items 0'\n"
            "bind 'set page-completions off'\n"
            "bind 'set bell-style none'\n"
            f"source '{COMPLETIONS / 'rmqctl.bash'}'\n"
        )
        return [exe, "--noprofile", "--rcfile", str(rc), "-i"]
    if shell == "zsh":
        (home / ".zshrc").write_text(
            ("" if sourced else f"fpath=('{COMPLETIONS}' $fpath)\n")
            + "autoload -U compinit && compinit -u -D\n"
            + (f"source '{COMPLETIONS / '_rmqctl'}'\n" if sourced else "")
            + "unsetopt beep list_ambiguous\n"
            + f"PS1='{PROMPT}'\n"
        )
        return [exe, "-i"]
    init = (
        "set -g fish_greeting ''; set -g fish_autosuggestion_enabled 0; "
        f"function fish_prompt; printf '%s' '{PROMPT}'; end; function fish_right_prompt; end; "
        # C-l runs `clear`; the pane has no programs on PATH, so a builtin stands in for it
        "function clear; printf '\\e[H\\e[2J'; end; "
        f"set -g fish_complete_path '{COMPLETIONS}' $fish_complete_path"
    )
    return [exe, "--no-config", "-i", "-C", init]


class Terminal:
    """One tmux server (its own socket) running one shell in a 160x50 pane."""

    def __init__(self, shell: str, home: Path, env: Mapping[str, str], *, sourced: bool = False) -> None:
        self._tmux_exe = require_program("tmux", hint="apt-get install tmux")
        full_env = {"HOME": str(home), "TERM": "xterm-256color", "LANG": "C.UTF-8", **env}
        command = [require_program("env"), *(f"{k}={v}" for k, v in full_env.items()),
                   *shell_command(shell, home, sourced=sourced)]
        # a fresh, short socket path per terminal: a server just killed may still hold the old one
        self._socket_dir = tempfile.mkdtemp(prefix="rmqctl-tmux-")
        self.socket = os.path.join(self._socket_dir, "sock")
        self.shell = shell
        try:
            self._tmux("-f", "/dev/null", "new-session", "-d", "-x", "160", "-y", "50", "-s", "t", "-c", str(home),
                       shlex.join(command), env={k: v for k, v in os.environ.items() if k != "TMUX"})
            self.wait_for(lambda s: s.strip() == PROMPT.strip(), what="the first prompt")
        except BaseException:
            self.close()
            raise

    def _tmux(self, *args: str, env: Mapping[str, str] | None = None) -> str:
        proc = subprocess.run([self._tmux_exe, "-S", self.socket, *args], capture_output=True, text=True,
                              timeout=10, env=dict(env) if env is not None else None)
        assert proc.returncode == 0, f"tmux {args[0]}: {proc.stderr}"
        return proc.stdout

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-t", "t")

    def type(self, text: str) -> None:
        self._tmux("send-keys", "-t", "t", "-l", text)

    def key(self, *names: str) -> None:
        self._tmux("send-keys", "-t", "t", *names)

    def wait_for(self, condition: Callable[[str], bool], *, timeout: float = 10.0, what: str = "") -> str:
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if condition(screen):
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.shell}: timed out waiting for {what}; screen:\n{screen}")
            time.sleep(0.02)  # poll interval of the bounded wait above

    def close(self) -> None:
        subprocess.run([self._tmux_exe, "-S", self.socket, "kill-server"], capture_output=True, timeout=10)
        shutil.rmtree(self._socket_dir, ignore_errors=True)


def listing(screen: str) -> list[str]:
    """The words the shell listed under (or above) the prompt line."""
    return [word for line in screen.splitlines() if line.strip() and not line.startswith(PROMPT)
            for word in line.split()]


def prompt_lines(screen: str) -> list[str]:
    return [line[len(PROMPT):].rstrip() for line in screen.splitlines() if line.startswith(PROMPT)]


def same_words(shown: list[str], expected: set[str]) -> bool:
    """``shown`` is exactly ``expected``; fish's pager writes ``…suffix`` for a long shared prefix."""
    resolved = []
    for word in shown:
        if word.startswith("…"):
            matches = [e for e in expected if e.endswith(word[1:])]
            word = matches[0] if len(matches) == 1 else word
        resolved.append(word)
    return len(resolved) == len(set(resolved)) and set(resolved) == expected
