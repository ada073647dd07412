"""The dashboard's pure parts: statuses, trends, typed rows, filters, what a round leaves behind."""

from __future__ import annotations

import ast
from dataclasses import replace
from pathlib import Path

from rmqctl.model import GroupView, MessageQueue, ProcessQueueInfo, QueueProgress
from rmqctl.watch import Round, Sample
from tests.tui.helpers import START, make_view
from tui.columns import GROUP_COLUMNS, QUEUE_COLUMNS, filter_rows, human_age, sparkline
from tui.state import (
    NOT_YET,
    QUEUE_TREND_LENGTH,
    Board,
    Dashboard,
    GroupLag,
    GroupRow,
    Owner,
    QueueRow,
    Reported,
    group_rows,
    queue_rows,
    queue_status,
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
    unread = replace(progress(0, 0), offsets_from="unknown")
    assert queue_status(unread, progress(10, 5), ["a"]) == "unknown"
    assert queue_status(unread, None, []) == "unknown"
    assert queue_status(progress(10, 5), unread, ["a"]) == "?"  # nothing known to compare with


def test_sparkline_and_age() -> None:
    assert sparkline([]) == ""
    assert sparkline([0, 0, 0]) == "▁▁▁"
    assert sparkline([5, 5]) == "▄▄"
    assert sparkline([0, 7]) == "▁█"
    assert sparkline([0, 1, 2, 3, 4, 5, 6, 7]) == "▁▂▃▄▅▆▇█"
    assert len(sparkline(range(100))) == 12
    assert [human_age(None if s is None else s * 1000) for s in (None, 5, 119, 120, 7199, 7200, 200000)] == \
        ["-", "5s", "119s", "2m", "119m", "2h", "2d"]
    assert QueueProgress(MQ, 1, 1, None, 10_000).age_ms(70_500) == 60_500
    assert QueueProgress(MQ, 1, 1, None, 10_000).age_ms(9_000) == 0  # the clocks differ: never negative
    assert QueueProgress(MQ, 1, 1, None, 0).age_ms(70_500) is None  # nothing consumed yet


def test_filter_is_a_regex_over_the_shown_text_inverted_by_a_bang_and_tolerates_bad_regexes() -> None:
    def group(name: str, health: str, lag: int) -> GroupRow:
        return GroupRow(name, health, 1, 4, GroupLag(lag, 4, 0), (), None)

    rows = {"a": group("orders", "ok", 5), "b": group("payments", "error", 0), "c": group("ord(ers", "ok", 0)}
    assert list(filter_rows(rows, "^ord", GROUP_COLUMNS)) == ["a", "c"]
    assert list(filter_rows(rows, "!^ord", GROUP_COLUMNS)) == ["b"]
    assert list(filter_rows(rows, "ERROR", GROUP_COLUMNS)) == ["b"]
    assert list(filter_rows(rows, "ord(", GROUP_COLUMNS)) == ["c"]  # not a valid regex: matched as text
    assert list(filter_rows(rows, " 5 ", GROUP_COLUMNS)) == ["a"]  # numbers match as shown
    assert list(filter_rows(rows, "", GROUP_COLUMNS)) == ["a", "b", "c"]


def test_queue_rows_are_typed_values_from_the_models_properties() -> None:
    dash = Dashboard()
    view = make_view("orders", offsets={0: (150, 100)}, last_ts_ms=int(START * 1000) - 90_000)
    progress = list(view.progress)
    progress[1] = replace(progress[1], offsets_from="unknown", broker_offset=0, consumer_offset=0)
    progress[2] = replace(progress[2], pull_offset=104)
    view = replace(view, progress=tuple(progress))
    dash.apply(Round(1, None, Sample(START, {"orders": view})), check=False)
    rows = queue_rows(Board(1, dash, START), "orders")
    # no pull offset reported for queue 0: its inflight is unknown, not 0
    assert rows["Orders|broker-a|0"] == QueueRow("Orders", "broker-a", 0, Owner(("10.0.0.1@a",)), 150, 100, 50, None,
                                                 90_000, (50,), "?")
    assert rows["Orders|broker-a|1"] == QueueRow("Orders", "broker-a", 1, Owner(("10.0.0.1@a",)), None, None, None,
                                                 None, 90_000, (), "unknown")
    assert rows["Orders|broker-a|2"].inflight == 4
    # a source that cannot read pull offsets: inflight is unknown in every row, never 0
    dash.apply(Round(2, None, Sample(START, {"orders": replace(view, unavailable={"inflight": "no pull offsets"})})),
               check=False)
    assert {r.inflight for r in queue_rows(Board(2, dash, START), "orders").values()} == {None}
    assert group_rows(Board(2, dash, START))["orders"].lag == GroupLag(50, 3, 1)


def test_columns_show_unknown_and_sort_it_apart_from_every_known_value() -> None:
    lag = next(c for c in QUEUE_COLUMNS if c.key == "lag")
    age = next(c for c in QUEUE_COLUMNS if c.key == "age")
    assert [lag.show(v) for v in (5, 0, None, NOT_YET)] == ["5", "0", "unknown", "-"]
    assert [age.show(v) for v in (45_000, 720_000, None, NOT_YET)] == ["45s", "12m", "-", "-"]
    values: list[Reported] = [None, 7, 0, NOT_YET, 30]
    assert sorted(values, key=lag.order)[:3] == [0, 7, 30]
    assert sorted(values, key=lag.order, reverse=True)[2:] == [30, 7, 0]
    glag = next(c for c in GROUP_COLUMNS if c.key == "lag")
    assert [glag.show(v) for v in (GroupLag(7, 4, 0), GroupLag(7, 3, 1), GroupLag(0, 0, 4),
                                   GroupLag(0, 0, 0, unreadable=True))] == ["7", "≥7", "unknown", "-"]


def test_state_flows_down_no_module_below_the_app_imports_it() -> None:
    """Screens, widgets, rows and messages reach the app only through messages and watched
    attributes: none of them imports ``tui.app``, not even inside a function or for typing."""
    root = Path(__file__).resolve().parents[2] / "tui"
    for name in ("screens", "widgets", "state", "columns", "messages", "keys"):
        tree = ast.parse((root / f"{name}.py").read_text(encoding="utf-8"))
        imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        assert "tui.app" not in imported, name
        assert "tui" not in imported, name  # the package re-exports the app


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


def test_a_queue_a_broker_filter_may_explain_waits_before_it_is_called_stalled() -> None:
    # queue 0 lags by 50 messages and its holder caches nothing: it waits on a pull the broker may
    # hold for up to 15 s when its filter passes none of them, then commits within 5 s (the
    # doctor's rule); only a still offset past those 20 s is stalled
    dash = Dashboard()

    def status_at(n: int, seconds: float, view: GroupView) -> str:
        dash.apply(Round(n, dash.sample, Sample(START + seconds, {"orders": view})), check=False)
        return queue_rows(Board(n, dash, START + seconds), "orders")["Orders|broker-a|0"].status

    idle_holder = make_view("orders", offsets={0: (150, 100)})
    assert status_at(1, 0, idle_holder) == "?"
    assert status_at(2, 2, idle_holder) == "waiting"
    assert status_at(3, 20, idle_holder) == "waiting"
    assert status_at(4, 20.5, idle_holder) == "stalled"
    # the offset moved: the count starts again
    moved = make_view("orders", offsets={0: (160, 110)})
    assert status_at(5, 22, moved) == "moving"
    assert status_at(6, 24, moved) == "waiting"
    # a holder with messages cached and none consumed is no filter's doing: stalled at once
    mq = MessageQueue("Orders", "broker-a", 0)
    cid = "10.0.0.1@a"
    info = moved.running_infos[cid]
    caching = replace(moved, running_infos={**moved.running_infos, cid: replace(
        info, mq_table={**info.mq_table, mq: ProcessQueueInfo(cached_msg_count=7)})})
    assert status_at(7, 26, caching) == "stalled"
