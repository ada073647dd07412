"""Topics left behind: the group keeps committed offsets for a topic no online client subscribes.

A client that subscribed a topic stops (or is redeployed without it) while the group's other
clients keep running. The broker then leaves the topic out of consume stats (its subscription
table no longer names it) and mqadmin ``consumerProgress`` shows nothing, yet its offsets stay in
the broker's offset table and new messages pile up behind them. The service reads such topics'
rows from the offset table and marks them ``subscribed=False``; this check reports them.

Must not do I/O, and must not import the CLI, the TUI or pyspark.
"""

from __future__ import annotations

from rmqctl.doctor.context import CheckContext, and_list, backlog_text, finding, n_of, queue_dict, queues_text
from rmqctl.model import Finding, QueueProgress


def abandoned_topic_backlog(ctx: CheckContext) -> list[Finding]:
    view = ctx.view
    by_topic: dict[str, list[QueueProgress]] = {}
    for p in view.progress:
        if not p.subscribed:
            by_topic.setdefault(p.queue.topic, []).append(p)
    clients = and_list(sorted(view.running_infos)) or "none"
    out = []
    for topic, rows in sorted(by_topic.items()):
        backlog = sum(p.diff for p in rows if p.known and p.diff > 0)
        unknown = sum(1 for p in rows if not p.known)
        waiting = backlog_text(backlog, unknown)
        queues = queues_text([p.queue for p in rows])
        nobody = f"which no online client of {view.group} subscribes"
        if backlog:
            more = f" (unknown for {n_of(unknown, 'more queue')})" if unknown else ""
            title = f"{n_of(backlog, 'message')} wait in {topic}{more}, {nobody}"
        elif unknown:
            title = f"An unknown backlog waits in {topic}, {nobody}"
        else:
            title = f"{view.group} keeps offsets for {topic}, {nobody}"
        consume = (f"consumes the {n_of(backlog, 'waiting message')}" if backlog
                   else "consumes what is sent to it from then on")
        out.append(finding(
            ctx, "ABANDONED_TOPIC_BACKLOG", "warning" if backlog > 0 or unknown else "info", title,
            f"{view.group} has committed offsets for {topic} ({queues}), but none of its online clients "
            f"({clients}) subscribes it: a client that did has stopped. The broker leaves the topic out "
            f"of consume stats (mqadmin consumerProgress shows nothing) and no client pulls it; "
            f"{waiting} wait there, and the backlog grows with every message sent to {topic}.",
            {"topic": topic, "backlog": backlog, "unknown_diff_queues": unknown,
             "online_clients": sorted(view.running_infos),
             "queues": [{**queue_dict(p.queue), "broker_offset": p.broker_offset if p.known else None,
                         "consumer_offset": p.consumer_offset if p.known else None, "diff": p.lag}
                        for p in rows]},
            f"If {view.group} should still consume {topic}, start a client of the group that subscribes "
            f"it (every client of a group must subscribe the same topics); it resumes from the "
            f"committed offsets and {consume}. If {topic} was "
            f"dropped on purpose, its offsets stay in the broker's offset table (consumerOffset.json) "
            f"and whichever client subscribes it later starts with this whole backlog.",
        ))
    return out
