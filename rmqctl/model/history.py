"""Expression and ownership history: which broker expression and which client judged a message.

A consumed message was judged by the subscription the broker stored when it was pulled and by
the client that held its queue then, which may differ from what a sample shows now (a client
that leaves hands its queues, and often the stored expression, to the others). Each sample of a
group is kept per queue as an :class:`Observation`: its time, the consumer offset, and the
:class:`Reign` in place (the broker's stored subscription, the owner and the owner's own
subscription). :class:`ExpressionHistory` keeps them from sample to sample (``doctor
--interval``, the watch service's rounds, the TUI's polls, recorded snapshots) and
:meth:`ExpressionHistory.judge` answers, for one consumed message, which observation's reign
judged it, or None when the evidence does not tell (the message is then unknown, never
delivered).

Must not import anything that does I/O, and nothing from the rest of rmqctl but the model.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import field

from rmqctl.model.cluster import MessageQueue
from rmqctl.model.consumer import Subscription
from rmqctl.model.group import GroupView
from rmqctl.records import dataclass

#: observations kept per queue (the oldest are forgotten first; what they judged becomes unknown)
HISTORY_DEPTH = 16


def dated(at_ms: int, *subscriptions: Subscription | None) -> int:
    """When the broker's expression and the queue's owner were both in place, as their
    subVersions tell (the client's clock, ms, when it last subscribed or re-balanced): the later
    of them. A version later than ``at_ms`` (a skewed clock, a pinned version) dates nothing;
    0 when nothing is dated."""
    versions = [s.sub_version for s in subscriptions if s is not None]
    return max((v for v in versions if 0 < v <= at_ms), default=0)


@dataclass(frozen=True, slots=True)
class Reign:
    """What judges a queue's pulled messages: the broker's stored subscription of the topic, the
    client holding the queue, and that client's own subscription."""

    filt: Subscription | None
    owner: str | None
    own: Subscription | None

    # Two equal reigns (the same expressions, types and subVersions, the same owner) judged alike,
    # and no other stored version came between two samples of one: versions only grow, and the
    # broker keeps the greatest.


@dataclass(frozen=True, slots=True)
class Observation:
    """One queue as one sample saw it."""

    at_ms: int
    #: the committed offset then: every message below it had been consumed
    consumer_offset: int
    reign: Reign

    @property
    def since(self) -> int:
        """When this reign was in place, by its subVersions (0: not dated)."""
        return dated(self.at_ms, self.reign.filt, self.reign.own)


def _own(view: GroupView, owner: str | None, topic: str) -> Subscription | None:
    info = view.running_infos.get(owner) if owner is not None else None
    if info is None:
        return None
    return next((s for s in info.user_subscriptions() if s.topic == topic), None)


def _placed(chain: list[Observation], at: int, offset: int, store_ts: int | None) -> Observation | None:
    """``chain[at]``, the first sample past the message, when its reign judged it: dated before
    the message was stored, or seen also by the sample before it (taken before the message was
    consumed); else None."""
    judged = chain[at]
    since = judged.since
    if since and store_ts is not None and store_ts >= since:
        return judged
    if at > 0 and chain[at - 1].reign == judged.reign and chain[at - 1].consumer_offset <= offset:
        return judged
    return None


def _appended(kept: tuple[Observation, ...], obs: Observation) -> tuple[Observation, ...]:
    if kept and obs.at_ms <= kept[-1].at_ms:
        return kept  # the same sample again, or an older one
    if kept and obs.consumer_offset < kept[-1].consumer_offset:
        return (obs,)  # the offset went back (a reset): what came before no longer dates anything
    if len(kept) >= 2 and kept[-1].reign == obs.reign == kept[-2].reign:
        # a run of one reign needs only its first and last sample
        return (*kept[:-1], obs)
    return (*kept, obs)[-HISTORY_DEPTH:]


@dataclass(frozen=True, slots=True)
class ExpressionHistory:
    """Per queue, the observations of earlier samples, oldest first (a run of one reign kept as
    its first and last sample)."""

    queues: Mapping[MessageQueue, tuple[Observation, ...]] = field(default_factory=dict)

    @classmethod
    def of(cls, views: Iterable[GroupView]) -> ExpressionHistory:
        """The history of ``views``, oldest first."""
        history = cls()
        for view in views:
            history = history.observed(view)
        return history

    def observed(self, view: GroupView) -> ExpressionHistory:
        """This history with ``view`` added (a new object; queues ``view`` no longer has are
        kept, since a broker that failed once may answer again)."""
        queues = dict(self.queues)
        owners = view.holders()
        own_of: dict[tuple[str | None, str], Subscription | None] = {}
        for p in view.progress:
            if not p.known:
                continue
            mq = p.queue
            filt = view.broker_subscriptions.get(mq.broker_name, {}).get(mq.topic)
            holders = owners.get(mq)
            owner = holders[0] if holders else None
            if (owner, mq.topic) not in own_of:
                own_of[owner, mq.topic] = _own(view, owner, mq.topic)
            own = own_of[owner, mq.topic]
            kept = queues.get(mq, ())
            if kept:
                last = kept[-1]
                if (last.consumer_offset == p.consumer_offset and last.reign.owner == owner
                        and last.reign.filt == filt and last.reign.own == own):
                    continue  # nothing consumed and nothing changed since: the last sample stands
            queues[mq] = _appended(kept, Observation(view.sampled_at, p.consumer_offset, Reign(filt, owner, own)))
        return ExpressionHistory(queues)

    def __bool__(self) -> bool:
        return bool(self.queues)

    @classmethod
    def of_observations(cls, mq: MessageQueue, observed: Iterable[Observation]) -> ExpressionHistory:
        """The history of one queue from observations in any order (recorded snapshots)."""
        kept: tuple[Observation, ...] = ()
        for obs in sorted(observed, key=lambda o: o.at_ms):
            kept = _appended(kept, obs)
        return cls({mq: kept})

    def recorded_judge(self, mq: MessageQueue, offset: int, store_ts: int | None) -> tuple[bool, Observation | None]:
        """For recorded samples alone: whether one of them was taken after the message at
        ``offset`` was consumed, and which one's reign judged it (the rules of :meth:`judge`,
        without a current sample; None: not known)."""
        chain = list(self.queues.get(mq, ()))
        at = next((i for i, o in enumerate(chain) if offset < o.consumer_offset), None)
        if at is None:
            return False, None
        return True, _placed(chain, at, offset, store_ts)

    def judge(self, mq: MessageQueue, offset: int, store_ts: int | None, current: Observation) -> tuple[
            Observation | None, bool]:
        """Which observation's reign judged the message at ``offset`` of ``mq`` (stored at
        ``store_ts``), given ``current`` (the sample being checked; the message is below its
        consumer offset), and whether that needed an earlier sample.

        The first observation whose consumer offset is past the message was taken after it was
        consumed. Its reign judged the message when the message was stored after that reign was
        in place (its subVersions), or when the observation before it (taken before the message
        was consumed) shows the same reign. When neither tells, what one sample alone concludes
        stands: the current reign, for a message stored after it was in place, or when nothing is
        dated and no earlier sample of the queue saw another reign. Otherwise: ``(None, False)``,
        unknown."""
        seen = [o for o in self.queues.get(mq, ()) if o.at_ms < current.at_ms]
        reign = current.reign
        unchanged = all(o.reign == reign for o in seen)
        # what one sample alone concludes: stored after the current reign was in place, or, with
        # nothing dated and no change ever observed, the current reign is all there is to go by
        alone = bool(current.since and store_ts is not None and store_ts >= current.since) or (
            not current.since and unchanged)
        chain = [*seen, current]
        at = next((i for i, o in enumerate(chain) if offset < o.consumer_offset), len(chain) - 1)
        judged = _placed(chain, at, offset, store_ts)
        if judged is not None:
            return judged, not (alone and judged.reign == reign)
        if alone:
            return current, False
        return None, False
