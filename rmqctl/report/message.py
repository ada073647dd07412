"""The documents of ``msg show``, ``msg browse`` and ``msg explain``: one JSON shape of a stored
message, and of a verdict on what became of it.

A message's body is data the operator may not be allowed to print in a shared terminal: the
documents carry its size and a short preview, and the whole body only when asked (``--body``).

Must not import the CLI, the TUI, the doctor or pyspark.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping
from typing import Any, TypedDict

from rmqctl.errors import RmqctlError
from rmqctl.model import Explanation, Message, MessageRef, format_millis
from rmqctl.report.common import Errors, RowSet, error_rows, errors_doc

#: bytes of the body shown when the body itself is not asked for
PREVIEW_BYTES = 32

MESSAGE_COLUMNS = ("msg_id", "topic", "broker", "queue_id", "queue_offset", "tags", "keys", "store_ts",
                   "born_ts", "reconsume_times", "body_size")


def body_text(body: bytes) -> str:
    """Bytes as text for people: UTF-8 where it decodes, ``\\xNN`` where it does not."""
    return body.decode("utf-8", "backslashreplace")


def message_doc(message: Message, *, body: bool = False) -> dict[str, Any]:
    """One stored message as every document shows it; ``body`` adds the whole body (as text, and
    as base64 for bytes that are not text)."""
    doc: dict[str, Any] = {
        "msg_id": message.msg_id,
        "offset_msg_id": message.offset_msg_id,
        "unique_key": message.unique_key,
        "topic": message.queue.topic,
        "broker": message.queue.broker_name,
        "queue_id": message.queue.queue_id,
        "queue_offset": message.queue_offset,
        "physical_offset": message.physical_offset,
        "tags": message.tags,
        "keys": list(message.keys),
        "store_ts": message.store_timestamp,
        "born_ts": message.born_timestamp,
        "store_host": message.store_host,
        "born_host": message.born_host,
        "reconsume_times": message.reconsume_times,
        "origin_topic": message.origin_topic,
        "properties": dict(sorted(message.properties.items())),
        "body_size": message.body_size,
        "body_preview": body_text(message.body[:PREVIEW_BYTES]),
    }
    if body:
        doc["body"] = body_text(message.body)
        doc["body_base64"] = base64.b64encode(message.body).decode("ascii")
    return doc


def query_doc(ref: MessageRef) -> dict[str, Any]:
    """What the look-up named (only what was given)."""
    out: dict[str, Any] = {"msg_id": ref.msg_id, "key": ref.key, "topic": ref.topic, "broker": ref.broker,
                           "queue_id": ref.queue_id, "offset": ref.offset}
    return {k: v for k, v in out.items() if v is not None}


class MessageShowDoc(TypedDict):
    query: dict[str, Any]
    messages: list[dict[str, Any]]
    errors: Errors


def message_show(ref: MessageRef, messages: Iterable[Message], errors: Mapping[str, RmqctlError], *,
                 body: bool = False) -> MessageShowDoc:
    """``msg show``: every message the look-up found (an id or key can name several: a producer
    that sent the same message twice, or one key on many messages)."""
    return MessageShowDoc(query=query_doc(ref), messages=[message_doc(m, body=body) for m in messages],
                          errors=errors_doc(errors))


def message_rows(doc: Mapping[str, Any]) -> list[RowSet]:
    return [RowSet("message", MESSAGE_COLUMNS, doc["messages"]), *error_rows(doc)]


#: the fields of a message's table, in order (``properties`` and the body follow)
DETAIL_FIELDS = ("msg_id", "offset_msg_id", "topic", "broker", "queue_id", "queue_offset", "tags", "keys",
                 "store_ts", "born_ts", "store_host", "born_host", "reconsume_times", "origin_topic",
                 "body_size", "body_preview")


def detail_rows(doc: Mapping[str, Any], *, body: bool = False) -> list[dict[str, Any]]:
    """One message document as ``field``/``value`` rows for a table (properties one row each;
    the body only when asked for)."""
    rows: list[dict[str, Any]] = [
        {"field": f, "value": format_millis(doc.get(f)) if f.endswith("_ts") else doc.get(f)} for f in DETAIL_FIELDS]
    rows.extend({"field": f"property {k}", "value": v} for k, v in doc.get("properties", {}).items())
    if body and "body" in doc:
        rows.append({"field": "body", "value": doc["body"]})
    return rows


class MessageBrowseDoc(TypedDict):
    topic: str
    filter: dict[str, Any] | None
    read: int
    messages: list[dict[str, Any]]
    errors: Errors


def message_browse(topic: str, read: int, messages: Iterable[Message], errors: Mapping[str, RmqctlError], *,
                   expression: str | None = None, expression_type: str | None = None,
                   body: bool = False) -> MessageBrowseDoc:
    """``msg browse``: the messages read that pass the filter (``read`` counts all read)."""
    flt = None if expression is None else {"expression": expression, "expression_type": expression_type}
    return MessageBrowseDoc(topic=topic, filter=flt, read=read, messages=[message_doc(m, body=body) for m in messages],
                            errors=errors_doc(errors))


BROWSE_COLUMNS = ("msg_id", "broker", "queue_id", "queue_offset", "tags", "keys", "store_ts", "reconsume_times",
                  "body_size", "body_preview")


EXPLANATION_COLUMNS = ("msg_id", "topic", "broker", "queue_id", "queue_offset", "group", "verdict", "ownership_from",
                       "summary")


def explanation_doc(explanation: Explanation) -> dict[str, Any]:
    """One verdict: ``verdict`` is one of :data:`~rmqctl.model.VERDICTS`."""
    return {
        "group": explanation.group,
        "verdict": explanation.verdict,
        "summary": explanation.summary,
        "evidence": dict(explanation.evidence),
        "ownership_from": explanation.ownership_from,
        "missing": list(explanation.missing),
    }


class MessageExplainDoc(TypedDict):
    query: dict[str, Any]
    groups: list[str]
    messages: list[dict[str, Any]]
    errors: Errors


def message_explain(ref: MessageRef, groups: Iterable[str],
                    fates: Iterable[tuple[Message, Iterable[Explanation]]],
                    errors: Mapping[str, RmqctlError]) -> MessageExplainDoc:
    """``msg explain``: each message found, with one explanation per group."""
    messages = []
    for message, explanations in fates:
        doc = message_doc(message)
        doc["explanations"] = [explanation_doc(e) for e in explanations]
        messages.append(doc)
    return MessageExplainDoc(query=query_doc(ref), groups=list(groups), messages=messages, errors=errors_doc(errors))


def explanation_rows(doc: Mapping[str, Any]) -> list[RowSet]:
    rows = [{"msg_id": m["msg_id"], "topic": m["topic"], "broker": m["broker"], "queue_id": m["queue_id"],
             "queue_offset": m["queue_offset"], "group": e["group"], "verdict": e["verdict"],
             "ownership_from": e["ownership_from"], "summary": e["summary"]}
            for m in doc["messages"] for e in m["explanations"]]
    return [RowSet("explanation", EXPLANATION_COLUMNS, rows), *error_rows(doc)]
