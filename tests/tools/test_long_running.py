"""An agent's own long-running tool (``gateway.tools.long_running``): in a real ADK run the
invocation pauses on the interim result, and the marks it leaves make the stream, the store
and the thread's open calls treat the call as still waiting."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.agents.run_config import RunConfig
from google.adk.events import Event
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService, Session
from google.adk.tools import LongRunningFunctionTool
from google.genai import types

from gateway import wire as p
from gateway.adk.hosting import Hosted, prepare
from gateway.context import RUN_METADATA_KEY
from gateway.hub.open_calls import answered_calls, final_answer, open_calls
from gateway.store.progress import RunProgress
from gateway.tools.client import CLIENT_TOOLS_KEY, ClientToolset
from gateway.tools.long_running import LongRunningPlugin
from gateway.translate.translator import RunTranslator
from tests.support.dojo.long_running import build_agent

pytestmark = pytest.mark.unit

ASK = "reimburse 500 for a conference trip"


async def run_once(agent: LlmAgent, text: str = ASK) -> tuple[list[Event], Session]:
    """One invocation of ``agent`` as the gateway runs it (the plugin, resumable)."""
    app = prepare(Hosted(agent), ClientToolset(), [LongRunningPlugin()])
    sessions = InMemorySessionService()
    runner = Runner(app=app, session_service=sessions, auto_create_session=True)
    metadata = {"runId": "run-1", CLIENT_TOOLS_KEY: []}
    events = [
        event
        async for event in runner.run_async(
            user_id="demo",
            session_id="t1",
            new_message=types.Content(role="user", parts=[types.Part(text=text)]),
            run_config=RunConfig(custom_metadata={RUN_METADATA_KEY: metadata}),
        )
    ]
    session = await sessions.get_session(app_name=app.name, user_id="demo", session_id="t1")
    assert session is not None
    return [e for e in events if not e.partial], session


def translated(events: list[Event]) -> list[dict[str, Any]]:
    run = RunTranslator("t1", "run-1")
    out = run.start()
    for event in events:
        out += run.translate(event)
    out += run.finish()
    return [json.loads(p.encode(e)) for e in out]


async def test_the_invocation_pauses_on_the_interim_result_and_marks_it() -> None:
    events, session = await run_once(build_agent())
    [asked] = [e for e in events if e.get_function_calls()]
    [interim] = [e for e in events if e.get_function_responses()]
    call_id = asked.get_function_calls()[0].id
    assert asked.custom_metadata and asked.custom_metadata["agui"]["serverCalls"] == [call_id]
    assert interim.custom_metadata and interim.custom_metadata["agui"]["interim"] == [call_id]
    # Paused: the model was not called on "pending", and the agent did not end.
    assert not any(e.content and any(part.text for part in e.content.parts or ()) for e in events)
    assert not any(e.actions and e.actions.end_of_agent for e in events)
    # The stored thread waits on the call, and the store's own reading agrees.
    [waiting] = open_calls(session).values()
    assert (waiting.call_id, waiting.name, waiting.server) == (call_id, "ask_for_approval", True)
    assert call_id not in answered_calls(session) and final_answer(session, call_id) is None
    progress = RunProgress.of(interim)
    assert progress.answers == () and progress.run_open is False


async def test_the_call_and_its_interim_result_stream_and_stay_pending() -> None:
    events, _ = await run_once(build_agent())
    stream = translated(events)
    [start] = [e for e in stream if e["type"] == "TOOL_CALL_START"]
    [result] = [e for e in stream if e["type"] == "TOOL_CALL_RESULT"]
    assert result["toolCallId"] == start["toolCallId"] and result["messageId"].startswith("tr-")
    assert json.loads(result["content"])["status"] == "pending"
    assert stream[-1]["outcome"] == {
        "type": "success",
        "pendingToolCallIds": [start["toolCallId"]],
    }


async def test_the_final_result_closes_the_call() -> None:
    events, session = await run_once(build_agent())
    call_id = next(e for e in events if e.get_function_calls()).get_function_calls()[0].id
    assert call_id is not None
    final = Event(
        author="user",
        invocation_id=events[0].invocation_id,
        content=types.Content(
            role="user",
            parts=[
                types.Part(
                    function_response=types.FunctionResponse(
                        id=call_id, name="ask_for_approval", response={"status": "approved"}
                    )
                )
            ],
        ),
    )
    session.events.append(final)
    assert open_calls(session) == {}
    assert final_answer(session, call_id) == {"status": "approved"}
    assert RunProgress.of(final).answers == (call_id,)


async def test_a_long_running_tool_that_fails_is_answered_and_the_model_goes_on() -> None:
    def ask_for_approval(purpose: str, amount: str) -> dict[str, Any]:
        """Opens an approval ticket."""
        return {"error": "the ticket system is down"}

    agent = build_agent()
    agent.tools = [LongRunningFunctionTool(func=ask_for_approval)]
    events, session = await run_once(agent)
    [interim] = [e for e in events if e.get_function_responses()]
    assert "interim" not in ((interim.custom_metadata or {}).get("agui") or {})
    assert open_calls(session) == {}
    said = [part.text for e in events for part in (e.content.parts or []) if part.text]
    assert said, "the model was called on the failure"


async def test_a_browser_tool_is_not_the_agents_own() -> None:
    """A long-running call of a tool the run's client declared is held for its executor."""
    call = Event(
        author="agent",
        invocation_id="inv",
        content=types.Content(
            role="model",
            parts=[
                types.Part(function_call=types.FunctionCall(id="c1", name="showTicket", args={}))
            ],
        ),
        long_running_tool_ids={"c1"},
        custom_metadata={RUN_METADATA_KEY: {CLIENT_TOOLS_KEY: ["showTicket"]}},
    )
    plugin = LongRunningPlugin()
    context = SimpleNamespace(invocation_id="inv")
    await plugin.on_event_callback(invocation_context=context, event=call)  # type: ignore[arg-type]
    assert "serverCalls" not in (call.custom_metadata or {})[RUN_METADATA_KEY]
    run = RunTranslator("t1", "run-1")
    run.start()
    assert run.translate(call) == [], "held until the run ends"
    assert run.client_calls == {"c1"}
