"""The command line's edges a new operator meets: empty or misplaced options, a broken config
file beside an explicit ``-n``, a URL or an HTTP port given as a name server, descending sort,
``group show``'s per-client DIFFERS and a spark-submit line that works as printed."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rmqctl.cli.app import app
from rmqctl.cli.render import select_rows
from rmqctl.errors import UsageError
from tests.fakes import free_port

runner = CliRunner()
E = ("--emulator", "tag-overwrite")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An operator's fresh account: no config, no NAMESRV_ADDR, no emulator registry."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / ".config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / ".state"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / ".cache"))
    for name in ("NAMESRV_ADDR", "RMQCTL_CONFIG", "RMQCTL_EMULATOR_URL", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def _config(home: Path, text: str) -> Path:
    path = home / ".config" / "rmqctl" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _dead_address() -> str:
    return f"127.0.0.1:{free_port()}"


# -- 1. an empty -n -------------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["", " ", ";"])
@pytest.mark.parametrize("where", ["before", "after"])
def test_an_empty_namesrv_is_a_usage_error_not_the_current_context(home: Path, value: str, where: str) -> None:
    current = _dead_address()
    _config(home, f'current-context = "prod"\n[contexts.prod]\nnamesrv = "{current}"\n')
    argv = ["-n", value, "group", "list"] if where == "before" else ["group", "list", "-n", value]
    result = runner.invoke(app, [*argv, "--timeout", "1"])
    assert result.exit_code == 2, result.stderr
    assert result.stderr.splitlines() == [
        "rmqctl: error: -n/--namesrv is empty: give host:port (or leave the option out)"]
    assert current not in result.stderr


# -- 2. options that need the emulator ------------------------------------------------------------

@pytest.mark.parametrize("argv", [
    ["--at", "5", "-n", "127.0.0.1:1", "group", "list"],
    ["group", "list", "-n", "127.0.0.1:1", "--at", "5"],
    ["group", "show", "G", "--at", "90s", "-n", "127.0.0.1:1"],
    ["--at", "5", "group", "list"],
])
def test_at_without_the_emulator_is_refused(home: Path, argv: list[str]) -> None:
    result = runner.invoke(app, argv)
    assert result.exit_code == 2, result.stderr
    assert result.stderr.splitlines() == [
        "rmqctl: error: --at needs --emulator SCENARIO (it advances the emulated scenario)"]


def test_at_with_the_emulator_still_works(home: Path) -> None:
    result = runner.invoke(app, [*E, "--at", "5", "group", "list", "-o", "json"])
    assert result.exit_code == 0, result.stderr


def _cli(*argv: str) -> subprocess.CompletedProcess[str]:
    """A real process (the TUI must not start inside the test's own)."""
    return subprocess.run([sys.executable, "-m", "rmqctl", *argv], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=60, env={**os.environ, "TERM": "dumb"})


def test_tui_speed_and_at_without_the_emulator_are_refused(home: Path) -> None:
    speed = _cli("tui", "--speed", "3", "-n", "127.0.0.1:1")
    assert (speed.returncode, speed.stderr.splitlines()) == (
        2, ["rmqctl: error: --speed needs --emulator SCENARIO (it runs the emulated scenario faster)"])
    at = _cli("--at", "5", "tui", "--emulator", "tag-overwrite")
    assert at.returncode == 2
    assert at.stderr.splitlines()[0].startswith("rmqctl: error: --at does not apply to tui")


# -- 3. a broken config file and an explicit -n ----------------------------------------------------

def test_an_explicit_namesrv_works_beside_a_broken_config(home: Path) -> None:
    path = _config(home, "current-context = [\n")
    dead = _dead_address()
    result = runner.invoke(app, ["-n", dead, "group", "list", "--timeout", "1"])
    assert result.exit_code == 3, result.stderr  # it tried the name server: connection refused
    assert "config" not in result.stderr and dead in result.stderr
    needed = runner.invoke(app, ["group", "list", "--timeout", "1"])
    assert needed.exit_code == 2
    assert needed.stderr.splitlines()[0].startswith(f"rmqctl: error: config file {path} is not valid TOML")
    context = runner.invoke(app, ["-n", dead, "--context", "prod", "group", "list", "--timeout", "1"])
    assert context.exit_code == 2 and str(path) in context.stderr


def test_an_unknown_context_names_the_file_it_was_looked_for_in(home: Path) -> None:
    path = _config(home, '[contexts.prod]\nnamesrv = "h:9876"\n')
    result = runner.invoke(app, ["--context", "nope", "group", "list"])
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0] == f"rmqctl: error: unknown context 'nope' in {path} (known: prod)"


