"""pytest plugin: a real RocketMQ name server + broker and real Java clients as fixtures.

Enable it with ``pytest_plugins = ["tests.harness.plugin"]`` in ``tests/conftest.py``.

Fixtures:

* ``real_cluster`` (session) - a started :class:`tests.harness.realcluster.RealCluster`, shared by
  every test of the session (use unique topic/group names; see ``rmq_names``).
* ``scenario_clients`` (function) - a started :class:`tests.harness.realcluster.ScenarioClientsProcess`
  bound to ``real_cluster``; every consumer/producer it started is shut down after the test.
* ``real_proxy`` (module) - a started :class:`tests.harness.proxycluster.RealProxy` (rocketmq-proxy,
  cluster mode) in front of ``real_cluster``; started only by the modules that ask for it.
* ``grpc_clients`` (function) - a started :class:`tests.harness.proxycluster.GrpcClientsProcess`
  (rocketmq-client-java behind ``real_proxy``).
* ``rmq_names`` (function) - factory for unique, valid topic/group/instance names per test:
  ``rmq_names("TagTopic")`` -> ``"TagTopic_3fa2b1c9_7"``.

When Java or Maven is missing, the harness cannot be built or the cluster does not start, tests
using these fixtures are **skipped** with the reason - unless ``RMQCTL_REQUIRE_REAL_CLUSTER=1`` is
set (CI), in which case they **fail** with the reason and the tail of the name server/broker logs.
Every other real part a test needs (Spark and pyarrow, ``spark-class``, tmux, a shell, a program on
``PATH``, the real dashboard, Java for the differential tests) is checked through
:func:`real_part_missing`, :func:`require_program` or :func:`missing_modules`, so the flag turns
each of them into a failure the same way.

Every test that uses ``real_cluster`` (directly or through ``scenario_clients``) gets the
``real_cluster`` marker, so ``-m "not real_cluster"`` deselects them. When such a test fails, the
tail of the broker/name server logs and of the Java clients' stderr is attached to the report.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import re
import shutil
import uuid
from collections.abc import Callable, Generator, Iterator
from typing import Any, NoReturn

import pytest

from tests.harness.proxycluster import GrpcClientsProcess, RealProxy
from tests.harness.realcluster import (
    ClusterStartError,
    HarnessError,
    RealCluster,
    ScenarioClientsProcess,
    ScenarioError,
    build_harness,
)

REQUIRE_ENV = "RMQCTL_REQUIRE_REAL_CLUSTER"


def real_cluster_required() -> bool:
    """True when ``RMQCTL_REQUIRE_REAL_CLUSTER=1``: an unavailable real cluster is a failure, not a skip."""
    return os.environ.get(REQUIRE_ENV, "").strip() == "1"


def real_part_missing(reason: str, details: str = "", *, part: str = "real RocketMQ cluster") -> NoReturn:
    """A real part a test needs is not there: skip with ``reason``, or fail under the require flag.

    ``part`` names what is missing in the skip line (``"tmux"``, ``"Spark"``, ...); ``details``
    (log tails) are shown with the failure only.
    """
    if real_cluster_required():
        text = f"{part} unavailable: {reason}\n({REQUIRE_ENV}=1, so this is a failure instead of a skip)"
        if details:
            text += f"\n{details}"
        pytest.fail(text, pytrace=False)
    pytest.skip(f"{part} unavailable: {reason}")


def start_or_missing(cluster: RealCluster, what: str,
                     setup: Callable[[RealCluster], None] | None = None) -> None:
    """Start ``cluster`` and run ``setup`` on it; when either fails, stop what started and report
    the real part missing (skip, or failure under the require flag) with the cluster's log tail."""
    problem: tuple[str, str] | None = None
    try:
        cluster.start()
        if setup is not None:
            setup(cluster)
    except ClusterStartError as exc:
        problem = (f"{what} did not start: {exc}", exc.log_tail)
    except (HarnessError, OSError) as exc:
        problem = (f"{what} did not start: {exc!r}", cluster.log_tail())
    if problem:
        cluster.stop()
        real_part_missing(*problem)


def require_program(name: str, *, hint: str = "", path: str | None = None) -> str:
    """The full path of program ``name`` (searched on ``path``, default ``$PATH``); when it is not
    there, one line says so (skip, or failure under the require flag) instead of a time-out later."""
    found = shutil.which(name, path=path)
    if found is None:
        where = "PATH" if path is None else path
        real_part_missing(f"{name} is not on {where}" + (f" ({hint})" if hint else ""), part=name)
    return found


def missing_modules(*names: str) -> list[str]:
    """The top-level Python modules among ``names`` that cannot be imported here (none: ``[]``)."""
    missing = []
    for name in names:
        try:
            found = importlib.util.find_spec(name) is not None
        except ImportError:
            found = False
        if not found:
            missing.append(name)
    return missing


#: test directories (under ``tests/``) whose every module imports these Python modules at the
#: top: the part they make up, and the modules
MODULES_NEEDED: dict[str, tuple[str, tuple[str, ...]]] = {"analysis": ("Spark", ("pyspark", "pyarrow"))}


