"""What one peer may make an emulator remoting port hold or wait for (:class:`ServerLimits`).

The defaults and what happens at each limit are documented in docs/serving.md; the server
(:mod:`rmqctl.emulator.server`) enforces them. Must not import the CLI, textual or pyspark.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from rmqctl import errors
from rmqctl.remoting import frame


@dataclass(frozen=True, slots=True)
class ServerLimits:
    """What one peer may make a remoting port hold or wait for (defaults documented in docs/)."""

    #: seconds without a whole frame from the peer (or without its taking any of our replies
    #: while they are over ``write_buffer_bytes``) before closing; bytes that complete no frame
    #: do not count, so a peer trickling a frame cannot hold a connection open
    idle_timeout: float = 120.0
    #: open connections per port; the next one is closed as soon as it is accepted
    max_connections: int = 1024
    #: largest frame accepted, so the most one unfinished frame buffers (a 4 MiB message + header)
    max_frame_bytes: int = 4 * 1024 * 1024 + 64 * 1024
    #: replies queued for a peer before its further requests wait for them to drain
    write_buffer_bytes: int = 1024 * 1024
    #: unfinished input frames plus unsent replies, summed over every connection of every
    #: remoting port; above it connections whose replies are not read are closed first, then the
    #: connection that took the sum over
    memory_bytes: int = 256 * 1024 * 1024

    def __post_init__(self) -> None:
        if not (math.isfinite(self.idle_timeout) and self.idle_timeout > 0):
            raise errors.UsageError(f"idle timeout must be a finite number of seconds > 0, not {self.idle_timeout:g}")
        if self.max_connections < 1:
            raise errors.UsageError("the connection cap must be at least 1")
        if not 1024 <= self.max_frame_bytes <= frame.MAX_FRAME_LENGTH:
            raise errors.UsageError(f"the frame size limit must be 1024..{frame.MAX_FRAME_LENGTH} bytes")
        if self.write_buffer_bytes < 1024:
            raise errors.UsageError("the write buffer limit must be at least 1024 bytes")
        floor = max(self.write_buffer_bytes, self.max_frame_bytes)
        if self.memory_bytes < floor:
            raise errors.UsageError(f"the memory budget must be at least the frame size and write buffer limits "
                                    f"({floor} bytes)")
