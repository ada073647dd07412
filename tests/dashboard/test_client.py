"""DashboardClient and the dashboard back end over httpx ``MockTransport``, replaying replies captured from the
three real dashboard generations (``tests/dashboard/captured``, written by ``capture.py``).

The replay transport behaves like the real dashboard where it matters: API paths answer the captured
302-to-login without a session cookie, login checks the password (and, on master, the CSRF header),
and everything else is the captured reply for that path and parameters.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import httpx
import pytest

from rmqctl import errors
from rmqctl.backends.dashboard import DashboardBackend
from rmqctl.dashboard import wire
from rmqctl.dashboard.client import DashboardClient
from rmqctl.doctor import run_checks, skipped_checks
from rmqctl.errors import ExitCode
from rmqctl.model import MessageQueue
from rmqctl.service import ClusterService
from tests.harness.dashboard import DEFAULT_USERS

CAPTURED = Path(__file__).resolve().parent / "captured"
GENERATIONS = ["1.0.0", "2.1.0", "master"]
USER, PASSWORD = "operator", DEFAULT_USERS["operator"][0]
URL = "http://dashboard.test:8082"


def load(generation: str) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    folder = CAPTURED / generation
    manifest = json.loads((folder / "manifest.json").read_text())
    replies = {p.stem: json.loads(p.read_text()) for p in folder.glob("*.json") if p.stem != "manifest"}
    return manifest, replies


def as_response(reply: dict[str, Any]) -> httpx.Response:
    headers = [("content-type", "application/json;charset=utf-8")]
    if "location" in reply["headers"]:
        headers.append(("location", reply["headers"]["location"]))
    for cookie in reply["headers"].get("set-cookie", []):
        headers.append(("set-cookie", cookie))
    return httpx.Response(reply["status"], headers=headers, content=reply["body"].encode())


class Replay:
    """A fake dashboard built from one generation's captured replies."""

    def __init__(self, generation: str) -> None:
        self.generation = generation
        self.manifest, self.replies = load(generation)
        self.requests: list[httpx.Request] = []
        self.logins = 0
        #: API requests still to answer with the login redirect although the session is valid
        self.expire_next = 0
        self.by_request = {
            self.key(r["request"]["path"], r["request"]["params"]): r
            for name, r in self.replies.items() if not name.startswith(("login", "no_session", "check", "csrf"))
        }

    def key(self, path: str, params: Any) -> tuple[str, tuple[tuple[str, str], ...]]:
        # 1.0.0 has no address parameter and ignores one it is given
        items = [(k, v) for k, v in dict(params).items() if self.generation != "1.0.0" or k != "address"]
        return path, tuple(sorted(items))

    def handler(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        path = request.url.path
        if path == "/login/check.query":
            return as_response(self.replies["check"])
        if path == "/rocketmq-dashboard/csrf-token":
            return as_response(self.replies["csrf_token"])
        if path == "/login/login.do":
            return self.login(request)
        if "JSESSIONID" not in request.headers.get("cookie", "") or self.expire_next:
            self.expire_next = max(0, self.expire_next - 1)
            return as_response(self.replies["no_session_redirect"])
        reply = self.by_request.get(self.key(path, request.url.params))
        if reply is None:
            return httpx.Response(404)
        return as_response(reply)

    def login(self, request: httpx.Request) -> httpx.Response:
        self.logins += 1
        if self.generation == "master":
            if request.headers.get("x-xsrf-token") != "captured-xsrf-token":
                return as_response(self.replies["login_without_csrf"])
            form = json.loads(request.content)
        else:
            form = dict(parse_qsl(request.content.decode()))
        ok = form.get("username") == USER and form.get("password") == PASSWORD
        return as_response(self.replies["login_ok" if ok else "login_bad"])


def make_source(replay: Replay | Callable[[httpx.Request], httpx.Response], *, password: str | None = PASSWORD,
                username: str | None = USER, timeout: float = 10.0) -> ClusterService:
    handler = replay.handler if isinstance(replay, Replay) else replay
    client = DashboardClient(URL, username=username, password=password, timeout=timeout,
                             transport=httpx.MockTransport(handler))
    return ClusterService(DashboardBackend(client))


# -- wire ----------------------------------------------------------------------------------------


def test_message_queue_keys_from_a_captured_running_info() -> None:
    manifest, replies = load("2.1.0")
    keys = list(json.loads(replies["running_info_0"]["body"])["data"]["mqTable"])
    parsed = sorted(wire.message_queue(k) for k in keys)
    group, topic, broker = manifest["group"], manifest["topic"], manifest["broker_name"]
    assert MessageQueue(f"%RETRY%{group}", broker, 0) in parsed
    assert {mq.topic for mq in parsed} == {topic, f"%RETRY%{group}"}
    assert all(mq.broker_name == broker for mq in parsed)


@pytest.mark.parametrize("key, expected", [
    ("MessageQueue [topic=%DLQ%g-1, brokerName=broker-a, queueId=12]", MessageQueue("%DLQ%g-1", "broker-a", 12)),
    ("MessageQueue [topic=a b, brokerName=x_y, queueId=0]", MessageQueue("a b", "x_y", 0)),
])
def test_message_queue_key_parsing(key: str, expected: MessageQueue) -> None:
    assert wire.message_queue(key) == expected
    assert wire.message_queue(expected.java_string()) == expected


@pytest.mark.parametrize("key", ["MessageQueue [topic=T, queueId=0]", "{\"topic\":\"T\"}",
                                 "MessageQueue [topic=T, brokerName=b, queueId=x]"])
def test_malformed_message_queue_key_is_a_protocol_error(key: str) -> None:
    with pytest.raises(errors.ProtocolError):
        wire.message_queue(key)


def test_envelope_status_minus_one_keeps_the_message_and_the_rocketmq_code() -> None:
    _, replies = load("2.1.0")
    doc = json.loads(replies["topic_route_missing"]["body"])
    with pytest.raises(wire.DashboardRefused) as info:
        wire.unwrap(doc, "/topic/route.query")
    assert info.value.remote_code == 17
    assert info.value.message == ("dashboard refused /topic/route.query: No topic route info in name server "
                                  "for the topic: NoSuchTopic_rmqctl")
    assert info.value.exit_code == ExitCode.REFUSED


def test_envelope_spring_error_document_is_refused() -> None:
    _, replies = load("master")
    doc = json.loads(replies["login_without_csrf"]["body"])
    with pytest.raises(wire.DashboardRefused, match="HTTP 403 Forbidden"):
        wire.unwrap(doc, "/login/login.do")


@pytest.mark.parametrize("body, problem", [(b"<html>login</html>", "not JSON"), (b"[1, 2]", "not an object"),
                                           (b'{"data": 1}', "no status")])
def test_envelope_shape_errors(body: bytes, problem: str) -> None:
    with pytest.raises(errors.ProtocolError, match=problem):
        wire.unwrap(wire.decode_json(body, "/x"), "/x")


# -- login flows and reads, per generation ---------------------------------------------------------


@pytest.mark.parametrize("generation, login, v2", [("1.0.0", "form", False), ("2.1.0", "form", True),
                                                   ("master", "csrf-json", True)])
async def test_detects_generation_and_logs_in(generation: str, login: str, v2: bool) -> None:
    replay = Replay(generation)
    source = make_source(replay)
    try:
        detected = await source.backend.client.open()
    finally:
        await source.close()
    assert (detected.login, detected.v2) == (login, v2)
    (login_request,) = [r for r in replay.requests if r.url.path == "/login/login.do"]
    assert login_request.method == "POST"
    # the password travels in the body, never in the URL
    assert PASSWORD not in str(login_request.url)
    if login == "csrf-json":
        assert json.loads(login_request.content) == {"username": USER, "password": PASSWORD}
    else:
        assert dict(parse_qsl(login_request.content.decode())) == {"username": USER, "password": PASSWORD}


@pytest.mark.parametrize("generation", GENERATIONS)
async def test_group_view_from_captured_replies(generation: str) -> None:
    replay = Replay(generation)
    manifest = replay.manifest
    source = make_source(replay)
    try:
        await source.backend.client.open()
        view = await source.group_view(manifest["group"])
    finally:
        await source.close()
    assert view.client_ids == tuple(manifest["clients"])
    assert list(view.broker_subscriptions) == [manifest["broker_name"]]
    stored = view.broker_subscriptions[manifest["broker_name"]][manifest["topic"]]
    assert stored.expression in ("tagA", "tagB")
    own = {cid: [s.expression for s in subs] for cid, subs in view.client_subscriptions.items()}
    assert sorted(own.values()) == [["tagA"], ["tagB"]]
    topic_rows = [p for p in view.progress if p.queue.topic == manifest["topic"]]
    assert [(p.queue.queue_id, p.broker_offset, p.consumer_offset) for p in topic_rows] == [
        (q, 2, 2) for q in range(4)]
    assert all(p.pull_offset is None for p in view.progress)
    assert set(view.unavailable) == {"pull_offset", "inflight", "offset_topics"}
    assert {p.owner for p in topic_rows} == set(manifest["clients"])
    assert view.errors == {}


@pytest.mark.parametrize("generation", GENERATIONS)
async def test_group_list_skips_system_groups(generation: str) -> None:
    replay = Replay(generation)
    source = make_source(replay)
    try:
        await source.backend.client.open()
        listed = await source.group_summaries()
    finally:
        await source.close()
    (summary,) = listed.value
    assert (summary.group, summary.clients, summary.consume_type, summary.version) == (
        replay.manifest["group"], 2, "CONSUME_PASSIVELY", "V5_3_3")


@pytest.mark.parametrize("generation", ["2.1.0", "master"])
async def test_a_login_that_may_not_rebuild_the_group_list_reads_the_cache_and_says_how_old(
        generation: str) -> None:
    # 2.x lets a normal user call only *.query paths: group.refresh.all is refused ("no permission") and the
    # list is the dashboard's cache as it was last built, each line stamped with its updateTime
    import datetime as dt

    from rmqctl import report

    replay = Replay(generation)
    refresh = replay.by_request[replay.key("/consumer/group.refresh.all", {})]
    replay.by_request[replay.key("/consumer/group.refresh.all", {})] = {
        **refresh, "body": json.dumps({"status": -1, "data": None, "errMsg": "no permission"})}
    cached_body = json.loads(replay.replies["group_list"]["body"])
    stamp = next(e["updateTime"] for e in cached_body["data"] if e["group"] == replay.manifest["group"])
    built_ms = int(dt.datetime.fromisoformat(stamp).timestamp() * 1000)
    source = make_source(replay)
    try:
        await source.backend.client.open()
        listed = await source.group_summaries()
    finally:
        await source.close()
    (summary,) = listed.value
    assert (summary.group, summary.cached, summary.cached_at) == (replay.manifest["group"], True, built_ms)
    doc = report.group_list(listed.value, listed.errors, now_ms=built_ms + 754_000)
    assert {k: doc["groups"][0][k] for k in ("cached", "cached_at_ts", "cache_age_ms")} == {
        "cached": True, "cached_at_ts": built_ms, "cache_age_ms": 754_000}
    assert report.cached_note(doc) == (
        "1 of 1 groups come from the dashboard's cached group list, built 12m34s ago: their clients and lag are "
        "not read now (this login may not refresh the list; an admin login can)")


@pytest.mark.parametrize("generation", GENERATIONS)
async def test_a_group_list_read_now_is_not_marked_cached(generation: str) -> None:
    from rmqctl import report

    replay = Replay(generation)
    source = make_source(replay)
    try:
        await source.backend.client.open()
        listed = await source.group_summaries()
    finally:
        await source.close()
    doc = report.group_list(listed.value, listed.errors, now_ms=0)
    assert [s.cached for s in listed.value] == [False]
    assert "cached" not in doc["groups"][0] and report.cached_note(doc) is None


# -- failures: one clear error each, with its exit code ---------------------------------------------


@pytest.mark.parametrize("generation", GENERATIONS)
async def test_bad_credentials(generation: str) -> None:
    source = make_source(Replay(generation), password="wrong")
    with pytest.raises(errors.ConfigError) as info:
        try:
            await source.backend.client.open()
        finally:
            await source.close()
    assert info.value.message == "dashboard login as 'operator' failed: Bad username or password!"
    assert info.value.exit_code == ExitCode.USAGE
    assert "wrong" not in info.value.message + (info.value.hint or "")


async def test_login_required_but_no_credentials() -> None:
    source = make_source(Replay("2.1.0"), username=None, password=None)
    with pytest.raises(errors.ConfigError, match="requires a login and no credentials were given") as info:
        try:
            await source.backend.client.open()
        finally:
            await source.close()
    assert "RMQCTL_DASHBOARD_USER" in (info.value.hint or "")


@pytest.mark.parametrize("generation", GENERATIONS)
async def test_session_expiring_mid_command_logs_in_again_once(generation: str) -> None:
    replay = Replay(generation)
    source = make_source(replay)
    try:
        await source.backend.client.open()
        replay.expire_next = 1
        view = await source.group_view(replay.manifest["group"])
    finally:
        await source.close()
    assert replay.logins == 2
    assert view.client_ids == tuple(replay.manifest["clients"])


async def test_session_that_stays_expired_is_a_connection_error() -> None:
    replay = Replay("2.1.0")
    source = make_source(replay)
    try:
        await source.backend.client.open()
        replay.expire_next = 10**6
        with pytest.raises(errors.ConnectionError, match="login page again right after a fresh login") as info:
            await source.cluster()
    finally:
        await source.close()
    assert info.value.exit_code == ExitCode.CONNECTION
    assert replay.logins == 2


async def test_status_minus_one_on_a_read_is_a_server_refusal() -> None:
    replay = Replay("2.1.0")
    _, replies = load("2.1.0")
    # the dashboard answers every per-group read with a captured status -1 (an NPE inside it)
    replay.by_request = {k: (replies["connection_no_address"] if k[0].startswith("/consumer/") else v)
                         for k, v in replay.by_request.items()}
    source = make_source(replay)
    try:
        await source.backend.client.open()
        with pytest.raises(wire.DashboardRefused) as info:
            await source.group_summaries()
    finally:
        await source.close()
    assert info.value.exit_code == ExitCode.REFUSED
    assert info.value.message.startswith("dashboard refused /consumer/group.refresh.all: Cannot invoke")
    assert "\n" not in info.value.message


async def test_dashboard_down_is_a_connection_error() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("[Errno 111] Connection refused", request=request)

    source = make_source(refuse)
    with pytest.raises(errors.ConnectionError, match=f"cannot reach the dashboard at {URL}") as info:
        try:
            await source.backend.client.open()
        finally:
            await source.close()
    assert info.value.exit_code == ExitCode.CONNECTION


async def test_a_dashboard_host_that_does_not_resolve_says_so() -> None:
    import socket

    def unresolved(request: httpx.Request) -> httpx.Response:
        # what httpcore raises when getaddrinfo fails: the gaierror is the cause, errno negative
        try:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        except socket.gaierror as exc:
            raise httpx.ConnectError("[Errno -2] Name or service not known", request=request) from exc

    source = make_source(unresolved)
    with pytest.raises(errors.ConnectionError) as info:
        try:
            await source.backend.client.open()
        finally:
            await source.close()
    assert info.value.message == (f"cannot reach the dashboard at {URL}: "
                                  "cannot resolve host (Name or service not known)")


async def test_https_to_a_plain_http_dashboard_names_the_tls_mismatch() -> None:
    import ssl

    def plain_http(request: httpx.Request) -> httpx.Response:
        # what httpcore raises when the TLS hello is answered in plain HTTP: an SSLError (errno 1, which
        # errno's own table words "Operation not permitted")
        try:
            raise ssl.SSLError(1, "[SSL: WRONG_VERSION_NUMBER] wrong version number (_ssl.c:1006)")
        except ssl.SSLError as exc:
            exc.reason = "WRONG_VERSION_NUMBER"
            raise httpx.ConnectError(str(exc), request=request) from exc

    client = DashboardClient("https://dashboard.test:8082", username=USER, password=PASSWORD, timeout=10.0,
                             transport=httpx.MockTransport(plain_http))
    with pytest.raises(errors.ConnectionError) as info:
        try:
            await client.open()
        finally:
            await client.close()
    assert info.value.message == ("cannot reach the dashboard at https://dashboard.test:8082: the dashboard does "
                                  "not speak TLS on this port (it serves plain HTTP?)")
    assert info.value.hint == "use http://dashboard.test:8082"
    assert "Operation not permitted" not in info.value.message
    assert info.value.exit_code == ExitCode.CONNECTION


async def test_https_to_a_real_plain_http_listener_names_the_tls_mismatch() -> None:
    import asyncio

    async def answer_in_plain_http(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(1024)  # the TLS hello
        writer.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer_in_plain_http, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    client = DashboardClient(f"https://127.0.0.1:{port}", username=USER, password=PASSWORD, timeout=10.0)
    try:
        with pytest.raises(errors.ConnectionError) as info:
            await client.open()
    finally:
        await client.close()
        server.close()
        await server.wait_closed()
    assert "does not speak TLS on this port" in info.value.message, info.value.message
    assert info.value.hint == f"use http://127.0.0.1:{port}"


def _refused_17(path: str, params: dict[str, str], topic: str) -> dict[str, Any]:
    """1.0.0's answer when the name server has no route for ``topic`` (as captured for other paths)."""
    body = {"status": -1, "data": None, "errMsg": (
        "org.apache.rocketmq.client.exception.MQClientException: CODE: 17  DESC: No topic route info in name "
        f"server for the topic: {topic}\nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further "
        "details.")}
    return {"status": 200, "headers": {}, "body": json.dumps(body),
            "request": {"method": "GET", "path": path, "params": params}}


@pytest.mark.parametrize("configured", [False, True])
async def test_an_unknown_group_through_1_0_0_is_not_found(configured: bool) -> None:
    # 1.0.0 reads a group's stats and connections through its retry topic's route; for a group no broker
    # knows it refuses both with CODE 17 about %RETRY%<group>. Natively that group has no offsets, no
    # connection and no config: "not found", exit 2 (it was every broker failing, and a partial result).
    # A group with a stored config is known: its unreadable stats stay a failure.
    replay = Replay("1.0.0")
    missing = "NoSuchGroup_rmqctl"
    extra = [
        _refused_17("/consumer/queryTopicByConsumer.query", {"consumerGroup": missing}, f"%RETRY%{missing}"),
        _refused_17("/topic/route.query", {"topic": f"%RETRY%{missing}"}, f"%RETRY%{missing}"),
        _refused_17("/topic/route.query", {"topic": f"%DLQ%{missing}"}, f"%DLQ%{missing}"),
        replay.replies["connection_offline"],
        replay.replies["group_config" if configured else "group_config_missing"],
    ]
    for reply in extra:
        request = reply["request"]
        params = {**request["params"], "consumerGroup": missing} if "consumerGroup" in request["params"] \
            else request["params"]
        replay.by_request[replay.key(request["path"], params)] = reply
    source = make_source(replay)
    try:
        await source.backend.client.open()
        if configured:
            with pytest.raises(errors.RmqctlError) as failed:
                await source.group_view(missing)
            assert not isinstance(failed.value, errors.NotFound)
        else:
            with pytest.raises(errors.NotFound) as info:
                await source.group_view(missing)
            assert info.value.exit_code == ExitCode.USAGE
            assert info.value.message == f"consumer group {missing!r} not found on any broker"
    finally:
        await source.close()


async def test_a_request_without_an_answer_is_a_timeout() -> None:
    def slow(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    source = make_source(slow, timeout=0.5)
    with pytest.raises(errors.TimeoutError) as info:
        try:
            await source.backend.client.open()
        finally:
            await source.close()
    assert info.value.exit_code == ExitCode.TIMEOUT


async def test_the_timeout_bounds_each_request_not_the_whole_command() -> None:
    # every request is answered after 0.2 s: with --timeout 0.5 a command of many requests (the login, a
    # group view; --watch and doctor --interval make many more) runs far past 0.5 s in all and is answered;
    # one request slower than 0.5 s still times out, naming its path
    import asyncio

    replay = Replay("2.1.0")
    slow_paths = {"/cluster/list.query": 0.0}

    async def answer_late(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(0.2 + slow_paths.get(request.url.path, 0.0))
        return replay.handler(request)

    source = make_source(answer_late, timeout=0.5)
    try:
        await source.backend.client.open()
        view = await source.group_view(replay.manifest["group"])
        assert view.errors == {} and view.client_ids == tuple(replay.manifest["clients"])
        assert len(replay.requests) >= 6  # 1.2 s of answers at least, under a 0.5 s deadline per request
        slow_paths["/cluster/list.query"] = 0.5
        with pytest.raises(errors.TimeoutError) as info:
            await source.backend.client.get("/cluster/list.query")
    finally:
        await source.close()
    assert info.value.message == f"dashboard {URL}: no answer to /cluster/list.query within 0.5s"


# -- consume statistics: the client's statusTable, relayed by the dashboard -------------------------


def _failing(reply: dict[str, Any]) -> dict[str, Any]:
    """``reply`` (a captured running info) with its client reporting failed consumptions."""
    body = json.loads(reply["body"])
    status = body["data"]["statusTable"]
    topic = next(t for t in status if not t.startswith("%RETRY%"))
    status[topic].update({"consumeOKTPS": 1.5, "consumeFailedTPS": 2.25, "consumeFailedMsgs": 135})
    return {**reply, "body": json.dumps(body)}


@pytest.mark.parametrize("generation", GENERATIONS)
async def test_consume_statistics_come_through_the_dashboard(generation: str) -> None:
    replay = Replay(generation)
    running_info = replay.replies["running_info_0"]
    failing_client = running_info["request"]["params"]["clientId"]
    replay.by_request[replay.key(running_info["request"]["path"], running_info["request"]["params"])] = \
        _failing(running_info)
    source = make_source(replay)
    try:
        await source.backend.client.open()
        view = await source.group_view(replay.manifest["group"])
    finally:
        await source.close()
    info = view.running_infos[failing_client]
    assert (info.consume_ok_tps, info.consume_failed_tps, info.consume_failed_msgs) == (1.5, 2.25, 135)
    (status,) = [s for t, s in info.status.items() if not t.startswith("%RETRY%")]
    assert status.pull_rt == 1020.0
    findings = [f for f in run_checks(view) if f.code == "CONSUME_FAILURES"]
    assert [c["client"] for f in findings for c in f.evidence["clients"]] == [failing_client]
    assert "CONSUME_FAILURES" not in skipped_checks(view)
