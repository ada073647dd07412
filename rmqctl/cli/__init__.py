"""The command line: one Typer module per command group, a shared renderer and error handler.

Only the ``tui`` and ``analyze`` commands reach textual or pyspark, lazily, inside the command.
:func:`main` is the entry point; it answers ``rmqctl --version`` before typer is even imported, so
this package's ``__init__`` must stay free of imports beyond the built-in ``sys`` and ``gc``.
"""

from __future__ import annotations

import gc
import sys


def main() -> None:
    """Run ``rmqctl`` with ``sys.argv``."""
    if sys.argv[1:] == ["--version"]:
        from rmqctl import __version__

        sys.stdout.write(f"rmqctl {__version__}\n")
        return
    from rmqctl.cli.app import main as app_main

    try:
        app_main()
    finally:
        # The command is over. The interpreter's closing garbage collections would walk every
        # object still alive, ~20 ms (a fifth of a whole `group show`), to find cycles nothing
        # needs: Python promises no finaliser for what is alive at exit, every file a command
        # writes is closed before it returns, and atexit handlers still run.
        gc.freeze()
