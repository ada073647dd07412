"""Fixtures: the real dashboard generations, started on demand in front of the session's real broker.

Each generation is built once (the jar is cached by archive hash outside the repo) and started once
per session, with ``loginRequired=true``. A missing archive or a failed build/start skips the tests
with the reason - or fails them under ``RMQCTL_REQUIRE_REAL_CLUSTER=1``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest

from tests.harness.dashboard import DashboardProcess, DashboardUnavailable
from tests.harness.plugin import real_part_missing
from tests.harness.realcluster import HarnessError, RealCluster

#: seconds each generation took to build (0 when cached) and start, for the report
TIMINGS: dict[str, dict[str, float]] = {}


def _unavailable(reason: str) -> None:
    real_part_missing(reason, part="real dashboard")


@pytest.fixture(scope="session")
def dashboard_for(real_cluster: RealCluster) -> Iterator[Callable[[str], DashboardProcess]]:
    """``dashboard_for("2.1.0")``: that generation's dashboard, started once for the session."""
    started: dict[str, DashboardProcess] = {}
    failed: dict[str, str] = {}

    def get(generation: str) -> DashboardProcess:
        if generation in failed:
            _unavailable(failed[generation])
        if generation not in started:
            t0 = time.monotonic()
            proc = DashboardProcess(generation, real_cluster.namesrv_addr)
            try:
                proc.start()
            except DashboardUnavailable as exc:
                failed[generation] = str(exc)
                _unavailable(failed[generation])
            except (HarnessError, OSError) as exc:
                failed[generation] = f"dashboard {generation} did not build or start: {exc}"
                _unavailable(failed[generation])
            TIMINGS[generation] = {"total": round(time.monotonic() - t0, 1),
                                   "start": proc.startup_seconds or 0.0}
            started[generation] = proc
        return started[generation]

    try:
        yield get
    finally:
        for proc in started.values():
            proc.stop()
