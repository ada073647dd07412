"""A view whose brokers are read one after another (``group_view(serial=True)``, what a round of
many groups asks for) is the view read with the brokers at once, made without a task per read;
``sample_groups`` asks for it only when it has more groups than it reads at once."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from rmqctl.connect import Target, open_source
from rmqctl.model import GroupView
from rmqctl.watch import sample_groups
from tests.fake_source import FakeSource


def _timeless(view: GroupView) -> GroupView:
    return dataclasses.replace(view, sampled_at=0)


@pytest.mark.parametrize("scenario", ["scale:6x4x2x9", "topic-overwrite", "pop-redelivery", "stall-and-leave"])
async def test_a_serial_view_is_the_same_view(scenario: str) -> None:
    async with open_source(Target(emulator=scenario)) as opened:
        source = opened.source
        groups = (await source.groups()).value
        assert groups
        for group in groups:
            at_once = await source.group_view(group)
            serial = await source.group_view(group, serial=True)
            assert _timeless(serial) == _timeless(at_once), group
            assert serial.progress and serial.connections or not at_once.connections


async def test_a_serial_view_of_two_brokers_and_one_client_makes_no_task() -> None:
    made: list[str] = []

    def factory(loop: asyncio.AbstractEventLoop, coro, **kwargs):  # type: ignore[no-untyped-def]
        made.append(getattr(coro, "__qualname__", repr(coro)))
        return asyncio.Task(coro, loop=loop, **kwargs)

    async with open_source(Target(emulator="scale:2x4x2x2", at=120)) as opened:
        source = opened.source
        group = (await source.groups()).value[0]
        with source.sharing():  # as in a round: the routes and tables are read once, then at hand
            await source.group_view(group)
            loop = asyncio.get_running_loop()
            loop.set_task_factory(factory)
            try:
                at_once = await source.group_view(group)
                tasks_at_once = len(made)
                made.clear()
                serial = await source.group_view(group, serial=True)
            finally:
                loop.set_task_factory(None)
    assert len(serial.progress) == len(at_once.progress) > 0
    assert {mq.broker_name for mq in (p.queue for p in serial.progress)} == {"broker-a", "broker-b"}
    assert tasks_at_once >= 2  # the stats beside the connections, one broker of each in a task
    assert made == []


class Recording(FakeSource):
    def __init__(self) -> None:
        super().__init__()
        self.serial: list[bool] = []

    async def group_view(self, group: str, *, running_info: bool = True, serial: bool = False) -> GroupView:
        self.serial.append(serial)
        return GroupView(group=group, connections=(), broker_subscriptions={}, running_infos={}, progress=())


@pytest.mark.parametrize(("groups", "concurrency", "serial"), [(3, 8, False), (8, 8, False), (9, 8, True)])
async def test_sample_groups_reads_views_serially_only_past_its_concurrency(
        groups: int, concurrency: int, serial: bool) -> None:
    source = Recording()
    sample = await sample_groups(source, [f"g{i}" for i in range(groups)], concurrency=concurrency)
    assert len(sample.views) == groups
    assert source.serial == [serial] * groups
