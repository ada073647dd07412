"""TLS against a real RocketMQ 5.x name server, broker and proxy that enforce it.

A cluster of its own (module scope, small heaps): both servers run with
``tls.server.mode=enforcing`` and a certificate signed by a CA this module makes; the broker
speaks TLS to the name server too (``tls.enable``), and so do the real Java consumers and the
producer behind the group the commands read. Every read command works with ``--tls`` (and with a
context naming the CA, which checks the broker's chain); without TLS, one ``rmqctl: error:`` line
says the server requires it, exit 3; a certificate from another CA is not trusted. A
rocketmq-proxy (cluster mode) with the same settings is read with ``--tls --proxy``.
"""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness.plugin import real_part_missing, start_or_missing
from tests.harness.proxycluster import RealProxy
from tests.harness.realcluster import (
    ClusterStartError,
    HarnessError,
    RealCluster,
    ScenarioClientsProcess,
    ScenarioError,
    build_harness,
    wait_until,
)
from tests.tlsfiles import TlsFiles, make_tls_files

pytest_plugins = ["tests.harness.plugin"]

pytestmark = [pytest.mark.real_cluster, pytest.mark.timeout(400)]

TOPIC, GROUP = "TlsTopic", "TlsGroup"
READ_COMMANDS = [["cluster", "list"], ["topic", "list"], ["group", "list"], ["group", "show", GROUP],
                 ["group", "progress", GROUP], ["group", "assignment", GROUP], ["doctor", GROUP]]


def server_tls_args(files: TlsFiles, config_file: Path) -> list[str]:
    """The Java servers' tls.* system properties: enforce TLS with the test CA's server certificate."""
    return [
        "-Dtls.server.mode=enforcing",
        "-Dtls.test.mode.enable=false",
        f"-Dtls.config.file={config_file}",  # none: only these properties count
        f"-Dtls.server.certPath={files.server_cert}",
        f"-Dtls.server.keyPath={files.server_key}",
        "-Dtls.server.need.client.auth=none",
    ]


def client_tls_args(files: TlsFiles, config_file: Path) -> list[str]:
    """The Java clients' (and the broker's own client's) tls.* properties: TLS, the server checked."""
    return [
        "-Dtls.enable=true",
        "-Dtls.test.mode.enable=false",
        f"-Dtls.config.file={config_file}",
        "-Dtls.client.authServer=true",
        f"-Dtls.client.trustCertPath={files.ca}",
    ]


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    return make_tls_files(tmp_path_factory.mktemp("real-tls"))


@pytest.fixture(scope="module")
def tls_cluster(certs: TlsFiles) -> Iterator[RealCluster]:
    try:
        build_harness()
    except HarnessError as exc:
        real_part_missing(f"cannot build the Java harness: {exc}")
    no_file = certs.ca.parent / "no-tls.properties"
    harness_tls = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    harness_tls.check_hostname = False
    harness_tls.load_verify_locations(certs.ca)
    cluster = RealCluster(
        cluster_name="TlsCluster", broker_name="broker-tls", namesrv_heap="128m", broker_heap="384m",
        namesrv_jvm_args=server_tls_args(certs, no_file),
        broker_jvm_args=[*server_tls_args(certs, no_file), *client_tls_args(certs, no_file)[:1]],
        tls_context=harness_tls,
    )
    start_or_missing(cluster, "TLS cluster")
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def consumed(tls_cluster: RealCluster, certs: TlsFiles) -> Iterator[ScenarioClientsProcess]:
    """A real push consumer of GROUP and a producer, both over TLS; 8 messages consumed."""
    no_file = certs.ca.parent / "no-tls.properties"
    clients = ScenarioClientsProcess(tls_cluster, heap="256m", jvm_args=client_tls_args(certs, no_file))
    try:
        clients.start()
        clients.produce(TOPIC, tag="tagA", count=8)  # creates the topic (autoCreateTopicEnable)
        clients.start_consumer("c1", group=GROUP, subscriptions={TOPIC: "*"}, client_ip="127.0.0.1")
        clients.wait_until(lambda: len(clients.received().get("c1", [])) >= 8, timeout=180)
    except (ScenarioError, HarnessError, OSError) as exc:
        clients.close(graceful=False)
        real_part_missing(f"Java clients over TLS did not work: {exc}", clients.stderr_tail() + tls_cluster.log_tail())
    try:
        yield clients
    finally:
        clients.close()


