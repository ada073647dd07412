"""The harness's RocketMQ lines: the pom's default and its profiles name the releases the docs
list, and a line built beside the default lives in a directory of its own (without Java)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from tests.harness.realcluster import POM, HarnessError, build_harness_line

NS = {"m": "http://maven.apache.org/POM/4.0.0"}


def test_the_default_line_and_the_profiles_name_their_releases() -> None:
    root = ET.parse(POM).getroot()
    assert root.findtext("m:properties/m:rocketmq.version", namespaces=NS) == "5.3.3"
    profiles = {p.findtext("m:id", namespaces=NS): p.findtext("m:properties/m:rocketmq.version", namespaces=NS)
                for p in root.findall("m:profiles/m:profile", NS)}
    assert profiles == {"rmq49": "4.9.7", "rmq55": "5.5.0"}
    # a line builds into a directory of its own only if the build directory can be moved
    assert root.findtext("m:build/m:directory", namespaces=NS) == "${harness.build.directory}"
    assert root.findtext("m:properties/m:harness.build.directory", namespaces=NS) == "${project.basedir}/target"


@pytest.mark.parametrize("profile", ["", "rmq55 -Dx=y", "../lib", "rmq55;true"])
def test_a_line_is_a_plain_profile_id(profile: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # refused before Java or Maven is looked for, so nothing is built or run
    monkeypatch.setenv("RMQCTL_MVN", "/nonexistent/mvn")
    with pytest.raises(HarnessError, match="not a Maven profile id"):
        build_harness_line(profile)
