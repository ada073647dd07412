"""Reset and skip from the dashboard: the modal that shows ``group reset``'s plan, asks, applies.

The modal renders the app's reactive ``reset`` state (a :class:`ResetState`) and asks for
everything with messages (:class:`ResetPlanRequested`, :class:`ResetApplyRequested`,
:class:`ResetUndoRequested`): the app plans with :func:`rmqctl.actions.reset.plan_reset` and
applies with :func:`rmqctl.actions.reset.apply_reset`, the code ``rmqctl group reset`` runs, so the
plan, the read-only refusal, the audit record, the verification and the undo plan are the CLI's
own. The plan and the outcome are put into words by :mod:`rmqctl.report.actions`, as the CLI puts
them. Nothing is written before the user confirms the plan on screen.

Imports textual, rmqctl's actions and report types, and tui.keys; never tui.app.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, DataTable, Input, Label, Select, Static

from rmqctl import errors
from rmqctl.actions.plan import ResetOutcome, ResetPlan, ResetTarget, time_target
from rmqctl.actions.reset import QueueSelector
from rmqctl.report.actions import reset_outcome_text, reset_plan_text
from tui.keys import DEFAULT_KEYS
from tui.widgets import FieldSelect

#: the targets the modal offers, as ``group reset`` names them
TARGETS: tuple[tuple[str, str], ...] = (
    ("--to-latest (skip the backlog)", "latest"),
    ("--to-earliest (replay what is stored)", "earliest"),
    ("--to-time (ISO time or a duration ago)", "time"),
    ("--to-offset N", "offset"),
    ("--shift-by ±N", "shift"),
)
PLAN_COLUMNS = ("queue", "owner", "current", "target", "replay", "skip", "method")
OUTCOME_COLUMNS = ("queue", "target", "status", "offset_after", "client", "code")


@dataclass(frozen=True)
class ResetRequest:
    """What the form asks for: a target over a group, narrowed like ``--topic`` and ``--queue``."""

    group: str
    target: ResetTarget
    topics: tuple[str, ...] = ()
    queues: tuple[QueueSelector, ...] = ()


@dataclass(frozen=True)
class ResetState:
    """Where the reset of the modal stands: ``planning``, ``planned``, ``applying``, ``applied``
    or ``failed`` (the error says why; a plan that was made stays with it)."""

    phase: str
    group: str
    plan: ResetPlan | None = None
    outcome: ResetOutcome | None = None
    error: str | None = None
    #: the plan is an undo plan read from its file (applied as ``--from-file`` does: refused when stale)
    from_file: bool = False
    hints: tuple[str, ...] = field(default=())


class ResetPlanRequested(Message):
    """The user asked for a plan."""

    def __init__(self, request: ResetRequest) -> None:
        super().__init__()
        self.request = request


class ResetApplyRequested(Message):
    """The user confirmed the plan on screen: apply it."""

    def __init__(self, plan: ResetPlan, from_file: bool) -> None:
        super().__init__()
        self.plan = plan
        self.from_file = from_file


class ResetUndoRequested(Message):
    """The user asked for the undo plan of the outcome shown (a plan to confirm like any other)."""

    def __init__(self, group: str, path: str) -> None:
        super().__init__()
        self.group = group
        self.path = path


class ResetFinished(Message):
    """A plan, an apply or an undo read finished (worker → app)."""

    def __init__(self, state: ResetState) -> None:
        super().__init__()
        self.state = state


def parse_target(kind: str, value: str, now: float) -> ResetTarget:
    """The form's target as ``group reset``'s options read it (``now`` from the source's clock,
    for a time given as a duration ago)."""
    text = value.strip()
    if kind in ("earliest", "latest"):
        return ResetTarget(kind)
    if kind in ("offset", "shift"):
        try:
            number = int(text.replace("+", "", 1) if kind == "shift" else text)
        except ValueError:
            raise errors.UsageError(f"{'--to-offset' if kind == 'offset' else '--shift-by'} takes a whole "
                                    f"number, not {text!r}") from None
        return ResetTarget(kind, number)
    if kind == "time":
        return ResetTarget("time", time_target(text, now))
    raise errors.UsageError(f"unknown target {kind!r}")


def parse_queues(text: str) -> tuple[QueueSelector, ...]:
    """``broker-a/0 broker-a/1`` (spaces or commas): ``--queue`` given once per queue."""
    return tuple(QueueSelector.parse(part) for part in text.replace(",", " ").split())


class ResetScreen(ModalScreen[None]):
    """Reset or skip a group's offsets (or some queues'): plan, confirm, apply, outcome, undo."""

    BINDINGS = [Binding(DEFAULT_KEYS["back"], "close", "Close", id="back")]

    def __init__(self, group: str, *, cluster: str, kind: str = "latest", topic: str = "", queues: str = "",
                 now: float = 0.0) -> None:
        super().__init__()
        self.group = group
        self.cluster = cluster
        self.defaults = {"kind": kind, "topic": topic, "queues": queues}
        #: the source's time when the modal opened (a time given as a duration ago counts from it)
        self.now = now
        self.state: ResetState | None = None
        self.confirming = False

    def compose(self) -> ComposeResult:
        d = self.defaults
        with Vertical(id="reset"):
            yield Label(f"Reset group {self.group} ({self.cluster}) — esc closes", id="reset-title")
            with Horizontal(classes="form-row"):
                yield FieldSelect(list(TARGETS), value=d["kind"], allow_blank=False, id="reset-kind")
                yield Input("", placeholder="value (time, offset or shift)", id="reset-value")
                yield Input(d["topic"], placeholder="topics (all)", id="reset-topic")
                yield Input(d["queues"], placeholder="queues broker/id (all)", id="reset-queues")
                yield Button("Plan", id="reset-plan", variant="primary")
            with VerticalScroll(id="reset-body"):
                yield DataTable(id="reset-table", cursor_type="row", zebra_stripes=True)
                yield Static("", id="reset-lines")
            yield Static("", id="reset-ask")
            with Horizontal(id="reset-buttons"):
                yield Button("Apply…", id="reset-apply", variant="warning", disabled=True)
                yield Button("Yes, apply", id="reset-yes", variant="error", classes="-hidden")
                yield Button("No", id="reset-no", classes="-hidden")
                yield Button("Undo…", id="reset-undo", disabled=True)

    def on_mount(self) -> None:
        self.watch(self.app, "reset", self._state_changed)
        self.query_one("#reset-kind", Select).focus()

    # -- requests up ---------------------------------------------------------------------------

    def request(self) -> ResetRequest:
        """The form as a request (a bad field: :class:`~rmqctl.errors.UsageError`)."""
        kind = self.query_one("#reset-kind", Select).value
        target = parse_target(kind if isinstance(kind, str) else "latest",
                              self.query_one("#reset-value", Input).value, self.now)
        topics = tuple(self.query_one("#reset-topic", Input).value.replace(",", " ").split())
        return ResetRequest(self.group, target, topics, parse_queues(self.query_one("#reset-queues", Input).value))

    @on(Button.Pressed, "#reset-plan")
    def _plan(self) -> None:
        try:
            request = self.request()
        except errors.UsageError as exc:
            self.notify(exc.message, title="bad input", severity="error")
            return
        self.post_message(ResetPlanRequested(request))

    @on(Button.Pressed, "#reset-apply")
    def _ask(self) -> None:
        state = self.state
        if state is None or state.plan is None or state.phase != "planned":
            return
        plan = state.plan
        replay = "unknown" if plan.replay_total is None else plan.replay_total
        skip = "unknown" if plan.skip_total is None else plan.skip_total
        self.confirming = True
        self.query_one("#reset-ask", Static).update(Text(
            f"Reset {len(plan.queues)} queue(s) of {plan.group} on {plan.cluster} "
            f"(replay {replay}, skip {skip})? Nothing is written until you say yes.", style="bold"))
        self._buttons()
        self.query_one("#reset-no", Button).focus()

    @on(Button.Pressed, "#reset-yes")
    def _apply(self) -> None:
        state = self.state
        if not self.confirming or state is None or state.plan is None:
            return
        self.confirming = False
        self.post_message(ResetApplyRequested(state.plan, state.from_file))

    @on(Button.Pressed, "#reset-no")
    def _cancel(self) -> None:
        self.confirming = False
        self.query_one("#reset-ask", Static).update(Text("Not applied: nothing was written."))
        self._buttons()

    @on(Button.Pressed, "#reset-undo")
    def _undo(self) -> None:
        state = self.state
        if state is not None and state.outcome is not None and state.outcome.undo_file:
            self.post_message(ResetUndoRequested(self.group, state.outcome.undo_file))

    def action_close(self) -> None:
        self.dismiss(None)

    # -- state down ----------------------------------------------------------------------------

    def _state_changed(self, state: ResetState | None) -> None:
        if state is None or state.group != self.group:
            return
        self.state = state
        self.confirming = False
        table = self.query_one("#reset-table", DataTable)
        lines: list[str] = []
        ask = ""
        if state.phase == "planning":
            ask = "Planning…"
        elif state.phase == "applying":
            ask = "Applying, then reading every queue back after the clients' commit interval…"
        if state.outcome is not None:
            rows, lines = reset_outcome_text(state.outcome)
            self._fill(table, OUTCOME_COLUMNS, rows)
            applied = sum(1 for q in state.outcome.queues if q.status == "applied")
            ask = f"Applied: {applied} of {len(state.outcome.queues)} queue(s) at their targets."
        elif state.plan is not None:
            rows, clients, lines = reset_plan_text(state.plan)
            self._fill(table, PLAN_COLUMNS, rows)
            lines = lines + [f"{c['client_id']}: {c['effect']}" for c in clients]
            if state.phase == "planned":
                ask = ("Undo plan: apply it to put the queues back. " if state.from_file else "") + \
                      "Plan only: nothing was written. Apply… asks before it writes."
        else:
            self._fill(table, PLAN_COLUMNS, [])
        if state.error is not None:
            ask = f"{state.error}" + "".join(f"\n{h}" for h in state.hints)
        self.query_one("#reset-lines", Static).update(Text("\n".join(lines)))
        self.query_one("#reset-ask", Static).update(Text(ask, style="bold" if state.error else ""))
        self._buttons()

    def _fill(self, table: DataTable[str], columns: tuple[str, ...], rows: list[dict[str, object]]) -> None:
        table.clear(columns=True)
        table.add_columns(*(c.upper() for c in columns))
        for row in rows:
            table.add_row(*(str(row.get(c, "")) for c in columns))

    def _buttons(self) -> None:
        state = self.state
        planned = state is not None and state.phase == "planned" and state.plan is not None
        self.query_one("#reset-apply", Button).disabled = not planned or self.confirming
        self.query_one("#reset-yes", Button).set_class(not self.confirming, "-hidden")
        self.query_one("#reset-no", Button).set_class(not self.confirming, "-hidden")
        self.query_one("#reset-undo", Button).disabled = not (
            state is not None and state.outcome is not None and bool(state.outcome.undo_file)
            and state.phase == "applied")
