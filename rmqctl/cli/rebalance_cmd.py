"""``rmqctl rebalance simulate``: what-if allocation for a live group or for made-up inputs.

Parses options and renders; the simulation is :mod:`rmqctl.rebalance.simulate`'s. Reaches the
core through its public modules; must not import textual, pyspark or another command module.
"""

from __future__ import annotations

from typing import Annotated

import typer

from rmqctl import errors
from rmqctl.cli.common import Failures, Settings, cluster_options, execute
from rmqctl.cli.render import Table, View, emit
from rmqctl.rebalance.simulate import (
    Edits,
    SimulationResult,
    live_topic,
    queues_from_counts,
    simulate,
    simulate_group,
    synthetic_client_ids,
)
from rmqctl.report import rebalance as rebalance_report
from rmqctl.source import ClusterSource

app = typer.Typer(help="Queue allocation: what-if simulation.", no_args_is_help=True)


def parse_brokers(value: str) -> dict[str, int]:
    """``broker-a=8,broker-b=8`` → counts."""
    counts: dict[str, int] = {}
    for part in value.split(","):
        name, sep, count = part.strip().partition("=")
        if not sep or not name or not count.strip().isdigit():
            raise errors.UsageError(f"invalid --brokers entry {part!r}; expected NAME=COUNT")
        counts[name.strip()] = int(count)
    return counts


def parse_clients(value: str) -> list[str]:
    """``5`` → five synthetic ids; ``id1,id2`` → those ids (duplicates kept)."""
    value = value.strip()
    if value.isdigit():
        return synthetic_client_ids(int(value))
    if value.startswith("-") and value[1:].isdigit():
        raise errors.UsageError(f"--clients {value}: a count of clients cannot be negative")
    ids = [c.strip() for c in value.split(",") if c.strip()]
    if not ids:
        raise errors.UsageError("--clients needs a count or a comma-separated list of client ids")
    return ids


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def result_view(result: SimulationResult) -> View:
    doc = rebalance_report.simulation(result)
    rows = []
    for cid, queues in result.assignments.items():
        state = "not subscribed" if cid in result.not_subscribed else ("idle" if not queues else "")
        rows.append({"client_id": cid, "queues": len(queues),
                     "assigned": " ".join(f"{q.broker_name}/{q.queue_id}" for q in queues) or "-",
                     "note": state})
    n_clients = len(result.assignments)
    footer = [f"Strategy {result.strategy}, topic {result.topic}: {_n(n_clients, 'client')}, "
              f"{len(result.idle_clients)} idle, {_n(len(result.unassigned_queues), 'queue')} held by nobody"]
    if result.message_model == "BROADCASTING":
        footer.append("BROADCASTING group: every client holds every queue; no allocation strategy applies.")
    for cid in result.not_subscribed:
        share = len(result.unassigned_queues)
        footer.append(f"{cid} does not subscribe {result.topic}, yet RocketMQ counts it in the topic's allocation "
                      f"(every client of the group takes part), so the share it is given is held by nobody "
                      f"({_n(share, 'queue')} orphaned in all).")
    if result.unassigned_queues:
        footer.append("Held by nobody: " + " ".join(
            f"{q.broker_name}/{q.queue_id}" for q in result.unassigned_queues))
    if result.moves:
        footer.append(f"{_n(len(result.moves), 'queue')} would move (now → simulated):")
        footer += [f"  {move.describe()}" for move in result.moves]
    elif result.moves is not None:
        footer.append("Matches what the clients report now.")
    records = rebalance_report.simulation_rows(doc)
    columns: list[str | tuple[str, str]] = ["client_id", "queues", "assigned", ("note", "")]
    return View(doc, [Table(columns, rows, flexible=("assigned", "client_id"))], footer, records)


