"""The registry of served emulators: where each ``rmqctl emulator serve`` notes itself.

A served emulator writes one entry on start (:func:`register`) and removes it on exit
(:func:`unregister`): ``$XDG_STATE_HOME/rmqctl/emulators/<control port>.json`` holding its control
URL, scenario, name server and process id. :func:`live_emulators` lists the entries whose process
still runs and prunes the others (a server killed with SIGKILL cannot remove its own entry), and
:func:`find_for_namesrv` picks the one serving a given name server. ``emulator ctl`` and the TUI's
emulator controls both find a served emulator here, so they never disagree.

Plain files only: must not import the CLI, textual, httpx or the emulator's server.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from rmqctl.records import dataclass


@dataclass(frozen=True, slots=True)
class ServedEmulator:
    """One running ``rmqctl emulator serve``, as it noted itself."""

    #: its HTTP control API, ``http://127.0.0.1:PORT``
    url: str
    #: the scenario it serves (a built-in name or a file)
    scenario: str
    #: its name server, ``host:port``
    namesrv: str
    #: the serving process
    pid: int
    #: the entry's file
    path: Path

    def serves(self, namesrv: str | None) -> bool:
        """Is this emulator's name server one of ``namesrv`` (``a:9876;b:9876``)?"""
        if not namesrv:
            return False
        return self.namesrv in {part.strip() for part in namesrv.split(";")}


def registry_dir() -> Path:
    """``$XDG_STATE_HOME/rmqctl/emulators`` (``~/.local/state`` when the variable is unset)."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "rmqctl" / "emulators"


def register(url: str, scenario: str, namesrv: str) -> ServedEmulator | None:
    """Note this process as the server of ``url``; ``None`` when the entry cannot be written
    (a convenience only: ``--url`` and ``RMQCTL_EMULATOR_URL`` still work)."""
    port = url.rstrip("/").rsplit(":", 1)[-1]
    path = registry_dir() / f"{port}.json"
    entry = ServedEmulator(url, scenario, namesrv, os.getpid(), path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        document = {"url": url, "scenario": scenario, "namesrv": namesrv, "pid": entry.pid}
        path.write_text(json.dumps(document) + "\n", encoding="utf-8")
    except OSError:
        return None
    return entry


def unregister(entry: ServedEmulator | None) -> None:
    """Remove ``entry``'s file, if it is still this entry's (a later server on the same port
    may have replaced it)."""
    if entry is None:
        return
    current = _read(entry.path)
    if current is not None and current.pid == entry.pid:
        try:
            entry.path.unlink()
        except OSError:
            pass


def live_emulators() -> list[ServedEmulator]:
    """Every served emulator whose process still runs, by control port; entries of processes
    that are gone are removed on the way."""
    try:
        paths = sorted(registry_dir().glob("*.json"))
    except OSError:
        return []
    out = []
    for path in paths:
        entry = _read(path)
        if entry is None:
            continue
        if _alive(entry.pid):
            out.append(entry)
        else:
            try:
                path.unlink()
            except OSError:
                pass
    return out


def find_for_namesrv(namesrv: str | None) -> ServedEmulator | None:
    """The live served emulator whose name server is one of ``namesrv``, if exactly one is."""
    matches = [e for e in live_emulators() if e.serves(namesrv)]
    return matches[0] if len(matches) == 1 else None


def _read(path: Path) -> ServedEmulator | None:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("url"), str) or not isinstance(doc.get("pid"), int):
        return None
    return ServedEmulator(doc["url"], str(doc.get("scenario", "?")), str(doc.get("namesrv", "")), doc["pid"], path)


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: it runs
        return True
    except OSError:
        return False
    return True
