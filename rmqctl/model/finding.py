"""Doctor findings and their severities.

A finding carries a stable code, evidence, impact and the fix. Frozen dataclass, no I/O; must not
import anything from rmqctl.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from rmqctl.records import dataclass

Severity = Literal["info", "warning", "error"]
#: severities in increasing order of gravity
SEVERITY_RANK: Mapping[str, int] = {"info": 0, "warning": 1, "error": 2}


@dataclass(frozen=True, slots=True)
class Finding:
    """A doctor verdict: what is wrong, what it does to messages, and how to fix it."""

    code: str
    severity: Severity
    group: str
    title: str
    detail: str
    evidence: Mapping[str, Any]
    fix: str
