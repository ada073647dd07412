"""Frame robustness of the emulator's remoting server, with raw sockets and literal bytes."""

from __future__ import annotations

import asyncio
import json
import struct

from rmqctl.emulator.embedded import embedded_cluster
from rmqctl.remoting import frame
from rmqctl.remoting.codes import RequestCode, ResponseCode

TIMEOUT = 10.0


async def connect(addr: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    host, port = addr.rsplit(":", 1)
    return await asyncio.wait_for(asyncio.open_connection(host, int(port)), TIMEOUT)


async def read_frame(reader: asyncio.StreamReader) -> frame.RemotingCommand:
    (length,) = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), TIMEOUT))
    return frame.decode_payload(await asyncio.wait_for(reader.readexactly(length), TIMEOUT))


def request(code: int, opaque: int, **kwargs: object) -> bytes:
    return frame.encode(frame.RemotingCommand(code=code, opaque=opaque, **kwargs))  # type: ignore[arg-type]


async def test_a_malformed_frame_closes_only_that_connection() -> None:
    async with embedded_cluster("healthy", at=1) as (_, server):
        bad_reader, bad_writer = await connect(server.namesrv_addr)
        good_reader, good_writer = await connect(server.namesrv_addr)
        # length 9 | header word: JSON, header length 5 | header "{oops" (not JSON)
        bad_writer.write(b"\x00\x00\x00\x09" + b"\x00\x00\x00\x05" + b"{oops")
        assert await asyncio.wait_for(bad_reader.read(), TIMEOUT) == b""  # closed by the server
        good_writer.write(request(RequestCode.GET_BROKER_CLUSTER_INFO, 7))
        response = await read_frame(good_reader)
        assert (response.code, response.opaque, response.is_response) == (ResponseCode.SUCCESS, 7, True)
        # a length prefix beyond the 16 MiB limit is refused the same way
        huge_reader, huge_writer = await connect(server.namesrv_addr)
        huge_writer.write(b"\x7f\xff\xff\xff")
        assert await asyncio.wait_for(huge_reader.read(), TIMEOUT) == b""
        for writer in (bad_writer, good_writer, huge_writer):
            writer.close()


async def test_unknown_code_gets_3_and_the_connection_stays_open() -> None:
    async with embedded_cluster("healthy", at=1) as (cluster, server):
        for addr in (server.namesrv_addr, cluster.brokers["broker-b"].addr):
            reader, writer = await connect(addr)
            writer.write(request(9999, 41))
            response = await read_frame(reader)
            assert response.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
            assert response.remark == " request type 9999 not supported"
            assert response.opaque == 41 and response.language == "JAVA"
            writer.write(request(RequestCode.GET_BROKER_CLUSTER_INFO if addr == server.namesrv_addr
                                 else RequestCode.GET_BROKER_RUNTIME_INFO, 42))
            assert (await read_frame(reader)).code == ResponseCode.SUCCESS
            writer.close()


async def test_binary_headed_requests_get_json_headed_responses_like_5x() -> None:
    async with embedded_cluster("healthy", at=1) as (cluster, _):
        reader, writer = await connect(cluster.brokers["broker-a"].addr)
        writer.write(request(RequestCode.GET_CONSUMER_LIST_BY_GROUP, 5,
                             ext_fields={"consumerGroup": "order-service"},
                             serialize_type=frame.SERIALIZE_ROCKETMQ))
        raw_len = await asyncio.wait_for(reader.readexactly(4), TIMEOUT)
        payload = await asyncio.wait_for(reader.readexactly(struct.unpack(">i", raw_len)[0]), TIMEOUT)
        assert payload[0] == frame.SERIALIZE_JSON  # the top byte of the header word
        response = frame.decode_payload(payload)
        assert response.opaque == 5
        assert len(json.loads(response.body)["consumerIdList"]) == 3
        writer.close()


async def test_oneway_requests_get_no_answer() -> None:
    async with embedded_cluster("healthy", at=1) as (cluster, _):
        broker = cluster.brokers["broker-a"]
        reader, writer = await connect(broker.addr)
        writer.write(request(RequestCode.UPDATE_CONSUMER_OFFSET, 1, flag=frame.FLAG_ONEWAY,
                             ext_fields={"consumerGroup": "g-x", "topic": "OrderTopic",
                                         "queueId": "1", "commitOffset": "3"}))
        writer.write(request(RequestCode.QUERY_CONSUMER_OFFSET, 2,
                             ext_fields={"consumerGroup": "g-x", "topic": "OrderTopic", "queueId": "1"}))
        response = await read_frame(reader)  # the first frame back answers the second request
        assert response.opaque == 2 and response.ext_fields["offset"] == "3"
        writer.close()
