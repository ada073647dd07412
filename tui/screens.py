"""The dashboard's screens: groups, one group (queue → owner or client → queues, with the
rebalance timeline), findings, what-if, emulator controls and help.

Every data screen is a :class:`DashScreen`: it watches the app's ``board`` (the latest round, a
reactive attribute) and renders it when it changes — or, when the screen is not visible, on
coming back. Screens never import the app and never read a cluster: data comes down through
the board, requests go up as messages (:class:`~tui.messages.ViewRequested`,
:class:`~tui.messages.ControlRequested`). Each has a filter line (``/``, regex, ``!`` inverts)
and a command line (``:`` view name).

Imports textual, rmqctl's rebalance simulator and tui's own modules (never tui.app).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.events import Resize
from textual.screen import ModalScreen, Screen
from textual.widgets import Button, ContentSwitcher, DataTable, Footer, Input, Label, Select, Static

from rmqctl import errors
from rmqctl.emulator.control_client import ConsumerRequest, ControlAction, Produce, StartConsumer, StopConsumer
from rmqctl.model import RETRY_PREFIX, MessageQueue
from rmqctl.rebalance.simulate import Edits, simulate
from rmqctl.rebalance.strategies import STRATEGY_NAMES
from rmqctl.watch import holders
from tui.columns import (
    CLIENT_COLUMNS,
    FINDING_COLUMNS,
    GROUP_COLUMNS,
    QUEUE_COLUMNS,
    WHATIF_COLUMNS,
    Column,
    describe_client,
    describe_finding,
    describe_queue,
    filter_rows,
)
from tui.keys import DEFAULT_KEYS, key_display
from tui.messages import ControlRequested, ViewRequested
from tui.state import (
    Board,
    ClientRow,
    FindingRow,
    GroupRow,
    QueueRow,
    WhatIfRow,
    client_rows,
    finding_rows,
    group_rows,
    queue_rows,
    whatif_rows,
)
from tui.widgets import FieldSelect, KeyedTable, R, StatusLine, Timeline

#: below this size the views cannot show a row's identity: a notice replaces them
MIN_WIDTH, MIN_HEIGHT = 50, 12
TOO_SMALL = "Terminal too small."


class DashScreen(Screen[None]):
    """A screen of the dashboard: renders the app's ``board`` (which it watches), with a status
    line, a filter line and a command line. The app asks any screen, through this class, which
    group and client are selected; it never looks methods up by name."""

    BINDINGS = [
        Binding(DEFAULT_KEYS["filter"], "filter", "Filter", id="filter"),
        Binding(DEFAULT_KEYS["back"], "back", "Back", id="back"),
        Binding(DEFAULT_KEYS["sort"], "sort", "Sort", id="sort"),
    ]

    #: the group this screen is about (``None``: every group)
    group: str | None = None

    def __init__(self) -> None:
        super().__init__()
        self.filter_text = ""
        #: the title line's own text; the sort and the kept filter are shown after it
        self.title_text = ""
        #: the latest board the app published (``None`` before the first round)
        self.board: Board | None = None
        self._stale = False

    def title_line(self, text: str) -> Static:
        """The title line, starting with ``text``."""
        self.title_text = text
        return Static(text, id="title")

    def set_title(self, text: str) -> None:
        self.title_text = text
        self.show_title()

    def show_title(self) -> None:
        """The title with what shapes the rows: the sort column and direction, the filter."""
        marks = []
        table = self.main_table()
        if table is not None and table.sort_column is not None:
            label = next((c.label for c in table.all_columns if c.key == table.sort_column), table.sort_column)
            marks.append(f"sort {label} {'▼' if table.sort_reverse else '▲'}")
        if self.filter_text:
            marks.append(f"filter /{self.filter_text}/")
        text = self.title_text + ("".join(f" │ {m}" for m in marks))
        self.query_one("#title", Static).update(Text(text))

    def compose_extras(self) -> ComposeResult:
        yield Static(TOO_SMALL, id="too-small")
        yield Input(placeholder="filter (regex, ! inverts)", id="filter", classes="-hidden")
        yield Input(placeholder="view: groups queues clients findings whatif emulator help quit",
                    id="command", classes="-hidden")
        yield StatusLine(id="status")
        yield Footer()

    def on_mount(self) -> None:
        self.prepare()
        self.watch(self.app, "board", self._board_changed)
        self._fit(self.app.size.width, self.app.size.height)

    def on_resize(self, event: Resize) -> None:
        self._fit(event.size.width, event.size.height)

    def _fit(self, width: int, height: int) -> None:
        small = width < MIN_WIDTH or height < MIN_HEIGHT
        self.set_class(small, "-too-small")
        if small:
            self.query_one("#too-small", Static).update(
                f"Terminal too small: {width}×{height}.\nrmqctl tui needs at least {MIN_WIDTH}×{MIN_HEIGHT}.")

    def prepare(self) -> None:
        """Get ready before the first board is shown (focus, …)."""

    def on_view(self) -> bool:
        """On top, or seen behind a modal screen (a form or the help)."""
        return self.is_active or (self.is_current and isinstance(self.app.screen, ModalScreen))

    def _board_changed(self, board: Board | None) -> None:
        self.board = board
        if self.on_view():
            self._stale = False
            self.render_board()
        else:  # hidden under another screen: render when it comes back
            self._stale = True

    def on_screen_resume(self) -> None:
        if self._stale:
            self._stale = False
            self.render_board()

    def render_board(self) -> None:
        """Show :attr:`board` in this screen's widgets."""

    def selected_group(self) -> str | None:
        """The group the user is looking at or has the cursor on."""
        return self.group

    def selected_client(self) -> str | None:
        """The client the user has the cursor on (``None``: none)."""
        return None

    def selected_queue(self) -> MessageQueue | None:
        """The queue the user has the cursor on (``None``: none, or a view of whole groups)."""
        return None

    def main_table(self) -> KeyedTable[Any] | None:
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
        self.render_board()
        self.show_title()

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
        self.post_message(ViewRequested(event.value))

    def action_back(self) -> None:
        for box_id in ("#command", "#filter"):
            box = self.query_one(box_id, Input)
            if box.has_focus or (box_id == "#filter" and self.filter_text):
                if box_id == "#filter":
                    self.filter_text = ""
                    box.value = ""
                    self.render_board()
                    self.show_title()
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
        self.show_title()

    def show(self, table: KeyedTable[R], rows: Mapping[str, R], columns: Sequence[Column[R]]) -> None:
        table.sync(filter_rows(rows, self.filter_text, columns))


