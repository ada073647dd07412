"""The built-in RocketMQ emulator: broker semantics, simulated clients, scenarios, servers.

It reproduces the broker and client behaviours behind the classic consumer-group incidents (one subscription
table per group overwritten by heartbeats, tag filtering with another client's expression,
queues allocated to clients that never subscribed their topic, idle consumers) and speaks the
real remoting protocol, so rmqctl reads it through the same client path as a real cluster.

Layers, bottom up: ``clock`` (discrete-event scheduler); the pure broker state: ``store``
(topics, consume queues, offsets), ``groups`` (consumer groups, heartbeats, subscription tables:
the incident rules), ``pulls`` (pull processing, long polling), composed with the admin views by
``broker``, and ``namesrv``; ``client`` (simulated push consumers and producers), ``world`` (a
whole cluster and a scenario's timeline), ``report`` (run report and state documents of a
cluster), ``scenario`` (the TOML contract); ``handlers`` and ``broker_handlers`` (requests to
answers, with the body encoders of :mod:`rmqctl.remoting.bodies`), ``limits`` and ``server``
(asyncio remoting ports over the shared :mod:`rmqctl.remoting.endpoint`), ``control`` (HTTP
control API), ``embedded`` / ``serve`` (ways to run it).

Public API: :func:`load_scenario`, :func:`builtin_scenarios`, :func:`scale_scenario`,
:class:`EmulatedCluster` and :func:`run_scenario` (virtual clock; ``.report()`` is the run
report, see :mod:`~rmqctl.emulator.report`), :class:`EmulatorServer` (``start()`` / ``stop()``),
:func:`embedded_opened`, :func:`serve_emulator`.

Must not import the CLI, textual or pyspark.
"""

from __future__ import annotations

from rmqctl.emulator.embedded import embedded_cluster, embedded_opened
from rmqctl.emulator.scenario import (
    Scenario,
    builtin_names,
    builtin_scenarios,
    load_scenario,
    parse_scenario,
    scale_scenario,
)
from rmqctl.emulator.serve import Served, ServeOptions, running_emulator, serve_emulator
from rmqctl.emulator.server import EmulatorServer
from rmqctl.emulator.world import EmulatedCluster, run_scenario

__all__ = [
    "EmulatedCluster",
    "EmulatorServer",
    "Scenario",
    "ServeOptions",
    "Served",
    "builtin_names",
    "builtin_scenarios",
    "embedded_cluster",
    "embedded_opened",
    "load_scenario",
    "parse_scenario",
    "run_scenario",
    "running_emulator",
    "scale_scenario",
    "serve_emulator",
]
