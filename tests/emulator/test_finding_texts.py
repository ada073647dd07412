"""Finding texts that stand alone, on the seed scenarios: the tag conflict totals its loss.

tag-overwrite by hand: 10 tag1 messages at 5 s, then 10 tag2 at 6 s, round robin over 4 queues
(tag1 on q0-q3, q0-q1 twice; tag2 from q2 on: q0 2, q1 2, q2 3, q3 3). The broker holds
consumer2's 'tag2': all 10 tag1 are filtered out by the broker; consumer1 (tag1) holds q0-q1 and
drops their 4 tag2; consumer2 receives the 6 tag2 of q2-q3. 14 of 20 lost, as `emulator run` says.
"""

from __future__ import annotations

import json

from typer.testing import CliRunner

from rmqctl.cli.app import app


def test_tag_conflict_states_how_many_sampled_messages_were_lost() -> None:
    result = CliRunner().invoke(app, ["--emulator", "tag-overwrite", "-o", "json", "doctor", "test-consumer"])
    (f,) = [f for f in json.loads(result.stdout)["findings"] if f["code"] == "SUBSCRIPTION_TAG_CONFLICT"]
    assert ("Of these 20 sampled messages, 14 were lost (10 filtered out by the broker and 4 dropped by "
            "10.0.0.1@consumer1), 6 delivered.") in f["detail"]


def test_emulator_run_counts_the_same_loss() -> None:
    result = CliRunner().invoke(app, ["emulator", "run", "tag-overwrite"])
    assert "14 messages lost" in result.stdout