class GroupsScreen(DashScreen):
    """Every consumer group: health, clients, queues, lag, trend, consume TPS."""

    def compose(self) -> ComposeResult:
        yield self.title_line("Consumer groups")
        yield KeyedTable[GroupRow](GROUP_COLUMNS, id="groups-table")
        yield from self.compose_extras()

    def render_board(self) -> None:
        rows = group_rows(self.board) if self.board is not None else {}
        self.show(self.query_one("#groups-table", KeyedTable), rows, GROUP_COLUMNS)

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
        yield self.title_line(f"Group {self.group}")
        with ContentSwitcher(initial=self.view_layout, id="layouts"):
            yield KeyedTable[QueueRow](QUEUE_COLUMNS, id="queues")
            yield KeyedTable[ClientRow](CLIENT_COLUMNS, id="clients")
        yield Static("", id="row-detail")
        yield Static("Rebalance timeline", id="timeline-title")
        yield Timeline(id="timeline", max_lines=200)
        yield from self.compose_extras()

    def main_table(self) -> KeyedTable[Any] | None:
        return self.query_one(f"#{self.view_layout}", KeyedTable)

    def prepare(self) -> None:
        self.query_one(f"#{self.view_layout}", KeyedTable).focus()

    def render_board(self) -> None:
        board = self.board
        group = self.group or ""
        number = board.number if board is not None else 0
        if number == self.title_round:
            pass  # the summary only changes with a new round
        elif board is None or (index := board.index(group)) is None:
            err = board.group_error(group) if board is not None else None
            self.set_title(f"Group {group}: " + (err.message if err else "no data yet"))
        else:
            self.set_title(index.summary)
            # with several brokers, "OrderTopic 0" names two queues: keep the broker column
            self.query_one("#queues", KeyedTable).keep_columns({"broker"} if index.brokers > 1 else ())
        self.title_round = number
        if self.view_layout == "queues":
            self.show(self.query_one("#queues", KeyedTable),
                      queue_rows(board, group) if board is not None else {}, QUEUE_COLUMNS)
        else:
            self.show(self.query_one("#clients", KeyedTable),
                      client_rows(board, group) if board is not None else {}, CLIENT_COLUMNS)
        timeline = self.query_one("#timeline", Timeline)
        entries = [e for e in board.dashboard.timeline if e.group == group] if board is not None else []
        if len(entries) < self.timeline_seen:
            timeline.clear()
            self.timeline_seen = 0
        for entry in entries[self.timeline_seen:]:
            timeline.add(entry.line())
        self.timeline_seen = len(entries)
        self.show_detail()

    def show_detail(self) -> None:
        """The row under the cursor, every value in full (the table elides long ones)."""
        row = self.query_one(f"#{self.view_layout}", KeyedTable).current_row()
        text = (describe_queue(row) if isinstance(row, QueueRow)
                else describe_client(row) if isinstance(row, ClientRow) else "")
        self.query_one("#row-detail", Static).update(Text(text))

    @on(DataTable.RowHighlighted)
    def _row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self.show_detail()

    def _fit(self, width: int, height: int) -> None:
        super()._fit(width, height)
        # on a short terminal the table gets the room: fewer timeline lines
        self.query_one("#timeline", Timeline).styles.height = 3 if height < 30 else 7

    def selected_client(self) -> str | None:
        if self.view_layout == "clients":
            return self.query_one("#clients", KeyedTable).current_key()
        row = self.query_one("#queues", KeyedTable).current_row()
        return row.owner.holders[0] if isinstance(row, QueueRow) and row.owner.holders else None

    def selected_queue(self) -> MessageQueue | None:
        if self.view_layout != "queues":
            return None
        row = self.query_one("#queues", KeyedTable).current_row()
        return MessageQueue(row.topic, row.broker, row.queue_id) if isinstance(row, QueueRow) else None

    def action_layout(self) -> None:
        self.view_layout = "clients" if self.view_layout == "queues" else "queues"
        self.query_one("#layouts", ContentSwitcher).current = self.view_layout
        self.render_board()
        self.query_one(f"#{self.view_layout}", KeyedTable).focus()
        self.show_title()
        self.show_detail()

    def action_findings(self) -> None:
        self.app.push_screen(FindingsScreen(self.group or ""))

    def action_whatif(self) -> None:
        self.app.push_screen(WhatIfScreen(self.group or ""))


