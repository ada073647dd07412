"""Values no calendar holds, from a broker we do not control, render as such instead of crashing.

A broker that stores ``Long.MAX_VALUE`` (or a negative number) as a queue's last update or a
group's last consume time made the ``topic status`` and ``group progress`` tables raise
OverflowError from the date formatting. The JSON document keeps the number as sent.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from rmqctl.model import format_millis
from rmqctl.remoting.codes import RequestCode
from tests.fakes import FakeServer, mq_key
from tests.unit.test_hostile_peers import ROOT, cluster_with

LONG_MAX = 2**63 - 1


@pytest.mark.parametrize("ts", [LONG_MAX, -LONG_MAX, 10**20, -(10**15)])
def test_out_of_range_millis_are_named(ts: int) -> None:
    assert format_millis(ts) == f"out of range ({ts})"


def test_an_ordinary_time_still_renders_as_a_date() -> None:
    text = format_millis(1_700_000_000_000)  # 2023-11-14, in whatever zone the machine is in
    assert text.startswith("2023-11-1") and len(text) == len("2023-11-14 22:13:20")


def run_cli(*args: str) -> tuple[int, str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RMQCTL_CONFIG": str(ROOT / "nonexistent.toml")}
    proc = subprocess.run([sys.executable, "-m", "rmqctl", "--timeout", "3", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)
    return proc.returncode, proc.stdout, proc.stderr


def route(address: str) -> dict[str, object]:
    return {"brokerDatas": [{"brokerName": "broker-a", "cluster": "c", "brokerAddrs": {0: address}}],
            "queueDatas": [{"brokerName": "broker-a", "readQueueNums": 1, "writeQueueNums": 1, "perm": 6}]}


@pytest.mark.parametrize("ts", [LONG_MAX, -(10**15)])
def test_topic_status_with_a_timestamp_of_long_max(ts: int) -> None:
    stats = {"offsetTable": {mq_key("T", "broker-a", 0): {"minOffset": 0, "maxOffset": 5, "lastUpdateTimestamp": ts}}}
    with FakeServer({RequestCode.GET_TOPIC_STATS_INFO: lambda req: (0, stats)}) as broker:
        namesrv = {RequestCode.GET_BROKER_CLUSTER_INFO: lambda req: (0, cluster_with(broker.address)),
                   RequestCode.GET_ROUTEINFO_BY_TOPIC: lambda req: (0, route(broker.address))}
        with FakeServer(namesrv) as ns:
            code, table, err = run_cli("-n", ns.address, "topic", "status", "T")
            assert (code, err) == (0, "")
            assert f"out of range ({ts})" in table
            code, doc, err = run_cli("-n", ns.address, "topic", "status", "T", "-o", "json")
    assert (code, err) == (0, "")
    (queue,) = json.loads(doc)["queues"]
    assert (queue["max_offset"], queue["last_updated_ts"]) == (5, ts)


@pytest.mark.parametrize(("address", "words"), [
    pytest.param("h:¹²", "expected host:port", id="superscript-port"),
    pytest.param("h:٩٨٧٦", "expected host:port", id="arabic-indic-port"),
    pytest.param("a" * 100_000 + ":9876", "longer than 253 characters", id="100k-host-name"),
    pytest.param("x" * 64 + ".example:9876", "not a valid DNS host name", id="label-over-63"),
])
def test_addresses_no_resolver_takes_are_usage_errors(address: str, words: str) -> None:
    code, out, err = run_cli("-n", address, "cluster", "list")
    lines = err.splitlines()
    assert code == 2 and out == "", err
    assert lines[0].startswith("rmqctl: error: invalid address") and words in lines[0], lines
    assert len(lines[0]) < 200 and "Traceback" not in err


@pytest.mark.parametrize("value", ["--1", "²", "1²", "-", "12345678901", " 7 "])
def test_header_ints_python_would_not_parse_are_protocol_errors(value: str) -> None:
    import struct

    from rmqctl.errors import ProtocolError
    from rmqctl.remoting import frame

    header = json.dumps({"code": 0, "flag": 1, "opaque": value}).encode()
    payload = struct.pack(">i", len(header)) + header
    if value == " 7 ":  # surrounding blanks around ASCII digits are tolerated, as before
        assert frame.decode_payload(payload).opaque == 7
        return
    with pytest.raises(ProtocolError, match="is not a 32-bit integer"):
        frame.decode_payload(payload)
