"""Every command ends within its deadline, closing included, and a timeout is exit 4 everywhere.

Scripted loopback peers: brokers that never answer, name servers that never answer (several of
them), a peer that floods the client with requests and never reads, and a resolver that never
answers. Before, these took ``--timeout`` once per name server, exited 3 for a timeout, or kept
the process alive for minutes after the command had given up.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

import pytest

from rmqctl.remoting import frame
from rmqctl.remoting.admin import NAMESRV_STAGGER
from rmqctl.remoting.codes import RequestCode
from tests.fakes import FakeServer, Raw, Silence
from tests.unit.test_hostile_peers import ROOT, TIMEOUT, assert_one_error_line, cluster_with, run_cli


def route(address: str) -> dict[str, object]:
    return {"brokerDatas": [{"brokerName": "broker-a", "cluster": "c", "brokerAddrs": {0: address}}],
            "queueDatas": [{"brokerName": "broker-a", "readQueueNums": 1, "writeQueueNums": 1, "perm": 6}]}


@pytest.mark.parametrize("command", [("group", "progress", "G"), ("topic", "status", "T"), ("group", "show", "G")])
def test_a_silent_broker_is_a_timeout_exit_4(command: tuple[str, ...]) -> None:
    silent = lambda req: Silence()  # noqa: E731
    with FakeServer({RequestCode.GET_CONSUMER_CONNECTION_LIST: silent, RequestCode.GET_CONSUME_STATS: silent,
                     RequestCode.GET_TOPIC_STATS_INFO: silent}) as broker:
        namesrv = {RequestCode.GET_BROKER_CLUSTER_INFO: lambda req: (0, cluster_with(broker.address)),
                   RequestCode.GET_ROUTEINFO_BY_TOPIC: lambda req: (0, route(broker.address))}
        with FakeServer(namesrv) as ns:
            code, lines = run_cli("-n", ns.address, *command)
        asked = [r.code for r in broker.requests]
    assert code == 4, lines
    assert_one_error_line(lines)
    assert "timed out" in lines[0]
    assert asked and all(asked.count(c) == 1 for c in asked), asked  # each question once, no second wait


def test_ten_silent_name_servers_cost_one_deadline_not_ten() -> None:
    servers = [FakeServer({RequestCode.GET_BROKER_CLUSTER_INFO: lambda req: Silence()}).start() for _ in range(10)]
    try:
        code, lines = run_cli("-n", ";".join(s.address for s in servers), "cluster", "list")
        asked = sum(1 for s in servers if s.requests)
    finally:
        for server in servers:
            server.stop()
    assert code == 4, lines
    assert_one_error_line(lines)
    assert asked >= 3  # staggered: the later ones were asked before the first one's deadline
    # one deadline in all: each request is given what is left of it, so only the first waits the
    # whole --timeout and every later one less (in turn, each of the ten waited 1.5 s)
    waits = [float(w) for w in re.findall(r"timed out after ([0-9.]+)s", lines[0])]
    not_asked = lines[0].count("not asked: the 1.5s deadline had passed")
    assert len(waits) == asked and len(waits) + not_asked == 10, lines[0]
    assert max(waits) <= TIMEOUT, lines[0]
    assert sum(w > TIMEOUT - NAMESRV_STAGGER / 2 for w in waits) == 1, lines[0]


def test_a_live_name_server_behind_silent_ones_answers_within_the_deadline() -> None:
    with FakeServer({RequestCode.GET_ROUTEINFO_BY_TOPIC: lambda req: Silence()}) as broker:
        good = FakeServer({RequestCode.GET_BROKER_CLUSTER_INFO: lambda req: (0, cluster_with(broker.address))})
        silent = [FakeServer({RequestCode.GET_BROKER_CLUSTER_INFO: lambda req: Silence()}).start() for _ in range(2)]
        with good:
            try:
                env = {**os.environ, "PYTHONPATH": str(ROOT), "RMQCTL_CONFIG": str(ROOT / "nonexistent.toml")}
                proc = subprocess.run(
                    [sys.executable, "-m", "rmqctl", "--timeout", "3", "-n",
                     ";".join([silent[0].address, silent[1].address, good.address]), "cluster", "list", "-o", "json"],
                    cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
            finally:
                for server in silent:
                    server.stop()
    assert proc.returncode in (0, 5), proc.stderr  # 5: the fake broker has no runtime stats
    assert "broker-a" in proc.stdout


def flood(req: frame.RemotingCommand) -> Raw:
    # 64 MiB of requests to the client, written while never reading what the client sends back
    one = frame.encode(frame.request(9999, {"k": "v" * 200}))
    return Raw(one * (64 * 1024 * 1024 // len(one)))


def test_a_peer_that_floods_requests_and_never_reads_does_not_outlive_the_timeout() -> None:
    with FakeServer({RequestCode.GET_BROKER_CLUSTER_INFO: flood}) as ns:
        code, lines = run_cli("-n", ns.address, "cluster", "list")  # kept alive for minutes, it times out
    assert code in (3, 4), lines
    assert_one_error_line(lines)


def test_a_resolver_that_never_answers_does_not_outlive_the_timeout() -> None:
    # the OS resolver is the seam here: a DNS server that never answers makes getaddrinfo block
    # for its own timeouts (seconds); the command must give up at --timeout and exit at once
    code = textwrap.dedent("""
        import socket, sys, time
        def never(*args, **kwargs):
            time.sleep(600)  # past the run's own time-out: a command that waits here fails the test
            raise socket.gaierror(-3, "Temporary failure in name resolution")
        socket.getaddrinfo = never
        sys.argv = ["rmqctl", "--timeout", "1", "-n", "namesrv.example:9876", "cluster", "list"]
        from rmqctl.cli import main
        main()
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RMQCTL_CONFIG": str(ROOT / "nonexistent.toml")}
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 4, proc.stderr
    assert_one_error_line(proc.stderr.splitlines())


async def test_closing_never_waits_for_a_peer_that_never_reads() -> None:
    import asyncio

    from rmqctl.remoting.connection import CLOSE_GRACE, Connection

    accepted: list[asyncio.StreamWriter] = []

    async def never_read(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(writer)  # keep it open, read nothing

    server = await asyncio.start_server(never_read, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    conn = Connection(f"127.0.0.1:{port}")
    await conn.open(5.0)
    # far more than the kernel buffers of both ends hold: the rest stays queued in our transport
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(conn.send_oneway(frame.request(9999, body=b"x" * (12 << 20))), 0.5)
    await asyncio.wait_for(conn.close(), CLOSE_GRACE + 30.0)  # it used to wait here for ever
    for writer in accepted:
        writer.close()
    server.close()
