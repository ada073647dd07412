"""Writes to a cluster, each a plan first: offset resets and skips, planned, applied only when
asked, verified by reading back, audited, with an undo plan written beside the audit log.

- :mod:`~rmqctl.actions.plan`: the plan and outcome types and the plan file (its JSON), which
  imports only the model so documents can be built from it;
- :mod:`~rmqctl.actions.audit`: the append-only audit log and the undo plans;
- :mod:`~rmqctl.actions.permission`: who writes, and the read-only contexts that refuse;
- :mod:`~rmqctl.actions.reset`: ``group reset``: plan, apply, verify.

This package and the CLI are the only ones that write (import-linter contract "Only the actions
package sends writes"). The package imports nothing here so that :mod:`rmqctl.report` can use the
plan types without reaching a cluster. Must not import the CLI, textual or pyspark.
"""