class MissingPartItem(pytest.Item):
    """Stands for one test module that cannot be imported: skips, or fails under the flag."""

    def __init__(self, *, reason: str, part: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.reason = reason
        self.part = part

    def runtest(self) -> None:
        real_part_missing(self.reason, part=self.part)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, self.name


class MissingPartModules(pytest.File):
    """A test directory whose modules need Python modules that are not installed: one item per
    test module, so none of them is dropped in silence. Not a ``pytest.Directory``, so the
    directory's conftest (which imports the missing modules too) is never loaded."""

    def __init__(self, *, part: str, missing: list[str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.part = part
        self.missing = missing

    def collect(self) -> Iterator[pytest.Item]:
        reason = f"{', '.join(self.missing)} not installed (pip install -e '.[test,spark]')"
        for module in sorted(self.path.glob("test_*.py")):
            yield MissingPartItem.from_parent(self, name=module.name, reason=reason, part=self.part)


@pytest.hookimpl(tryfirst=True)
def pytest_collect_directory(path: Any, parent: pytest.Collector) -> pytest.Collector | None:
    """Collect a :data:`MODULES_NEEDED` directory as :class:`MissingPartModules` when its modules
    are missing (otherwise as usual)."""
    if path.parent.name != "tests" or path.name not in MODULES_NEEDED:
        return None
    part, modules = MODULES_NEEDED[path.name]
    missing = missing_modules(*modules)
    if not missing:
        return None
    return MissingPartModules.from_parent(parent, path=path, part=part, missing=missing)


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``real_cluster`` marker (harmless if pyproject already declares it)."""
    config.addinivalue_line(
        "markers", "real_cluster: needs a real RocketMQ name server and broker started from Maven Central jars"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test that (transitively) uses the ``real_cluster`` fixture with ``real_cluster``."""
    for item in items:
        if "real_cluster" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.real_cluster)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Generator[None, Any, None]:
    """Attach broker/name server log tails and the Java clients' stderr to failed real-cluster tests."""
    outcome = yield
    report = outcome.get_result()
    if not report.failed or call.when not in ("call", "setup"):
        return
    funcargs = getattr(item, "funcargs", {})
    cluster = funcargs.get("real_cluster")
    if isinstance(cluster, RealCluster):
        tail = cluster.log_tail(30)
        if tail:
            report.sections.append(("real cluster logs", tail))
    clients = funcargs.get("scenario_clients")
    if isinstance(clients, ScenarioClientsProcess):
        tail = clients.stderr_tail(30)
        if tail:
            report.sections.append(("ScenarioClients stderr", tail))
    for name in ("real_proxy", "grpc_clients"):
        part = funcargs.get(name)
        if isinstance(part, (RealProxy, GrpcClientsProcess)):
            tail = part.log_tail(30) if isinstance(part, RealProxy) else part.stderr_tail(30)
            if tail:
                report.sections.append((f"{name} logs", tail))


@pytest.fixture(scope="session")
def real_cluster() -> Iterator[RealCluster]:
    """One real name server + broker for the whole session (skip/fail per ``RMQCTL_REQUIRE_REAL_CLUSTER``)."""
    problem: tuple[str, str] | None = None
    try:
        build_harness()
    except HarnessError as exc:
        problem = (f"cannot build the Java harness: {exc}", "")
    if problem:
        real_part_missing(*problem)
    cluster = RealCluster()
    start_or_missing(cluster, "cluster")
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def scenario_clients(real_cluster: RealCluster) -> Iterator[ScenarioClientsProcess]:
    """A fresh ScenarioClients JVM for one test, bound to the session cluster; closed afterwards."""
    clients = ScenarioClientsProcess(real_cluster)
    problem: str | None = None
    try:
        clients.start()
    except (ScenarioError, HarnessError, OSError) as exc:
        problem = f"ScenarioClients did not start: {exc}"
    if problem:
        real_part_missing(problem, clients.stderr_tail())
    try:
        yield clients
    finally:
        clients.close()


@pytest.fixture(scope="module")
def real_proxy(real_cluster: RealCluster) -> Iterator[RealProxy]:
    """A rocketmq-proxy (cluster mode) in front of the session cluster, for one test module; only
    the modules that ask for it start one (skip/fail per ``RMQCTL_REQUIRE_REAL_CLUSTER``)."""
    proxy = RealProxy(real_cluster)
    problem: tuple[str, str] | None = None
    try:
        proxy.start()
    except (ClusterStartError, HarnessError) as exc:
        problem = (f"the proxy did not start: {exc}", getattr(exc, "log_tail", ""))
    if problem:
        real_part_missing(*problem)
    try:
        yield proxy
    finally:
        proxy.stop()


@pytest.fixture
def grpc_clients(real_proxy: RealProxy) -> Iterator[GrpcClientsProcess]:
    """A fresh GrpcClients JVM (rocketmq-client-java) for one test, talking to ``real_proxy``."""
    clients = GrpcClientsProcess(real_proxy.grpc_endpoint)
    problem: str | None = None
    try:
        clients.start()
    except (ScenarioError, HarnessError, OSError) as exc:
        problem = f"GrpcClients did not start: {exc}"
    if problem:
        real_part_missing(problem, clients.stderr_tail())
    try:
        yield clients
    finally:
        # the JVM is stopped, not asked to close its consumers: a gRPC consumer's orderly close
        # waits out its in-flight receives (20-40 s), and nothing after the test reads its state
        clients.close(graceful=False)


_name_counter = itertools.count(1)


@pytest.fixture
def rmq_names(request: pytest.FixtureRequest) -> Callable[[str], str]:
    """Factory of unique RocketMQ-safe names (``[A-Za-z0-9_-]``, < 100 chars) for this test."""
    token = uuid.uuid4().hex[:8]

    def make(prefix: str) -> str:
        safe = re.sub(r"[^A-Za-z0-9_-]", "_", prefix)[:60]
        return f"{safe}_{token}_{next(_name_counter)}"

    return make
