"""The one definition of a stuck queue, shared by ``rmqctl doctor`` and the ``analyze stuck`` job.

A queue is *frozen* while its committed offset does not move, its owner stays the same and messages
wait beyond the allowed lag, whether or not new messages arrive (a backlog nobody consumes is as
stuck as a growing one); a frozen queue is *stuck* when nobody holds it or its holder does not
subscribe the topic (``ORPHANED``: a topic no client of the group subscribes any more, left behind with
its offsets and backlog, is one of these), or when someone holds it (``STALLED``). A ``%RETRY%`` queue
is frozen like any other once more than :data:`RETRY_ALLOWED_LAG` messages wait: its messages are
paced before they land there (the broker parks a message sent back in its schedule topic until its
delay level is due), so what waits in it is due now and gets no minutes of grace. A frozen run that
began after the committed offset went back (a reset) is stuck like any other; ``REWOUND`` is a queue
still moving after it went back. A verdict says what was seen and never promises what comes next: a
committed offset held while the owner keeps pulling is one unfinished message or a hung listener, and
the offsets cannot tell which, so it is stuck like any other. ``docs/snapshots.md`` (the job's rules)
and ``docs/findings.md`` (the doctor's ``LAG_NOT_ADVANCING``) describe this once, the latter by
linking to the former.

A POP group's queues have no owner (the broker hands each message to whichever client pops next), so
ownership says nothing about them: a frozen POP queue is ``STALLED`` (nobody pops it), never
``ORPHANED``, and only once frozen longer than :data:`POP_COMMIT_GRACE_MS`. What goes wrong under POP
shows in its retry and dead-letter queues instead: copies written to its POP retry topic while the
newest copies read back have been delivered :data:`MIN_DELIVERIES` times or more (``REDELIVERING``,
the doctor's ``REPEATED_REDELIVERY``; :func:`redelivery_verdict`), and messages reaching its
``%DLQ%`` queue (``DEAD_LETTERING``; the broker creates that queue with its first message, so a queue
absent from an earlier look that read the group counts from 0 there, while a look that failed says
nothing of it).

This module holds the names, their order and the thresholds, :func:`frozen_between` (what two looks at
a queue must show for it to count as frozen: the doctor's two samples, each step of the job's frozen run)
and :func:`frozen_verdict`, the verdict of one frozen queue as the doctor computes it;
``analysis/rules.py`` builds the same decision out of Spark columns from these constants. The job ships
to Spark clusters with pyspark and the standard library alone, so it reads the same definition from its
own copy, ``analysis/definition.py``; ``tests/analysis/test_job_imports.py`` holds the two to the same
code. Standard library only.
"""

from __future__ import annotations

OK = "OK"
IDLE = "IDLE"
DLQ = "DLQ"
INSUFFICIENT_DATA = "INSUFFICIENT_DATA"
LAGGING = "LAGGING"
REWOUND = "REWOUND"
ORPHANED = "ORPHANED"
STALLED = "STALLED"

REDELIVERING = "REDELIVERING"
DEAD_LETTERING = "DEAD_LETTERING"

STATUS_RANK = {OK: 0, DLQ: 0, IDLE: 1, INSUFFICIENT_DATA: 2, LAGGING: 3, REDELIVERING: 3, REWOUND: 4,
               DEAD_LETTERING: 4, ORPHANED: 5, STALLED: 6}
"""Severity of each verdict; a group's verdict is its worst queue's."""

STUCK_STATUSES = (STALLED, ORPHANED)
"""The verdicts of a stuck queue: ``analyze stuck`` exits 1 on them, the doctor reports them as errors."""

POP_STATUSES = (REDELIVERING, DEAD_LETTERING)
"""The verdicts of a POP group's retry and dead-letter queues: messages failed again and again, or lost to
the DLQ. ``analyze stuck`` exits 1 on them too."""

MIN_DELIVERIES = 3
"""A message delivered this often (the first delivery and two redeliveries) is coming back "again and
again": one redelivery happens to healthy groups now and then (a client that stopped with messages in
hand), two in a row to the same message does not."""

DEFAULT_MAX_DELIVERIES = 17
"""The broker's default maximum of deliveries of a POP message (``retryMaxTimes`` 16, plus the first)."""

