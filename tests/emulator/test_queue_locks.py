"""The emulated broker's answers to what a real orderly or SQL92 consumer sends before it consumes.

LOCK_BATCH_MQ / UNLOCK_BATCH_MQ (``RebalanceLockManager``: one live lock per group and queue,
60 s without renewal frees it, only the holder unlocks) and CHECK_CLIENT_CONFIG
(``ClientManageProcessor.checkClientConfig``: TAG passes, SQL92 needs ``enablePropertyFilter`` and
an expression that compiles). Bodies are the bytes the Java client writes.
"""

from __future__ import annotations

import pytest

from rmqctl import errors
from rmqctl.emulator.broker_handlers import BrokerService
from rmqctl.emulator.scenario import parse_scenario
from rmqctl.emulator.world import EmulatedCluster
from rmqctl.model import MessageQueue, parse_tag_expression, sql92_subscription
from rmqctl.remoting import bodies
from rmqctl.remoting.codes import RequestCode, ResponseCode
from rmqctl.remoting.frame import RemotingCommand
from tests.emulator.test_broker_rules import FakeChannel

SCENARIO = """
name = "locks"
[[brokers]]
name = "broker-a"
{extra}
[[topics]]
name = "T"
queues = 4
"""

Q0, Q1, Q2 = (MessageQueue("T", "broker-a", q) for q in range(3))
#: what a 5.x Java client sends for LOCK_BATCH_MQ (fastjson: properties sorted, queues as objects)
JAVA_LOCK_BODY = (b'{"clientId":"127.0.0.1@ord","consumerGroup":"G","mqSet":['
                  b'{"brokerName":"broker-a","queueId":1,"topic":"T"},'
                  b'{"brokerName":"broker-a","queueId":0,"topic":"T"}],"onlyThisBroker":false}')


def service(extra: str = "") -> tuple[EmulatedCluster, BrokerService]:
    cluster = EmulatedCluster(parse_scenario(SCENARIO.format(extra=extra)))
    return cluster, BrokerService(cluster, cluster.brokers["broker-a"])


def call(svc: BrokerService, code: int, body: bytes) -> RemotingCommand:
    answer = svc.handlers()[code](RemotingCommand(code=code, opaque=7, body=body), FakeChannel())
    assert isinstance(answer, RemotingCommand)
    assert answer.opaque == 7
    return answer


def lock(svc: BrokerService, client: str, *queues: MessageQueue,
         code: int = RequestCode.LOCK_BATCH_MQ) -> set[MessageQueue]:
    body = bodies.encode_lock_batch_request(bodies.LockBatchRequest("G", client, frozenset(queues)))
    answer = call(svc, code, body)
    assert answer.code == ResponseCode.SUCCESS
    return set(bodies.lock_batch_response(answer.body)) if code == RequestCode.LOCK_BATCH_MQ else set()


def test_the_java_clients_lock_body_locks_its_queues() -> None:
    cluster, svc = service()
    answer = call(svc, RequestCode.LOCK_BATCH_MQ, JAVA_LOCK_BODY)
    assert answer.code == ResponseCode.SUCCESS
    assert answer.body == (b'{"lockOKMQSet":[{"brokerName":"broker-a","queueId":0,"topic":"T"},'
                           b'{"brokerName":"broker-a","queueId":1,"topic":"T"}]}')
    locks = cluster.brokers["broker-a"].locks
    assert (locks.holder("G", Q0), locks.holder("G", Q1), locks.holder("G", Q2)) == (
        "127.0.0.1@ord", "127.0.0.1@ord", None)
    assert locks.holder("other-group", Q0) is None


def test_a_queue_locked_by_a_live_client_is_left_out_until_its_lock_expires() -> None:
    cluster, svc = service()
    scheduler = cluster.scheduler
    assert lock(svc, "A", Q0, Q1) == {Q0, Q1}
    assert lock(svc, "B", Q0, Q1, Q2) == {Q2}  # A's locks are live: B gets only the free queue
    scheduler.run_until(scheduler.now_ms + 40_000)
    assert lock(svc, "A", Q0) == {Q0}  # A renews Q0, not Q1
    scheduler.run_until(scheduler.now_ms + 20_001)
    # Q1 was last renewed 60.001 s ago: free for B; Q0 20.001 s ago: still A's
    assert lock(svc, "B", Q0, Q1) == {Q1}
    locks = cluster.brokers["broker-a"].locks
    assert (locks.holder("G", Q0), locks.holder("G", Q1)) == ("A", "B")


