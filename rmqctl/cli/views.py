"""Views several commands share: the emulator's run report and a doctor finding as text.

A command module builds its own tables; what two commands show alike lives here, so command
modules never import each other. Must not import textual or pyspark.
"""

from __future__ import annotations

import textwrap
from typing import Any

from rmqctl import report
from rmqctl.cli.render import Table, View
from rmqctl.model import Finding


def format_finding(f: Finding) -> list[str]:
    wrap = textwrap.TextWrapper(width=100, initial_indent="  ", subsequent_indent="  ")
    lines = [f"[{f.severity.upper()}] {f.code} ({f.group}): {f.title}"]
    lines += wrap.wrap(f.detail)
    lines += textwrap.wrap("fix: " + f.fix, width=100, initial_indent="  ", subsequent_indent="       ")
    return lines + [""]


def queues_text(queues: list[dict[str, Any]]) -> str:
    return " ".join(f"{q['topic']}@{q['broker']}/{q['queue_id']}" for q in queues) or "(idle)"


def tags_text(counts: dict[str, int]) -> str:
    return " ".join(f"{tag or '(no tag)'}={n}" for tag, n in counts.items()) or "0"


def report_view(doc: report.EmulatorRunDoc) -> View:
    """Tables for the ``emulator run`` document, from its rows."""
    records = report.emulator_run_rows(doc)
    rows = {r.kind: r.rows for r in records}
    consumer_rows = [
        {"client_id": r["client_id"], "group": r["group"], "received": tags_text(r["received_by_tag"]),
         "queues": queues_text(r["queues"]),
         "errors": ", ".join(f"{name} x{n}" for name, n in r["pull_errors"].items())}
        for r in rows["consumer"]
    ]
    tag_rows = [{**r, "tag": r["tag"] or "(no tag)"} for r in rows["tag"]]
    sub_rows = rows["broker_subscription"]
    tables = [
        Table(["client_id", "group", "received", ("queues", "QUEUES_HELD"), ("errors", "PULL_ERRORS")],
              consumer_rows, title=f"Scenario {doc['scenario']} at {doc['at']:g}s",
              flexible=("queues", "errors", "client_id")),
        Table(["tag", "produced", "lost"], tag_rows, title="Messages"),
        Table(["broker", "group", "topic", "expression", "sub_version"], sub_rows,
              title="Broker-stored subscriptions", flexible=("expression",)),
    ]
    lost = sum(doc["lost_by_tag"].values())
    footer = ([f"{lost} message{'' if lost == 1 else 's'} lost (wanted by a group, never received by it)"]
              if lost else [])
    return View(doc, tables, footer, records)
