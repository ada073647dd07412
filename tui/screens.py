"""The dashboard's screens: groups, one group (queue → owner or client → queues, with the
rebalance timeline), findings, what-if, emulator controls and help.

Screens render what :class:`~tui.state.Dashboard` holds; they never read a cluster. Each has a
``refresh_view`` the app calls after every poll, a filter line (``/``, regex, ``!`` inverts)
and a command line (``:`` view name).

Imports textual, rmqctl's rebalance simulator and tui's own modules.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, cast

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Button, ContentSwitcher, DataTable, Footer, Input, Label, Select, Static

from rmqctl import errors
from rmqctl.emulator.control_client import EmulatorControl
from rmqctl.model import RETRY_PREFIX
from rmqctl.rebalance.simulate import Edits, simulate
from rmqctl.rebalance.strategies import STRATEGY_NAMES
from rmqctl.watch import holders
from tui.keys import DEFAULT_KEYS
from tui.state import (
    Row,
    client_rows,
    filter_rows,
    finding_rows,
    group_rows,
    group_summary,
    queue_rows,
)
from tui.widgets import Column, KeyedTable, StatusLine, Timeline

if TYPE_CHECKING:
    from tui.app import RmqctlApp

GROUP_COLUMNS = [
    Column("group", "GROUP", 36), Column("health", "HEALTH", 10), Column("clients", "CLIENTS", 7),
    Column("queues", "QUEUES", 6), Column("lag", "LAG", 9), Column("trend", "TREND", 12, 2),
    Column("tps", "TPS", 8, 1),
]
QUEUE_COLUMNS = [
    Column("topic", "TOPIC", 16), Column("broker", "BROKER", 10, 1), Column("queue", "Q", 3),
    Column("owner", "OWNER", 28), Column("broker_offset", "BROKER_OFF", 10, 4),
    Column("consumer_offset", "CONSUMER_OFF", 12, 4), Column("lag", "LAG", 7),
    Column("inflight", "INFLIGHT", 8, 3), Column("age", "AGE", 5, 2), Column("trend", "TREND", 12, 5),
    Column("status", "STATUS", 10),
]
CLIENT_COLUMNS = [
    Column("client", "CLIENT", 30), Column("count", "QUEUES", 6), Column("subs", "SUBSCRIPTIONS", 22),
    Column("idle", "IDLE", 4), Column("conflict", "CONFLICT", 24, 1), Column("held", "HELD", 0, 2),
]
FINDING_COLUMNS = [Column("severity", "SEVERITY", 8), Column("code", "CODE", 26), Column("title", "TITLE", 0)]
WHATIF_COLUMNS = [
    Column("client", "CLIENT", 30), Column("live_n", "LIVE", 4), Column("live", "LIVE QUEUES", 24, 1),
    Column("sim_n", "SIM", 4), Column("sim", "SIMULATED QUEUES", 24, 1), Column("change", "CHANGE", 10),
]


class DashScreen(Screen[None]):
    """A screen with a status line, a filter line and a command line."""

    BINDINGS = [
        Binding(DEFAULT_KEYS["filter"], "filter", "Filter", id="filter"),
        Binding(DEFAULT_KEYS["back"], "back", "Back", id="back"),
        Binding(DEFAULT_KEYS["sort"], "sort", "Sort", id="sort"),
    ]

    filter_text = ""

    @property
    def dash_app(self) -> RmqctlApp:
        return cast("RmqctlApp", self.app)

    def compose_extras(self) -> ComposeResult:
        yield Input(placeholder="filter (regex, ! inverts)", id="filter", classes="-hidden")
        yield Input(placeholder="view: groups queues clients findings whatif emulator help quit",
                    id="command", classes="-hidden")
        yield StatusLine(id="status")
        yield Footer()

    def on_screen_resume(self) -> None:
        self.refresh_view()
        self.dash_app.update_status()

    def refresh_view(self) -> None:
        """Copy the dashboard's rows into this screen's tables."""

    def main_table(self) -> KeyedTable | None:
        tables = [t for t in self.query(KeyedTable) if t.display]
        return tables[0] if tables else None

    def action_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.remove_class("-hidden")
        box.value = self.filter_text
        box.focus()

    def show_command(self) -> None:
        box = self.query_one("#command", Input)
        box.remove_class("-hidden")
        box.value = ""
        box.focus()

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.filter_text = event.value
        self.refresh_view()

    @on(Input.Submitted, "#filter")
    def _filter_done(self, event: Input.Submitted) -> None:
        box = self.query_one("#filter", Input)
        if not self.filter_text:
            box.add_class("-hidden")
        table = self.main_table()
        if table is not None:
            table.focus()

    @on(Input.Submitted, "#command")
    def _command_done(self, event: Input.Submitted) -> None:
        self.query_one("#command", Input).add_class("-hidden")
        table = self.main_table()
        if table is not None:
            table.focus()
        self.dash_app.switch_view(event.value)

    def action_back(self) -> None:
        for box_id in ("#command", "#filter"):
            box = self.query_one(box_id, Input)
            if box.has_focus or (box_id == "#filter" and self.filter_text):
                if box_id == "#filter":
                    self.filter_text = ""
                    box.value = ""
                    self.refresh_view()
                box.add_class("-hidden")
                table = self.main_table()
                if table is not None:
                    table.focus()
                return
        if len(self.app.screen_stack) > 2:
            self.app.pop_screen()

    def action_sort(self) -> None:
        table = self.main_table()
        if table is None or not table.shown:
            return
        keys = [c.key for c in table.shown]
        current = table.sort_column
        if current is None:
            table.sort_by(keys[0])
        elif table.sort_reverse:
            table.sort_reverse = False
            table.sort_by(keys[(keys.index(current) + 1) % len(keys)] if current in keys else keys[0])
        else:
            table.sort_by(current)
        self.notify(f"sorted by {table.sort_column}{' (descending)' if table.sort_reverse else ''}",
                    timeout=1.5)

    def show(self, table: KeyedTable, rows: dict[str, Row]) -> None:
        table.sync(filter_rows(rows, self.filter_text))


class GroupsScreen(DashScreen):
    """Every consumer group: health, clients, queues, lag, trend, consume TPS."""

    def compose(self) -> ComposeResult:
        yield Static("Consumer groups", id="title")
        yield KeyedTable(GROUP_COLUMNS, id="groups-table")
        yield from self.compose_extras()

    def refresh_view(self) -> None:
        self.show(self.query_one("#groups-table", KeyedTable), group_rows(self.dash_app.dashboard))

    def selected_group(self) -> str | None:
        return self.query_one("#groups-table", KeyedTable).current_key()

    @on(DataTable.RowSelected, "#groups-table")
    def _open_group(self, event: DataTable.RowSelected) -> None:
        key = event.row_key.value
        if key is not None:
            self.app.push_screen(GroupScreen(key))


class GroupScreen(DashScreen):
    """One group: queue → owner or client → queues, and the rebalance timeline."""

    BINDINGS = [
        Binding(DEFAULT_KEYS["layout"], "layout", "Queues/clients", id="layout"),
        Binding(DEFAULT_KEYS["findings"], "findings", "Findings", id="findings"),
        Binding(DEFAULT_KEYS["whatif"], "whatif", "What-if", id="whatif"),
    ]

    def __init__(self, group: str, layout: str = "queues") -> None:
        super().__init__()
        self.group = group
        self.view_layout = "clients" if layout == "clients" else "queues"
        self.timeline_seen = 0
        self.title_round = -1

    def compose(self) -> ComposeResult:
        yield Static(f"Group {self.group}", id="title")
        with ContentSwitcher(initial=self.view_layout, id="layouts"):
            yield KeyedTable(QUEUE_COLUMNS, id="queues")
            yield KeyedTable(CLIENT_COLUMNS, id="clients")
        yield Static("Rebalance timeline", id="timeline-title")
        yield Timeline(id="timeline", max_lines=200)
        yield from self.compose_extras()

    def main_table(self) -> KeyedTable | None:
        return self.query_one(f"#{self.view_layout}", KeyedTable)

    def on_mount(self) -> None:
        self.query_one(f"#{self.view_layout}", KeyedTable).focus()

    def refresh_view(self) -> None:
        app = self.dash_app
        dash = app.dashboard
        view = dash.view(self.group)
        title = self.query_one("#title", Static)
        if dash.rounds_applied == self.title_round:
            pass  # the summary only changes with a new round (it sorts every queue: skip it)
        elif view is None:
            err = dash.sample.errors.get(self.group) if dash.sample else None
            title.update(f"Group {self.group}: " + (err.message if err else "no data yet"))
        else:
            title.update(group_summary(view))
        self.title_round = dash.rounds_applied
        now = app.opened.clock.now()
        if self.view_layout == "queues":
            self.show(self.query_one("#queues", KeyedTable), queue_rows(dash, self.group, now))
        else:
            self.show(self.query_one("#clients", KeyedTable), client_rows(dash, self.group))
        timeline = self.query_one("#timeline", Timeline)
        entries = [e for e in dash.timeline if e.group == self.group]
        if len(entries) < self.timeline_seen:
            timeline.clear()
            self.timeline_seen = 0
        for entry in entries[self.timeline_seen:]:
            timeline.add(entry.line())
        self.timeline_seen = len(entries)

    def selected_client(self) -> str | None:
        if self.view_layout == "clients":
            return self.query_one("#clients", KeyedTable).current_key()
        table = self.query_one("#queues", KeyedTable)
        key = table.current_key()
        row = table.rows_by_key.get(key) if key else None
        if row is None:
            return None
        owner = row[3].plain if isinstance(row[3], Text) else row[3]
        return owner.split(",")[0] if owner and not owner.startswith("(") else None

    def action_layout(self) -> None:
        self.view_layout = "clients" if self.view_layout == "queues" else "queues"
        self.query_one("#layouts", ContentSwitcher).current = self.view_layout
        self.refresh_view()
        self.query_one(f"#{self.view_layout}", KeyedTable).focus()

    def action_findings(self) -> None:
        self.app.push_screen(FindingsScreen(self.group))

    def action_whatif(self) -> None:
        self.app.push_screen(WhatIfScreen(self.group))


class FindingsScreen(DashScreen):
    """The doctor's findings for one group, with detail, evidence and fix."""

    def __init__(self, group: str) -> None:
        super().__init__()
        self.group = group

    def compose(self) -> ComposeResult:
        yield Static(f"Findings for {self.group}", id="title")
        yield KeyedTable(FINDING_COLUMNS, id="findings")
        with VerticalScroll(id="detail-box"):
            yield Static("", id="detail")
        yield from self.compose_extras()

    def on_mount(self) -> None:
        self.query_one("#findings", KeyedTable).focus()

    def refresh_view(self) -> None:
        findings = self.dash_app.dashboard.findings.get(self.group, [])
        table = self.query_one("#findings", KeyedTable)
        self.show(table, finding_rows(findings))
        self.query_one("#title", Static).update(
            f"Findings for {self.group}: {len(findings)} (the same checks as rmqctl doctor)")
        self._show_detail(table.current_key())

    def _show_detail(self, key: str | None) -> None:
        findings = self.dash_app.dashboard.findings.get(self.group, [])
        keys = list(finding_rows(findings))
        detail = self.query_one("#detail", Static)
        if key is None or key not in keys:
            detail.update("No findings: nothing the doctor checks is wrong with this group."
                          if not findings else "")
            return
        ordered = sorted(findings, key=lambda f: (-{"info": 0, "warning": 1, "error": 2}[f.severity], f.code))
        f = ordered[keys.index(key)]
        text = Text()
        text.append(f"{f.code} · {f.severity}\n", style="bold")
        text.append(f"{f.title}\n\n", style="bold")
        text.append(f"{f.detail}\n\n")
        text.append("Evidence\n", style="bold underline")
        for name, value in f.evidence.items():
            shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            text.append(f"  {name}: {shown}\n")
        text.append("\nFix\n", style="bold underline")
        text.append(f"{f.fix}\n")
        detail.update(text)

    @on(DataTable.RowHighlighted, "#findings")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_detail(event.row_key.value)