def test_exactly_sixty_seconds_without_renewal_still_holds() -> None:
    cluster, svc = service()
    lock(svc, "A", Q0)
    cluster.scheduler.run_until(cluster.scheduler.now_ms + 60_000)
    assert lock(svc, "B", Q0) == set()


def test_only_the_holder_unlocks() -> None:
    cluster, svc = service()
    lock(svc, "A", Q0, Q1)
    lock(svc, "B", Q0, code=RequestCode.UNLOCK_BATCH_MQ)  # not B's: nothing changes
    assert lock(svc, "B", Q0) == set()
    lock(svc, "A", Q0, code=RequestCode.UNLOCK_BATCH_MQ)
    assert lock(svc, "B", Q0, Q1) == {Q0}
    locks = cluster.brokers["broker-a"].locks
    assert (locks.holder("G", Q0), locks.holder("G", Q1)) == ("B", "A")


def check(svc: BrokerService, sub: object) -> RemotingCommand:
    request = bodies.CheckClientRequest("127.0.0.1@sql", "G", sub)  # type: ignore[arg-type]
    return call(svc, RequestCode.CHECK_CLIENT_CONFIG, bodies.encode_check_client_request(request))


def test_check_client_config_accepts_tags_and_sql92_that_compiles() -> None:
    _, svc = service()
    assert check(svc, parse_tag_expression("T", "tagX || tagY", 1)).code == ResponseCode.SUCCESS
    assert check(svc, sql92_subscription("T", "p_a > 5 AND p_b IS NOT NULL", 1)).code == ResponseCode.SUCCESS
    assert check(svc, None).code == ResponseCode.SUCCESS


def test_check_client_config_refuses_sql92_the_broker_cannot_parse() -> None:
    _, svc = service()
    answer = check(svc, sql92_subscription("T", "p_a >", 1))
    assert answer.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
    assert answer.remark


def test_without_property_filter_sql92_is_refused_and_tags_still_pass() -> None:
    _, svc = service("property_filter = false")
    answer = check(svc, sql92_subscription("T", "p_a > 5", 1))
    assert (answer.code, answer.remark) == (
        ResponseCode.SYSTEM_ERROR, "The broker does not support consumer to filter message by SQL92")
    assert check(svc, parse_tag_expression("T", "*", 1)).code == ResponseCode.SUCCESS
    config = bodies.broker_config(call(svc, RequestCode.GET_BROKER_CONFIG, b"").body)
    assert config["enablePropertyFilter"] == "false"


@pytest.mark.parametrize("body", [
    b'{"clientId":"c","group":"G","subscriptionData":{"classFilterMode":false,"codeSet":[],'
    b'"expressionType":"SQL92","subString":"p_a > 5","subVersion":1764121000000,"tagsSet":[],"topic":"T"}}',
])
def test_check_client_request_decodes_what_the_java_client_sends(body: bytes) -> None:
    request = bodies.check_client_request(body)
    assert request == bodies.CheckClientRequest("c", "G", sql92_subscription("T", "p_a > 5", 1764121000000))
    assert bodies.check_client_request(bodies.encode_check_client_request(request)) == request


def test_lock_bodies_round_trip() -> None:
    request = bodies.lock_batch_request(JAVA_LOCK_BODY)
    assert request == bodies.LockBatchRequest("G", "127.0.0.1@ord", frozenset({Q0, Q1}), False)
    assert bodies.lock_batch_request(bodies.encode_lock_batch_request(request)) == request
    assert bodies.lock_batch_response(bodies.encode_lock_batch_response({Q2, Q0})) == {Q0, Q2}
    assert bodies.lock_batch_response(b'{"lockOKMQSet":[]}') == frozenset()


def test_a_scenario_cannot_put_a_sql92_consumer_on_a_broker_without_property_filter() -> None:
    text = SCENARIO.format(extra="property_filter = false") + (
        '[[consumers]]\ngroup = "G"\nsql_subscriptions = { T = "p_a > 5" }\n')
    with pytest.raises(errors.ConfigError) as caught:
        parse_scenario(text, "locks.toml")
    assert str(caught.value) == ("locks.toml, line 11: consumers[0].sql_subscriptions.T: broker 'broker-a' has "
                                 "property_filter = false: it refuses SQL92 subscriptions, so this consumer "
                                 "could not start")
    # the same consumer by tag is fine
    parse_scenario(text.replace('sql_subscriptions = { T = "p_a > 5" }', 'subscriptions = { T = "*" }'))
