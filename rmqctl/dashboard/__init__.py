"""Talk to rocketmq-dashboard's HTTP API (for clusters whose native ports are firewalled).

:mod:`rmqctl.dashboard.client` is the HTTP session (generation detection, login, envelope checks),
:mod:`rmqctl.dashboard.wire` decodes its replies into model objects, and
:mod:`rmqctl.dashboard.settings` resolves the login from a context or the environment. The read
protocol over them is :class:`rmqctl.backends.dashboard.DashboardBackend`; group views are
assembled above it by :mod:`rmqctl.service`, as for every back end.

Must not import the CLI, the TUI or pyspark. The package itself imports nothing: resolving a
command's target (``settings``) must not pay for httpx, whose import also loads its own CLI.
"""
