"""A real RocketMQ 5.x proxy beside a :class:`~tests.harness.realcluster.RealCluster`, and real gRPC
clients (rocketmq-client-java) behind it, for rmqctl integration tests.

Standard library only, like ``realcluster.py``. Two Maven modules of their own keep the class paths
apart: ``tests/harness/proxy`` (rocketmq-proxy and its dependencies; nothing compiled) and
``tests/harness/grpc`` (the ``rmqctl.harness.grpc.GrpcClients`` program on rocketmq-client-java,
whose jar bundles gRPC stubs that must stay off the proxy's class path). Neither touches the main
harness build, so building them never rebuilds ``tests/harness/target``.

Main entry points:

* :func:`build_proxy`, :func:`build_grpc_clients` - run each module's Maven build if needed
  (file-locked) and return its class path; :func:`build_proxy_line` - the proxy of another
  release (``5.5.0``) beside the default one.
* :class:`RealProxy` - ``ProxyStartup`` in cluster mode (``proxyMode: cluster``, the cluster's
  name server, free gRPC and remoting ports), ready when its remoting port answers.
* :class:`GrpcClientsProcess` - drives ``GrpcClients`` over JSON lines: push consumers (one may
  fail the messages of a tag), simple consumers (one may leave the messages of a tag un-ACKed),
  a producer, and per-consumer counts.
* :func:`create_normal_topic` - a topic with ``+message.type=NORMAL`` (what gRPC clients ask for).
"""

from __future__ import annotations

import atexit
import fcntl
import json
import os
import queue
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Self

from tests.harness.realcluster import (
    HARNESS_DIR,
    JDK_MODULE_FLAGS,
    ClusterStartError,
    HarnessError,
    RealCluster,
    ScenarioClientsProcess,
    _free_port,
    _kill_group,
    _live_clients,
    _tail,
    find_java,
    find_mvn,
    raw_request,
    wait_stable,
    wait_until,
)

__all__ = ["GrpcClientsProcess", "RealProxy", "build_grpc_clients", "build_proxy", "build_proxy_line",
           "create_normal_topic"]

PROXY_DIR = HARNESS_DIR / "proxy"
GRPC_DIR = HARNESS_DIR / "grpc"
PROXY_MAIN = "org.apache.rocketmq.proxy.ProxyStartup"
GRPC_MAIN = "rmqctl.harness.grpc.GrpcClients"


def _module_sources(directory: Path) -> list[Path]:
    return [directory / "pom.xml", *sorted((directory / "src").rglob("*.java"))]


def _build_module(directory: Path, *, compile_sources: bool, timeout: float = 1200.0) -> None:
    """``mvn package dependency:copy-dependencies`` in ``directory`` unless its stamp is newer than
    its pom and sources; file-locked so parallel sessions build once."""
    target = directory / "target"
    stamp = target / ".harness-build.json"
    lib = target / "lib"

    def current() -> bool:
        if not stamp.is_file() or not any(lib.glob("*.jar")):
            return False
        built = stamp.stat().st_mtime
        return all(src.stat().st_mtime <= built for src in _module_sources(directory))

    find_java()
    if current():
        return
    mvn = find_mvn()
    target.mkdir(parents=True, exist_ok=True)
    with open(target / ".harness-build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if current():
                return
            goals = ["package"] if compile_sources else []
            cmd = [mvn, "-q", "-B", "-f", str(directory / "pom.xml"), "-DskipTests", *goals,
                   "dependency:copy-dependencies", "-DoutputDirectory=target/lib"]
            started = time.monotonic()
            try:
                proc = subprocess.run(cmd, cwd=directory, stdin=subprocess.DEVNULL, capture_output=True,
                                      text=True, timeout=timeout, check=False)
            except subprocess.TimeoutExpired as exc:
                raise HarnessError(f"Maven build timed out after {timeout:.0f}s: {' '.join(cmd)}") from exc
            if proc.returncode != 0:
                tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-40:])
                raise HarnessError(f"Maven build failed (rc={proc.returncode}): {' '.join(cmd)}\n{tail}")
            stamp.write_text(json.dumps({"built_at": time.time(),
                                         "seconds": round(time.monotonic() - started, 1)}))
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def build_proxy() -> str:
    """Class path of rocketmq-proxy (built from ``tests/harness/proxy`` if needed)."""
    _build_module(PROXY_DIR, compile_sources=False)
    return f"{PROXY_DIR / 'target' / 'lib'}{os.sep}*"


