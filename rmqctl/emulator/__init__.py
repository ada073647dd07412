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

The names are loaded on first use (PEP 562), so that importing one light module of the package
(the :mod:`~rmqctl.emulator.registry` of served emulators, which every command against a name
server consults) does not load the broker, the scenarios and the servers.

Must not import the CLI, textual or pyspark.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

#: where each public name lives
_HOMES = {
    "embedded_cluster": "embedded", "embedded_opened": "embedded",
    "Scenario": "scenario", "builtin_names": "scenario", "builtin_scenarios": "scenario",
    "load_scenario": "scenario", "parse_scenario": "scenario", "scale_scenario": "scenario",
    "Served": "serve", "ServeOptions": "serve", "running_emulator": "serve", "serve_emulator": "serve",
    "EmulatorServer": "server",
    "EmulatedCluster": "world", "run_scenario": "world",
}

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


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
