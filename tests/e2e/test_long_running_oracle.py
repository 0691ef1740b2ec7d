"""An agent's own long-running tool through the official @ag-ui/client 1.0, and beside
ag-ui-adk (``tests.support.agui_adk``): what a dojo frontend sees of the call, and what the
final result makes of it, agree.

The one difference is the gateway's to keep: it streams the tool's interim value
(``{"status": "pending", "ticketId"}``) as the call's TOOL_CALL_RESULT, where ag-ui-adk shows
the call alone.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support.agui import new_id
from tests.support.agui_adk import running_agui_adk
from tests.support.dojo.long_running import build_agent
from tests.support.official_client import NEEDS_NODE, accepted, base_input, run_http_agent
from tests.support.servers import RunningGateway, running_gateway

pytestmark = [NEEDS_NODE, pytest.mark.browser]

APPROVED = {"status": "approved", "by": "manager"}


def asked(thread: str) -> dict[str, Any]:
    run_input = base_input(
        thread,
        [{"id": new_id("m"), "role": "user", "content": "reimburse 500 for a conference trip"}],
    )
    run_input["tools"] = []
    return run_input


def answered(thread: str, messages: list[dict[str, Any]], call_id: str) -> dict[str, Any]:
    """The next input as a dojo frontend sends it: the conversation and the final result."""
    result = {
        "id": new_id("tool"),
        "role": "tool",
        "toolCallId": call_id,
        "content": json.dumps(APPROVED),
    }
    run_input = base_input(thread, [*messages, result])
    run_input["tools"] = []
    return run_input


def seen(report: dict[str, Any]) -> dict[str, Any]:
    """What the client holds of the call: its name and arguments, the assistant's words."""
    messages = report["messages"]
    calls = [c for m in messages if m["role"] == "assistant" for c in m.get("toolCalls", [])]
    return {
        "calls": [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in calls],
        "said": [m["content"] for m in messages if m["role"] == "assistant" and m.get("content")],
    }


async def through(target: RunningGateway | str) -> tuple[dict[str, Any], dict[str, Any]]:
    thread = new_id("t")
    first = await run_http_agent(target, asked(thread))
    accepted(first)
    [call_id] = [
        c["id"] for m in first["messages"] if m["role"] == "assistant" for c in m["toolCalls"]
    ]
    second = await run_http_agent(target, answered(thread, first["messages"], call_id))
    accepted(second)
    return first, second


async def test_the_official_client_sees_the_call_its_pending_result_and_the_reply() -> None:
    async with running_gateway(agent=build_agent()) as gateway:
        first, second = await through(gateway)
    [call] = [c for m in first["messages"] if m["role"] == "assistant" for c in m["toolCalls"]]
    [interim] = [m for m in first["messages"] if m["role"] == "tool"]
    assert interim["toolCallId"] == call["id"]
    assert json.loads(interim["content"])["status"] == "pending"
    finished = first["http"]["events"][-1]
    assert finished["outcome"] == {"type": "success", "pendingToolCallIds": [call["id"]]}
    assert seen(second)["said"] == ["Paid 500 for a conference trip."]


async def test_the_gateway_and_ag_ui_adk_agree_on_the_call_and_what_its_result_makes() -> None:
    async with running_gateway(agent=build_agent()) as gateway:
        ours = await through(gateway)
    async with running_agui_adk(build_agent()) as url:
        theirs = await through(url)
    # The same call with the same arguments; neither lets the model answer from "pending"
    # (no words in the first run); both reimburse once the result comes.
    assert [seen(report) for report in ours] == [seen(report) for report in theirs]
    assert seen(ours[0])["said"] == []
    assert seen(ours[1])["said"] == ["Paid 500 for a conference trip."]
