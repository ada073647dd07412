"""A dashboard URL with user info (``http://user:password@host``) logs in with it and never shows it.

The password used to appear in every error naming the dashboard and in status lines."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from rmqctl import errors
from rmqctl.dashboard.client import DashboardClient

ROOT = Path(__file__).resolve().parents[2]


def test_user_info_becomes_the_login_and_leaves_the_url() -> None:
    client = DashboardClient("http://ops:hunter%402@dash.example:8082/", username=None, password=None, timeout=5)
    assert client.url == "http://dash.example:8082"
    assert (client._username, client._password) == ("ops", "hunter@2")
    explicit = DashboardClient("http://ops:hunter2@dash.example:8082", username="admin", password="s3cret", timeout=5)
    assert (explicit.url, explicit._username, explicit._password) == ("http://dash.example:8082", "admin", "s3cret")


@pytest.mark.parametrize("url", ["ftp://ops:hunter2@dash:8082", "http://ops:hunter2@dash:port"])
def test_a_bad_dashboard_url_is_named_without_its_password(url: str) -> None:
    with pytest.raises(errors.UsageError) as caught:
        DashboardClient(url, username=None, password=None, timeout=5)
    assert "hunter2" not in str(caught.value) and "ops:******@dash" in str(caught.value)


async def test_requests_carry_no_user_info() -> None:
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        return httpx.Response(200, json={"status": 0, "data": []})

    client = DashboardClient("http://ops:hunter2@dash.example:8082", username=None, password=None, timeout=5,
                             transport=httpx.MockTransport(handler))
    try:
        await client._http.get("/cluster/list.query")
    finally:
        await client.close()
    assert seen == ["http://dash.example:8082/cluster/list.query"]


def test_an_unreachable_dashboard_is_named_without_the_password() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RMQCTL_CONFIG": str(ROOT / "nonexistent.toml")}
    for name in ("RMQCTL_DASHBOARD_USER", "RMQCTL_DASHBOARD_PASSWORD", "NAMESRV_ADDR"):
        env.pop(name, None)
    proc = subprocess.run([sys.executable, "-m", "rmqctl", "--dashboard", "http://ops:hunter2@127.0.0.1:9",
                           "--timeout", "3", "group", "list"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr.startswith("rmqctl: error: cannot reach the dashboard at http://127.0.0.1:9")
    assert "hunter2" not in proc.stderr + proc.stdout


async def test_a_request_the_dashboard_had_no_admin_client_for_is_asked_again() -> None:
    # rocketmq-dashboard 1.0.0 answers this (its MQAdminInstance) when a request could not borrow an
    # admin client from its pool; a moment later the same request is served
    busy = {"status": -1, "errMsg": "defaultMQAdminExt should be init before you get this"}
    answers = [busy, busy, {"status": 0, "data": {"brokerDatas": []}},
               {"status": -1, "errMsg": "topic not exist"}]
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.path)
        return httpx.Response(200, json=answers[len(seen) - 1])

    client = DashboardClient("http://dash.example:8082", username=None, password=None, timeout=5,
                             transport=httpx.MockTransport(handler))
    try:
        assert await client.get("/topic/route.query", {"topic": "T"}) == {"brokerDatas": []}
        assert seen == ["/topic/route.query"] * 3
        with pytest.raises(errors.RemoteError, match="topic not exist"):  # a real refusal: not asked again
            await client.get("/topic/route.query", {"topic": "T"})
        assert len(seen) == 4
    finally:
        await client.close()


async def test_a_dashboard_with_no_admin_client_free_for_long_is_reported() -> None:
    seen: list[str] = []

    busy = {"status": -1, "errMsg": "defaultMQAdminExt should be init before you get this"}

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.path)
        return httpx.Response(200, json=busy)

    client = DashboardClient("http://dash.example:8082", username=None, password=None, timeout=5,
                             transport=httpx.MockTransport(handler))
    try:
        with pytest.raises(errors.RemoteError, match="should be init before"):
            await client.get("/topic/route.query", {"topic": "T"})
        assert len(seen) == 4  # the first answer and three more after 0.25, 0.5 and 1 s
    finally:
        await client.close()
