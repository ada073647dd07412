"""The names cache: which cluster key a command line means, the file format, what commands record."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rmqctl import errors
from rmqctl.model import ClientConnection, GroupView, MessageQueue, Subscription
from rmqctl.namecache import RecordingSource, cache_dir, cache_key, key_for, read_names, write_names
from rmqctl.source import Partial
from tests.completion.terminal import ROOT
from tests.fake_source import FakeSource

HEADER = "# rmqctl names v1\n"


def view(group: str, topics: list[str]) -> GroupView:
    return GroupView(
        group=group,
        connections=(ClientConnection("10.0.0.1@c1", "10.0.0.1:50001", "JAVA", 453),),
        broker_subscriptions={"broker-a": {t: Subscription(t, "*") for t in topics}},
        running_infos={}, progress=(),
        topic_queues={t: (MessageQueue(t, "broker-a", 0),) for t in topics},
    )


def test_key_precedence_is_the_connection_precedence() -> None:
    every = {"namesrv": "n:1", "context": "prod", "emulator": "healthy", "env_namesrv": "e:1",
             "current_context": "cur"}
    assert cache_key(**every) == "emulator:healthy"
    assert cache_key(**{**every, "emulator": None}) == "namesrv:n:1"
    assert cache_key(**{**every, "emulator": None, "namesrv": None}) == "context:prod"
    assert cache_key(**{**every, "emulator": None, "namesrv": None, "context": None}) == "namesrv:e:1"
    assert cache_key(namesrv=None, context=None, emulator=None, env_namesrv=None,
                     current_context="cur") == "context:cur"
    assert cache_key(namesrv=None, context=None, emulator=None, env_namesrv=None, current_context=None) is None


def test_cache_dir_follows_xdg() -> None:
    assert cache_dir({"XDG_CACHE_HOME": "/x/c", "HOME": "/h"}) == Path("/x/c/rmqctl/names")
    assert cache_dir({"HOME": "/h"}) == Path("/h/.cache/rmqctl/names")


def test_file_format_and_merge(tmp_path: Path) -> None:
    write_names("namesrv:10.0.0.1:9876;10.0.0.2:9876", "groups", ["b", "a", "not valid!"], directory=tmp_path)
    path = tmp_path / "namesrv_10.0.0.1_9876_10.0.0.2_9876.groups"
    assert path.read_text() == HEADER + "a\nb\n"
    write_names("namesrv:10.0.0.1:9876;10.0.0.2:9876", "groups", ["%RETRY%x|y", "a"], merge=True,
                directory=tmp_path)
    assert path.read_text() == HEADER + "%RETRY%x|y\na\nb\n"
    write_names("namesrv:10.0.0.1:9876;10.0.0.2:9876", "groups", ["c"], directory=tmp_path)
    assert path.read_text() == HEADER + "c\n"
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary file left behind


def test_corrupt_or_missing_files_read_as_nothing(tmp_path: Path) -> None:
    assert read_names("context:prod", "topics", tmp_path) == []
    (tmp_path / "context_prod.topics").write_bytes(b"\xff\xfe\x00garbage")
    assert read_names("context:prod", "topics", tmp_path) == []
    (tmp_path / "context_prod.topics").write_text("orders\npayments\n")  # no header
    assert read_names("context:prod", "topics", tmp_path) == []


def test_an_unwritable_cache_never_fails_the_command(tmp_path: Path) -> None:
    blocker = tmp_path / "file-not-dir"
    blocker.write_text("")
    write_names("context:prod", "groups", ["a"], directory=blocker / "names")  # must not raise
    assert blocker.read_text() == "" and read_names("context:prod", "groups", blocker / "names") == []
    # a command whose cache cannot be written still answers, and says nothing about the cache
    env = {**os.environ, "XDG_CACHE_HOME": str(blocker), "PYTHONPATH": str(ROOT)}
    env.pop("NAMESRV_ADDR", None)
    proc = subprocess.run([sys.executable, "-m", "rmqctl", "--emulator", "topic-overwrite", "-o", "json",
                           "group", "list"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert [g["group"] for g in json.loads(proc.stdout)["groups"]] == ["g1"]
    assert blocker.read_text() == ""


async def test_recording_source_notes_what_commands_read(tmp_path: Path) -> None:
    fake = FakeSource()
    fake.set_view(view("orders", ["Orders", "%RETRY%orders"]))
    fake.set_view(view("billing", ["Invoices"]))
    source = RecordingSource(fake, "context:prod", tmp_path)
    await source.cluster()
    await source.topics()
    assert (tmp_path / "context_prod.topics").read_text() == HEADER + "Invoices\nOrders\n"
    await source.group_summaries()
    assert (tmp_path / "context_prod.groups").read_text() == HEADER + "billing\norders\n"
    fake.set_view(view("audit", ["Audit"]))
    await source.group_view("audit")
    assert (tmp_path / "context_prod.groups").read_text() == HEADER + "audit\nbilling\norders\n"
    assert (tmp_path / "context_prod.topics").read_text() == HEADER + "Audit\nInvoices\nOrders\n"
    await source.topic_route("Audit")
    with pytest.raises(errors.NotFound):
        await source.topic_route("NoSuchTopic")
    assert (tmp_path / "context_prod.topics").read_text() == HEADER + "Audit\nInvoices\nOrders\n"
    with pytest.raises(errors.NotFound):
        await source.group_view("nosuch")
    assert "nosuch" not in (tmp_path / "context_prod.groups").read_text()


async def test_a_partial_group_list_adds_instead_of_replacing(tmp_path: Path) -> None:
    (tmp_path / "context_prod.groups").write_text(HEADER + "on-dead-broker\n")
    fake = FakeSource(broker_errors={"broker-b": errors.ConnectionError("refused")})
    fake.set_view(view("orders", ["Orders"]))
    result = await RecordingSource(fake, "context:prod", tmp_path).groups()
    assert isinstance(result, Partial) and result.value == ["orders"]
    assert (tmp_path / "context_prod.groups").read_text() == HEADER + "on-dead-broker\norders\n"


def test_key_for_reads_the_environment_and_the_current_context(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "config.toml"
    config.write_text('current-context = "staging"\n[contexts.staging]\nnamesrv = "s:9876"\n')
    monkeypatch.setenv("RMQCTL_CONFIG", str(config))
    monkeypatch.delenv("NAMESRV_ADDR", raising=False)
    assert key_for(namesrv=None, context=None, emulator=None) == "context:staging"
    monkeypatch.setenv("NAMESRV_ADDR", "e:9876")
    assert key_for(namesrv=None, context=None, emulator=None) == "namesrv:e:9876"
    config.write_text("current-context = [")  # a broken config file: no key, no error
    monkeypatch.delenv("NAMESRV_ADDR")
    assert key_for(namesrv=None, context=None, emulator=None) is None


def test_group_list_in_a_real_process_refreshes_the_cache(tmp_path: Path) -> None:
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}
    env.pop("NAMESRV_ADDR", None)
    proc = subprocess.run([sys.executable, "-m", "rmqctl", "--emulator", "topic-overwrite", "group", "list"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    names = tmp_path / "rmqctl" / "names"
    assert sorted(p.name for p in names.iterdir()) == ["emulator_topic-overwrite.groups"]
    assert (names / "emulator_topic-overwrite.groups").read_text() == HEADER + "g1\n"
