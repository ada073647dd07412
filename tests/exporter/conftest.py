"""Fixtures of the exporter tests: the Prometheus binaries from Debian's ``prometheus`` package.

A test that uses ``prometheus`` or ``promtool`` is not in the fast tier (tests/conftest.py lists
both among the real-part fixtures); when the program is missing it is skipped, or fails under
``RMQCTL_REQUIRE_REAL_CLUSTER=1`` (CI installs it with tests/install-system-deps.sh).
"""

from __future__ import annotations

import pytest

from tests.harness.plugin import require_program


@pytest.fixture(scope="session")
def promtool() -> str:
    return require_program("promtool", hint="apt-get install prometheus")


@pytest.fixture(scope="session")
def prometheus() -> str:
    return require_program("prometheus", hint="apt-get install prometheus")
