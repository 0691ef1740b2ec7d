"""What real agents cause, as the official @ag-ui/client 1.0 builds it: sub-agents' messages
with their subagentRunId and name, reasoning messages, state, tool results as content
parts, token usage, and A2UI surfaces as activity messages, with no enforcement warning on
the way."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.agui import new_id
from tests.support.official_client import NEEDS_NODE, accepted, base_input, run_http_agent
from tests.support.servers import running_gateway
from tests.support.speakers import of_type, say, think, thinker
from tests.support.state import EXPECTED, tree
from tests.support.subagents import parallel_tree
from tests.support.surfaces import BASIC, CARD
from tests.support.tool_results import CASES, agent

pytestmark = [NEEDS_NODE, pytest.mark.browser]


def first_input(text: str) -> dict[str, Any]:
    run_input = base_input(new_id("t"), [{"id": new_id("m"), "role": "user", "content": text}])
    run_input["tools"] = []
    return run_input


async def test_the_official_client_keeps_who_said_what_in_parallel() -> None:
    async with running_gateway(agent=parallel_tree()) as gateway:
        report = await run_http_agent(gateway, first_input("go"))
    accepted(report)
    names = {e["subagentRunId"]: e["name"] for e in of_type(report["events"], "SUBAGENT_STARTED")}
    said = {
        names[m["subagentRunId"]]: (m["name"], m["content"])
        for m in report["messages"]
        if m["role"] == "assistant"
    }
    assert said == {
        "left": ("left", "one two three four five six"),
        "right": ("right", "alpha beta gamma delta epsilon"),
        "summary": ("summary", "both done"),
    }


async def test_the_official_client_shows_thoughts_apart_and_sees_the_usage() -> None:
    async with running_gateway(agent=thinker([think("Weighing it. "), say("Yes.")])) as gateway:
        report = await run_http_agent(gateway, first_input("should I?"))
    accepted(report)
    roles = [(m["role"], m["content"]) for m in report["messages"][1:]]
    assert roles == [("reasoning", "Weighing it. "), ("assistant", "Yes.")]
    [finished] = of_type(report["events"], "RUN_FINISHED")
    assert finished["usage"][0]["totalTokens"] == 17


async def test_the_official_client_applies_every_agents_state_changes() -> None:
    async with running_gateway(agent=tree()) as gateway:
        report = await run_http_agent(gateway, first_input("note it"))
    accepted(report)
    assert report["state"] == EXPECTED


async def test_the_official_client_takes_tool_results_as_content_parts() -> None:
    for tool, shown in CASES:
        async with running_gateway(agent=agent(tool)) as gateway:
            report = await run_http_agent(gateway, first_input("go"))
        accepted(report)
        [result] = [m for m in report["messages"] if m["role"] == "tool"]
        assert result["content"] == shown, tool.__name__


async def test_the_official_client_keeps_the_card_and_a_press_on_it_as_activity() -> None:
    showing = first_input("R-1042 보여줘") | {"context": BASIC}
    async with running_gateway() as gateway:
        shown = await run_http_agent(gateway, showing)
        accepted(shown)
        [card] = [m for m in shown["messages"] if m["role"] == "activity"]
        pressing = base_input(showing["threadId"], shown["messages"]) | {"context": BASIC}
        user_action = {"name": "approve", "surfaceId": CARD, "sourceComponentId": "approve"}
        user_action["context"] = {"requestId": "R-1042", "status": "pending"}
        pressing["forwardedProps"] = {"a2uiAction": {"userAction": user_action}}
        pressed = await run_http_agent(gateway, pressing)
    accepted(pressed)
    assert card["activityType"] == "a2ui-surface" and card["id"].startswith(f"a2ui-surface-{CARD}-")
    assert card["content"]["operations"][0]["createSurface"]["surfaceId"] == CARD
    assert pressed["events"][-1]["outcome"]["type"] == "interrupt"
    activities = [
        (m["id"], m["activityType"]) for m in pressed["messages"] if m["role"] == "activity"
    ]
    [(action_id, _)] = [a for a in activities if a[1] == "a2ui-action"]
    assert activities == [(card["id"], "a2ui-surface"), (action_id, "a2ui-action")]
