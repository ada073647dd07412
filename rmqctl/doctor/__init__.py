"""``rmqctl doctor``: findings with stable codes, evidence, impact and the fix.

Checks are pure functions over a :class:`~rmqctl.model.GroupView` (and optionally an earlier
sample of the same group), one module per family (subscriptions, allocation, clients, stalls,
failures); :func:`run_checks` runs them on one view and :func:`diagnose` samples many groups
through the watch service and checks each. Codes are documented in ``docs/findings.md``. Must not
import the CLI, the TUI or pyspark.
"""

from __future__ import annotations

from rmqctl.doctor.checks import CODES, run_checks, skipped_checks
from rmqctl.doctor.diagnosis import REBALANCE_WAIT, Diagnosis, diagnose, sample_retry_copies
from rmqctl.doctor.stalls import FILTER_QUIET_MS, filtering_may_explain
from rmqctl.model import SEVERITY_RANK
from rmqctl.stuck import POP_COMMIT_GRACE_MS

__all__ = ["CODES", "FILTER_QUIET_MS", "POP_COMMIT_GRACE_MS", "REBALANCE_WAIT", "SEVERITY_RANK", "Diagnosis",
           "diagnose", "filtering_may_explain", "run_checks", "sample_retry_copies", "skipped_checks"]
