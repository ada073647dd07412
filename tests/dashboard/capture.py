"""Capture real dashboard replies into ``tests/dashboard/captured/<generation>/`` for the unit tests.

Starts a real name server + broker, the tag-overwrite setup with two real Java consumers, and each
dashboard generation (login required), then records the replies rmqctl relies on: login flows,
the envelope with ``status: -1``, redirects to the login page, and every read endpoint. Cookie
values are replaced by fixed placeholders; everything else is stored as received.

    python -m tests.dashboard.capture [1.0.0 2.1.0 master]
"""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path
from typing import Any

import httpx

from tests.harness.dashboard import DEFAULT_USERS, GENERATIONS, DashboardProcess
from tests.harness.realcluster import RealCluster, ScenarioClientsProcess, wait_until

CAPTURED = Path(__file__).resolve().parent / "captured"
USER = "operator"
PASSWORD = DEFAULT_USERS[USER][0]


def _scrub_cookie(value: str) -> str:
    name, _, rest = value.partition("=")
    _, _, attrs = rest.partition(";")
    return f"{name}=captured-{name.lower()}" + (f";{attrs}" if attrs else "")


def record(out: dict[str, Any], name: str, response: httpx.Response, params: dict[str, str] | None = None) -> None:
    headers = {}
    if "location" in response.headers:
        headers["location"] = response.headers["location"]
    cookies = [_scrub_cookie(v) for v in response.headers.get_list("set-cookie")]
    if cookies:
        headers["set-cookie"] = cookies
    out[name] = {
        "request": {"method": response.request.method, "path": response.request.url.path, "params": params or {}},
        "status": response.status_code,
        "headers": headers,
        "body": response.text,
    }


def capture(url: str, generation: str, setup: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    group, topic, broker = setup["group"], setup["topic"], setup["broker_addr"]
    with httpx.Client(base_url=url, follow_redirects=False, timeout=30) as http:
        record(out, "check", http.get("/login/check.query"))
        record(out, "csrf_token", http.get("/rocketmq-dashboard/csrf-token"))
        record(out, "no_session_redirect", http.get("/cluster/list.query"))
        headers: dict[str, str] = {}
        if generation == "master":
            record(out, "login_without_csrf", http.post("/login/login.do", data={"username": USER,
                                                                              "password": PASSWORD}))
            headers = {"X-XSRF-TOKEN": http.cookies.get("XSRF-TOKEN") or ""}
            bad = http.post("/login/login.do", json={"username": USER, "password": "wrong"}, headers=headers)
            good = http.post("/login/login.do", json={"username": USER, "password": PASSWORD}, headers=headers)
        else:
            bad = http.post("/login/login.do", data={"username": USER, "password": "wrong"})
            good = http.post("/login/login.do", data={"username": USER, "password": PASSWORD})
        record(out, "login_bad", bad)
        record(out, "login_ok", good)

        def get(name: str, path: str, **params: str) -> None:
            record(out, name, http.get(path, params=params), params)

        get("proxy_home", "/proxy/homePage.query")
        get("cluster_list", "/cluster/list.query")
        get("topic_list", "/topic/list.query", skipSysProcess="true")
        get("topic_route", "/topic/route.query", topic=topic)
        get("topic_route_missing", "/topic/route.query", topic="NoSuchTopic_rmqctl")
        get("topic_stats", "/topic/stats.query", topic=topic)
        for suffix in ("RETRY", "DLQ"):
            get(f"route_{suffix.lower()}", "/topic/route.query", topic=f"%{suffix}%{group}")
        get("group_refresh_all", "/consumer/group.refresh.all")
        get("group_list", "/consumer/groupList.query")
        get("connection", "/consumer/consumerConnection.query", consumerGroup=group, address=broker)
        get("connection_no_address", "/consumer/consumerConnection.query", consumerGroup=group)
        get("connection_offline", "/consumer/consumerConnection.query", consumerGroup="NoSuchGroup_rmqctl",
            address=broker)
        get("progress", "/consumer/queryTopicByConsumer.query", consumerGroup=group, address=broker)
        for i, cid in enumerate(setup["clients"]):
            get(f"running_info_{i}", "/consumer/consumerRunningInfo.query", consumerGroup=group, clientId=cid,
                jstack="false")
        get("group_config_missing", "/consumer/examineSubscriptionGroupConfig.query",
            consumerGroup="NoSuchGroup_rmqctl")
        get("group_config", "/consumer/examineSubscriptionGroupConfig.query", consumerGroup=group)
    return out


def main(argv: list[str]) -> int:
    generations = argv or list(GENERATIONS)
    token = uuid.uuid4().hex[:6]
    with RealCluster() as cluster:
        topic, group = f"CapTopic_{token}", f"CapGroup_{token}"
        cluster.create_topic(topic, 4)
        with ScenarioClientsProcess(cluster) as clients:
            a = clients.start_consumer("a", group, {topic: "tagA"}, instance_name=f"capA_{token}")
            wait_until(lambda: cluster.consumer_ids(group) == [a], timeout=60, message="A registered")
            b = clients.start_consumer("b", group, {topic: "tagB"}, instance_name=f"capB_{token}")
            wait_until(lambda: cluster.consumer_ids(group) == sorted([a, b]), timeout=60, message="B registered")
            clients.wait_stable(lambda: clients.queue_ids(topic), duration=2.0, timeout=90,
                                accept=lambda alloc: len(alloc) == 2 and all(len(q) == 2 for q in alloc.values()),
                                message="two queues each")
            clients.produce(topic, "tagA", 4, queue_ids=[0, 1, 2, 3])
            clients.produce(topic, "tagB", 4, queue_ids=[0, 1, 2, 3])
            wait_until(lambda: all(cluster.consumer_offset(group, topic, q) == 2 for q in range(4)),
                       timeout=90, message="every queue committed at offset 2")
            setup = {"group": group, "topic": topic, "broker_addr": cluster.broker_addr,
                     "broker_name": cluster.broker_name, "clients": sorted([a, b])}
            for generation in generations:
                with DashboardProcess(generation, cluster.namesrv_addr) as dashboard:
                    replies = capture(dashboard.url, generation, setup)
                target = CAPTURED / generation
                target.mkdir(parents=True, exist_ok=True)
                (target / "manifest.json").write_text(json.dumps(setup, indent=1, sort_keys=True) + "\n")
                for name, reply in replies.items():
                    (target / f"{name}.json").write_text(json.dumps(reply, indent=1, sort_keys=True) + "\n")
                print(f"{generation}: {len(replies)} replies in {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
