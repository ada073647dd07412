"""The simulated clients' configuration: the Java client's defaults they run with.

Intervals and limits of ``ClientConfig`` / ``DefaultMQPushConsumer`` (5.x defaults), shared by the
consumer's loops (:mod:`~rmqctl.emulator.client`, :mod:`~rmqctl.emulator.consume`) and by what it
reports to admins (:mod:`~rmqctl.emulator.running_info`). Must not import anything.
"""

from __future__ import annotations

#: latency of one synchronous client→broker call, as the client's own clock sees it
RPC_MS = 1
HEARTBEAT_INTERVAL_MS = 30_000
HEARTBEAT_FIRST_MS = 1_000
REBALANCE_INTERVAL_MS = 20_000
ROUTE_POLL_INTERVAL_MS = 30_000
ROUTE_POLL_FIRST_MS = 10
PERSIST_INTERVAL_MS = 5_000
PERSIST_FIRST_MS = 10_000
PULL_DELAY_ON_EXCEPTION_MS = 1_000
PULL_DELAY_FLOW_CONTROL_MS = 50
PULL_DISPATCH_DELAY_MS = 500  # 5.x ``dispatchPullRequest(list, 500)``
#: OFFSET_ILLEGAL (OFFSET_MOVED): 5.2.0+ clients fix the offset and drop the queue at once
#: (``executeTask``); older ones waited 10 s (``executeTaskLater(…, 10000)``)
OFFSET_ILLEGAL_DELAY_MS = 0
#: ``MQClientInstance.resetOffset`` (220) sleeps this long between dropping the queues and storing the reset
CLIENT_RESET_PAUSE_MS = 10_000
SUSPEND_TIMEOUT_MS = 15_000
PULL_BATCH_SIZE = 32
PULL_THRESHOLD_FOR_QUEUE = 1000
#: the producer group every client instance registers besides its own
CLIENT_INNER_PRODUCER = "CLIENT_INNER_PRODUCER"
#: ``suspendCurrentQueueTimeMillis``: an orderly listener's SUSPEND retries the queue this much later
SUSPEND_CURRENT_QUEUE_MS = 1_000
#: ``ProcessQueue.REBALANCE_LOCK_INTERVAL``: an orderly client renews its queue locks this often
#: (``lockMQPeriodically``, first 1 s after start)
LOCK_INTERVAL_MS = 20_000
LOCK_FIRST_MS = 1_000
#: ``rebalanceLater(500)``: a rebalance that could not lock every new queue runs again this soon
REBALANCE_LATER_MS = 500
#: ``UNLOCK_DELAY_TIME_MILLS``: a queue given up while its listener call still runs is unlocked
#: anyway once this long has passed since its lock was last taken or renewed
UNLOCK_DELAY_MS = 20_000