POP_COMMIT_GRACE_MS = 30_000
"""POP moves a group's consumer offset when messages are popped, and the commit may trail the last message
by several seconds (seen: one message for 5-9 s on 5.3.3): a POP queue frozen for less than this says
nothing."""

MIN_SNAPSHOTS = 2
"""Answered snapshots a verdict needs (in the window, or since the owner changed); fewer: INSUFFICIENT_DATA.
Two looks are the least that can show a committed offset standing still, and all the doctor's two samples
(``--interval``) have: the job asks for no more evidence than the doctor, nor the doctor for less."""

ALLOWED_LAG = 0
"""Lag at or below this counts as caught up (Burrow's ``allowed-lag``)."""

RETRY_ALLOWED_LAG = 10
"""The same for ``%RETRY%`` queues: a few redelivered messages waiting is normal there."""

CONSUME_TIMEOUT_MS = 15 * 60_000
"""The Java push consumer's default ``consumeTimeout``: a concurrently consumed message still unfinished
after this is sent back by its client, which lets the committed offset move on if the client works."""

BLOCKED_AFTER_MS = 60_000
"""A held queue whose client has cached messages and consumed none for longer than this is blocked
(the threshold of mqadmin ``consumerStatus``'s process-queue analysis)."""

RUN_LOOKBACK_MS = 60 * 60_000
"""How far before its window the job reads to find where a frozen run began; a run frozen already at
the first snapshot read is reported as begun at or before it, never as shorter."""

RETRY_PREFIX = "%RETRY%"
DLQ_PREFIX = "%DLQ%"


def redelivery_verdict(copies_written: int, deliveries: int | None) -> str | None:
    """The verdict of a POP group's retry queue from what one look (the doctor) or a window (the job) saw.

    ``copies_written`` is how many copies reached the queue (its broker offset's growth); ``deliveries``
    the most deliveries among the newest copies read back there (None: none read). ``REDELIVERING`` when
    copies keep coming and, where copies were read, one of them was delivered :data:`MIN_DELIVERIES`
    times or more; None when the queue says nothing of redelivery (no copy written, or only copies of
    messages delivered once or twice), so the usual rules judge it. Nothing unread makes it milder:
    growth without a sample is redelivery.
    """
    if copies_written <= 0:
        return None
    if deliveries is not None and deliveries < MIN_DELIVERIES:
        return None
    return REDELIVERING


def is_retry(topic: str) -> bool:
    """``%RETRY%<group>`` queues: redelivery waits there by design, so they get their own thresholds."""
    return topic.startswith(RETRY_PREFIX)


def allowed_lag(topic: str) -> int:
    """The lag at or below which a queue of ``topic`` counts as caught up."""
    return RETRY_ALLOWED_LAG if is_retry(topic) else ALLOWED_LAG


def frozen_between(topic: str, before: tuple[str | None, int, int], after: tuple[str | None, int, int]) -> bool:
    """Whether two answered looks at a queue (two snapshots, or the doctor's two samples) show it frozen.

    Each look is ``(owner, consumer_offset, lag)``. Frozen: the same owner, the same committed offset, and
    messages waiting beyond the allowed lag at both looks, so that the first starts the frozen run and the
    second extends it. New messages are not needed: a backlog nobody consumes is frozen whether or not more
    arrive. A first look within the allowed lag proves nothing (the messages may have come just before the
    second), and an offset that went back is a rewind, not a frozen queue.
    """
    limit = allowed_lag(topic)
    return (before[0] == after[0] and before[1] == after[1]
            and before[2] > limit and after[2] > limit)


def frozen_verdict(owner: str | None, owner_subscribes: bool | None, pop: bool = False) -> str:
    """The verdict of a queue frozen (:func:`frozen_between`) over at least :data:`MIN_SNAPSHOTS` looks.

    ``owner`` is the client holding the queue (None: nobody, as for a topic no client subscribes);
    ``owner_subscribes`` is False when that client does not subscribe the queue's topic (None: not
    known). How long the run has lasted and whether its start was seen do not matter: the doctor's two
    samples never see the start, and the job's longer look must not make the verdict milder, so neither
    judge waits out a run (a ``%RETRY%`` queue included) before calling it stuck. A queue of a POP group
    (``pop``) has no owner by design: it is ``STALLED`` (nobody pops it), never ``ORPHANED``.
    """
    if pop:
        return STALLED
    if owner is None or owner_subscribes is False:
        return ORPHANED
    return STALLED
