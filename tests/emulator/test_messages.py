"""Looking one message up on the emulator, over the real wire protocol: by the broker's offset id
(VIEW_MESSAGE_BY_ID), by the producer's unique key and by a key (QUERY_MESSAGE through the
index), and by queue offset; and ``rmqctl msg show`` on top of it."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from rmqctl import errors
from rmqctl.cli.app import app
from rmqctl.connect import Target, open_source
from rmqctl.model import MessageQueue, MessageRef, decode_offset_message_id

runner = CliRunner()


async def test_a_message_is_found_by_position_offset_id_unique_key_and_key() -> None:
    async with open_source(Target(emulator="tag-overwrite")) as opened:
        sent = opened.cluster.produce("TopicTest2", 1, "tag1", queue=2, keys="order-4711 billing",
                                      body=b"{\"id\":4711}")
        assert len(sent) == 1 and sent[0].queue_offset > 0  # the scenario wrote to queue 2 before
        source = opened.source

        at = await source.find_messages(MessageRef(topic="TopicTest2", broker="broker-a", queue_id=2,
                                                   offset=sent[0].queue_offset))
        [message] = at.value
        assert message.queue == MessageQueue("TopicTest2", "broker-a", 2)
        assert message.tags == "tag1" and message.keys == ("order-4711", "billing")
        assert message.body == b"{\"id\":4711}" and message.unique_key == sent[0].msg_id
        host, port, physical = decode_offset_message_id(message.offset_msg_id) or ("", 0, 0)
        assert f"{host}:{port}" == opened.cluster.brokers["broker-a"].addr

        by_offset_id = await source.find_messages(MessageRef(msg_id=message.offset_msg_id))
        assert by_offset_id.value == [message]
        by_unique_key = await source.find_messages(MessageRef(msg_id=sent[0].msg_id, topic="TopicTest2"))
        assert by_unique_key.value == [message]
        by_key = await source.find_messages(MessageRef(key="billing", topic="TopicTest2"))
        assert by_key.value == [message]


async def test_what_names_no_message_is_not_found() -> None:
    async with open_source(Target(emulator="tag-overwrite")) as opened:
        source = opened.source
        addr = opened.cluster.brokers["broker-a"].addr
        host, port = addr.rsplit(":", 1)
        from rmqctl.model import encode_offset_message_id

        # the broker exists, but nothing is stored at that commit-log offset
        with pytest.raises(errors.NotFound):
            await source.find_messages(MessageRef(msg_id=encode_offset_message_id(host, int(port), 3)))
        # a key on another topic, a unique key no message has, an offset past the end
        with pytest.raises(errors.NotFound):
            await source.find_messages(MessageRef(key="order-4711", topic="TopicTest2"))
        with pytest.raises(errors.NotFound) as lost:
            await source.find_messages(MessageRef(msg_id="0A000001" + "0" * 24))
        assert "--topic" in (lost.value.hint or "")
        with pytest.raises(errors.NotFound):
            await source.find_messages(MessageRef(topic="TopicTest2", broker="broker-a", queue_id=0, offset=10_000))
        with pytest.raises(errors.NotFound, match="broker-x"):
            await source.find_messages(MessageRef(topic="TopicTest2", broker="broker-x", queue_id=0, offset=0))


def test_msg_show_prints_fields_and_keeps_the_body_unless_asked() -> None:
    base = ["--emulator", "tag-overwrite"]
    result = runner.invoke(app, [*base, "msg", "show", "TopicTest2", "--queue", "broker-a/1", "--offset", "0"])
    assert result.exit_code == 0, result.output
    assert "tags" in result.stdout and "tag1" in result.stdout and "property UNIQ_KEY" in result.stdout
    assert "\nbody " not in result.stdout

    result = runner.invoke(app, [*base, "-o", "json", "msg", "show", "TopicTest2", "-q", "broker-a/1",
                                 "--offset", "0", "--body"])
    doc = json.loads(result.stdout)
    [message] = doc["messages"]
    assert doc["query"] == {"topic": "TopicTest2", "broker": "broker-a", "queue_id": 1, "offset": 0}
    assert (message["queue_id"], message["queue_offset"], message["tags"]) == (1, 0, "tag1")
    assert message["body"] == "" and message["body_base64"] == "" and doc["errors"] == {}

    # the unique key shown, with its topic, finds the same message
    again = runner.invoke(app, [*base, "-o", "json", "msg", "show", message["unique_key"], "-t", "TopicTest2"])
    assert json.loads(again.stdout)["messages"][0]["queue_offset"] == 0


@pytest.mark.parametrize(("args", "words"), [
    (["TopicTest2", "--queue", "broker-a/1"], "--queue and --offset go together"),
    (["TopicTest2", "--queue", "broker-a", "--offset", "1"], "is not BROKER/QUEUE_ID"),
    (["TopicTest2", "--key", "k", "--queue", "broker-a/1", "--offset", "1"], "not both"),
    (["0A0000010000000000000000000000FF"], "add --topic"),
    (["TopicTest2", "--key", "nobody"], "no message found for key 'nobody'"),
])
def test_msg_show_mistakes_are_one_line_and_exit_2(args: list[str], words: str) -> None:
    result = runner.invoke(app, ["--emulator", "tag-overwrite", "msg", "show", *args])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("rmqctl: error: ") and words in result.stderr
    assert len(result.stderr.strip().splitlines()) <= 2  # the error and its hint
    assert "Traceback" not in result.output


class _NoLookups:
    """A back end that declares it cannot look messages up (as the dashboard does)."""

    capabilities = __import__("rmqctl.backends", fromlist=["Capabilities"]).Capabilities(
        message_reads=False, message_lookups_unavailable="not through this back end")

    async def view_message(self, *args: object, **kwargs: object) -> None:
        raise AssertionError("a read the back end declares it lacks was made")

    query_messages = pull_messages = view_message


@pytest.mark.parametrize("ref", [MessageRef(msg_id="0A000001" + "0" * 24, topic="T"), MessageRef(key="k", topic="T"),
                                 MessageRef(topic="T", broker="b", queue_id=0, offset=0)])
async def test_a_back_end_without_message_reads_says_so_and_is_never_asked(ref: MessageRef) -> None:
    from rmqctl.service import ClusterService

    service = ClusterService(_NoLookups())  # type: ignore[arg-type]
    with pytest.raises(errors.UsageError, match="cannot"):
        await service.find_messages(ref)


async def test_browse_reads_pages_and_filters_like_the_broker() -> None:
    from rmqctl.doctor.explain import broker_passes, browse_filter

    async with open_source(Target(emulator="tag-overwrite")) as opened:
        before = opened.cluster.brokers["broker-a"].max_offset("TopicTest2", 0)
        for tag in ["Aa", "BB", "Ab"] * 15:  # 45 messages: more than one pull of 32
            opened.cluster.produce("TopicTest2", 1, tag, queue=0, keys=f"k-{tag}")
        mq = MessageQueue("TopicTest2", "broker-a", 0)
        read = await opened.source.browse("TopicTest2", queue=mq, from_offset=before, limit=100)
        assert [m.queue_offset for m in read.value] == list(range(before, before + 45))
        last = await opened.source.browse("TopicTest2", queue=mq, limit=5)
        assert [m.queue_offset for m in last.value] == list(range(before + 40, before + 45))

        # "Aa" and "BB" share Java's hashCode: the broker's tag filter lets both through
        by_tag = browse_filter("TopicTest2", tag="Aa")
        assert by_tag is not None
        assert {m.tags for m in read.value if broker_passes(by_tag, m)} == {"Aa", "BB"}
        by_sql = browse_filter("TopicTest2", sql="KEYS = 'k-Ab' OR TAGS = 'BB'")
        assert by_sql is not None
        assert sorted({m.tags for m in read.value if broker_passes(by_sql, m)}) == ["Ab", "BB"]


@pytest.mark.parametrize(("args", "words"), [
    (["--tag", "a", "--sql", "TAGS = 'a'"], "not both"),
    (["--sql", "TAGS = = 1"], "SQL92 expression"),
    (["--from", "0", "--since", "5m"], "not both"),
    (["-q", "broker-a/9"], "no readable queue broker-a/9"),
])
def test_msg_browse_mistakes_are_one_line_and_exit_2(args: list[str], words: str) -> None:
    result = runner.invoke(app, ["--emulator", "tag-overwrite", "msg", "browse", "TopicTest2", *args])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("rmqctl: error: ") and words in result.stderr


def test_msg_browse_since_reads_from_the_time_on_the_sources_clock() -> None:
    base = ["--emulator", "tag-overwrite", "-o", "json", "msg", "browse", "TopicTest2", "-q", "broker-a/0"]
    # the scenario ends at 60 s and wrote at 5 s (tag1) and 6 s (tag2)
    recent = json.loads(runner.invoke(app, [*base, "--since", "54.5s"]).stdout)
    assert {m["tags"] for m in recent["messages"]} == {"tag2"} and recent["read"] == len(recent["messages"])
    none = json.loads(runner.invoke(app, [*base, "--since", "30s"]).stdout)
    assert none["messages"] == [] and none["read"] == 0
    tagged = json.loads(runner.invoke(app, [*base, "--tag", "tag1"]).stdout)
    assert {m["tags"] for m in tagged["messages"]} == {"tag1"} and tagged["read"] == 5
    assert tagged["filter"] == {"expression": "tag1", "expression_type": "TAG"}
