"""Real Java clients (RocketMQ 5.x client from tests/harness) against a served emulator.

A real ``DefaultMQProducer`` sends (SEND_MESSAGE_V2) and a real ``DefaultMQPushConsumer``
heartbeats, rebalances, long-polls (PULL_MESSAGE, commit-log message layout) and answers the
broker's GET_CONSUMER_RUNNING_INFO relay, next to the emulator's simulated clients. Skipped with
the reason when Java or the built harness is missing (``RMQCTL_REQUIRE_REAL_CLUSTER=1`` makes it
a failure, like the other real-client tests).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from rmqctl.emulator.serve import ServeOptions
from rmqctl.remoting.admin import AdminClient
from tests.emulator.helpers import served_in_thread
from tests.harness.plugin import real_part_missing

pytestmark = [pytest.mark.real_cluster, pytest.mark.timeout(300)]


def _harness() -> Any:
    try:
        from tests.harness import realcluster
    except ImportError as exc:  # pragma: no cover - the harness is part of the repository
        reason = f"tests.harness.realcluster cannot be imported: {exc}"
    else:
        try:
            realcluster.find_java()
            realcluster.build_harness()  # a no-op when the build is current
        except realcluster.HarnessError as exc:
            reason = str(exc)
        else:
            return realcluster
    real_part_missing(reason, part="real Java clients")


def test_real_java_producer_and_push_consumer_work_against_the_emulator() -> None:
    realcluster = _harness()
    with served_in_thread("tag-overwrite-4q", ServeOptions(clock="real", speed=1.0)) as served, \
            realcluster.ScenarioClientsProcess(namesrv_addr=served.namesrv) as clients:
        client_id = clients.start_consumer("j1", group="java-group",
                                           subscriptions={"SUBSCRIBE_TEST": "tagA || tagB"})
        sent = clients.produce("SUBSCRIBE_TEST", tag="tagB", count=6)
        assert len(sent) == 6
        # 8 scenario messages (a new group starts at offset 0) + 6 sent by the Java producer
        def all_received() -> list[dict[str, Any]] | None:
            got: list[dict[str, Any]] = clients.received()["j1"]
            return got if len(got) >= 14 else None

        received = realcluster.wait_until(all_received, timeout=60,
                                          message="the Java consumer to receive 14 messages")
        assert sorted(m["tag"] for m in received) == ["tagA"] * 4 + ["tagB"] * 10
        assert sorted({m["queue_id"] for m in received}) == [0, 1, 2, 3]

        async def check_admin_view() -> None:
            admin = AdminClient([served.namesrv])
            try:
                broker = served.brokers["broker-a"]
                conn = await admin.consumer_connection(broker, "java-group")
                assert [c.client_id for c in conn.connections] == [client_id]
                assert conn.subscriptions["SUBSCRIBE_TEST"].expression == "tagA || tagB"
                # the broker relays 307 over the Java client's socket; the Java client answers
                info = await admin.consumer_running_info(broker, "java-group", client_id)
                assert info.consume_type == "CONSUME_PASSIVELY"
                assert sorted(mq.queue_id for mq in info.mq_table if mq.topic == "SUBSCRIBE_TEST") == [0, 1, 2, 3]
            finally:
                await admin.close()

        asyncio.run(check_admin_view())
