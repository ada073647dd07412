"""``analyze stuck`` says on stderr what the Spark job is doing, on a terminal only: the job's
``rmqctl: progress:`` lines, read by the command from a stand-in job (no Spark)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from rmqctl.cli import analyze_cmd
from rmqctl.cli.render import Console

JOB = '''
import sys
for line in ("rmqctl: progress: starting Spark (local[1]) to read 3 snapshot file(s)",
             "rmqctl: progress: Spark started; reading 3 snapshot file(s)",
             "rmqctl: progress: Spark job running: 2/4 tasks of 1 stage(s)",
             "rmqctl: warning: skipped dt=2030-01-01: dated after 2026-11-27 (a wrong clock?)",
             "some JVM chatter"):
    sys.stderr.write(line + "\\n")
'''


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def run_fake_job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stream: io.StringIO) -> int:
    (tmp_path / "fakejob.py").write_text(JOB, encoding="utf-8")
    monkeypatch.setattr(analyze_cmd, "JOB_MODULE", "fakejob")
    monkeypatch.setattr(analyze_cmd, "_analysis_root", lambda: tmp_path)
    monkeypatch.setattr(analyze_cmd, "console", Console(stream))
    return analyze_cmd._run_job([], debug=False)


def test_on_a_terminal_the_job_says_what_it_is_doing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stream = Terminal()
    assert run_fake_job(tmp_path, monkeypatch, stream) == 0
    shown = stream.getvalue()
    assert "starting Spark (local[1]) to read 3 snapshot file(s) …" in shown
    assert "Spark job running: 2/4 tasks of 1 stage(s) …" in shown
    # the progress line is cleared before the warning, which stays on a line of its own
    assert "\r\x1b[2Krmqctl: warning: skipped dt=2030-01-01" in shown
    assert "rmqctl: progress:" not in shown and "JVM chatter" not in shown


def test_into_a_pipe_there_is_no_progress(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stream = io.StringIO()
    assert run_fake_job(tmp_path, monkeypatch, stream) == 0
    assert stream.getvalue() == "rmqctl: warning: skipped dt=2030-01-01: dated after 2026-11-27 (a wrong clock?)\n"
