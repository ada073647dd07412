"""Through the real dashboard, rmqctl shows what it shows through the native protocol.

One real name server + broker (the session ``real_cluster``), the tag-overwrite setup with two real
Java push consumers, settled before anything is compared. Each dashboard generation (1.0.0, 2.1.0
and the unreleased master with Spring Security) runs with ``loginRequired=true`` in front of that
broker; ``group list/show/progress/assignment`` and ``doctor`` through it must equal the same
commands through the native protocol wherever the dashboard supplies the data. What it cannot supply
(the pull offset, hence inflight) must be ``null`` with a note, never a number.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from rmqctl.cli.app import app
from tests.harness.dashboard import DEFAULT_USERS, DashboardProcess
from tests.harness.realcluster import RealCluster, ScenarioClientsProcess, run_tag_overwrite, wait_until

pytestmark = [pytest.mark.real_cluster, pytest.mark.timeout(600)]

REPO_ROOT = Path(__file__).resolve().parents[2]
GENERATIONS = ["2.1.0", "1.0.0", "master"]
USER = "operator"


@dataclass
class Setup:
    cluster: RealCluster
    topic: str
    group: str
    client_a: str
    client_b: str
    clients: ScenarioClientsProcess


@pytest.fixture(scope="module")
def setup(real_cluster: RealCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    with ScenarioClientsProcess(real_cluster) as clients:
        topic, group, a, b = run_tag_overwrite(real_cluster, clients, "Dash")
        yield Setup(real_cluster, topic, group, a, b, clients)


@pytest.fixture(autouse=True)
def isolated_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RMQCTL_CONFIG", str(tmp_path / "none.toml"))
    monkeypatch.delenv("NAMESRV_ADDR", raising=False)
    monkeypatch.setenv("RMQCTL_DASHBOARD_USER", USER)
    monkeypatch.setenv("RMQCTL_DASHBOARD_PASSWORD", DEFAULT_USERS[USER][0])


def run_json(*args: str) -> Any:
    result = CliRunner().invoke(app, [*args, "-o", "json"])
    assert result.exit_code == 0, (result.exit_code, result.stderr, result.stdout)
    return json.loads(result.stdout)


def both(s: Setup, dashboard: DashboardProcess, *args: str) -> tuple[Any, Any]:
    native = run_json(*args, "-n", s.cluster.namesrv_addr)
    web = run_json(*args, "--dashboard", dashboard.url)
    return native, web


@pytest.fixture(params=GENERATIONS)
def dashboard(request: pytest.FixtureRequest, dashboard_for: Callable[[str], DashboardProcess],
              setup: Setup) -> DashboardProcess:
    return dashboard_for(request.param)


def test_group_list_equals_native(setup: Setup, dashboard: DashboardProcess) -> None:
    native_doc, web_doc = both(setup, dashboard, "group", "list")
    assert native_doc["errors"] == web_doc["errors"] == {}
    native, web = native_doc["groups"], web_doc["groups"]
    assert any(row["group"] == setup.group for row in native)

    # TPS is a rate sampled at another instant (and the dashboard truncates it to an integer)
    def strip(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{k: v for k, v in row.items() if k != "consume_tps"} for row in rows]

    assert strip(web) == strip(native)


def test_group_show_equals_native(setup: Setup, dashboard: DashboardProcess) -> None:
    native, web = both(setup, dashboard, "group", "show", setup.group)
    for _ in range(2):
        if web["retry_policy"] is not None or native["retry_policy"] is None:
            break
        # dashboard 1.0.0 reads each broker's whole config table with its own 3 s timeout, which a
        # loaded machine trips now and then; rmqctl then shows the policy as unknown
        # (tests/unit/test_retry_policy.py), and only the dashboard's next read can be compared
        web = run_json("group", "show", setup.group, "--dashboard", dashboard.url)
    assert set(web.pop("unavailable")) == {"pull_offset", "inflight", "offset_topics"}
    assert "unavailable" not in native
    # consume rates are sampled by each read at its own moment (the dashboard also truncates
    # them): compare that they are there, not their values
    for doc in (native, web):
        for conn in doc["connections"]:
            assert isinstance(conn.pop("consume_ok_tps"), float)
            assert isinstance(conn.pop("consume_failed_tps"), float)
    assert web == native
    own = {cid: [s["expression"] for s in subs if s["topic"] == setup.topic]
           for cid, subs in web["client_subscriptions"].items()}
    assert own == {setup.client_a: ["tagA"], setup.client_b: ["tagB"]}


def test_group_progress_equals_native_and_marks_inflight_unavailable(setup: Setup,
                                                                     dashboard: DashboardProcess) -> None:
    native_doc, web_doc = both(setup, dashboard, "group", "progress", setup.group)
    assert set(web_doc.pop("unavailable")) == {"pull_offset", "inflight", "offset_topics"}
    assert web_doc["total_inflight"] is None and isinstance(native_doc["total_inflight"], int)
    native, web = native_doc["queues"], web_doc["queues"]
    assert len(native) == 5  # four queues of the topic and the retry queue
    for row in web:
        assert row["pull_offset"] is None and row["inflight"] is None
    for row in native:
        assert isinstance(row["inflight"], int)
        row["pull_offset"] = row["inflight"] = None
    assert web == native
    owners = {row["queue_id"]: row["owner"] for row in web if row["topic"] == setup.topic}
    assert sorted(set(owners.values())) == sorted([setup.client_a, setup.client_b])


def test_group_progress_table_says_unavailable(setup: Setup, dashboard: DashboardProcess) -> None:
    result = CliRunner().invoke(app, ["group", "progress", setup.group, "--dashboard", dashboard.url])
    assert result.exit_code == 0, result.stderr
    header, *rows = [line for line in result.stdout.splitlines() if line.startswith(("TOPIC", setup.topic))]
    assert "INFLIGHT" in header and len(rows) == 4
    assert all(row.split()[5] == "unavailable" and row.split()[7] == "unavailable" for row in rows)
    assert "Total inflight: unavailable" in result.stdout


def test_group_assignment_equals_native(setup: Setup, dashboard: DashboardProcess) -> None:
    native, web = both(setup, dashboard, "group", "assignment", setup.group)
    assert set(web.pop("unavailable")) == {"pull_offset", "inflight", "offset_topics"}
    assert web == native
    assert sorted(web["assignments"]) == sorted([setup.client_a, setup.client_b])


def test_doctor_equals_native(setup: Setup, dashboard: DashboardProcess) -> None:
    # the dashboard cannot read messages back, so the native side skips the tag sample as well
    result_native = CliRunner().invoke(app, ["doctor", setup.group, "-o", "json", "--no-sample",
                                             "-n", setup.cluster.namesrv_addr])
    result_web = CliRunner().invoke(app, ["doctor", setup.group, "-o", "json", "--dashboard", dashboard.url])
    assert result_native.exit_code == result_web.exit_code == 1  # the tag conflict is an error
    native, web = json.loads(result_native.stdout), json.loads(result_web.stdout)
    # one broker: every check's data is there but the topics the group has offsets for, which no
    # dashboard lists (so topics left behind by a stopped client cannot be found through it)
    # one sample: both name the check that compares two as skipped
    assert [s["code"] for s in web.pop("skipped")] == ["ABANDONED_TOPIC_BACKLOG", "LAG_NOT_ADVANCING"]
    assert [s["code"] for s in native.pop("skipped")] == ["LAG_NOT_ADVANCING"] and web["errors"] == {}
    assert web == native
    assert "SUBSCRIPTION_TAG_CONFLICT" in {f["code"] for f in web["findings"]}


def test_messages_by_id_and_key_and_their_explanations_equal_native(setup: Setup,
                                                                    dashboard: DashboardProcess) -> None:
    """Every message of the tag-overwrite topic, found by its producer id, by the broker's offset
    id and by position natively, is the same message through the dashboard, and ``msg explain``
    gives the same verdict with the same evidence for the group."""
    ns = ("-n", setup.cluster.namesrv_addr)
    web = ("--dashboard", dashboard.url)
    for queue_id in range(4):
        for offset in range(setup.cluster.max_offset(setup.topic, queue_id)):
            [native] = run_json("msg", "show", setup.topic, "--queue", f"{setup.cluster.broker_name}/{queue_id}",
                                "--offset", str(offset), *ns)["messages"]
            by_uniq = run_json("msg", "show", native["unique_key"], "--topic", setup.topic, *web)["messages"]
            assert by_uniq == [native]
            if dashboard.generation.name == "1.0.0":  # 2.x's id page takes producer ids only
                by_offset_id = run_json("msg", "show", native["offset_msg_id"], "--topic", setup.topic, *web)
                assert by_offset_id["messages"] == [native]
            explained = [run_json("msg", "explain", native["unique_key"], "--topic", setup.topic, "--group",
                                  setup.group, *source)["messages"][0]["explanations"] for source in (ns, web)]
            assert explained[1] == explained[0]
            assert explained[0][0]["verdict"] in ("consumed", "filtered_by_broker", "dropped_by_client")
    result = CliRunner().invoke(app, ["msg", "browse", setup.topic, *web])
    assert result.exit_code == 2 and "cannot read messages back by offset" in result.stderr
    result = CliRunner().invoke(app, ["msg", "show", native["offset_msg_id"], *web])
    assert result.exit_code == 2, result.stderr
    assert ("offset id" if dashboard.generation.name != "1.0.0" else "add --topic") in result.stderr


@pytest.fixture(scope="module")
def failing_group(setup: Setup) -> tuple[str, str]:
    """A group whose one real consumer answers RECONSUME_LATER to every message, once the native
    doctor reports its consume failures (the client's statusTable has caught up)."""
    token = uuid.uuid4().hex[:8]
    topic, group = f"DashFailTopic_{token}", f"DashFailGroup_{token}"
    setup.cluster.create_topic(topic, 2)
    client = setup.clients.start_consumer("failing", group, {topic: "*"}, instance_name=f"dashFail_{token}",
                                          consume_result="RECONSUME_LATER")
    wait_until(lambda: setup.cluster.consumer_ids(group) == [client], timeout=60, message="consumer registered")
    setup.clients.produce(topic, "tagF", 20)

    def native_reports_failures() -> bool:
        result = CliRunner().invoke(app, ["doctor", group, "-o", "json", "--no-sample",
                                          "-n", setup.cluster.namesrv_addr])
        return result.exit_code in (0, 1) and "CONSUME_FAILURES" in {
            f["code"] for f in json.loads(result.stdout)["findings"]}

    wait_until(native_reports_failures, timeout=120, message="the native doctor reports consume failures")
    return group, client


def test_consume_failures_through_the_dashboard(setup: Setup, dashboard: DashboardProcess,
                                                failing_group: tuple[str, str]) -> None:
    # The client's failed TPS is a one-minute rate and its retries come back in bursts (10 s,
    # 30 s, 1 min ...): read until the dashboard relays a burst, as the native read did.
    group, client = failing_group
    seen: dict[str, Any] = {}

    def dashboard_reports_failures() -> bool:
        result = CliRunner().invoke(app, ["doctor", group, "-o", "json", "--dashboard", dashboard.url])
        assert result.exit_code in (0, 1), result.stderr
        web = json.loads(result.stdout)
        assert [s["code"] for s in web["skipped"]] == ["ABANDONED_TOPIC_BACKLOG", "LAG_NOT_ADVANCING"]
        assert web["errors"] == {}
        found = [f for f in web["findings"] if f["code"] == "CONSUME_FAILURES"]
        if found:
            seen["finding"] = found[0]
        return bool(found)

    wait_until(dashboard_reports_failures, timeout=180, interval=5,
               message="the dashboard's doctor reports consume failures")
    (row,) = seen["finding"]["evidence"]["clients"]
    assert row["client"] == client
    assert row["consume_failed_tps"] > 0 or row["consume_failed_msgs"] > 0


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), **(env or {})}
    return subprocess.run([sys.executable, "-m", "rmqctl", *args], cwd=REPO_ROOT, env=full_env,
                          capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.parametrize("generation", GENERATIONS)
def test_bad_credentials_one_line_exit_2(setup: Setup, dashboard_for: Callable[[str], DashboardProcess],
                                         generation: str) -> None:
    dashboard = dashboard_for(generation)
    result = cli("group", "list", "--dashboard", dashboard.url,
                 env={"RMQCTL_DASHBOARD_PASSWORD": "not-the-password"})
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(f"rmqctl: error: dashboard login as '{USER}' failed: Bad username or password!")
    assert "Traceback" not in result.stderr and "not-the-password" not in result.stderr + result.stdout


@pytest.mark.parametrize("generation", GENERATIONS)
@pytest.mark.parametrize("command", ["show", "progress"])
def test_unknown_group_exit_2_on_every_generation(setup: Setup, dashboard_for: Callable[[str], DashboardProcess],
                                                  generation: str, command: str) -> None:
    dashboard = dashboard_for(generation)
    missing = f"NoSuchGroup_{uuid.uuid4().hex[:8]}"
    native = cli("group", command, missing, "-n", setup.cluster.namesrv_addr, "-o", "json")
    web = cli("group", command, missing, "--dashboard", dashboard.url, "-o", "json")
    assert native.returncode == 2, native.stderr
    assert (web.returncode, web.stdout) == (native.returncode, native.stdout), web.stderr
    assert web.stderr.splitlines()[0] == native.stderr.splitlines()[0]


def test_normal_user_reads_groups_through_the_list_cache(setup: Setup,
                                                         dashboard_for: Callable[[str], DashboardProcess]) -> None:
    """2.x lets non-admin users call only ``*.query`` paths; ``group.refresh.all`` is refused."""
    dashboard = dashboard_for("2.1.0")
    viewer, (password, _) = next((n, u) for n, u in DEFAULT_USERS.items() if not u[1])
    result = cli("group", "list", "--dashboard", dashboard.url, "-o", "json",
                 env={"RMQCTL_DASHBOARD_USER": viewer, "RMQCTL_DASHBOARD_PASSWORD": password})
    assert result.returncode == 0, result.stderr
    rows = {row["group"]: row for row in json.loads(result.stdout)["groups"]}
    assert setup.group in rows
    # the dashboard's cache as it was last built: marked, with the time it was built and its age
    row = rows[setup.group]
    assert row["cached"] is True and isinstance(row["cached_at_ts"], int), row
    assert isinstance(row["cache_age_ms"], int) and row["cache_age_ms"] >= 0, row
    table = cli("group", "list", "--dashboard", dashboard.url,
                env={"RMQCTL_DASHBOARD_USER": viewer, "RMQCTL_DASHBOARD_PASSWORD": password})
    assert "come from the dashboard's cached group list, built " in table.stdout + table.stderr


def test_debug_never_prints_cookies_or_the_password(setup: Setup,
                                                    dashboard_for: Callable[[str], DashboardProcess]) -> None:
    dashboard = dashboard_for("master")
    result = cli("--debug", "group", "show", setup.group, "--dashboard", dashboard.url)
    assert result.returncode == 0, result.stderr
    assert "dashboard GET /consumer/consumerConnection.query" in result.stderr  # debug output is on
    leaked = [s for s in (DEFAULT_USERS[USER][0], "JSESSIONID=", "XSRF-TOKEN=", "X-XSRF-TOKEN:")
              if s in result.stderr + result.stdout]
    assert leaked == []


def test_dashboard_down_one_line_exit_3(tmp_path: Path) -> None:
    import socket

    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens there
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result = cli("group", "list", "--dashboard", f"http://127.0.0.1:{port}")
    assert result.returncode == 3
    assert result.stderr.splitlines()[0] == (f"rmqctl: error: cannot reach the dashboard at http://127.0.0.1:{port}: "
                                             "Connection refused")
    assert "Traceback" not in result.stderr
