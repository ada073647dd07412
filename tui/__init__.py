"""``rmqctl tui``: a live Textual dashboard of RocketMQ consumer groups.

Build it with :func:`make_app` (the CLI and the tests do). This package imports ``rmqctl``;
``rmqctl`` never imports it (the CLI loads it lazily inside the ``tui`` and ``demo`` commands).
"""

from __future__ import annotations

from tui.app import RmqctlApp, TuiSettings, make_app

__all__ = ["RmqctlApp", "TuiSettings", "make_app"]
