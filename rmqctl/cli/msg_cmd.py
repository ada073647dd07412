"""``rmqctl msg …``: one message looked up by id, key or position, and what became of it.

Reaches the core through its public modules; must not import textual, pyspark or another
command module.
"""

from __future__ import annotations

from typing import Annotated

import typer

from rmqctl import errors
from rmqctl.cli.common import Failures, Settings, cluster_options, execute
from rmqctl.cli.durations import DURATION, duration_parser
from rmqctl.cli.render import Table, View
from rmqctl.model import Message, MessageRef, QueueOwnership
from rmqctl.source import ClusterSource

app = typer.Typer(help="Look messages up (by id, key or queue offset) and explain what became of them.",
                  no_args_is_help=True)

WhatArg = Annotated[str, typer.Argument(
    metavar="ID|TOPIC", show_default=False,
    help="A message id (the broker's offset id, or the producer's unique key with --topic); with --key, "
         "or with --queue and --offset, the topic.")]
TopicOpt = Annotated[str | None, typer.Option("--topic", "-t", show_default=False,
                                              help="The topic (a unique key is found through its index).")]
KeyOpt = Annotated[str | None, typer.Option("--key", "-k", show_default=False,
                                            help="Find messages by one of their keys (KEYS), through the index.")]
QueueOpt = Annotated[str | None, typer.Option("--queue", "-q", show_default=False, metavar="BROKER/ID",
                                              help="With --offset: the queue, as broker/queue-id.")]
OffsetOpt = Annotated[int | None, typer.Option("--offset", show_default=False, min=0,
                                               help="With --queue: the message's offset in its queue.")]
BodyOpt = Annotated[bool, typer.Option("--body", help="Print each message's whole body.")]


def parse_queue(text: str) -> tuple[str, int]:
    """``broker-a/3`` → ``("broker-a", 3)``."""
    broker, sep, queue_id = text.rpartition("/")
    if not sep or not broker or not queue_id.isdigit():
        raise errors.UsageError(f"--queue {text!r} is not BROKER/QUEUE_ID", hint="for example: --queue broker-a/3")
    return broker, int(queue_id)


def message_ref(what: str, *, topic: str | None, key: str | None, queue: str | None,
                offset: int | None) -> MessageRef:
    """What ``ID|TOPIC`` and the options name, checked."""
    if (queue is None) != (offset is None):
        raise errors.UsageError("--queue and --offset go together", hint="for example: --queue broker-a/3 --offset 42")
    if queue is not None:
        if key is not None:
            raise errors.UsageError("name a message by --key or by --queue/--offset, not both")
        broker, queue_id = parse_queue(queue)
        return MessageRef(topic=topic or what, broker=broker, queue_id=queue_id, offset=offset)
    if key is not None:
        return MessageRef(key=key, topic=topic or what)
    return MessageRef(msg_id=what.strip(), topic=topic)


@app.command("show")
@cluster_options
def show(
    ctx: typer.Context,
    opts: Settings,
    what: WhatArg,
    topic: TopicOpt = None,
    key: KeyOpt = None,
    queue: QueueOpt = None,
    offset: OffsetOpt = None,
    body: BodyOpt = False,
) -> None:
    """One message with its times, tags, keys and properties (like mqadmin queryMsgById / ByKey)."""
    from rmqctl.report.message import detail_rows, message_rows, message_show

    ref = message_ref(what, topic=topic, key=key, queue=queue, offset=offset)

    async def run(source: ClusterSource) -> tuple[View, Failures]:
        found = await source.find_messages(ref)
        doc = message_show(ref, found.value, found.errors, body=body)
        tables = [Table(["field", "value"], detail_rows(m, body=body), flexible=("value",),
                        title=f"{m['topic']} {m['broker']}/{m['queue_id']} offset {m['queue_offset']}")
                  for m in doc["messages"]]
        return View(doc, tables, records=message_rows(doc)), dict(found.errors)

    execute(opts, run)


