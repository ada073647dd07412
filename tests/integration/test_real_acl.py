"""ACL 2.0 on a real RocketMQ 5.3 broker: users and passwords as access and secret keys.

A cluster of its own (module scope, small heaps) with ``authenticationEnabled`` and
``authorizationEnabled``; the harness and mqadmin sign as the initial super user. Three users:
``viewer`` may Get every topic and group, ``operator`` may also Sub and Update, ``nobody`` may
nothing. Reads work with a user's keys; a refused read names the action and the resource it
lacks (exit 6); a reset refused by the ACL is reported per queue as refused, with the permission;
the same reset with the operator's keys is applied. Its servers run with TLS disabled, the
plain ports ``--tls`` must name as such.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.harness.plugin import real_part_missing, start_or_missing
from tests.harness.realcluster import HarnessError, RealCluster, build_harness, wait_until

pytest_plugins = ["tests.harness.plugin"]

pytestmark = [pytest.mark.real_cluster, pytest.mark.timeout(400)]

SUPER = ("rocketmq", "12345678")
USERS = {"viewer": ("viewer", "viewer-pw"), "operator": ("operator", "operator-pw"), "nobody": ("nobody", "nobody-pw")}
TOPIC, GROUP, QUEUES = "AclTopic", "AclGroup", 2
ACL_CONFIG = {
    "authenticationEnabled": "true",
    "authenticationProvider": "org.apache.rocketmq.auth.authentication.provider.DefaultAuthenticationProvider",
    "authenticationMetadataProvider":
        "org.apache.rocketmq.auth.authentication.provider.LocalAuthenticationMetadataProvider",
    "initAuthenticationUser": json.dumps({"username": SUPER[0], "password": SUPER[1]}),
    "innerClientAuthenticationCredentials": json.dumps({"accessKey": SUPER[0], "secretKey": SUPER[1]}),
    "authorizationEnabled": "true",
    "authorizationProvider": "org.apache.rocketmq.auth.authorization.provider.DefaultAuthorizationProvider",
    "authorizationMetadataProvider":
        "org.apache.rocketmq.auth.authorization.provider.LocalAuthorizationMetadataProvider",
}
READ_COMMANDS = [["cluster", "list"], ["topic", "list"], ["group", "list"], ["group", "show", GROUP],
                 ["group", "progress", GROUP], ["group", "assignment", GROUP], ["doctor", GROUP]]


@pytest.fixture(scope="module")
def acl_cluster() -> Iterator[RealCluster]:
    try:
        build_harness()
    except HarnessError as exc:
        real_part_missing(f"cannot build the Java harness: {exc}")
    # TLS off on both servers (tls.server.mode=disabled; the default is permissive): a plain port
    cluster = RealCluster(cluster_name="AclCluster", broker_name="broker-acl", namesrv_heap="128m",
                          broker_heap="384m", broker_config=ACL_CONFIG, credentials=SUPER,
                          namesrv_jvm_args=["-Dtls.server.mode=disabled"],
                          broker_jvm_args=["-Dtls.server.mode=disabled"])

    def users_acls_and_a_committed_group(cluster: RealCluster) -> None:
        b = cluster.broker_addr
        for user, password in USERS.values():
            cluster.mqadmin("createUser", "-b", b, "-u", user, "-p", password, "-t", "Normal", check=True)
        cluster.mqadmin("createAcl", "-b", b, "-s", "User:viewer", "-r", "Topic:*,Group:*", "-a", "Get",
                        "-d", "Allow", check=True)
        cluster.mqadmin("createAcl", "-b", b, "-s", "User:operator", "-r", "Topic:*,Group:*", "-a", "Get,Sub,Update",
                        "-d", "Allow", check=True)
        cluster.mqadmin("updateTopic", "-b", b, "-t", TOPIC, "-r", str(QUEUES), "-w", str(QUEUES), check=True)
        cluster.mqadmin("updateSubGroup", "-b", b, "-g", GROUP, check=True)
        for queue_id in range(QUEUES):
            cluster.mqadmin("sendMessage", "-t", TOPIC, "-p", f"m{queue_id}", "-b", cluster.broker_name,
                            "-i", str(queue_id), check=True)
            # the group has consumed it: its committed offset is 1 (signed as the super user)
            answer = cluster.request_broker(15, {"consumerGroup": GROUP, "topic": TOPIC, "queueId": queue_id,
                                                 "commitOffset": 1})
            assert answer.code == 0, answer.remark

    start_or_missing(cluster, "ACL cluster", users_acls_and_a_committed_group)
    try:
        yield cluster
    finally:
        cluster.stop()


def rmqctl(*args: str, user: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("NAMESRV_ADDR", "RMQCTL_ACCESS_KEY", "RMQCTL_SECRET_KEY", "RMQCTL_TLS")}
    env["RMQCTL_CONFIG"] = "/nonexistent/rmqctl-config.toml"
    env["XDG_STATE_HOME"] = env.get("XDG_STATE_HOME", "/tmp/rmqctl-acl-state")
    if user is not None:
        env["RMQCTL_ACCESS_KEY"], env["RMQCTL_SECRET_KEY"] = USERS[user] if user in USERS else (user, "wrong")
    return subprocess.run([sys.executable, "-m", "rmqctl", *args], capture_output=True, text=True, env=env,
                          timeout=120, check=False)


def committed(cluster: RealCluster) -> list[int | None]:
    return [cluster.consumer_offset(GROUP, TOPIC, q) for q in range(QUEUES)]


@pytest.mark.parametrize("command", READ_COMMANDS, ids=" ".join)
def test_every_read_works_with_a_users_keys(command: list[str], acl_cluster: RealCluster) -> None:
    result = rmqctl("-n", acl_cluster.namesrv_addr, *command, "-o", "json", user="viewer")
    assert result.returncode in (0, 1), result.stderr
    text = result.stdout
    assert json.loads(text)
    if command[0] in ("group", "doctor"):
        assert GROUP in text
    if command[:2] == ["group", "progress"]:
        offsets = [q["consumer_offset"] for q in json.loads(text)["queues"]]
        assert offsets == [1] * QUEUES  # read through the ACL, not unknown


def test_a_denied_read_names_the_action_and_the_resource(acl_cluster: RealCluster) -> None:
    result = rmqctl("-n", acl_cluster.namesrv_addr, "group", "show", GROUP, user="nobody")
    assert result.returncode == 6 and result.stdout == "", result.stderr
    line, hint = result.stderr.strip().splitlines()
    assert line.startswith("rmqctl: error: ") and "NO_PERMISSION (16)" in line
    assert f"User:nobody has no permission to access Group:{GROUP}" in line  # the broker's own words
    assert f"access key 'nobody' needs Get on Group:{GROUP}" in line
    assert f"-s User:nobody -r Group:{GROUP}" in hint and "-a Get" in hint


def test_without_keys_or_with_a_wrong_secret_authentication_fails(acl_cluster: RealCluster) -> None:
    unsigned = rmqctl("-n", acl_cluster.namesrv_addr, "group", "show", GROUP, user=None)
    assert unsigned.returncode == 6
    assert "authentication of an unsigned request (no access key) failed" in unsigned.stderr
    assert "RMQCTL_ACCESS_KEY" in unsigned.stderr
    wrong = rmqctl("-n", acl_cluster.namesrv_addr, "group", "show", GROUP, user="viewer-with-a-wrong-secret")
    assert wrong.returncode == 6 and "authentication of access key" in wrong.stderr, wrong.stderr


def test_a_reset_refused_by_the_acl_is_reported_with_the_permission(acl_cluster: RealCluster) -> None:
    assert committed(acl_cluster) == [1] * QUEUES
    result = rmqctl("-n", acl_cluster.namesrv_addr, "group", "reset", GROUP, "--topic", TOPIC, "--to-earliest",
                    "--execute", "--yes", "-o", "json", user="viewer")
    assert result.returncode == 9, result.stdout + result.stderr  # sent, and not applied
    doc = json.loads(result.stdout)
    statuses = {q["status"] for q in doc["queues"]}
    assert statuses == {"refused"}, doc
    text = json.dumps(doc) + result.stderr
    assert "access key 'viewer' needs" in text and f"Group:{GROUP} and Topic:{TOPIC}" in text
    assert committed(acl_cluster) == [1] * QUEUES  # nothing moved


def test_the_same_reset_with_a_permitted_users_keys_is_applied(acl_cluster: RealCluster) -> None:
    result = rmqctl("-n", acl_cluster.namesrv_addr, "group", "reset", GROUP, "--topic", TOPIC, "--to-earliest",
                    "--execute", "--yes", "-o", "json", user="operator")
    assert result.returncode == 0, result.stdout + result.stderr
    wait_until(lambda: committed(acl_cluster) == [0] * QUEUES, timeout=30, message="offsets reset to 0")


def test_tls_to_a_server_with_tls_disabled_is_one_line_naming_the_mismatch(acl_cluster: RealCluster) -> None:
    result = rmqctl("--tls", "-n", acl_cluster.namesrv_addr, "cluster", "list", user="viewer")
    assert result.returncode == 3 and result.stdout == ""
    line, hint = result.stderr.strip().splitlines()
    assert line.startswith("rmqctl: error: ") and "does not speak TLS" in line, result.stderr
    assert "drop --tls" in hint and "Traceback" not in result.stderr


def test_a_delete_refused_by_the_acl_names_the_delete_permission(acl_cluster: RealCluster) -> None:
    result = rmqctl("-n", acl_cluster.namesrv_addr, "group", "delete", GROUP, "--execute", "--yes", "-o", "json",
                    user="viewer")
    assert result.returncode != 0, result.stdout
    text = result.stdout + result.stderr
    assert "refused" in text and f"access key 'viewer' needs Delete on Group:{GROUP}" in text, text
    assert "Traceback" not in result.stderr
    shown = rmqctl("-n", acl_cluster.namesrv_addr, "group", "show", GROUP, "-o", "json", user="viewer")
    assert shown.returncode == 0, shown.stderr  # still there
