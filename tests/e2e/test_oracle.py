"""ag-ui-adk beside the gateway: the same agent, the same offline model, the same official
client; where the two should agree, they do (tests/support/agui_adk.py)."""

from __future__ import annotations

import json
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest
from google.adk.agents import LlmAgent

from gateway.models.script import ScriptLlm
from tests.support.agui import new_id
from tests.support.agui_adk import running_agui_adk
from tests.support.dojo import agui_toolset, predictive_state
from tests.support.official_client import NEEDS_NODE, accepted, base_input, run_http_agent
from tests.support.servers import running_gateway

pytestmark = [NEEDS_NODE, pytest.mark.browser]

STORY = "Write a story about Candy Beard."


def _chat_agent(tmp_path: Path) -> LlmAgent:
    script = tmp_path / "chat.json"
    script.write_text(json.dumps({"rules": [{"user": "hello", "say": "Hello from the script."}]}))
    return LlmAgent(name="chat", model=ScriptLlm.from_file(script), instruction="Be brief.")


async def test_a_plain_chat_reads_the_same_through_both(tmp_path: Path) -> None:
    replies = []
    for serve in ("gateway", "ag-ui-adk"):
        agent = _chat_agent(tmp_path)
        run_input = base_input(
            new_id("t"), [{"id": new_id("m"), "role": "user", "content": "hello"}]
        )
        run_input["tools"] = []
        if serve == "gateway":
            async with running_gateway(agent=agent) as gateway:
                report = await run_http_agent(gateway, run_input)
        else:
            async with running_agui_adk(agent) as url:
                report = await run_http_agent(url, run_input)
        accepted(report)
        replies.append([m["content"] for m in report["messages"] if m["role"] == "assistant"])
    assert replies[0] == replies[1] == ["Hello from the script."]


async def _document_runs(serve: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The dojo's document writer through @ag-ui/client: a story, then the confirm dialog
    answered ``{"accepted": true}`` the way a page answers it (its messages, plus the tool
    message)."""
    agent = predictive_state.document_agent()
    first = base_input(new_id("t"), [{"id": new_id("m"), "role": "user", "content": STORY}])
    first["tools"] = []
    async with AsyncExitStack() as stack:
        if serve == "gateway":
            target: Any = await stack.enter_async_context(
                running_gateway(agent=agent, predict_state=predictive_state.PREDICTIONS)
            )
        else:
            target = await stack.enter_async_context(
                running_agui_adk(agent, predict_state=predictive_state.PREDICTIONS)
            )
        story = await run_http_agent(target, first)
        accepted(story)
        [confirm] = [e for e in story["events"] if e.get("toolCallName") == "confirm_changes"]
        answer = {"id": new_id("tm"), "role": "tool", "toolCallId": confirm["toolCallId"]}
        answer["content"] = json.dumps({"accepted": True})
        second = {**first, "runId": new_id("run"), "messages": [*story["messages"], answer]}
        decided = await run_http_agent(target, second)
        accepted(decided)
    return story, decided


async def test_predictive_state_reads_the_same_through_both() -> None:
    """PredictState before the tool's call, and confirm_changes the last call of the run,
    with the same payloads; the page's answer gets the same reply."""
    seen = {serve: await _document_runs(serve) for serve in ("gateway", "ag-ui-adk")}
    for serve, (story, decided) in seen.items():
        events = story["events"]
        kinds = [event["type"] for event in events]
        [custom] = [event for event in events if event["type"] == "CUSTOM"]
        starts = [event for event in events if event["type"] == "TOOL_CALL_START"]
        assert [start["toolCallName"] for start in starts] == [
            "write_document_local",
            "confirm_changes",
        ], serve
        assert events.index(custom) < events.index(starts[0]), serve
        # The dialog's call is the run's last word: only state and the end follow it.
        confirm_end = max(i for i, e in enumerate(events) if e["type"] == "TOOL_CALL_END")
        assert set(kinds[confirm_end + 1 : -1]) <= {"STATE_SNAPSHOT", "STATE_DELTA"}, serve
        assert kinds[-1] == "RUN_FINISHED", serve
        args = [
            e["delta"]
            for e in events
            if e.get("toolCallId") == starts[1]["toolCallId"] and "delta" in e
        ]
        assert args == ["{}"], serve
        assert story["state"]["document"].startswith("# Candy Beard"), serve
        replies = [
            m["content"]
            for m in decided["messages"]
            if m["role"] == "assistant" and m.get("content")
        ]
        assert replies[-1] == "The story is yours now.", serve
    gateway_custom, oracle_custom = (
        [(e["name"], e["value"]) for e in story["events"] if e["type"] == "CUSTOM"]
        for story, _ in seen.values()
    )
    assert gateway_custom == oracle_custom


async def test_an_agent_with_agui_toolset_calls_the_pages_tool_through_both() -> None:
    calls = []
    for serve in ("gateway", "ag-ui-adk"):
        agent = agui_toolset.chat_agent()
        run_input = base_input(
            new_id("t"),
            [{"id": new_id("m"), "role": "user", "content": "Make the background blue"}],
        )
        run_input["tools"] = [agui_toolset.CHANGE_BACKGROUND]
        if serve == "gateway":
            async with running_gateway(agent=agent) as gateway:
                report = await run_http_agent(gateway, run_input)
        else:
            async with running_agui_adk(agent) as url:
                report = await run_http_agent(url, run_input)
        accepted(report)
        calls.append(
            [
                (call["function"]["name"], json.loads(call["function"]["arguments"]))
                for m in report["messages"]
                for call in m.get("toolCalls") or ()
            ]
        )
    assert calls[0] == calls[1] == [("change_background", {"background": "blue"})]
