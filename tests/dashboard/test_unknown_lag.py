"""A dashboard answers ``diffTotal: -1`` for a group whose consume stats it could not read: the
group's lag is unknown, and ``group list`` says so (null in JSON, "unknown" in the table), never 0."""

from __future__ import annotations

import json

import httpx
import pytest

from rmqctl.cli.group import _total_shown
from rmqctl.report import group_summary
from tests.dashboard.test_client import GENERATIONS, Replay, make_source

UNREAD = {"group": "G_unread", "version": None, "count": 0, "consumeType": None, "messageModel": None,
          "address": [], "consumeTps": 0, "diffTotal": -1, "subGroupType": "NORMAL"}


def with_unread_group(replay: Replay, request: httpx.Request) -> httpx.Response:
    response = replay.handler(request)
    if request.url.path not in ("/consumer/groupList.query", "/consumer/group.refresh.all") \
            or response.status_code != 200:
        return response
    doc = json.loads(response.content)
    doc["data"] += [UNREAD]
    return httpx.Response(200, json=doc, headers=response.headers)


@pytest.mark.parametrize("generation", GENERATIONS)
async def test_a_lag_the_dashboard_could_not_read_is_unknown(generation: str) -> None:
    replay = Replay(generation)
    source = make_source(lambda request: with_unread_group(replay, request))
    try:
        await source.backend.client.open()
        listed = await source.group_summaries()
    finally:
        await source.close()
    (unread,) = [s for s in listed.value if s.group == "G_unread"]
    assert unread.total_diff is None
    assert group_summary(unread)["total_diff"] is None
    assert _total_shown(group_summary(unread)) == "unknown"