def test_namesrv_addr_works_beside_a_broken_config(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _config(home, "[contexts.prod]\nnamesrv = 5\n")
    monkeypatch.setenv("NAMESRV_ADDR", _dead_address())
    result = runner.invoke(app, ["group", "list", "--timeout", "1"])
    assert result.exit_code == 3, result.stderr
    assert "config" not in result.stderr


# -- 4. a URL, and an HTTP port ----------------------------------------------------------------------

@pytest.mark.parametrize("value", ["http://127.0.0.1:8080", "https://mq.example.com", "tcp://10.0.0.1:9876"])
def test_a_url_as_namesrv_is_named_as_such(home: Path, value: str) -> None:
    result = runner.invoke(app, ["-n", value, "group", "list", "--timeout", "1"])
    assert result.exit_code == 2, result.stderr
    assert result.stderr.splitlines() == [
        f"rmqctl: error: -n takes host:port, not a URL ({value}); for a dashboard use --dashboard"]


def test_a_url_in_a_context_or_the_environment_is_named_too(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _config(home, 'current-context = "web"\n[contexts.web]\nnamesrv = "http://h:8080"\n')
    result = runner.invoke(app, ["group", "list"])
    assert (result.exit_code, result.stderr.splitlines()[0]) == (
        2, "rmqctl: error: contexts.web.namesrv takes host:port, not a URL (http://h:8080); "
           "for a dashboard use --dashboard")
    _config(home, "")
    monkeypatch.setenv("NAMESRV_ADDR", "http://h:8080")
    result = runner.invoke(app, ["group", "list"])
    assert result.exit_code == 2
    assert result.stderr.startswith("rmqctl: error: NAMESRV_ADDR takes host:port, not a URL")


@contextlib.contextmanager
def _http_port() -> Iterator[str]:
    """A port that answers whatever it is sent as a web server does: HTTP/1.1 400."""
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(2)
                with contextlib.suppress(OSError):
                    conn.recv(4096)
                    conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        thread.join()
        server.close()


def test_a_peer_answering_in_http_is_named(home: Path) -> None:
    with _http_port() as address:
        result = runner.invoke(app, ["-n", address, "group", "list", "--timeout", "3"])
    assert result.exit_code == 3, result.stderr
    assert result.stderr.splitlines() == [
        f"rmqctl: error: {address} answered in HTTP, not RocketMQ's remoting protocol: "
        "is it a dashboard or a proxy's HTTP port?"]
    assert "frame length" not in result.stderr


# -- 5. descending sort --------------------------------------------------------------------------------

ROWS = [{"name": "a", "diff": 3}, {"name": "b", "diff": None}, {"name": "c", "diff": 10},
        {"name": "d", "diff": 3}, {"name": "e", "diff": 0}]


def test_sort_minus_column_sorts_descending_nothing_last() -> None:
    up = select_rows(ROWS, ("name", "diff"), name_key="name", sort="diff")
    assert [r["name"] for r in up] == ["e", "a", "d", "c", "b"]
    down = select_rows(ROWS, ("name", "diff"), name_key="name", sort="-diff")
    assert [r["name"] for r in down] == ["c", "a", "d", "e", "b"]  # equal values keep their order
    assert [r["name"] for r in select_rows(ROWS, ("name", "diff"), name_key="name", sort="-DIFF")] == \
        [r["name"] for r in down]
    assert [r["name"] for r in select_rows(ROWS, ("name", "diff"), name_key="name", sort="-name")] == \
        ["e", "d", "c", "b", "a"]
    with pytest.raises(UsageError, match="no column '-nope'"):
        select_rows(ROWS, ("name", "diff"), name_key="name", sort="-nope")


@pytest.mark.parametrize("argv", [
    ["group", "progress", "test-consumer", "--sort", "-queue_id"],
    ["group", "list", "--sort", "-clients"],
    ["topic", "list", "--sort", "-topic"],
    ["cluster", "list", "--sort", "-broker"],
    ["topic", "status", "TopicTest2", "--sort", "-queue_id"],
])
def test_sort_minus_column_everywhere_sort_exists(home: Path, argv: list[str]) -> None:
    result = runner.invoke(app, [*E, *argv, "-o", "json"])
    assert result.exit_code == 0, result.stderr


def test_group_progress_sorts_descending(home: Path) -> None:
    result = runner.invoke(app, [*E, "group", "progress", "test-consumer", "--sort", "-queue_id",
                                 "--match", "^TopicTest2$", "-o", "json"])
    assert result.exit_code == 0, result.stderr
    assert [q["queue_id"] for q in json.loads(result.stdout)["queues"]] == [3, 2, 1, 0]


# -- 6. group show: DIFFERS per client ------------------------------------------------------------------

def test_group_show_marks_only_the_client_that_differs_from_the_broker(home: Path) -> None:
    doc = json.loads(runner.invoke(app, [*E, "group", "show", "test-consumer", "-o", "json"]).stdout)
    assert {(s["source"], s["expression"], s["differs"]) for s in doc["subscriptions"]} == {
        ("broker:broker-a", "tag2", False),
        ("client:10.0.0.1@consumer1", "tag1", True),
        ("client:10.0.0.2@consumer2", "tag2", False),
    }
    table = runner.invoke(app, [*E, "group", "show", "test-consumer"]).stdout
    marked = [line.split()[1] for line in table.splitlines() if line.rstrip().endswith("DIFFERS")]
    assert marked == ["client:10.0.0.1@consumer1"]


# -- 7. spark-submit as printed ---------------------------------------------------------------------

def test_print_submit_puts_spark_options_before_the_script(home: Path, tmp_path: Path) -> None:
    result = runner.invoke(app, ["analyze", "stuck", str(tmp_path), "--driver-memory", "2g",
                                 "--master", "spark://10.1.2.3:7077", "--print-submit"])
    assert result.exit_code == 0, result.stderr
    argv = shlex.split(result.stdout)
    script = next(i for i, word in enumerate(argv) if word.endswith("/analysis/stuck.py"))
    spark, job = argv[:script], argv[script + 1:]
    assert spark[spark.index("--driver-memory") + 1] == "2g"
    assert spark[spark.index("--master") + 1] == "spark://10.1.2.3:7077"
    assert "--driver-memory" not in job  # after the script it would be the job's argument, too late
    assert job[0] == str(tmp_path.resolve())
