"""File names are offered only where a file is expected: ``--emulator`` and ``emulator run``
take a scenario name or a ``*.toml`` file, so other files in the directory are not offered."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.completion.terminal import SHELLS, Terminal
from tests.completion.test_shells import Shell

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(params=SHELLS)
def shell(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Shell]:
    sh = Shell(str(request.param), tmp_path)
    for name in ("t1.log", "tmp-notes.txt", "tag-incident.toml"):
        (sh.home / name).write_text("")
    sh.term = Terminal(sh.name, sh.home, sh.env)  # what Shell.start does, named here for the tiers
    yield sh
    sh.close()


def test_emulator_offers_scenarios_and_toml_files_only(shell: Shell) -> None:
    shell.offered("rmqctl --emulator t", {"tag-overwrite", "tag-overwrite-4q", "topic-overwrite",
                                          "two-consumers-one-queue", "tag-incident.toml"})


def test_emulator_run_completes_a_toml_file(shell: Shell) -> None:
    shell.completes_to("rmqctl emulator run tag-i", "rmqctl emulator run tag-incident.toml ")
