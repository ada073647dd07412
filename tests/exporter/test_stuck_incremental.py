"""The exporter's stuck judge keeps each queue's facts up round by round; its verdicts are the from-scratch ones.

:class:`~rmqctl.exporter.stuck.StuckJudge` does not walk a queue's whole window every round: it
updates what the rules need as observations arrive and age out. Here random rounds of a few
groups — owners that change, hand a queue to nobody or to a client that does not subscribe it,
offsets that freeze, move, catch up and go back, pulls that go on, rounds whose offsets could not
be read, queues and whole groups that disappear and come back, a POP group, retry and dead-letter
queues, a window that rolls — go to the judge, and after every round each verdict is compared with
:func:`~rmqctl.exporter.stuck.judge` (the rules, pinned by ``test_stuck.py``) over a plain list of
the same window, kept here.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator
from operator import attrgetter

import pytest

from rmqctl.exporter.stuck import Observation, StuckJudge, Thresholds, judge, observations
from rmqctl.model import (
    ClientConnection,
    ConsumerRunningInfo,
    GroupView,
    MessageQueue,
    ProcessQueueInfo,
    QueueProgress,
    Subscription,
)

WINDOW_MS = 150_000
GROUPS = ("g", "h", "pop")
CLIENTS = ("c1", "c2", "c3")  # c3 subscribes none of the group's topics


def _queues(group: str) -> list[MessageQueue]:
    return [MessageQueue("T", "broker-a", 0), MessageQueue("T", "broker-b", 0), MessageQueue("T", "broker-b", 1),
            MessageQueue("%RETRY%" + group, "broker-a", 0), MessageQueue("%DLQ%" + group, "broker-a", 0)]


class Queue:
    """One queue's offsets and holder, moved at random from round to round."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.broker = rng.randrange(0, 50)
        self.consumer = rng.randrange(0, self.broker + 1)
        self.pull: int | None = self.consumer
        self.owner: str | None = rng.choice(CLIENTS)

    def step(self) -> None:
        rng = self.rng
        if rng.random() < 0.6:
            self.broker += rng.choice((1, 3, 20))
        move = rng.random()
        if move < 0.35:
            pass  # frozen
        elif move < 0.55:
            self.consumer = self.broker  # caught up
        elif move < 0.65:
            self.consumer = max(0, self.consumer - rng.randrange(1, 30))  # a reset back
        elif move < 0.7:
            self.consumer = self.broker + rng.randrange(1, 5)  # ahead of the broker offset: no lag
        else:
            self.consumer = min(self.broker, self.consumer + rng.randrange(1, 15))
        if rng.random() < 0.3:
            self.pull = None if rng.random() < 0.2 else self.consumer + rng.randrange(0, 20)
        if rng.random() < 0.15:
            self.owner = rng.choice((*CLIENTS, None))


def _view(group: str, queues: dict[MessageQueue, Queue], ts_ms: int, rng: random.Random) -> GroupView:
    progress = []
    held: dict[str, dict[MessageQueue, ProcessQueueInfo]] = {c: {} for c in CLIENTS}
    for mq, q in queues.items():
        known = rng.random() > 0.1  # a round whose offsets for this queue could not be read
        progress.append(QueueProgress(mq, q.broker, q.consumer, q.pull, 0,
                                      offsets_from="consume_stats" if known else "unknown"))
        if q.owner is not None:
            held[q.owner][mq] = ProcessQueueInfo()
        if rng.random() < 0.1:  # a second holder (the first by client id owns it), or one that dropped it
            held[rng.choice(CLIENTS)].setdefault(mq, ProcessQueueInfo(dropped=rng.random() < 0.5))
    if group == "pop":  # gRPC clients: nobody owns a queue
        connections = (ClientConnection("c1", "10.0.0.1:5000", "JAVA", 479, sdk="grpc"),)
        infos: dict[str, ConsumerRunningInfo] = {}
    else:
        connections = tuple(ClientConnection(c, "10.0.0.1:5000", "JAVA", 479, sdk="remoting") for c in CLIENTS)
        infos = {}
        for c in CLIENTS:
            if c == "c2" and rng.random() < 0.2:
                continue  # its running info could not be read: whether it subscribes is not known
            subs = (Subscription("U", "*"),) if c == "c3" else (
                Subscription("T", "*"), Subscription("%RETRY%" + group, "*"))
            infos[c] = ConsumerRunningInfo(c, {}, subs, held[c])
    listed = {"T": tuple(mq for mq in _queues(group) if mq.topic == "T")}
    return GroupView(group, connections, {}, infos, tuple(progress), topic_queues=listed, sampled_at=ts_ms)


