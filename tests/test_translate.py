"""The translator, driven with hand-made ADK events: no server, no model."""

from __future__ import annotations

import json

import pytest
from google.adk.events import Event, EventActions
from google.genai import types

from gateway import protocol as p
from gateway.translate import AgentFailure, RunTranslator
from tests.agui import StreamChecker


def text_event(event_id: str, text: str, *, partial: bool) -> Event:
    return Event(
        id=event_id,
        author="agent",
        invocation_id="inv",
        partial=partial,
        content=types.Content(role="model", parts=[types.Part(text=text)]),
    )


def call_event(event_id: str, *calls: tuple[str, str, dict[str, object]], long: bool) -> Event:
    parts = [
        types.Part(function_call=types.FunctionCall(id=call_id, name=name, args=args))
        for call_id, name, args in calls
    ]
    return Event(
        id=event_id,
        author="agent",
        invocation_id="inv",
        content=types.Content(role="model", parts=parts),
        long_running_tool_ids={c[0] for c in calls} if long else None,
    )


def response_event(*responses: tuple[str, str, dict[str, object]]) -> Event:
    parts = [
        types.Part(function_response=types.FunctionResponse(id=i, name=n, response=r))
        for i, n, r in responses
    ]
    return Event(
        author="agent", invocation_id="inv", content=types.Content(role="user", parts=parts)
    )


def wire(events: list[p.Event]) -> list[dict[str, object]]:
    checker = StreamChecker()
    out = []
    for event in events:
        decoded = json.loads(p.encode(event))
        checker.feed(decoded)
        out.append(decoded)
    return out


def test_streamed_text_is_started_once_and_not_resent_at_the_end() -> None:
    run = RunTranslator("t", "r")
    events = run.start()
    events += run.translate(text_event("e1", "안녕", partial=True))
    events += run.translate(text_event("e1", "하세요", partial=True))
    events += run.translate(text_event("e1", "안녕하세요", partial=False))
    events += run.finish()
    kinds = [(e["type"], e.get("delta")) for e in wire(events)]
    assert kinds == [
        ("RUN_STARTED", None),
        ("TEXT_MESSAGE_START", None),
        ("TEXT_MESSAGE_CONTENT", "안녕"),
        ("TEXT_MESSAGE_CONTENT", "하세요"),
        ("TEXT_MESSAGE_END", None),
        ("RUN_FINISHED", None),
    ]


def test_unstreamed_text_is_sent_whole() -> None:
    run = RunTranslator("t", "r")
    events = run.start() + run.translate(text_event("e1", "hi", partial=False)) + run.finish()
    assert [e["type"] for e in wire(events)][1:4] == [
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
    ]


def test_parallel_calls_with_reversed_responses_pair_by_id() -> None:
    run = RunTranslator("t", "r")
    events = run.start()
    events += run.translate(
        call_event(
            "e1", ("c1", "find_screen", {"q": "a"}), ("c2", "find_screen", {"q": "b"}), long=False
        )
    )
    events += run.translate(
        response_event(("c2", "find_screen", {"hit": "b"}), ("c1", "find_screen", {"hit": "a"}))
    )
    events += run.finish()
    results = {
        e["toolCallId"]: json.loads(e["content"])
        for e in wire(events)
        if e["type"] == "TOOL_CALL_RESULT"
    }
    assert results == {"c1": {"hit": "a"}, "c2": {"hit": "b"}}


def test_long_running_calls_are_reported_pending() -> None:
    run = RunTranslator("t", "r")
    events = run.start()
    events += run.translate(
        call_event("e1", ("c1", "navigateToScreen", {"screenId": "X"}), long=True)
    )
    events += run.finish()
    last = wire(events)[-1]
    assert last["outcome"] == {"type": "success", "pendingToolCallIds": ["c1"]}


def test_text_is_closed_before_a_tool_call_starts() -> None:
    run = RunTranslator("t", "r")
    events = run.start()
    events += run.translate(text_event("e1", "looking", partial=True))
    events += run.translate(call_event("e2", ("c1", "find_screen", {}), long=False))
    events += run.finish()
    assert [e["type"] for e in wire(events)][1:5] == [
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "TOOL_CALL_START",
    ]


def test_state_deltas_become_json_patch_without_temp_keys() -> None:
    run = RunTranslator("t", "r")
    event = Event(
        author="agent",
        invocation_id="inv",
        actions=EventActions(state_delta={"screen/current": "MNU-3120", "temp:x": 1, "n": 2}),
    )
    events = wire(run.start() + run.translate(event) + run.finish())
    [delta] = [e for e in events if e["type"] == "STATE_DELTA"]
    assert delta["delta"] == [
        {"op": "add", "path": "/screen~1current", "value": "MNU-3120"},
        {"op": "add", "path": "/n", "value": 2},
    ]


def test_model_error_event_is_an_agent_failure() -> None:
    run = RunTranslator("t", "r")
    events = run.start() + run.translate(text_event("e1", "par", partial=True))
    with pytest.raises(AgentFailure):
        run.translate(Event(author="agent", invocation_id="inv", error_code="RESOURCE_EXHAUSTED"))
    events += run.fail(p.ErrorCode.AGENT_ERROR, "quota")
    assert [e["type"] for e in wire(events)][-2:] == ["TEXT_MESSAGE_END", "RUN_ERROR"]
    assert wire(events)[-1]["code"] == "AGENT_ERROR"


def test_nothing_follows_the_end_of_a_run() -> None:
    run = RunTranslator("t", "r")
    run.start()
    run.finish()
    with pytest.raises(RuntimeError):
        run.translate(text_event("e1", "late", partial=True))