def _strategy_name(name: str | None, idcs: str | None) -> str | None:
    """Strategy names in any case; MACHINE_ROOM is meaningless without the consumers' rooms."""
    if name is None:
        return None
    upper = name.strip().upper()
    if upper == "MACHINE_ROOM" and not idcs:
        raise errors.UsageError("MACHINE_ROOM needs the consumers' machine rooms: pass --idcs room1,room2",
                                hint="without them every client would be idle")
    return upper


@app.command("simulate")
@cluster_options
def simulate_cmd(
    ctx: typer.Context,
    opts: Settings,
    group: Annotated[str | None, typer.Option("--group", "-g", help="Start from this live group.")] = None,
    topic: Annotated[str | None, typer.Option("--topic", "-t", help="Topic to allocate.")] = None,
    brokers: Annotated[str | None, typer.Option("--brokers", help="Queues per broker: broker-a=8,broker-b=8.")] = None,
    clients: Annotated[str | None, typer.Option("--clients", help="Client ids 'id1,id2' or a count.")] = None,
    add_client: Annotated[list[str] | None, typer.Option("--add-client", help="Add a client (repeatable).")] = None,
    remove_client: Annotated[list[str] | None, typer.Option(
        "--remove-client", help="Remove a client (repeatable).")] = None,
    queues: Annotated[int | None, typer.Option("--queues", min=0, help="Set every broker's queue count.")] = None,
    strategy: Annotated[str | None, typer.Option("--strategy", help="AVG, AVG_BY_CIRCLE, … (any case).")] = None,
    vnodes: Annotated[int | None, typer.Option("--vnodes", min=0, help="CONSISTENT_HASH virtual nodes.")] = None,
    idcs: Annotated[str | None, typer.Option("--idcs", help="MACHINE_ROOM: consumer rooms 'room1,room2'.")] = None,
    broker_room: Annotated[str | None, typer.Option(
        "--broker-room", help="MACHINE_ROOM_NEARBY-*: regex whose first group is a broker's room.")] = None,
    client_room: Annotated[str | None, typer.Option(
        "--client-room", help="MACHINE_ROOM_NEARBY-*: regex whose first group is a client's room.")] = None,
    pop_share: Annotated[int | None, typer.Option("--pop-share", help="POP-*: popShareQueueNum.")] = None,
) -> None:
    """Who would hold which queue: each client's queues, idle clients and queues held by nobody."""

    strategy_options = {
        "vnodes": vnodes,
        "consumer_idcs": [r.strip() for r in idcs.split(",") if r.strip()] if idcs else None,
        "broker_pattern": broker_room,
        "client_pattern": client_room,
        "pop_share_queue_num": pop_share,
    }

    def edits_for(broker_names: list[str]) -> Edits:
        counts = {b: queues for b in broker_names} if queues is not None else {}
        return Edits(tuple(add_client or ()), tuple(remove_client or ()), counts)

    strategy = _strategy_name(strategy, idcs)
    if group is None:
        if not topic or not brokers or not clients:
            raise errors.UsageError("without --group, give --topic, --brokers and --clients")
        counts = parse_brokers(brokers)
        result = simulate(strategy or "AVG", topic, queues_from_counts(topic, counts),
                          parse_clients(clients), edits=edits_for(list(counts)), strategy_options=strategy_options)
        emit(result_view(result), opts.output, options=opts.table_options)
        return

    async def run(source: ClusterSource) -> tuple[View, Failures]:
        view = await source.group_view(group)
        _strategy_name(strategy or view.strategy, idcs)
        chosen = live_topic(view, topic)
        extra = queues_from_counts(chosen, parse_brokers(brokers)) if brokers else []
        broker_names = sorted({q.broker_name for q in [*view.topic_queues.get(chosen, ()), *extra]})
        result = simulate_group(view, topic=chosen, strategy=strategy, extra_queues=extra,
                                client_ids=parse_clients(clients) if clients else None,
                                edits=edits_for(broker_names), strategy_options=strategy_options)
        return result_view(result), dict(view.errors)

    execute(opts, run)