def build_proxy_line(version: str, timeout: float = 1200.0) -> str:
    """Class path of rocketmq-proxy ``version`` (e.g. ``5.5.0``), copied by Maven into
    ``tests/harness/proxy/target/<version>/lib`` beside the default build (which it never
    touches); rebuilt when the pom is newer than its stamp, file-locked like the others."""
    if not re.fullmatch(r"[0-9][0-9A-Za-z.-]*", version):
        raise HarnessError(f"not a RocketMQ release: {version!r}")
    line_dir = PROXY_DIR / "target" / version
    lib, stamp = line_dir / "lib", line_dir / ".harness-build.json"
    line_classpath = f"{lib}{os.sep}*"

    def current() -> bool:
        return (stamp.is_file() and any(lib.glob("rocketmq-proxy-*.jar"))
                and (PROXY_DIR / "pom.xml").stat().st_mtime <= stamp.stat().st_mtime)

    find_java()
    if current():
        return line_classpath
    mvn = find_mvn()
    line_dir.mkdir(parents=True, exist_ok=True)
    with open(line_dir / ".harness-build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if current():
                return line_classpath
            if lib.exists():
                shutil.rmtree(lib)
            cmd = [mvn, "-q", "-B", "-f", str(PROXY_DIR / "pom.xml"), "-DskipTests", f"-Drocketmq.version={version}",
                   "dependency:copy-dependencies", f"-DoutputDirectory={lib}"]
            started = time.monotonic()
            try:
                proc = subprocess.run(cmd, cwd=PROXY_DIR, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                      timeout=timeout, check=False)
            except subprocess.TimeoutExpired as exc:
                raise HarnessError(f"Maven build timed out after {timeout:.0f}s: {' '.join(cmd)}") from exc
            if proc.returncode != 0:
                tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-40:])
                raise HarnessError(f"Maven build failed (rc={proc.returncode}): {' '.join(cmd)}\n{tail}")
            stamp.write_text(json.dumps({"version": version, "built_at": time.time(),
                                         "seconds": round(time.monotonic() - started, 1)}))
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return line_classpath


def build_grpc_clients() -> str:
    """Class path of the GrpcClients program (built from ``tests/harness/grpc`` if needed)."""
    _build_module(GRPC_DIR, compile_sources=True)
    return f"{GRPC_DIR / 'target' / 'classes'}{os.pathsep}{GRPC_DIR / 'target' / 'lib'}{os.sep}*"


def create_normal_topic(cluster: RealCluster, name: str, queues: int = 4) -> None:
    """``updateTopic`` with ``+message.type=NORMAL``: a 5.x broker refuses gRPC clients' sends and
    receives on a topic whose message type does not match what they ask for."""
    out = cluster.mqadmin("updateTopic", "-c", cluster.cluster_name, "-t", name, "-r", str(queues),
                          "-w", str(queues), "-a", "+message.type=NORMAL", check=True)
    if "success" not in out:
        raise HarnessError(f"mqadmin updateTopic {name} did not report success:\n{out}")
    wait_until(lambda: cluster.topic_route(name), timeout=60, message=f"route of topic {name}")


_live_proxies: set[RealProxy] = set()


@atexit.register
def _stop_live_proxies() -> None:
    for proxy in list(_live_proxies):
        proxy.stop()


