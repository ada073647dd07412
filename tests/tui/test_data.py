"""The TUI's pure logic: rows, ownership, the filter and the sample history."""

from __future__ import annotations

from dataclasses import replace

from tests.tui.conftest import C1, C2, T0, orders
from tui.data import (
    ClientRow,
    RowFilter,
    SampleHistory,
    client_rows,
    compact_queues,
    queue_rows,
)


def test_client_rows_show_each_clients_queues_and_the_orphans_last() -> None:
    assert client_rows(orders(0, retry=True)) == [
        ClientRow(C1, C1, 3, 12, "%RETRY%orders@broker-a[0] TopicTest@broker-a[0,1]"),
        ClientRow(C2, C2, 1, 0, "TopicTest@broker-a[3]"),
        ClientRow("(nobody)", "(nobody)", 1, 60, "TopicTest@broker-a[2]"),
    ]


def test_queue_rows_list_every_owner_and_nobody() -> None:
    view = orders(0)
    c1, c2 = view.running_infos[C1], view.running_infos[C2]
    q0 = next(iter(c1.mq_table))  # c2 also reports holding c1's first queue
    shared = replace(view, running_infos={
        C1: c1, C2: replace(c2, mq_table={**c2.mq_table, q0: c1.mq_table[q0]})})
    rows = queue_rows(shared)
    assert [(r.key, r.owner_text, r.lag, r.inflight) for r in rows] == [
        ("TopicTest/broker-a/0", f"{C1}, {C2}", 10, 5),
        ("TopicTest/broker-a/1", C1, 0, 0),
        ("TopicTest/broker-a/2", "(nobody)", 60, 0),
        ("TopicTest/broker-a/3", C2, 0, 0),
    ]
    assert rows[2].text() == "TopicTest broker-a 2 (nobody)"


def test_compact_queues_groups_by_topic_and_broker_in_java_order() -> None:
    view = orders(0, retry=True)
    assert compact_queues(reversed(view.known_queues())) == \
        "%RETRY%orders@broker-a[0] TopicTest@broker-a[0,1,2,3]"


def test_filter_regex_inversion_and_literal_fallback() -> None:
    assert RowFilter.parse("").matches("anything") and not RowFilter.parse("  ").active
    f = RowFilter.parse("^ord")
    assert f.matches("orders 2") and not f.matches("billing orders")
    inv = RowFilter.parse("!^ord")
    assert inv.invert and not inv.matches("orders 2") and inv.matches("billing orders")
    lit = RowFilter.parse("a[b")
    assert lit.literal and lit.matches("xa[by") and not lit.matches("ab")
    assert RowFilter.parse("ORD").matches("orders")  # case-insensitive, like k9s
    assert RowFilter.parse("!").matches("x") and not RowFilter.parse("!").active


def test_history_compares_with_a_sample_old_enough() -> None:
    history = SampleHistory()
    first, near, later = (orders(0, sampled_at=T0), orders(0, sampled_at=T0 + 2_000),
                          orders(0, sampled_at=T0 + 12_000))
    assert history.previous(first, 10_000) is None
    history.add(first)
    history.add(near)
    history.add(near)  # the same sample twice is stored once
    assert history.previous(near, 10_000) is None
    assert history.previous(later, 10_000) is near
    assert history.previous(orders(0, sampled_at=T0 + 11_000), 10_000) is first
