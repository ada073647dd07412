"""The served emulator's budgets: idle measured on whole frames, one memory budget across
connections, and accept failures logged once per second with a count.

Each attack runs against a served emulator while a normal admin client keeps being served; the
tests count effects (connections closed by the server, bytes held, log lines), never speed.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import struct
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from rmqctl.backends.remoting import RemotingBackend
from rmqctl.emulator.scenario import load_scenario
from rmqctl.emulator.serve import Served, ServeOptions, running_emulator
from rmqctl.emulator.server import EmulatorServer, ServerLimits
from rmqctl.remoting import frame
from rmqctl.remoting.admin import AdminClient
from rmqctl.remoting.codes import RequestCode, ResponseCode
from rmqctl.service import ClusterService

from .test_server_limits import BOUND, closed_by_server, connect, group_list_answers, wait_for

servers: list[EmulatorServer] = []


@pytest.fixture(autouse=True)
def _track_servers(monkeypatch: pytest.MonkeyPatch) -> None:
    servers.clear()
    original = EmulatorServer.start

    async def start(self: EmulatorServer) -> None:
        servers.append(self)
        await original(self)

    monkeypatch.setattr(EmulatorServer, "start", start)


@asynccontextmanager
async def emulator(limits: ServerLimits) -> AsyncIterator[tuple[Served, ClusterService, EmulatorServer]]:
    opts = ServeOptions(clock="virtual", at=5, limits=limits)
    async with running_emulator(load_scenario("healthy"), opts) as (served, _):
        source = ClusterService(RemotingBackend(AdminClient([served.namesrv], timeout=3.0)))
        try:
            assert "order-service" in (await source.groups()).value
            yield served, source, servers[-1]
        finally:
            await source.close()


def server_lines(caplog: pytest.LogCaptureFixture, text: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "rmqctl.emulator.server" and text in r.getMessage()]


async def test_a_slowloris_trickling_bytes_is_closed_after_the_idle_timeout(caplog) -> None:
    caplog.set_level(logging.DEBUG, logger="rmqctl.emulator.server")
    limits = ServerLimits(idle_timeout=0.8, max_connections=4)
    async with emulator(limits) as (served, source, server):
        # the admin client holds one name server connection; three trickling ones reach the cap
        conns = [await connect(served.namesrv) for _ in range(3)]
        request = frame.encode(frame.request(RequestCode.GET_BROKER_CLUSTER_INFO))
        fresh = await connect(served.namesrv)
        assert await closed_by_server(fresh[0])  # the cap is full: a fresh client is refused
        fresh[1].close()
        sent = [0] * len(conns)
        closed: set[int] = set()

        async def trickle(i: int) -> None:
            reader, writer = conns[i]
            # one byte every idle/4: never silent for the idle timeout, never a whole frame
            while sent[i] < len(request) - 1:
                writer.write(request[sent[i]:sent[i] + 1])
                sent[i] += 1
                try:
                    if not await asyncio.wait_for(reader.read(1), limits.idle_timeout / 4):
                        closed.add(i)
                        return
                except TimeoutError:
                    continue
                except (ConnectionError, OSError):
                    closed.add(i)
                    return

        await asyncio.wait_for(asyncio.gather(*(trickle(i) for i in range(3))), BOUND)
        assert closed == {0, 1, 2}, (closed, sent)
        # each trickled fewer bytes than a frame, and more than one per idle timeout
        assert all(4 <= n < len(request) for n in sent), sent
        await wait_for(lambda: len(server.namesrv.connections) <= 1, "the trickling sockets to go")
        reader, writer = await connect(served.namesrv)  # a fresh client is served again
        writer.write(request)
        length = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), BOUND))[0]
        assert frame.decode_payload(await reader.readexactly(length)).code == 0
        await group_list_answers(source)
        writer.close()
        for _, w in conns:
            w.close()
    assert len(server_lines(caplog, "idle for 0.8s")) >= 3


async def test_never_reading_clients_are_closed_when_the_memory_budget_is_full(caplog) -> None:
    caplog.set_level(logging.WARNING, logger="rmqctl.emulator.server")
    limits = ServerLimits(idle_timeout=30, max_connections=32, max_frame_bytes=64 * 1024,
                          write_buffer_bytes=64 * 1024, memory_bytes=256 * 1024)
    async with emulator(limits) as (served, source, server):
        broker = server.brokers["broker-a"]
        request = frame.encode(frame.request(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG))
        attackers = [await connect(served.brokers["broker-a"], rcvbuf=4096) for _ in range(8)]
        peak = 0

        def held_output() -> int:
            nonlocal peak
            total = sum(c.write_buffered for c in broker.connections)
            peak = max(peak, total)
            return total

        for _, writer in attackers:  # replies of ~30 MiB each without a budget
            writer.write(request * 20_000)
        for _ in range(150):
            held_output()
            await asyncio.sleep(0.02)
        # the budget holds: 8 x 64 KiB of unread replies would be twice its size
        assert peak <= limits.memory_bytes + 64 * 1024, peak
        closed = server_lines(caplog, "over the memory budget")
        assert len(closed) >= 8 - limits.memory_bytes // limits.write_buffer_bytes, len(closed)
        assert all("replies it does not read" in r.getMessage() and r.exc_info is None for r in closed)
        await group_list_answers(source)
        for _, writer in attackers:
            writer.transport.abort()


async def test_many_partial_frames_stay_within_the_memory_budget(caplog) -> None:
    caplog.set_level(logging.WARNING, logger="rmqctl.emulator.server")
    limits = ServerLimits(idle_timeout=30, max_connections=32, max_frame_bytes=64 * 1024,
                          write_buffer_bytes=64 * 1024, memory_bytes=256 * 1024)
    async with emulator(limits) as (served, source, server):
        broker = server.brokers["broker-a"]
        part = 50 * 1024
        attackers = [await connect(served.brokers["broker-a"]) for _ in range(10)]
        for _, writer in attackers:  # each a frame of 60 KiB of which 50 KiB arrive
            writer.write(struct.pack(">i", 60 * 1024) + b"\x00" * part)
            await writer.drain()
        closed = 10 - limits.memory_bytes // part
        await wait_for(lambda: len(server_lines(caplog, "over the memory budget")) >= closed,
                       f"{closed} connections to be closed for the budget")
        held = sum(c.read_buffered for c in broker.connections)
        assert held <= limits.memory_bytes, held
        # those closed are the ones whose frames took the sum over: the others keep theirs
        alive = [r for r, _ in attackers if not r.at_eof()]
        gone = [await closed_by_server(r, 0.5) for r, _ in attackers if r.at_eof()]
        assert len(alive) + len(gone) == 10
        await group_list_answers(source)
        for _, writer in attackers:
            writer.transport.abort()


CHILD = textwrap.dedent("""
    import asyncio, json, logging, os, resource, sys
    from rmqctl.emulator.scenario import load_scenario
    from rmqctl.emulator.serve import ServeOptions, running_emulator

    logging.basicConfig(level=logging.DEBUG, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")

    async def main():
        loop = asyncio.get_running_loop()
        async with running_emulator(load_scenario("healthy"), ServeOptions(clock="virtual", at=5)) as (served, _):
            print(json.dumps({"namesrv": served.namesrv}), flush=True)
            await loop.run_in_executor(None, sys.stdin.readline)
            hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
            resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/proc/self/fd")) + 4, hard))
            print("limited", flush=True)
            await loop.run_in_executor(None, sys.stdin.readline)

    asyncio.run(main())
""")


async def test_accept_failures_are_logged_once_per_second_with_a_count() -> None:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    child = await asyncio.create_subprocess_exec(sys.executable, "-c", CHILD, stdin=subprocess.PIPE,
                                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert child.stdin is not None and child.stdout is not None and child.stderr is not None
    stderr = asyncio.ensure_future(child.stderr.read())  # read all along: a full pipe would stall it
    try:
        namesrv = json.loads(await asyncio.wait_for(child.stdout.readline(), 30))["namesrv"]
        reader, writer = await connect(namesrv)  # a well-behaved client, connected before
        child.stdin.write(b"go\n")
        assert await asyncio.wait_for(child.stdout.readline(), BOUND) == b"limited\n"
        # the listen backlog takes them; the accepts fail for want of a file descriptor
        flood = [await asyncio.wait_for(connect(namesrv), BOUND) for _ in range(20)]
        request = frame.request(RequestCode.GET_BROKER_CLUSTER_INFO)
        answered = 0
        for _ in range(25):  # about 2.5 s of failing accepts, the client served all along
            writer.write(frame.encode(request))
            length = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), BOUND))[0]
            answered += frame.decode_payload(await reader.readexactly(length)).code == 0
            await asyncio.sleep(0.1)
        assert answered == 25
        for _, w in flood:
            w.transport.abort()
        writer.close()
        child.stdin.write(b"stop\n")
        await asyncio.wait_for(child.wait(), 30)
    finally:
        if child.returncode is None:
            child.kill()
            await child.wait()
    text = (await asyncio.wait_for(stderr, BOUND)).decode()
    lines = [line for line in text.splitlines() if "cannot accept connections" in line]
    assert "Traceback" not in text, text[-3000:]
    assert 1 <= len(lines) <= 5, lines  # ~2.5 s of failures: one line a second
    counts = [int(line.split("(")[1].split()[0]) for line in lines]
    assert all(n >= 1 for n in counts) and "Too many open files" in lines[0], lines


@pytest.mark.parametrize(("read", "write", "code"), [
    (2_000_000, 2_000_000, ResponseCode.INVALID_PARAMETER),  # stalled a served emulator for 10 s
    (1025, 8, ResponseCode.INVALID_PARAMETER),
    (8, 1025, ResponseCode.INVALID_PARAMETER),
    (1024, 1024, ResponseCode.SUCCESS),
])
async def test_a_topic_is_created_with_at_most_1024_queues(read: int, write: int, code: int) -> None:
    async with emulator(ServerLimits()) as (served, _source, _server):
        admin = AdminClient([served.namesrv], timeout=5.0)
        try:
            broker = (await admin.cluster_info()).masters()["broker-a"]
            response = await admin.call(broker, RequestCode.UPDATE_AND_CREATE_TOPIC, {
                "topic": "Huge", "defaultTopic": "TBW102", "readQueueNums": read, "writeQueueNums": write,
                "perm": 6, "topicFilterType": "SINGLE_TAG", "topicSysFlag": 0, "order": False},
                accept=range(0, 10_000))
        finally:
            await admin.close()
        assert response.code == code, response.remark
        if code != ResponseCode.SUCCESS:
            assert "0..1024 read and write queues per topic" in (response.remark or "")