class RealProxy:
    """One ``rocketmq-proxy`` in cluster mode in front of ``cluster`` (its name server), for the
    length of a ``with`` block. ``remoting_addr`` is the proxy's remoting port (what rmqctl's
    ``--proxy`` names), ``grpc_endpoint`` the gRPC port the SDK connects to."""

    def __init__(self, cluster: RealCluster, *, name: str = "proxy", heap: str = "320m",
                 startup_timeout: float = 120.0, config: Mapping[str, Any] | None = None,
                 jvm_args: Iterable[str] = (), classpath: str | None = None) -> None:
        self.cluster = cluster
        #: the proxy's class path (default: the 5.3.3 build; :func:`build_proxy_line` for another)
        self.classpath = classpath
        #: extra JVM options (e.g. the tls.* system properties of a cluster enforcing TLS)
        self.jvm_args = list(jvm_args)
        self.name = name
        self.heap = heap
        self.startup_timeout = startup_timeout
        self._overrides = dict(config or {})
        self.grpc_port = 0
        self.remoting_port = 0
        self.work_dir: Path | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def remoting_addr(self) -> str:
        return f"127.0.0.1:{self.remoting_port}"

    @property
    def grpc_endpoint(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> Self:
        """Build if needed, launch ``ProxyStartup``, wait until the remoting port answers a route
        request and the gRPC port accepts connections (raises :class:`ClusterStartError`)."""
        classpath = self.classpath or build_proxy()
        java = find_java()
        base = self.cluster.base_dir
        if base is None:
            raise HarnessError("start the cluster before its proxy")
        self.work_dir = Path(tempfile.mkdtemp(prefix=f"{self.name}-", dir=base))
        (self.work_dir / "tmp").mkdir()
        self.grpc_port = _free_port()
        self.remoting_port = _free_port()
        while self.remoting_port == self.grpc_port:
            self.remoting_port = _free_port()
        config = {
            "rocketMQClusterName": self.cluster.cluster_name,
            "namesrvAddr": self.cluster.namesrv_addr,
            "proxyMode": "cluster",
            "grpcServerPort": self.grpc_port,
            "remotingListenPort": self.remoting_port,
            "localServeAddr": "127.0.0.1",
            **self._overrides,
        }
        conf = self.work_dir / "rmq-proxy.json"
        conf.write_text(json.dumps(config))
        cmd = [
            java, "-Xms64m", f"-Xmx{self.heap}", "-XX:+UseSerialGC", "-XX:-UsePerfData",
            "-XX:MaxDirectMemorySize=256m", *JDK_MODULE_FLAGS,
            f"-Duser.home={self.work_dir}", f"-Djava.io.tmpdir={self.work_dir / 'tmp'}",
            f"-Drocketmq.home.dir={base}",
            f"-Drmq.logback.configurationFile={base / 'conf' / 'logback.xml'}",
            f"-Drmqctl.log.file={self.work_dir / 'proxy.log'}", *self.jvm_args,
            "-cp", classpath, PROXY_MAIN, "-pc", str(conf), "-pm", "cluster",
        ]
        _live_proxies.add(self)
        with open(self.work_dir / "proxy.out", "ab") as out:
            self._proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                          cwd=self.work_dir, env=self.cluster.env(), start_new_session=True)

        def ready() -> bool:
            if self._proc is None or self._proc.poll() is not None:
                raise ClusterStartError(f"proxy exited early with code {self._proc and self._proc.returncode}",
                                        self.log_tail())
            raw_request(self.remoting_addr, 105, {"topic": "TBW102"}, timeout=3, ssl_context=self.cluster.tls_context)
            with socket.create_connection(("127.0.0.1", self.grpc_port), timeout=1):
                return True

        try:
            wait_until(ready, timeout=self.startup_timeout, interval=0.2, message="proxy remoting and gRPC ports")
        except BaseException as exc:
            tail = self.log_tail()
            self.stop()
            if isinstance(exc, ClusterStartError):
                raise
            raise ClusterStartError(f"proxy not ready: {exc}", tail) from exc
        return self

    def stop(self) -> None:
        if self._proc is not None:
            _kill_group(self._proc, grace=0.0)
            self._proc = None
        _live_proxies.discard(self)

    def log_tail(self, lines: int = 40) -> str:
        if self.work_dir is None:
            return ""
        parts = []
        for name in ("proxy.out", "proxy.log"):
            text = _tail(self.work_dir / name, lines)
            if text:
                parts.append(f"----- {self.name} {name} (last {lines} lines) -----\n{text}")
        return "\n".join(parts)


