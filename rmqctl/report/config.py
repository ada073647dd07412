"""The ``config view`` document: the config file's contexts with secrets masked.

Must not import the CLI, the TUI or pyspark.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def config_view(redacted: Mapping[str, Any]) -> dict[str, Any]:
    """``{path, current_context, contexts, errors}`` from :meth:`rmqctl.config.Config.redacted`."""
    return {**redacted, "errors": {}}

