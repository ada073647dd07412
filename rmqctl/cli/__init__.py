"""The command line: one Typer module per command group, a shared renderer and error handler.

Only the ``tui`` and ``analyze`` commands reach textual or pyspark, lazily, inside the command.
:func:`main` is the entry point; it answers ``rmqctl --version`` before typer is even imported, so
this package's ``__init__`` must stay free of imports beyond the standard library's ``sys``.
"""

from __future__ import annotations

import sys


def main() -> None:
    """Run ``rmqctl`` with ``sys.argv``."""
    if sys.argv[1:] == ["--version"]:
        from rmqctl import __version__

        sys.stdout.write(f"rmqctl {__version__}\n")
        return
    from rmqctl.cli.app import main as app_main

    app_main()
