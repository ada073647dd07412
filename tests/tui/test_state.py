"""The dashboard's pure parts: statuses, trends, filters, what a round leaves behind."""

from __future__ import annotations

from rmqctl.model import MessageQueue, QueueProgress
from rmqctl.watch import Round, Sample
from tests.tui.helpers import make_view
from tui.state import (
    QUEUE_TREND_LENGTH,
    Dashboard,
    filter_rows,
    human_age,
    queue_status,
    sparkline,
)

MQ = MessageQueue("T", "broker-a", 0)


def progress(broker: int, consumer: int) -> QueueProgress:
    return QueueProgress(MQ, broker, consumer, None, 0)


def test_queue_status_vocabulary() -> None:
    assert queue_status(progress(10, 5), None, ["a", "b"]) == "held twice"
    assert queue_status(progress(10, 5), progress(10, 5), []) == "orphaned"
    assert queue_status(progress(10, 8), progress(10, 5), ["a"]) == "moving"
    assert queue_status(progress(10, 10), progress(10, 10), ["a"]) == "idle"
    assert queue_status(progress(10, 10), None, []) == "idle"
    assert queue_status(progress(10, 5), progress(9, 5), ["a"]) == "stalled"
    assert queue_status(progress(10, 5), None, ["a"]) == "?"


def test_sparkline_and_age() -> None:
    assert sparkline([]) == ""
    assert sparkline([0, 0, 0]) == "▁▁▁"
    assert sparkline([5, 5]) == "▄▄"
    assert sparkline([0, 7]) == "▁█"
    assert sparkline([0, 1, 2, 3, 4, 5, 6, 7]) == "▁▂▃▄▅▆▇█"
    assert len(sparkline(range(100))) == 12
    assert [human_age(s) for s in (None, 5, 119, 120, 7199, 7200, 200000)] == \
        ["-", "5s", "119s", "2m", "119m", "2h", "2d"]


def test_filter_is_a_regex_inverted_by_a_bang_and_tolerates_bad_regexes() -> None:
    rows = {"a": ("orders", "ok"), "b": ("payments", "error"), "c": ("ord(ers", "ok")}
    assert list(filter_rows(rows, "^ord")) == ["a", "c"]
    assert list(filter_rows(rows, "!^ord")) == ["b"]
    assert list(filter_rows(rows, "ERROR")) == ["b"]
    assert list(filter_rows(rows, "ord(")) == ["c"]  # not a valid regex: matched as text
    assert list(filter_rows(rows, "")) == ["a", "b", "c"]


def test_trend_buffers_are_bounded_and_follow_the_queues() -> None:
    dash = Dashboard()
    previous = None
    for n in range(100):
        view = make_view("orders", queues=4 if n < 50 else 2, offsets={0: (100 + n, 100)})
        current = Sample(1000.0 + n, {"orders": view})
        dash.apply(Round(n + 1, previous, current), check=False)
        previous = current
    trends = dash.queue_lag["orders"]
    assert set(trends) == {MessageQueue("Orders", "broker-a", q) for q in (0, 1)}
    assert all(len(t) == QUEUE_TREND_LENGTH for t in trends.values())
    assert list(trends[MessageQueue("Orders", "broker-a", 0)])[-1] == 99
    assert len(dash.group_lag["orders"]) == dash.trend_length
    # a group that disappears takes its state with it
    dash.apply(Round(101, previous, Sample(2000.0, {})), check=False)
    assert dash.queue_lag == {} and dash.group_lag == {} and dash.findings == {}


def test_consume_rate_is_committed_messages_per_second() -> None:
    dash = Dashboard()
    before = Sample(1000.0, {"orders": make_view("orders", offsets={0: (500, 100), 1: (500, 100)})})
    after = Sample(1004.0, {"orders": make_view("orders", offsets={0: (500, 140), 1: (500, 120)})})
    dash.apply(Round(1, None, before), check=False)
    assert dash.tps["orders"] is None
    dash.apply(Round(2, before, after), check=False)
    assert dash.tps["orders"] == 15.0  # (40 + 20) messages in 4 seconds
