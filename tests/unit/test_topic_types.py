"""``topic list`` types a topic as its brokers declare it (each broker's topic configs, their
``message.type``): a 5.5 LITE topic lists as ``lite``, a FIFO one as ``fifo``, never all as
``normal``. Where a broker's configs cannot be read, or the source reads none (a dashboard), the
type comes from the topic's name and the row says so (``type_source``)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping

from typer.testing import CliRunner

from rmqctl import errors, report
from rmqctl.backends import Capabilities
from rmqctl.cli.app import app
from rmqctl.model import BrokerData, ClusterInfo
from rmqctl.service import ClusterService
from tests.fake_source import FakeClock
from tests.unit.test_service import A, B, TwoBrokers

TABLES = {A: {"T": "NORMAL", "L": "LITE", "%RETRY%G": "NORMAL"},
          B: {"T": "NORMAL", "P": "PRIORITY", "F": "FIFO", "D": "DELAY", "X": "TRANSACTION"}}


class Typed(TwoBrokers):
    """Two brokers whose topic configs declare ``TABLES``."""

    async def topic_list(self) -> list[str]:
        return ["T", "L", "P", "F", "D", "X", "Plain", "%RETRY%G", "%DLQ%G", "TBW102", "C", "broker-a"]

    async def topic_message_types(self, address: str) -> Mapping[str, str]:
        self._read("topic_message_types", address)
        return TABLES[address]


def types_of(backend: TwoBrokers) -> tuple[dict[str, str], dict[str, str]]:
    found = asyncio.run(ClusterService(backend, FakeClock()).topic_types())
    assert dict(found.errors) == {}  # the list comes from the name servers: never a partial result
    return found.value, dict(found.unavailable)


def test_every_brokers_declared_types_are_read_once_and_merged() -> None:
    backend = Typed()
    declared, unavailable = types_of(backend)
    assert declared == {"T": "NORMAL", "L": "LITE", "%RETRY%G": "NORMAL", "P": "PRIORITY", "F": "FIFO",
                        "D": "DELAY", "X": "TRANSACTION"}
    assert unavailable == {} and backend.calls.count("topic_message_types") == 2


def test_a_broker_whose_configs_cannot_be_read_is_named_and_the_others_count() -> None:
    backend = Typed()
    backend.down[B] = errors.NoPermission(16, "User:viewer has no permission to access Cluster", address=B)
    declared, unavailable = types_of(backend)
    assert declared == TABLES[A]
    assert unavailable["topic_types"].startswith("the topic configs of a broker could not be read (broker-b: ")
    assert "typed by their names" in unavailable["topic_types"]


def test_a_source_that_reads_no_configs_is_never_asked_and_says_so() -> None:
    backend = Typed(Capabilities(reads_topic_configs=False))
    declared, unavailable = types_of(backend)
    assert declared == {} and "topic_message_types" not in backend.calls
    assert "typed by their names" in unavailable["topic_types"]


INFO = ClusterInfo(brokers={"broker-a": BrokerData("broker-a", "C", {0: A})}, clusters={"C": ("broker-a",)})


def test_users_topics_take_the_declared_type_and_the_rest_their_names() -> None:
    topics = asyncio.run(Typed().topic_list())
    doc = report.topic_list(INFO, topics, system=True, declared=types_of(Typed())[0])
    rows = {r["topic"]: (r["type"], r["type_source"]) for r in doc["topics"]}
    assert rows == {
        "T": ("normal", "broker"), "L": ("lite", "broker"), "P": ("priority", "broker"), "F": ("fifo", "broker"),
        "D": ("delay", "broker"), "X": ("transaction", "broker"), "Plain": ("normal", "name"),
        "%RETRY%G": ("retry", "name"), "%DLQ%G": ("dlq", "name"), "TBW102": ("system", "name"),
        "C": ("cluster", "name"), "broker-a": ("broker", "name"),
    }
    assert "unavailable" not in doc


def test_without_system_every_users_topic_stays_whatever_its_type() -> None:
    topics = asyncio.run(Typed().topic_list())
    doc = report.topic_list(INFO, topics, system=False, declared=types_of(Typed())[0],
                            unavailable={"topic_types": "why"})
    assert [r["topic"] for r in doc["topics"]] == ["T", "L", "P", "F", "D", "X", "Plain"]
    assert doc["unavailable"] == {"topic_types": "why"}


def test_the_emulator_answers_its_topic_configs_so_the_type_comes_from_the_broker() -> None:
    runner = CliRunner()
    shown = runner.invoke(app, ["--emulator", "tag-overwrite", "topic", "list", "-o", "json"])
    assert shown.exit_code == 0, shown.stderr
    doc = json.loads(shown.stdout)
    assert doc["topics"] == [{"topic": "TopicTest2", "type": "normal", "type_source": "broker"}]
    table = runner.invoke(app, ["--emulator", "tag-overwrite", "topic", "list"])
    assert table.exit_code == 0 and "type_source" in table.stdout.splitlines()[0].lower().replace(" ", "_")


def test_a_dashboard_is_asked_nothing_and_its_topics_are_typed_by_name() -> None:
    import httpx

    from rmqctl.backends.dashboard import DashboardBackend
    from rmqctl.dashboard.client import DashboardClient

    asked: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        asked.append(request.url.path)
        return httpx.Response(500)

    client = DashboardClient("http://dashboard.invalid:8080", username=None, password=None, timeout=5,
                             transport=httpx.MockTransport(handler))
    found = asyncio.run(ClusterService(DashboardBackend(client), FakeClock()).topic_types())
    assert found.value == {} and asked == []
    assert "typed by their names" in found.unavailable["topic_types"]


TYPED_SCENARIO = """
name = "typed-topics"
duration = 10
[[topics]]
name = "Plain"
[[topics]]
name = "Orders"
message_type = "fifo"
[[topics]]
name = "Chats"
message_type = "LITE"
"""


def test_an_emulated_topic_declares_its_message_type_and_topic_list_shows_it(tmp_path) -> None:  # type: ignore[no-untyped-def]
    scenario = tmp_path / "typed.toml"
    scenario.write_text(TYPED_SCENARIO)
    shown = CliRunner().invoke(app, ["--emulator", str(scenario), "topic", "list", "-o", "json"])
    assert shown.exit_code == 0, shown.output
    rows = {r["topic"]: (r["type"], r["type_source"]) for r in json.loads(shown.stdout)["topics"]}
    assert rows == {"Plain": ("normal", "broker"), "Orders": ("fifo", "broker"), "Chats": ("lite", "broker")}


def test_an_unknown_message_type_in_a_scenario_is_one_line_exit_2(tmp_path) -> None:  # type: ignore[no-untyped-def]
    scenario = tmp_path / "bad.toml"
    scenario.write_text(TYPED_SCENARIO.replace('"LITE"', '"STREAM"'))
    shown = CliRunner().invoke(app, ["--emulator", str(scenario), "topic", "list"])
    assert shown.exit_code == 2 and "unknown message type 'STREAM'" in shown.stderr, shown.output
    assert "Traceback" not in shown.stderr
