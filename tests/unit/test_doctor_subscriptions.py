"""The subscription findings on small hand-built views: what the broker keeps, what each client
asks for, and where messages go because of it.

The rules the expectations follow (docs/findings.md, and the broker and client code): the broker
keeps ONE subscription per (group, topic) and filters every pull with it by tag hash code (an
untagged message has code 0); the client then keeps only the tags its own expression names; every
client takes part in every topic's allocation, so a topic's queues can land on a client that never
subscribed it; a pull for a topic missing from the broker's table fails (code 24).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import pytest

from rmqctl.doctor import run_checks
from rmqctl.doctor.checks import tag_conflict_topics
from rmqctl.model import GroupView, MessageQueue, ProcessQueueInfo, SampledMessage, Subscription, TagSample
from tests.unit.doctor_views import NOW, A, B, C, client, codes, group, one, qids, qs, row, sub

T = qs("T", 4)
TAG_A = sub("T", "tagA", 100)
TAG_B = sub("T", "tagB", 200)
ALL = sub("T", "*", 150)


def q(i: int, broker: str = "broker-a") -> dict[str, Any]:
    return {"topic": "T", "broker": broker, "queue_id": i}


# --- SUBSCRIPTION_TAG_CONFLICT: error ----------------------------------------------------------------

def tags(a: Subscription, b: Subscription, stored: Subscription | None, **kw: Any) -> GroupView:
    """A holds queues 0-1 with ``a``, B holds 2-3 with ``b``; broker-a keeps ``stored``."""
    return group([client(A, [a], T[:2]), client(B, [b], T[2:])], {"T": T},
                 stored={"broker-a": {"T": stored} if stored else {}}, **kw)


@dataclass(frozen=True)
class TagCase:
    case: str
    view: Callable[[], GroupView]
    evidence: dict[str, Any]


TAG_CASES = [
    TagCase("A tagA, B tagB, the broker keeps B's: A receives nothing at all",
            lambda: tags(TAG_A, TAG_B, TAG_B),
            {"client_expressions": {A: "tagA", B: "tagB"}, "broker_expression": {"broker-a": "tagB"},
             "broker_holds_from": [B], "losing_clients": [A], "starved_clients": [A],
             "tags_never_consumed": ["tagA", "(any other tag)"], "sampled": False,
             "tag_basis": "named tags plus every other tag"}),
    TagCase("A *, B tagB, the broker keeps B's: A still gets tagB, every other tag is lost",
            lambda: tags(ALL, TAG_B, TAG_B),
            {"broker_holds_from": [B], "losing_clients": [A], "starved_clients": [],
             "tags_never_consumed": ["(any other tag)"]}),
    TagCase("A *, B tagB, the broker keeps A's *: B drops the rest, A's queues deliver everything",
            lambda: tags(ALL, TAG_B, ALL),
            {"broker_holds_from": [A], "losing_clients": [B], "starved_clients": [],
             "tags_never_consumed": []}),
    TagCase("the broker's version is newer than every client's: its source is the client with that text",
            lambda: tags(TAG_A, TAG_B, sub("T", "tagB", 999)),
            {"broker_holds_from": [B], "losing_clients": [A]}),
    TagCase("the broker keeps tagC of a client long gone: nobody's tags pass, tagC reaches nobody either",
            lambda: tags(TAG_A, TAG_B, sub("T", "tagC", 300)),
            {"broker_holds_from": [], "losing_clients": [A, B], "starved_clients": [A, B],
             "tags_never_consumed": ["tagA", "tagB", "tagC", "(any other tag)"]}),
    TagCase("A *, B tagA || tagB, the broker keeps B's: only tags other than those two are lost",
            lambda: tags(ALL, sub("T", "tagA || tagB", 200), sub("T", "tagA || tagB", 200)),
            {"losing_clients": [A], "starved_clients": [], "tags_never_consumed": ["(any other tag)"]}),
    TagCase("A SQL92, B *, the broker keeps nothing: no tag is named and every message is lost",
            lambda: tags(Subscription("T", "a > 1", (), (), 100, "SQL92"), ALL, None),
            {"losing_clients": [A, B], "tags_never_consumed": ["(any other tag)"]}),
    TagCase("the broker keeps nothing for the topic: every client loses, nothing is consumed",
            lambda: tags(TAG_A, TAG_B, None),
            {"broker_expression": {}, "broker_holds_from": [], "losing_clients": [A, B],
             "starved_clients": [A, B], "tags_never_consumed": ["tagA", "tagB", "(any other tag)"]}),
]


@pytest.mark.parametrize(("case", "view", "said", "unsaid"), [
    ("the broker keeps B's tagB", lambda: tags(TAG_A, TAG_B, TAG_B),
     [f"currently holds 'tagB' (from {B}).", "in this group. No message sample was taken"], []),
    ("the broker keeps a tag nobody subscribes", lambda: tags(TAG_A, TAG_B, sub("T", "tagC", 300)),
     ["currently holds 'tagC'. It filters", f"{A}, {B} can receive nothing at all."], ["(from"]),
    ("the broker keeps nothing", lambda: tags(TAG_A, TAG_B, None),
     ["for the whole group. It filters"], ["currently holds"]),
    ("two clients gave the broker its copy", lambda: group(
        [client(A, [TAG_B], T[:1]), client(B, [TAG_B], T[1:2]), client(C, [TAG_A], T[2:])], {"T": T},
        stored={"broker-a": {"T": TAG_B}}),
     [f"currently holds 'tagB' (from {A}, {B})."], []),
    ("two named tags pass", lambda: tags(ALL, sub("T", "tagA || tagB", 200), sub("T", "tagA || tagB", 200)),
     ["Messages with any tag other than tagA or tagB are never consumed"], []),
    ("nothing is named", lambda: tags(Subscription("T", "a > 1", (), (), 100, "SQL92"), ALL, None),
     [" No message is consumed by anyone in this group."], ["Every message are"]),
])
def test_tag_conflict_detail(case: str, view: Callable[[], GroupView], said: list[str], unsaid: list[str]) -> None:
    f = one(run_checks(view(), resampled=True), "SUBSCRIPTION_TAG_CONFLICT")
    for words in said:
        assert words in f.detail, case
    for words in unsaid:
        assert words not in f.detail, case


@pytest.mark.parametrize("c", TAG_CASES, ids=[c.case for c in TAG_CASES])
def test_tag_conflict(c: TagCase) -> None:
    f = one(run_checks(c.view()), "SUBSCRIPTION_TAG_CONFLICT")
    assert f.severity == "error"
    assert f.evidence["topic"] == "T"
    for key, value in c.evidence.items():
        assert f.evidence[key] == value, f"{c.case}: {key}"


def test_of_two_clients_with_the_brokers_text_the_one_with_its_version_is_its_source() -> None:
    v = group([client(A, [sub("T", "tagB", 5)], T[:1]), client(B, [TAG_B], T[1:2]), client(C, [TAG_A], T[2:])],
              {"T": T}, stored={"broker-a": {"T": TAG_B}})
    f = one(run_checks(v, resampled=True), "SUBSCRIPTION_TAG_CONFLICT")
    assert f.evidence["broker_holds_from"] == [B]
    assert f"currently holds 'tagB' (from {B})" in f.detail


def test_queues_of_an_unrouted_topic_come_from_its_progress_rows() -> None:
    u = qs("U", 1)
    v = group([client(A, [TAG_A], T[:1]), client(B, [TAG_B], T[1:2])], {},
              stored={"broker-a": {"T": TAG_B}}, progress=[row(T[1], 5, 5, B), row(u[0], 3, 3)])
    f = one(run_checks(v, resampled=True), "SUBSCRIPTION_TAG_CONFLICT")
    assert qids(f.evidence["queues"]) == [("T", "broker-a", 1)]


def test_tag_conflict_per_queue_what_the_broker_filters_and_the_client_drops() -> None:
    f = one(run_checks(tags(TAG_A, TAG_B, TAG_B)), "SUBSCRIPTION_TAG_CONFLICT")
    assert f.evidence["queues"] == [
        {**q(i), "owner": A, "owner_expression": "tagA", "filtered_by_broker": ["tagA", "(any other tag)"],
         "dropped_by_client": ["tagB"], "delivered_tags": []} for i in (0, 1)
    ] + [
        {**q(i), "owner": B, "owner_expression": "tagB", "filtered_by_broker": ["tagA", "(any other tag)"],
         "dropped_by_client": [], "delivered_tags": ["tagB"]} for i in (2, 3)
    ]
    assert f.detail.count(f"{A} can receive nothing at all") == 1
    assert "Messages tagged tagA and messages with any other tag are never consumed" in f.detail
    assert "'tagA || tagB'" in f.fix


def test_a_tag_client_drops_every_other_tag_that_the_brokers_star_lets_through() -> None:
    f = one(run_checks(tags(ALL, TAG_B, ALL)), "SUBSCRIPTION_TAG_CONFLICT")
    rows = {r["queue_id"]: r for r in f.evidence["queues"]}
    assert rows[0]["delivered_tags"] == ["tagB", "(any other tag)"] and rows[0]["dropped_by_client"] == []
    assert rows[2]["delivered_tags"] == ["tagB"] and rows[2]["dropped_by_client"] == ["(any other tag)"]
    assert rows[2]["filtered_by_broker"] == []


def test_a_queue_nobody_holds_shows_no_owner_and_delivers_nothing() -> None:
    v = group([client(A, [TAG_A], T[:1]), client(B, [TAG_B], T[1:2])], {"T": T[:3]},
              stored={"broker-a": {"T": TAG_B}})
    rows = one(run_checks(v, resampled=True), "SUBSCRIPTION_TAG_CONFLICT").evidence["queues"]
    assert rows[2] == {**q(2), "owner": None, "owner_expression": None,
                       "filtered_by_broker": ["tagA", "(any other tag)"], "dropped_by_client": [],
                       "delivered_tags": []}


def test_the_fix_never_narrows_a_client_that_subscribes_everything() -> None:
    f = one(run_checks(tags(ALL, TAG_B, TAG_B)), "SUBSCRIPTION_TAG_CONFLICT")
    assert "('*'," in f.fix
    assert "Messages with any tag other than tagB are never consumed" in f.detail


@pytest.mark.parametrize(("case", "a", "b"), [
    ("the same tags in another order and spacing", sub("T", "x || y", 1), sub("T", "y||x", 2)),
    ("both subscribe everything", sub("T", "*", 1), sub("T", "*", 2)),
    ("both subscribe the one tag", sub("T", "x", 1), sub("T", "x", 2)),
])
def test_same_filter_written_differently_is_no_conflict(case: str, a: Subscription, b: Subscription) -> None:
    v = tags(a, b, b)
    assert tag_conflict_topics(v) == [], case
    assert run_checks(v) == [], case


def test_a_sql92_filter_differs_from_a_tag_filter_with_the_same_text() -> None:
    sql = Subscription("T", "tagA", (), (), 300, "SQL92")
    assert tag_conflict_topics(tags(TAG_A, sql, sql)) == ["T"]


SQL_A = Subscription("T", "p_a > 5", (), (), 100, "SQL92")
SQL_B = Subscription("T", "p_b IS NOT NULL", (), (), 200, "SQL92")


@pytest.mark.parametrize(("case", "a", "b", "title", "said"), [
    ("two tag expressions", TAG_A, TAG_B, "subscribe T with different tags",
     ["with different expressions (10.0.0.1@a: tagA; 10.0.0.2@b: tagB)"]),
    ("a SQL92 client and a tag client", SQL_A, TAG_B, "subscribe T with different filter expressions (SQL92 and tags)",
     ["with different filter expressions (SQL92 and tags) (10.0.0.1@a: SQL92 'p_a > 5'; 10.0.0.2@b: tagB)",
      "a SQL92 expression and a tag expression cannot share"]),
    ("two SQL92 clients", SQL_A, SQL_B, "subscribe T with different SQL92 expressions",
     ["with different SQL92 expressions (10.0.0.1@a: SQL92 'p_a > 5'; 10.0.0.2@b: SQL92 'p_b IS NOT NULL')",
      "two SQL92 expressions cannot share"]),
])
def test_the_title_names_what_differs(case: str, a: Subscription, b: Subscription, title: str,
                                      said: list[str]) -> None:
    f = one(run_checks(tags(a, b, b)), "SUBSCRIPTION_TAG_CONFLICT")
    assert f.title == f"Clients of orders-consumer {title}", case
    text = f"{f.detail} {f.fix}"
    for words in said:
        assert words in text, case
    if a.is_sql92 or b.is_sql92:
        assert "different tags" not in f.title, case


def test_one_client_alone_cannot_conflict() -> None:
    v = group([client(A, [TAG_A], T)], {"T": T}, stored={"broker-a": {"T": TAG_A}})
    assert tag_conflict_topics(v) == [] and run_checks(v) == []


def test_one_finding_per_conflicting_topic_in_topic_order() -> None:
    u = qs("U", 2)
    v = group([client(A, [TAG_A, sub("U", "x", 1)], T[:2] + u[:1]),
               client(B, [TAG_B, sub("U", "y", 2)], T[2:] + u[1:])], {"T": T, "U": u})
    found = [f for f in run_checks(v) if f.code == "SUBSCRIPTION_TAG_CONFLICT"]
    assert [f.evidence["topic"] for f in found] == ["T", "U"]


def test_two_brokers_storing_different_subscriptions_filter_their_own_queues() -> None:
    # broker-a kept A's tagA, broker-b kept B's tagB (heartbeats reached them in another order);
    # each broker filters the pulls of its own queues with its own copy
    ta, tb = qs("T", 2, "broker-a"), qs("T", 2, "broker-b")
    v = group([client(A, [TAG_A], ta), client(B, [TAG_B], tb)], {"T": ta + tb},
              stored={"broker-a": {"T": TAG_A}, "broker-b": {"T": TAG_B}})
    findings = run_checks(v)
    f = one(findings, "SUBSCRIPTION_TAG_CONFLICT")
    assert f.evidence["broker_expression"] == {"broker-a": "tagA", "broker-b": "tagB"}
    by_queue = {(r["broker"], r["queue_id"]): r for r in f.evidence["queues"]}
    assert by_queue[("broker-a", 0)]["filtered_by_broker"] == ["tagB", "(any other tag)"]
    assert by_queue[("broker-a", 0)]["delivered_tags"] == ["tagA"]
    assert by_queue[("broker-b", 1)]["filtered_by_broker"] == ["tagA", "(any other tag)"]
    assert by_queue[("broker-b", 1)]["delivered_tags"] == ["tagB"]
    assert f.evidence["tags_never_consumed"] == ["(any other tag)"]
    div = one(findings, "BROKER_SUBSCRIPTION_DIVERGENCE")
    assert div.evidence["broker_expressions"] == {"broker-a": {"expression": "tagA", "sub_version": 100},
                                                  "broker-b": {"expression": "tagB", "sub_version": 200}}


# --- SUBSCRIPTION_TAG_CONFLICT with a message sample ------------------------------------------------

def msg(mq: MessageQueue, offset: int, tag: str | None, stored_at: int = 10_000) -> SampledMessage:
    # stored after every subVersion of these views (100, 200): judged by the current expression
    return SampledMessage(mq, offset, tag, store_timestamp=stored_at)


def sampled_view(*, q0_known: bool = True) -> GroupView:
    samples = {
        # A's queue: the broker passes tagB only, A keeps tagA only; consumer offset 14
        T[0]: TagSample(T[0], 10, 15, (msg(T[0], 10, "tagA"), msg(T[0], 11, "tagB"), msg(T[0], 12, "tagC"),
                                       msg(T[0], 13, None), msg(T[0], 14, "tagA"))),
        # B's queue: tagB gets through; consumer offset 3
        T[2]: TagSample(T[2], 0, 3, (msg(T[2], 0, "tagB"), msg(T[2], 1, "tagA"), msg(T[2], 2, "tagB"))),
        # held by nobody: what passes the broker waits for an owner
        T[3]: TagSample(T[3], 7, 9, (msg(T[3], 7, "tagB"), msg(T[3], 8, "tagA"))),
    }
    progress = [row(T[0], 15, 14, A, known=q0_known), row(T[2], 3, 3, B), row(T[3], 9, 9)]
    return group([client(A, [TAG_A], T[:2]), client(B, [TAG_B], T[2:3])], {"T": T},
                 stored={"broker-a": {"T": TAG_B}}, progress=progress, tag_samples=samples)


def test_a_sample_counts_each_message_where_it_went() -> None:
    f = one(run_checks(sampled_view(), resampled=True), "SUBSCRIPTION_TAG_CONFLICT")
    ev = f.evidence
    assert ev["sampled"] is True and ev["tag_basis"] == "sample"
    assert ev["counts"] == {
        "received_by_client": {A: {}, B: {"tagB": 2}},
        "dropped_by_client": {A: {"tagB": 1}, B: {}},
        "filtered_by_broker": {"": 1, "tagA": 3, "tagC": 1},
        "pending": {"tagA": 1, "tagB": 1},
    }
    rows = {r["queue_id"]: r for r in ev["queues"]}
    assert rows[0]["sample"] == {"from_offset": 10, "to_offset": 15, "counts": {
        "": {"filtered_by_broker": 1},
        "tagA": {"filtered_by_broker": 1, "pending": 1},
        "tagB": {"dropped_by_client": 1},
        "tagC": {"filtered_by_broker": 1},
    }}
    assert rows[2]["sample"]["counts"] == {"tagA": {"filtered_by_broker": 1}, "tagB": {"delivered": 2}}
    assert rows[3]["sample"]["counts"] == {"tagA": {"filtered_by_broker": 1}, "tagB": {"pending": 1}}
    assert "sample" not in rows[1]
    # the sample's tags, named ones first, the untagged last
    assert ev["tags_never_consumed"] == ["tagA", "tagC", ""]
    assert "Messages tagged tagA or tagC or (no tag) are never consumed" in f.detail
    # the window is stated: how many per queue, and which offsets of which queue
    assert ("a sample of 10 message(s), the last 5 message(s) of each queue (T@broker-a queue 0: offsets "
            "10..14, queue 2: offsets 0..2, queue 3: offsets 7..8)") in f.detail
    assert ev["sample_window"] == {"per_queue": 5, "messages": 10}
    assert ev["lost_in_sample"] == {"": 1, "tagA": 3, "tagB": 1, "tagC": 1}


def test_a_queue_held_by_a_client_that_does_not_subscribe_the_topic_keeps_what_passes_pending() -> None:
    # C subscribes only U but holds T/3: nobody pulls T/3 for T's subscribers
    u = qs("U", 1)
    sample = {T[3]: TagSample(T[3], 0, 2, (msg(T[3], 0, "tagB"), msg(T[3], 1, "tagA")))}
    v = group([client(A, [TAG_A], T[:2]), client(B, [TAG_B], T[2:3]), client(C, [sub("U")], [T[3], *u])],
              {"T": T, "U": u}, stored={"broker-a": {"T": TAG_B, "U": sub("U")}},
              progress=[row(T[3], 2, 2, C)], tag_samples=sample)
    f = one(run_checks(v, resampled=True), "SUBSCRIPTION_TAG_CONFLICT")
    row3 = next(r for r in f.evidence["queues"] if r["queue_id"] == 3)
    assert row3["owner"] == C and row3["owner_expression"] == "(not subscribed)"
    assert row3["sample"]["counts"] == {"tagA": {"filtered_by_broker": 1}, "tagB": {"pending": 1}}
    assert f.evidence["counts"]["received_by_client"] == {A: {}, B: {}}


def test_a_queue_whose_offsets_are_unknown_counts_its_whole_sample_as_pending() -> None:
    f = one(run_checks(sampled_view(q0_known=False), resampled=True), "SUBSCRIPTION_TAG_CONFLICT")
    rows = {r["queue_id"]: r for r in f.evidence["queues"]}
    assert rows[0]["sample"]["counts"] == {"": {"pending": 1}, "tagA": {"pending": 2}, "tagB": {"pending": 1},
                                           "tagC": {"pending": 1}}


# --- BROKER_SUBSCRIPTION_DIVERGENCE: warning ---------------------------------------------------------

@dataclass(frozen=True)
class DivCase:
    case: str
    view: Callable[[], GroupView]
    evidence: dict[str, Any] | None


DIV_CASES = [
    DivCase("the broker keeps tagB while A subscribes tagA",
            lambda: tags(TAG_A, TAG_B, TAG_B),
            {"topic": "T", "broker_expressions": {"broker-a": {"expression": "tagB", "sub_version": 200}},
             "brokers_without_topic": [], "clients_differing": {A: "tagA"}}),
    DivCase("two brokers keep different expressions though every client agrees with one of them",
            lambda: group([client(A, [TAG_B], T)], {"T": T},
                          stored={"broker-a": {"T": TAG_A}, "broker-b": {"T": TAG_B}}),
            {"broker_expressions": {"broker-a": {"expression": "tagA", "sub_version": 100},
                                    "broker-b": {"expression": "tagB", "sub_version": 200}},
             "brokers_without_topic": [], "clients_differing": {A: "tagB"}}),
    DivCase("broker-b keeps nothing for the topic the clients subscribe",
            lambda: group([client(A, [TAG_A], T)], {"T": T}, stored={"broker-a": {"T": TAG_A}, "broker-b": {}}),
            {"brokers_without_topic": ["broker-b"], "clients_differing": {}}),
    DivCase("every broker and client agree (spelling aside)",
            lambda: group([client(A, [sub("T", "a||b", 1)], T)], {"T": T},
                          stored={"broker-a": {"T": sub("T", "b || a", 2)}, "broker-b": {"T": sub("T", "a||b", 1)}}),
            None),
    DivCase("a client that does not subscribe the topic does not differ from it",
            lambda: group([client(A, [TAG_A], T), client(B, [sub("U")])], {"T": T}, stored={"broker-a": {"T": TAG_A}}),
            None),
    DivCase("the retry topic's stored subscription is the broker's own business",
            lambda: group([client(A, [TAG_A], T)], {"T": T},
                          stored={"broker-a": {"T": TAG_A, "%RETRY%orders-consumer": sub("%RETRY%orders-consumer")},
                                  "broker-b": {"T": TAG_A}}),
            None),
]


@pytest.mark.parametrize("c", DIV_CASES, ids=[c.case for c in DIV_CASES])
def test_broker_subscription_divergence(c: DivCase) -> None:
    findings = run_checks(c.view(), resampled=True)
    if c.evidence is None:
        assert "BROKER_SUBSCRIPTION_DIVERGENCE" not in codes(findings), c.case
        return
    f = one(findings, "BROKER_SUBSCRIPTION_DIVERGENCE")
    assert f.severity == "warning", c.case
    for key, value in c.evidence.items():
        assert f.evidence[key] == value, f"{c.case}: {key}"


def test_divergence_is_one_finding_per_topic_in_topic_order() -> None:
    u = qs("U", 1)
    v = group([client(A, [TAG_A, sub("U", "x", 1)], T + u)], {"T": T, "U": u},
              stored={"broker-a": {"U": sub("U", "y", 5), "T": TAG_B}})
    found = [f for f in run_checks(v) if f.code == "BROKER_SUBSCRIPTION_DIVERGENCE"]
    assert [f.evidence["topic"] for f in found] == ["T", "U"]
    assert "broker-b" not in found[0].detail and "'tagB' (v200)" in found[0].detail


# --- SUBSCRIPTION_TOPIC_CONFLICT: error ---------------------------------------------------------------

T1, T2 = qs("T1", 2), qs("T2", 2)
S1, S2 = sub("T1", "*", 1), sub("T2", "*", 2)


def topics(*, stored: dict[str, Subscription] | None = None, progress: list[Any] | None = None,
           a_held: list[MessageQueue] = T1, a_pq: dict[MessageQueue, ProcessQueueInfo] | None = None,
           model: str = "CLUSTERING", at: int = NOW) -> GroupView:
    """A subscribes T1 and holds its queues; B subscribes T2 and holds its queues."""
    return group([client(A, [S1], a_held, pq=a_pq, model=model), client(B, [S2], T2, model=model)],
                 {"T1": T1, "T2": T2}, stored={"broker-a": stored if stored is not None else {"T1": S1, "T2": S2}},
                 progress=progress or [], model=model, sampled_at=at)


def test_topic_conflict_predicts_the_share_allocated_to_the_client_that_does_not_subscribe() -> None:
    # AVG over 2 queues and clients [A, B]: queue 0 → A, queue 1 → B, for each topic
    v = topics(progress=[row(T1[1], 30, 10, A), row(T2[0], 7, 7, B, known=False)])
    f = one(run_checks(v, resampled=True), "SUBSCRIPTION_TOPIC_CONFLICT")
    assert f.severity == "error"
    assert f.evidence["client_topics"] == {A: ["T1"], B: ["T2"]}
    assert [(t["topic"], t["subscribed_by"], t["not_subscribed_by"]) for t in f.evidence["topics"]] == [
        ("T1", [A], [B]), ("T2", [B], [A])]
    never = [t["never_pulled_queues"] for t in f.evidence["topics"]]
    assert never == [[{"topic": "T1", "broker": "broker-a", "queue_id": 1, "allocated_to": B, "diff": 20}],
                     [{"topic": "T2", "broker": "broker-a", "queue_id": 0, "allocated_to": A, "diff": None}]]
    assert "their lag (20 messages now, unknown for 1 queue)" in f.detail


@pytest.mark.parametrize(("case", "view"), [
    ("every client subscribes the same topics", lambda: group([client(A, [S1], T1[:1]), client(B, [S1], T1[1:])],
                                                              {"T1": T1})),
    ("BROADCASTING clients each consume everything", lambda: topics(model="BROADCASTING")),
])
def test_no_topic_conflict(case: str, view: Callable[[], GroupView]) -> None:
    assert "SUBSCRIPTION_TOPIC_CONFLICT" not in codes(run_checks(view(), resampled=True)), case


@pytest.mark.parametrize(("case", "lag", "listed"), [
    ("T1 is missing from the broker's table and 5 messages wait: every pull fails", 5, True),
    ("missing from the table but nothing waits: nothing is lost yet", 0, False),
    ("missing from the table and the lag is unknown: it may wait, so it is named", None, True),
])
def test_a_held_queue_of_a_topic_missing_from_the_brokers_table(case: str, lag: int | None, listed: bool) -> None:
    v = topics(stored={"T2": S2}, progress=[row(T1[0], 10 + (lag or 0), 10, A, known=lag is not None)],
               a_held=T1[:1])
    f = one(run_checks(v, resampled=True), "SUBSCRIPTION_TOPIC_CONFLICT")
    t1 = next(t for t in f.evidence["topics"] if t["topic"] == "T1")
    if not listed:
        assert t1["unpullable_queues"] == [], case
        assert "cannot be pulled" not in f.detail
        return
    (held,) = t1["unpullable_queues"]
    assert qids([held]) == [("T1", "broker-a", 0)] and held["owner"] == A and held["diff"] == lag, case
    assert "T1 is missing from broker-a's subscription table" in held["reason"]
    assert "(24)" in held["reason"]
    assert "1 queue is held but cannot be pulled now (T1@broker-a queue 0)" in f.detail


# --- the two-sample "held but never pulled" rule -----------------------------------------------------

def stuck_pair(*, before: tuple[int, int] = (100, 40), after: tuple[int, int] = (110, 40),
               before_holder: list[MessageQueue] = T1, cached: int = 0, known: tuple[bool, bool] = (True, True),
               in_before: bool = True) -> tuple[GroupView, GroupView]:
    """T1/0 held by A in both samples (30 s apart); offsets (broker, consumer) before and after."""
    prev_rows = [row(T1[0], *before, A, known=known[0])] if in_before else []
    prev = topics(progress=prev_rows, a_held=before_holder)
    now = topics(progress=[row(T1[0], *after, A, known=known[1])], at=NOW + 30_000,
                 a_pq={T1[0]: ProcessQueueInfo(cached_msg_count=cached)})
    return now, prev


def unpullable_t1(now: GroupView, prev: GroupView | None) -> list[dict[str, Any]]:
    f = one(run_checks(now, prev, resampled=True), "SUBSCRIPTION_TOPIC_CONFLICT")
    return next(t for t in f.evidence["topics"] if t["topic"] == "T1")["unpullable_queues"]


def test_held_by_the_same_client_twice_messages_waiting_offset_still_nothing_cached() -> None:
    now, prev = stuck_pair()
    assert unpullable_t1(now, prev) == [{
        "topic": "T1", "broker": "broker-a", "queue_id": 0, "owner": A, "diff": 70,
        "reason": f"held by {A}, but its consumer offset stayed at 40 while 70 message(s) waited and "
                  "nothing was cached"}]


@pytest.mark.parametrize(("case", "kw"), [
    ("the consumer offset moved by one: it is being pulled", {"after": (110, 41)}),
    ("the client caches one message: it pulls, its listener is slow (BLOCKED_QUEUE's case)", {"cached": 1}),
    ("the queue was cut back to its consumer offset: nothing waits now", {"before": (41, 40), "after": (40, 40)}),
    ("another client held it in the first sample: it just moved", {"before_holder": []}),
    ("nothing waited in the first sample", {"before": (40, 40)}),
    ("nothing waits now", {"after": (40, 40), "before": (40, 40)}),
    ("the first sample's offsets are unknown", {"known": (False, True)}),
    ("the second sample's offsets are unknown", {"known": (True, False)}),
    ("the queue had no row in the first sample", {"in_before": False}),
])
def test_not_held_but_never_pulled(case: str, kw: dict[str, Any]) -> None:
    now, prev = stuck_pair(**kw)
    assert unpullable_t1(now, prev) == [], case


def test_one_message_waiting_in_both_samples_is_enough() -> None:
    now, prev = stuck_pair(before=(41, 40), after=(41, 40))
    assert [r["diff"] for r in unpullable_t1(now, prev)] == [1]


@pytest.mark.parametrize(("case", "first_before", "cached"), [
    ("a queue new in the second sample", None, 0),
    ("a queue whose client caches messages", row(T1[1], 50, 5, A), 2),
    ("a queue whose consumer moved", row(T1[1], 50, 4, A), 0),
])
def test_a_queue_that_does_not_qualify_does_not_hide_the_next(case: str, first_before: Any, cached: int) -> None:
    prev = topics(progress=[r for r in (first_before, row(T1[0], 100, 40, A)) if r is not None])
    now = topics(progress=[row(T1[1], 60, 5, A), row(T1[0], 110, 40, A)], at=NOW + 30_000,
                 a_pq={T1[1]: ProcessQueueInfo(cached_msg_count=cached)})
    assert [r["queue_id"] for r in unpullable_t1(now, prev)] == [0], case


def test_one_sample_cannot_tell_held_but_never_pulled() -> None:
    now, _ = stuck_pair()
    assert unpullable_t1(now, None) == []


def test_held_but_never_pulled_queues_come_in_queue_order() -> None:
    prev = topics(progress=[row(T1[1], 50, 5, A), row(T1[0], 100, 40, A)])
    now = topics(progress=[row(T1[1], 60, 5, A), row(T1[0], 110, 40, A)], at=NOW + 30_000)
    assert [r["queue_id"] for r in unpullable_t1(now, prev)] == [0, 1]


def test_an_idle_client_of_a_three_client_group_is_still_named_by_topic() -> None:
    # C subscribes both topics: it is a subscriber of each, and never in not_subscribed_by
    v = replace(topics(), running_infos={**topics().running_infos, C: client(C, [S1, S2])})
    v = replace(v, connections=(*v.connections, *group([client(C, [S1, S2])], {}).connections))
    f = one(run_checks(v, resampled=True), "SUBSCRIPTION_TOPIC_CONFLICT")
    assert [(t["topic"], t["subscribed_by"]) for t in f.evidence["topics"]] == [("T1", [A, C]), ("T2", [B, C])]