class WhatIfScreen(DashScreen):
    """Choose a strategy, add or remove a client, and see the simulated assignment beside the
    live one (``rmqctl.rebalance.simulate``)."""

    def __init__(self, group: str) -> None:
        super().__init__()
        self.group = group
        self.topic: str | None = None
        self.strategy = "AVG"
        self.added: list[str] = []
        self.removed: list[str] = []

    def compose(self) -> ComposeResult:
        yield Static(f"What-if for {self.group}", id="title")
        with Horizontal(id="whatif-controls"):
            yield Select[str]([], prompt="topic", id="topic", allow_blank=True)
            yield Select[str]([(s, s) for s in STRATEGY_NAMES], value="AVG", allow_blank=False, id="strategy")
            yield Input(placeholder="add client id", id="add-client")
            yield Input(placeholder="remove client id", id="remove-client")
        yield KeyedTable(WHATIF_COLUMNS, id="whatif")
        yield Static("", id="moves")
        yield from self.compose_extras()

    def on_mount(self) -> None:
        view = self.dash_app.dashboard.view(self.group)
        if view is not None:
            strategies = {ri.strategy for ri in view.running_infos.values() if ri.strategy}
            if len(strategies) == 1 and (s := strategies.pop()) in STRATEGY_NAMES:
                self.strategy = s
                self.query_one("#strategy", Select).value = s
        self.query_one("#whatif", KeyedTable).focus()

    def _topics(self) -> list[str]:
        view = self.dash_app.dashboard.view(self.group)
        if view is None:
            return []
        return sorted(t for t in view.topic_queues if not t.startswith(RETRY_PREFIX))

    def refresh_view(self) -> None:
        topics = self._topics()
        select = self.query_one("#topic", Select)
        if topics and self.topic not in topics:
            self.topic = topics[0]
            select.set_options([(t, t) for t in topics])
            select.value = self.topic
        self._simulate()

    def _simulate(self) -> None:
        view = self.dash_app.dashboard.view(self.group)
        table = self.query_one("#whatif", KeyedTable)
        moves_box = self.query_one("#moves", Static)
        if view is None or self.topic is None:
            moves_box.update("no data yet")
            return
        queues = list(view.topic_queues.get(self.topic, ()))
        try:
            result = simulate(self.strategy, self.topic, queues, view.client_channels(),
                              edits=Edits(tuple(self.added), tuple(self.removed)), actual=view.assignments())
        except errors.RmqctlError as exc:
            moves_box.update(Text(exc.message, style="bold red"))
            return
        live = {cid: [q for q in qs if q.topic == self.topic] for cid, qs in view.assignments().items()}
        rows: dict[str, Row] = {}
        for cid in sorted(set(live) | set(result.assignments)):
            lq, sq = live.get(cid, []), result.assignments.get(cid, [])
            change = "" if set(lq) == set(sq) else ("new" if cid not in live else
                                                    "removed" if cid not in result.assignments else "moves")
            rows[cid] = (cid, str(len(lq)), " ".join(f"{q.broker_name}/{q.queue_id}" for q in lq),
                         str(len(sq)), " ".join(f"{q.broker_name}/{q.queue_id}" for q in sq),
                         Text(change, style="bold yellow") if change else "")
        self.show(table, rows)
        before = {mq: h for mq, h in holders(view).items() if mq.topic == self.topic}
        after = {mq: cid for cid, qs in result.assignments.items() for mq in qs}
        moves = [f"{mq.broker_name}/{mq.queue_id}: {before.get(mq) or 'nobody'} → {after.get(mq) or 'nobody'}"
                 for mq in sorted(set(before) | set(after)) if before.get(mq) != after.get(mq)]
        header = (f"{result.strategy} on {self.topic}: {len(moves)} queue(s) would move, "
                  f"{len(result.idle_clients)} idle client(s), {len(result.unassigned_queues)} held by nobody")
        moves_box.update(header + ("\n" + "\n".join(moves[:50]) if moves else ""))

    @on(Select.Changed, "#topic")
    def _topic_changed(self, event: Select.Changed) -> None:
        if isinstance(event.value, str):
            self.topic = event.value
            self._simulate()

    @on(Select.Changed, "#strategy")
    def _strategy_changed(self, event: Select.Changed) -> None:
        if isinstance(event.value, str):
            self.strategy = event.value
            self._simulate()

    @on(Input.Changed, "#add-client")
    def _add_changed(self, event: Input.Changed) -> None:
        self.added = [c.strip() for c in event.value.split(",") if c.strip()]
        self._simulate()

    @on(Input.Changed, "#remove-client")
    def _remove_changed(self, event: Input.Changed) -> None:
        self.removed = [c.strip() for c in event.value.split(",") if c.strip()]
        self._simulate()


