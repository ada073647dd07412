"""The shipped alert rules: promtool checks and unit-tests them; every runbook link resolves."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "deploy" / "prometheus" / "rmqctl-rules.yml"


def _anchors(markdown: Path) -> set[str]:
    """GitHub's anchors of a Markdown file's headings (lower case, punctuation dropped, spaces → -)."""
    out = set()
    for line in markdown.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            out.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return out


def test_promtool_accepts_the_rules_and_their_unit_tests_pass(promtool: str) -> None:
    checked = subprocess.run([promtool, "check", "rules", str(RULES)], capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS: 9 rules found" in checked.stdout
    tested = subprocess.run([promtool, "test", "rules", "rules_test.yml"], capture_output=True, text=True,
                            timeout=120, cwd=Path(__file__).parent)
    assert tested.returncode == 0, tested.stdout + tested.stderr


def test_every_runbook_link_names_a_section_that_exists() -> None:
    text = RULES.read_text(encoding="utf-8")
    links = re.findall(r"runbook: '([^']+)'", text)
    assert len(links) == 9
    codes = {line[3:].strip() for line in (ROOT / "docs" / "findings.md").read_text().splitlines()
             if line.startswith("## ")}
    for link in links:
        path, _, anchor = link.partition("#")
        if "{{" in anchor:  # the conflict alert's anchor is its finding code, lower-cased
            assert {"SUBSCRIPTION_TAG_CONFLICT", "SUBSCRIPTION_TOPIC_CONFLICT"} <= codes
            continue
        assert anchor in _anchors(ROOT / path), link
