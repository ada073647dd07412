"""The scenario example in docs/scenarios.md is a valid scenario (the docs stay true)."""

from __future__ import annotations

import re
from pathlib import Path

from rmqctl.emulator.scenario import parse_scenario

DOC = Path(__file__).resolve().parents[2] / "docs" / "scenarios.md"


def test_documented_example_parses_with_every_key_meaning_what_it_says() -> None:
    (block,) = re.findall(r"```toml\n(.*?)```", DOC.read_text(), re.S)
    scenario = parse_scenario(block, str(DOC))
    assert scenario.name == "tag-overwrite" and scenario.duration == 60
    (consumer,) = scenario.consumers
    assert consumer.client_id == "10.0.0.1@consumer1" and consumer.stop == 30.0
    assert consumer.subscriptions == (("TopicTest2", "tag1"),)
    assert consumer.sub_version == 1704067200000
    (produce,) = scenario.produce
    assert (produce.at, produce.topic, produce.count) == (5.0, "TopicTest2", 10)
    assert produce.properties == (("p_a", ("1", "9")),)
