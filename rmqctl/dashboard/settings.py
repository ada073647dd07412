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
never taken from the command line. ``--timeout`` bounds each request (default 30 s).

The precedence lives in :func:`rmqctl.config.resolve_connection`; this module gives the
dashboard's view of it. Must not import the CLI or httpx.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rmqctl.config import Config, resolve_connection


@dataclass(frozen=True)
class DashboardTarget:
    """Where one command's dashboard is and how to log in (``repr`` never shows the password)."""

    url: str
    username: str | None
    password: str | None = field(repr=False)
    timeout: float
    context: str | None


def resolve_dashboard(*, dashboard: str | None, namesrv: str | None, context: str | None,
                      timeout: float | None, config: Config | None = None) -> DashboardTarget | None:
    """The dashboard this command reads, or None when it reads name servers instead (decided by
    :func:`rmqctl.config.resolve_connection`, like everything else a command reads)."""
    resolved = resolve_connection(namesrv=namesrv, context=context, timeout=timeout, dashboard=dashboard,
                                  config=config)
    login = resolved.dashboard
    if login is None:
        return None
    return DashboardTarget(login.url, login.username, login.password, resolved.timeout, resolved.context)
