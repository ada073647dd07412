"""rmqctl: see, explain and emulate Apache RocketMQ consumer groups.

The core package. It must never import ``textual`` (the TUI lives in ``tui``) or ``pyspark``
(the history jobs live in ``analysis``).
"""

from __future__ import annotations

__version__ = "0.1.0"
