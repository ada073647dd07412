"""The ``doctor`` document: the groups checked, every finding whole, the checks skipped and why.

Findings come in from the command, which ran the doctor; this module never runs a check.
Must not import the CLI, the TUI, the doctor or pyspark.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypedDict

from rmqctl.errors import RmqctlError
from rmqctl.model import Finding
from rmqctl.report.common import Errors, RowSet, error_rows, errors_doc, finding_doc


class DoctorDoc(TypedDict):
    groups: list[str]
    findings: list[dict[str, Any]]
    skipped: list[dict[str, str]]
    errors: Errors


FINDING_COLUMNS = ("group", "severity", "code", "title", "detail", "evidence", "fix")


def doctor(groups: Sequence[str], findings: Iterable[Finding], skipped: Mapping[str, Mapping[str, str]],
           errors: Mapping[str, RmqctlError]) -> DoctorDoc:
    """``doctor``: the groups checked, every finding whole, the checks skipped and why."""
    return DoctorDoc(
        groups=list(groups),
        findings=[finding_doc(f) for f in findings],
        skipped=[{"group": g, "code": code, "reason": why}
                 for g, checks in sorted(skipped.items()) for code, why in sorted(checks.items())],
        errors=errors_doc(errors),
    )


def doctor_rows(doc: DoctorDoc) -> list[RowSet]:
    return [RowSet("finding", FINDING_COLUMNS, doc["findings"]),
            RowSet("skipped", ("group", "code", "reason"), doc["skipped"]), *error_rows(doc)]
