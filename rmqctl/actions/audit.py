"""The append-only audit log of writes, and the undo plans written beside it.

Every applied plan appends one JSON line to ``$XDG_STATE_HOME/rmqctl/audit.jsonl`` (default
``~/.local/state/rmqctl/audit.jsonl``): when (host time, epoch ms), who (the OS user and the ACL
access key name, never a secret), the cluster and context, the action, the plan and the outcome.
Lines are only ever appended (``O_APPEND``, one ``write`` per line, mode 600). Before a plan is
applied its undo plan (each queue back to where the plan found it) is written to
``undo/<id>.json`` in the same directory, so a failure half way still leaves the way back.

Must not import the CLI, textual or pyspark.
"""

from __future__ import annotations

import getpass
import json
import os
from pathlib import Path
from typing import Any

from rmqctl import errors
from rmqctl.clock import SystemClock

AUDIT_FILE = "audit.jsonl"
UNDO_DIR = "undo"


def state_dir() -> Path:
    """``$XDG_STATE_HOME/rmqctl`` (default ``~/.local/state/rmqctl``)."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "rmqctl"


def audit_path() -> Path:
    return state_dir() / AUDIT_FILE


def os_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry and no LOGNAME/USER (a bare container)
        return f"uid {os.getuid()}"


def now_ms() -> int:
    """The host's time for audit records: when it happened for the people reading the log."""
    return int(SystemClock().now() * 1000)


def new_id(when_ms: int, group: str) -> str:
    """An id for one write: sortable by time, unique enough on one host."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in group)[:60]
    return f"{when_ms}-{os.getpid()}-{safe}"


def _mkdir(path: Path) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise errors.WriteRefused(f"cannot create {path}: {exc.strerror or exc}",
                                  hint="set XDG_STATE_HOME to a writable directory") from exc


def append(record: dict[str, Any]) -> Path:
    """Append ``record`` as one line to the audit log; return the log's path."""
    path = audit_path()
    _mkdir(path.parent)
    line = (json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n").encode()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
        try:
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        raise errors.RmqctlError(f"cannot append to the audit log {path}: {exc.strerror or exc}") from exc
    return path


def write_undo(write_id: str, document: dict[str, Any]) -> Path:
    """Write an undo plan (a plan file) as ``undo/<write_id>.json``; return its path."""
    folder = state_dir() / UNDO_DIR
    _mkdir(folder)
    path = folder / f"{write_id}.json"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(document, handle, indent=2, sort_keys=False)
            handle.write("\n")
    except OSError as exc:
        raise errors.WriteRefused(f"cannot write the undo plan {path}: {exc.strerror or exc}",
                                  hint="nothing was written to the cluster") from exc
    return path


def read_log(path: Path | None = None) -> list[dict[str, Any]]:
    """Every record of the audit log, oldest first (for tests and ``rmqctl`` readers)."""
    path = path or audit_path()
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