class GrpcClientsProcess(ScenarioClientsProcess):
    """Runs ``rmqctl.harness.grpc.GrpcClients`` (rocketmq-client-java consumers and a producer) and
    talks to it over the JSON-lines protocol ScenarioClients uses; ``endpoints`` is a proxy's gRPC
    endpoint. Every method sends one command and waits for its reply (:class:`ScenarioError` on
    ``{"ok": false}`` or a time-out)."""

    def __init__(self, endpoints: str, *, work_dir: str | os.PathLike[str] | None = None, heap: str = "192m",
                 command_timeout: float = 60.0, startup_timeout: float = 60.0,
                 jvm_args: Iterable[str] = (), credentials: tuple[str, str] | None = None) -> None:
        super().__init__(None, namesrv_addr=endpoints, work_dir=work_dir, heap=heap,
                         command_timeout=command_timeout, startup_timeout=startup_timeout, jvm_args=jvm_args)
        self.endpoints = endpoints
        #: access and secret key every client signs with (a proxy with ACL 2.0 authentication)
        self.credentials = credentials

    def request(self, command: Mapping[str, Any], timeout: float | None = None) -> dict[str, Any]:
        """Send one command; a command that builds a client carries :attr:`credentials`."""
        if self.credentials is not None and "endpoints" in command:
            command = {**command, "access_key": self.credentials[0], "secret_key": self.credentials[1]}
        return super().request(command, timeout)

    def start(self) -> Self:
        """Launch the JVM and wait for its ``ping`` reply."""
        java = find_java()
        cp = build_grpc_clients()
        if self._requested_dir is not None:
            self.work_dir = self._requested_dir
            self.work_dir.mkdir(parents=True, exist_ok=True)
        else:
            self.work_dir = Path(tempfile.mkdtemp(prefix="rmqctl-grpc-clients-"))
            self._own_dir = True
        cmd = [java, "-Xms32m", f"-Xmx{self.heap}", "-XX:+UseSerialGC", "-XX:-UsePerfData",
               f"-Duser.home={self.work_dir}", f"-Djava.io.tmpdir={self.work_dir}",
               "-Drocketmq.log.level=WARN", *self.jvm_args, "-cp", cp, GRPC_MAIN]
        env = dict(os.environ)
        env.pop("JAVA_TOOL_OPTIONS", None)
        with open(self.work_dir / "stderr.log", "ab") as err:
            self._proc = subprocess.Popen(
                cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True,
                encoding="utf-8", bufsize=1, cwd=self.work_dir, env=env, start_new_session=True,
            )
        _live_clients.add(self)
        self._replies = queue.Queue()
        self._reader = threading.Thread(target=self._read_loop, name="grpc-clients-reader", daemon=True)
        self._reader.start()
        try:
            self.request({"cmd": "ping"}, timeout=self.startup_timeout)
        except BaseException:
            self.close(graceful=False)
            raise
        return self

    def start_push(self, id: str, group: str, subscriptions: Mapping[str, str], *,
                   fail_tag: str | None = None, threads: int = 4) -> str:
        """A push consumer; messages tagged ``fail_tag`` are answered FAILURE (redelivered).
        Returns the SDK's client id."""
        cmd: dict[str, Any] = {"cmd": "start_push", "id": id, "endpoints": self.endpoints, "group": group,
                               "subscriptions": dict(subscriptions), "threads": threads}
        if fail_tag is not None:
            cmd["fail_tag"] = fail_tag
        return str(self.request(cmd)["client_id"])

    def start_simple(self, id: str, group: str, subscriptions: Mapping[str, str], *,
                     skip_ack_tag: str | None = None, invisible_s: int = 15, await_s: int = 5,
                     batch: int = 16) -> str:
        """A simple consumer polled by a thread of its own; messages tagged ``skip_ack_tag`` are
        never ACKed (they become visible again after ``invisible_s``, which the proxy wants at
        least 10 s: ``minInvisibleTimeMillsForRecv``). Returns the client id."""
        cmd: dict[str, Any] = {"cmd": "start_simple", "id": id, "endpoints": self.endpoints, "group": group,
                               "subscriptions": dict(subscriptions), "invisible_s": invisible_s,
                               "await_s": await_s, "batch": batch}
        if skip_ack_tag is not None:
            cmd["skip_ack_tag"] = skip_ack_tag
        return str(self.request(cmd)["client_id"])

    def stop(self, id: str) -> None:
        """Close one consumer (it tells the proxy it is going)."""
        self.request({"cmd": "stop", "id": id})

    def send(self, topic: str, tag: str | None = None, count: int = 1, *, keys: str | None = None) -> list[str]:
        """Send ``count`` messages through the proxy; returns their message ids."""
        cmd: dict[str, Any] = {"cmd": "produce", "endpoints": self.endpoints, "topic": topic, "count": count}
        if tag is not None:
            cmd["tag"] = tag
        if keys is not None:
            cmd["keys"] = keys
        return [str(m) for m in self.request(cmd)["message_ids"]]

    def counts(self, id: str | None = None) -> dict[str, dict[str, Any]]:
        """Per consumer: ``kind``, ``group``, ``client_id``, ``received`` (deliveries), ``distinct``
        (messages), ``acked``, ``failed``, ``unacked`` and ``max_attempt`` (highest delivery attempt)."""
        cmd: dict[str, Any] = {"cmd": "counts"}
        if id is not None:
            cmd["id"] = id
        return {k: dict(v) for k, v in self.request(cmd)["counts"].items()}

    def warm_up(self, topic: str, timeout: float = 120.0) -> dict[str, dict[str, int]]:
        """Send a ``warm`` message now and then until every consumer got one, and return the
        numeric counts then: a POP group whose first pop comes after a message starts from the
        queue's end and never sees it."""
        def everyone_received() -> dict[str, dict[str, int]] | None:
            counts = self.counts()
            if counts and all(int(c["received"]) > 0 for c in counts.values()):
                return {cid: {k: int(v) for k, v in c.items() if isinstance(v, int)} for cid, c in counts.items()}
            self.send(topic, "warm")
            return None

        self.wait_until(everyone_received, timeout=timeout, interval=2.0,
                        message=lambda: f"every consumer received a message: {self.counts()}")
        # warm messages sent just before may still be on their way to the others: count from
        # when nothing has changed for a while, so a test's own messages are all it gains
        return wait_stable(lambda: {cid: {k: int(v) for k, v in c.items() if isinstance(v, int)}
                                    for cid, c in self.counts().items()},
                           duration=5.0, timeout=timeout, interval=0.5, message="warm-up counts to settle")

    def close(self, graceful: bool = True) -> None:
        super().close(graceful)
        if self.work_dir is not None and self._own_dir and not os.environ.get("RMQCTL_KEEP_CLUSTER_DIR"):
            shutil.rmtree(self.work_dir, ignore_errors=True)
