"""The served emulator keeps the answers of read-only requests while the cluster does not change.

Each test reads over the wire from ``running_emulator`` (what ``emulator serve`` runs), changes
the cluster the ways a served emulator is changed (a request on a broker port, the control API, a
client's connection closing, the clock), and reads again: a kept answer is handed out only while
nothing changed, and every change is seen by the next read. A differential test compares the
bytes of a served emulator with the cache and one without over the same reads.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx

from rmqctl.emulator.replies import CACHED_READS, ReplyCache
from rmqctl.emulator.scenario import load_scenario
from rmqctl.emulator.serve import Served, ServeOptions, running_emulator
from rmqctl.emulator.server import EmulatorServer
from rmqctl.emulator.world import EmulatedCluster
from rmqctl.remoting import frame
from rmqctl.remoting.admin import AdminClient
from rmqctl.remoting.codes import RequestCode

GROUP, TOPIC = "order-service", "OrderTopic"
BOUND = 10.0


@asynccontextmanager
async def served(monkeypatch) -> AsyncIterator[tuple[Served, EmulatedCluster, ReplyCache, AdminClient]]:
    servers: list[EmulatorServer] = []
    original = EmulatorServer.start

    async def start(self: EmulatorServer) -> None:
        servers.append(self)
        await original(self)

    monkeypatch.setattr(EmulatorServer, "start", start)
    async with running_emulator(load_scenario("healthy"), ServeOptions(clock="virtual", at=60)) as (info, cluster):
        replies = servers[-1].replies
        assert replies is not None, "emulator serve keeps the answers of reads"
        admin = AdminClient([info.namesrv], timeout=5.0)
        try:
            yield info, cluster, replies, admin
        finally:
            await admin.close()


async def read(admin: AdminClient, broker: str, code: int, ext: dict[str, object]) -> bytes:
    response = await admin.call(broker, code, ext)
    assert response.code == 0, response.remark
    return response.body


async def backlog(admin: AdminClient, broker: str) -> int:
    stats = await admin.consume_stats(broker, GROUP)
    return sum(e.broker_offset - e.consumer_offset for e in stats.offsets.values())


async def test_the_same_read_on_an_unchanged_cluster_is_the_kept_answer(monkeypatch) -> None:
    async with served(monkeypatch) as (info, _cluster, replies, admin):
        broker = info.brokers["broker-a"]
        first = await read(admin, broker, RequestCode.GET_CONSUME_STATS, {"consumerGroup": GROUP})
        hits = replies.hits
        again = await read(admin, broker, RequestCode.GET_CONSUME_STATS, {"consumerGroup": GROUP})
        assert again == first and replies.hits == hits + 1


async def test_a_commit_on_the_wire_is_seen_by_the_next_read(monkeypatch) -> None:
    async with served(monkeypatch) as (info, cluster, replies, admin):
        broker = info.brokers["broker-a"]
        before = await admin.consume_stats(broker, GROUP)
        mq, entry = next((mq, e) for mq, e in before.offsets.items() if mq.broker_name == "broker-a")
        target = entry.consumer_offset + 3
        response = await admin.call(broker, RequestCode.UPDATE_CONSUMER_OFFSET, {
            "consumerGroup": GROUP, "topic": mq.topic, "queueId": mq.queue_id, "commitOffset": target})
        assert response.code == 0
        after = await admin.consume_stats(broker, GROUP)
        assert after.offsets[mq].consumer_offset == target != entry.consumer_offset


async def test_the_control_api_and_the_clock_are_seen_by_the_next_read(monkeypatch) -> None:
    async with served(monkeypatch) as (info, cluster, replies, admin):
        broker = info.brokers["broker-a"]

        async def max_offsets() -> int:
            total = 0
            for address in info.brokers.values():
                stats = await admin.topic_stats(address, TOPIC)
                total += sum(row.max_offset for row in stats.offsets)
            return total

        before = await max_offsets()
        assert await max_offsets() == before
        async with httpx.AsyncClient(base_url=info.control, timeout=BOUND) as http:
            produced = (await http.post("/v1/produce", json={"topic": TOPIC, "count": 8})).json()
            assert produced["sent"] == 8
            assert await max_offsets() == before + 8
            # the consumers pull and commit as the clock moves: consume stats change with it
            lag = await backlog(admin, broker)
            assert lag > 0
            assert (await http.post("/v1/advance", json={"seconds": 30})).status_code == 200
            assert await backlog(admin, broker) < lag


async def test_a_client_that_disconnects_leaves_the_next_connection_list(monkeypatch) -> None:
    async with served(monkeypatch) as (info, cluster, replies, admin):
        broker = info.brokers["broker-a"]
        clients = {c.client_id for c in (await admin.consumer_connection(broker, GROUP)).connections}
        assert {c.client_id for c in (await admin.consumer_connection(broker, GROUP)).connections} == clients
        host, port = broker.rsplit(":", 1)
        reader, writer = await asyncio.open_connection(host, int(port))
        heartbeat = (b'{"clientID":"10.9.9.9@tcp","consumerDataSet":[{"groupName":"%s","consumeType":'
                     b'"CONSUME_PASSIVELY","messageModel":"CLUSTERING","consumeFromWhere":'
                     b'"CONSUME_FROM_LAST_OFFSET","subscriptionDataSet":[{"topic":"%s","subString":"*",'
                     b'"tagsSet":[],"codeSet":[],"subVersion":1,"expressionType":"TAG"}],"unitMode":false}],'
                     b'"producerDataSet":[]}') % (GROUP.encode(), TOPIC.encode())
        writer.write(frame.encode(frame.RemotingCommand(code=RequestCode.HEART_BEAT, opaque=1, language="JAVA",
                                                        body=heartbeat)))
        while True:  # the broker may tell the group's clients that it changed first (oneway)
            length = int.from_bytes(await asyncio.wait_for(reader.readexactly(4), BOUND), "big")
            answer = frame.decode_payload(await reader.readexactly(length))
            if answer.is_response:
                break
        assert answer.code == 0
        joined = {c.client_id for c in (await admin.consumer_connection(broker, GROUP)).connections}
        assert joined == clients | {"10.9.9.9@tcp"}
        writer.close()
        deadline = asyncio.get_running_loop().time() + BOUND
        while True:
            now = {c.client_id for c in (await admin.consumer_connection(broker, GROUP)).connections}
            if now == clients:
                break
            assert asyncio.get_running_loop().time() < deadline, now
            await asyncio.sleep(0.01)


async def test_kept_answers_are_the_bytes_an_uncached_server_answers() -> None:
    """Two emulators built alike, one keeping answers and one not, over the same reads, changes
    and repeats: every answer is the same bytes."""
    reads = [
        (None, RequestCode.GET_BROKER_CLUSTER_INFO, {}),
        (None, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": TOPIC}),
        (None, RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, {}),
        ("broker-a", RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": GROUP}),
        ("broker-b", RequestCode.GET_CONSUME_STATS, {"consumerGroup": GROUP}),
        ("broker-a", RequestCode.GET_TOPIC_STATS_INFO, {"topic": TOPIC}),
        ("broker-b", RequestCode.GET_TOPIC_STATS_INFO, {"topic": "NoSuchTopic"}),
        ("broker-a", RequestCode.GET_BROKER_CONSUME_STATS, {"isOrder": "false"}),
        ("broker-b", RequestCode.GET_BROKER_CONSUME_STATS, {}),
        ("broker-a", RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG, {}),
        ("broker-b", RequestCode.GET_ALL_TOPIC_CONFIG, {}),
        ("broker-a", RequestCode.GET_ALL_CONSUMER_OFFSET, {}),
    ]
    assert {code for _, code, _ in reads} == set(CACHED_READS)
    answers: list[list[tuple[int, str | None, bytes]]] = []
    hits = 0
    for cache in (True, False):
        cluster = EmulatedCluster(load_scenario("healthy"))
        server = EmulatorServer(cluster, cache_replies=cache)
        await server.start()
        admin = AdminClient([server.namesrv_addr], timeout=5.0)
        seen: list[tuple[int, str | None, bytes]] = []
        try:
            cluster.run_until(30)
            for step in range(3):
                for _ in range(2):
                    for broker, code, ext in reads:
                        if broker is None:
                            response = await admin.call_namesrv(code, ext)
                        else:
                            response = await admin.call(cluster.brokers[broker].addr, code, ext,
                                                        accept=range(0, 10_000))
                        body = response.body
                        for name, state in cluster.brokers.items():  # the ports differ
                            body = body.replace(state.addr.encode(), name.encode())
                        seen.append((response.code, response.remark, body))
                # a change on the wire, then the clock: both seen by the reads that follow
                await admin.call(cluster.brokers["broker-a"].addr, RequestCode.UPDATE_CONSUMER_OFFSET, {
                    "consumerGroup": GROUP, "topic": TOPIC, "queueId": step, "commitOffset": step})
                cluster.advance(5)
            hits += server.replies.hits if server.replies is not None else 0
        finally:
            await admin.close()
            await server.stop()
        answers.append(seen)
    cached, uncached = answers
    assert len(cached) == 3 * 2 * len(reads)
    assert hits == 3 * len(reads)  # each repeated read was a kept answer
    assert cached == uncached


async def test_the_same_read_on_two_brokers_is_each_brokers_own_answer(monkeypatch) -> None:
    """One cache serves every port: a read asked of broker-a and then, unchanged, of broker-b
    is broker-b's answer (its own queues), never broker-a's kept one."""
    async with served(monkeypatch) as (info, _cluster, _replies, admin):
        for code, ext in ((RequestCode.GET_CONSUME_STATS, {"consumerGroup": GROUP}),
                          (RequestCode.GET_TOPIC_STATS_INFO, {"topic": TOPIC})):
            for name in ("broker-a", "broker-b", "broker-a"):
                body = await read(admin, info.brokers[name], code, ext)
                assert f'"brokerName":"{name}"'.encode() in body, (code, name)
                other = "broker-b" if name == "broker-a" else "broker-a"
                assert f'"brokerName":"{other}"'.encode() not in body, (code, name)


async def test_a_closed_connection_that_only_read_leaves_the_kept_answers(monkeypatch) -> None:
    """An admin tool's connection that only read changed nothing: the next tool's same reads
    are the kept answers. One that sent anything else (here a commit) was a change."""
    async with served(monkeypatch) as (info, _cluster, replies, _admin):
        broker = info.brokers["broker-a"]
        reads = [(RequestCode.GET_BROKER_CONSUME_STATS, {"isOrder": "false"}),
                 (RequestCode.GET_ALL_CONSUMER_OFFSET, {}),
                 (RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": GROUP})]

        async def read_all(admin: AdminClient) -> list[bytes]:
            return [await read(admin, broker, code, ext) for code, ext in reads]

        async def closed_connection_then_read(write: bool) -> tuple[list[bytes], int]:
            first = AdminClient([info.namesrv], timeout=5.0)
            try:
                await read_all(first)
                if write:
                    stats = await first.consume_stats(broker, GROUP)
                    mq, entry = next((mq, e) for mq, e in stats.offsets.items() if mq.broker_name == "broker-a")
                    response = await first.call(broker, RequestCode.UPDATE_CONSUMER_OFFSET, {
                        "consumerGroup": GROUP, "topic": mq.topic, "queueId": mq.queue_id,
                        "commitOffset": entry.consumer_offset})
                    assert response.code == 0
                    await read_all(first)
            finally:
                await first.close()
            await asyncio.sleep(0.05)  # the server sees the close
            second = AdminClient([info.namesrv], timeout=5.0)
            try:
                hits = replies.hits
                answers = await read_all(second)
                return answers, replies.hits - hits
            finally:
                await second.close()

        _, kept = await closed_connection_then_read(write=False)
        assert kept == len(reads)
        _, kept = await closed_connection_then_read(write=True)
        assert kept == 0
