"""The emulator read through rmqctl's normal client path (AdminClient / the cluster service / CLI)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from rmqctl import errors
from rmqctl.cli.app import app as rmqctl_app
from rmqctl.connect import Target, open_source
from rmqctl.emulator.embedded import embedded_cluster
from rmqctl.model import MessageQueue
from rmqctl.remoting import frame
from rmqctl.remoting.admin import AdminClient
from rmqctl.remoting.codes import RequestCode


async def test_cluster_route_and_topic_status() -> None:
    async with open_source(Target(emulator="tag-overwrite")) as opened:
        source = opened.source
        info = await source.cluster()
        assert list(info.brokers) == ["broker-a"]
        assert info.clusters == {"DefaultCluster": ("broker-a",)}
        addr = info.brokers["broker-a"].addrs[0]
        assert addr.startswith("127.0.0.1:")
        route = await source.topic_route("TopicTest2")
        assert route.read_queues() == [MessageQueue("TopicTest2", "broker-a", q) for q in range(4)]
        assert route.queue_datas[0].perm == 6
        status = await source.topic_status("TopicTest2")
        # 20 messages round robin over 4 queues
        assert [(o.queue.queue_id, o.min_offset, o.max_offset) for o in status.value.offsets] == [
            (0, 0, 5), (1, 0, 5), (2, 0, 5), (3, 0, 5)]
        assert all(o.last_update_timestamp == 1_704_067_206_000 for o in status.value.offsets)
        assert "%RETRY%test-consumer" in await source.topics()
        with pytest.raises(errors.NotFound):
            await source.topic_route("NoSuchTopic")


async def test_group_view_joins_connections_stored_subscriptions_progress_and_running_info() -> None:
    async with open_source(Target(emulator="tag-overwrite")) as opened:
        source = opened.source
        assert (await source.groups()).value == ["test-consumer"]
        view = await source.group_view("test-consumer")
        assert view.errors == {}
        assert view.client_ids == ("10.0.0.1@consumer1", "10.0.0.2@consumer2")
        assert {c.language for c in view.connections} == {"JAVA"}
        assert view.consume_type == "CONSUME_PASSIVELY" and view.message_model == "CLUSTERING"
        stored = view.broker_subscriptions["broker-a"]
        assert stored["TopicTest2"].expression == "tag2" and stored["TopicTest2"].codes == (3552216,)
        assert "%RETRY%test-consumer" in stored
        # each client's own subscription comes from its running info, relayed through the broker
        own = view.client_subscriptions
        assert [s.expression for s in own["10.0.0.1@consumer1"]] == ["tag1"]
        assert [s.expression for s in own["10.0.0.2@consumer2"]] == ["tag2"]
        info = view.running_infos["10.0.0.1@consumer1"]
        assert info.consume_type == "CONSUME_PASSIVELY" and info.strategy == "AVG"
        assert info.properties["allocateMessageQueueStrategy"].startswith(
            "org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely@")
        assert info.properties["PROP_CLIENT_VERSION"] == "V5_3_3"
        assert info.start_timestamp == 1_704_067_200_000
        assert "%RETRY%test-consumer" in {s.topic for s in info.subscriptions}
        assert view.assignments() == {
            "10.0.0.1@consumer1": [MessageQueue("%RETRY%test-consumer", "broker-a", 0),
                                   MessageQueue("TopicTest2", "broker-a", 0),
                                   MessageQueue("TopicTest2", "broker-a", 1)],
            "10.0.0.2@consumer2": [MessageQueue("TopicTest2", "broker-a", 2),
                                   MessageQueue("TopicTest2", "broker-a", 3)],
        }
        progress = {(p.queue.topic, p.queue.queue_id): p for p in view.progress}
        for q in range(4):
            row = progress[("TopicTest2", q)]
            # filtered messages count as consumed: no lag anywhere
            assert (row.broker_offset, row.consumer_offset, row.diff) == (5, 5, 0)
            assert row.last_timestamp == 1_704_067_206_000
        pq = info.mq_table[MessageQueue("TopicTest2", "broker-a", 0)]
        assert pq.commit_offset == 5 and not pq.dropped and pq.last_pull_timestamp > 0
        summaries = (await source.group_summaries()).value
        assert [(s.group, s.clients, s.total_diff) for s in summaries] == [("test-consumer", 2, 0)]


async def test_admin_calls_mqadmin_needs() -> None:
    async with embedded_cluster("topic-overwrite", at=45) as (_, server):
        admin = AdminClient([server.namesrv_addr])
        try:
            # consumerConnection / consumerProgress start from the %RETRY% route
            retry_route = await admin.topic_route("%RETRY%g1")
            masters = retry_route.master_addrs()
            assert sorted(masters) == ["broker-a"]
            broker = masters["broker-a"]
            assert await admin.consumer_ids(broker, "g1") == ["10.0.0.2@c2", "10.0.0.1@c1"]
            assert await admin.consumer_ids(broker, "nobody") == []
            configs = await admin.subscription_groups(broker)
            assert {"g1", "TOOLS_CONSUMER", "CID_SYS_RMQ_TRANS"} <= set(configs)
            runtime = await admin.broker_runtime_info(broker)
            assert runtime["brokerVersionDesc"] == "V5_3_3"
            assert runtime["bootTimestamp"] == "1704067200000"
            # 208 with a topic (mqadmin consumerProgress -t): only that topic's queues, and only
            # while it is in the group's (flipping) table: at 45 s c1's topicA is stored.
            stats = await admin.consume_stats(broker, "g1", "topicA")
            assert {mq.topic for mq in stats.offsets} == {"topicA"}
            assert [e.broker_offset - e.consumer_offset for _, e in sorted(stats.offsets.items())] == [0, 0, 2, 2]
            gone = await admin.consume_stats(broker, "g1", "topicB")
            assert dict(gone.offsets) == {}
            with pytest.raises(errors.ConsumerNotOnline):
                await admin.consumer_connection(broker, "nobody")
            empty = await admin.consume_stats(broker, "nobody")
            assert dict(empty.offsets) == {}
            assert await admin.topic_consumers(broker, "topicA") == ["g1"]
            # 307 for a client the broker does not know answers SYSTEM_ERROR "not online"
            with pytest.raises(errors.RemoteError, match="not online"):
                await admin.consumer_running_info(broker, "g1", "10.9.9.9@ghost")
        finally:
            await admin.close()


def body_of(response: frame.RemotingCommand) -> str:
    return response.body.decode("utf-8")


async def test_bodies_use_the_fastjson_dialect_of_a_real_broker() -> None:
    async with embedded_cluster("tag-overwrite") as (cluster, server):
        admin = AdminClient([server.namesrv_addr])
        broker = cluster.brokers["broker-a"].addr
        try:
            info = body_of(await admin.call(server.namesrv_addr, RequestCode.GET_BROKER_CLUSTER_INFO))
            assert f'"brokerAddrs":{{0:"{broker}"}}' in info  # Long keys unquoted
            assert info.index('"brokerAddrTable"') < info.index('"clusterAddrTable"')
            # an old client (version < V4_9_4) without acceptStandardJsonOnly gets fastjson too
            old = await admin._pool.request(
                server.namesrv_addr,
                frame.RemotingCommand(code=RequestCode.GET_ROUTEINFO_BY_TOPIC, version=317,
                                      ext_fields={"topic": "TopicTest2"}), 5.0)
            assert f'{{0:"{broker}"}}' in body_of(old)
            route = body_of(await admin.call(server.namesrv_addr, RequestCode.GET_ROUTEINFO_BY_TOPIC,
                                             {"topic": "TopicTest2", "acceptStandardJsonOnly": True}))
            assert f'{{"0":"{broker}"}}' in route
            json.loads(route)  # standard JSON
            stats = body_of(await admin.call(broker, RequestCode.GET_CONSUME_STATS,
                                             {"consumerGroup": "test-consumer"}))
            assert stats.startswith('{"consumeTps":')
            assert ('{"brokerName":"broker-a","queueId":0,"topic":"TopicTest2"}:'
                    '{"brokerOffset":5,"consumerOffset":5,"lastTimestamp":1704067206000,"pullOffset":5}') in stats
            conn = body_of(await admin.call(broker, RequestCode.GET_CONSUMER_CONNECTION_LIST,
                                            {"consumerGroup": "test-consumer"}))
            assert '"subString":"tag2"' in conn and '"codeSet":[3552216]' in conn
            assert conn.index('"connectionSet"') < conn.index('"consumeFromWhere"') < conn.index('"subscriptionTable"')
            running = body_of(await admin.call(broker, RequestCode.GET_CONSUMER_RUNNING_INFO,
                                               {"consumerGroup": "test-consumer",
                                                "clientId": "10.0.0.2@consumer2", "jstackEnable": False}))
            assert running.startswith('{"mqPopTable":{},"mqTable":{{"brokerName":"broker-a","queueId":2,')
            assert '"droped":false' in running and '"PROP_CONSUME_TYPE":"CONSUME_PASSIVELY"' in running
            assert '"statusTable":{"%RETRY%test-consumer":{"consumeFailedMsgs":0' in running
        finally:
            await admin.close()


async def test_a_consumer_started_in_the_world_shows_up_over_the_wire() -> None:
    async with embedded_cluster("idle-consumers") as (cluster, server):
        from rmqctl.emulator.scenario import ConsumerSpec

        cluster.start_consumer(ConsumerSpec("late-group", (("TopicTest", "TagA"),),
                                            client_id="10.0.0.7@late"))
        cluster.advance(1)
        admin = AdminClient([server.namesrv_addr])
        try:
            conn = await admin.consumer_connection(cluster.brokers["broker-a"].addr, "late-group")
            assert [c.client_id for c in conn.connections] == ["10.0.0.7@late"]
            assert conn.subscriptions["TopicTest"].expression == "TagA"
        finally:
            await admin.close()


runner = CliRunner()


def test_cli_group_show_and_progress_json_contract() -> None:
    result = runner.invoke(rmqctl_app, ["--emulator", "tag-overwrite", "group", "show",
                                        "test-consumer", "-o", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["group"] == "test-consumer" and doc["online"] is True
    assert [c["client_id"] for c in doc["connections"]] == ["10.0.0.1@consumer1", "10.0.0.2@consumer2"]
    stored = {s["topic"]: s for s in doc["broker_subscriptions"]["broker-a"]}
    assert stored["TopicTest2"]["expression"] == "tag2"
    assert doc["client_subscriptions"]["10.0.0.1@consumer1"][0]["expression"] == "tag1"
    assert "TopicTest2" in json.dumps(doc["subscription_conflicts"])

    result = runner.invoke(rmqctl_app, ["--emulator", "tag-overwrite", "group", "progress",
                                        "test-consumer", "-o", "json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["queues"]
    assert [(r["topic"], r["queue_id"], r["broker_offset"], r["consumer_offset"], r["diff"], r["owner"])
            for r in rows] == [
        ("%RETRY%test-consumer", 0, 0, 0, 0, "10.0.0.1@consumer1"),
        ("TopicTest2", 0, 5, 5, 0, "10.0.0.1@consumer1"),
        ("TopicTest2", 1, 5, 5, 0, "10.0.0.1@consumer1"),
        ("TopicTest2", 2, 5, 5, 0, "10.0.0.2@consumer2"),
        ("TopicTest2", 3, 5, 5, 0, "10.0.0.2@consumer2"),
    ]


def test_cli_with_at_sees_the_scenario_before_the_messages() -> None:
    result = runner.invoke(rmqctl_app, ["--emulator", "tag-overwrite", "--at", "3", "topic", "status",
                                        "TopicTest2", "-o", "json"])
    assert result.exit_code == 0, result.output
    assert [(r["queue_id"], r["max_offset"]) for r in json.loads(result.stdout)["queues"]] == [
        (0, 0), (1, 0), (2, 0), (3, 0)]  # nothing produced yet at 3 s


def test_cli_unknown_scenario_lists_the_built_ins() -> None:
    result = runner.invoke(rmqctl_app, ["--emulator", "no-such-scenario", "group", "list"])
    assert result.exit_code == 2
    assert "tag-overwrite" in result.stderr and "avg-contiguous-blocks" in result.stderr


def test_topic_list_hides_cluster_and_broker_names_and_labels_every_kind() -> None:
    runner = CliRunner()
    shown = runner.invoke(rmqctl_app, ["--emulator", "tag-overwrite", "topic", "list", "-o", "json"])
    assert shown.exit_code == 0, shown.stderr
    assert json.loads(shown.stdout) == {
        "topics": [{"topic": "TopicTest2", "type": "normal", "type_source": "broker"}], "errors": {}}
    every = runner.invoke(rmqctl_app, ["--emulator", "tag-overwrite", "topic", "list", "--system", "-o", "json"])
    kinds = {row["topic"]: row["type"] for row in json.loads(every.stdout)["topics"]}
    alias = runner.invoke(rmqctl_app, ["--emulator", "tag-overwrite", "topic", "list", "-a", "-o", "json"])
    assert alias.stdout == every.stdout  # the old spelling still works
    assert kinds["DefaultCluster"] == "cluster" and kinds["broker-a"] == "broker"
    assert kinds["%RETRY%test-consumer"] == "retry" and kinds["TBW102"] == "system"
    assert kinds["rmq_sys_wheel_timer"] == "system" and kinds["TopicTest2"] == "normal"
