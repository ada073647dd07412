"""The served emulator: HTTP control API, `emulator ctl`, `emulator serve` and TCP clients."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import struct
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from rmqctl import errors
from rmqctl.cli.app import app as rmqctl_app
from rmqctl.emulator.control import ControlServer
from rmqctl.emulator.scenario import load_scenario
from rmqctl.emulator.serve import ServeOptions, running_emulator
from rmqctl.emulator.world import EmulatedCluster
from rmqctl.model import parse_tag_expression
from rmqctl.remoting import bodies, frame
from rmqctl.remoting.admin import AdminClient
from rmqctl.remoting.bodies import ConsumerData, HeartbeatData
from rmqctl.remoting.codes import RequestCode, ResponseCode
from rmqctl.remoting.connection import Connection
from tests.emulator.helpers import served_in_thread

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 20.0


async def test_control_api_drives_a_virtual_clock_emulator() -> None:
    options = ServeOptions(clock="virtual", at=10)
    async with (running_emulator(load_scenario("idle-consumers"), options) as (served, cluster),
                httpx.AsyncClient(base_url=served.control, timeout=TIMEOUT) as http):
        health = (await http.get("/v1/health")).json()
        assert health["clock"] == "virtual" and health["at"] == 10
        clients = (await http.get("/v1/clients")).json()["clients"]
        assert [c["client_id"] for c in clients] == ["10.0.0.1@pushConsumer1", "10.0.0.2@pushConsumer2"]

        started = await http.post("/v1/consumers", json={
            "group": "new-group", "topic": "TopicTest", "expr": "TagB", "client_id": "10.0.0.9@new"})
        assert started.status_code == 201, started.text
        assert started.json()["subscriptions"] == {"TopicTest": "TagB"}
        sent = (await http.post("/v1/produce", json={"topic": "TopicTest", "tag": "TagB", "count": 4})).json()
        assert sent["sent"] == 4 and {m["queue_id"] for m in sent["messages"]} == {0}
        advanced = (await http.post("/v1/advance", json={"seconds": 20})).json()
        assert advanced["at"] == 30

        clients = {c["client_id"]: c for c in (await http.get("/v1/clients")).json()["clients"]}
        assert clients["10.0.0.9@new"]["received_by_tag"] == {"TagB": 4}
        assert clients["10.0.0.1@pushConsumer1"]["received_by_tag"] == {"TagA": 10, "TagB": 4}

        # the same state is what a remoting client sees
        admin = AdminClient([served.namesrv])
        try:
            conn = await admin.consumer_connection(served.brokers["broker-a"], "new-group")
            assert [c.client_id for c in conn.connections] == ["10.0.0.9@new"]
        finally:
            await admin.close()

        stopped = await http.post("/v1/consumers/stop", json={"client_id": "10.0.0.1@pushConsumer1"})
        assert stopped.json() == {"client_id": "10.0.0.1@pushConsumer1", "running": False}
        await http.post("/v1/advance", json={"seconds": 1})
        assert cluster.brokers["broker-a"].consumer_ids("lhy-test-consumerGroup") == ["10.0.0.2@pushConsumer2"]
        # the idle one takes the queue over at once (the broker notified it)
        assert [mq.queue_id for mq in cluster.find_consumers("10.0.0.2@pushConsumer2")[0].held_queues()
                if mq.topic == "TopicTest"] == [0]

        state = (await http.get("/v1/state")).json()
        # a new group starts at offset 0 (still "in memory"), skips the 10 TagA and commits 14
        assert state["brokers"]["broker-a"]["offsets"]["TopicTest@new-group"] == {"0": 14}
        assert (await http.post("/v1/consumers/stop", json={"client_id": "10.0.0.1@pushConsumer1"})).status_code == 404
        assert (await http.post("/v1/produce", json={"topic": "Nope"})).status_code == 404
        assert (await http.post("/v1/consumers", json={"group": "g"})).status_code == 400
        assert (await http.get("/v1/nowhere")).status_code == 404
        assert (await http.post("/v1/advance", content=b"{not json")).status_code == 400


async def test_advance_is_refused_on_the_real_time_clock() -> None:
    async with (running_emulator(load_scenario("healthy"), ServeOptions(clock="real", speed=50)) as (served, _),
                httpx.AsyncClient(base_url=served.control, timeout=TIMEOUT) as http):
        response = await http.post("/v1/advance", json={"seconds": 1})
        assert response.status_code == 409 and "virtual" in response.json()["error"]


async def test_a_token_is_required_when_set_and_for_non_loopback_binds() -> None:
    options = ServeOptions(clock="virtual", token="s3cret")
    async with (running_emulator(load_scenario("healthy"), options) as (served, _),
                httpx.AsyncClient(base_url=served.control, timeout=TIMEOUT) as http):
        assert (await http.get("/v1/clients")).status_code == 401
        wrong = await http.get("/v1/clients", headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401
        ok = await http.get("/v1/clients", headers={"Authorization": "Bearer s3cret"})
        assert ok.status_code == 200
    cluster = EmulatedCluster(load_scenario("healthy"))
    with pytest.raises(errors.UsageError, match="not loopback"):
        ControlServer(cluster, host="0.0.0.0")
    ControlServer(cluster, host="0.0.0.0", token="t")  # accepted with a token


def test_ctl_commands_drive_the_served_emulator() -> None:
    runner = CliRunner()
    with served_in_thread("tag-overwrite", ServeOptions(clock="virtual", token="tok")) as served:
        base = ["--url", served.control, "--token", "tok"]
        result = runner.invoke(rmqctl_app, ["emulator", "ctl", "clients", *base, "-o", "json"])
        assert result.exit_code == 0, result.output
        assert [c["client_id"] for c in json.loads(result.stdout)["clients"]] == [
            "10.0.0.1@consumer1", "10.0.0.2@consumer2"]
        result = runner.invoke(rmqctl_app, ["emulator", "ctl", "start-consumer", *base, "--group", "solo",
                                              "--topic", "TopicTest2", "--expr", "tag1",
                                              "--client-id", "10.0.0.5@solo"])
        assert result.exit_code == 0, result.output
        result = runner.invoke(rmqctl_app, ["emulator", "ctl", "produce", *base, "--topic", "TopicTest2",
                                              "--tag", "tag1", "--count", "8", "-o", "json"])
        assert result.exit_code == 0 and json.loads(result.stdout)["sent"] == 8
        assert runner.invoke(rmqctl_app, ["emulator", "ctl", "advance", *base, "30"]).exit_code == 0
        result = runner.invoke(rmqctl_app, ["emulator", "ctl", "state", *base, "-o", "json"])
        report = json.loads(result.stdout)["report"]
        # what its help says: the full state as JSON, in the default format too
        table = runner.invoke(rmqctl_app, ["emulator", "ctl", "state", *base])
        assert set(json.loads(table.stdout)) >= {"brokers", "clients", "report", "now_ms"}
        rows = runner.invoke(rmqctl_app, ["emulator", "ctl", "state", *base, "-o", "jsonl"]).stdout.splitlines()
        assert {json.loads(line)["kind"] for line in rows} == {"client"}
        # the virtual clock started at 0, so the scenario's own 10 tag1 (at 5 s) arrive too
        assert report["consumers"]["10.0.0.5@solo"]["received_by_tag"] == {"tag1": 18}
        result = runner.invoke(rmqctl_app, ["emulator", "ctl", "stop-consumer", *base, "10.0.0.5@solo"])
        assert result.exit_code == 0, result.output
        result = runner.invoke(rmqctl_app, ["emulator", "ctl", "stop-consumer", *base, "10.0.0.5@solo"])
        assert result.exit_code == 2 and "no running simulated consumer" in result.stderr
        result = runner.invoke(rmqctl_app, ["emulator", "ctl", "clients", "--url", served.control])
        assert result.exit_code == 2 and "token" in result.stderr
    result = runner.invoke(rmqctl_app, ["emulator", "ctl", "clients", "--url", served.control])
    assert result.exit_code == 3 and "cannot reach" in result.stderr


def serve_command(*args: str) -> list[str]:
    code = "import sys; sys.argv[1:1] = ['emulator']; from rmqctl.cli.app import main; main()"
    return [sys.executable, "-c", code, "serve", *args]


async def test_serve_prints_the_address_answers_and_exits_130_on_ctrl_c() -> None:
    proc = await asyncio.create_subprocess_exec(
        *serve_command("--scenario", "tag-overwrite", "--speed", "20"),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=ROOT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        assert proc.stdout is not None
        first = (await asyncio.wait_for(proc.stdout.readline(), TIMEOUT)).decode()
        assert first.startswith("namesrv 127.0.0.1:")
        namesrv = first.split()[1]
        admin = AdminClient([namesrv])
        try:
            route = await admin.topic_route("TopicTest2")
            assert len(route.read_queues()) == 4
            # the real-time clock runs: wait (bounded) until both consumers have registered
            broker = route.master_addrs()["broker-a"]
            for _ in range(200):
                try:
                    ids = await admin.consumer_ids(broker, "test-consumer")
                except errors.RmqctlError:
                    ids = []
                if len(ids) == 2:
                    break
                await asyncio.sleep(0.05)
            assert sorted(ids) == ["10.0.0.1@consumer1", "10.0.0.2@consumer2"]
        finally:
            await admin.close()
        proc.send_signal(signal.SIGINT)
        assert await asyncio.wait_for(proc.wait(), TIMEOUT) == 130
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def test_serve_on_a_port_in_use_fails_with_one_line() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = await asyncio.create_subprocess_exec(
            *serve_command("--scenario", "healthy", "--namesrv-port", str(port)),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=ROOT)
        out, err = await asyncio.wait_for(proc.communicate(), TIMEOUT)
    assert proc.returncode == 2
    lines = err.decode().strip().splitlines()
    assert lines[0] == f"rmqctl: error: cannot listen on 127.0.0.1:{port} for the name server: address already in use"
    assert out == b""


# -- real clients over TCP ---------------------------------------------------------------------


def decode_messages(body: bytes) -> list[tuple[int, int, str, bytes]]:
    """(queueId, queueOffset, TAGS, body) of each message in a pull response (v1 layout)."""
    out, pos = [], 0
    while pos < len(body):
        (total,) = struct.unpack_from(">i", body, pos)
        queue_id, _, queue_offset = struct.unpack_from(">iiq", body, pos + 12)
        cursor = pos + 4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + 8 + 8 + 8 + 4 + 8
        (body_len,) = struct.unpack_from(">i", body, cursor)
        payload = body[cursor + 4: cursor + 4 + body_len]
        cursor += 4 + body_len
        topic_len = body[cursor]
        cursor += 1 + topic_len
        (props_len,) = struct.unpack_from(">h", body, cursor)
        props = body[cursor + 2: cursor + 2 + props_len].decode()
        tags = dict(p.split("\x01") for p in props.split("\x02") if p).get("TAGS", "")
        out.append((queue_id, queue_offset, tags, payload))
        pos += total
    return out


async def test_a_tcp_client_can_heartbeat_send_pull_and_answer_the_307_relay() -> None:
    options = ServeOptions(clock="virtual", at=2)
    async with running_emulator(load_scenario("tag-overwrite"), options) as (served, cluster):
        notified: list[str] = []

        async def handler(cmd: frame.RemotingCommand) -> frame.RemotingCommand | None:
            if cmd.code == 40:
                notified.append(cmd.ext_fields["consumerGroup"])
                return None
            return cmd.response(ResponseCode.SUCCESS, body=b'{"properties":{"PROP_CONSUME_TYPE":"CONSUME_PASSIVELY"},'
                                b'"subscriptionSet":[],"mqTable":{}}')

        broker_addr = served.brokers["broker-a"]
        conn = Connection(broker_addr, handler=handler)
        await conn.open(TIMEOUT)
        try:
            hb = HeartbeatData("192.168.1.1@py", (ConsumerData(
                "test-consumer", "CONSUME_PASSIVELY", "CLUSTERING", "CONSUME_FROM_LAST_OFFSET",
                (parse_tag_expression("TopicTest2", "tag9", 1),)),))
            reply = await conn.request(frame.RemotingCommand(code=RequestCode.HEART_BEAT,
                                                             body=bodies.encode_heartbeat_data(hb)), TIMEOUT)
            assert reply.code == ResponseCode.SUCCESS
            assert cluster.brokers["broker-a"].consumer_ids("test-consumer")[-1] == "192.168.1.1@py"
            assert notified == ["test-consumer"]  # the broker told us (a new channel joined)
            # an admin's 307 for this client is relayed over our socket and our answer comes back
            admin = AdminClient([served.namesrv])
            try:
                info = await admin.consumer_running_info(broker_addr, "test-consumer", "192.168.1.1@py")
                assert info.consume_type == "CONSUME_PASSIVELY"
            finally:
                await admin.close()
            # send with the V2 header (single-letter fields), then pull it back
            props = "TAGS\x01tagZ\x02KEYS\x01k1\x02"
            sent = await conn.request(frame.RemotingCommand(code=310, ext_fields={
                "a": "pg", "b": "TopicTest2", "c": "TBW102", "d": "4", "e": "3", "f": "0",
                "g": "1", "h": "0", "i": props, "j": "0", "k": "false", "m": "false"}, body=b"hello"), TIMEOUT)
            assert sent.code == ResponseCode.SUCCESS and sent.ext_fields["queueOffset"] == "0"
            pulled = await conn.request(frame.RemotingCommand(code=11, ext_fields={
                "consumerGroup": "test-consumer", "topic": "TopicTest2", "queueId": "3",
                "queueOffset": "0", "maxMsgNums": "32", "sysFlag": "4", "commitOffset": "0",
                "suspendTimeoutMillis": "15000", "subscription": "tagZ", "subVersion": "0",
                "expressionType": "TAG"}), TIMEOUT)
            assert pulled.code == ResponseCode.SUCCESS and pulled.ext_fields["nextBeginOffset"] == "1"
            assert decode_messages(pulled.body) == [(3, 0, "tagZ", b"hello")]
        finally:
            await conn.close()
        # closing the socket removes the channel (doChannelCloseEvent)
        for _ in range(200):
            if "192.168.1.1@py" not in (cluster.brokers["broker-a"].consumer_ids("test-consumer") or []):
                break
            await asyncio.sleep(0.01)
        assert cluster.brokers["broker-a"].consumer_ids("test-consumer") == ["10.0.0.1@consumer1", "10.0.0.2@consumer2"]


def test_emulator_run_is_deterministic() -> None:
    """Same scenario, same report, byte for byte: twice in-process and in fresh interpreters with
    different hash seeds (so no set or dict order leaks into the outcome)."""
    runner = CliRunner()
    code = "import sys; sys.argv[1:1] = ['emulator']; from rmqctl.cli.app import main; main()"
    for name in ("topic-overwrite", "healthy"):
        first = runner.invoke(rmqctl_app, ["emulator", "run", name, "-o", "json"])
        second = runner.invoke(rmqctl_app, ["emulator", "run", name, "-o", "json"])
        assert first.exit_code == 0, first.output
        assert first.stdout == second.stdout
        for seed in ("1", "2"):
            proc = subprocess.run([sys.executable, "-c", code, "run", name, "-o", "json"],
                                  capture_output=True, text=True, cwd=ROOT, check=False, timeout=120,
                                  env={**os.environ, "PYTHONHASHSEED": seed})
            assert proc.returncode == 0, proc.stderr
            assert proc.stdout == first.stdout
        doc = json.loads(first.stdout)
        assert set(doc) >= {"scenario", "consumers", "produced_by_tag", "lost_by_tag", "broker_subscriptions"}
    table = runner.invoke(rmqctl_app, ["emulator", "run", "tag-overwrite-4q"])
    assert table.exit_code == 0
    assert "172.16.0.103@ConsumerForTagB" in table.stdout and "tagB=2" in table.stdout


async def test_ctl_finds_the_served_emulator_without_url(tmp_path: Path) -> None:
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path)}
    noted = tmp_path / "rmqctl" / "emulators"
    procs = []

    async def start(scenario: str) -> str:
        proc = await asyncio.create_subprocess_exec(
            *serve_command("--scenario", scenario, "--clock", "virtual"),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=ROOT, env=env)
        procs.append(proc)
        assert proc.stdout is not None
        await asyncio.wait_for(proc.stdout.readline(), TIMEOUT)  # "namesrv …": it is ready
        return (await asyncio.wait_for(proc.stdout.readline(), TIMEOUT)).decode().split()[1]

    def ctl_clients() -> object:
        return CliRunner().invoke(rmqctl_app, ["emulator", "ctl", "clients", "-o", "json"],
                                  env={"XDG_STATE_HOME": str(tmp_path)})

    try:
        first = await start("healthy")
        entries = [json.loads(p.read_text()) for p in noted.glob("*.json")]
        assert [e["url"] for e in entries] == [first] and entries[0]["scenario"] == "healthy"
        result = await asyncio.to_thread(ctl_clients)
        assert result.exit_code == 0, result.stderr
        assert {c["group"] for c in json.loads(result.stdout)["clients"]} >= {"order-service"}
        # a second server gets its own entry; with two running, ctl asks which one
        second = await start("tag-overwrite")
        assert len(list(noted.glob("*.json"))) == 2
        both = await asyncio.to_thread(ctl_clients)
        assert both.exit_code == 2 and "2 served emulators are running" in both.stderr
        assert first in both.stderr and second in both.stderr and "--url" in both.stderr
        # stopping one removes only its own entry; the other is found again
        procs[1].send_signal(signal.SIGINT)
        assert await asyncio.wait_for(procs[1].wait(), TIMEOUT) == 130
        assert [json.loads(p.read_text())["url"] for p in noted.glob("*.json")] == [first]
        again = await asyncio.to_thread(ctl_clients)
        assert again.exit_code == 0, again.stderr
        procs[0].send_signal(signal.SIGINT)
        assert await asyncio.wait_for(procs[0].wait(), TIMEOUT) == 130
        assert not list(noted.glob("*.json"))  # forgotten on the way out
    finally:
        for proc in procs:
            if proc.returncode is None:
                proc.kill()
            await proc.communicate()
    gone = await asyncio.to_thread(CliRunner().invoke, rmqctl_app, ["emulator", "ctl", "clients"],
                                   env={"XDG_STATE_HOME": str(tmp_path)})
    assert gone.exit_code == 2 and "no served emulator found" in gone.stderr
