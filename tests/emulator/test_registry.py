"""The registry of served emulators: entries written and removed, stale ones pruned."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rmqctl.emulator import registry


@pytest.fixture(autouse=True)
def state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    return tmp_path


def dead_pid() -> int:
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)
    return int(proc.stdout)


def test_an_entry_is_written_found_by_name_server_and_removed(state_home: Path) -> None:
    entry = registry.register("http://127.0.0.1:4242", "healthy", "127.0.0.1:9876")
    assert entry is not None
    path = state_home / "rmqctl" / "emulators" / "4242.json"
    assert json.loads(path.read_text()) == {"url": "http://127.0.0.1:4242", "scenario": "healthy",
                                            "namesrv": "127.0.0.1:9876", "pid": os.getpid()}
    assert [e.url for e in registry.live_emulators()] == ["http://127.0.0.1:4242"]
    found = registry.find_for_namesrv("10.0.0.1:9876; 127.0.0.1:9876")
    assert found is not None and found.url == "http://127.0.0.1:4242"
    assert registry.find_for_namesrv("10.0.0.1:9876") is None
    assert registry.find_for_namesrv(None) is None
    registry.unregister(entry)
    assert not path.exists() and registry.live_emulators() == []


def test_entries_of_processes_that_are_gone_are_pruned(state_home: Path) -> None:
    folder = state_home / "rmqctl" / "emulators"
    folder.mkdir(parents=True)
    stale = folder / "5000.json"
    stale.write_text(json.dumps({"url": "http://127.0.0.1:5000", "scenario": "x", "namesrv": "127.0.0.1:1",
                                 "pid": dead_pid()}))
    (folder / "5001.json").write_text("not json")
    assert registry.live_emulators() == []
    assert not stale.exists()
    assert registry.find_for_namesrv("127.0.0.1:1") is None


def test_unregister_leaves_a_newer_servers_entry_alone(state_home: Path) -> None:
    ours = registry.register("http://127.0.0.1:4243", "healthy", "127.0.0.1:9876")
    assert ours is not None
    # another server took the same port after us and wrote its own entry
    ours.path.write_text(json.dumps({"url": "http://127.0.0.1:4243", "scenario": "other",
                                     "namesrv": "127.0.0.1:9877", "pid": os.getppid()}))
    registry.unregister(ours)
    assert ours.path.exists()
