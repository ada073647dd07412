"""A dashboard lists a POP group's per-topic retry topics (``%RETRY%<group>_<topic>``) as groups
of their own, with no client; the dashboard back end drops those rows and lists the group once."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.dashboard.test_client import GENERATIONS, Replay, make_source

POP_GROUP = {"group": "G_simple", "version": None, "count": 0, "consumeType": None, "messageModel": None,
             "address": [], "consumeTps": 0, "diffTotal": 3, "subGroupType": "NORMAL"}


def with_pop_group(replay: Replay, request: httpx.Request) -> httpx.Response:
    response = replay.handler(request)
    path = request.url.path
    if path not in ("/consumer/groupList.query", "/consumer/group.refresh.all", "/topic/list.query") \
            or response.status_code != 200:
        return response
    doc = json.loads(response.content)
    if path == "/topic/list.query":
        doc["data"]["topicList"] += ["T2", "%RETRY%G_simple_T2", "%RETRY%G_simple+T2"]
    else:
        doc["data"] += [POP_GROUP, {**POP_GROUP, "group": "G_simple_T2", "diffTotal": -1},
                        {**POP_GROUP, "group": "G_simple+T2", "diffTotal": -1}]
    return httpx.Response(200, json=doc, headers=response.headers)


@pytest.mark.parametrize("generation", GENERATIONS)
async def test_a_pop_groups_retry_topics_list_as_no_group(generation: str) -> None:
    replay = Replay(generation)
    source = make_source(lambda request: with_pop_group(replay, request))
    try:
        await source.backend.client.open()
        listed = await source.group_summaries()
    finally:
        await source.close()
    assert [s.group for s in listed.value] == sorted([replay.manifest["group"], "G_simple"])
    assert listed.errors == {}