class ControlsScreen(ModalScreen[None]):
    """Emulator controls: start a consumer, stop or kill one, produce messages."""

    BINDINGS = [Binding(DEFAULT_KEYS["back"], "close", "Close", id="back")]

    def __init__(self, control: EmulatorControl, *, group: str = "", topic: str = "",
                 client_id: str = "") -> None:
        super().__init__()
        self.control = control
        self.defaults = {"group": group, "topic": topic, "client_id": client_id}

    def compose(self) -> ComposeResult:
        d = self.defaults
        with Vertical(id="controls"):
            yield Label(f"Emulator controls ({self.control.label}) — esc closes", id="controls-title")
            yield Label("Start a consumer")
            with Horizontal(classes="form-row"):
                yield Input(d["group"], placeholder="group", id="start-group")
                yield Input(d["topic"], placeholder="topic", id="start-topic")
                yield Input("*", placeholder="expression", id="start-expr")
                yield Select[str]([(s, s) for s in STRATEGY_NAMES], value="AVG", allow_blank=False,
                                  id="start-strategy")
                yield Button("Start", id="start", variant="success")
            yield Label("Stop or kill a consumer")
            with Horizontal(classes="form-row"):
                yield Input(d["client_id"], placeholder="client id", id="stop-client")
                yield Button("Stop", id="stop", variant="warning")
                yield Button("Kill", id="kill", variant="error")
            yield Label("Produce messages")
            with Horizontal(classes="form-row"):
                yield Input(d["topic"], placeholder="topic", id="produce-topic")
                yield Input("", placeholder="tag", id="produce-tag")
                yield Input("10", placeholder="count", id="produce-count")
                yield Button("Produce", id="produce", variant="primary")

    def _value(self, widget_id: str) -> str:
        return self.query_one(f"#{widget_id}", Input).value.strip()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        app = cast("RmqctlApp", self.app)
        action = event.button.id or ""
        args: dict[str, Any]
        if action == "start":
            strategy = self.query_one("#start-strategy", Select).value
            args = {"group": self._value("start-group"), "topic": self._value("start-topic"),
                    "expression": self._value("start-expr") or "*",
                    "strategy": strategy if isinstance(strategy, str) else "AVG"}
        elif action in ("stop", "kill"):
            args = {"client_id": self._value("stop-client")}
        elif action == "produce":
            args = {"topic": self._value("produce-topic"), "tag": self._value("produce-tag"),
                    "count": self._value("produce-count") or "1"}
        else:
            return
        app.run_control(action, args)

    def action_close(self) -> None:
        self.dismiss(None)


