"""``rmqctl analyze stuck`` through the real command (a child process, the real job, real Spark)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.analysis.conftest import (
    INCIDENT_VERDICTS,
    ROOT,
    corrupt_pages,
    run_cli,
    series,
    verdict_tuples,
    write_snapshots,
)

REQUIRED = {"group", "topic", "broker", "queue_id", "status", "reason", "window_start", "window_end", "snapshots",
            "lag_start", "lag_end", "owner", "window_start_ts", "window_end_ts"}


def test_stuck_queues_exit_1_with_json_rows(local_run: subprocess.CompletedProcess[str], incident_dir: Path) -> None:
    assert local_run.returncode == 1, local_run.stderr
    folder = incident_dir / "date=2026-03-01"
    assert local_run.stderr.splitlines() == [
        f"rmqctl: warning: skipped {folder / 'corrupt.parquet'}: not a whole Parquet file (corrupt or truncated)",
        f"rmqctl: warning: skipped {folder / 'truncated.parquet'}: not a whole Parquet file (corrupt or truncated)",
    ]
    document = json.loads(local_run.stdout)
    assert all(REQUIRED <= set(q) for q in document["queues"])
    assert verdict_tuples(document["queues"]) == INCIDENT_VERDICTS
    assert {q["window_end_ts"] for q in document["queues"]} == {1772367000000}
    stalled = document["queues"][1]
    assert stalled["reason"] == ("consumer offset frozen at 100 since 12:00:30 (20 snapshots, 9m30s) while broker "
                                 "offset rose 110 -> 300 under owner c2; lag 10 -> 200, unknown behind")


def test_nothing_stuck_exits_0_and_renders_a_table(tmp_path: Path) -> None:
    root = write_snapshots(tmp_path, series([100 + i for i in range(5)], [100 + i for i in range(5)]))
    proc = run_cli("analyze", "stuck", str(root), "--master", "local[1]", "--min-snapshots", "2")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    reason = "caught up: lag 0 <= 0 at the last snapshot; consumer offset 100 -> 104"
    assert proc.stdout == textwrap.dedent(f"""\
        GROUP  TOPIC  BROKER    QID  STATUS  OWNER  LAG  BEHIND  REASON
        g      T      broker-a  0    OK      c1     0    0s      {reason}

        Groups
        GROUP  STATUS  QUEUES  STUCK  LAG_START  LAG_END  TREND
        g      OK      1       0      0          0        flat

        Window: 2026-03-01T11:52:00.000Z .. 2026-03-01T12:02:00.000Z (UTC); engine: spark
        """)
    # the same table from the local engine (--engine auto takes it for input this small and no --master)
    local = run_cli("analyze", "stuck", str(root), "--min-snapshots", "2")
    assert (local.returncode, local.stderr) == (0, "")
    assert local.stdout == proc.stdout.replace("engine: spark", "engine: local")


@pytest.mark.parametrize("engine", ["spark", "local", "auto"])
def test_nothing_readable_left_exits_2_naming_each_file_and_why(tmp_path: Path, engine: str) -> None:
    bad = corrupt_pages(tmp_path / "snap" / "date=2026-03-01")
    proc = run_cli("analyze", "stuck", str(tmp_path / "snap"), "--engine", engine)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr.splitlines() == [
        f"rmqctl: warning: skipped {bad}: corrupt pages: its footer counts 200 rows, 0 could be read",
        f"rmqctl: error: none of the 1 snapshot file(s) under {tmp_path / 'snap'} for the requested window could "
        "be read (each is named above with its reason)",
    ]


@pytest.mark.parametrize("engine", ["spark", "local"])
def test_no_snapshots_and_newer_schema_exit_2(tmp_path: Path, engine: str) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = run_cli("analyze", "stuck", str(empty), "--engine", engine)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == f"rmqctl: error: no snapshot files under {empty} for the requested window\n"
    newer = write_snapshots(tmp_path / "newer", series([1, 2, 3], [1, 2, 3]), version=4)
    proc = run_cli("analyze", "stuck", str(newer), "--engine", engine)
    assert proc.returncode == 2
    assert proc.stderr == (f"rmqctl: error: {newer}/date=2026-03-01/part-0-0.parquet has snapshot schema version 4;"
                           " this job knows up to 3 (upgrade rmqctl)\n")
    proc = run_cli("analyze", "stuck", str(tmp_path / "missing"), "--engine", engine)
    assert (proc.returncode, proc.stderr) == (2, f"rmqctl: error: {tmp_path / 'missing'} is not a directory\n")


def test_print_submit(tmp_path: Path) -> None:
    proc = run_cli("analyze", "stuck", str(tmp_path), "--window", "30m", "--master", "spark://10.1.2.3:7077",
                   "-o", "json", "--out", str(tmp_path / "r.json"), "--print-submit")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (
        "spark-submit --master spark://10.1.2.3:7077 --driver-memory 512m --name rmqctl-analyze-stuck"
        " --conf spark.sql.session.timeZone=UTC --conf spark.ui.showConsoleProgress=false"
        f" {ROOT}/analysis/stuck.py {tmp_path} --window 30m --min-snapshots 2 --allowed-lag 0"
        " --retry-allowed-lag 10 --master spark://10.1.2.3:7077"
        f" -o json --out {tmp_path}/r.json\n")


def _run_without_pyspark(code: str) -> subprocess.CompletedProcess[str]:
    blocker = textwrap.dedent("""\
        import importlib.abc, sys
        class NoSpark(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] == "pyspark":
                    raise ModuleNotFoundError(f"No module named {name!r}", name=name)
                return None
        sys.meta_path.insert(0, NoSpark())
        """)
    return subprocess.run([sys.executable, "-c", blocker + code], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)


def test_without_pyspark_the_spark_engine_says_how_to_install(tmp_path: Path) -> None:
    for engine in ("--engine=spark", "--master=local[1]"):
        proc = _run_without_pyspark(
            f"sys.argv = ['rmqctl', 'analyze', 'stuck', {str(tmp_path)!r}, {engine!r}]\n"
            "from rmqctl.cli.app import main\nmain()\n")
        assert proc.returncode == 2, engine
        assert proc.stderr == "rmqctl: error: pyspark is not installed; install it with: pip install 'rmqctl[spark]'\n"


def test_without_pyspark_the_local_engine_judges(tmp_path: Path) -> None:
    root = write_snapshots(tmp_path / "snap", series([100 + 10 * i for i in range(5)], [100] * 5))
    proc = _run_without_pyspark(
        f"sys.argv = ['rmqctl', 'analyze', 'stuck', {str(root)!r}, '-o', 'json']\n"
        "from rmqctl.cli.app import main\nmain()\n")
    assert proc.returncode == 1, proc.stderr
    document = json.loads(proc.stdout)
    assert (document["engine"], [q["status"] for q in document["queues"]]) == ("local", ["STALLED"])


def test_import_help_and_print_submit_never_load_pyspark(tmp_path: Path) -> None:
    code = textwrap.dedent(f"""\
        import runpy, sys
        import rmqctl, rmqctl.cli.app
        for argv in (['--help'], ['analyze', 'stuck', '--help'], ['analyze', 'stuck', {str(tmp_path)!r},
                                                                  '--print-submit']):
            sys.argv = ['rmqctl', *argv]
            try:
                runpy.run_module('rmqctl', run_name='__main__', alter_sys=True)
            except SystemExit as exc:
                assert exc.code in (0, None), exc.code
        loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j', 'analysis', 'pyarrow'))
        print('LOADED', loaded)
        """)
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "LOADED []"


def test_the_local_engine_gives_the_command_the_same_document(local_run: subprocess.CompletedProcess[str],
                                                               incident_dir: Path) -> None:
    proc = run_cli("analyze", "stuck", str(incident_dir), "-o", "json")  # auto: small input, no --master
    assert (proc.returncode, proc.stderr) == (local_run.returncode, local_run.stderr)
    assert json.loads(proc.stdout) == {**json.loads(local_run.stdout), "engine": "local"}
    assert json.loads(local_run.stdout)["engine"] == "spark"


def test_the_local_engine_writes_parquet_and_refuses_a_master(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    root = write_snapshots(tmp_path / "snap", series([100 + 10 * i for i in range(5)], [100] * 5))
    proc = run_cli("analyze", "stuck", str(root), "--engine", "local", "-o", "parquet", "--out", str(tmp_path / "pq"))
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", "")
    queues = pq.read_table(tmp_path / "pq" / "queues").to_pylist()
    assert [(q["status"], q["rule"], q["lag_end"], q["window_end_ts"]) for q in queues] == [
        ("STALLED", "frozen", 40, 1772366520000)]
    assert [g["stuck_queues"] for g in pq.read_table(tmp_path / "pq" / "groups").to_pylist()] == [1]
    proc = run_cli("analyze", "stuck", str(root), "--engine", "local", "--master", "local[1]")
    assert (proc.returncode, proc.stderr) == (
        2, "rmqctl: error: --master runs the Spark engine; drop it or use --engine spark\n")
