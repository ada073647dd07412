"""What every :class:`~rmqctl.source.ClusterSource` must do, whichever back end answers.

The same assertions run against the remoting source reading the emulator over the real wire
protocol and against the in-memory fake the front-end tests use (seeded from what the remoting
source read, so both describe one cluster); the dashboard source joins them when it exists.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from rmqctl import errors
from rmqctl.backends.remoting import RemotingBackend
from rmqctl.connect import Target, open_source
from rmqctl.emulator.embedded import embedded_cluster
from rmqctl.model import SYSTEM_GROUPS, BrokerRuntime, ClusterInfo, GroupSummary, GroupView
from rmqctl.remoting.admin import AdminClient
from rmqctl.service import ClusterService
from rmqctl.source import ClusterSource
from tests.fake_source import FakeSource

SCENARIO = "topic-overwrite"


async def _fake_from(source: ClusterSource) -> FakeSource:
    fake = FakeSource(cluster_info=await source.cluster())
    for group in (await source.groups()).value:
        fake.set_view(await source.group_view(group))
    for topic in await source.topics():
        try:
            fake.routes[topic] = await source.topic_route(topic)
            fake.stats[topic] = (await source.topic_status(topic)).value
        except errors.NotFound:
            continue
    return fake


@pytest.fixture(params=["remoting", "fake"])
async def source(request: pytest.FixtureRequest) -> AsyncIterator[ClusterSource]:
    async with open_source(Target(emulator=SCENARIO)) as opened:
        if request.param == "remoting":
            yield opened.source
        else:
            yield await _fake_from(opened.source)


async def user_topic(source: ClusterSource) -> str:
    view = await source.group_view((await source.groups()).value[0])
    return sorted(view.topic_queues)[0]


async def test_cluster_lists_brokers_with_a_master(source: ClusterSource) -> None:
    info = await source.cluster()
    assert isinstance(info, ClusterInfo)
    named = {b for brokers in info.clusters.values() for b in brokers}
    assert named and named <= set(info.brokers)
    assert info.masters(), "every cluster in the contract has at least one master"


async def test_broker_runtimes_come_from_listed_addresses(source: ClusterSource) -> None:
    info = await source.cluster()
    runtimes = await source.broker_runtimes(info)
    addrs = {a for b in info.brokers.values() for a in b.addrs.values()}
    assert runtimes.value and all(isinstance(r, BrokerRuntime) for r in runtimes.value)
    assert {r.addr for r in runtimes.value} <= addrs
    assert all(isinstance(e, errors.RmqctlError) for e in runtimes.errors.values())


async def test_topics_are_sorted_unique_and_routed(source: ClusterSource) -> None:
    topics = await source.topics()
    assert topics == sorted(set(topics))
    topic = await user_topic(source)
    assert topic in topics
    route = await source.topic_route(topic)
    assert route.topic == topic and route.read_queues()
    status = await source.topic_status(topic)
    queues = [o.queue for o in status.value.offsets]
    assert queues == sorted(queues) and {q.topic for q in queues} == {topic}
    assert all(0 <= o.min_offset <= o.max_offset for o in status.value.offsets)


async def test_unknown_topic_is_not_found(source: ClusterSource) -> None:
    with pytest.raises(errors.NotFound):
        await source.topic_route("NoSuchTopic-contract")
    with pytest.raises(errors.NotFound):
        await source.topic_status("NoSuchTopic-contract")


async def test_groups_are_sorted_user_groups_with_one_summary_each(source: ClusterSource) -> None:
    groups = await source.groups()
    assert groups.value and groups.value == sorted(set(groups.value))
    assert not set(groups.value) & SYSTEM_GROUPS
    summaries = await source.group_summaries()
    assert [s.group for s in summaries.value] == groups.value
    assert all(isinstance(s, GroupSummary) and s.total_diff >= 0 for s in summaries.value)


async def test_group_view_is_consistent(source: ClusterSource) -> None:
    for group in (await source.groups()).value:
        view = await source.group_view(group)
        assert isinstance(view, GroupView) and view.group == group
        ids = [c.client_id for c in view.connections]
        assert ids == sorted(ids) and ids, "the scenario's groups are online"
        assert set(view.running_infos) <= set(ids)
        queues = [p.queue for p in view.progress]
        assert queues == sorted(queues)
        assert all(p.owner is None or p.owner in ids for p in view.progress)
        assert all(isinstance(e, errors.RmqctlError) for e in view.errors.values())
        assert set(view.assignments()) == set(ids)


async def test_unknown_group_is_not_found(source: ClusterSource) -> None:
    with pytest.raises(errors.NotFound):
        await source.group_view("no-such-group-contract")


async def test_close_can_be_called_twice(source: ClusterSource) -> None:
    await source.groups()
    await source.close()
    await source.close()
    if isinstance(source, FakeSource):
        assert source.closed


async def test_close_releases_every_connection_the_source_opened() -> None:
    async with embedded_cluster(SCENARIO) as (_, server):
        source = ClusterService(RemotingBackend(AdminClient([server.namesrv_addr])))
        listeners = [server.namesrv, *server.brokers.values()]
        await source.group_view((await source.groups()).value[0])  # the name server and every broker
        assert all(listener.connections for listener in listeners)
        await source.close()
        await source.close()
        for _ in range(500):  # each server notices its peer's close on its next read
            if not any(listener.connections for listener in listeners):
                break
            await asyncio.sleep(0.01)
        assert [len(listener.connections) for listener in listeners] == [0] * len(listeners)
