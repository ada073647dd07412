"""The dashboard application: :func:`make_app` builds it, the poll worker feeds it.

One worker (group ``poll``) takes a round through :class:`rmqctl.watch.Watcher` and posts
:class:`~tui.messages.RoundLoaded` (or :class:`~tui.messages.PollFailed`); the app folds it into
the :class:`~tui.state.Dashboard` and publishes the result as its reactive ``board``, which the
screens watch (and ``status``, which the status lines watch): state flows down, and the app
never calls a screen to refresh. Screens ask for things with messages
(:class:`~tui.messages.ViewRequested`, :class:`~tui.messages.ControlRequested`); the app reads
the selected group and client through the :class:`~tui.screens.DashScreen` base class. The next
poll is scheduled only when the previous one has been handled, so polls never overlap, and a
failing source only changes the status line. Emulator control actions run in their own worker and
are offered only when an :class:`~rmqctl.emulator.control_client.EmulatorControl` was given.

Imports textual and rmqctl; rmqctl never imports this package.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from textual import work
from textual.app import App
from textual.binding import Binding
from textual.reactive import var
from textual.screen import ModalScreen
from textual.timer import Timer

from rmqctl import errors
from rmqctl.actions.permission import Writer
from rmqctl.actions.plan import ResetPlan, plan_from_document
from rmqctl.actions.reset import apply_reset, plan_reset
from rmqctl.doctor.subscriptions import tag_conflict_topics
from rmqctl.emulator.control_client import ControlAction, EmulatorControl, describe_result, perform
from rmqctl.source import Opened
from rmqctl.watch import Round, Watcher
from tui.keys import DEFAULT_KEYS
from tui.messages import ControlFinished, ControlRequested, PollFailed, RoundLoaded, ViewRequested
from tui.reset import (
    ResetApplyRequested,
    ResetFinished,
    ResetPlanRequested,
    ResetRequest,
    ResetScreen,
    ResetState,
    ResetUndoRequested,
)
from tui.screens import (
    ControlsScreen,
    DashScreen,
    FindingsScreen,
    GroupScreen,
    GroupsScreen,
    HelpScreen,
    WhatIfScreen,
)
from tui.state import Board, Dashboard
from tui.widgets import Status

#: names ``:`` accepts, and what they open
VIEW_NAMES = ("groups", "queues", "clients", "findings", "whatif", "emulator", "help", "quit")


@dataclass(frozen=True)
class TuiSettings:
    """How the dashboard runs (the CLI fills it from options and the config file)."""

    #: open this group's view directly and poll only it (``None``: every group)
    group: str | None = None
    #: seconds between the end of one poll and the start of the next
    interval: float = 2.0
    #: binding id → keys, over :data:`DEFAULT_KEYS`
    keys: Mapping[str, str] = field(default_factory=dict)
    #: emulator controls (``None``: read-only, the only mode against a real cluster)
    control: EmulatorControl | None = None
    #: run the doctor's checks on every poll (the health column and the findings view)
    checks: bool = True
    #: who writes a reset, or :class:`~rmqctl.errors.WriteRefused` when this source may not be
    #: written (``rmqctl.actions.permission.check_writable`` for what the dashboard was opened
    #: on); ``None``: the dashboard writes nothing
    writer: Callable[[], Writer] | None = None
    #: the cluster a plan names (``group reset``'s: ``emulator SCENARIO`` or the source's label)
    cluster: str | None = None


class RmqctlApp(App[None]):
    """``rmqctl tui``."""

    CSS_PATH = "rmqctl.tcss"
    TITLE = "rmqctl"
    ENABLE_COMMAND_PALETTE = False
    BINDINGS = [
        Binding(DEFAULT_KEYS["help"], "help", "Help", id="help"),
        Binding(DEFAULT_KEYS["command"], "command", "View", id="command"),
        Binding(DEFAULT_KEYS["pause"], "pause", "Pause", id="pause"),
        Binding(DEFAULT_KEYS["refresh"], "refresh", "Refresh", id="refresh"),
        Binding(DEFAULT_KEYS["emulator"], "emulator", "Emulator", id="emulator"),
        # writes stay out of the footer (the help lists them): the footer is the same on every source
        Binding(DEFAULT_KEYS["reset"], "reset('earliest')", "Reset", id="reset", show=False),
        Binding(DEFAULT_KEYS["skip"], "reset('latest')", "Skip", id="skip", show=False),
        Binding(DEFAULT_KEYS["quit"], "quit", "Quit", id="quit"),
        # k9s and every terminal program: ctrl+c ends it (Textual would only say how to quit, or
        # copy when an input has focus)
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True, id="interrupt"),
    ]

    #: the latest round as the screens show it (``None`` before the first one); screens watch it
    board: var[Board | None] = var(None)
    #: the status line's text; every screen's status line watches it
    status: var[Status] = var(Status())
    #: where the reset of the reset modal stands; the modal watches it
    reset: var[ResetState | None] = var(None)

    def __init__(self, opened: Opened, settings: TuiSettings) -> None:
        super().__init__()
        self.opened = opened
        self.settings = settings
        self.dashboard = Dashboard()
        # the findings need each POP group's newest retry copies (REPEATED_REDELIVERY): read back
        # with every round, at most REDELIVERY_SAMPLE per retry queue
        self.watcher = Watcher(opened.source, [settings.group] if settings.group else None,
                               interval=settings.interval, clock=opened.clock, retry_copies=settings.checks)
        self.paused = False
        self.polling = False
        self.poll_again = False
        self.polls_done = 0
        self.last_updated: float | None = None
        self.last_failure: errors.RmqctlError | None = None
        self._next_poll: Timer | None = None
        self._gc_threshold: tuple[int, int, int] | None = None
        keys = {**DEFAULT_KEYS, **dict(settings.keys)}
        self.keymap = {k: v for k, v in keys.items() if DEFAULT_KEYS.get(k) != v}

    # -- life cycle ----------------------------------------------------------------------------

    def on_mount(self) -> None:
        # The dashboard holds a large long-lived heap (two samples of every queue, the table's
        # cells), so the collector's full pass costs tens of milliseconds at 10,000 queues and
        # must not run every poll. But each refresh leaves cyclic garbage in the oldest
        # generation (textual's drawn lines of the previous screen, some thousands of objects),
        # which only a full pass frees: it runs after 100 middle-generation passes (every few
        # dozen polls at that size), which keeps memory flat without paying it every poll.
        self._gc_threshold = gc.get_threshold()
        gc.set_threshold(2_000, 10, 100)

        if self.keymap:
            self.set_keymap(self.keymap)
        self.push_screen(GroupsScreen())
        if self.settings.group:
            self.push_screen(GroupScreen(self.settings.group))
        self.set_interval(1.0, self.update_status)
        self.start_poll()

    def on_unmount(self) -> None:
        if self._gc_threshold is not None:
            gc.set_threshold(*self._gc_threshold)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "emulator":
            return self.settings.control is not None
        if action == "reset":
            return self.current_group() is not None and not isinstance(self.screen, ModalScreen)
        return True

    # -- polling -------------------------------------------------------------------------------

    def start_poll(self) -> None:
        """Poll now, unless a poll is running (then poll again right after it)."""
        if self.polling:
            self.poll_again = True
            return
        if self._next_poll is not None:
            self._next_poll.stop()
            self._next_poll = None
        self.polling = True
        self.poll()

    async def sampled(self, rnd: Round) -> Round:
        """``rnd`` with the recent messages of each group's conflicting topics read back (as
        ``rmqctl doctor`` does), so its findings can say how many messages are lost."""
        views = dict(rnd.current.views)
        sampled = False
        for group, view in rnd.current.views.items():
            try:
                topics = tag_conflict_topics(view)
            except Exception:  # noqa: BLE001 - odd data: the dashboard says so when it shows the round
                continue
            if not topics:
                continue
            sampled = True
            try:
                views[group] = await self.opened.source.sample_messages(view, topics)
            except errors.RmqctlError as exc:  # the finding then says no sample was taken
                views[group] = dataclasses.replace(view, errors={**view.errors, "sample": exc})
        if not sampled:
            return rnd
        return dataclasses.replace(rnd, current=dataclasses.replace(rnd.current, views=views))

    @work(exclusive=True, group="poll", exit_on_error=False)
    async def poll(self) -> None:
        try:
            rnd = await self.watcher.poll()
            if self.settings.checks:
                rnd = await self.sampled(rnd)
        except errors.RmqctlError as exc:
            self.post_message(PollFailed(exc))
            return
        except Exception as exc:  # noqa: BLE001 - a broken source must not take the TUI down
            self.post_message(PollFailed(errors.RmqctlError(f"{type(exc).__name__}: {exc}")))
            return
        list_errors = self.watcher.list_errors
        try:
            # what costs time in proportion to the queues (what changed, the doctor's checks,
            # the queue indexes) is worked out here, off the UI thread; the app only commits it
            prepared = await asyncio.to_thread(self.dashboard.prepare, rnd, list_errors,
                                               check=self.settings.checks)
        except Exception as exc:  # noqa: BLE001 - odd data from one round must not end the session
            self.post_message(RoundLoaded(rnd, list_errors, error=exc))
            return
        self.post_message(RoundLoaded(rnd, list_errors, prepared))

    def _poll_finished(self) -> None:
        self.polling = False
        self.polls_done += 1
        if self.poll_again:
            self.poll_again = False
            self.start_poll()
        elif not self.paused:
            self._next_poll = self.set_timer(self.settings.interval, self._poll_due)

    def _poll_due(self) -> None:
        self._next_poll = None
        if not self.paused:
            self.start_poll()

    def on_round_loaded(self, message: RoundLoaded) -> None:
        if not self.screen_stack:  # a poll that finished while the app was closing
            return
        shown, board = self.dashboard.round, self.board
        try:
            if message.error is not None:
                raise message.error
            prepared = message.prepared or self.dashboard.prepare(message.round, message.list_errors,
                                                                  check=self.settings.checks)
            self.dashboard.commit(prepared)
            self.last_updated = message.round.current.taken_at
            self.last_failure = None
            self.publish()
        except Exception as exc:  # noqa: BLE001 - odd data from one round must not end the session
            self.last_failure = errors.RmqctlError(f"cannot show this round: {type(exc).__name__}: {exc}")
            # keep showing the last good round, and compare the next one with nothing
            self.dashboard.round = shown
            self.watcher.last = None
            self.board = board
            self.update_status()
        finally:
            self._poll_finished()

    def on_poll_failed(self, message: PollFailed) -> None:
        if not self.screen_stack:
            return
        self.last_failure = message.error
        self.update_status()
        self._poll_finished()

    def publish(self) -> None:
        """Hand the dashboard's latest round to the screens (they watch ``board``)."""
        sample = self.dashboard.sample
        now = sample.taken_at if sample is not None else self.opened.clock.now()
        self.board = Board(self.dashboard.rounds_applied, self.dashboard, now)
        self.update_status()

    def status_text(self) -> str:
        parts = [self.opened.label]
        if self.last_updated is None:
            parts.append("loading…" if self.last_failure is None else "no data yet")
        else:
            ago = max(0, int(self.opened.clock.now() - self.last_updated))
            parts.append(f"updated {ago} s ago")
        parts.append(f"every {self.settings.interval:g} s")
        if self.paused:
            parts.append("PAUSED")
        if self.settings.control is not None:
            parts.append(f"controls: {self.settings.control.label}")
        problems = dict(self.dashboard.broker_errors())
        if self.last_failure is not None:
            problems = {"poll": self.last_failure.message, **problems}
        if problems:
            parts.append("errors: " + "; ".join(f"{k}: {v}" for k, v in problems.items()))
        return " │ ".join(parts)

    def update_status(self) -> None:
        self.status = Status(self.status_text(), bool(self.last_failure or self.dashboard.broker_errors()))

    # -- actions -------------------------------------------------------------------------------

    def action_pause(self) -> None:
        self.paused = not self.paused
        if self.paused and self._next_poll is not None:
            self._next_poll.stop()
            self._next_poll = None
        if not self.paused and not self.polling:
            self.start_poll()
        self.update_status()

    def action_refresh(self) -> None:
        self.start_poll()

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.keymap))

    def action_command(self) -> None:
        if isinstance(self.screen, DashScreen):
            self.screen.show_command()

    def action_emulator(self) -> None:
        if self.settings.control is None or isinstance(self.screen, ControlsScreen):
            return
        self.push_screen(ControlsScreen(self.settings.control.label, **self.control_defaults()))

    def control_defaults(self) -> dict[str, str]:
        """Group, topic and client the controls form starts with (from the current view)."""
        screen = self.screen if isinstance(self.screen, DashScreen) else None
        group = self.current_group()
        out = {"group": group or "", "topic": "", "client_id": ""}
        view = self.dashboard.view(group) if group else None
        if view is not None:
            topics = sorted(t for t in view.topic_queues if not t.startswith("%"))
            out["topic"] = topics[0] if topics else ""
            picked = screen.selected_client() if screen is not None else None
            out["client_id"] = picked or (view.client_ids[0] if view.client_ids else "")
        return out

    def current_group(self) -> str | None:
        """The group of the current screen, or the one under its cursor."""
        return self.screen.selected_group() if isinstance(self.screen, DashScreen) else None

    def on_view_requested(self, message: ViewRequested) -> None:
        self.switch_view(message.name)

    def switch_view(self, name: str) -> None:
        """``:name``: groups, queues, clients, findings, whatif, emulator, help, quit."""
        name = name.strip().lower().lstrip(":")
        if name in ("q", "quit"):
            self.exit()
            return
        if name == "help":
            self.action_help()
            return
        if name in ("e", "emulator", "ctl"):
            if self.settings.control is None:
                self.notify("emulator controls need an emulator source", severity="warning")
            else:
                self.action_emulator()
            return
        matches = [v for v in VIEW_NAMES if v.startswith(name)] if name else []
        if len(matches) != 1:
            self.notify(f"unknown view {name!r}; views: {', '.join(VIEW_NAMES)}", severity="warning")
            return
        target = matches[0]
        if target == "groups":
            while len(self.screen_stack) > 2:
                self.pop_screen()
            return
        group = self.current_group() or self.settings.group
        if group is None:
            self.notify("choose a group first", severity="warning")
            return
        while len(self.screen_stack) > 2:
            self.pop_screen()
        if target in ("queues", "clients"):
            self.push_screen(GroupScreen(group, layout=target))
        elif target == "findings":
            self.push_screen(GroupScreen(group))
            self.push_screen(FindingsScreen(group))
        elif target == "whatif":
            self.push_screen(GroupScreen(group))
            self.push_screen(WhatIfScreen(group))

    # -- emulator controls ---------------------------------------------------------------------

    def on_control_requested(self, message: ControlRequested) -> None:
        self.run_control(message.action)

    @work(exclusive=False, group="control", exit_on_error=False)
    async def run_control(self, action: ControlAction) -> None:
        control = self.settings.control
        if control is None:
            return
        try:
            result = await perform(control, action)
        except errors.RmqctlError as exc:
            self.post_message(ControlFinished(action, error=exc))
            return
        self.post_message(ControlFinished(action, result))

    def on_control_finished(self, message: ControlFinished) -> None:
        if message.error is not None:
            self.notify(message.error.message, title=f"{message.action.verb} failed", severity="error")
            return
        self.notify(describe_result(message.action, message.result or {}), title="emulator")
        self.start_poll()


    # -- reset and skip ------------------------------------------------------------------------

    @property
    def cluster_label(self) -> str:
        return self.settings.cluster or self.opened.label

    def action_reset(self, kind: str) -> None:
        """Open the reset modal on the group of the screen (the queue under the cursor in a
        group's queue view), with ``kind`` (``earliest`` for reset, ``latest`` for skip) chosen."""
        group = self.current_group()
        if group is None or isinstance(self.screen, ModalScreen):
            return
        screen = self.screen if isinstance(self.screen, DashScreen) else None
        picked = screen.selected_queue() if screen is not None else None
        topic, queue = (picked.topic, f"{picked.broker_name}/{picked.queue_id}") if picked else ("", "")
        self.reset = None
        self.push_screen(ResetScreen(group, cluster=self.cluster_label, kind=kind, topic=topic, queues=queue,
                                     now=self.opened.clock.now()))

    def on_reset_plan_requested(self, message: ResetPlanRequested) -> None:
        self.reset = ResetState("planning", message.request.group)
        self.run_reset_plan(message.request)

    @work(exclusive=True, group="reset", exit_on_error=False)
    async def run_reset_plan(self, request: ResetRequest) -> None:
        try:
            plan = await plan_reset(self.opened.source, request.group, request.target, cluster=self.cluster_label,
                                    topics=request.topics, queues=request.queues)
        except errors.RmqctlError as exc:
            self.post_message(ResetFinished(_failed(request.group, exc)))
            return
        self.post_message(ResetFinished(ResetState("planned", request.group, plan)))

    def on_reset_undo_requested(self, message: ResetUndoRequested) -> None:
        try:
            plan = plan_from_document(json.loads(Path(message.path).read_text(encoding="utf-8")))
        except (OSError, ValueError, errors.RmqctlError) as exc:
            error = exc if isinstance(exc, errors.RmqctlError) else errors.RmqctlError(
                f"cannot read the undo plan {message.path}: {exc}")
            self.reset = _failed(message.group, error)
            return
        self.reset = ResetState("planned", message.group, plan, from_file=True)

    def on_reset_apply_requested(self, message: ResetApplyRequested) -> None:
        plan = message.plan
        try:
            if self.settings.writer is None:
                raise errors.WriteRefused("this dashboard was opened without writes: nothing was written")
            writer = self.settings.writer()
        except errors.RmqctlError as exc:
            self.reset = _failed(plan.group, exc, plan)
            return
        self.reset = ResetState("applying", plan.group, plan, from_file=message.from_file)
        self.run_reset_apply(plan, writer, message.from_file)

    @work(exclusive=True, group="reset", exit_on_error=False)
    async def run_reset_apply(self, plan: ResetPlan, writer: Writer, from_file: bool) -> None:
        try:
            outcome = await apply_reset(self.opened.source, plan, writer, from_file=from_file)
        except errors.RmqctlError as exc:
            self.post_message(ResetFinished(_failed(plan.group, exc, plan)))
            return
        self.post_message(ResetFinished(ResetState("applied", plan.group, plan, outcome)))

    def on_reset_finished(self, message: ResetFinished) -> None:
        self.reset = message.state
        if message.state.outcome is not None:
            self.start_poll()


def _failed(group: str, exc: errors.RmqctlError, plan: ResetPlan | None = None) -> ResetState:
    """The reset stopped at ``exc``: its one line and hint, as the CLI prints them."""
    return ResetState("failed", group, plan, error=f"rmqctl: error: {exc.message}",
                      hints=(f"hint: {exc.hint}",) if exc.hint else ())


def make_app(opened: Opened, settings: TuiSettings | None = None) -> RmqctlApp:
    """The dashboard over an opened source (the CLI and the tests both build it here)."""
    return RmqctlApp(opened, settings or TuiSettings())
