"""Real Apache RocketMQ name server + broker, and real Java clients, for rmqctl integration tests.

Everything here is standard library only. The Java side lives in ``tests/harness`` (a Maven project:
``pom.xml`` plus ``src/main/java/rmqctl/harness``); :func:`build_harness` builds it once and returns
the class path (``target/classes`` plus every dependency jar in ``target/lib``).

Main entry points:

* :func:`build_harness` - run the Maven build if needed (file-locked, safe for parallel callers).
* :class:`RealCluster` - one name server and one broker started with ``java`` directly, on free
  loopback ports, with a throw-away ROCKETMQ_HOME/store/log directory (on ``/dev/shm`` when it has
  room). Offers ``mqadmin(...)``, ``create_topic(...)`` and raw remoting requests.
* :class:`ScenarioClientsProcess` - drives ``rmqctl.harness.ScenarioClients`` (real
  ``DefaultMQPushConsumer`` instances and a ``DefaultMQProducer``) over JSON lines.
* :func:`raw_request`, :func:`encode_request`, :func:`decode_frame` - hand-built remoting frames
  (JSON or ROCKETMQ binary header), used for readiness probes and by ``capture_golden.py``.
* :func:`wait_until` - poll a predicate until it is truthy or a deadline passes;
  :func:`wait_stable` - poll until a value stops changing for a while.

Environment variables:

* ``RMQCTL_HARNESS_PROFILE`` - Maven profile for the build (``rmq49`` = RocketMQ 4.9.7, ``rmq55`` = 5.5.0); default
  none (5.x). Switching profiles rebuilds ``target/lib`` from scratch.
* :func:`build_harness_line` - the same harness built for another RocketMQ line (``rmq55``) into
  ``target/<profile>``, beside the default build, so one session can run both.
* ``RMQCTL_HARNESS_CLASSPATH`` - use this prebuilt class path and never run Maven (e.g. a copy of the
  harness built with ``-Prmq49`` elsewhere).
* ``RMQCTL_KEEP_CLUSTER_DIR=1`` - do not delete the cluster's temp directory on teardown.
* ``RMQCTL_MVN`` / ``RMQCTL_JAVA`` - explicit paths of ``mvn`` / ``java``.
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import dataclasses
import fcntl
import hashlib
import hmac
import json
import os
import queue
import random
import re
import shutil
import signal
import socket
import ssl
import struct
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Self, TypeVar

__all__ = [
    "HARNESS_DIR",
    "ClusterStartError",
    "HarnessError",
    "RawResponse",
    "RealCluster",
    "ScenarioClientsProcess",
    "ScenarioError",
    "WaitTimeout",
    "build_harness",
    "build_harness_line",
    "classpath",
    "decode_frame",
    "encode_request",
    "find_java",
    "find_mvn",
    "raw_request",
    "read_frame",
    "wait_stable",
    "wait_until",
]

HARNESS_DIR = Path(__file__).resolve().parent
POM = HARNESS_DIR / "pom.xml"
TARGET_DIR = HARNESS_DIR / "target"
CLASSES_DIR = TARGET_DIR / "classes"
LIB_DIR = TARGET_DIR / "lib"
_STAMP = TARGET_DIR / ".harness-build.json"
_LOCK = TARGET_DIR / ".harness-build.lock"

#: JDK 9+ flags the RocketMQ servers need on JDK 17 (direct buffers, 4.9 mmap cleaner).
JDK_MODULE_FLAGS = (
    "--add-exports=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--add-opens=java.base/java.util=ALL-UNNAMED",
    "--add-exports=java.base/jdk.internal.ref=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.ref=ALL-UNNAMED",
)

LANGUAGE_CODES = {
    "JAVA": 0, "CPP": 1, "DOTNET": 2, "PYTHON": 3, "DELPHI": 4, "ERLANG": 5, "RUBY": 6,
    "OTHER": 7, "HTTP": 8, "GO": 9, "PHP": 10, "OMS": 11, "RUST": 12, "NODE_JS": 13,
}
_LANGUAGE_NAMES = {v: k for k, v in LANGUAGE_CODES.items()}

T = TypeVar("T")


class HarnessError(RuntimeError):
    """The harness could not be built or a tool (java, mvn) is missing."""


class ClusterStartError(HarnessError):
    """The name server or broker did not come up; ``log_tail`` holds the end of their logs."""

    def __init__(self, message: str, log_tail: str = "") -> None:
        super().__init__(message)
        self.log_tail = log_tail


class ScenarioError(RuntimeError):
    """The ScenarioClients program answered ``{"ok": false}`` or did not answer in time."""


class WaitTimeout(AssertionError):
    """:func:`wait_until` gave up; subclass of AssertionError so pytest shows it as a failure."""


# --------------------------------------------------------------------------------------------
# small utilities


def wait_until(
    predicate: Callable[[], T | None],
    timeout: float = 30.0,
    interval: float = 0.2,
    message: str | Callable[[], str] | None = None,
) -> T:
    """Call ``predicate`` until it returns a truthy value and return that value.

    Polls every ``interval`` seconds (no other sleeping). Exceptions raised by the predicate are
    treated as "not yet" and the last one is reported - except :class:`HarnessError`,
    :class:`ScenarioError` and :class:`WaitTimeout`, which mean "this will never succeed" (a process
    died, ...) and propagate at once. Raises :class:`WaitTimeout` after ``timeout`` seconds;
    ``message`` (a string or a callable producing one, evaluated only on failure) and the last
    returned value are included in the error.
    """
    deadline = time.monotonic() + timeout
    last: T | None = None
    last_exc: BaseException | None = None
    while True:
        try:
            last = predicate()
            last_exc = None
            if last:
                return last  # truthy, hence not None
        except (HarnessError, ScenarioError, WaitTimeout):
            raise
        except Exception as exc:  # noqa: BLE001 - predicate errors mean "not yet"
            last_exc = exc
        if time.monotonic() >= deadline:
            what = message() if callable(message) else message
            detail = f"last exception: {last_exc!r}" if last_exc is not None else f"last value: {last!r}"
            raise WaitTimeout(f"timed out after {timeout:.1f}s waiting for {what or 'condition'}; {detail}")
        time.sleep(interval)


def wait_stable(
    probe: Callable[[], T],
    duration: float = 3.0,
    timeout: float = 60.0,
    interval: float = 0.2,
    accept: Callable[[T], bool] = lambda v: True,
    message: str | None = None,
) -> T:
    """Poll ``probe`` until it returned the same accepted value continuously for ``duration`` seconds.

    For states that settle asynchronously (e.g. a rebalance): a value only counts once ``accept``
    holds for it, and any change restarts the clock. Raises :class:`WaitTimeout` after ``timeout``.
    """
    state: dict[str, Any] = {"value": object(), "since": 0.0}

    def settled() -> bool:
        value = probe()
        now = time.monotonic()
        if not accept(value):
            state["value"], state["since"] = object(), now
            return False
        if value != state["value"]:
            state["value"], state["since"] = value, now
            return False
        return bool(now - state["since"] >= duration)

    wait_until(settled, timeout=timeout, interval=interval,
               message=lambda: f"{message or 'a stable value'} (last: {state['value']!r})")
    return state["value"]  # type: ignore[no-any-return]


def find_java() -> str:
    """Return the path of ``java`` (``$RMQCTL_JAVA``, ``$JAVA_HOME/bin/java`` or PATH) or raise HarnessError."""
    cand = os.environ.get("RMQCTL_JAVA")
    if cand and os.access(cand, os.X_OK):
        return cand
    home = os.environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", "java"), os.X_OK):
        return os.path.join(home, "bin", "java")
    found = shutil.which("java")
    if not found:
        raise HarnessError("java not found (install a JDK 17+ or set JAVA_HOME / RMQCTL_JAVA)")
    return found


def find_mvn() -> str:
    """Return the path of ``mvn`` (``$RMQCTL_MVN`` or PATH) or raise HarnessError."""
    cand = os.environ.get("RMQCTL_MVN")
    if cand and os.access(cand, os.X_OK):
        return cand
    found = shutil.which("mvn")
    if not found:
        raise HarnessError("mvn (Apache Maven) not found; it is needed to fetch the RocketMQ jars")
    return found


def _harness_sources() -> list[Path]:
    return [POM, *sorted((HARNESS_DIR / "src").rglob("*.java"))]


def _build_is_current(profile: str | None) -> bool:
    if not CLASSES_DIR.is_dir() or not LIB_DIR.is_dir() or not _STAMP.is_file():
        return False
    if not any(LIB_DIR.glob("*.jar")) or not (CLASSES_DIR / "rmqctl" / "harness").is_dir():
        return False
    try:
        stamp = json.loads(_STAMP.read_text())
    except (OSError, ValueError):
        return False
    if stamp.get("profile") != profile:
        return False
    built = _STAMP.stat().st_mtime
    return all(src.stat().st_mtime <= built for src in _harness_sources())


def _lib_is_stale(profile: str | None) -> bool:
    """target/lib must be rebuilt from scratch: other profile, or pom.xml changed since the last build."""
    try:
        stamp = json.loads(_STAMP.read_text())
        return stamp.get("profile") != profile or POM.stat().st_mtime > _STAMP.stat().st_mtime
    except (OSError, ValueError):
        return True


def build_harness(force: bool = False, profile: str | None = None, timeout: float = 1200.0) -> str:
    """Build the Java harness if needed and return its class path.

    Runs ``mvn -q -B -f tests/harness/pom.xml -DskipTests [-P<profile>] package
    dependency:copy-dependencies -DoutputDirectory=target/lib`` when ``target/classes`` or
    ``target/lib`` is missing, older than ``pom.xml``/the Java sources, or was built for another
    profile. ``profile`` defaults to ``$RMQCTL_HARNESS_PROFILE`` (unset = RocketMQ 5.x); when
    ``$RMQCTL_HARNESS_CLASSPATH`` is set it is returned as is and Maven is not run. A file lock
    serialises concurrent callers (pytest-xdist workers, parallel sessions). Raises
    :class:`HarnessError` when ``mvn``/``java`` are missing or the build fails (with its output tail).
    """
    override = os.environ.get("RMQCTL_HARNESS_CLASSPATH")
    if override and not force:
        find_java()
        return override
    if profile is None:
        profile = os.environ.get("RMQCTL_HARNESS_PROFILE") or None
    find_java()
    if not force and _build_is_current(profile):
        return classpath()
    mvn = find_mvn()
    TARGET_DIR.mkdir(parents=True, exist_ok=True)
    with open(_LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not force and _build_is_current(profile):
                return classpath()
            if LIB_DIR.exists() and _lib_is_stale(profile):
                shutil.rmtree(LIB_DIR)  # never mix jars of two RocketMQ versions
            cmd = [mvn, "-q", "-B", "-f", str(POM), "-DskipTests"]
            if profile:
                cmd.append(f"-P{profile}")
            cmd += ["package", "dependency:copy-dependencies", "-DoutputDirectory=target/lib"]
            started = time.monotonic()
            try:
                proc = subprocess.run(
                    cmd, cwd=HARNESS_DIR, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                    timeout=timeout, check=False,
                )
            except subprocess.TimeoutExpired as exc:
                raise HarnessError(f"Maven build timed out after {timeout:.0f}s: {' '.join(cmd)}") from exc
            if proc.returncode != 0:
                tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-40:])
                raise HarnessError(f"Maven build failed (rc={proc.returncode}): {' '.join(cmd)}\n{tail}")
            _STAMP.write_text(json.dumps({
                "profile": profile, "built_at": time.time(),
                "seconds": round(time.monotonic() - started, 1),
            }))
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return classpath()


def classpath() -> str:
    """Class path of the built harness: ``target/classes`` plus ``target/lib/*``."""
    return f"{CLASSES_DIR}{os.pathsep}{LIB_DIR}{os.sep}*"


def build_harness_line(profile: str, timeout: float = 1200.0) -> str:
    """Build the harness with Maven profile ``profile`` into ``target/<profile>`` and return its class
    path (``target/<profile>/classes`` plus ``target/<profile>/lib/*``).

    Unlike :func:`build_harness` with a profile, this never touches ``target/classes`` or
    ``target/lib``: a test module can start a cluster of another RocketMQ line (e.g. ``rmq55``)
    beside the session's default cluster. Rebuilt when the pom or a Java source is newer than the
    line's stamp; file-locked like :func:`build_harness`. Raises :class:`HarnessError` when
    ``mvn``/``java`` are missing or the build fails (e.g. the line's jars cannot be fetched).
    """
    if not re.fullmatch(r"[A-Za-z0-9_-]+", profile):
        raise HarnessError(f"not a Maven profile id: {profile!r}")
    line_dir = TARGET_DIR / profile
    classes, lib, stamp = line_dir / "classes", line_dir / "lib", line_dir / ".harness-build.json"
    line_classpath = f"{classes}{os.pathsep}{lib}{os.sep}*"

    def current() -> bool:
        if not stamp.is_file() or not any(lib.glob("*.jar")) or not (classes / "rmqctl" / "harness").is_dir():
            return False
        built = stamp.stat().st_mtime
        return all(src.stat().st_mtime <= built for src in _harness_sources())

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
                shutil.rmtree(lib)  # a changed pom may name other jars: never keep stale ones
            cmd = [mvn, "-q", "-B", "-f", str(POM), "-DskipTests", f"-P{profile}",
                   f"-Dharness.build.directory={line_dir}", "package", "dependency:copy-dependencies",
                   f"-DoutputDirectory={lib}"]
            started = time.monotonic()
            try:
                proc = subprocess.run(cmd, cwd=HARNESS_DIR, stdin=subprocess.DEVNULL, capture_output=True,
                                      text=True, timeout=timeout, check=False)
            except subprocess.TimeoutExpired as exc:
                raise HarnessError(f"Maven build timed out after {timeout:.0f}s: {' '.join(cmd)}") from exc
            if proc.returncode != 0:
                tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-40:])
                raise HarnessError(f"Maven build failed (rc={proc.returncode}): {' '.join(cmd)}\n{tail}")
            stamp.write_text(json.dumps({"profile": profile, "built_at": time.time(),
                                         "seconds": round(time.monotonic() - started, 1)}))
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return line_classpath


def _port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _free_broker_port(avoid: Iterable[int] = ()) -> int:
    """A port p with p-2 (VIP channel), p and p+1 (HA, bound on all interfaces) all free."""
    avoid = set(avoid)
    rng = random.Random()
    for _ in range(500):
        p = rng.randrange(20000, 60000)
        ports = (p - 2, p, p + 1)
        if avoid.intersection(ports):
            continue
        if all(_port_is_free(x) for x in ports) and _port_is_free(p + 1, "0.0.0.0"):
            return p
    raise HarnessError("could not find a free broker port triple (p-2, p, p+1)")


def _tail(path: Path, lines: int) -> str:
    try:
        data = path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(data[-lines:])


# --------------------------------------------------------------------------------------------
# remoting frames


@dataclasses.dataclass
class RawResponse:
    """One decoded remoting frame. ``frame`` is the complete wire bytes incl. the 4-byte length."""

    frame: bytes
    serialize_type: int  # 0 = JSON header, 1 = ROCKETMQ binary header
    header: dict[str, Any]
    body: bytes

    @property
    def code(self) -> int:
        """Response (or request) code from the header."""
        return int(self.header.get("code", -1))

    @property
    def remark(self) -> str | None:
        """Remark (error text) from the header, or None."""
        return self.header.get("remark")

    @property
    def ext(self) -> dict[str, str]:
        """``extFields`` of the header (empty dict when absent)."""
        return dict(self.header.get("extFields") or {})

    @property
    def text(self) -> str:
        """Body decoded as UTF-8 (fastjson output is not always valid JSON)."""
        return self.body.decode("utf-8", errors="replace")


def _encode_binary_header(header: Mapping[str, Any]) -> bytes:
    remark = (header.get("remark") or "").encode()
    ext = header.get("extFields") or {}
    ext_bytes = b"".join(
        struct.pack(">h", len(k.encode())) + k.encode() + struct.pack(">i", len(str(v).encode())) + str(v).encode()
        for k, v in ext.items()
    )
    lang = header.get("language", "PYTHON")
    return (
        struct.pack(">hbhii", int(header["code"]), LANGUAGE_CODES.get(lang, 7), int(header["version"]),
                    int(header["opaque"]), int(header.get("flag", 0)))
        + struct.pack(">i", len(remark)) + remark
        + struct.pack(">i", len(ext_bytes)) + ext_bytes
    )


def _decode_binary_header(data: bytes) -> dict[str, Any]:
    code, lang, version, opaque, flag = struct.unpack_from(">hbhii", data, 0)
    pos = 13
    (remark_len,) = struct.unpack_from(">i", data, pos)
    pos += 4
    remark = data[pos:pos + remark_len].decode() if remark_len > 0 else None
    pos += max(remark_len, 0)
    (ext_len,) = struct.unpack_from(">i", data, pos)
    pos += 4
    ext: dict[str, str] = {}
    end = pos + ext_len
    while pos < end:
        (kl,) = struct.unpack_from(">h", data, pos)
        pos += 2
        key = data[pos:pos + kl].decode()
        pos += kl
        (vl,) = struct.unpack_from(">i", data, pos)
        pos += 4
        ext[key] = data[pos:pos + vl].decode()
        pos += vl
    header: dict[str, Any] = {
        "code": code, "language": _LANGUAGE_NAMES.get(lang, str(lang)), "version": version,
        "opaque": opaque, "flag": flag, "serializeTypeCurrentRPC": "ROCKETMQ",
    }
    if remark is not None:
        header["remark"] = remark
    if ext_len > 0:
        header["extFields"] = ext
    return header


def encode_request(
    code: int,
    ext: Mapping[str, Any] | None = None,
    body: bytes = b"",
    *,
    opaque: int = 1,
    version: int = 479,
    language: str = "PYTHON",
    flag: int = 0,
    serialize: str = "JSON",
) -> bytes:
    """Build a complete request frame (4-byte length included).

    ``serialize="JSON"`` writes a JSON header with alphabetically sorted fields (like fastjson);
    ``"ROCKETMQ"`` writes the compact binary header. ``ext`` values are converted to strings.
    """
    header: dict[str, Any] = {
        "code": code, "flag": flag, "language": language, "opaque": opaque,
        "serializeTypeCurrentRPC": serialize, "version": version,
    }
    if ext:
        header["extFields"] = {str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in ext.items()}
    if serialize == "JSON":
        hbytes = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
        stype = 0
    elif serialize == "ROCKETMQ":
        hbytes = _encode_binary_header(header)
        stype = 1
    else:
        raise ValueError(f"unknown serialize type {serialize!r}")
    return struct.pack(">ii", 4 + len(hbytes) + len(body), (stype << 24) | len(hbytes)) + hbytes + body


def decode_frame(frame: bytes) -> RawResponse:
    """Decode a complete frame (as returned by :func:`read_frame`) into a :class:`RawResponse`."""
    (length, word) = struct.unpack_from(">ii", frame, 0)
    stype = (word >> 24) & 0xFF
    hlen = word & 0xFFFFFF
    hbytes = frame[8:8 + hlen]
    body = frame[8 + hlen:4 + length]
    header = json.loads(hbytes.decode()) if stype == 0 else _decode_binary_header(hbytes)
    return RawResponse(frame=bytes(frame), serialize_type=stype, header=header, body=bytes(body))


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError(f"connection closed after {len(buf)} of {n} bytes")
        buf += chunk
    return bytes(buf)


def read_frame(sock: socket.socket) -> bytes:
    """Read one complete frame (length prefix included) from a blocking socket."""
    head = _recv_exact(sock, 4)
    (length,) = struct.unpack(">i", head)
    return head + _recv_exact(sock, length)


_opaque_counter = 0
_opaque_lock = threading.Lock()


def _next_opaque() -> int:
    global _opaque_counter
    with _opaque_lock:
        _opaque_counter = (_opaque_counter + 1) % 0x7FFFFFFF
        return _opaque_counter


def sign_ext(ext: Mapping[str, Any] | None, body: bytes, access_key: str, secret_key: str) -> dict[str, str]:
    """``ext`` with ``AccessKey`` and ``Signature``: Base64 HMAC-SHA1 (keyed by the secret) of the
    values in key order followed by the body, as RocketMQ's ACL clients sign."""
    fields = {str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in (ext or {}).items()}
    fields["AccessKey"] = access_key
    content = "".join(fields[k] for k in sorted(fields)).encode() + body
    digest = hmac.new(secret_key.encode(), content, hashlib.sha1).digest()
    fields["Signature"] = base64.b64encode(digest).decode()
    return fields


def raw_request(
    addr: str,
    code: int,
    ext: Mapping[str, Any] | None = None,
    body: bytes = b"",
    *,
    timeout: float = 15.0,
    version: int = 479,
    language: str = "PYTHON",
    serialize: str = "JSON",
    ssl_context: ssl.SSLContext | None = None,
    credentials: tuple[str, str] | None = None,
) -> RawResponse:
    """Send one request to ``host:port`` on a fresh connection and return the matching response.

    Frames the server sends that are not the response (server-initiated requests) are skipped.
    With ``ssl_context`` the connection speaks TLS (a server in ``tls.server.mode=enforcing``);
    with ``credentials`` (access key, secret key) the request is signed as ACL clients sign.
    """
    host, port = addr.rsplit(":", 1)
    opaque = _next_opaque()
    if credentials is not None:
        ext = sign_ext(ext, body, *credentials)
    frame = encode_request(code, ext, body, opaque=opaque, version=version, language=language,
                           serialize=serialize)
    with contextlib.ExitStack() as stack:
        sock = stack.enter_context(socket.create_connection((host, int(port)), timeout=timeout))
        if ssl_context is not None:
            sock = stack.enter_context(ssl_context.wrap_socket(sock, server_hostname=host))
        sock.settimeout(timeout)
        sock.sendall(frame)
        while True:
            resp = decode_frame(read_frame(sock))
            if resp.header.get("flag", 0) & 1 and resp.header.get("opaque") == opaque:
                return resp


# --------------------------------------------------------------------------------------------
# the cluster

_LOGBACK_XML = """<?xml version="1.0" encoding="UTF-8"?>
<!-- written by rmqctl tests/harness/realcluster.py: one plain file per process -->
<configuration>
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>${rmqctl.log.file}</file>
    <append>true</append>
    <encoder><pattern>%d{HH:mm:ss.SSS} %-5p [%t] %c{0} - %m%n</pattern></encoder>
  </appender>
  <root level="${rmqctl.log.level:-INFO}"><appender-ref ref="FILE"/></root>
</configuration>
"""

_live_clusters: set[RealCluster] = set()
_live_clients: set[ScenarioClientsProcess] = set()


@atexit.register
def _cleanup_at_exit() -> None:  # safety net: never leave Java processes behind
    for c in list(_live_clients):
        with contextlib.suppress(Exception):
            c.close(graceful=False)
    for cl in list(_live_clusters):
        with contextlib.suppress(Exception):
            cl.stop()


def _kill_group(proc: subprocess.Popen[Any], grace: float) -> None:
    if proc.poll() is None and grace > 0:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)  # leftovers in the group, if any
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=10)


class RealCluster:
    """One RocketMQ name server and one master broker on loopback, for the length of a ``with`` block.

    Usage::

        with RealCluster() as cluster:
            cluster.create_topic("T", 4)
            print(cluster.mqadmin("topicRoute", "-t", "T"))

    Attributes available after :meth:`start`: ``namesrv_addr``, ``broker_addr``, ``broker_name``,
    ``cluster_name``, ``namesrv_port``, ``broker_port``, ``base_dir``, ``classpath``,
    ``startup_seconds`` (namesrv + broker until registered) and ``version`` (the broker's
    ``brokerVersionDesc``, e.g. ``V5_3_3``).

    ``broker_config`` entries override/extend the generated ``broker.conf``. By default the broker
    runs with ``longPollingEnable=false`` (1 s short polling) so filtered/empty pulls settle in about
    a second instead of 15 s; pass ``long_polling=True`` for the production default.
    """

    def __init__(
        self,
        *,
        cluster_name: str = "RmqctlCluster",
        broker_name: str = "broker-a",
        startup_timeout: float = 90.0,
        base_dir: str | os.PathLike[str] | None = None,
        broker_config: Mapping[str, Any] | None = None,
        namesrv_config: Mapping[str, Any] | None = None,
        long_polling: bool = False,
        namesrv_heap: str = "256m",
        broker_heap: str = "768m",
        broker_direct_memory: str = "512m",
        broker_jvm_args: Iterable[str] = (),
        namesrv_jvm_args: Iterable[str] = (),
        build: bool = True,
        classpath: str | None = None,
        tls_context: ssl.SSLContext | None = None,
        credentials: tuple[str, str] | None = None,
    ) -> None:
        self.cluster_name = cluster_name
        #: the harness's own requests speak TLS with this context (servers enforcing TLS)
        self.tls_context = tls_context
        #: (access key, secret key) the harness's own requests and mqadmin sign with (ACL on);
        #: mqadmin reads them from ``$ROCKETMQ_HOME/conf/tools.yml``
        self.credentials = credentials
        self.broker_name = broker_name
        self.startup_timeout = startup_timeout
        self._requested_base = Path(base_dir) if base_dir else None
        self._broker_overrides = dict(broker_config or {})
        self._namesrv_overrides = dict(namesrv_config or {})
        self.long_polling = long_polling
        self.namesrv_heap = namesrv_heap
        self.broker_heap = broker_heap
        self.broker_direct_memory = broker_direct_memory
        self.broker_jvm_args = list(broker_jvm_args)
        self.namesrv_jvm_args = list(namesrv_jvm_args)
        self._build = build and classpath is None
        self._classpath_override = classpath
        self.base_dir: Path | None = None
        self._own_base = False
        self.namesrv_port = 0
        self.broker_port = 0
        self.classpath = ""
        self.java = ""
        self.startup_seconds: float | None = None
        self.registration_nudges = 0
        self.version: str | None = None
        self._namesrv: subprocess.Popen[bytes] | None = None
        self._broker: subprocess.Popen[bytes] | None = None

    # -- addresses
    @property
    def namesrv_addr(self) -> str:
        """``127.0.0.1:<port>`` of the name server."""
        return f"127.0.0.1:{self.namesrv_port}"

    @property
    def broker_addr(self) -> str:
        """``127.0.0.1:<listenPort>`` of the broker (the address registered in the name server)."""
        return f"127.0.0.1:{self.broker_port}"

    # -- lifecycle
    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _make_base_dir(self) -> Path:
        if self._requested_base is not None:
            self._requested_base.mkdir(parents=True, exist_ok=True)
            return self._requested_base
        parent = None
        shm = Path("/dev/shm")
        try:
            if shm.is_dir() and os.access(shm, os.W_OK) and shutil.disk_usage(shm).free > 1 << 30:
                parent = str(shm)
        except OSError:
            parent = None
        self._own_base = True
        return Path(tempfile.mkdtemp(prefix="rmqctl-cluster-", dir=parent))

    def java_command(self, main_class: str, *args: str, heap: str = "256m",
                     jvm_args: Iterable[str] = (), log_name: str = "java") -> list[str]:
        """Command line for a JVM on the harness class path with this cluster's home/log settings."""
        assert self.base_dir is not None
        return [
            self.java, "-Xms64m", f"-Xmx{heap}", "-XX:+UseSerialGC", "-XX:-UsePerfData", *JDK_MODULE_FLAGS,
            f"-Duser.home={self.base_dir / 'home'}",
            f"-Djava.io.tmpdir={self.base_dir / 'tmp'}",  # 5.x servers write self-signed TLS certs there
            f"-Drocketmq.home.dir={self.base_dir}",
            f"-Drmq.logback.configurationFile={self.base_dir / 'conf' / 'logback.xml'}",
            f"-Drmqctl.log.file={self.base_dir / 'logs' / (log_name + '.log')}",
            *jvm_args, "-cp", self.classpath, main_class, *args,
        ]

    def env(self) -> dict[str, str]:
        """Environment for Java processes of this cluster (``ROCKETMQ_HOME`` = the temp dir)."""
        assert self.base_dir is not None
        e = dict(os.environ)
        e["ROCKETMQ_HOME"] = str(self.base_dir)
        e.pop("NAMESRV_ADDR", None)
        e.pop("JAVA_TOOL_OPTIONS", None)
        return e

    def _write_configs(self) -> tuple[Path, Path]:
        assert self.base_dir is not None
        b = self.base_dir
        for d in ("conf", "logs", "home", "tmp", "store", "namesrv"):
            (b / d).mkdir(parents=True, exist_ok=True)
        logback = _LOGBACK_XML
        (b / "conf" / "logback.xml").write_text(logback)
        # RocketMQ 4.9.x reads these fixed names from $ROCKETMQ_HOME/conf
        for name in ("logback_namesrv.xml", "logback_broker.xml", "logback_tools.xml"):
            (b / "conf" / name).write_text(logback)
        if self.credentials is not None:
            access_key, secret_key = self.credentials
            (b / "conf" / "tools.yml").write_text(f"accessKey: {access_key}\nsecretKey: {secret_key}\n")
        ns_conf: dict[str, Any] = {
            "listenPort": self.namesrv_port,
            "bindAddress": "127.0.0.1",
            "kvConfigPath": b / "namesrv" / "kvConfig.json",
            "configStorePath": b / "namesrv" / "namesrv.properties",
        }
        ns_conf.update(self._namesrv_overrides)
        store = b / "store"
        br_conf: dict[str, Any] = {
            "brokerClusterName": self.cluster_name,
            "brokerName": self.broker_name,
            "brokerId": 0,
            "brokerIP1": "127.0.0.1",
            "brokerIP2": "127.0.0.1",
            "namesrvAddr": self.namesrv_addr,
            "listenPort": self.broker_port,
            "bindAddress": "127.0.0.1",
            "storePathRootDir": store,
            "storePathCommitLog": store / "commitlog",
            "autoCreateTopicEnable": "true",
            "autoCreateSubscriptionGroup": "true",
            "brokerRole": "ASYNC_MASTER",
            "flushDiskType": "ASYNC_FLUSH",
            "mappedFileSizeCommitLog": 32 * 1024 * 1024,
            "mappedFileSizeConsumeQueue": 30000 * 20,
            "mappedFileSizeConsumeQueueExt": 4 * 1024 * 1024,
            "mappedFileSizeTimerLog": 4 * 1024 * 1024,
            "maxHashSlotNum": 5000,
            "maxIndexNum": 20000,
            "longPollingEnable": "true" if self.long_polling else "false",
            "shortPollingTimeMills": 1000,
            "diskMaxUsedSpaceRatio": 95,
            # SQL92 subscriptions (MessageSelector.bySql); tag subscriptions are filtered as before
            "enablePropertyFilter": "true",
            # message traces (RMQ_SYS_TRACE_TOPIC, created at start) for clients with tracing on
            "traceTopicEnable": "true",
        }
        br_conf.update(self._broker_overrides)
        ns_path = b / "conf" / "namesrv.conf"
        br_path = b / "conf" / "broker.conf"
        ns_path.write_text("".join(f"{k}={v}\n" for k, v in ns_conf.items()))
        br_path.write_text("".join(f"{k}={v}\n" for k, v in br_conf.items()))
        return ns_path, br_path

    def _spawn(self, cmd: list[str], name: str) -> subprocess.Popen[bytes]:
        assert self.base_dir is not None
        with open(self.base_dir / "logs" / f"{name}.out", "ab") as out:
            return subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                cwd=self.base_dir, env=self.env(), start_new_session=True,
            )

    def start(self) -> Self:
        """Build the harness if needed, launch name server and broker, wait until registered.

        Raises :class:`ClusterStartError` (with a log tail) if either process dies or the broker
        is not registered within ``startup_timeout`` seconds; everything started is torn down first.
        """
        self.java = find_java()
        if self._classpath_override:
            self.classpath = self._classpath_override
        else:
            self.classpath = build_harness() if self._build else classpath()
        self.base_dir = self._make_base_dir()
        _live_clusters.add(self)
        try:
            last_error: ClusterStartError | None = None
            for _attempt in range(3):
                try:
                    self._start_once()
                    return self
                except ClusterStartError as exc:
                    last_error = exc
                    self._stop_processes()
                    if "Address already in use" not in exc.log_tail:
                        raise
            assert last_error is not None
            raise last_error
        except BaseException:
            self.stop()
            raise

    def _start_once(self) -> None:
        t0 = time.monotonic()
        self.namesrv_port = _free_port()
        self.broker_port = _free_broker_port(avoid=[self.namesrv_port])
        ns_conf, br_conf = self._write_configs()
        self._namesrv = self._spawn(
            self.java_command("org.apache.rocketmq.namesrv.NamesrvStartup", "-c", str(ns_conf),
                              heap=self.namesrv_heap, jvm_args=self.namesrv_jvm_args, log_name="namesrv"),
            "namesrv",
        )
        deadline = t0 + self.startup_timeout

        def check_alive() -> None:
            for name, proc in (("name server", self._namesrv), ("broker", self._broker)):
                if proc is not None and proc.poll() is not None:
                    raise ClusterStartError(f"{name} exited early with code {proc.returncode}",
                                            self.log_tail())

        def namesrv_listening() -> bool:
            check_alive()
            with socket.create_connection(("127.0.0.1", self.namesrv_port), timeout=1):
                return True

        # The broker registers once right at startup and then only every 10+ s: starting it before
        # the name server listens costs ~10 s, so wait for the name server's port first.
        try:
            wait_until(namesrv_listening, timeout=max(1.0, deadline - time.monotonic()), interval=0.05,
                       message="name server port")
        except WaitTimeout as exc:
            raise ClusterStartError(f"name server not ready: {exc}", self.log_tail()) from None
        self._broker = self._spawn(
            self.java_command(
                "org.apache.rocketmq.broker.BrokerStartup", "-c", str(br_conf), heap=self.broker_heap,
                jvm_args=[f"-XX:MaxDirectMemorySize={self.broker_direct_memory}", *self.broker_jvm_args],
                log_name="broker"),
            "broker",
        )

        def broker_answers() -> bool:
            check_alive()
            resp = raw_request(self.broker_addr, 28, timeout=3, ssl_context=self.tls_context,
                               credentials=self.credentials)
            if resp.code != 0:
                return False
            m = re.search(r'"brokerVersionDesc"\s*:\s*"([^"]+)"', resp.text)
            self.version = m.group(1) if m else None
            return True

        nudge = {"next": 0.0, "count": 0}

        def registered() -> bool:
            check_alive()
            resp = raw_request(self.namesrv_addr, 106, timeout=3, ssl_context=self.tls_context,
                               credentials=self.credentials)
            if resp.code == 0 and f'"{self.broker_addr}"' in resp.text:
                return True
            # The broker registers once at startup, then every 10-30 s. Now and then (seen with
            # 5.3.3 under CPU load) that first registration does not show up, which would cost
            # 10 s; an UPDATE_BROKER_CONFIG with an unchanged brokerPermission makes the broker
            # register again at once.
            now = time.monotonic()
            if now >= nudge["next"]:
                if nudge["count"]:
                    raw_request(self.broker_addr, 25, body=b"brokerPermission=6\n", timeout=3,
                                ssl_context=self.tls_context, credentials=self.credentials)
                nudge["next"] = now + (0.5 if not nudge["count"] else 2.0)
                nudge["count"] += 1
            return False

        try:
            wait_until(broker_answers, timeout=max(1.0, deadline - time.monotonic()), interval=0.1,
                       message="broker GET_BROKER_RUNTIME_INFO")
            wait_until(registered, timeout=max(1.0, deadline - time.monotonic()), interval=0.1,
                       message="broker registration in the name server (GET_BROKER_CLUSTER_INFO)")
        except WaitTimeout as exc:
            raise ClusterStartError(f"cluster not ready: {exc}", self.log_tail()) from None
        self.registration_nudges = max(0, nudge["count"] - 1)
        self.startup_seconds = round(time.monotonic() - t0, 2)

    def _stop_processes(self) -> None:
        # The store is thrown away, so a graceful shutdown (about 12 s for the broker) buys nothing:
        # kill at once unless the directory is being kept for inspection.
        grace = 15.0 if os.environ.get("RMQCTL_KEEP_CLUSTER_DIR") else 0.0
        for attr in ("_broker", "_namesrv"):
            proc = getattr(self, attr)
            if proc is not None:
                _kill_group(proc, grace=grace)
                setattr(self, attr, None)

    def stop(self) -> None:
        """Kill broker and name server (their whole process groups) and remove the temp dir."""
        self._stop_processes()
        _live_clusters.discard(self)
        if self.base_dir is not None and self._own_base and not os.environ.get("RMQCTL_KEEP_CLUSTER_DIR"):
            shutil.rmtree(self.base_dir, ignore_errors=True)

    @property
    def running(self) -> bool:
        """True while both processes are alive."""
        return all(p is not None and p.poll() is None for p in (self._namesrv, self._broker))

    def log_tail(self, lines: int = 40) -> str:
        """Last ``lines`` lines of the name server's and broker's stdout and log files."""
        if self.base_dir is None:
            return ""
        parts = []
        for name in ("namesrv.out", "namesrv.log", "broker.out", "broker.log"):
            text = _tail(self.base_dir / "logs" / name, lines)
            if text:
                parts.append(f"----- {name} (last {lines} lines) -----\n{text}")
        return "\n".join(parts)

    # -- tools
    def mqadmin_run(self, *args: str, timeout: float = 120.0, namesrv: bool = True) -> subprocess.CompletedProcess[str]:
        """Run an mqadmin sub-command (``-n <namesrv>`` appended unless ``namesrv=False``).

        Returns the CompletedProcess (text stdout/stderr). mqadmin itself exits 0 even when the
        command failed; failures show up as a stack trace on stderr.
        """
        if self.base_dir is None:
            raise HarnessError("cluster not started")
        argv = [str(a) for a in args]
        if namesrv and "-n" not in argv:
            argv += ["-n", self.namesrv_addr]
        cmd = self.java_command("rmqctl.harness.AdminCli", *argv, heap="256m", log_name="tools",
                                jvm_args=["-XX:TieredStopAtLevel=1"])
        return subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=timeout, cwd=self.base_dir, env=self.env(), check=False)

    def mqadmin(self, *args: str, timeout: float = 120.0, check: bool = False) -> str:
        """Run ``mqadmin <args> -n <namesrv>`` and return its stdout.

        With ``check=True`` raise :class:`HarnessError` when mqadmin printed an exception.
        """
        proc = self.mqadmin_run(*args, timeout=timeout)
        if check and ("Exception" in proc.stderr or proc.returncode != 0):
            raise HarnessError(f"mqadmin {' '.join(args)} failed:\n{proc.stderr.strip()[-3000:]}")
        return proc.stdout

    @property
    def _secure(self) -> dict[str, Any]:
        """How the harness's own requests reach this cluster: TLS and signing, when it needs them."""
        return {"ssl_context": self.tls_context, "credentials": self.credentials}

    def request_namesrv(self, code: int, ext: Mapping[str, Any] | None = None, body: bytes = b"",
                        **kw: Any) -> RawResponse:
        """Send a raw request (see :func:`raw_request`) to the name server."""
        return raw_request(self.namesrv_addr, code, ext, body, **{**self._secure, **kw})

    def request_broker(self, code: int, ext: Mapping[str, Any] | None = None, body: bytes = b"",
                       **kw: Any) -> RawResponse:
        """Send a raw request (see :func:`raw_request`) to the broker's listenPort."""
        return raw_request(self.broker_addr, code, ext, body, **{**self._secure, **kw})

    def topic_route(self, topic: str) -> dict[str, Any] | None:
        """Route of ``topic`` from the name server as standard JSON (version 479), or None if absent."""
        resp = self.request_namesrv(105, {"topic": topic}, version=479)
        if resp.code != 0:
            return None
        route: dict[str, Any] = json.loads(resp.text)
        return route

    def create_topic(self, name: str, queues: int = 4, *, timeout: float = 60.0) -> None:
        """Create (or update) ``name`` with ``queues`` read and write queues via ``mqadmin updateTopic``.

        Waits until the name server's route shows exactly that many read/write queues.
        """
        out = self.mqadmin("updateTopic", "-c", self.cluster_name, "-t", name, "-r", str(queues),
                           "-w", str(queues), check=True, timeout=timeout)
        if "success" not in out:
            raise HarnessError(f"mqadmin updateTopic {name} did not report success:\n{out}")

        def route_ok() -> bool:
            route = self.topic_route(name)
            if not route:
                return False
            qds = [q for q in route.get("queueDatas", []) if q.get("brokerName") == self.broker_name]
            return bool(qds) and qds[0].get("readQueueNums") == queues and qds[0].get("writeQueueNums") == queues

        wait_until(route_ok, timeout=timeout, interval=0.2, message=f"route of topic {name} with {queues} queues")

    def consumer_connection(self, group: str) -> dict[str, Any] | None:
        """GET_CONSUMER_CONNECTION_LIST (203) from the broker, parsed; None if the group is not online.

        Keys: ``connectionSet``, ``subscriptionTable`` (topic -> SubscriptionData with ``subString``,
        ``subVersion``, ``tagsSet``, ``codeSet``), ``consumeType``, ``messageModel``,
        ``consumeFromWhere``.
        """
        resp = self.request_broker(203, {"consumerGroup": group})
        if resp.code != 0:
            return None
        conn: dict[str, Any] = json.loads(resp.text)
        return conn

    def consumer_ids(self, group: str) -> list[str]:
        """Client ids the broker has registered for ``group`` (GET_CONSUMER_LIST_BY_GROUP, 38), sorted."""
        resp = self.request_broker(38, {"consumerGroup": group})
        if resp.code != 0:
            return []
        return sorted(json.loads(resp.text).get("consumerIdList") or [])

    def consumer_offset(self, group: str, topic: str, queue_id: int) -> int | None:
        """Committed offset of ``group`` on one queue (QUERY_CONSUMER_OFFSET, 14); None if never committed.

        Sends ``setZeroIfNotFound=false``; without it the broker answers 0 for a queue that has no
        committed offset but still holds offset 0 in memory. 4.9.x ignores that field (so there a
        never-committed queue whose offset 0 is in memory reads as 0).
        """
        resp = self.request_broker(14, {"consumerGroup": group, "topic": topic, "queueId": queue_id,
                                        "setZeroIfNotFound": "false"})
        if resp.code != 0:
            return None
        return int(resp.ext["offset"])

    def max_offset(self, topic: str, queue_id: int) -> int:
        """Max (next) offset of one queue (GET_MAX_OFFSET, 30)."""
        resp = self.request_broker(30, {"topic": topic, "queueId": queue_id})
        if resp.code != 0:
            raise HarnessError(f"GET_MAX_OFFSET {topic}:{queue_id} failed: {resp.code} {resp.remark}")
        return int(resp.ext["offset"])

    def scenario_clients(self, **kw: Any) -> ScenarioClientsProcess:
        """A started :class:`ScenarioClientsProcess` bound to this cluster (use it as a context manager)."""
        return ScenarioClientsProcess(self, **kw).start()


# --------------------------------------------------------------------------------------------
# the Java client driver


class ScenarioClientsProcess:
    """Runs ``rmqctl.harness.ScenarioClients`` (real Java consumers/producer) and talks to it.

    Usage::

        with ScenarioClientsProcess(cluster) as clients:
            cid = clients.start_consumer("c1", group="G", subscriptions={"T": "tagA"})
            clients.produce("T", tag="tagA", count=4)
            clients.wait_until(lambda: len(clients.received()["c1"]) == 4, timeout=30)

    Each method sends one command and waits at most ``command_timeout`` seconds for its reply;
    an ``{"ok": false}`` reply or a timeout raises :class:`ScenarioError`. Consumers default to
    ``namesrv = cluster.namesrv_addr``, heartbeat/route-poll/offset-persist intervals of 1 s, and
    client IP ``127.0.0.1`` so client ids are ``127.0.0.1@<instance_name>``. The JVM-wide rebalance
    period (``rocketmq.client.rebalance.waitInterval``) is ``rebalance_interval_ms``.
    """

    #: the Java program this drives (same line protocol: ping, commands, shutdown)
    main_class = "rmqctl.harness.ScenarioClients"

    def __init__(
        self,
        cluster: RealCluster | None = None,
        *,
        namesrv_addr: str | None = None,
        work_dir: str | os.PathLike[str] | None = None,
        rebalance_interval_ms: int = 1000,
        heap: str = "384m",
        command_timeout: float = 60.0,
        startup_timeout: float = 60.0,
        jvm_args: Iterable[str] = (),
        classpath: str | None = None,
    ) -> None:
        self.cluster = cluster
        self._classpath_override = classpath
        self.namesrv_addr = namesrv_addr or (cluster.namesrv_addr if cluster else None)
        self._requested_dir = Path(work_dir) if work_dir else None
        self.rebalance_interval_ms = rebalance_interval_ms
        self.heap = heap
        self.command_timeout = command_timeout
        self.startup_timeout = startup_timeout
        self.jvm_args = list(jvm_args)
        self.work_dir: Path | None = None
        self._own_dir = False
        self._proc: subprocess.Popen[str] | None = None
        self._replies: queue.Queue[str | None] = queue.Queue()
        self._reader: threading.Thread | None = None
        self._seq = 0
        self._lock = threading.Lock()
        self.client_version: str | None = None

    def __enter__(self) -> Self:
        if self._proc is None:
            self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> Self:
        """Launch the JVM and wait for its ``ping`` reply."""
        java = find_java()
        if self._classpath_override:
            cp = self._classpath_override
        elif self.cluster is not None and self.cluster.classpath:
            cp = self.cluster.classpath
        else:
            cp = build_harness()
        if self._requested_dir is not None:
            self.work_dir = self._requested_dir
            self.work_dir.mkdir(parents=True, exist_ok=True)
        elif self.cluster is not None and self.cluster.base_dir is not None:
            self.work_dir = Path(tempfile.mkdtemp(prefix="clients-", dir=self.cluster.base_dir))
            self._own_dir = True
        else:
            self.work_dir = Path(tempfile.mkdtemp(prefix="rmqctl-clients-"))
            self._own_dir = True
        (self.work_dir / "logback.xml").write_text(_LOGBACK_XML)
        cmd = [
            java, "-Xms64m", f"-Xmx{self.heap}", "-XX:+UseSerialGC", "-XX:-UsePerfData",
            f"-Duser.home={self.work_dir}",
            f"-Djava.io.tmpdir={self.work_dir}",
            f"-Drocketmq.client.rebalance.waitInterval={self.rebalance_interval_ms}",
            f"-Drocketmq.client.logRoot={self.work_dir}",
            f"-Drmq.logback.configurationFile={self.work_dir / 'logback.xml'}",
            f"-Drmqctl.log.file={self.work_dir / 'clients.log'}",
            *self.jvm_args, "-cp", cp, self.main_class,
        ]
        env = self.cluster.env() if self.cluster and self.cluster.base_dir else dict(os.environ)
        with open(self.work_dir / "stderr.log", "ab") as err:
            self._proc = subprocess.Popen(
                cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True,
                encoding="utf-8", bufsize=1, cwd=self.work_dir, env=env, start_new_session=True,
            )
        _live_clients.add(self)
        self._reader = threading.Thread(target=self._read_loop, name="scenario-clients-reader", daemon=True)
        self._reader.start()
        try:
            reply = self.request({"cmd": "ping"}, timeout=self.startup_timeout)
        except BaseException:
            self.close(graceful=False)
            raise
        self.client_version = reply.get("client_version")
        return self

    def _read_loop(self) -> None:
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        try:
            for line in proc.stdout:
                self._replies.put(line)
        except (OSError, ValueError):
            pass  # stream closed during teardown
        finally:
            self._replies.put(None)

    def stderr_tail(self, lines: int = 40) -> str:
        """Last lines of the JVM's stderr (harness log lines, Java stack traces)."""
        return _tail(self.work_dir / "stderr.log", lines) if self.work_dir else ""

    def request(self, command: Mapping[str, Any], timeout: float | None = None) -> dict[str, Any]:
        """Send one raw command object and return the reply (raises ScenarioError unless ok)."""
        proc = self._proc
        if proc is None or proc.stdin is None or proc.poll() is not None:
            raise ScenarioError(f"ScenarioClients is not running\n{self.stderr_tail()}")
        timeout = self.command_timeout if timeout is None else timeout
        with self._lock:
            self._seq += 1
            seq = self._seq
            msg = dict(command)
            msg["seq"] = seq
            try:
                proc.stdin.write(json.dumps(msg) + "\n")
                proc.stdin.flush()
            except (BrokenPipeError, OSError) as exc:
                raise ScenarioError(f"ScenarioClients stdin closed: {exc}\n{self.stderr_tail()}") from exc
            deadline = time.monotonic() + timeout
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise ScenarioError(f"no reply to {command.get('cmd')!r} within {timeout:.0f}s\n"
                                        f"{self.stderr_tail()}")
                try:
                    line = self._replies.get(timeout=remaining)
                except queue.Empty:
                    continue
                if line is None:
                    raise ScenarioError(f"ScenarioClients exited (rc={proc.poll()}) while waiting for "
                                        f"{command.get('cmd')!r}\n{self.stderr_tail()}")
                try:
                    reply: dict[str, Any] = json.loads(line)
                except ValueError:
                    raise ScenarioError(f"non-JSON line on ScenarioClients stdout: {line!r}") from None
                if reply.get("seq") != seq:
                    continue  # stale reply of a command that timed out earlier
                if not reply.get("ok"):
                    raise ScenarioError(f"{command.get('cmd')} failed: {reply.get('error')}")
                return reply

    # -- commands
    def ping(self) -> dict[str, Any]:
        """Round trip; returns ``{"client_version": "V5_3_3", "consumers": [...]}``."""
        return self.request({"cmd": "ping"})

    def start_consumer(
        self,
        id: str,
        group: str,
        subscriptions: Mapping[str, str],
        *,
        strategy: str = "AVG",
        message_model: str = "CLUSTERING",
        consume_from: str = "FIRST",
        instance_name: str | None = None,
        namesrv: str | None = None,
        **options: Any,
    ) -> str:
        """Start a real ``DefaultMQPushConsumer`` and return its client id.

        ``subscriptions`` maps topic -> tag expression. ``strategy``: AVG, AVG_BY_CIRCLE,
        CONSISTENT_HASH. ``message_model``: CLUSTERING/BROADCASTING. ``consume_from``:
        FIRST/LAST/TIMESTAMP. ``instance_name`` defaults to ``harness_<id>`` (must be unique per
        JVM within a group). Extra ``options`` are passed through: ``client_ip``,
        ``heartbeat_interval_ms``, ``poll_name_server_interval_ms``, ``persist_offset_interval_ms``,
        ``post_subscription_when_pull``, ``pull_delay_on_exception_ms`` (client default 1000),
        ``consume_result`` (SUCCESS/RECONSUME_LATER),
        ``consume_delay_ms``, ``consume_thread_min``, ``consume_thread_max``, ``pull_batch_size``,
        ``max_reconsume_times``.
        """
        cmd: dict[str, Any] = {
            "cmd": "start_consumer", "id": id, "namesrv": namesrv or self.namesrv_addr, "group": group,
            "subscriptions": dict(subscriptions), "strategy": strategy, "message_model": message_model,
            "consume_from": consume_from,
        }
        if instance_name is not None:
            cmd["instance_name"] = instance_name
        cmd.update(options)
        return str(self.request(cmd)["client_id"])

    def stop_consumer(self, id: str) -> None:
        """Shut the consumer down (it unregisters from the broker)."""
        self.request({"cmd": "stop_consumer", "id": id})

    def produce(
        self,
        topic: str,
        tag: str | None = None,
        count: int = 1,
        *,
        queue_id: int | None = None,
        queue_ids: Iterable[int] | None = None,
        body: str | None = None,
        keys: str | None = None,
        namesrv: str | None = None,
    ) -> list[dict[str, Any]]:
        """Send ``count`` messages synchronously; return per message ``queue_id``, ``msg_id``, ``offset``, ...

        ``queue_id`` sends all to that queue; ``queue_ids`` cycles through the list (message i goes to
        ``queue_ids[i % len]``); with neither the producer's own round robin (random start) is used.
        """
        cmd: dict[str, Any] = {"cmd": "produce", "namesrv": namesrv or self.namesrv_addr, "topic": topic,
                               "count": count}
        if tag is not None:
            cmd["tag"] = tag
        if queue_id is not None:
            cmd["queue_id"] = queue_id
        if queue_ids is not None:
            cmd["queue_ids"] = list(queue_ids)
        if body is not None:
            cmd["body"] = body
        if keys is not None:
            cmd["keys"] = keys
        return list(self.request(cmd)["messages"])

    def received(self, id: str | None = None) -> dict[str, list[dict[str, Any]]]:
        """Messages each consumer's listener got: ``{id: [{topic, tag, queue_id, broker, msg_id, ...}]}``."""
        cmd: dict[str, Any] = {"cmd": "received"}
        if id is not None:
            cmd["id"] = id
        return dict(self.request(cmd)["received"])

    def clear_received(self, id: str | None = None) -> None:
        """Forget the recorded messages (of one consumer or all)."""
        cmd: dict[str, Any] = {"cmd": "clear_received"}
        if id is not None:
            cmd["id"] = id
        self.request(cmd)

    def assignments(self, id: str | None = None, *, include_retry: bool = False) -> dict[str, list[dict[str, Any]]]:
        """Queues each consumer currently holds (non-dropped process queues).

        ``{id: [{"topic", "broker", "queue_id", "offset" (in-memory consumer offset, -1 = none),
        "cached_msg_count"}]}``; ``%RETRY%`` queues only with ``include_retry=True``.
        """
        cmd: dict[str, Any] = {"cmd": "assignments"}
        if id is not None:
            cmd["id"] = id
        result = dict(self.request(cmd)["assignments"])
        if not include_retry:
            result = {k: [q for q in v if not q["topic"].startswith("%RETRY%")] for k, v in result.items()}
        return result

    def queue_ids(self, topic: str) -> dict[str, list[int]]:
        """``{consumer id: sorted queue ids of topic it holds}`` (convenience over :meth:`assignments`)."""
        return {cid: sorted(q["queue_id"] for q in qs if q["topic"] == topic)
                for cid, qs in self.assignments(include_retry=True).items()}

    def subscriptions(self, id: str | None = None) -> dict[str, dict[str, dict[str, Any]]]:
        """Client-side subscription data: ``{id: {topic: {sub_string, sub_version, tags, codes}}}``."""
        cmd: dict[str, Any] = {"cmd": "subscriptions"}
        if id is not None:
            cmd["id"] = id
        return dict(self.request(cmd)["subscriptions"])

    def pin_sub_version(self, id: str, topic: str, version: int) -> None:
        """Set the consumer's subVersion of ``topic`` and heartbeat at once: the broker then stores
        this client's expression as long as no client sends a greater version."""
        self.request({"cmd": "pin_sub_version", "id": id, "topic": topic, "version": version})

    def wait_until(self, predicate: Callable[[], T | None], timeout: float = 30.0, interval: float = 0.2,
                   message: str | Callable[[], str] | None = None) -> T:
        """Same as the module-level :func:`wait_until`; fails fast if the JVM died."""

        def guarded() -> T | None:
            if self._proc is None or self._proc.poll() is not None:
                raise ScenarioError(f"ScenarioClients died\n{self.stderr_tail()}")
            return predicate()

        try:
            return wait_until(guarded, timeout=timeout, interval=interval, message=message)
        except WaitTimeout as exc:
            if self._proc is None or self._proc.poll() is not None:
                raise ScenarioError(f"ScenarioClients died\n{self.stderr_tail()}") from exc
            raise

    def wait_stable(self, probe: Callable[[], T], duration: float = 3.0, timeout: float = 60.0,
                    interval: float = 0.2, accept: Callable[[T], bool] = lambda v: True,
                    message: str | None = None) -> T:
        """Same as the module-level :func:`wait_stable`; fails fast if the JVM died."""

        def guarded() -> T:
            if self._proc is None or self._proc.poll() is not None:
                raise ScenarioError(f"ScenarioClients died\n{self.stderr_tail()}")
            return probe()

        return wait_stable(guarded, duration=duration, timeout=timeout, interval=interval,
                           accept=accept, message=message)

    def close(self, graceful: bool = True) -> None:
        """Shut all clients down (``shutdown`` command), then make sure the JVM is gone."""
        proc = self._proc
        if proc is not None:
            if graceful and proc.poll() is None:
                with contextlib.suppress(Exception):
                    self.request({"cmd": "shutdown"}, timeout=30)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=10)
            _kill_group(proc, grace=3.0)
            if self._reader is not None:
                self._reader.join(timeout=5)
                self._reader = None
            for stream in (proc.stdin, proc.stdout):
                if stream is not None:
                    with contextlib.suppress(Exception):
                        stream.close()
            self._proc = None
        _live_clients.discard(self)
        if self.work_dir is not None and self._own_dir and not os.environ.get("RMQCTL_KEEP_CLUSTER_DIR"):
            shutil.rmtree(self.work_dir, ignore_errors=True)


def run_tag_overwrite(cluster: RealCluster, clients: ScenarioClientsProcess, prefix: str,
                      handles: tuple[str, str] = ("a", "b")) -> tuple[str, str, str, str]:
    """The tag-overwrite set-up several comparisons share, settled: a fresh 4-queue topic, client A
    subscribing ``tagA`` and then B ``tagB`` in one group, two queues each, 4 messages of each tag,
    every queue committed at offset 2 and the retry queue's offset committed. ``handles`` name
    the two consumers in ``clients`` (for ``stop_consumer``). Returns (topic, group, client id of
    A, client id of B)."""
    token = uuid.uuid4().hex[:8]
    topic, group = f"{prefix}Topic_{token}", f"{prefix}Group_{token}"
    cluster.create_topic(topic, 4)
    a = clients.start_consumer(handles[0], group, {topic: "tagA"}, instance_name=f"{prefix.lower()}A_{token}")
    wait_until(lambda: cluster.consumer_ids(group) == [a], timeout=60, message="A registered")
    b = clients.start_consumer(handles[1], group, {topic: "tagB"}, instance_name=f"{prefix.lower()}B_{token}")
    wait_until(lambda: cluster.consumer_ids(group) == sorted([a, b]), timeout=60, message="A and B registered")
    clients.wait_stable(lambda: clients.queue_ids(topic), duration=3.0, timeout=90,
                        accept=lambda alloc: sorted(q for qs in alloc.values() for q in qs) == [0, 1, 2, 3]
                        and all(len(qs) == 2 for qs in alloc.values()) and len(alloc) == 2,
                        message="two queues each")
    clients.produce(topic, "tagA", 4, queue_ids=[0, 1, 2, 3])
    clients.produce(topic, "tagB", 4, queue_ids=[0, 1, 2, 3])
    wait_until(lambda: all(cluster.consumer_offset(group, topic, q) == 2 for q in range(4)),
               timeout=90, message="every queue committed at offset 2")
    # the empty retry queue's offset is committed only by the periodic persist (first after
    # 10 s); wait for it so that every reader sees the same, settled set of queues
    wait_until(lambda: cluster.consumer_offset(group, f"%RETRY%{group}", 0) is not None,
               timeout=60, message="retry queue offset committed")
    return topic, group, a, b