def rmqctl(*args: str, config: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NAMESRV_ADDR", "RMQCTL_TLS", "RMQCTL_CONFIG")}
    if config is not None:
        env["RMQCTL_CONFIG"] = str(config)
    else:
        env["RMQCTL_CONFIG"] = "/nonexistent/rmqctl-config.toml"
    return subprocess.run([sys.executable, "-m", "rmqctl", *args], capture_output=True, text=True, env=env,
                          timeout=120, check=False)


@pytest.mark.parametrize("command", READ_COMMANDS, ids=" ".join)
def test_every_read_command_works_with_tls(command: list[str], tls_cluster: RealCluster,
                                           consumed: ScenarioClientsProcess) -> None:
    result = rmqctl("--tls", "-n", tls_cluster.namesrv_addr, *command, "-o", "json")
    assert result.returncode in (0, 1), result.stderr
    doc = json.loads(result.stdout)
    text = json.dumps(doc)
    if command[0] in ("topic",):
        assert TOPIC in text
    if command[0] in ("group", "doctor"):
        assert GROUP in text
    if command[0] == "cluster":
        assert tls_cluster.broker_addr in text


def test_the_group_read_over_tls_has_its_client_and_its_offsets(tls_cluster: RealCluster,
                                                                consumed: ScenarioClientsProcess) -> None:
    def committed() -> dict[str, object] | None:
        result = rmqctl("--tls", "-n", tls_cluster.namesrv_addr, "group", "progress", GROUP, "-o", "json")
        doc: dict[str, object] = json.loads(result.stdout)
        queues = doc.get("queues") or []
        assert isinstance(queues, list)
        done = sum(int(q.get("consumer_offset") or 0) for q in queues if isinstance(q, dict))
        return doc if done == 8 else None

    wait_until(committed, timeout=60, interval=1.0, message="8 messages committed, read over TLS")
    show = json.loads(rmqctl("--tls", "-n", tls_cluster.namesrv_addr, "group", "show", GROUP, "-o", "json").stdout)
    assert "127.0.0.1@" in json.dumps(show)  # the Java consumer, registered over TLS


def test_a_context_with_the_ca_checks_the_brokers_certificate(tls_cluster: RealCluster, certs: TlsFiles,
                                                               consumed: ScenarioClientsProcess,
                                                               tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f'current-context = "tls"\n[contexts.tls]\nnamesrv = "{tls_cluster.namesrv_addr}"\n'
                      f'tls = true\ntls_ca_file = "{certs.ca}"\n')
    result = rmqctl("group", "show", GROUP, "-o", "json", config=config)
    assert result.returncode == 0, result.stderr
    config.write_text(f'current-context = "tls"\n[contexts.tls]\nnamesrv = "{tls_cluster.namesrv_addr}"\n'
                      f'tls = true\ntls_ca_file = "{certs.other_ca}"\n')
    result = rmqctl("group", "show", GROUP, config=config)
    assert result.returncode == 3 and "is not trusted" in result.stderr, result.stderr


@pytest.mark.parametrize("command", [["cluster", "list"], ["group", "show", GROUP]], ids=" ".join)
def test_without_tls_one_line_says_the_server_requires_it(command: list[str], tls_cluster: RealCluster) -> None:
    result = rmqctl("-n", tls_cluster.namesrv_addr, *command)
    assert result.returncode == 3 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert lines[0].startswith("rmqctl: error: ") and "requires TLS" in lines[0], result.stderr
    assert len(lines) == 2 and "--tls" in lines[1] and "Traceback" not in result.stderr


@pytest.fixture(scope="module")
def tls_proxy(tls_cluster: RealCluster, certs: TlsFiles) -> Iterator[RealProxy]:
    no_file = certs.ca.parent / "no-tls.properties"
    # the proxy takes its own certificate from its config file (else it makes a self-signed one)
    proxy = RealProxy(tls_cluster, name="tls-proxy",
                      config={"tlsTestModeEnable": False, "tlsCertPath": str(certs.server_cert),
                              "tlsKeyPath": str(certs.server_key)},
                      jvm_args=[*server_tls_args(certs, no_file), *client_tls_args(certs, no_file)[:1]])
    problem: tuple[str, str] | None = None
    for attempt in (1, 2):  # once more when it exits at start (seen once on a loaded machine)
        try:
            proxy.start()
            problem = None
            break
        except (ClusterStartError, HarnessError) as exc:
            problem = (f"the TLS proxy did not start (attempt {attempt}): {exc}", getattr(exc, "log_tail", ""))
    if problem:
        real_part_missing(*problem)
    try:
        yield proxy
    finally:
        proxy.stop()


def test_a_proxy_enforcing_tls_is_read_with_tls(tls_cluster: RealCluster, tls_proxy: RealProxy,
                                                consumed: ScenarioClientsProcess) -> None:
    result = rmqctl("--tls", "-n", tls_cluster.namesrv_addr, "--proxy", tls_proxy.remoting_addr,
                    "group", "show", GROUP, "-o", "json")
    assert result.returncode == 0, result.stderr
    proxies = {p["address"]: p for p in json.loads(result.stdout)["proxies"]}
    assert proxies[tls_proxy.remoting_addr]["error"] is None, proxies
    # the proxy alone, named as the name server would be, refuses a plain connection the same way
    plain = rmqctl("-n", tls_proxy.remoting_addr, "cluster", "list")
    assert plain.returncode == 3 and "requires TLS" in plain.stderr, plain.stderr
