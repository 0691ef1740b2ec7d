"""Other people's agents through the gateway (tests/support/dojo): the warm-up never runs an
agent's own callbacks (unless its owner asks), a non-resumable App is served and refuses a
pause when one is asked for, typed tool results are JSON, and a tool's own confirmation
hint is what the person is asked."""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx
import pytest

from tests.support.agui import new_id, outcome, resume, text_of, tool_calls, user_input
from tests.support.dojo import notes, results, session_state, time_off
from tests.support.servers import running_gateway

pytestmark = pytest.mark.server

SHOW_NOTE = {
    "name": "showNote",
    "description": "Shows a note in the browser.",
    "parameters": {"type": "object", "properties": {"noteId": {"type": "string"}}},
}


def quiet(records: list[logging.LogRecord]) -> None:
    for record in records:
        assert record.levelno < logging.ERROR and record.exc_info is None, record.getMessage()


async def test_the_warm_up_runs_none_of_the_agents_callbacks_and_start_up_logs_no_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    session_state.SEEN.clear()
    async with running_gateway(agent=session_state.root_agent, warm_up_runs=3) as gateway:
        assert any("warmed up" in r.getMessage() for r in caplog.records)
        assert session_state.SEEN == []
        async with gateway.socket("erin") as ws:
            events = await ws.run(user_input(new_id("t"), "hello", tools=[]))
        assert text_of(events) == "This is turn one of ours, and I kept count."
    assert {user for _, user in session_state.SEEN} == {"erin"}
    kinds = {kind for kind, _ in session_state.SEEN}
    assert kinds == {"before_agent", "before_model", "after_model", "after_agent"}
    quiet(caplog.records)


async def test_an_owner_may_warm_the_agent_itself() -> None:
    session_state.SEEN.clear()
    async with running_gateway(agent=session_state.root_agent, warm_up_runs=1, warm_up="agent"):
        assert ("before_agent", "__warmup__") in session_state.SEEN


async def test_a_non_resumable_app_is_served_and_refuses_a_pause_when_asked_for_one(
    caplog: pytest.LogCaptureFixture,
) -> None:
    notes.NOTES.clear()
    async with running_gateway(agent=notes.app) as gateway, gateway.socket("fay") as ws:
        thread = new_id("t")
        events = await ws.run(user_input(thread, "note buy milk", tools=[SHOW_NOTE]))
        assert text_of(events) == "Saved: buy milk."
        # A browser tool is not offered to an App that could not wait for its result.
        shown = await ws.run(user_input(thread, "show n1", tools=[SHOW_NOTE]))
        assert shown[-1]["type"] == "RUN_FINISHED" and not tool_calls(shown)
        [told] = [e["value"] for e in shown if e["type"] == "CUSTOM"]
        assert told["code"] == "CLIENT_TOOLS_NOT_OFFERED" and "(showNote)" in told["message"]
        refused = await ws.run(user_input(thread, "delete all", tools=[]))
        assert refused[-1]["type"] == "RUN_ERROR" and refused[-1]["code"] == "AGENT_ERROR"
        assert "an approval of delete_notes" in refused[-1]["message"]
        assert "ResumabilityConfig(is_resumable=True)" in refused[-1]["message"]
        refused = await ws.run(user_input(thread, "review buy milk", tools=[]))
        assert "the long-running tool ask_editor" in refused[-1]["message"]
        # The thread is not left waiting on a call: its next run runs.
        events = await ws.run(user_input(thread, "note call mum", tools=[SHOW_NOTE]))
        assert text_of(events) == "Saved: call mum."
        reloaded = await ws.run({"type": "reattach", "threadId": thread})
        assert outcome(reloaded) == {"type": "success"}  # nothing left waiting
        doc = await capabilities(gateway.http)
        assert doc["custom"]["gateway"]["resumable"] is False
        assert doc["tools"]["clientProvided"] is False
        assert doc["humanInTheLoop"]["approvals"] is False
        # Neither delete_notes nor ask_editor ran.
        assert notes.NOTES == ["buy milk", "call mum"]
    assert any("non-resumable App notes stopped" in r.getMessage() for r in caplog.records)


async def capabilities(http: str) -> dict[str, Any]:
    async with httpx.AsyncClient() as client:
        doc: dict[str, Any] = (await client.get(http + "/capabilities")).json()
        return doc


def results_of(events: list[dict[str, object]]) -> list[object]:
    return [json.loads(str(e["content"])) for e in events if e["type"] == "TOOL_CALL_RESULT"]


async def test_a_pydantic_model_and_a_dataclass_reach_the_client_as_json_live_and_reloaded() -> (
    None
):
    async with running_gateway(agent=results.root_agent) as gateway, gateway.socket() as ws:
        thread = new_id("t")
        weather = await ws.run(user_input(thread, "weather in Seoul", tools=[]))
        forecast = await ws.run(user_input(thread, "forecast for Busan", tools=[]))
        assert results_of(weather) == [
            {"result": {"city": "Seoul", "celsius": 21.5, "sky": "clear"}}
        ]
        assert results_of(forecast) == [{"result": {"city": "Busan", "days": ["sun", "rain"]}}]
        assert text_of(weather) == "It is 21.5 degrees in Seoul."
        assert text_of(forecast) == "Then sun, then rain."
        reloaded = await ws.run({"type": "reattach", "threadId": thread})
    shown = [m for e in reloaded if e["type"] == "MESSAGES_SNAPSHOT" for m in e["messages"]]
    tool_messages = [json.loads(m["content"]) for m in shown if m["role"] == "tool"]
    assert tool_messages == results_of(weather) + results_of(forecast)


async def test_a_tools_own_confirmation_hint_is_what_the_person_is_asked() -> None:
    async with running_gateway(agent=time_off.root_agent) as gateway, gateway.socket() as ws:
        thread = new_id("t")
        events = await ws.run(user_input(thread, "3 days off please", tools=[]))
        [interrupt] = outcome(events)["interrupts"]
        assert interrupt["message"] == time_off.HINT
        answer = {"approved": True, "payload": {"approved_days": 2}}
        events = await ws.run(resume(thread, interrupt["id"], payload=answer))
        assert text_of(events) == "Booked 2 days."
