"""``rmqctl analyze …``: batch analyses of recorded offset snapshots, locally or with Spark.

``analyze stuck DIR`` judges every queue over a window of snapshots on one of two engines that give the
same verdicts: the local engine (:mod:`rmqctl.localjob`, pyarrow, in this process) or the PySpark job
``analysis.stuck``, run as its own process (``python -m analysis.stuck``: the job ships with spark-submit and
imports nothing of rmqctl but the shared definition :mod:`rmqctl.stuck`, and rmqctl must not import it),
whose ``rmqctl:`` messages are forwarded and whose JSON document is rendered with the one renderer.
``--engine auto`` (the default) takes the local engine up to :data:`LOCAL_MAX_ROWS` rows, counted from the
files' footers, and Spark above that or when ``--master`` is given. Exit codes: 0 nothing stuck, 1 a queue
is STALLED or ORPHANED, 2 bad input (no snapshots in the window, a schema newer than the engine, the engine's
package missing).

Must not import pyspark or textual (nor the ``analysis`` package); pyarrow only inside the command.
"""

from __future__ import annotations

import enum
import importlib.util
import json
import os
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from rmqctl import errors
from rmqctl import stuck as stuck_definition
from rmqctl.cli.common import console, settings
from rmqctl.cli.durations import DURATION, duration_parser, format_duration
from rmqctl.cli.render import OutputFormat, Table, View, emit
from rmqctl.report import analyze as analyze_report

app = typer.Typer(help="Analyse recorded offset snapshots (needs the spark extra).", no_args_is_help=True)

INSTALL_HINT = "pyspark is not installed; install it with: pip install 'rmqctl[spark]'"
LOCAL_INSTALL_HINT = "pyarrow is not installed; install it with: pip install 'rmqctl[snapshot]'"
JOB_MODULE = "analysis.stuck"

LOCAL_MAX_ROWS = 20_000_000
"""``--engine auto`` judges up to this many snapshot rows (counted from the files' footers, no page read) on
the local engine, and more on Spark: the local engine answers 10^6 rows in a few seconds, where Spark alone
needs several to start, and 10^7 rows on one core in less CPU time than DuckDB on two; above 10^6 rows it
judges in buckets spilled to disk, so its memory stays under 1 GB (bench/README.md: 10^7 rows). Twice the
size measured."""


class Engine(str, enum.Enum):
    auto = "auto"
    local = "local"
    spark = "spark"


class AnalyzeFormat(str, enum.Enum):
    table = "table"
    json = "json"
    jsonl = "jsonl"
    csv = "csv"
    parquet = "parquet"


