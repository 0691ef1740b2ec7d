"""Two-way state through the official ``@ag-ui/client`` (1.0, and the 0.0.59 CopilotKit
bundles), and beside ag-ui-adk: the user's edit of the recipe (``HttpAgent``'s state, sent
as ``RunAgentInput.state``) is what the dojo-style recipe agent's model is shown and what
its tool changes, through the gateway as through AG-UI's own ADK middleware
(tests/support/dojo/shared_state.py)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from tests.support.agui import new_id
from tests.support.agui_adk import running_agui_adk
from tests.support.dojo.shared_state import STARTER_RECIPE, root_agent
from tests.support.instructions import watched
from tests.support.official_client import NEEDS_NODE, accepted, base_input, run_http_agent
from tests.support.servers import running_gateway

pytestmark = [NEEDS_NODE, pytest.mark.browser]

EDITED = copy.deepcopy(STARTER_RECIPE) | {"servings": 4}
EDITED["ingredients"][1] = {"name": "oat milk", "amount": "1 cup"}
RENAMED = EDITED | {"title": "Sunday pancakes"}
SHOWN = "The recipe on the user's screen right now:\n"


def renaming_input() -> dict[str, Any]:
    run_input = base_input(
        new_id("t"), [{"id": new_id("m"), "role": "user", "content": "call it Sunday pancakes"}]
    )
    run_input["tools"] = []
    run_input["state"] = {"recipe": EDITED}  # the page's copy, with the user's edit
    return run_input


def recipe_shown(instructions: list[str]) -> list[Any]:
    """The recipe each model call was shown, as the agent's callback put it."""
    return [json.loads(told.split(SHOWN, 1)[1].split("\n", 1)[0]) for told in instructions]


@pytest.mark.parametrize("old_client", [False, True], ids=["1.0", "copilotkit-0.0.59"])
async def test_the_official_client_edits_the_recipe_and_gets_the_agents_change_back(
    old_client: bool,
) -> None:
    agent, model = watched(root_agent)
    async with running_gateway(agent=agent) as gateway:
        report = await run_http_agent(gateway, renaming_input(), old_client=old_client)
    accepted(report)
    events = report["events"]
    assert [e["type"] for e in events[:2]] == ["RUN_STARTED", "STATE_SNAPSHOT"]
    assert events[1]["snapshot"] == {"recipe": EDITED}
    # Both model calls (the call, then the reply to its result) worked from the edit.
    assert recipe_shown(model.instructions) == [EDITED, RENAMED]
    assert report["state"] == {"recipe": RENAMED}
    replies = [m.get("content") for m in report["messages"] if m["role"] == "assistant"]
    assert replies[-1] == "I renamed the recipe to Sunday pancakes."


async def test_the_agent_sees_the_users_edit_through_the_gateway_as_through_ag_ui_adk() -> None:
    seen: dict[str, list[Any]] = {}
    states: dict[str, Any] = {}
    for serve in ("gateway", "ag-ui-adk"):
        agent, model = watched(root_agent)
        if serve == "gateway":
            async with running_gateway(agent=agent) as gateway:
                report = await run_http_agent(gateway, renaming_input())
        else:
            async with running_agui_adk(agent) as url:
                report = await run_http_agent(url, renaming_input())
        accepted(report)
        seen[serve] = recipe_shown(model.instructions)
        states[serve] = report["state"]["recipe"]
    assert seen["gateway"] == seen["ag-ui-adk"] == [EDITED, RENAMED]
    assert states["gateway"] == states["ag-ui-adk"] == RENAMED
