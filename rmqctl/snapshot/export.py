"""Build snapshot rows from group views and write them as Parquet, one file per sample.

Layout: ``<out>/date=YYYY-MM-DD/snapshot-<ts>.parquet`` (UTC date of the sample), a Hive-style
partition that Spark, DuckDB and pyarrow datasets all read. Every file is written to a hidden
temporary name in the same directory (``.``-prefixed, which Spark and pyarrow skip), flushed to
disk, then renamed over the final name, so a reader never sees a half-written file and a crash
leaves at most an ignored temporary.

Broadcasting groups are skipped: their offsets live in the clients (``LocalFileOffsetStore``), so
the broker's numbers for them mean nothing and would only produce false "stuck" verdicts.

pyarrow is imported inside :func:`write_snapshot` only. Must not import textual, pyspark or the
CLI.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import os
import tempfile
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rmqctl import errors
from rmqctl.model import GroupView
from rmqctl.snapshot.schema import SNAPSHOT_COLUMNS, SNAPSHOT_FORMAT_VERSION
from rmqctl.source import ClusterSource

#: How many group views one sample fetches at once (each is several broker and client RPCs).
FETCH_CONCURRENCY = 8


def snapshot_rows(
    view: GroupView, *, ts: int, cluster_of: Mapping[str, str] | None = None, cluster: str = ""
) -> list[dict[str, Any]]:
    """One row per queue of ``view``, in the column order of the snapshot schema.

    ``cluster_of`` maps broker names to cluster names (from the name server); ``cluster``, when
    set, overrides it for every row.
    """
    owners = view.owners()
    rows: list[dict[str, Any]] = []
    for p in view.progress:
        owner = p.owner
        if owner is None and owners.get(p.queue):
            owner = owners[p.queue][0]
        rows.append({
            "ts": ts,
            "cluster": cluster or (cluster_of or {}).get(p.queue.broker_name, ""),
            "group": view.group,
            "topic": p.queue.topic,
            "broker": p.queue.broker_name,
            "queue_id": p.queue.queue_id,
            "broker_offset": p.broker_offset,
            "consumer_offset": p.consumer_offset,
            "pull_offset": p.pull_offset,
            # the broker answers 0 when no message was consumed yet: that is "unknown", not 1970
            "last_timestamp": p.last_timestamp or None,
            "owner": owner,
        })
    return rows


def snapshot_path(out_dir: Path, ts: int) -> Path:
    """Where the sample taken at ``ts`` (epoch ms) is stored."""
    day = _dt.datetime.fromtimestamp(ts / 1000, tz=_dt.timezone.utc).strftime("%Y-%m-%d")
    return out_dir / f"date={day}" / f"snapshot-{ts}.parquet"


def _unwritable(path: Path, exc: OSError) -> errors.UsageError:
    reason = exc.strerror or exc.__class__.__name__
    if isinstance(exc, FileExistsError) and not path.is_dir():
        reason = "it exists and is not a directory"
    return errors.UsageError(
        f"cannot write snapshots to {path}: {reason}",
        hint="pass --out a writable directory (it is created when missing)",
    )


def prepare_out_dir(out_dir: Path) -> Path:
    """Create ``out_dir`` if needed and prove it is a writable directory (fail fast, one line)."""
    if out_dir.exists() and not out_dir.is_dir():
        raise errors.UsageError(
            f"cannot write snapshots to {out_dir}: it exists and is not a directory",
            hint="pass --out a directory",
        )
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out_dir, prefix=".probe-"):
            pass
    except OSError as exc:
        raise _unwritable(out_dir, exc) from exc
    return out_dir


def _arrow_schema() -> Any:
    import pyarrow as pa  # type: ignore[import-untyped]

    types = {"int32": pa.int32(), "int64": pa.int64(), "string": pa.string()}
    return pa.schema(
        [pa.field(c.name, types[c.type], nullable=c.nullable) for c in SNAPSHOT_COLUMNS],
        metadata={"rmqctl.snapshot.version": SNAPSHOT_FORMAT_VERSION},
    )


def write_snapshot(rows: Sequence[Mapping[str, Any]], out_dir: Path, ts: int) -> Path:
    """Write one sample atomically; returns the final path. Raises :class:`UsageError` on I/O."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq  # type: ignore[import-untyped]
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise errors.UsageError(
            "writing snapshots needs pyarrow", hint="pip install 'rmqctl[spark]'"
        ) from exc

    schema = _arrow_schema()
    columns = [pa.array([row[c.name] for row in rows], type=schema.field(c.name).type)
               for c in SNAPSHOT_COLUMNS]
    table = pa.Table.from_arrays(columns, schema=schema)
    final = snapshot_path(out_dir, ts)
    tmp: Path | None = None
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=final.parent, prefix=f".{final.name}.", suffix=".tmp")
        tmp = Path(name)
        with os.fdopen(fd, "wb") as handle:
            pq.write_table(table, handle, compression="zstd")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, final)
        tmp = None
        _fsync_dir(final.parent)
    except OSError as exc:
        raise _unwritable(final.parent, exc) from exc
    finally:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
    return final


