"""What a group view keeps once asked (the doctor asks the same questions many times per view)
is handed out as a copy: a caller that changes its answer changes no later caller's."""

from __future__ import annotations

from rmqctl.model import MessageQueue
from tests.unit.doctor_views import A, B, client, group, qs, row, sub


def test_kept_answers_are_handed_out_as_copies() -> None:
    queues = qs("T", 3)
    # A and B both hold queue 1 (a rebalance still moving) and nobody holds queue 2
    view = group([client(A, [sub("T")], queues[:2]), client(B, [sub("T")], queues[1:2])], {"T": queues},
                 progress=[row(mq, 10, 5) for mq in queues])

    known = view.known_queues()
    assert known == queues
    known.clear()
    assert view.known_queues() == queues

    subs = view.client_subscriptions
    assert sorted(subs) == [A, B]
    subs.clear()
    assert sorted(view.client_subscriptions) == [A, B]

    state = view.rebalance_in_progress()
    assert state == {"shared": [MessageQueue("T", "broker-a", 1)], "unheld": [MessageQueue("T", "broker-a", 2)]}
    state["shared"].clear()
    del state["unheld"]
    assert view.rebalance_in_progress() == {"shared": [MessageQueue("T", "broker-a", 1)],
                                            "unheld": [MessageQueue("T", "broker-a", 2)]}
