"""Client checks: processes that share one client id, and clients of one group set up differently.

Every client computes its own share of the queues from the client list the broker gives it, with
its own strategy and message model; two processes with one id take the same share, and clients
that differ in settings compute shares that overlap or leave gaps.

Must not do I/O, and must not import the CLI, the TUI or pyspark.
"""

from __future__ import annotations

from rmqctl.doctor.context import CheckContext, and_list, are, finding, n_of
from rmqctl.model import Finding


def duplicate_client_id(ctx: CheckContext) -> list[Finding]:
    dups = {cid: list(addrs) for cid, addrs in ctx.view.duplicate_clients.items()}
    if not dups:
        return []
    return [finding(
        ctx, "DUPLICATE_CLIENT_ID", "error",
        f"{n_of(len(dups), 'client id')} of {ctx.view.group} {are(len(dups))} used by more than one process",
        "; ".join(f"{cid} is used by {n_of(len(addrs), 'connection')} ({and_list(sorted(addrs))})"
                  for cid, addrs in sorted(dups.items()))
        + ". Each process with that id computes the same position in the allocation, so they consume "
        "the same queues twice while another share is held by nobody.",
        {"clients": dups},
        f"Give every process of {ctx.view.group} a unique instanceName (setInstanceName on the consumer, "
        "or -Drocketmq.client.name), or upgrade clients older than 4.9, which build ids from IP and PID "
        "only; mqadmin consumerConnection -g " + ctx.view.group + " lists each connection's address.",
    )]


def mixed_consumer_settings(ctx: CheckContext) -> list[Finding]:
    infos = ctx.view.running_infos
    if len(infos) < 2:
        return []
    settings: dict[str, dict[str, object]] = {
        "message_model": {c: i.message_model for c, i in infos.items()},
        "consume_type": {c: i.consume_type for c, i in infos.items()},
        "strategy": {c: i.strategy for c, i in infos.items()},
        "consume_orderly": {c: i.consume_orderly for c, i in infos.items()},
    }
    differing = {k: dict(sorted(v.items())) for k, v in settings.items() if len(set(v.values())) > 1}
    if not differing:
        return []
    return [finding(
        ctx, "MIXED_CONSUMER_SETTINGS", "warning",
        f"Clients of {ctx.view.group} run with different settings",
        "Clients of one group differ in "
        + "; ".join(f"{k} ({and_list([f'{c}: {_setting(v)}' for c, v in by_client.items()])})"
                    for k, by_client in differing.items())
        + ". Each client computes its share with its own strategy and model, so their allocations "
        "overlap or leave gaps, and the broker keeps only the last heartbeat's model and type for "
        "the group.",
        differing,
        "Configure every client of the group identically: "
        + "; ".join(_FIXES[k] for k in differing) + ".",
    )]


#: how each setting is made the same on every client, in the Java client's own terms
_FIXES = {
    "message_model": "the same setMessageModel (CLUSTERING or BROADCASTING)",
    "consume_type": "one kind of consumer (DefaultMQPushConsumer, or a pull / lite-pull consumer)",
    "strategy": "the same setAllocateMessageQueueStrategy",
    "consume_orderly": "the same listener kind (MessageListenerOrderly or MessageListenerConcurrently)",
}


def _setting(value: object) -> str:
    return "not reported" if value is None else str(value).lower() if isinstance(value, bool) else str(value)


def mixed_consumption(ctx: CheckContext) -> list[Finding]:
    """Remoting clients that divide the queues and gRPC clients that pop from them, in one group."""
    view = ctx.view
    if view.consumption != "mixed":
        return []
    popping = sorted(c.client_id for c in view.connections if c.sdk == "grpc")
    dividing = sorted(c.client_id for c in view.connections if c.sdk != "grpc")
    return [finding(
        ctx, "MIXED_CONSUMPTION", "error",
        f"{view.group} is consumed by remoting clients and gRPC (POP) clients at once",
        f"{n_of(len(dividing), 'remoting client')} ({and_list(dividing)}) divide the queues among "
        f"themselves and commit what they consumed, while {n_of(len(popping), 'gRPC client')} "
        f"({and_list(popping)}) pop from the same queues through a "
        "proxy, which moves the same consumer offsets when it hands messages out. Each kind overwrites "
        "the other's progress: messages are delivered twice, and messages one kind filters out by "
        "tag are passed over for the other as well — they are never delivered.",
        {"remoting_clients": dividing, "grpc_clients": popping},
        "Give the gRPC clients and the remoting clients consumer groups of their own.",
    )]
