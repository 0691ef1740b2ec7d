"""The dojo's agents that lean on ag-ui-adk's own settings, through @ag-ui/client, the
gateway beside ag-ui-adk (tests/support/agui_adk.py): predictive state (PredictState before
the tool's call, confirm_changes the run's last call, the dialog's answer replied to) and an
agent holding ``AGUIToolset()`` calling the page's tool."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support.agui import new_id
from tests.support.agui_adk import SIDES, serving
from tests.support.dojo import agui_toolset, predictive_state
from tests.support.official_client import NEEDS_NODE, accepted, base_input, run_http_agent

pytestmark = [NEEDS_NODE, pytest.mark.browser]

STORY = "Write a story about Candy Beard."


async def _document_runs(by: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A story asked for, then the confirm dialog answered ``{"accepted": true}`` as a page
    answers it: its messages so far, and the tool message."""
    first = base_input(new_id("t"), [{"id": new_id("m"), "role": "user", "content": STORY}])
    first["tools"] = []
    agent = predictive_state.document_agent()
    async with serving(by, agent, predict_state=predictive_state.PREDICTIONS) as target:
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
    seen = {by: await _document_runs(by) for by in SIDES}
    for by, (story, decided) in seen.items():
        events = story["events"]
        kinds = [event["type"] for event in events]
        [custom] = [event for event in events if event["type"] == "CUSTOM"]
        starts = [event for event in events if event["type"] == "TOOL_CALL_START"]
        assert [start["toolCallName"] for start in starts] == [
            "write_document_local",
            "confirm_changes",
        ], by
        assert events.index(custom) < events.index(starts[0]), by
        # The dialog's call is the run's last word: only state and the end follow it.
        confirm_end = max(i for i, e in enumerate(events) if e["type"] == "TOOL_CALL_END")
        assert set(kinds[confirm_end + 1 : -1]) <= {"STATE_SNAPSHOT", "STATE_DELTA"}, by
        assert kinds[-1] == "RUN_FINISHED", by
        confirm_id = starts[1]["toolCallId"]
        args = [
            e["delta"]
            for e in events
            if e["type"] == "TOOL_CALL_ARGS" and e["toolCallId"] == confirm_id
        ]
        assert args == ["{}"], by
        assert story["state"]["document"].startswith("# Candy Beard"), by
        replies = [m.get("content") for m in decided["messages"] if m["role"] == "assistant"]
        assert replies[-1] == "The story is yours now.", by
    gateway, oracle = (
        [(e["name"], e["value"]) for e in story["events"] if e["type"] == "CUSTOM"]
        for story, _ in seen.values()
    )
    assert gateway == oracle


async def test_an_agent_with_agui_toolset_calls_the_pages_tool_through_both() -> None:
    calls = []
    for by in SIDES:
        words = {"id": new_id("m"), "role": "user", "content": "Make the background blue"}
        run_input = base_input(new_id("t"), [words])
        run_input["tools"] = [agui_toolset.CHANGE_BACKGROUND]
        async with serving(by, agui_toolset.chat_agent()) as target:
            report = await run_http_agent(target, run_input)
        accepted(report)
        made = [call for m in report["messages"] for call in m.get("toolCalls") or ()]
        calls.append(
            [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in made]
        )
    assert calls[0] == calls[1] == [("change_background", {"background": "blue"})]
