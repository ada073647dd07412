"""Messages of the dashboard, in the past tense: workers tell the app what happened, and screens
tell it what the user asked for (state flows down as the app's reactive attributes; requests
flow up as these messages, so no screen imports the app).

Imports textual's Message, rmqctl's model and tui.state; no widgets.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from textual.message import Message

from rmqctl import errors
from rmqctl.emulator.control_client import ControlAction
from rmqctl.watch import Round
from tui.state import Prepared


class RoundLoaded(Message):
    """A poll finished: the round and the errors of listing the groups, and the round worked
    out for the dashboard (``prepared``; ``None`` when it could not be, with ``error`` saying
    why)."""

    def __init__(self, round: Round, list_errors: Mapping[str, errors.RmqctlError],  # noqa: A002
                 prepared: Prepared | None = None, error: Exception | None = None) -> None:
        super().__init__()
        self.round = round
        self.list_errors = dict(list_errors)
        self.prepared = prepared
        self.error = error


class PollFailed(Message):
    """A poll could not read anything (the name server is down, …); the next one still runs."""

    def __init__(self, error: errors.RmqctlError) -> None:
        super().__init__()
        self.error = error


class ViewRequested(Message):
    """The user typed a view name on the command line (``:clients``)."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name


class ControlRequested(Message):
    """The user asked the emulator's controls for ``action``."""

    def __init__(self, action: ControlAction) -> None:
        super().__init__()
        self.action = action


class ControlFinished(Message):
    """An emulator control action finished, with its result or its error."""

    def __init__(self, action: ControlAction, result: dict[str, Any] | None = None,
                 error: errors.RmqctlError | None = None) -> None:
        super().__init__()
        self.action = action
        self.result = result
        self.error = error
