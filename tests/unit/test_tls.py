"""TLS on the remoting connections: ``--tls`` and a context's ``tls_*`` keys against an emulator
served in TLS only (as a broker in ``tls.server.mode=enforcing``), and the one-line errors of every
mismatch: TLS to a plain port, plain to a TLS port, an untrusted certificate, a missing client
certificate, unreadable files."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rmqctl.cli.app import app
from rmqctl.config import resolve
from rmqctl.emulator.serve import Served, ServeOptions
from rmqctl.errors import ConfigError, ExitCode
from rmqctl.remoting.tls import TlsOptions
from tests.emulator.helpers import served_in_thread
from tests.tlsfiles import TlsFiles, make_tls_files

GROUP = "test-consumer"
READ_COMMANDS = [["cluster", "list"], ["topic", "list"], ["group", "list"], ["group", "show", GROUP],
                 ["group", "progress", GROUP], ["group", "assignment", GROUP], ["doctor", GROUP]]


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    return make_tls_files(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def tls_served(certs: TlsFiles) -> Iterator[Served]:
    options = ServeOptions(clock="virtual", at=60.0, ssl_context=certs.server_context())
    with served_in_thread("tag-overwrite", options) as served:
        yield served


@pytest.fixture(scope="module")
def plain_served() -> Iterator[Served]:
    with served_in_thread("tag-overwrite", ServeOptions(clock="virtual")) as s:
        yield s


@pytest.fixture
def config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    for var in ("RMQCTL_CONFIG", "NAMESRV_ADDR", "RMQCTL_TLS", "RMQCTL_ACCESS_KEY", "RMQCTL_SECRET_KEY"):
        monkeypatch.delenv(var, raising=False)
    path = tmp_path / "rmqctl" / "config.toml"
    path.parent.mkdir(parents=True)
    return path


def context(path: Path, namesrv: str, **keys: object) -> None:
    lines = ['current-context = "c"', "[contexts.c]", f'namesrv = "{namesrv}"']
    lines += [f"{k} = {json.dumps(v)}" for k, v in keys.items()]
    path.write_text("\n".join(lines) + "\n")


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("command", READ_COMMANDS, ids=" ".join)
def test_every_read_command_works_over_tls_with_the_contexts_ca(command: list[str], tls_served: Served,
                                                                 certs: TlsFiles, config_home: Path) -> None:
    context(config_home, tls_served.namesrv, tls=True, tls_ca_file=str(certs.ca))
    code, out, err = run(*command, "-o", "json")
    assert code in (ExitCode.OK, ExitCode.FINDINGS), err
    assert json.loads(out)
    if command[0] == "doctor":
        assert "SUBSCRIPTION_TAG_CONFLICT" in out  # the scenario's incident, read over TLS


def test_the_tls_flag_turns_tls_on_for_name_servers_given_with_n(tls_served: Served, config_home: Path) -> None:
    code, out, err = run("--tls", "-n", tls_served.namesrv, "group", "list", "-o", "json")
    assert code == ExitCode.OK, err
    assert "test-consumer" in out
    code, out, err = run("group", "list", "--tls", "-n", tls_served.namesrv, "-o", "json")  # after the command too
    assert code == ExitCode.OK, err


def test_rmqctl_tls_in_the_environment_asks_for_tls(tls_served: Served, config_home: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RMQCTL_TLS", "1")
    code, _, err = run("-n", tls_served.namesrv, "cluster", "list")
    assert code == ExitCode.OK, err


def test_plain_to_a_tls_only_server_is_one_line_naming_the_mismatch(tls_served: Served, config_home: Path) -> None:
    code, out, err = run("-n", tls_served.namesrv, "group", "list")
    assert code == ExitCode.CONNECTION and out == ""
    lines = err.strip().splitlines()
    assert lines[0].startswith("rmqctl: error: ") and "requires TLS" in lines[0], err
    assert "--tls" in err and "Traceback" not in err
    assert len(lines) <= 2  # the error and its hint


def test_tls_to_a_plain_server_is_one_line_naming_the_mismatch(plain_served: Served, config_home: Path) -> None:
    code, out, err = run("--tls", "-n", plain_served.namesrv, "group", "list")
    assert code == ExitCode.CONNECTION and out == ""
    assert err.startswith("rmqctl: error: ") and "does not speak TLS" in err, err
    assert "drop --tls" in err and "Traceback" not in err


def test_a_certificate_from_another_ca_is_not_trusted(tls_served: Served, certs: TlsFiles, config_home: Path) -> None:
    context(config_home, tls_served.namesrv, tls=True, tls_ca_file=str(certs.other_ca))
    code, _, err = run("cluster", "list")
    assert code == ExitCode.CONNECTION
    assert "is not trusted" in err and str(certs.other_ca) in err, err
    # without verification (the Java client's default, tls.client.authServer=false) it connects
    context(config_home, tls_served.namesrv, tls=True, tls_ca_file=str(certs.other_ca), tls_verify=False)
    assert run("cluster", "list")[0] == ExitCode.OK


def test_without_a_ca_file_the_server_is_not_checked_as_in_java(tls_served: Served, config_home: Path) -> None:
    context(config_home, tls_served.namesrv, tls=True)
    assert run("cluster", "list")[0] == ExitCode.OK
    # asked to verify without a CA file: the system's trust store does not know the test CA
    context(config_home, tls_served.namesrv, tls=True, tls_verify=True)
    code, _, err = run("cluster", "list")
    assert code == ExitCode.CONNECTION and "the system's trust store" in err


def test_a_server_that_wants_a_client_certificate(certs: TlsFiles, config_home: Path) -> None:
    options = ServeOptions(clock="virtual", ssl_context=certs.server_context(require_client_cert=True))
    with served_in_thread("tag-overwrite", options) as served:
        context(config_home, served.namesrv, tls=True, tls_ca_file=str(certs.ca))
        code, _, err = run("cluster", "list")
        assert code == ExitCode.CONNECTION and "client certificate" in err, err
        context(config_home, served.namesrv, tls=True, tls_ca_file=str(certs.ca),
                tls_cert_file=str(certs.client_cert), tls_key_file=str(certs.client_key))
        code, _, err = run("cluster", "list")
        assert code == ExitCode.OK, err


def test_unreadable_tls_files_are_config_errors(tls_served: Served, certs: TlsFiles, config_home: Path,
                                               tmp_path: Path) -> None:
    context(config_home, tls_served.namesrv, tls=True, tls_ca_file=str(tmp_path / "missing.pem"))
    code, _, err = run("cluster", "list")
    assert code == ExitCode.USAGE and "missing.pem: no such file" in err, err
    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate\n")
    context(config_home, tls_served.namesrv, tls=True, tls_cert_file=str(junk), tls_key_file=str(certs.client_key))
    code, _, err = run("cluster", "list")
    assert code == ExitCode.USAGE and "is not usable" in err, err
    with pytest.raises(ConfigError, match="needs its certificate"):
        TlsOptions(key_file=str(certs.client_key)).context()


def test_the_context_carries_tls_and_hides_the_key_password(certs: TlsFiles, config_home: Path) -> None:
    context(config_home, "127.0.0.1:9876", tls=True, tls_ca_file="~/ca.pem", tls_key_password="s3cret")
    target = resolve(namesrv=None, context=None, timeout=None)
    assert target.tls is not None and target.tls.ca_file == str(Path.home() / "ca.pem")
    assert target.tls.verify is None and "s3cret" not in repr(target.tls)
    code, out, _ = run("config", "view", "-o", "json")
    assert code == 0 and "s3cret" not in out and json.loads(out)["contexts"]["c"]["tls_key_password"] == "******"
    context(config_home, "127.0.0.1:9876", tls_ca_file="ca.pem")
    assert resolve(namesrv=None, context=None, timeout=None).tls is None  # tls = true is what turns it on


def test_tls_does_not_apply_to_a_dashboard_or_the_embedded_emulator(config_home: Path) -> None:
    code, _, err = run("--tls", "--dashboard", "http://127.0.0.1:1", "group", "list")
    assert code == ExitCode.USAGE and "https://" in err
    code, _, err = run("--tls", "--emulator", "tag-overwrite", "group", "list")
    assert code == ExitCode.USAGE and "embedded emulator" in err


def test_set_context_writes_the_tls_keys_and_the_context_reads_over_tls(tls_served: Served, certs: TlsFiles,
                                                                        config_home: Path) -> None:
    code, _, err = run("config", "set-context", "secure", "-n", tls_served.namesrv, "--tls",
                       "--tls-ca-file", str(certs.ca), "--use")
    assert code == 0, err
    assert "tls = true" in config_home.read_text() and f'tls_ca_file = "{certs.ca}"' in config_home.read_text()
    code, _, err = run("group", "list")
    assert code == ExitCode.OK, err
    code, _, err = run("config", "set-context", "secure", "--no-tls")
    assert code == 0 and run("group", "list")[0] == ExitCode.CONNECTION


def test_tls_to_a_port_that_never_answers_ends_at_the_deadline_with_a_hint(config_home: Path) -> None:
    import socket

    with socket.socket() as listener:  # accepts connections (the backlog) and never reads
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = listener.getsockname()[1]
        code, out, err = run("--tls", "--timeout", "0.5", "-n", f"127.0.0.1:{port}", "cluster", "list")
    assert code == ExitCode.TIMEOUT and out == ""
    assert "timed out" in err and "the TLS handshake got no answer: is it a plain port? (drop --tls)" in err, err
