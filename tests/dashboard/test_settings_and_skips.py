"""Which dashboard and login a command uses; the doctor skipping checks whose data is unavailable."""

from __future__ import annotations

from pathlib import Path

import pytest

from rmqctl import errors
from rmqctl.config import Config
from rmqctl.dashboard.settings import resolve_dashboard
from rmqctl.doctor import run_checks, skipped_checks
from rmqctl.model import GroupView, parse_tag_expression

FLAT = """
current-context = "prod"
[contexts.prod]
dashboard = "http://dash-prod:8082"
dashboard_user = "ops"
dashboard_password = "pw-prod"
[contexts.native]
namesrv = "10.0.0.1:9876"
[contexts.staging.dashboard]
url = "http://dash-staging:8082"
user = "stage"
password = "pw-stage"
"""


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Config:
    path = tmp_path / "config.toml"
    path.write_text(FLAT)
    for var in ("NAMESRV_ADDR", "RMQCTL_DASHBOARD_USER", "RMQCTL_DASHBOARD_PASSWORD"):
        monkeypatch.delenv(var, raising=False)
    return Config.load(path)


def test_current_context_dashboard_flat_keys(config: Config) -> None:
    target = resolve_dashboard(dashboard=None, namesrv=None, context=None, timeout=None, config=config)
    assert target is not None
    assert (target.url, target.username, target.password, target.timeout) == (
        "http://dash-prod:8082", "ops", "pw-prod", 30.0)
    assert "pw-prod" not in repr(target)


def test_nested_table_and_env_override(config: Config, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RMQCTL_DASHBOARD_PASSWORD", "from-env")
    target = resolve_dashboard(dashboard=None, namesrv=None, context="staging", timeout=7, config=config)
    assert target is not None
    assert (target.url, target.username, target.password, target.timeout) == (
        "http://dash-staging:8082", "stage", "from-env", 7.0)


def test_namesrv_wins_without_dashboard_flag(config: Config) -> None:
    assert resolve_dashboard(dashboard=None, namesrv="h:9876", context=None, timeout=None, config=config) is None
    assert resolve_dashboard(dashboard=None, namesrv=None, context="native", timeout=None, config=config) is None


def test_flag_wins_and_takes_the_current_context_login(config: Config) -> None:
    target = resolve_dashboard(dashboard="http://other:8082", namesrv="h:9876", context=None, timeout=None,
                               config=config)
    assert target is not None and (target.url, target.username) == ("http://other:8082", "ops")


def test_config_view_masks_dashboard_passwords(config: Config) -> None:
    shown = config.redacted()["contexts"]
    assert shown["prod"]["dashboard_password"] == "******"
    assert shown["staging"]["dashboard"]["password"] == "******"


def test_unknown_key_in_dashboard_table(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('[contexts.x.dashboard]\nurl = "http://d"\npasswd = "oops"\n')
    with pytest.raises(errors.ConfigError, match="unknown key 'passwd'"):
        resolve_dashboard(dashboard=None, namesrv=None, context="x", timeout=None, config=Config.load(path))


def diverging_view(unavailable: dict[str, str]) -> GroupView:
    sub_a, sub_b = parse_tag_expression("T", "tagA"), parse_tag_expression("T", "tagB")
    return GroupView("G", (), {"broker-a": {"T": sub_a}, "broker-b": {"T": sub_b}}, {}, (),
                     message_model="CLUSTERING", unavailable=unavailable)


def test_doctor_skips_checks_whose_data_is_unavailable() -> None:
    assert "BROKER_SUBSCRIPTION_DIVERGENCE" in {f.code for f in run_checks(diverging_view({}))}
    view = diverging_view({"broker_subscriptions": "one broker only"})
    assert "BROKER_SUBSCRIPTION_DIVERGENCE" not in {f.code for f in run_checks(view)}
    assert skipped_checks(view) == {"BROKER_SUBSCRIPTION_DIVERGENCE": "needs broker_subscriptions: one broker only"}