def _fsync_dir(path: Path) -> None:
    """Make the rename itself durable (POSIX); best effort where directories cannot be opened."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@dataclass
class ExportResult:
    """What an export run did: files written, rows, and every group or broker that failed."""

    files: list[Path] = field(default_factory=list)
    rows: int = 0
    samples: int = 0
    #: ``group:<name>`` or ``<group>/<broker or client>`` → error message
    errors: dict[str, str] = field(default_factory=dict)
    #: groups left out because they consume in BROADCASTING mode
    skipped: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "files": [str(p) for p in self.files],
            "samples": self.samples,
            "rows": self.rows,
            "skipped_broadcast_groups": list(self.skipped),
            "errors": dict(self.errors),
        }


async def _cluster_of(source: ClusterSource) -> dict[str, str]:
    try:
        info = await source.cluster()
    except errors.RmqctlError:
        return {}
    return {name: data.cluster for name, data in info.brokers.items()}


async def _sample(
    source: ClusterSource, groups: Sequence[str] | None, result: ExportResult
) -> list[GroupView]:
    if groups:
        names = list(groups)
    else:
        listed = await source.groups()
        names = list(listed.value)
        result.errors.update({f"list:{k}": v for k, v in listed.errors.items()})
    gate = asyncio.Semaphore(FETCH_CONCURRENCY)

    async def one(group: str) -> GroupView | None:
        async with gate:
            try:
                return await source.group_view(group)
            except errors.RmqctlError as exc:
                result.errors[f"group:{group}"] = str(exc)
                return None

    views = await asyncio.gather(*(one(g) for g in names))
    return [v for v in views if v is not None]


async def export_snapshots(
    source: ClusterSource,
    groups: Sequence[str] | None,
    out_dir: Path,
    interval: float,
    count: int,
    *,
    cluster: str = "",
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    on_sample: Callable[[Path | None, int], None] | None = None,
) -> ExportResult:
    """Take ``count`` samples (0 = until cancelled) ``interval`` seconds apart, one file each.

    ``groups`` empty or None means every group the cluster lists, re-listed at each sample.
    ``clock`` and ``sleep`` are injectable so tests run without waiting.
    """
    prepare_out_dir(out_dir)
    result = ExportResult()
    index = 0
    while count <= 0 or index < count:
        started = clock()
        ts = int(started * 1000)
        cluster_of = {} if cluster else await _cluster_of(source)
        rows: list[dict[str, Any]] = []
        for view in await _sample(source, groups, result):
            if view.message_model == "BROADCASTING":
                if view.group not in result.skipped:
                    result.skipped.append(view.group)
                continue
            result.errors.update({f"{view.group}/{k}": v for k, v in view.errors.items()})
            rows += snapshot_rows(view, ts=ts, cluster_of=cluster_of, cluster=cluster)
        path = write_snapshot(rows, out_dir, ts) if rows else None
        if path is not None:
            result.files.append(path)
        result.rows += len(rows)
        result.samples += 1
        if on_sample is not None:
            on_sample(path, len(rows))
        index += 1
        if count <= 0 or index < count:
            await sleep(max(0.0, interval - (clock() - started)))
    return result
