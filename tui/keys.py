"""Key bindings by id: the defaults, which ``[tui.keys]`` in the config file remaps, and how a
binding's keys are shown to people (``?``, ``/``, ``:``, never Textual's key names).

Imports textual's key helpers only.
"""

from __future__ import annotations

from textual.keys import format_key

#: binding id → default keys; ``[tui.keys]`` in the config file remaps them by id
DEFAULT_KEYS: dict[str, str] = {
    "help": "question_mark,f1",
    "filter": "slash",
    "command": "colon",
    "back": "escape",
    "pause": "p",
    "refresh": "r",
    "quit": "q",
    "sort": "s",
    "layout": "l",
    "findings": "f",
    "whatif": "w",
    "emulator": "e",
    # writes take a capital letter, so a slip on r (refresh) or s (sort) never opens them
    "reset": "R",
    "skip": "X",
    "down": "j",
    "up": "k",
}


def key_display(keys: str) -> str:
    """Textual key names as a person types them: ``question_mark,f1`` → ``?, f1``,
    ``slash`` → ``/``, ``escape`` → ``esc``."""
    return ", ".join(format_key(k.strip()) for k in keys.split(",") if k.strip())
