"""``rmqctl demo``: a consumer-group incident on the embedded emulator, end to end.

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
from collections.abc import Mapping
from typing import Annotated, Any

import typer

from rmqctl import report
from rmqctl.cli.common import OutputOpt, settings
from rmqctl.cli.render import OutputFormat, Table, View, emit
from rmqctl.cli.views import format_finding, report_view
from rmqctl.connect import Target, open_source
from rmqctl.doctor import run_checks, sample_retry_copies
from rmqctl.model import Finding

DEFAULT_SCENARIO = "tag-overwrite-4q"
#: how much faster than real time the demo's emulator runs in the dashboard
DEMO_SPEED = 2.0
#: seconds between the dashboard's polls in the demo
DEMO_INTERVAL = 1.0


async def demo_document(scenario: str) -> report.DemoDoc:
    """The run report plus, per group, the group/assignment views and the findings."""
    async with open_source(Target(emulator=scenario)) as opened:
        source, cluster = opened.source, opened.cluster
        groups: dict[str, report.DemoGroupDoc] = {}
        for group in (await source.groups()).value:
            # a POP group's redeliveries are told by the copies in its retry topics, read back
            view = await sample_retry_copies(source, await source.group_view(group))
            findings = run_checks(view)
            groups[group] = report.DemoGroupDoc(
                show=report.group_show(view, findings),
                assignment=report.group_assignment(view),
                findings=[report.finding_doc(f) for f in findings],
            )
        assert cluster is not None  # an emulator target always has its cluster
        return report.DemoDoc(scenario=report.emulator_run(cluster.report()),
                              description=cluster.scenario.description,
                              namesrv=cluster.namesrv_addr, groups=groups, errors={})


def _label(queue: Mapping[str, Any]) -> str:
    return f"{queue['topic']}@{queue['broker']}/{queue['queue_id']}"


def demo_view(doc: report.DemoDoc) -> View:
    run = report_view(doc["scenario"])
    tables = list(run.tables)
    if tables and doc.get("description"):
        tables[0].title = f"{doc['description']}\n\n{tables[0].title}"
    footer = list(run.footer)
    for group, part in doc["groups"].items():
        show = part["show"]
        tables.append(Table(
            ["topic", "source", "expression", "sub_version", ("mark", "")],
            [{**s, "expression": s["expression"] if s["subscribed"] else "(not subscribed)",
              "mark": "DIFFERS" if s["differs"] else ""} for s in show["subscriptions"]],
            title=f"Group {group}: what the broker stores vs what each client asked for",
            flexible=("expression", "source")))
        rows = [{"client_id": cid, "queues": " ".join(map(_label, qs)) or "(idle)"}
                for cid, qs in part["assignment"]["assignments"].items()]
        if part["assignment"]["unassigned_queues"]:
            rows.append({"client_id": "(nobody)",
                         "queues": " ".join(map(_label, part["assignment"]["unassigned_queues"]))})
        tables.append(Table(["client_id", "queues"], rows, title=f"Group {group}: queue assignment",
                            flexible=("queues",)))
        findings = [Finding(**f) for f in part["findings"]]
        count = len(findings)
        footer.append(f"Doctor for {group}: {'no' if not count else count} finding{'' if count == 1 else 's'}")
        for finding in findings:
            footer.extend(format_finding(finding))
    footer.append(f"Try it yourself: rmqctl --emulator {doc['scenario']['scenario']} doctor --all")
    return View(doc, tables, footer, report.demo_rows(doc))


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
        _demo_dashboard(scenario)
        return
    doc = asyncio.run(demo_document(scenario))
    emit(demo_view(doc), opts.output, options=opts.table_options)


def _demo_dashboard(scenario: str) -> None:
    """The scenario live in the dashboard, on its first group, with the emulator controls."""
    from rmqctl.config import Config
    from rmqctl.emulator.scenario import load_scenario
    from tui.run import run_dashboard

    spec = load_scenario(scenario)
    groups = [c.group for c in spec.consumers] or [g.name for g in spec.groups]
    keys = Config.load().tui_keys
    asyncio.run(run_dashboard(Target(emulator=scenario, live=True, speed=DEMO_SPEED),
                              group=groups[0] if groups else None, interval=DEMO_INTERVAL, keys=keys))
