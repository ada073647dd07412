"""``rmqctl exporter``: the doctor's verdicts, lag and stuck queues as Prometheus metrics.

One long-running process over the watch service: :mod:`~rmqctl.exporter.rounds` takes rounds
(views, findings, rates, lag in time), :mod:`~rmqctl.exporter.stuck` judges stuck queues over the
recent rounds with the rules of ``analyze stuck``, :mod:`~rmqctl.exporter.metrics` exposes the
last complete round through ``prometheus_client`` collectors, and :mod:`~rmqctl.exporter.run`
serves ``/metrics``, writes snapshot files and handles signals. The metrics are documented in
``docs/metrics.md``, the alert rules in ``deploy/prometheus/rmqctl-rules.yml``.

Must not import the CLI, textual or pyspark.
"""

from __future__ import annotations

from rmqctl.exporter.metrics import MetricOptions, RoundCollector, exposition, registry_for
from rmqctl.exporter.rounds import BrokerState, GroupResult, RoundMaker, RoundResult
from rmqctl.exporter.run import ExporterOptions, ExporterResult, MetricsServer, parse_listen, run_exporter
from rmqctl.exporter.stuck import StuckJudge, Verdict

__all__ = [
    "BrokerState", "ExporterOptions", "ExporterResult", "GroupResult", "MetricOptions", "MetricsServer",
    "RoundCollector", "RoundMaker", "RoundResult", "StuckJudge", "Verdict", "exposition", "parse_listen",
    "registry_for", "run_exporter",
]
