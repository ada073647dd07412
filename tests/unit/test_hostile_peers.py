"""The CLI against hostile name servers and brokers: one error line, a documented code, each question asked once.

Each case runs ``python -m rmqctl`` as a process against a scripted loopback server that sends a
malformed body, deep JSON, a huge integer, a bad header, never answers or resets the connection.
The process must exit 3 (connection/protocol) or 4 (timeout), print one ``rmqctl: error:`` line
(and at most its hint), and no traceback or asyncio "never retrieved" noise; a server that never
answers is asked each question once and waited on for one ``--timeout``, never again.
"""

from __future__ import annotations

import json
import os
import re
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rmqctl.remoting.codes import RequestCode
from rmqctl.remoting.frame import RemotingCommand
from tests.fakes import FakeServer, Raw, Reset, Silence, mq_key

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 1.5


def run_cli(*args: str, timeout: float = TIMEOUT) -> tuple[int, list[str]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RMQCTL_CONFIG": str(ROOT / "nonexistent.toml")}
    env.pop("NAMESRV_ADDR", None)
    proc = subprocess.run([sys.executable, "-m", "rmqctl", "--timeout", str(timeout), *args], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=60)
    return proc.returncode, proc.stderr.splitlines()


def reported_waits(line: str) -> list[float]:
    """The waits an error line reports, in seconds: ``timed out after 1.49999s`` (each request is
    given what is left of the command's deadline)."""
    return [float(w) for w in re.findall(r"timed out after ([0-9.]+)s", line)]


def assert_one_error_line(lines: list[str]) -> None:
    text = "\n".join(lines)
    assert "Traceback" not in text and "never retrieved" not in text, text
    assert lines and lines[0].startswith("rmqctl: error: "), text
    assert len(lines) == 1 or (len(lines) == 2 and lines[1].startswith("hint: ")), text


def frame_with_header(header: dict[str, Any], body: bytes = b"") -> bytes:
    raw = json.dumps(header).encode()
    return struct.pack(">ii", 4 + len(raw) + len(body), len(raw)) + raw + body


def answer(body: bytes) -> Any:
    return lambda req: (0, body)


def bad_header(req: RemotingCommand) -> Raw:
    return Raw(frame_with_header({"code": 0, "flag": 1, "opaque": "x" * 10}))


def header_with_opaque(value: Any) -> Any:
    return lambda req: Raw(frame_with_header({"code": 0, "flag": 1, "opaque": req.opaque, "version": value}))


NAMESRV_CASES = {
    "malformed-body": answer(b'{"brokerAddrTable":{'),
    "deep-json": answer(b"[" * 200_000),
    "deep-header": lambda req: Raw(frame_with_header({"code": 0, "x": [[[[[[[[[[[[[[[[[[[[0]]]]]]]]]]]]]]]]]]]]})),
    "huge-integer": answer(b'{"brokerAddrTable":{},"clusterAddrTable":{"c":[' + b"9" * 6000 + b"]}}"),
    "quadratic-string": answer(b'"' + b'\\"' * 24_000),
    "nan": answer(b'{"brokerAddrTable":{"b":{"brokerAddrs":{0:NaN}}}}'),
    "wrong-types": answer(b'{"brokerAddrTable":true,"clusterAddrTable":[]}'),
    "bad-header-type": bad_header,
    "version-as-list": header_with_opaque([1]),
    "garbage-length": lambda req: Raw(b"\x7f\xff\xff\xffgarbage"),
    "never-answers": lambda req: Silence(),
    "resets": lambda req: Reset(),
}


@pytest.mark.parametrize("case", sorted(NAMESRV_CASES))
def test_cluster_list_against_a_hostile_name_server(case: str) -> None:
    with FakeServer({RequestCode.GET_BROKER_CLUSTER_INFO: NAMESRV_CASES[case]}) as server:
        code, lines = run_cli("-n", server.address, "cluster", "list")
    assert code in (3, 4), (code, lines)
    assert code == (4 if case == "never-answers" else 3), (code, lines)
    assert_one_error_line(lines)
    # asked once, not again after the answer failed or the deadline passed (a reset connection
    # is retried once on a fresh one, within the same deadline)
    tries = 2 if case == "resets" else 1
    assert [r.code for r in server.requests] == [RequestCode.GET_BROKER_CLUSTER_INFO] * tries
    if case == "never-answers":
        (wait,) = reported_waits(lines[0])  # one wait, of (nearly all of) the one deadline
        assert TIMEOUT - 0.25 < wait <= TIMEOUT, lines


def cluster_with(broker_address: str) -> dict[str, Any]:
    return {
        "brokerAddrTable": {"broker-a": {"brokerName": "broker-a", "cluster": "c",
                                         "brokerAddrs": {0: broker_address}}},
        "clusterAddrTable": {"c": ["broker-a"]},
    }


BROKER_CASES = {
    "deep-json": answer(b"{" + b'"a":{' * 100_000),
    "huge-integer": answer(b'{"offsetTable":{},"consumeTps":' + b"1" * 6000 + b"}"),
    "wrong-types": answer(b'{"connectionSet":[true],"offsetTable":[1,2]}'),
    "never-answers": lambda req: Silence(),
    "resets": lambda req: Reset(),
}


@pytest.mark.parametrize("case", sorted(BROKER_CASES))
def test_group_progress_against_a_hostile_broker(case: str) -> None:
    handler = BROKER_CASES[case]
    with FakeServer({RequestCode.GET_CONSUMER_CONNECTION_LIST: handler,
                     RequestCode.GET_CONSUME_STATS: handler}) as broker:
        namesrv = {RequestCode.GET_BROKER_CLUSTER_INFO: lambda req: (0, cluster_with(broker.address))}
        with FakeServer(namesrv) as ns:
            code, lines = run_cli("-n", ns.address, "group", "progress", "G")
    assert code in (3, 4), (code, lines)
    assert_one_error_line(lines)
    # a black-holed broker used to hold group progress for 3 x --timeout: each question goes to
    # it once (a reset connection: once more on a fresh one), and one deadline is reported
    asked = [r.code for r in broker.requests]
    tries = 2 if case == "resets" else 1
    assert RequestCode.GET_CONSUMER_CONNECTION_LIST in asked, asked
    assert all(asked.count(code) <= tries for code in asked), asked
    if case == "never-answers":
        (wait,) = reported_waits(lines[0])  # one wait, of (nearly all of) the one deadline
        assert TIMEOUT - 0.25 < wait <= TIMEOUT, lines


def test_group_list_and_show_against_resetting_brokers_print_no_asyncio_noise() -> None:
    def topics(req: RemotingCommand) -> tuple[int, Any]:
        return 0, {"topicList": ["%RETRY%G1", "%RETRY%G2", "T"]}

    def flaky(req: RemotingCommand) -> Any:
        # every other request is reset, so some arrive while others are in flight
        flaky.calls += 1  # type: ignore[attr-defined]
        if flaky.calls % 2:  # type: ignore[attr-defined]
            return Reset()
        return 0, {"offsetTable": {mq_key("T", "broker-a", 0): {"brokerOffset": 1, "consumerOffset": 1}}}

    flaky.calls = 0  # type: ignore[attr-defined]
    handlers = {code: flaky for code in (RequestCode.GET_CONSUMER_CONNECTION_LIST, RequestCode.GET_CONSUME_STATS,
                                         RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)}
    with FakeServer(handlers) as broker:
        namesrv = {RequestCode.GET_BROKER_CLUSTER_INFO: lambda req: (0, cluster_with(broker.address)),
                   RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER: topics}
        with FakeServer(namesrv) as ns:
            for args in (["group", "list"], ["group", "show", "G1"]) * 3:
                code, lines = run_cli("-n", ns.address, *args)
                text = "\n".join(lines)
                assert "never retrieved" not in text and "Traceback" not in text, text
                assert code in (0, 3, 5), (code, text)


def test_config_timeout_must_be_finite(tmp_path: Path) -> None:
    for value, bad in (("inf", True), ("nan", True), ("0", True), ("1e308", True), ("2.5", False)):
        config = tmp_path / "config.toml"
        config.write_text(f'current-context = "x"\n[contexts.x]\nnamesrv = "127.0.0.1:1"\ntimeout = {value}\n')
        env = {**os.environ, "PYTHONPATH": str(ROOT), "RMQCTL_CONFIG": str(config)}
        env.pop("NAMESRV_ADDR", None)
        proc = subprocess.run([sys.executable, "-m", "rmqctl", "cluster", "list"], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=60)
        lines = proc.stderr.splitlines()
        if bad:
            assert proc.returncode == 2, (value, proc.stderr)
            assert len(lines) == 1 and "timeout" in lines[0], proc.stderr
        else:
            assert proc.returncode == 3, (value, proc.stderr)  # valid; port 1 refuses


@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "0", "-1", "1e308"])
def test_timeout_option_must_be_finite_and_positive(value: str) -> None:
    code, lines = run_cli("-n", "127.0.0.1:1", "cluster", "list", timeout=value)  # type: ignore[arg-type]
    assert code == 2
    assert len(lines) == 1 and lines[0].startswith("rmqctl: error: --timeout"), lines


def test_debug_shows_the_field_and_the_raw_body() -> None:
    with FakeServer({RequestCode.GET_BROKER_CLUSTER_INFO: answer(b'{"brokerAddrTable":true}')}) as server:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "RMQCTL_CONFIG": str(ROOT / "nonexistent.toml")}
        proc = subprocess.run([sys.executable, "-m", "rmqctl", "--debug", "-n", server.address, "cluster", "list"],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 3
    assert "brokerAddrTable: expected an object, got bool" in proc.stderr
    assert "raw bytes: b'{\"brokerAddrTable\":true}'" in proc.stderr
