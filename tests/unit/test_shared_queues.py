"""One queue, one object: the decoders and the routes name a queue with the object
:func:`~rmqctl.model.queue_of` keeps, so a lookup of one answer's queue in another's table is
decided by identity; equality and order stay the value's."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from dataclasses import replace as dataclasses_replace

from rmqctl.model import (
    ConsumeStats,
    MessageQueue,
    OffsetEntry,
    ProcessQueueInfo,
    QueueData,
    TopicRoute,
    cluster,
    queue_of,
    sort_queues,
)
from rmqctl.model.consumer import ConsumerRunningInfo, Subscription
from rmqctl.remoting import bodies


def test_the_same_fields_give_the_same_object_equal_to_a_queue_made_directly() -> None:
    made = queue_of("T", "broker-a", 3)
    assert queue_of("T", "broker-a", 3) is made
    assert made == MessageQueue("T", "broker-a", 3) and hash(made) == hash(MessageQueue("T", "broker-a", 3))
    assert queue_of("T", "broker-a", 4) is not made and queue_of("T", "broker-b", 3) != made


def test_a_full_table_is_emptied_and_a_queue_made_again_is_equal_to_the_old_one() -> None:
    old = queue_of("Full", "broker-a", 0)
    setattr(cluster, "_SHARED_QUEUES_CAP", len(cluster._shared_queues))  # noqa: B010 - full now
    try:
        again = queue_of("Full", "broker-a", 1)
        assert len(cluster._shared_queues) == 1
        assert queue_of("Full", "broker-a", 0) == old
    finally:
        setattr(cluster, "_SHARED_QUEUES_CAP", 1 << 17)  # noqa: B010
    assert again == MessageQueue("Full", "broker-a", 1)


def test_offsets_what_a_client_holds_and_the_route_name_a_queue_with_one_object() -> None:
    queues = [MessageQueue("Orders", "broker-a", n) for n in range(4)]
    stats = ConsumeStats({mq: OffsetEntry(10, 5, 7, 1_700_000_000_000) for mq in queues}, 1.5)
    read_stats = bodies.consume_stats(bodies.encode_consume_stats(stats))
    held = {mq: ProcessQueueInfo(5, 2, 5, 7, 1, False, False, 0, 0, 1_700_000_000_000, 1_700_000_000_000)
            for mq in queues[:2]}
    info = ConsumerRunningInfo("10.0.0.1@1", {"consumeType": "CONSUME_PASSIVELY"}, (), held, {})
    read_info = bodies.consumer_running_info("10.0.0.1@1", bodies.encode_consumer_running_info(info))
    route = TopicRoute("Orders", (QueueData("broker-a", 4, 4, 6),), ())
    assert read_stats == stats and read_info.mq_table == held
    from_stats = sorted(read_stats.offsets)
    from_info = sorted(read_info.mq_table)
    from_route = route.read_queues()
    assert from_route == queues
    assert all(a is b for a, b in zip(from_stats, from_route, strict=True))
    assert all(a is b for a, b in zip(from_info, from_route, strict=False))


def test_a_queue_keeps_its_fields_hash_and_a_queue_unpickled_elsewhere_takes_its_own() -> None:
    # a string's hash depends on the process's hash seed: a queue pickled under one seed and
    # unpickled under another must hash as a queue made there, or a dict of them loses its keys
    queue = MessageQueue("T", "broker-a", 3)
    assert hash(queue) == hash(("T", "broker-a", 3))
    assert hash(dataclasses_replace(queue, queue_id=4)) == hash(("T", "broker-a", 4))
    dump = ("import pickle, sys; from rmqctl.model import MessageQueue; "
            "sys.stdout.buffer.write(pickle.dumps({MessageQueue('T', 'broker-a', 3): 'found'}))")
    load = ("import pickle, sys; from rmqctl.model import MessageQueue; "
            "table = pickle.loads(sys.stdin.buffer.read()); print(table.get(MessageQueue('T', 'broker-a', 3)))")
    pickled = subprocess.run([sys.executable, "-c", dump], capture_output=True, check=True,
                             env={**os.environ, "PYTHONHASHSEED": "1"}).stdout
    loaded = subprocess.run([sys.executable, "-c", load], input=pickled, capture_output=True, check=True,
                            env={**os.environ, "PYTHONHASHSEED": "2"})
    assert loaded.stdout.strip() == b"found"


def test_queues_order_by_utf16_code_units_as_java_does() -> None:
    # U+10000 is the surrogate pair D800 DC00 in UTF-16, below U+FFFF there (above it by code point)
    high, low = "\U00010000", "\uffff"
    for a, b in [(MessageQueue(high, "b", 1), MessageQueue(low, "a", 0)),
                 (MessageQueue("t", high, 1), MessageQueue("t", low, 0)),
                 (MessageQueue("t", "b", 0), MessageQueue("t", "b", 1))]:
        assert a < b and not b < a and b > a
        assert sorted([b, a]) == [a, b] == sort_queues([b, a])


def test_a_routes_read_queues_are_taken_once_and_each_list_is_the_callers() -> None:
    route = TopicRoute("Orders", (QueueData("broker-b", 2, 2, 6), QueueData("broker-a", 3, 3, 4),
                                  QueueData("broker-c", 2, 2, 2)), ())  # broker-c: write only
    first = route.read_queues()
    assert [(mq.broker_name, mq.queue_id) for mq in first] == [
        ("broker-a", 0), ("broker-a", 1), ("broker-a", 2), ("broker-b", 0), ("broker-b", 1)]
    first.clear()
    again = route.read_queues()
    assert len(again) == 5 and all(a is b for a, b in zip(again, route.read_queues(), strict=True))
    assert route == TopicRoute("Orders", route.queue_datas, ())  # what was taken is not the route's value
    fewer = dataclasses_replace(route, queue_datas=route.queue_datas[:1])
    assert [mq.queue_id for mq in fewer.read_queues()] == [0, 1]
    assert pickle.loads(pickle.dumps(route)).read_queues() == again


def test_a_clients_subscriptions_read_twice_are_one_object_each_and_compare_by_identity() -> None:
    subs = (Subscription("%RETRY%g", "*", sub_version=1), Subscription("Orders", "TagA || TagB",
                                                                       tags=("TagA", "TagB"), sub_version=2))
    body = bodies.encode_consumer_running_info(ConsumerRunningInfo("10.0.0.1@1", {}, subs, {}, {}))
    first = bodies.consumer_running_info("10.0.0.1@1", body)
    again = bodies.consumer_running_info("10.0.0.1@1", bytes(body))
    assert first.subscriptions == subs
    assert all(a is b for a, b in zip(first.subscriptions, again.subscriptions, strict=True))
    other = bodies.consumer_running_info("10.0.0.1@1", body.replace(b"TagB", b"TagC"))
    assert other.subscriptions[1].tags == ("TagA", "TagC") and other.subscriptions[1] != subs[1]
