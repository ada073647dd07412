"""Contexts in the TOML config file, name server resolution, failover and ACL signing on the wire."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rmqctl.cli.app import app
from rmqctl.config import Config, resolve
from rmqctl.errors import ConfigError, UsageError
from rmqctl.remoting.acl import signature
from tests.fakes import FakeServer, free_port

CLUSTER_BODY = {"brokerAddrTable": {}, "clusterAddrTable": {}}


@pytest.fixture
def config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv("RMQCTL_CONFIG", raising=False)
    monkeypatch.delenv("NAMESRV_ADDR", raising=False)
    for var in ("RMQCTL_ACCESS_KEY", "RMQCTL_SECRET_KEY"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path / "rmqctl" / "config.toml"


def test_set_use_and_view_contexts_with_secrets_masked(config_home: Path) -> None:
    runner = CliRunner()
    assert runner.invoke(app, ["config", "set-context", "prod", "-n", "10.0.0.1:9876;10.0.0.2:9876",
                               "--access-key", "ak", "--secret-key", "s3cret"]).exit_code == 0
    assert runner.invoke(app, ["config", "set-context", "test", "-n", "127.0.0.1:9876"]).exit_code == 0
    assert Config.load().current_context == "prod"  # the first context becomes current
    assert runner.invoke(app, ["config", "use-context", "test"]).exit_code == 0
    assert Config.load().current_context == "test"
    assert oct(config_home.stat().st_mode & 0o777) == "0o600"
    view = runner.invoke(app, ["config", "view", "-o", "json"])
    doc = json.loads(view.stdout)
    assert doc["contexts"]["prod"]["secret_key"] == "******"
    assert "s3cret" not in view.stdout + view.stderr
    unknown = runner.invoke(app, ["config", "use-context", "nope"])
    assert unknown.exit_code == 2 and "unknown context 'nope'" in unknown.stderr


def test_resolution_order(config_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config_home.parent.mkdir(parents=True)
    config_home.write_text('current-context = "a"\n[contexts.a]\nnamesrv = "a:1"\ntimeout = 2\n'
                           '[contexts.b]\nnamesrv = "b:1"\n')
    assert resolve(namesrv=None, context=None, timeout=None).namesrv == "a:1"
    assert resolve(namesrv=None, context=None, timeout=None).timeout == 2
    monkeypatch.setenv("NAMESRV_ADDR", "env:1")
    assert resolve(namesrv=None, context=None, timeout=None).namesrv == "env:1"
    assert resolve(namesrv=None, context="b", timeout=None).namesrv == "b:1"
    assert resolve(namesrv="flag:1", context="b", timeout=9).namesrv == "flag:1"


@pytest.mark.parametrize("text, message", [
    ("[contexts.a\n", "not valid TOML"),
    ('[contexts.a]\nnamesrv = 5\n', "wrong type"),
    ('[contexts.a]\nnamesrvv = "x:1"\n', "unknown key 'namesrvv'"),
])
def test_bad_config_files_are_one_line_errors(config_home: Path, text: str, message: str) -> None:
    config_home.parent.mkdir(parents=True)
    config_home.write_text(text)
    with pytest.raises(ConfigError, match=message):
        Config.load()
    result = CliRunner().invoke(app, ["group", "list"])
    assert result.exit_code == 2 and message in result.stderr and "Traceback" not in result.stderr


def test_no_name_server_anywhere_is_a_usage_error(config_home: Path) -> None:
    with pytest.raises(UsageError, match="no name server"):
        resolve(namesrv=None, context=None, timeout=None)


def test_failover_to_the_second_name_server_and_signed_requests(
        config_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RMQCTL_ACCESS_KEY", "rocketmq2")
    monkeypatch.setenv("RMQCTL_SECRET_KEY", "12345678")
    with FakeServer({106: lambda req: (0, CLUSTER_BODY)}) as namesrv:
        dead = f"127.0.0.1:{free_port()}"
        result = CliRunner().invoke(app, ["cluster", "list", "-n", f"{dead};{namesrv.address}", "-o", "json"])
        assert result.exit_code == 0, result.stderr
        assert json.loads(result.stdout) == {"brokers": [], "errors": {}}
        (req,) = namesrv.requests
        # GET_BROKER_CLUSTER_INFO has no header fields of its own: the signed content is just the
        # access key; HMAC-SHA1("12345678", "rocketmq2") in Base64, computed by hand
        assert dict(req.ext_fields) == {"AccessKey": "rocketmq2", "Signature": "Ou1T58RIcyZWaTIwzkhJZWn/Zvs="}
        assert "12345678" not in result.stdout + result.stderr


def test_known_signature_vector() -> None:
    # ext {consumerGroup: G, AccessKey: rocketmq2}, secret 12345678 -> content "rocketmq2G"
    assert signature({"consumerGroup": "G", "AccessKey": "rocketmq2"}, b"", "12345678") == \
        "6Qhr/EQ1ay/USvic76JD//g6sHg="
