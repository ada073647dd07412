"""The command line: one Typer module per command group, a shared renderer and error handler."""
