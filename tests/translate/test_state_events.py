"""Every agent's state changes (callbacks, tools, output_key, an AgentTool's agent, any agent
of the tree) stream live as STATE_DELTA; a reattach gets them as STATE_SNAPSHOT; ``temp:``
keys never leave the server, ``user:`` and ``app:`` keys do."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support.agui import new_id, user_input
from tests.support.servers import post_run, running_gateway
from tests.support.speakers import of_type
from tests.support.state import EXPECTED, SECRET, tree

pytestmark = pytest.mark.server


def applied(events: list[dict[str, Any]]) -> dict[str, Any]:
    """The state a client holds after applying the stream's deltas to ``{}``."""
    state: dict[str, Any] = {}
    for event in of_type(events, "STATE_DELTA"):
        for op in event["delta"]:
            assert op["op"] == "add" and op["path"].count("/") == 1
            state[op["path"][1:]] = op["value"]
    return state


def assert_state_stream(events: list[dict[str, Any]]) -> None:
    assert applied(events) == EXPECTED
    assert SECRET not in json.dumps(events)
    # Who changed it: the sub-agent that made each change.
    names = {e["subagentRunId"]: e["name"] for e in of_type(events, "SUBAGENT_STARTED")}
    by_key = {
        op["path"][1:]: names[event["subagentRunId"]]
        for event in of_type(events, "STATE_DELTA")
        for op in event["delta"]
    }
    assert by_key["note"] == "worker" and by_key["report"] == "reporter"


async def test_every_agents_state_changes_stream_live_and_come_back_on_reattach() -> None:
    thread = new_id("t")
    async with running_gateway(agent=tree()) as gateway:
        async with gateway.socket() as ws:
            events = await ws.run(user_input(thread, "note it", tools=[]))
            assert_state_stream(events)
            await ws.send({"type": "reattach", "threadId": thread})
            [snapshot] = of_type(await ws.until_end(), "STATE_SNAPSHOT")
            assert snapshot["snapshot"] == EXPECTED
        status, _, events, raw = await post_run(gateway, user_input(new_id("t"), "x", tools=[]))
        assert status == 200
        assert SECRET.encode() not in raw
        assert applied(events)["report"] == "all done"


async def test_a_client_that_shares_state_gets_the_threads_state_as_its_run_starts() -> None:
    thread = new_id("t")
    async with running_gateway(agent=tree()) as gateway, gateway.socket() as ws:
        first = await ws.run(user_input(thread, "note it", tools=[]))
        assert of_type(first, "STATE_SNAPSHOT") == []  # it declared no state
        shared = {**user_input(thread, "again", tools=[]), "state": {"mine": 1}}
        started, snapshot = (await ws.run(shared))[:2]
    assert started["type"] == "RUN_STARTED"
    # The thread's state with the client's edit in: the deltas that follow apply to it.
    assert snapshot["type"] == "STATE_SNAPSHOT" and snapshot["snapshot"] == EXPECTED | {"mine": 1}
