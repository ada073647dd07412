"""CLI behaviour against scripted servers: partial results, unknown groups, dead name servers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest
from typer.testing import CliRunner

from rmqctl.cli.app import app
from tests.fakes import FakeServer, free_port, mq_key
from tests.unit.test_hostile_peers import reported_waits

GROUP = "G1"
TOPIC = "T1"


def _broker_handlers(broker: str) -> dict[int, Any]:
    def connections(req):
        if req.ext_fields.get("consumerGroup") != GROUP:
            return 206, None
        return 0, {
            "connectionSet": [{"clientAddr": "127.0.0.1:5000", "clientId": "10.0.0.1@c1",
                               "language": "JAVA", "version": 479}],
            "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET", "consumeType": "CONSUME_PASSIVELY",
            "messageModel": "CLUSTERING",
            "subscriptionTable": {TOPIC: {"classFilterMode": False, "codeSet": [], "expressionType": "TAG",
                                          "subString": "*", "subVersion": 1, "tagsSet": [], "topic": TOPIC}},
        }

    def stats(req):
        if req.ext_fields.get("consumerGroup") != GROUP:
            return 0, {"consumeTps": 0.0, "offsetTable": {}}
        return 0, {"consumeTps": 2.0, "offsetTable": {
            mq_key(TOPIC, broker, q): {"brokerOffset": 10 + q, "consumerOffset": 4, "lastTimestamp": 0,
                                       "pullOffset": 6}
            for q in range(2)}}

    def running(req):
        return 0, {"mqTable": {mq_key(TOPIC, broker, 0): {"commitOffset": 4, "droped": False}},
                   "properties": {"PROP_CONSUME_TYPE": "CONSUME_PASSIVELY"},
                   "subscriptionSet": [{"topic": TOPIC, "subString": "*", "subVersion": 1}]}

    def route(req):
        return 0, {"brokerDatas": [], "queueDatas": []}

    return {203: connections, 208: stats, 307: running, 201: lambda r: (0, {"subscriptionGroupTable": {}})}


@pytest.fixture
def cluster():
    dead_port = free_port()  # nothing listens here: broker-b is down
    with FakeServer(_broker_handlers("broker-a")) as broker_a:
        def cluster_info(req):
            return 0, {"brokerAddrTable": {
                "broker-a": {"brokerAddrs": {0: broker_a.address}, "brokerName": "broker-a", "cluster": "C"},
                "broker-b": {"brokerAddrs": {0: f"127.0.0.1:{dead_port}"}, "brokerName": "broker-b",
                             "cluster": "C"}},
                "clusterAddrTable": {"C": ["broker-a", "broker-b"]}}

        def route(req):
            if req.ext_fields["topic"] != TOPIC:
                return 17, None
            return 0, {"brokerDatas": [{"brokerAddrs": {"0": broker_a.address}, "brokerName": "broker-a",
                                        "cluster": "C"}],
                       "queueDatas": [{"brokerName": "broker-a", "perm": 6, "readQueueNums": 2,
                                       "writeQueueNums": 2, "topicSysFlag": 0}]}

        with FakeServer({106: cluster_info, 105: route}) as namesrv:
            yield namesrv


def test_partial_result_prints_rows_and_names_the_dead_broker(cluster) -> None:
    result = CliRunner().invoke(app, ["group", "progress", GROUP, "-n", cluster.address, "-o", "json",
                                      "--timeout", "2"])
    assert result.exit_code == 5
    rows = json.loads(result.stdout)["queues"]
    assert [(r["broker"], r["queue_id"], r["diff"], r["inflight"]) for r in rows] == [
        ("broker-a", 0, 6, 2), ("broker-a", 1, 7, 2)]
    assert rows[0]["owner"] == "10.0.0.1@c1" and rows[1]["owner"] is None
    assert "broker-b" in result.stderr and "partial result" in result.stderr
    assert "Traceback" not in result.stderr


def test_unknown_group_with_a_dead_broker_is_a_partial_result(cluster) -> None:
    # every broker must answer for "unknown" to be a verdict: use only the live one
    result = CliRunner().invoke(app, ["group", "show", "NOPE", "-n", cluster.address, "--timeout", "2"])
    # broker-b is dead and might be the one hosting the group: no verdict of "unknown", a
    # partial result that names the dead broker
    assert result.exit_code == 5, result.stderr
    assert "broker-b" in result.stderr and "partial result" in result.stderr
    assert "Traceback" not in result.stderr


def test_unreachable_namesrv_exits_3_naming_the_address() -> None:
    port = free_port()
    proc = subprocess.run(
        [sys.executable, "-m", "rmqctl.cli.app", "group", "list", "-n", f"127.0.0.1:{port};127.0.0.1:{port + 1}",
         "--timeout", "1"], capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 3
    assert f"127.0.0.1:{port}" in proc.stderr
    assert proc.stderr.count("\n") <= 2 and "Traceback" not in proc.stderr


def test_bad_address_and_bad_flag_are_usage_errors() -> None:
    runner = CliRunner()
    bad = runner.invoke(app, ["group", "list", "-n", "not-an-address"])
    assert bad.exit_code == 2 and "invalid address" in bad.stderr
    typo = runner.invoke(app, ["group", "list", "--namesrvv", "x:1"])
    assert typo.exit_code == 2


@pytest.mark.parametrize(("argv", "message", "where"), [
    (["group", "list", "--namesrvv", "x:1"], "No such option: --namesrvv", "rmqctl group list"),
    (["--bogus", "group", "list"], "No such option: --bogus", "rmqctl"),
    (["group", "lst"], "No such command 'lst'. Did you mean 'list'?", "rmqctl group"),
    (["group", "show"], "Missing argument 'group'.", "rmqctl group show"),
    (["doctor", "--all", "--fail-on", "sometimes"], "Invalid value for '--fail-on': 'sometimes'", "rmqctl doctor"),
    (["group", "list", "--timeout", "abc"], "Invalid value for '--timeout': 'abc'", "rmqctl group list"),
])
def test_a_mistake_on_the_command_line_is_one_error_line_and_a_hint(
        argv: list[str], message: str, where: str) -> None:
    # the real process: Typer's own error block (usage lines, a boxed message) must not appear
    proc = subprocess.run([sys.executable, "-m", "rmqctl", *argv], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "COLUMNS": "80"})
    assert proc.returncode == 2 and proc.stdout == ""
    first, hint = proc.stderr.splitlines()
    assert first.startswith(f"rmqctl: error: {message}")
    assert hint == f"hint: see 'python -m {where} -h'"  # click names a `-m` run so


def test_a_group_without_its_command_still_shows_its_help() -> None:
    result = CliRunner().invoke(app, ["group"])
    assert result.exit_code == 2
    assert "list" in result.output and "show" in result.output and "rmqctl: error" not in result.output


def test_silent_name_server_is_a_timeout_exit_4() -> None:
    import socket
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    accepted: list[socket.socket] = []

    def accept_all() -> None:
        try:
            while True:
                accepted.append(listener.accept()[0])
        except OSError:
            return  # the listener was closed

    thread = threading.Thread(target=accept_all, daemon=True)
    thread.start()
    port = listener.getsockname()[1]
    try:
        result = CliRunner().invoke(app, ["group", "list", "-n", f"127.0.0.1:{port}", "--timeout", "0.3"])
        assert result.exit_code == 4, result.stderr
        assert f"127.0.0.1:{port} timed out after" in result.stderr
        (wait,) = reported_waits(result.stderr)  # one wait, within the one deadline
        assert 0 < wait <= 0.3, result.stderr
        # one connection, waited on for one --timeout, never reopened for another try; a last
        # connection of our own is accepted after every one the command made (accept is FIFO)
        def peer(sock: socket.socket) -> object:
            try:
                return sock.getpeername()
            except OSError:  # reset by the command's side
                return None

        with socket.create_connection(("127.0.0.1", port)) as sentinel:
            mine = sentinel.getsockname()
            for _ in range(500):
                if any(peer(s) == mine for s in list(accepted)):
                    break
                threading.Event().wait(0.01)  # the accepting thread has no event to await
            assert [peer(s) == mine for s in accepted] == [False, True]
    finally:
        listener.shutdown(socket.SHUT_RDWR)
        listener.close()
        thread.join(5)
        for sock in accepted:
            sock.close()
