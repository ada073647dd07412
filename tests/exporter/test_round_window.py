"""How many requests a round has out at once over the native protocol: the admin client's window,
however many groups the round reads at the same time (the exporter's ``--concurrency``, 64 by
default), against a served emulator on loopback."""

from __future__ import annotations

from typing import Any

import pytest
import typer

from rmqctl.backends.remoting import RemotingBackend
from rmqctl.cli.app import app
from rmqctl.emulator.scenario import load_scenario
from rmqctl.emulator.serve import ServeOptions, running_emulator
from rmqctl.exporter import ExporterOptions, RoundMaker
from rmqctl.exporter.run import GROUP_CONCURRENCY
from rmqctl.remoting import endpoint
from rmqctl.remoting.admin import DEFAULT_CONCURRENCY, AdminClient
from rmqctl.service import ClusterService
from tests.fake_source import FakeClock

GROUPS = 120


async def test_a_round_of_64_groups_at_a_time_keeps_the_admin_clients_window(monkeypatch: pytest.MonkeyPatch) -> None:
    admin: AdminClient | None = None
    most = [0]
    register = endpoint.Endpoint._register

    def counted(self: endpoint.Endpoint, cmd):  # type: ignore[no-untyped-def]
        registered = register(self, cmd)
        if admin is not None:  # the admin client's own connections (the emulator's clients have theirs)
            ours = [c._endpoint for c in admin._pool._conns.values() if c._endpoint is not None]
            most[0] = max(most[0], sum(e.pending for e in ours))
        return registered

    monkeypatch.setattr(endpoint.Endpoint, "_register", counted)
    scenario = load_scenario(f"scale:{GROUPS}x4x2x{GROUPS}")
    async with running_emulator(scenario, ServeOptions(clock="virtual", at=5)) as (served, _cluster):
        admin = AdminClient([served.namesrv], timeout=10)
        source = ClusterService(RemotingBackend(admin), FakeClock())
        try:
            concurrency = ExporterOptions().concurrency
            assert concurrency == 64
            result = await RoundMaker(source, concurrency=concurrency).take()
        finally:
            await source.close()
    assert len(result.groups) >= GROUPS and not result.failed_groups
    # the round did keep requests out side by side, and never more than the window
    assert DEFAULT_CONCURRENCY // 2 < most[0] <= DEFAULT_CONCURRENCY


def test_the_clis_concurrency_default_is_the_exporters() -> None:
    # the CLI writes its default as a literal (it does not import the exporter at start-up)
    root: Any = typer.main.get_command(app)
    command = root.get_command(root.context_class(root), "exporter")
    (option,) = [p for p in command.params if p.name == "concurrency"]
    assert option.default == GROUP_CONCURRENCY
