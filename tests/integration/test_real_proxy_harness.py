"""The proxy harness itself: a real rocketmq-proxy (cluster mode) beside the session broker and real
rocketmq-client-java consumers behind it; each consumer behaves as told (ACK all, fail a tag, leave a
tag un-ACKed), and the proxy's remoting port, not the broker, lists the gRPC clients."""

from __future__ import annotations

import json
from collections.abc import Callable

from tests.harness.proxycluster import GrpcClientsProcess, RealProxy, create_normal_topic
from tests.harness.realcluster import RealCluster, raw_request


def counts_of(clients: GrpcClientsProcess, name: str) -> dict[str, int]:
    return {k: int(v) for k, v in clients.counts()[name].items() if isinstance(v, int)}


def test_grpc_consumers_behave_as_told_and_only_the_proxy_lists_them(
    real_cluster: RealCluster, real_proxy: RealProxy, grpc_clients: GrpcClientsProcess,
    rmq_names: Callable[[str], str],
) -> None:
    topic = rmq_names("GrpcTopic")
    create_normal_topic(real_cluster, topic, 2)
    push_group, fail_group, simple_group = rmq_names("GPush"), rmq_names("GFail"), rmq_names("GSimple")
    push = grpc_clients.start_push("push", push_group, {topic: "*"})
    grpc_clients.start_push("failing", fail_group, {topic: "*"}, fail_tag="bad")
    simple = grpc_clients.start_simple("simple", simple_group, {topic: "*"}, skip_ack_tag="bad", invisible_s=10)
    base = grpc_clients.warm_up(topic)
    grpc_clients.send(topic, "ok", 6)
    grpc_clients.send(topic, "bad", 2)

    # A push consumer may get warm-up messages after the counts above were taken (seen: 2 of 3, long
    # after the others), so the gains are at least the test's own 8; only "bad" messages are ever
    # failed or left un-ACKed, so those counts are the consumers' behaviour alone.
    def settled() -> dict[str, dict[str, int]] | None:
        counts = {cid: {k: int(v) for k, v in c.items() if isinstance(v, int)}
                  for cid, c in grpc_clients.counts().items()}
        gained = {cid: {k: v - base[cid].get(k, 0) for k, v in c.items()} for cid, c in counts.items()}
        done = (gained["push"]["acked"] >= 8 and gained["failing"]["acked"] >= 6
                and gained["failing"]["failed"] >= 2 and gained["simple"]["acked"] >= 6
                and gained["simple"]["unacked"] >= 2 and counts["simple"]["max_attempt"] >= 2)
        return gained if done else None

    gained = grpc_clients.wait_until(settled, timeout=120, interval=1.0,
                                     message=lambda: f"consumers settled: {grpc_clients.counts()} (base {base})")
    assert gained["simple"]["distinct"] >= 8 and gained["failing"]["distinct"] >= 8
    assert counts_of(grpc_clients, "push")["failed"] == 0 and counts_of(grpc_clients, "push")["unacked"] == 0

    on_proxy = raw_request(real_proxy.remoting_addr, 203, {"consumerGroup": push_group}, timeout=5)
    assert on_proxy.code == 0, on_proxy.remark
    listed = json.loads(on_proxy.text)
    assert [c["clientId"] for c in listed["connectionSet"]] == [push]
    assert listed["consumeType"] == "CONSUME_PASSIVELY"
    simple_listed = json.loads(raw_request(real_proxy.remoting_addr, 203, {"consumerGroup": simple_group}).text)
    assert [c["clientId"] for c in simple_listed["connectionSet"]] == [simple]
    assert simple_listed["consumeType"] == "CONSUME_ACTIVELY"
    assert raw_request(real_cluster.broker_addr, 203, {"consumerGroup": push_group}).code == 206  # not online
