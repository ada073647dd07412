"""One resolver decides what a command reads: name servers or a dashboard, the context, the
deadline and the ACL keys (``rmqctl.config.resolve_connection``); the dashboard settings and the
name-server view read it instead of deciding again."""

from __future__ import annotations

from pathlib import Path

import pytest

from rmqctl.config import AccessKeys, Config, resolve, resolve_connection
from rmqctl.dashboard.settings import resolve_dashboard

CONFIG = """
current-context = "cur"
[contexts.cur]
namesrv = "cur:9876"
access_key = "ak-cur"
secret_key = "sk-cur"
[contexts.other]
namesrv = "other:9876"
timeout = "1m"
[contexts.dash]
dashboard = "http://dash:8082"
dashboard_user = "ops"
dashboard_password = "pw"
timeout = "2m"
"""


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Config:
    path = tmp_path / "config.toml"
    path.write_text(CONFIG, encoding="utf-8")
    for var in ("NAMESRV_ADDR", "RMQCTL_ACCESS_KEY", "RMQCTL_SECRET_KEY", "RMQCTL_SECURITY_TOKEN",
                "RMQCTL_DASHBOARD_USER", "RMQCTL_DASHBOARD_PASSWORD"):
        monkeypatch.delenv(var, raising=False)
    return Config.load(path)


# (-n, --context, NAMESRV_ADDR, --dashboard) -> (namesrv, dashboard url, context)
CASES = [
    ((None, None, None, None), ("cur:9876", None, "cur")),
    (("flag:1", None, None, None), ("flag:1", None, None)),
    (("flag:1", "other", None, None), ("flag:1", None, "other")),
    ((None, "other", None, None), ("other:9876", None, "other")),
    ((None, None, "env:1", None), ("env:1", None, None)),
    ((None, "other", "env:1", None), ("other:9876", None, "other")),
    ((None, "dash", None, None), (None, "http://dash:8082", "dash")),
    ((None, "dash", "env:1", None), (None, "http://dash:8082", "dash")),
    (("flag:1", "dash", None, None), ("flag:1", None, "dash")),
    (("flag:1", None, None, "http://d2"), (None, "http://d2", "cur")),
    ((None, None, "env:1", "http://d2"), (None, "http://d2", "cur")),
]


@pytest.mark.parametrize(("given", "expected"), CASES, ids=[str(c[0]) for c in CASES])
def test_precedence(config: Config, monkeypatch: pytest.MonkeyPatch,
                    given: tuple[str | None, ...], expected: tuple[str | None, ...]) -> None:
    namesrv, context, env, dashboard = given
    if env:
        monkeypatch.setenv("NAMESRV_ADDR", env)
    got = resolve_connection(namesrv=namesrv, context=context, timeout=None, dashboard=dashboard, config=config)
    assert (got.namesrv, got.dashboard.url if got.dashboard else None, got.context) == expected
    # the dashboard settings are the same decision seen from the dashboard
    web = resolve_dashboard(dashboard=dashboard, namesrv=namesrv, context=context, timeout=None, config=config)
    assert (web.url if web else None) == expected[1]


def test_deadline_and_keys(config: Config, monkeypatch: pytest.MonkeyPatch) -> None:
    current = resolve_connection(namesrv=None, context=None, timeout=None, config=config)
    assert current.timeout == 5.0 and current.credentials == AccessKeys("ak-cur", "sk-cur")
    assert "sk-cur" not in repr(current)
    assert resolve_connection(namesrv=None, context="other", timeout=None, config=config).timeout == 60.0
    assert resolve_connection(namesrv=None, context="other", timeout=3.0, config=config).timeout == 3.0
    monkeypatch.setenv("RMQCTL_ACCESS_KEY", "ak-env")
    monkeypatch.setenv("RMQCTL_SECRET_KEY", "sk-env")
    keys = resolve(namesrv=None, context=None, timeout=None, config=config).credentials
    assert keys == AccessKeys("ak-env", "sk-env")


def test_a_dashboard_context_with_a_duration_timeout(config: Config, monkeypatch: pytest.MonkeyPatch) -> None:
    # a context's timeout may be a duration; the dashboard's view read it as a float and crashed
    web = resolve_dashboard(dashboard=None, namesrv=None, context="dash", timeout=None, config=config)
    assert web is not None and (web.url, web.username, web.password, web.timeout) == (
        "http://dash:8082", "ops", "pw", 120.0)
    monkeypatch.setenv("RMQCTL_DASHBOARD_PASSWORD", "from-env")
    web = resolve_dashboard(dashboard=None, namesrv=None, context="dash", timeout=None, config=config)
    assert web is not None and web.password == "from-env" and "from-env" not in repr(web)


def test_the_name_server_view_leaves_dashboards_aside(config: Config) -> None:
    # what speaks the native protocol alone (the TUI's emulator lookup) asks for name servers only
    with pytest.raises(Exception, match="no name server address"):
        resolve(namesrv=None, context="dash", timeout=None, config=config)
    assert resolve(namesrv="n:1", context="dash", timeout=None, config=config).timeout == 120.0
