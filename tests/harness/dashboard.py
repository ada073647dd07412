"""The real Apache RocketMQ Dashboard (three generations), built from ``../shared/vendor`` and started.

Standard library only, like :mod:`tests.harness.realcluster`. The dashboard is not on Maven Central:
the vendored source archives are built with Maven (back end only, no node step) and the jar is cached
under ``$RMQCTL_HARNESS_CACHE`` (default ``~/.cache/rmqctl-harness``)``/dashboard/<archive sha256>/``,
so a second session starts in seconds. A file lock serialises parallel builders.

Main entry points:

* :data:`GENERATIONS` - the three generations (``1.0.0``, ``2.1.0``, ``master``) and how each builds
  and starts.
* :func:`build_dashboard` - the cached jar of one generation (build on first use); raises
  :class:`DashboardUnavailable` when the archive is absent and :class:`HarnessError` when the build fails.
* :class:`DashboardProcess` - one dashboard on a free loopback port with ``loginRequired=true`` and a
  ``users.properties`` in a throw-away data path, in front of a given name server; ``-Xmx384m``.

Environment variables: ``RMQCTL_DASHBOARD_VENDOR`` (directory of the archives; default
``<repo>/../shared/vendor``), ``RMQCTL_HARNESS_CACHE``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import hashlib
import http.client
import json
import os
import shutil
import socket
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Self

from tests.harness.realcluster import JDK_MODULE_FLAGS, HarnessError, find_java, find_mvn, wait_until

REPO_ROOT = Path(__file__).resolve().parents[2]

#: users written to ``users.properties``: name -> (password, admin)
DEFAULT_USERS: Mapping[str, tuple[str, bool]] = {"operator": ("s3cret-Pa55", True), "viewer": ("view-only", False)}


class DashboardUnavailable(HarnessError):
    """The vendored archive of a generation is not there (a reason to skip, not a build failure)."""


@dataclasses.dataclass(frozen=True)
class Generation:
    """One dashboard generation: its archive and the quirks of building and starting it."""

    name: str
    archive: str
    jar_glob: str
    mvn_args: tuple[str, ...] = ()
    #: the name server option differs: 1.0.0 takes one address, 2.x a list
    namesrv_option: str = "rocketmq.config.namesrvAddrs"


GENERATIONS: dict[str, Generation] = {
    "1.0.0": Generation("1.0.0", "rocketmq-dashboard-1.0.0.tar.gz", "rocketmq-dashboard-1.0.0.jar",
                        ("-Dlombok.version=1.18.30",), "rocketmq.config.namesrvAddr"),
    "2.1.0": Generation("2.1.0", "rocketmq-dashboard-2.1.0.tar.gz", "rocketmq-dashboard-2.1.0.jar"),
    "master": Generation("master", "rocketmq-dashboard-master-770822b.tar.gz",
                         "rocketmq-dashboard-2.1.1-SNAPSHOT.jar"),
}


def vendor_dir() -> Path:
    """``$RMQCTL_DASHBOARD_VENDOR``, else the nearest ``shared/vendor`` beside the repo or above it
    (``<repo>/../shared/vendor`` for a checkout, one level higher for a worktree under ``wt/``)."""
    explicit = os.environ.get("RMQCTL_DASHBOARD_VENDOR")
    if explicit:
        return Path(explicit)
    for parent in REPO_ROOT.parents:
        candidate = parent / "shared" / "vendor"
        if candidate.is_dir():
            return candidate
    return REPO_ROOT.parent / "shared" / "vendor"


def cache_root() -> Path:
    explicit = os.environ.get("RMQCTL_HARNESS_CACHE")
    base = Path(explicit) if explicit else Path.home() / ".cache" / "rmqctl-harness"
    return base / "dashboard"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def build_dashboard(name: str, timeout: float = 900.0) -> Path:
    """The jar of generation ``name``, built once per archive hash and cached outside the repo."""
    gen = GENERATIONS[name]
    archive = vendor_dir() / gen.archive
    if not archive.is_file():
        raise DashboardUnavailable(f"dashboard archive {archive} is absent")
    find_java()
    sha = _sha256(archive)
    target = cache_root() / sha
    jar = target / "dashboard.jar"
    if jar.is_file():
        return jar
    target.mkdir(parents=True, exist_ok=True)
    with open(target / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if jar.is_file():
                return jar
            mvn = find_mvn()
            with tempfile.TemporaryDirectory(prefix="rmqctl-dashboard-build-") as work:
                with tarfile.open(archive) as tar:
                    tar.extractall(work, filter="data")
                (src,) = [p for p in Path(work).iterdir() if (p / "pom.xml").is_file()]
                cmd = [mvn, "-q", "-B", "-DskipTests", "-Dskip.installnodenpm", "-Dskip.npm",
                       "-Dmaven.antrun.skip=true", "-Dcheckstyle.skip=true", *gen.mvn_args, "package"]
                started = time.monotonic()
                try:
                    proc = subprocess.run(cmd, cwd=src, stdin=subprocess.DEVNULL, capture_output=True,
                                          text=True, timeout=timeout, check=False)
                except subprocess.TimeoutExpired as exc:
                    raise HarnessError(f"dashboard {name}: Maven build timed out after {timeout:.0f}s") from exc
                built = src / "target" / gen.jar_glob
                if proc.returncode != 0 or not built.is_file():
                    tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-40:])
                    raise HarnessError(f"dashboard {name}: Maven build failed (rc={proc.returncode})\n{tail}")
                tmp = target / "dashboard.jar.tmp"
                shutil.copyfile(built, tmp)
                tmp.replace(jar)
                (target / "build.json").write_text(json.dumps({
                    "generation": name, "archive": gen.archive, "seconds": round(time.monotonic() - started, 1),
                }))
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return jar


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def http_get(url_host: str, port: int, path: str, timeout: float = 3.0) -> tuple[int, bytes]:
    """A bare GET (no cookies, no redirects): status and body."""
    conn = http.client.HTTPConnection(url_host, port, timeout=timeout)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


class DashboardProcess:
    """One real dashboard on loopback in front of ``namesrv_addr``, login required.

    Attributes after :meth:`start`: ``url`` (``http://127.0.0.1:<port>``), ``port``, ``users``,
    ``startup_seconds``, ``data_dir``.
    """

    def __init__(self, generation: str, namesrv_addr: str, *, users: Mapping[str, tuple[str, bool]] = DEFAULT_USERS,
                 heap: str = "384m", startup_timeout: float = 120.0, login_required: bool = True) -> None:
        self.generation = GENERATIONS[generation]
        self.namesrv_addr = namesrv_addr
        self.users = dict(users)
        self.heap = heap
        self.startup_timeout = startup_timeout
        self.login_required = login_required
        self.port = 0
        self.startup_seconds: float | None = None
        self.base_dir: Path | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def data_dir(self) -> Path:
        assert self.base_dir is not None
        return self.base_dir / "data"

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def write_users(self) -> None:
        lines = [f"{name}={password}{',1' if admin else ''}" for name, (password, admin) in self.users.items()]
        (self.data_dir / "users.properties").write_text("\n".join(lines) + "\n", encoding="utf-8")

    def start(self) -> Self:
        jar = build_dashboard(self.generation.name)
        java = find_java()
        self.base_dir = Path(tempfile.mkdtemp(prefix=f"rmqctl-dashboard-{self.generation.name}-"))
        for sub in ("data", "home", "tmp"):
            (self.base_dir / sub).mkdir()
        self.write_users()
        self.port = _free_port()
        cmd = [
            java, "-Xms64m", f"-Xmx{self.heap}", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            # 1.0.0's netty 4.0 needs java.nio opened on Java 17 (harmless for the newer ones)
            *JDK_MODULE_FLAGS,
            f"-Duser.home={self.base_dir / 'home'}", f"-Djava.io.tmpdir={self.base_dir / 'tmp'}",
            "-jar", str(jar),
            f"--server.port={self.port}", "--server.address=127.0.0.1",
            f"--{self.generation.namesrv_option}={self.namesrv_addr}",
            "--rocketmq.config.isVIPChannel=false",
            f"--rocketmq.config.loginRequired={'true' if self.login_required else 'false'}",
            f"--rocketmq.config.dataPath={self.data_dir}",
            "--rocketmq.config.enableDashBoardCollect=false",
        ]
        t0 = time.monotonic()
        with open(self.base_dir / "dashboard.out", "ab") as out:
            self._proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                          cwd=self.base_dir, start_new_session=True)

        def answers() -> bool:
            assert self._proc is not None
            if self._proc.poll() is not None:
                raise HarnessError(f"dashboard {self.generation.name} exited with code {self._proc.returncode}\n"
                                   + self.log_tail())
            status, _ = http_get("127.0.0.1", self.port, "/login/check.query")
            return status == 200

        try:
            wait_until(answers, timeout=self.startup_timeout, interval=0.2,
                       message=f"dashboard {self.generation.name} answering /login/check.query")
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = round(time.monotonic() - t0, 2)
        return self

    def check(self) -> dict[str, Any]:
        status, body = http_get("127.0.0.1", self.port, "/login/check.query")
        doc: dict[str, Any] = json.loads(body)
        return doc

    def log_tail(self, lines: int = 40) -> str:
        if self.base_dir is None:
            return ""
        path = self.base_dir / "dashboard.out"
        with contextlib.suppress(OSError):
            return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
        return ""

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, 9)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)
        if self.base_dir is not None:
            shutil.rmtree(self.base_dir, ignore_errors=True)
            self.base_dir = None
