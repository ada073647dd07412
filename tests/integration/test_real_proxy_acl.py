"""ACL 2.0 through a real rocketmq-proxy: a 5.3.3 broker with authentication and authorization on,
and a proxy (cluster mode) that enforces them too, reading users and ACLs from the broker.

A cluster of its own (module scope, small heaps), set up as ``test_real_acl.py`` sets up its
broker; the proxy's config turns on ``authenticationEnabled``/``authorizationEnabled`` with the
proxy's metadata providers (which ask the broker), and signs its own requests to the broker with
``innerClientAuthenticationCredentials`` (``enableAclRpcHookForClusterMode``). Real gRPC consumers
(rocketmq-client-java) sign with the super user's keys. rmqctl, given ``--proxy`` and a user's
keys, lists the group's gRPC clients through the proxy; without permission, with a wrong secret
or without keys, one ``rmqctl: error:`` line names the refusal (exit 6): never a traceback and
never a group shown offline with no client.

Seen on this set-up and not explained yet: the signed gRPC consumers register, and the signed
producer's messages are stored, but none is delivered: the broker answers each of the proxy's
pops at once with POLLING_TIMEOUT (210), about 1,400 a second, where the same proxy and clients
without ACL hold the pop and receive. The module checks what the proxy lists, not consumption.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from rmqctl import errors
from rmqctl.remoting.acl import Credentials
from rmqctl.remoting.admin import AdminClient
from tests.harness.plugin import real_part_missing, start_or_missing
from tests.harness.proxycluster import GrpcClientsProcess, RealProxy, create_normal_topic
from tests.harness.realcluster import (
    ClusterStartError,
    HarnessError,
    RealCluster,
    ScenarioError,
    build_harness,
    wait_until,
)
from tests.integration.test_real_acl import ACL_CONFIG, SUPER

pytestmark = [pytest.mark.real_cluster, pytest.mark.timeout(500)]

USERS = {"viewer": ("viewer", "viewer-pw"), "nobody": ("nobody", "nobody-pw")}
TOPIC, GROUP = "ProxyAclTopic", "ProxyAclGroup"

#: the proxy's own auth settings: the same providers as the broker's, but the metadata (users and
#: ACLs) is read from the broker through the proxy's metadata service
PROXY_AUTH = {
    "authenticationEnabled": True,
    "authenticationProvider": ACL_CONFIG["authenticationProvider"],
    "authenticationMetadataProvider": "org.apache.rocketmq.proxy.auth.ProxyAuthenticationMetadataProvider",
    "authorizationEnabled": True,
    "authorizationProvider": ACL_CONFIG["authorizationProvider"],
    "authorizationMetadataProvider": "org.apache.rocketmq.proxy.auth.ProxyAuthorizationMetadataProvider",
    "innerClientAuthenticationCredentials": ACL_CONFIG["innerClientAuthenticationCredentials"],
    "enableAclRpcHookForClusterMode": True,
}


@pytest.fixture(scope="module")
def acl_cluster() -> Iterator[RealCluster]:
    try:
        build_harness()
    except HarnessError as exc:
        real_part_missing(f"cannot build the Java harness: {exc}")
    cluster = RealCluster(cluster_name="ProxyAclCluster", broker_name="broker-pacl", namesrv_heap="128m",
                          broker_heap="384m", broker_config=ACL_CONFIG, credentials=SUPER,
                          namesrv_jvm_args=["-Dtls.server.mode=disabled"],
                          broker_jvm_args=["-Dtls.server.mode=disabled", "-XX:MaxDirectMemorySize=512m"])

    def users_and_acls(cluster: RealCluster) -> None:
        b = cluster.broker_addr
        for user, password in USERS.values():
            cluster.mqadmin("createUser", "-b", b, "-u", user, "-p", password, "-t", "Normal", check=True)
        cluster.mqadmin("createAcl", "-b", b, "-s", "User:viewer", "-r", "Topic:*,Group:*", "-a", "Get",
                        "-d", "Allow", check=True)
        create_normal_topic(cluster, TOPIC, 2)

    start_or_missing(cluster, "ACL cluster", users_and_acls)
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def acl_proxy(acl_cluster: RealCluster) -> Iterator[RealProxy]:
    proxy = RealProxy(acl_cluster, name="acl-proxy", config=PROXY_AUTH, jvm_args=["-Dtls.server.mode=disabled"])
    problem: tuple[str, str] | None = None
    try:
        proxy.start()
    except (ClusterStartError, HarnessError) as exc:
        problem = (f"the ACL proxy did not start: {exc}", getattr(exc, "log_tail", ""))
    if problem:
        real_part_missing(*problem)
    try:
        yield proxy
    finally:
        proxy.stop()


@pytest.fixture(scope="module")
def grpc_consumer(acl_proxy: RealProxy) -> Iterator[tuple[GrpcClientsProcess, str]]:
    """A gRPC push consumer of GROUP, signed with the super user's keys, and messages sent by a gRPC
    producer signed the same way."""
    clients = GrpcClientsProcess(acl_proxy.grpc_endpoint, credentials=SUPER)
    try:
        clients.start()
        client_id = clients.start_push("push", GROUP, {TOPIC: "*"})
        clients.send(TOPIC, "ok", 4)  # signed sends through the proxy are accepted
    except (ScenarioError, HarnessError, OSError) as exc:
        clients.close(graceful=False)
        real_part_missing(f"gRPC clients through the ACL proxy did not work: {exc}",
                          clients.stderr_tail() + acl_proxy.log_tail())
    try:
        yield clients, client_id
    finally:
        clients.close(graceful=False)


def rmqctl(*args: str, keys: tuple[str, str] | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("NAMESRV_ADDR", "RMQCTL_ACCESS_KEY", "RMQCTL_SECRET_KEY", "RMQCTL_TLS")}
    env["RMQCTL_CONFIG"] = "/nonexistent/rmqctl-config.toml"
    if keys is not None:
        env["RMQCTL_ACCESS_KEY"], env["RMQCTL_SECRET_KEY"] = keys
    return subprocess.run([sys.executable, "-m", "rmqctl", *args], capture_output=True, text=True, env=env,
                          timeout=120, check=False)


def test_the_grpc_client_is_listed_through_the_proxy_with_a_users_keys(
    acl_cluster: RealCluster, acl_proxy: RealProxy, grpc_consumer: tuple[GrpcClientsProcess, str],
) -> None:
    _, client_id = grpc_consumer
    base = ["-n", acl_cluster.namesrv_addr, "--proxy", acl_proxy.remoting_addr]

    def shown() -> dict[str, Any] | None:
        result = rmqctl(*base, "group", "show", GROUP, "-o", "json", keys=USERS["viewer"])
        assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
        doc: dict[str, Any] = json.loads(result.stdout)
        return doc if doc["online"] else None

    doc = wait_until(shown, timeout=60, interval=2.0, message="the gRPC client listed through the proxy")
    assert [(c["client_id"], c["sdk"], c["proxy"]) for c in doc["connections"]] == [
        (client_id, "grpc", acl_proxy.remoting_addr)]
    proxies = {p["address"]: p for p in doc["proxies"]}
    assert proxies[acl_proxy.remoting_addr]["error"] is None and proxies[acl_proxy.remoting_addr]["clients"] == [
        client_id]

    listed = rmqctl(*base, "group", "list", "-o", "json", keys=USERS["viewer"])
    assert listed.returncode == 0, listed.stderr
    (row,) = [g for g in json.loads(listed.stdout)["groups"] if g["group"] == GROUP]
    assert row["online"] is True and row["clients"] == 1


@pytest.mark.parametrize("who", ["nobody", "wrong-secret", "no-keys"])
def test_a_refused_read_through_the_proxy_is_one_line_naming_the_refusal(
    who: str, acl_cluster: RealCluster, acl_proxy: RealProxy, grpc_consumer: tuple[GrpcClientsProcess, str],
) -> None:
    keys = {"nobody": USERS["nobody"], "wrong-secret": ("viewer", "not-the-password"), "no-keys": None}[who]
    result = rmqctl("-n", acl_cluster.namesrv_addr, "--proxy", acl_proxy.remoting_addr, "group", "show", GROUP,
                    keys=keys)
    assert result.returncode == 6 and result.stdout == "", (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines[0].startswith("rmqctl: error: ") and len(lines) <= 2, result.stderr
    if who == "nobody":
        assert "NO_PERMISSION (16)" in lines[0] and f"access key 'nobody' needs Get on Group:{GROUP}" in lines[0]
    elif who == "wrong-secret":
        assert "authentication of access key 'viewer'" in lines[0], lines[0]
    else:
        assert "authentication of an unsigned request (no access key) failed" in lines[0], lines[0]


@pytest.mark.parametrize("who", ["viewer", "nobody", "wrong-secret"])
def test_the_proxys_own_acl_check_is_decoded_and_named(
    who: str, acl_proxy: RealProxy, grpc_consumer: tuple[GrpcClientsProcess, str],
) -> None:
    """The proxy's remoting port alone, asked for the group's clients: its own check answers (the
    brokers are not asked). It authenticates the keys, and answers a failure as SYSTEM_ERROR (1)
    with the refusal's words, which rmqctl names as a refusal (exit 6); it does not check a
    permission for the connection list (the 5.3.3 proxy lists the clients to ``nobody`` too)."""
    _, client_id = grpc_consumer
    keys = {"viewer": USERS["viewer"], "nobody": USERS["nobody"], "wrong-secret": ("viewer", "not-the-password")}[who]

    async def ask() -> list[str]:
        admin = AdminClient([acl_proxy.remoting_addr], timeout=10, credentials=Credentials(*keys))
        try:
            listed = await admin.consumer_connection(acl_proxy.remoting_addr, GROUP)
            return [c.client_id for c in listed.connections]
        finally:
            await admin.close()

    if who in ("viewer", "nobody"):
        assert asyncio.run(ask()) == [client_id]
        return
    with pytest.raises(errors.NoPermission) as refused:
        asyncio.run(ask())
    text = str(refused.value)
    assert refused.value.exit_code == errors.ExitCode.REFUSED
    assert text.startswith(f"SYSTEM_ERROR (1) from {acl_proxy.remoting_addr}: check signature failed"), text
    assert "(authentication of access key 'viewer' failed)" in text, text


def test_topic_list_types_by_name_when_the_broker_refuses_its_topic_configs(acl_cluster: RealCluster) -> None:
    # the name server (no ACL here) lists the topics to anyone; the broker refuses its topic
    # configs to keys that fail authentication (5.3.3 lets any authenticated user, even one
    # without a permission, read them): the list stands, typed by name, and says why
    viewer = rmqctl("-n", acl_cluster.namesrv_addr, "topic", "list", "-o", "json", keys=("viewer", "wrong"))
    assert viewer.returncode == 0, viewer.stderr
    doc = json.loads(viewer.stdout)
    assert {(t["type"], t["type_source"]) for t in doc["topics"] if t["topic"] == TOPIC} == {("normal", "name")}
    assert "NO_PERMISSION" in doc["unavailable"]["topic_types"], doc
    admin = rmqctl("-n", acl_cluster.namesrv_addr, "topic", "list", "-o", "json", keys=SUPER)
    assert admin.returncode == 0, admin.stderr
    doc = json.loads(admin.stdout)
    assert {(t["type"], t["type_source"]) for t in doc["topics"] if t["topic"] == TOPIC} == {("normal", "broker")}
    assert "unavailable" not in doc
