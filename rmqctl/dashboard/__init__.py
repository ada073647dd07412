"""Read a cluster through rocketmq-dashboard's HTTP API (for clusters whose native ports are firewalled).

:func:`open_dashboard_source` is the one entry point front ends use; it yields a
:class:`DashboardSource`, a :class:`~rmqctl.source.ClusterSource` returning model objects only.
:func:`dashboard_credentials` resolves the login from a context or the environment.

Must not import the CLI, the TUI or pyspark.
"""

from __future__ import annotations

from rmqctl.dashboard.settings import DashboardTarget, dashboard_credentials, resolve_dashboard
from rmqctl.dashboard.source import DashboardSource, open_dashboard_source

__all__ = ["DashboardSource", "DashboardTarget", "dashboard_credentials", "open_dashboard_source",
           "resolve_dashboard"]
