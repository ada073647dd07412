"""On a real Spark standalone cluster: a master and a worker started from the pyspark distribution on
127.0.0.1, ``rmqctl analyze stuck --master spark://127.0.0.1:PORT`` on the incident fixture, and the
``--print-submit`` command run with the distribution's own spark-submit. Both must give the verdicts
local mode gives. Master and worker are always stopped.
"""

from __future__ import annotations

import json
import os
import shlex
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.analysis.conftest import INCIDENT_VERDICTS, ROOT, run_cli, verdict_tuples
from tests.harness.plugin import real_part_missing

pyspark = pytest.importorskip("pyspark")
SPARK_HOME = Path(pyspark.__file__).resolve().parent
START_TIMEOUT = 120.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for(condition: object, what: str, procs: list[subprocess.Popen[bytes]], logs: list[Path]) -> None:
    """Poll ``condition()`` until true; fail early when a daemon died, or after START_TIMEOUT."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return
        for proc, log in zip(procs, logs, strict=True):
            if proc.poll() is not None:
                pytest.fail(f"{log.name} exited with {proc.returncode} while waiting for {what}:\n"
                            + log.read_text(errors="replace")[-3000:])
        time.sleep(0.2)
    pytest.fail(f"timed out after {START_TIMEOUT:.0f}s waiting for {what}")


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


@pytest.fixture(scope="module")
def spark_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if not (SPARK_HOME / "bin" / "spark-class").exists():
        real_part_missing(f"the pyspark distribution at {SPARK_HOME} has no bin/spark-class", part="Spark cluster")
    work = tmp_path_factory.mktemp("spark-cluster")
    port = _free_port()
    env = {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1",
           "SPARK_DAEMON_MEMORY": "256m", "SPARK_LOG_DIR": str(work), "SPARK_WORKER_DIR": str(work / "worker")}
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    commands = {
        "master.log": [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                       "--port", str(port), "--webui-port", str(_free_port())],
        "worker.log": [spark_class, "org.apache.spark.deploy.worker.Worker", f"spark://127.0.0.1:{port}",
                       "--host", "127.0.0.1", "--cores", "1", "--memory", "512m",
                       "--webui-port", str(_free_port()), "--work-dir", str(work / "worker")],
    }
    procs: list[subprocess.Popen[bytes]] = []
    logs: list[Path] = []
    try:
        for name, command in commands.items():
            log = work / name
            with log.open("wb") as sink:
                procs.append(subprocess.Popen(command, env=env, stdout=sink, stderr=subprocess.STDOUT,
                                              stdin=subprocess.DEVNULL, start_new_session=True))
            logs.append(log)
            if name == "master.log":
                _wait_for(lambda: _port_open(port), "the master's port", procs, logs)
        _wait_for(lambda: "Registering worker" in logs[0].read_text(errors="replace"),
                  "the worker to register with the master", procs, logs)
        yield f"spark://127.0.0.1:{port}"
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=30)


def test_cluster_gives_the_same_verdicts_as_local_mode(
    spark_cluster: str, incident_dir: Path, local_run: subprocess.CompletedProcess[str], tmp_path: Path,
) -> None:
    assert local_run.returncode == 1, local_run.stderr
    local = json.loads(local_run.stdout)["queues"]

    proc = run_cli("analyze", "stuck", str(incident_dir), "-o", "json", "--master", spark_cluster)
    assert proc.returncode == 1, proc.stderr
    on_cluster = json.loads(proc.stdout)["queues"]
    assert verdict_tuples(on_cluster) == INCIDENT_VERDICTS
    assert on_cluster == local

    # the printed spark-submit command, run with the distribution's spark-submit
    out = tmp_path / "submitted.json"
    printed = run_cli("analyze", "stuck", str(incident_dir), "-o", "json", "--out", str(out),
                      "--master", spark_cluster, "--print-submit")
    assert printed.returncode == 0, printed.stderr
    argv = shlex.split(printed.stdout)
    assert argv[0] == "spark-submit"
    env = {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1",
           "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    env.pop("PYTHONPATH", None)  # the script must find its package by itself
    submitted = subprocess.run([str(SPARK_HOME / "bin" / "spark-submit"), *argv[1:]], cwd=ROOT.parent, env=env,
                               capture_output=True, text=True, timeout=300)
    assert submitted.returncode == 1, submitted.stderr[-3000:]
    assert json.loads(out.read_text())["queues"] == local
