"""Shared pytest configuration: the real-RocketMQ fixtures from tests/harness, and a private
names cache (commands note the group and topic names they read under ``$XDG_CACHE_HOME``)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

pytest_plugins = ["tests.harness.plugin"]


@pytest.fixture(autouse=True, scope="session")
def _private_names_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Commands run by tests write their names cache here, never in the user's ~/.cache."""
    before = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("xdg-cache"))
    yield
    if before is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = before
