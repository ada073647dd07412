"""Simulated orderly consumers take, renew and release the broker's queue locks like the Java client.

Two orderly clients, one group, one topic of two queues (``AVG``: A gets queue 0, B queue 1). What
the 5.3 client does (``RebalanceImpl``, ``RebalancePushImpl``, ``ConsumeMessageOrderlyService``):
it locks a queue on its broker before it pulls it (a refused queue is left for a rebalance 500 ms
later), renews its locks every 20 s, unlocks a queue it gives up and everything at shutdown; a
killed client unlocks nothing, so its queues wait for the broker's 60 s lock expiry.
"""

from __future__ import annotations

from rmqctl.emulator.scenario import parse_scenario
from rmqctl.emulator.world import EmulatedCluster
from rmqctl.model import MessageQueue
from tests.emulator.test_seeds import by_id, held

A, B = "10.0.0.1@a", "10.0.0.2@b"
Q0, Q1 = MessageQueue("T", "broker-a", 0), MessageQueue("T", "broker-a", 1)
SCENARIO = f"""
name = "orderly-locks"
duration = 600

[[topics]]
name = "T"
queues = 2

[[consumers]]
group = "G"
client_id = "{A}"
subscriptions = {{ T = "*" }}
orderly = true
{{stop_a}}

[[consumers]]
group = "G"
client_id = "{B}"
subscriptions = {{ T = "*" }}
orderly = true
"""


def cluster(stop_a: str = "") -> EmulatedCluster:
    return EmulatedCluster(parse_scenario(SCENARIO.replace("{stop_a}", stop_a)))


def holders(c: EmulatedCluster) -> tuple[str | None, str | None]:
    locks = c.brokers["broker-a"].locks
    return locks.holder("G", Q0), locks.holder("G", Q1)


def locked(c: EmulatedCluster, client: str) -> list[int]:
    consumer = by_id(c)[client]
    return sorted(mq.queue_id for mq, pq in consumer.pq_table.items() if mq.topic == "T" and pq.locked)


def test_each_client_locks_what_it_holds_and_renews_it_past_the_expiry() -> None:
    c = cluster()
    c.run_until(10)
    assert holders(c) == (A, B)
    assert (locked(c, A), locked(c, B)) == ([0], [1])
    # a lock lives 60 s after its last renewal: only the 20 s renewals keep it past that
    c.run_until(300)
    assert holders(c) == (A, B)
    assert (locked(c, A), locked(c, B)) == ([0], [1])


def test_a_client_that_shuts_down_unlocks_and_the_other_takes_over_at_once() -> None:
    c = cluster("stop = 30.0")
    c.run_until(31)
    assert holders(c) == (B, B)
    assert held(by_id(c)[B], "T") == [0, 1] and locked(c, B) == [0, 1]


def test_a_killed_clients_queue_waits_for_its_lock_to_expire() -> None:
    c = cluster()
    c.run_until(30)
    c.stop_consumer(A, kill=True)
    # A renewed its lock at 21 s (1 s after start, then every 20 s): it expires after 81 s
    c.run_until(35)
    assert held(by_id(c)[B], "T") == [1]  # queue 0 is allocated to B, but B cannot lock it
    c.produce("T", 3, queue=0)
    c.run_until(80.5)
    assert held(by_id(c)[B], "T") == [1] and holders(c) == (A, B)
    assert by_id(c)[B].received_total == 0
    c.run_until(83)
    assert holders(c) == (B, B) and locked(c, B) == [0, 1]
    c.run_until(90)
    assert by_id(c)[B].received_total == 3


def test_a_queue_whose_lock_is_lost_is_not_consumed_until_it_is_locked_again() -> None:
    c = cluster()
    c.run_until(10)
    locks = c.brokers["broker-a"].locks
    # another client takes queue 0's lock once A's has expired (as after a long pause of A)
    locks.table["G"][Q0].last_update_ms -= 61_000
    assert locks.try_lock_batch("G", [Q0], "10.0.0.9@other") == {Q0}
    c.run_until(21.5)  # A's renewal at 21 s is refused
    assert locked(c, A) == []
    c.produce("T", 2, queue=0)
    c.run_until(30)
    assert by_id(c)[A].received_total == 0  # cached, not consumed without the lock
    locks.unlock_batch("G", [Q0], "10.0.0.9@other")
    c.run_until(41.5)  # renewed at 41 s: the cached messages are consumed
    assert locked(c, A) == [0] and by_id(c)[A].received_total == 2
