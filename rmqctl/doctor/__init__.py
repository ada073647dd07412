"""``rmqctl doctor``: findings with stable codes, evidence, impact and the fix.

Checks are pure functions over a :class:`~rmqctl.model.GroupView` (and optionally an earlier
sample); :func:`diagnose` is the one entry point front ends call. Codes are documented in
``docs/findings.md``. Must not import the CLI, the TUI or pyspark.
"""

from __future__ import annotations

from rmqctl.doctor.checks import CODES, run_checks, skipped_checks

__all__ = ["CODES", "run_checks", "skipped_checks"]
