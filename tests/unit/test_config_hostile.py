"""The config file under hostile conditions: never readable by others while saved, never a hang or
a traceback whatever RMQCTL_CONFIG points at, and no password of a dashboard URL printed.

Each bad file must end the command with one ``rmqctl: error:`` line and exit 2 (configuration).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from rmqctl.config import MAX_CONFIG_BYTES, Config
from tests.unit.test_hostile_peers import ROOT


def rmqctl(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RMQCTL_CONFIG": str(config), "PYTHONPATH": str(ROOT)}
    env.pop("NAMESRV_ADDR", None)
    return subprocess.run([sys.executable, "-m", "rmqctl", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=30)


def assert_config_error(result: subprocess.CompletedProcess[str], words: str) -> None:
    lines = result.stderr.splitlines()
    assert result.returncode == 2, result.stderr
    assert lines and lines[0].startswith("rmqctl: error: ") and words in lines[0], lines
    assert "Traceback" not in result.stderr and len(lines) <= 2, lines


def test_no_file_of_the_config_directory_is_ever_readable_by_others(tmp_path: Path) -> None:
    # another user polling the directory while contexts are saved must never find a file it can
    # read: the temporary file is created 0600, not chmod-ed after its secret was written
    os.umask(0o022)
    seen: set[int] = set()
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            for entry in os.scandir(tmp_path):
                try:
                    seen.add(stat.S_IMODE(entry.stat(follow_symlinks=False).st_mode))
                except FileNotFoundError:
                    pass

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        config = Config(path=tmp_path / "config.toml")
        for n in range(300):
            config.contexts["prod"] = {"namesrv": "10.0.0.1:9876", "access_key": "ak", "secret_key": f"s{n}" * 2000}
            config.save()
    finally:
        done.set()
        watcher.join()
    assert seen == {0o600}, sorted(oct(m) for m in seen)
    assert [p.name for p in tmp_path.iterdir()] == ["config.toml"]  # no temporary file left behind


@pytest.mark.parametrize(("content", "words"), [
    pytest.param("a = " + "[" * 50_000 + "]" * 50_000 + "\n", "nested too deeply", id="deep-arrays"),
    pytest.param("a = " + "{b = " * 3000 + "1" + "}" * 3000 + "\n", "not valid TOML", id="deep-inline-tables"),
    pytest.param("#" * (MAX_CONFIG_BYTES + 10), "larger than 1024 KiB", id="oversized"),
    pytest.param(b"\xff\xfe = 1", "not UTF-8", id="not-utf8"),
])
def test_bad_config_files_are_one_line_and_exit_2(tmp_path: Path, content: str | bytes, words: str) -> None:
    path = tmp_path / "config.toml"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    assert_config_error(rmqctl(path, "config", "view"), words)


@pytest.mark.parametrize("kind", ["dev-zero", "fifo", "directory"])
def test_a_config_that_is_not_a_regular_file_is_refused_at_once(tmp_path: Path, kind: str) -> None:
    if kind == "dev-zero":
        path = Path("/dev/zero")
    elif kind == "fifo":
        path = tmp_path / "config.toml"
        os.mkfifo(path)  # nobody writes to it: reading would block for ever
    else:
        path = tmp_path / "config.toml"
        path.mkdir()
    result = rmqctl(path, "config", "view")  # the 30 s subprocess timeout is the hang detector
    assert_config_error(result, "config file")
    assert "not a regular file" in result.stderr or "Is a directory" in result.stderr


@pytest.mark.parametrize("dashboard", [
    'dashboard = "http://ops:hunter2@dash:8082/api"',
    'dashboard = { url = "https://ops:hunter2@dash:8082", user = "ops" }',
])
def test_config_view_masks_the_password_inside_a_dashboard_url(tmp_path: Path, dashboard: str) -> None:
    path = tmp_path / "config.toml"
    path.write_text(f'current-context = "p"\n[contexts.p]\nnamesrv = "h:9876"\n{dashboard}\n')
    for output in ("json", "table"):
        result = rmqctl(path, "config", "view", "-o", output)
        assert result.returncode == 0, result.stderr
        assert "hunter2" not in result.stdout + result.stderr
    doc = json.loads(rmqctl(path, "config", "view", "-o", "json").stdout)
    assert "ops:******@dash:8082" in json.dumps(doc)
