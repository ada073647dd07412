"""The command line: one Typer module per command group, a shared renderer and error handler.

Only the ``tui`` and ``analyze`` commands reach textual or pyspark, lazily, inside the command.
"""