class HelpScreen(ModalScreen[None]):
    """Every key, by binding id (remap them in ``[tui.keys]`` of the config file)."""

    BINDINGS = [Binding("escape,q,question_mark", "close", "Close", id="help-close")]

    def compose(self) -> ComposeResult:
        app = cast("RmqctlApp", self.app)
        keys = {**DEFAULT_KEYS, **app.keymap}
        what = {
            "help": "this help", "filter": "filter rows (regex; ! inverts)", "command": "switch view by name",
            "back": "back / clear filter", "pause": "pause or resume polling", "refresh": "poll now",
            "quit": "quit", "sort": "sort by the next column", "layout": "queue → owner / client → queues",
            "findings": "doctor findings of the group", "whatif": "what-if rebalance",
            "emulator": "emulator controls (emulator sources only)", "down": "down", "up": "up",
        }
        lines = [f"{keys[k]:>18}  {what[k]}  [{k}]" for k in DEFAULT_KEYS]
        lines += ["", "enter opens a group; arrows also move; views for ':' — "
                  "groups queues clients findings whatif emulator help quit",
                  "Read-only against real clusters: only an emulator source can be changed."]
        with Vertical(id="help"):
            yield Label("rmqctl tui — keys", id="help-title")
            yield Static("\n".join(lines))

    def action_close(self) -> None:
        self.dismiss(None)
