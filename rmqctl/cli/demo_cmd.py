"""``rmqctl demo``: a seed incident on the embedded emulator, end to end.

In a terminal (stdin and stdout both TTYs) it opens the live dashboard on the scenario, running
on the real-time clock sped up so the incident unfolds in front of the user; otherwise (or with
``--no-tui``) it runs a scenario on the virtual clock, serves it on loopback and reads it back through the normal
client path, then shows what happened to the messages, the group and assignment views, and the
doctor's verdict. Must not import textual or pyspark at module level (the dashboard is
loaded inside the command).
"""

from __future__ import annotations

import asyncio
import sys
from typing import Annotated, Any

import typer

from rmqctl import errors, report
from rmqctl.cli.common import OutputOpt, fail, settings
from rmqctl.cli.doctor_cmd import format_finding
from rmqctl.cli.emulator_cmd import report_view
from rmqctl.cli.render import OutputFormat, Table, View, emit
from rmqctl.doctor import run_checks
from rmqctl.model import Finding
from rmqctl.remoting.admin import AdminClient
from rmqctl.source import RemotingSource

DEFAULT_SCENARIO = "tag-overwrite-4q"
#: how much faster than real time the demo's emulator runs in the dashboard
DEMO_SPEED = 2.0
#: seconds between the dashboard's polls in the demo
DEMO_INTERVAL = 1.0


async def demo_document(scenario: str) -> dict[str, Any]:
    """The run report plus, per group, the group/assignment views and the findings."""
    from rmqctl.emulator.embedded import embedded_cluster

    async with embedded_cluster(scenario) as (cluster, server):
        source = RemotingSource(AdminClient([server.namesrv_addr]))
        try:
            groups: dict[str, Any] = {}
            for group in (await source.groups()).value:
                view = await source.group_view(group)
                groups[group] = {
                    "show": report.group_show(view),
                    "assignment": report.group_assignment(view),
                    "findings": [f.as_dict() for f in run_checks(view)],
                }
            return {"scenario": cluster.report(), "description": cluster.scenario.description,
                    "namesrv": server.namesrv_addr, "groups": groups}
        finally:
            await source.close()


def _label(queue: dict[str, Any]) -> str:
    return f"{queue['topic']}@{queue['broker']}/{queue['queue_id']}"


def demo_view(doc: dict[str, Any]) -> View:
    run = report_view(doc["scenario"])
    tables = list(run.tables)
    if tables and doc.get("description"):
        tables[0].title = f"{doc['description']}\n\n{tables[0].title}"
    footer = list(run.footer)
    for group, part in doc["groups"].items():
        show = part["show"]
        tables.append(Table(
            [("topic", "TOPIC"), ("source", "SOURCE"), ("expression", "EXPRESSION"), ("sub_version", "SUB_VERSION")],
            [{"topic": s["topic"], "source": f"broker:{b}", "expression": s["expression"],
              "sub_version": s["sub_version"]} for b, subs in show["broker_subscriptions"].items() for s in subs]
            + [{"topic": s["topic"], "source": f"client:{c}", "expression": s["expression"],
                "sub_version": s["sub_version"]} for c, subs in show["client_subscriptions"].items() for s in subs],
            title=f"Group {group}: what the broker stores vs what each client asked for"))
        rows = [{"client_id": cid, "queues": " ".join(map(_label, qs)) or "(idle)"}
                for cid, qs in part["assignment"]["assignments"].items()]
        if part["assignment"]["unassigned"]:
            rows.append({"client_id": "(nobody)",
                         "queues": " ".join(map(_label, part["assignment"]["unassigned"]))})
        tables.append(Table([("client_id", "CLIENT_ID"), ("queues", "QUEUES")], rows,
                            title=f"Group {group}: queue assignment"))
        findings = [Finding(**f) for f in part["findings"]]
        footer.append(f"Doctor for {group}: {len(findings)} finding(s)")
        for finding in findings:
            footer.extend(format_finding(finding))
    footer.append(f"Try it yourself: rmqctl --emulator {doc['scenario']['scenario']} doctor --all")
    return View(doc, tables, footer)


def demo(
    ctx: typer.Context,
    scenario: Annotated[str, typer.Option("--scenario", "-s", help="Built-in scenario or TOML file.")]
    = DEFAULT_SCENARIO,
    output: OutputOpt = None,
    no_tui: Annotated[bool, typer.Option("--no-tui", help="Print the report instead of opening the dashboard.")]
    = False,
) -> None:
    """Watch a consumer-group incident happen on the built-in emulator, and its diagnosis."""
    opts = settings(ctx, output=output)
    if not no_tui and opts.output is OutputFormat.table and sys.stdin.isatty() and sys.stdout.isatty():
        _demo_dashboard(scenario, opts.debug)
        return
    try:
        doc = asyncio.run(demo_document(scenario))
    except errors.RmqctlError as exc:
        fail(exc, opts.debug)
    emit(demo_view(doc), opts.output)


def _demo_dashboard(scenario: str, debug: bool) -> None:
    """The scenario live in the dashboard, on its first group, with the emulator controls."""
    from rmqctl.cli.tui_cmd import run_dashboard
    from rmqctl.config import Config
    from rmqctl.connect import Target
    from rmqctl.emulator.scenario import load_scenario

    try:
        spec = load_scenario(scenario)
        groups = [c.group for c in spec.consumers] or [g.name for g in spec.groups]
        keys = Config.load().tui_keys
        asyncio.run(run_dashboard(Target(emulator=scenario, live=True, speed=DEMO_SPEED),
                                  group=groups[0] if groups else None, interval=DEMO_INTERVAL, keys=keys))
    except errors.RmqctlError as exc:
        fail(exc, debug)
