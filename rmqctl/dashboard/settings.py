"""Which dashboard a command reads, and with which login.

A context names its dashboard either flat or as a table (both forms are accepted)::

    [contexts.prod]
    dashboard = "http://dash.example:8082"
    dashboard_user = "ops"
    dashboard_password = "…"          # or RMQCTL_DASHBOARD_PASSWORD

    [contexts.staging.dashboard]
    url = "http://dash-staging:8082"
    user = "ops"
    password = "…"

The URL comes from ``--dashboard``, else from the context (``--context``, or the current context
when neither ``-n`` nor ``NAMESRV_ADDR`` names a name server). ``RMQCTL_DASHBOARD_USER`` /
``RMQCTL_DASHBOARD_PASSWORD`` override the context's login. The password is never printed and
never taken from the command line. ``--timeout`` bounds the whole command (default 30 s).

Must not import the CLI or httpx.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from rmqctl import errors
from rmqctl.config import Config

USER_ENV = "RMQCTL_DASHBOARD_USER"
PASSWORD_ENV = "RMQCTL_DASHBOARD_PASSWORD"
DEFAULT_TIMEOUT = 30.0
_TABLE_KEYS = {"url", "user", "password"}


@dataclass(frozen=True)
class DashboardTarget:
    """Where one command's dashboard is and how to log in (``repr`` never shows the password)."""

    url: str
    username: str | None
    password: str | None = field(repr=False)
    timeout: float
    context: str | None


def _dashboard_of(ctx: dict[str, Any], ctx_name: str) -> tuple[str | None, str | None, str | None]:
    value = ctx.get("dashboard")
    if isinstance(value, dict):
        unknown = set(value) - _TABLE_KEYS
        if unknown:
            raise errors.ConfigError(f"contexts.{ctx_name}.dashboard: unknown key {sorted(unknown)[0]!r}",
                                     hint="known keys: password, url, user")
        for key in _TABLE_KEYS & set(value):
            if not isinstance(value[key], str):
                raise errors.ConfigError(f"contexts.{ctx_name}.dashboard.{key} must be a string")
        return value.get("url"), value.get("user"), value.get("password")
    return value, ctx.get("dashboard_user"), ctx.get("dashboard_password")


def dashboard_credentials(ctx: dict[str, Any] | None = None, ctx_name: str = "") -> tuple[str | None, str | None]:
    """User and password: the environment first, then the context."""
    _, user, password = _dashboard_of(ctx or {}, ctx_name)
    return os.environ.get(USER_ENV) or user, os.environ.get(PASSWORD_ENV) or password


def resolve_dashboard(*, dashboard: str | None, namesrv: str | None, context: str | None,
                      timeout: float | None, config: Config | None = None) -> DashboardTarget | None:
    """The dashboard this command reads, or None when it reads name servers instead."""
    if not dashboard and namesrv:
        return None
    cfg = config or Config.load()
    ctx_name = context
    if not ctx_name and not os.environ.get("NAMESRV_ADDR") or (dashboard and not ctx_name):
        ctx_name = cfg.current_context
    ctx = cfg.context(ctx_name) if ctx_name else {}
    url, _, _ = _dashboard_of(ctx, ctx_name or "")
    if dashboard:
        url = dashboard
    elif not context and os.environ.get("NAMESRV_ADDR"):
        return None
    if not url:
        return None
    user, password = dashboard_credentials(ctx, ctx_name or "")
    effective = float(timeout if timeout is not None else ctx.get("timeout", DEFAULT_TIMEOUT))
    if effective <= 0:
        raise errors.UsageError("--timeout must be positive")
    return DashboardTarget(url, user, password, effective, ctx_name)
