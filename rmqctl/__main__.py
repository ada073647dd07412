"""``python -m rmqctl``: the same command as the ``rmqctl`` console script."""

from rmqctl.cli import main

main()
