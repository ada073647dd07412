"""The command line: one Typer module per command group, a shared renderer and error handler.

Only the ``tui`` and ``analyze`` commands reach textual or pyspark, lazily, inside the command.
:func:`main` is the entry point; it answers ``rmqctl --version`` before typer is even imported, so
this package's ``__init__`` must stay free of imports beyond the built-in ``sys`` and ``gc``.
"""

from __future__ import annotations

import gc
import sys

#: whether :func:`main` holds the collector off while the command line starts
_starting = False


def main() -> None:
    """Run ``rmqctl`` with ``sys.argv``."""
    if sys.argv[1:] == ["--version"]:
        from rmqctl import __version__

        sys.stdout.write(f"rmqctl {__version__}\n")
        return
    # Until the command's module is loaded, start-up builds only what lives as long as the
    # process (modules, classes, functions): the collector's ~60 passes over it during
    # `group show`'s imports find nothing to free. It runs again from start_up_done() on.
    global _starting
    _starting = gc.isenabled()
    gc.disable()
    from rmqctl.cli.app import main as app_main

    try:
        app_main()
    finally:
        start_up_done()
        # The command is over. The interpreter's closing garbage collections would walk every
        # object still alive, ~20 ms (a fifth of a whole `group show`), to find cycles nothing
        # needs: Python promises no finaliser for what is alive at exit, every file a command
        # writes is closed before it returns, and atexit handlers still run.
        gc.freeze()


def start_up_done() -> None:
    """The command's module is loaded: the collector runs again, over what the command builds
    from here on; what start-up built is frozen out of its passes (it lives until exit)."""
    global _starting
    if _starting:
        _starting = False
        gc.freeze()
        gc.enable()
