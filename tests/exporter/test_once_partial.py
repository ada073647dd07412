"""``exporter --once`` for cron: a round in which a group could not be read still prints every
metric it has, says what was missing on stderr and exits 5 (partial), never 0."""

from __future__ import annotations

from typer.testing import CliRunner

from rmqctl.cli.app import app as rmqctl_app
from rmqctl.errors import ExitCode
from tests.exporter.test_metrics import value


def once(*groups: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(rmqctl_app, ["--emulator", "healthy", "--at", "60", "exporter", "--once", *groups])


def test_once_exits_5_when_a_group_of_the_round_could_not_be_read_and_prints_the_rest() -> None:
    result = once("order-service", "no-such-group")
    assert result.exit_code == ExitCode.PARTIAL == 5, result.output
    body = result.stdout.encode()
    assert value(body, "rmqctl_group_up", group="no-such-group") == 0
    assert value(body, "rmqctl_group_up", group="order-service") == 1
    assert value(body, "rmqctl_group_lag_messages", group="order-service", topic="OrderTopic") is not None
    assert value(body, "rmqctl_exporter_rounds_total") == 1
    assert "1 unreadable" in result.stderr
    assert "rmqctl: error: partial result: 1 group(s) unreadable, 0 broker(s) down" in result.stderr


def test_once_exits_0_when_every_group_and_broker_was_read() -> None:
    result = once("order-service")
    assert result.exit_code == 0, result.output
    assert value(result.stdout.encode(), "rmqctl_group_up", group="order-service") == 1
