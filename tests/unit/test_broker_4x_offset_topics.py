"""A 4.x broker does not serve QUERY_TOPICS_BY_CONSUMER (343; it answers
REQUEST_CODE_NOT_SUPPORTED): a group view over it is no partial result, the topics a stopped
client left behind are named unavailable, and the check that needs them is skipped, not passed.
Seen on a real 4.9.7 broker: every ``group show``, ``progress``, ``assignment`` and ``doctor``
exited 5."""

from __future__ import annotations

import asyncio

from rmqctl import errors
from rmqctl.doctor import run_checks, skipped_checks
from rmqctl.model import GroupView
from rmqctl.service import ClusterService
from tests.fake_source import FakeClock
from tests.unit.test_doctor import G
from tests.unit.test_service import A, B
from tests.unit.test_service_uncommitted import REMOTING, NeverCommittedU


class Broker4x(NeverCommittedU):
    """The brokers at ``old`` answer QUERY_TOPICS_BY_CONSUMER as a 4.x broker does; any other
    failure of that read is in ``broken``."""

    def __init__(self, old: set[str], broken: dict[str, errors.RmqctlError] | None = None) -> None:
        super().__init__(REMOTING, 7, 7)
        self.old = old
        self.broken = broken or {}

    async def topics_by_consumer(self, address: str, group: str) -> list[str]:
        self._read("topics_by_consumer", address)
        if address in self.old:
            raise errors.RemoteError.for_code(3, "request type 343 not supported", address=address)
        if address in self.broken:
            raise self.broken[address]
        return ["T"]


def view_of(backend: Broker4x) -> GroupView:
    return asyncio.run(ClusterService(backend, FakeClock()).group_view(G))


def test_a_4x_broker_not_serving_the_offset_topics_read_is_no_partial_result() -> None:
    view = view_of(Broker4x({A, B}))
    assert dict(view.errors) == {}
    assert "broker-a, broker-b cannot list the topics" in view.unavailable["offset_topics"]
    assert "ABANDONED_TOPIC_BACKLOG" in skipped_checks(view)
    assert "ABANDONED_TOPIC_BACKLOG" not in {f.code for f in run_checks(view)}


def test_only_the_4x_broker_is_named_and_another_failure_still_counts() -> None:
    lost = errors.ConnectionError("connection refused")
    view = view_of(Broker4x({A}, {B: lost}))
    assert list(view.errors) == ["offset_topics:broker-b"]
    assert view.unavailable["offset_topics"].startswith("broker-a cannot list")


def test_a_5x_cluster_reads_the_offset_topics_and_marks_nothing() -> None:
    view = view_of(Broker4x(set()))
    assert dict(view.errors) == {} and "offset_topics" not in view.unavailable
