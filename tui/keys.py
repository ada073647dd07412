"""Key bindings by id: the defaults, which ``[tui.keys]`` in the config file remaps.

Imports nothing.
"""

from __future__ import annotations

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
    "down": "j",
    "up": "k",
}