def _module_available(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _analysis_root() -> Path:
    """The directory holding the ``analysis`` package (found without importing it)."""
    try:
        spec = importlib.util.find_spec("analysis")
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise errors.ConfigError("the analysis package is not installed alongside rmqctl",
                                 hint="pip install 'rmqctl[spark]'")
    return Path(next(iter(spec.submodule_search_locations))).resolve().parent


@dataclass(frozen=True)
class JobOptions:
    """The analysis options the command passes through to the job."""

    #: the job's own spelling (one unit, as :func:`~rmqctl.durations.format_duration` writes it)
    window: str = "10m"
    since: str | None = None
    until: str | None = None
    min_snapshots: int = stuck_definition.MIN_SNAPSHOTS
    allowed_lag: int = stuck_definition.ALLOWED_LAG
    retry_allowed_lag: int = stuck_definition.RETRY_ALLOWED_LAG
    master: str = "local[*]"
    #: ``auto``: the job sizes a local driver to its input (512m on a cluster's driver)
    driver_memory: str = "auto"


def job_arguments(directory: Path, options: JobOptions, output: str, out: str | None) -> list[str]:
    """The job's own command line (shared by the run and by ``--print-submit``)."""
    args = [str(directory), "--window", options.window, "--min-snapshots", str(options.min_snapshots),
            "--allowed-lag", str(options.allowed_lag), "--retry-allowed-lag", str(options.retry_allowed_lag),
            "--master", options.master, "--driver-memory", options.driver_memory, "-o", output]
    if options.since:
        args += ["--since", options.since]
    if options.until:
        args += ["--until", options.until]
    if out:
        args += ["--out", out]
    return args


def submit_command(job_args: Sequence[str], master: str, driver_memory: str) -> str:
    """The equivalent ``spark-submit`` command line for running the job on a cluster.

    spark-submit's own options come before the script (after it they are the job's arguments):
    the driver's memory must be set there, before its JVM starts, so the job is not given it."""
    script = _analysis_root() / "analysis" / "stuck.py"
    args = list(job_args)
    if "--driver-memory" in args:
        at = args.index("--driver-memory")
        del args[at:at + 2]
    memory = "512m" if driver_memory == "auto" else driver_memory
    parts = ["spark-submit", "--master", master, "--driver-memory", memory, "--name", "rmqctl-analyze-stuck",
             "--conf", "spark.sql.session.timeZone=UTC", "--conf", "spark.ui.showConsoleProgress=false",
             str(script), *args]
    return shlex.join(parts)


def _run_job(job_args: Sequence[str], debug: bool) -> int:
    """Run the job as a child process; forward its ``rmqctl:`` lines (everything with --debug)."""
    env = dict(os.environ)
    root = str(_analysis_root())
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    proc = subprocess.Popen([sys.executable, "-m", JOB_MODULE, *job_args], env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, errors="replace")
    assert proc.stderr is not None
    said = False
    tail: list[str] = []
    # what the job is doing (starting Spark, reading N files, tasks done), on one line that
    # each new step overwrites: only on a terminal, and only the last one stays until the end
    live = not debug and console.stream.isatty()
    shown = False
    try:
        for line in proc.stderr:
            if line.startswith("rmqctl: progress:"):
                if live or debug:
                    text = line[len("rmqctl: progress:"):].strip()
                    console.stream.write(f"\r\x1b[2K{text} …" if live else line)
                    console.stream.flush()
                    shown = live
                continue
            if shown:  # anything else starts on a clean line
                console.stream.write("\r\x1b[2K")
                shown = False
            if line.startswith("rmqctl:"):
                said = True
                console.stream.write(line)
                console.stream.flush()
            elif debug:
                console.stream.write(line)
            else:
                tail = (tail + [line.rstrip("\n")])[-20:]
        code = proc.wait()
        if shown:
            console.stream.write("\r\x1b[2K")
            console.stream.flush()
    except KeyboardInterrupt:
        proc.terminate()
        proc.wait()
        raise
    finally:
        proc.stderr.close()
    if code not in (0, 1, 2) or (code == 2 and not said):
        if said:  # the job has named its failure in its own rmqctl: line
            raise typer.Exit(errors.ExitCode.JOB_FAILED)
        last = next((t for t in reversed(tail) if t.strip()), "")
        raise errors.JobFailed(f"the Spark job failed (exit {code}){': ' + last if last else ''}",
                               hint="rerun with --debug to see Spark's log")
    return code


def stuck_view(document: dict[str, Any]) -> View:
    """Tables for people: the queues that need attention first, then one line per group."""
    queues = sorted(document["queues"], key=lambda q: (q["status"] in ("OK", "IDLE", "DLQ"), q["group"],
                                                       q["topic"], q["broker"], q["queue_id"]))
    queue_cols = [("group", "GROUP"), ("topic", "TOPIC"), ("broker", "BROKER"), ("queue_id", "QID"),
                  ("status", "STATUS"), ("owner", "OWNER"), ("lag_end", "LAG"), ("lag_time", "BEHIND"),
                  ("reason", "REASON")]
    rows = [{**q, "lag_time": _duration(q.get("lag_time_ms"))} for q in queues]
    group_cols = [("group", "GROUP"), ("status", "STATUS"), ("queues", "QUEUES"), ("stuck_queues", "STUCK"),
                  ("total_lag_start", "LAG_START"), ("total_lag_end", "LAG_END"), ("lag_trend", "TREND")]
    footer = [f"Window: {document['since']} .. {document['until']} (UTC); engine: {document['engine']}"]
    return View(document, [Table(queue_cols, rows), Table(group_cols, document["groups"], title="Groups")],
                footer, analyze_report.stuck_rows(document))


def _duration(ms: Any) -> str | None:
    if ms is None:
        return None
    secs = int(ms) // 1000
    if secs < 60:
        return f"{secs}s"
    if secs < 3600:
        return f"{secs // 60}m{secs % 60:02d}s"
    return f"{secs // 3600}h{secs % 3600 // 60:02d}m"


@app.command("stuck")
def stuck(
    ctx: typer.Context,
    directory: Annotated[Path, typer.Argument(help="Snapshot directory (date=YYYY-MM-DD/*.parquet).",
                                              show_default=False)],
    window: Annotated[float, typer.Option("--window", parser=duration_parser(), metavar=DURATION, show_default="10m",
                                          help="Window length ending at --until: 30s, 10m, 1h30m, 1d.")]
    = 600.0,
    since: Annotated[str | None, typer.Option("--since", help="Window start: ISO-8601 (UTC) or epoch ms.",
                                              show_default=False)] = None,
    until: Annotated[str | None, typer.Option("--until", help="Window end (default: the newest snapshot).",
                                              show_default=False)] = None,
    min_snapshots: Annotated[int, typer.Option("--min-snapshots", min=1,
                                               help="Fewer snapshots than this gives INSUFFICIENT_DATA.")]
    = stuck_definition.MIN_SNAPSHOTS,
    allowed_lag: Annotated[int, typer.Option("--allowed-lag", min=0, help="Lag counted as caught up.")]
    = stuck_definition.ALLOWED_LAG,
    retry_allowed_lag: Annotated[int, typer.Option("--retry-allowed-lag", min=0,
                                                   help="The same for %RETRY% queues.")]
    = stuck_definition.RETRY_ALLOWED_LAG,
    engine: Annotated[Engine, typer.Option("--engine", case_sensitive=False,
                                           help="local (pyarrow, in this process), spark, or auto: local up to "
                                                f"{LOCAL_MAX_ROWS:,} rows and without --master, else spark.")]
    = Engine.auto,
    master: Annotated[str | None, typer.Option("--master", show_default="local[*]",
                                               help="Spark master: local[*] or spark://HOST:PORT (implies spark).")]
    = None,
    driver_memory: Annotated[str, typer.Option("--driver-memory",
                                               help="Heap of the Spark driver (local mode: the whole job); auto: "
                                                    "512m, for a local master and over 64 MB of files 3x their "
                                                    "size, at most a quarter of the memory.")]
    = "auto",
    output: Annotated[AnalyzeFormat | None, typer.Option("--output", "-o", case_sensitive=False,
                                                         help="table, json, jsonl, csv or parquet.",
                                                         show_default=False)] = None,
    out: Annotated[Path | None, typer.Option("--out", help="Write the result here (a directory for parquet).",
                                             show_default=False)] = None,
    print_submit: Annotated[bool, typer.Option("--print-submit",
                                               help="Print the equivalent spark-submit command and exit.")]
    = False,
) -> None:
    """Name every stuck queue over a window of snapshots: status, the rule that fired, since when, under whom.

    Exit 1 when a queue is STALLED or ORPHANED, 0 otherwise; 2 when the window holds no snapshots.
    """
    opts = settings(ctx)
    if engine is Engine.local and master is not None:
        raise errors.UsageError("--master runs the Spark engine; drop it or use --engine spark")
    spark_master = master or "local[*]"
    fmt = output or AnalyzeFormat(opts.output.value)
    if fmt is AnalyzeFormat.parquet and out is None:
        raise errors.UsageError("-o parquet needs --out DIR")
    options = JobOptions(window=format_duration(window), since=since, until=until, min_snapshots=min_snapshots,
                         allowed_lag=allowed_lag, retry_allowed_lag=retry_allowed_lag, master=spark_master,
                         driver_memory=driver_memory)
    if print_submit:
        submit_fmt = fmt.value if fmt is not AnalyzeFormat.table or out else "table"
        typer.echo(submit_command(
            job_arguments(directory.resolve(), options, submit_fmt, str(out.resolve()) if out else None),
            spark_master, driver_memory))
        return
    if engine is not Engine.spark and master is None:
        local = _local_plan(directory, options, engine is Engine.local)
        if local is not None:
            code, document = _run_local(local, fmt, out)
            if document is None:
                raise typer.Exit(code)
            _emit(document, fmt, out)
            raise typer.Exit(code)
    if not _module_available("pyspark"):
        raise errors.UsageError(INSTALL_HINT)
    if not directory.is_dir():
        raise errors.UsageError(f"{directory} is not a directory")
    console.note(f"running the Spark job on {spark_master} …")
    if fmt is AnalyzeFormat.parquet:
        assert out is not None
        code = _run_job(job_arguments(directory, options, "parquet", str(out)), opts.debug)
        if code == 1 and not (out / "queues").is_dir():
            raise errors.JobFailed("the Spark job ended (exit 1) without a result",
                                   hint="rerun with --debug to see Spark's log")
        raise typer.Exit(code)
    with tempfile.TemporaryDirectory(prefix="rmqctl-analyze-") as tmp:
        result = Path(tmp) / "result.json"
        code = _run_job(job_arguments(directory, options, "json", str(result)), opts.debug)
        if code not in (0, 1):
            raise typer.Exit(code)
        try:
            text = result.read_text(encoding="utf-8")
        except OSError:  # 1 is also Python's own code for a crash: a verdict needs its result
            raise errors.JobFailed(f"the Spark job ended (exit {code}) without a result",
                                   hint="rerun with --debug to see Spark's log") from None
        document = analyze_report.stuck(json.loads(text), engine="spark")
    _emit(document, fmt, out)
    raise typer.Exit(code)


def _emit(document: dict[str, Any], fmt: AnalyzeFormat, out: Path | None) -> None:
    view = stuck_view(document)
    render_fmt = OutputFormat(fmt.value)
    if out is not None:
        with out.open("w", encoding="utf-8") as stream:
            emit(view, render_fmt, stream)
    else:
        emit(view, render_fmt)


def _local_plan(directory: Path, options: JobOptions, required: bool) -> Any:
    """The local engine's plan, or None when ``--engine auto`` leaves the input to Spark (more than
    :data:`LOCAL_MAX_ROWS` rows in the files' footers, or pyarrow missing)."""
    if not _module_available("pyarrow"):
        if required:
            raise errors.UsageError(LOCAL_INSTALL_HINT)
        return None
    from rmqctl.localjob import files as local_files
    from rmqctl.localjob import job as local_job
    from rmqctl.localjob.verdicts import Thresholds

    thresholds = Thresholds(min_snapshots=options.min_snapshots, allowed_lag=options.allowed_lag,
                            retry_allowed_lag=options.retry_allowed_lag)
    try:
        plan = local_job.plan(directory, options.window, options.since, options.until, thresholds,
                              warn=console.warn)
    except local_files.JobError as exc:
        raise errors.UsageError(str(exc)) from None
    if not required and local_files.footer_rows(plan.files) > LOCAL_MAX_ROWS:
        return None
    return plan


def _run_local(plan: Any, fmt: AnalyzeFormat, out: Path | None) -> tuple[int, dict[str, Any] | None]:
    """Judge on the local engine; the document to render (None when it was written as parquet)."""
    from rmqctl.localjob import files as local_files
    from rmqctl.localjob import job as local_job

    console.note(f"judging {len(plan.files)} snapshot file(s) on the local engine …")
    try:
        code, document = local_job.run(plan, console.warn)
    except local_files.JobError as exc:
        raise errors.UsageError(str(exc)) from None
    if fmt is AnalyzeFormat.parquet:
        assert out is not None
        local_job.write_parquet(document, out)
        return code, None
    return code, analyze_report.stuck(document, engine="local")
