"""Messages looked up through a dashboard's message pages (every generation answers them alike).

The message documents below have the shape the three real generations returned for the same
message (a ``MessageView``: Jackson's ``"host:port"`` addresses, properties, the body as text).
The cluster is the captured one with a second broker added, so one key page, which spans every
broker of the topic, is split between the brokers by store host and asked for once.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from rmqctl.cli.app import app
from rmqctl.model import MessageRef, encode_offset_message_id
from tests.dashboard.test_client import GENERATIONS, PASSWORD, USER, Replay, make_source

ADDR_A, ADDR_B = "127.0.0.1:58347", "127.0.0.1:58348"
MANIFEST = json.loads((Path(__file__).parent / "captured" / "2.1.0" / "manifest.json").read_text())
T = MANIFEST["topic"]
UNIQ = "7F0000010001180B4AAC1B2B4D2A0000"


@pytest.fixture(autouse=True)
def credentials(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RMQCTL_CONFIG", str(tmp_path / "none.toml"))
    monkeypatch.delenv("NAMESRV_ADDR", raising=False)
    monkeypatch.setenv("RMQCTL_DASHBOARD_USER", USER)
    monkeypatch.setenv("RMQCTL_DASHBOARD_PASSWORD", PASSWORD)


def view(addr: str, queue_id: int, queue_offset: int, commit_offset: int, *, topic: str = T, uniq: str = UNIQ,
         keys: str = "order-4711", reconsume: int = 0, extra: dict[str, str] | None = None) -> dict[str, Any]:
    return {"queueId": queue_id, "storeSize": 271, "queueOffset": queue_offset, "sysFlag": 0,
            "bornTimestamp": 1795658885307, "bornHost": "127.0.0.1:35054", "storeTimestamp": 1795658885351,
            "storeHost": addr, "msgId": uniq, "commitLogOffset": commit_offset, "bodyCRC": 356939708,
            "reconsumeTimes": reconsume, "preparedTransactionOffset": 0, "topic": topic, "flag": 0,
            "properties": {"UNIQ_KEY": uniq, "CLUSTER": "RmqctlCluster", "TAGS": "tagA", "KEYS": keys,
                           "WAIT": "true", **(extra or {})},
            "messageBody": "hello-0"}


def ok(data: Any) -> httpx.Response:
    return httpx.Response(200, json={"status": 0, "data": data, "errMsg": None})


def refused(text: str) -> httpx.Response:
    return httpx.Response(200, json={"status": -1, "data": None, "errMsg": text})


class Dashboard:
    """The captured generation, two brokers, and message pages answered from ``pages``."""

    def __init__(self, generation: str, pages: dict[tuple[str, tuple[tuple[str, str], ...]], httpx.Response], *,
                 two_brokers: bool = True) -> None:
        self.replay = Replay(generation)
        self.two_brokers = two_brokers
        self.pages = pages
        self.asked: list[tuple[str, dict[str, str]]] = []

    def handler(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path.startswith(("/message/", "/topic/queryConsumerByTopic")):
            params = dict(request.url.params)
            self.asked.append((path, params))
            return self.pages.get((path, tuple(sorted(params.items()))),
                                  refused("query message by key finished, but no message."))
        response = self.replay.handler(request)
        if path == "/topic/route.query" and response.status_code == 404:
            # a topic the capture did not ask for: what the dashboard answers for a missing one
            return refused(f"CODE: 17  DESC: No topic route info in name server for the topic: "
                           f"{request.url.params['topic']}")
        if path == "/cluster/list.query" and response.status_code == 200 and self.two_brokers:
            doc = json.loads(response.content)
            info = doc["data"]["clusterInfo"]
            info["brokerAddrTable"]["broker-b"] = {"cluster": "RmqctlCluster", "brokerName": "broker-b",
                                                   "brokerAddrs": {"0": ADDR_B}}
            info["clusterAddrTable"]["RmqctlCluster"].append("broker-b")
            return httpx.Response(200, json=doc, headers=response.headers)
        return response


def key(path: str, **params: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    return path, tuple(sorted(params.items()))


@pytest.mark.parametrize("generation", GENERATIONS)
async def test_a_key_page_is_asked_once_and_split_by_store_host(generation: str) -> None:
    page = key("/message/queryMessageByTopicAndKey.query", topic=T, key="order-4711")
    dash = Dashboard(generation, {page: ok([view(ADDR_A, 1, 0, 0), view(ADDR_B, 3, 7, 912, uniq=UNIQ[:-1] + "1")])})
    source = make_source(dash.handler)
    try:
        await source.backend.client.open()
        expected = (("broker-a", ADDR_A, 1, 0, 0), ("broker-b", ADDR_B, 3, 7, 912))
        for broker, addr, queue_id, offset, physical in expected:
            [message] = await source.backend.query_messages(addr, broker, T, "order-4711")
            where = (message.queue.broker_name, message.queue.queue_id, message.queue_offset)
            assert where == (broker, queue_id, offset)
            host, _, port = addr.rpartition(":")
            assert message.offset_msg_id == encode_offset_message_id(host, int(port), physical)
            assert message.keys == ("order-4711",) and message.tags == "tagA" and message.body == b"hello-0"
    finally:
        await source.close()
    assert [p for p, _ in dash.asked] == ["/message/queryMessageByTopicAndKey.query"]


@pytest.mark.parametrize("generation", GENERATIONS)
def test_msg_show_by_offset_id_and_by_key(generation: str, monkeypatch: pytest.MonkeyPatch) -> None:
    offset_id = encode_offset_message_id("127.0.0.1", 58347, 271)
    dash = Dashboard(generation, {
        key("/message/viewMessage.query", msgId=offset_id, topic=T): ok(
            {"messageTrackList": [], "messageView": view(ADDR_A, 0, 1, 271)}),
        key("/message/queryMessageByTopicAndKey.query", topic=T, key="order-4711"): ok([view(ADDR_A, 0, 1, 271)]),
    })
    monkeypatch.setattr("rmqctl.dashboard.client.DashboardClient.__init__", _with_transport(dash.handler))
    runner = CliRunner()
    by_id = ["msg", "show", offset_id, "--topic", T]
    if generation != "1.0.0":  # 2.x's id page asks the index for producer ids only
        result = runner.invoke(app, ["--dashboard", "http://dash.test", *by_id])
        assert result.exit_code == 2 and "not by the broker's offset id" in result.stderr, result.stderr
    for args in ([by_id] if generation == "1.0.0" else []) + [["msg", "show", T, "--key", "order-4711"]]:
        result = runner.invoke(app, ["--dashboard", "http://dash.test", *args, "-o", "json"])
        assert result.exit_code == 0, (result.stdout, result.stderr)
        [message] = json.loads(result.stdout)["messages"]
        assert message["offset_msg_id"] == offset_id and message["msg_id"] == UNIQ
        assert (message["broker"], message["queue_id"], message["queue_offset"]) == ("broker-a", 0, 1)


@pytest.mark.parametrize("generation", GENERATIONS)
def test_nothing_found_is_exit_2_and_reading_by_position_is_refused(generation: str,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    dash = Dashboard(generation, {})
    monkeypatch.setattr("rmqctl.dashboard.client.DashboardClient.__init__", _with_transport(dash.handler))
    runner = CliRunner()
    result = runner.invoke(app, ["--dashboard", "http://dash.test", "msg", "show", T, "--key", "nope"])
    assert result.exit_code == 2 and result.stderr.startswith("rmqctl: error: no message found"), result.stderr
    result = runner.invoke(app, ["--dashboard", "http://dash.test", "msg", "show", T, "--queue", "broker-a/0",
                                 "--offset", "0"])
    assert result.exit_code == 2 and "cannot read messages back by offset" in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) <= 2


async def test_retry_copies_through_the_dashboard_say_that_only_one_each_is_seen() -> None:
    group = MANIFEST["group"]
    original = view(ADDR_A, 0, 0, 0)
    copy = view(ADDR_A, 0, 0, 5000, topic=f"%RETRY%{group}", reconsume=1, extra={"RETRY_TOPIC": T})
    dash = Dashboard("2.1.0", {
        key("/message/queryMessageByTopicAndKey.query", topic=T, key="order-4711"): ok([original]),
        key("/message/viewMessage.query", topic=f"%RETRY%{group}", msgId=UNIQ): ok(
            {"messageTrackList": [], "messageView": copy}),
    })
    source = make_source(dash.handler)
    try:
        await source.backend.client.open()
        copies = await source.message_copies(group, (await source.find_messages(
            MessageRef(key="order-4711", topic=T))).value[0])
        assert [c.queue.topic for c in copies.value] == [f"%RETRY%{group}"]
        assert "one message per id" in copies.unavailable["copies"]
    finally:
        await source.close()


def test_msg_explain_runs_through_the_dashboard(monkeypatch: pytest.MonkeyPatch) -> None:
    """The captured group (two clients holding the topic's queues): a message past the group's
    committed offset on its queue is explained from the group's view, with no retry copies and no
    trace topic."""
    group = MANIFEST["group"]
    dash = Dashboard("2.1.0", {
        key("/message/queryMessageByTopicAndKey.query", topic=T, key="order-4711"): ok([view(ADDR_A, 0, 0, 0)]),
    }, two_brokers=False)
    monkeypatch.setattr("rmqctl.dashboard.client.DashboardClient.__init__", _with_transport(dash.handler))
    result = CliRunner().invoke(app, ["--dashboard", "http://dash.test", "msg", "explain", T, "--key", "order-4711",
                                      "--group", group, "-o", "json"])
    assert result.exit_code == 0, result.stderr
    explanations = {e["group"]: e for e in json.loads(result.stdout)["messages"][0]["explanations"]}
    assert explanations[group]["verdict"] not in ("unknown", "retried", "dead_lettered"), explanations[group]
    assert ("/message/viewMessage.query", {"topic": f"%RETRY%{group}", "msgId": UNIQ}) in dash.asked


def _with_transport(handler: Any) -> Any:
    from rmqctl.dashboard.client import DashboardClient

    original = DashboardClient.__init__

    def init(self: DashboardClient, url: str, **kw: Any) -> None:
        kw["transport"] = httpx.MockTransport(handler)
        original(self, url, **kw)

    return init



async def test_the_groups_of_a_topic_are_asked_once_for_every_broker() -> None:
    page = key("/topic/queryConsumerByTopic.query", topic=T)
    dash = Dashboard("2.1.0", {page: ok({"GroupB": {"topic": T}, "GroupA": {"topic": T}})})
    source = make_source(dash.handler)
    try:
        await source.backend.client.open()
        for broker, addr in (("broker-a", ADDR_A), ("broker-b", ADDR_B)):
            assert await source.backend.topic_consumers(addr, T) == ["GroupA", "GroupB"], broker
    finally:
        await source.close()
    assert dash.asked == [("/topic/queryConsumerByTopic.query", {"topic": T})]
