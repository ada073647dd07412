"""Finding texts that stand alone, on the seed scenarios: the tag conflict totals its loss.

tag-overwrite by hand: 10 tag1 messages at 5 s, then 10 tag2 at 6 s, round robin over 4 queues
(tag1 on q0-q3, q0-q1 twice; tag2 from q2 on: q0 2, q1 2, q2 3, q3 3). The broker holds
consumer2's 'tag2': all 10 tag1 are filtered out by the broker; consumer1 (tag1) holds q0-q1 and
drops their 4 tag2; consumer2 receives the 6 tag2 of q2-q3. 14 of 20 lost, as `emulator run` says.
"""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from rmqctl.cli.app import app


def test_tag_conflict_states_how_many_sampled_messages_were_lost() -> None:
    result = CliRunner().invoke(app, ["--emulator", "tag-overwrite", "-o", "json", "doctor", "test-consumer"])
    (f,) = [f for f in json.loads(result.stdout)["findings"] if f["code"] == "SUBSCRIPTION_TAG_CONFLICT"]
    assert "14 reached no listener of this group (tag1 10, tag2 4)" in f["detail"]
    assert "a sample of 20 message(s)" in f["detail"]


def test_emulator_run_counts_the_same_loss() -> None:
    result = CliRunner().invoke(app, ["emulator", "run", "tag-overwrite"])
    assert "14 messages lost" in result.stdout


def test_topic_conflict_and_orphaned_queues_name_the_queues_and_the_clients() -> None:
    # topic-overwrite by hand: c1 subscribes topicA, c2 topicB, 4 queues each, AVG over both
    # clients: topicA queues 2-3 go to c2 and topicB queues 0-1 to c1, which never pull them
    result = CliRunner().invoke(app, ["--emulator", "topic-overwrite", "-o", "json", "doctor", "g1"])
    found = {f["code"]: f for f in json.loads(result.stdout)["findings"]}
    assert ("(topicB@broker-a queues 0 and 1 to 10.0.0.1@c1; topicA@broker-a queues 2 and 3 to 10.0.0.2@c2)"
            in found["SUBSCRIPTION_TOPIC_CONFLICT"]["detail"])
    assert found["ORPHANED_QUEUES"]["detail"].startswith(
        "While the group is online (10.0.0.1@c1 and 10.0.0.2@c2), topicA@broker-a queues 2 and 3; "
        "topicB@broker-a queues 0 and 1 are held by none of its clients")


OFFLINE = """
name = "offline"
duration = 60

[[brokers]]
name = "broker-a"

[[topics]]
name = "T"
queues = 2

[[consumers]]
group = "g"
client_id = "10.0.0.1@c1"
subscriptions = { T = "*" }
stop = 20.0

[[produce]]
at = 30.0
topic = "T"
count = 6
"""


def test_an_offline_group_on_a_5x_broker_without_a_proxy_suggests_one(tmp_path: Path) -> None:
    # the emulated broker is a 5.3.3 and no --proxy is given: gRPC clients could be hiding
    path = tmp_path / "offline.toml"
    path.write_text(OFFLINE)
    result = CliRunner().invoke(app, ["--emulator", str(path), "-o", "json", "doctor", "g"])
    (f,) = [f for f in json.loads(result.stdout)["findings"] if f["code"] == "OFFLINE_GROUP_BACKLOG"]
    assert f["detail"].startswith("No broker lists a client of g, and T@broker-a queues 0 and 1 hold 6 "
                                  "unconsumed messages. The brokers run RocketMQ 5.x (broker-a V5_3_3) and no "
                                  "proxy was read")
    assert f["fix"].startswith("Read the group through its proxies: rmqctl --proxy host:port doctor g")
    assert f["evidence"]["unread_proxy_brokers"] == {"broker-a": "V5_3_3"}