@app.command("explain")
@cluster_options
def explain(
    ctx: typer.Context,
    opts: Settings,
    what: WhatArg,
    group: Annotated[list[str] | None, typer.Option(
        "--group", "-g", show_default=False,
        help="The consumer group (repeat for several; default: every group that consumes the topic).")] = None,
    topic: TopicOpt = None,
    key: KeyOpt = None,
    queue: QueueOpt = None,
    offset: OffsetOpt = None,
    snapshots: Annotated[str | None, typer.Option(
        "--snapshots", show_default=False, metavar="DIR",
        help="Recorded offset snapshots: who held the queue and which expression the broker held when "
             "the message was consumed (default: the live assignment).")] = None,
) -> None:
    """Why a group did or did not get a message: consumed, waiting, filtered, dropped, never pulled,
    retried, dead-lettered."""
    from rmqctl.doctor.explaining import OwnershipLookup
    from rmqctl.doctor.explaining import explain as explain_messages
    from rmqctl.report.message import explanation_rows, message_explain

    ref = message_ref(what, topic=topic, key=key, queue=queue, offset=offset)
    lookup: OwnershipLookup | None = None
    if snapshots is not None:
        from rmqctl.snapshot.history import judged_ownership, snapshot_files

        snapshot_files(snapshots)  # a directory without snapshots is a mistake, before any read

        def lookup(group_name: str, message: Message) -> QueueOwnership | None:
            return judged_ownership(snapshots, group_name, message.queue, message.queue_offset,
                                    message.store_timestamp)

    async def run(source: ClusterSource) -> tuple[View, Failures]:
        result = await explain_messages(source, ref, group or (), ownership=lookup)
        doc = message_explain(ref, result.groups, [(f.message, f.explanations) for f in result.fates],
                              result.errors)
        tables = []
        for m in doc["messages"]:
            rows = [{"group": e["group"], "verdict": e["verdict"],
                     "owner": e["evidence"].get("owner"), "from": e["ownership_from"], "summary": e["summary"]}
                    for e in m["explanations"]]
            title = (f"{m['msg_id']}  {m['topic']} {m['broker']}/{m['queue_id']} offset {m['queue_offset']}"
                     f"  tags {m['tags'] or '-'}")
            tables.append(Table(["group", "verdict", "owner", "from", "summary"], rows,
                                flexible=("summary", "owner"), title=title))
        footer = [] if any(m["explanations"] for m in doc["messages"]) else [
            "No consumer group consumes this topic."]
        return View(doc, tables, footer, explanation_rows(doc)), dict(result.errors)

    execute(opts, run)


@app.command("browse")
@cluster_options
def browse(
    ctx: typer.Context,
    opts: Settings,
    topic: Annotated[str, typer.Argument(help="Topic name.", show_default=False)],
    queue: Annotated[str | None, typer.Option("--queue", "-q", show_default=False, metavar="BROKER/ID",
                                              help="Only this queue (default: every queue of the topic).")] = None,
    from_offset: Annotated[int | None, typer.Option("--from", min=0, show_default=False,
                                                    help="Read each queue from this offset.")] = None,
    since: Annotated[float | None, typer.Option(
        "--since", parser=duration_parser(), metavar=DURATION, show_default=False,
        help="Read each queue from the first message stored this long ago (30s, 5m, 1h …).")] = None,
    limit: Annotated[int, typer.Option("--limit", "-l", min=1, max=1000,
                                       help="Messages read per queue (default: the last 32 of each).")] = 32,
    tag: Annotated[str | None, typer.Option("--tag", show_default=False, metavar="EXPR",
                                            help="Only messages a tag expression (tag1||tag2, *) selects on the "
                                                 "broker (tag hash codes).")] = None,
    sql: Annotated[str | None, typer.Option("--sql", show_default=False, metavar="EXPR",
                                            help="Only messages a SQL92 expression over their properties selects, "
                                                 "as the broker evaluates it.")] = None,
    body: BodyOpt = False,
) -> None:
    """Read messages of a topic back, read-only (nothing is committed), filtered like the broker."""
    from rmqctl.doctor.explain import broker_passes, browse_filter
    from rmqctl.model import MessageQueue
    from rmqctl.report.message import BROWSE_COLUMNS, message_browse, message_rows

    if from_offset is not None and since is not None:
        raise errors.UsageError("read from --from or from --since, not both")
    selector = browse_filter(topic, tag=tag, sql=sql)
    mq = None
    if queue is not None:
        broker, queue_id = parse_queue(queue)
        mq = MessageQueue(topic, broker, queue_id)

    async def run(source: ClusterSource) -> tuple[View, Failures]:
        since_ms = None if since is None else int((source.clock.now() - since) * 1000)
        read = await source.browse(topic, queue=mq, from_offset=from_offset, since_ms=since_ms, limit=limit)
        kept = [m for m in read.value if selector is None or broker_passes(selector, m) is True]
        doc = message_browse(topic, len(read.value), kept, read.errors, body=body,
                             expression=selector.expression if selector else None,
                             expression_type=selector.expression_type if selector else None)
        footer = [f"{len(kept)} of {len(read.value)} message(s) read" + (" pass the filter" if selector else "")]
        return (View(doc, [Table(list(BROWSE_COLUMNS), doc["messages"], flexible=("body_preview", "keys"))], footer,
                     message_rows(doc)), dict(read.errors))

    execute(opts, run)