SEEDS = range(12)
#: the order of a group's verdicts: topic, broker name, queue id
QUEUE_ORDER = attrgetter("topic", "broker_name", "queue_id")
RULES = {"dlq", "min-snapshots", "rewind", "no-new-messages", "caught-up", "owner-changed", "pop-grace",
         "not-popped", "no-owner", "owner-not-subscribed", "offset-pinned", "frozen", "lag-growing", "moving"}


def _rounds(seed: int) -> tuple[Thresholds, Iterator[tuple[int, list[GroupView]]]]:
    """The thresholds of ``seed`` and its 120 rounds: (time, the views read)."""
    rng = random.Random(seed)
    th = Thresholds(min_snapshots=rng.choice((2, 3)))

    def rounds() -> Iterator[tuple[int, list[GroupView]]]:
        state = {g: {mq: Queue(rng) for mq in _queues(g)} for g in GROUPS}
        ts = 1_700_000_000_000
        for _ in range(120):
            ts += rng.choice((10_000, 30_000, 30_000, 30_000, 70_000, 200_000))  # 200 s: the window empties
            views = []
            for group in GROUPS:
                if rng.random() < 0.1:
                    continue  # the group could not be read this round
                present = {mq: q for mq, q in state[group].items() if rng.random() > 0.1}  # a queue gone a while
                for q in present.values():
                    q.step()
                views.append(_view(group, present, ts, rng))
            yield ts, views

    return th, rounds()


@pytest.mark.parametrize("seed", SEEDS)
def test_the_kept_facts_give_the_verdicts_of_the_whole_window_round_after_round(seed: int) -> None:
    th, rounds = _rounds(seed)
    incremental = StuckJudge(WINDOW_MS, th)
    windows: dict[tuple[str, MessageQueue], list[Observation]] = {}
    for ts, views in rounds:
        got = incremental.add(views, ts)
        live: dict[str, set[MessageQueue]] = {}
        for view in views:
            for mq, obs in observations(view).items():
                windows.setdefault((view.group, mq), []).append(obs)
            live[view.group] = {p.queue for p in view.progress} | {
                mq for listed in view.topic_queues.values() for mq in listed}
        for key in list(windows):
            windows[key] = [o for o in windows[key] if o.ts_ms >= ts - WINDOW_MS]
        assert sorted(got) == sorted(g for g in live if live[g])
        for group, verdicts in got.items():
            assert [v.queue for v in verdicts] == sorted(live[group], key=QUEUE_ORDER)
            for verdict in verdicts:
                window = windows.get((group, verdict.queue), [])
                assert verdict == judge(verdict.queue, window, th), (group, window)


def test_the_random_rounds_reach_every_rule() -> None:
    # else the comparison above proves less than it seems to
    rules: Counter[str] = Counter()
    for seed in SEEDS:
        th, rounds = _rounds(seed)
        incremental = StuckJudge(WINDOW_MS, th)
        for ts, views in rounds:
            for verdicts in incremental.add(views, ts).values():
                rules.update(v.rule for v in verdicts)
    assert set(rules) == RULES, rules
    assert min(rules.values()) >= 5, rules


def test_a_queue_gone_from_its_group_is_forgotten_once_its_window_is_empty() -> None:
    # bounded memory: what the judge keeps of a queue goes with it
    mq = MessageQueue("T", "broker-a", 0)
    judge_ = StuckJudge(60_000)

    def view(ts: int, progress: tuple[QueueProgress, ...]) -> GroupView:
        return GroupView("g", (), {}, {}, progress, sampled_at=ts)

    for ts in (0, 30_000):
        judge_.add([view(ts, (QueueProgress(mq, 10, 5, None, 0),))], ts)
    assert len(judge_.window("g", mq)) == 2
    judge_.add([view(60_000, ())], 60_000)  # listed no more, its observations still in the window
    assert len(judge_.window("g", mq)) == 2
    assert judge_.add([view(100_000, ())], 100_000) == {}
    assert judge_.window("g", mq) == [] and judge_.tracked() == 0