class FindingsScreen(DashScreen):
    """The doctor's findings for one group, with detail, evidence and fix."""

    def __init__(self, group: str) -> None:
        super().__init__()
        self.group = group

    def compose(self) -> ComposeResult:
        yield self.title_line(f"Findings for {self.group}")
        yield KeyedTable[FindingRow](FINDING_COLUMNS, id="findings")
        with VerticalScroll(id="detail-box"):
            yield Static("", id="detail")
        yield from self.compose_extras()

    def prepare(self) -> None:
        self.query_one("#findings", KeyedTable).focus()

    def _findings(self) -> list[Any]:
        return self.board.dashboard.findings.get(self.group or "", []) if self.board is not None else []

    def render_board(self) -> None:
        findings = self._findings()
        table = self.query_one("#findings", KeyedTable)
        self.show(table, finding_rows(findings), FINDING_COLUMNS)
        self.set_title(f"Findings for {self.group}: {len(findings)} (the same checks as rmqctl doctor)")
        self._show_detail(table.current_key())

    def _show_detail(self, key: str | None) -> None:
        table = self.query_one("#findings", KeyedTable)
        row = table.rows_by_key.get(key) if key is not None else None
        detail = self.query_one("#detail", Static)
        if not isinstance(row, FindingRow):
            detail.update("No findings: nothing the doctor checks is wrong with this group."
                          if not self._findings() else "")
            return
        detail.update(describe_finding(row.finding))

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
        self.strategy_chosen = False

    def compose(self) -> ComposeResult:
        yield self.title_line(f"What-if for {self.group}")
        with Horizontal(id="whatif-controls"):
            yield FieldSelect([], prompt="topic", id="topic", allow_blank=True)
            yield FieldSelect([(s, s) for s in STRATEGY_NAMES], value="AVG", allow_blank=False, id="strategy")
            yield Input(placeholder="add client id", id="add-client")
            yield Input(placeholder="remove client id", id="remove-client")
        yield KeyedTable[WhatIfRow](WHATIF_COLUMNS, id="whatif")
        yield Static("", id="moves")
        yield from self.compose_extras()

    def prepare(self) -> None:
        # the form is what one comes here to use: focus its first field
        self.query_one("#topic", Select).focus()

    def _view(self) -> Any:
        return self.board.view(self.group or "") if self.board is not None else None

    def render_board(self) -> None:
        view = self._view()
        if view is not None and not self.strategy_chosen:
            # start from the strategy the live clients report (once: the user may change it)
            self.strategy_chosen = True
            if (s := view.strategy) in STRATEGY_NAMES:
                self.strategy = s
                self.query_one("#strategy", Select).value = s
        topics = sorted(t for t in view.topic_queues if not t.startswith(RETRY_PREFIX)) if view is not None else []
        select = self.query_one("#topic", Select)
        if topics and self.topic not in topics:
            self.topic = topics[0]
            select.set_options([(t, t) for t in topics])
            select.value = self.topic
        self._simulate()

    def _simulate(self) -> None:
        view = self._view()
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
        self.show(table, whatif_rows(view, self.topic, result), WHATIF_COLUMNS)
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

    def __init__(self, label: str, *, group: str = "", topic: str = "", client_id: str = "") -> None:
        super().__init__()
        #: which emulator the controls drive (``embedded`` or its control URL)
        self.label = label
        self.defaults = {"group": group, "topic": topic, "client_id": client_id}

    def compose(self) -> ComposeResult:
        d = self.defaults
        with Vertical(id="controls"):
            yield Label(f"Emulator controls ({self.label}) — esc closes", id="controls-title")
            yield Label("Start a consumer")
            with Horizontal(classes="form-row"):
                yield Input(d["group"], placeholder="group", id="start-group")
                yield Input(d["topic"], placeholder="topic", id="start-topic")
                yield Input("*", placeholder="expression", id="start-expr")
                yield FieldSelect([(s, s) for s in STRATEGY_NAMES], value="AVG", allow_blank=False,
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

    def action_for(self, button: str) -> ControlAction:
        """The typed action a button asks for, from the form's fields (a bad field: UsageError)."""
        if button == "start":
            strategy = self.query_one("#start-strategy", Select).value
            return StartConsumer(ConsumerRequest(
                self._value("start-group"), self._value("start-topic"), self._value("start-expr") or "*",
                strategy if isinstance(strategy, str) else "AVG"))
        if button in ("stop", "kill"):
            client_id = self._value("stop-client")
            if not client_id:
                raise errors.UsageError("which consumer? give its client id")
            return StopConsumer(client_id, kill=button == "kill")
        if button == "produce":
            count = self._value("produce-count") or "1"
            try:
                number = int(count)
            except ValueError:
                raise errors.UsageError(f"count must be a whole number, not {count!r}") from None
            return Produce(self._value("produce-topic"), number, self._value("produce-tag") or None)
        raise errors.UsageError(f"unknown control {button!r}")

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        try:
            action = self.action_for(event.button.id or "")
        except errors.UsageError as exc:
            self.notify(exc.message, title="bad input", severity="error")
            return
        self.post_message(ControlRequested(action))

    def action_close(self) -> None:
        self.dismiss(None)


class HelpScreen(ModalScreen[None]):
    """Every key, by binding id (remap them in ``[tui.keys]`` of the config file)."""

    BINDINGS = [Binding("escape,q,question_mark", "close", "Close", id="help-close")]

    def __init__(self, keymap: Mapping[str, str]) -> None:
        super().__init__()
        #: binding id → keys, where they differ from the defaults
        self.keymap = dict(keymap)

    def compose(self) -> ComposeResult:
        keys = {**DEFAULT_KEYS, **self.keymap}
        what = {
            "help": "this help", "filter": "filter rows (regex; ! inverts)", "command": "switch view by name",
            "back": "back / clear filter", "pause": "pause or resume polling", "refresh": "poll now",
            "quit": "quit", "sort": "sort by the next column", "layout": "queue → owner / client → queues",
            "findings": "doctor findings of the group", "whatif": "what-if rebalance",
            "emulator": "emulator controls (emulator sources only)",
            "reset": "reset the group's (or queue's) offsets: plan, ask, apply",
            "skip": "skip the backlog (reset to latest): plan, ask, apply", "down": "down", "up": "up",
        }
        lines = [f"{key_display(keys[k]):>12}  {what[k]}  [{k}]" for k in DEFAULT_KEYS]
        lines.append(f"{'ctrl+c':>12}  quit")
        lines += ["", "enter opens a group; arrows also move; views for ':' — "
                  "groups queues clients findings whatif emulator help quit",
                  "Resets write only after you confirm the plan, and never in a read-only context."]
        with Vertical(id="help"):
            yield Label("rmqctl tui — keys", id="help-title")
            yield Static("\n".join(lines))

    def action_close(self) -> None:
        self.dismiss(None)
