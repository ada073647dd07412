"""``dlq list`` on the embedded emulator: a group whose listener always fails ends with its
messages in ``%DLQ%group`` after its 16 retries (about 4 h 46 min of the emulated clock); the list
counts them and names the group."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from rmqctl.cli.app import app

SCENARIO = """
name = "dead-letters"
duration = 30
[[brokers]]
name = "broker-a"
[[topics]]
name = "Orders"
queues = 2
[[consumers]]
group = "failing"
subscriptions = { Orders = "*" }
consume_result = "RECONSUME_LATER"
[[consumers]]
group = "fine"
subscriptions = { Orders = "*" }
[[produce]]
at = 1.0
topic = "Orders"
count = 3
"""


def test_dlq_list_counts_the_dead_letters_of_the_failing_group(tmp_path: Path) -> None:
    path = tmp_path / "dead.toml"
    path.write_text(SCENARIO)
    result = CliRunner().invoke(app, ["--emulator", str(path), "--at", "20000", "dlq", "list", "-o", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["errors"] == {}
    (row,) = doc["dead_letter_queues"]
    assert row["group"] == "failing" and row["topic"] == "%DLQ%failing"
    assert row["messages"] == 3 and isinstance(row["newest_ts"], int)
