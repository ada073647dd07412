"""Read a cluster through rocketmq-dashboard's HTTP API (for clusters whose native ports are firewalled).

:func:`rmqctl.dashboard.source.open_dashboard_source` is the one entry point front ends use; it yields a
:class:`DashboardSource`, a :class:`~rmqctl.source.ClusterSource` returning model objects only.
:func:`rmqctl.dashboard.settings.dashboard_credentials` resolves the login from a context or the environment.

Must not import the CLI, the TUI or pyspark. The package itself imports nothing: resolving a
command's target (``settings``) must not pay for httpx, whose import also loads its own CLI.
"""

