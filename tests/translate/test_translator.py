"""The translator, driven with hand-made ADK events: no server, no model."""

from __future__ import annotations

import dataclasses
import json

import pydantic
import pytest
from google.adk.events import Event, EventActions
from google.genai import types

from gateway import wire as p
from gateway.translate.tool_results import result_content
from gateway.translate.translator import AgentFailure, RunTranslator
from tests.support.agui import StreamChecker

pytestmark = pytest.mark.unit


def text_event(
    event_id: str,
    text: str,
    *,
    partial: bool,
    author: str = "agent",
    subagent: str | None = None,
    thought: bool = False,
) -> Event:
    """A model event; ``subagent``: the run ``gateway.translate.attribution`` marks it with."""
    return Event(
        id=event_id,
        author=author,
        invocation_id="inv",
        partial=partial,
        content=types.Content(role="model", parts=[types.Part(text=text, thought=thought)]),
        custom_metadata={"agui": {"subagent": {"id": subagent}}} if subagent else None,
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


def test_agents_streaming_at_once_reopen_their_own_messages_and_send_nothing_twice() -> None:
    run = RunTranslator("t", "r")
    events = run.start()
    for left, right in [("one ", "alpha "), ("two ", "beta ")]:
        events += run.translate(text_event("L", left, partial=True, author="l", subagent="l/1"))
        events += run.translate(text_event("R", right, partial=True, author="r", subagent="r/1"))
    assert run.text_so_far("L") == "one two " and run.text_so_far("R") == "alpha beta "
    events += run.translate(
        text_event("R", "alpha beta ", partial=False, author="r", subagent="r/1")
    )
    events += run.translate(text_event("L", "one two ", partial=False, author="l", subagent="l/1"))
    events += run.finish()
    out = wire(events)
    texts: dict[str, str] = {}
    for e in out:
        if e["type"] == "TEXT_MESSAGE_CONTENT":
            texts[e["messageId"]] = texts.get(e["messageId"], "") + e["delta"]
    assert texts == {"L": "one two ", "R": "alpha beta "}
    starts = [
        (e["messageId"], e["name"], e["subagentRunId"])
        for e in out
        if e["type"] == "TEXT_MESSAGE_START"
    ]
    assert starts == [("L", "l", "l/1"), ("R", "r", "r/1")] * 2
    assert [e["subagentRunId"] for e in out if e["type"] == "SUBAGENT_STARTED"] == ["l/1", "r/1"]
    # Neither ended its run (no end_of_agent): the run closes both as it finishes.
    assert [e["type"] for e in out][-3:] == [
        "SUBAGENT_FINISHED",
        "SUBAGENT_FINISHED",
        "RUN_FINISHED",
    ]


def test_a_late_subscriber_is_given_the_sub_agents_and_every_unfinished_message() -> None:
    run = RunTranslator("t", "r")
    run.start()
    run.translate(text_event("L", "one ", partial=True, author="l", subagent="l/1"))
    run.translate(text_event("R", "alpha ", partial=True, author="r", subagent="r/1"))
    started = p.RunStarted(thread_id="t", run_id="r", protocol_version=p.PROTOCOL_VERSION)
    joined = [started, *run.reopen()]
    joined += run.translate(text_event("L", "two", partial=True, author="l", subagent="l/1"))
    joined += run.translate(text_event("L", "one two", partial=False, author="l", subagent="l/1"))
    joined += run.translate(text_event("R", "alpha", partial=False, author="r", subagent="r/1"))
    joined += run.finish()
    texts: dict[str, str] = {}
    for e in wire(joined):  # the StreamChecker accepts what the late subscriber sees
        if e["type"] == "TEXT_MESSAGE_CONTENT":
            texts[e["messageId"]] = texts.get(e["messageId"], "") + e["delta"]
    assert texts == {"L": "one two", "R": "alpha "}


def test_a_late_subscriber_joining_after_a_message_reopened_gets_one_open_message() -> None:
    """L speaks, R speaks, L speaks again: L is open again though R began after it. The
    late subscriber is shown both as they stand with only L left open, so that L's next
    chunk continues it and nothing is opened while another message is."""
    run = RunTranslator("t", "r")
    run.start()
    run.translate(text_event("L", "one ", partial=True, author="l", subagent="l/1"))
    run.translate(text_event("R", "alpha ", partial=True, author="r", subagent="r/1"))
    run.translate(text_event("L", "two ", partial=True, author="l", subagent="l/1"))
    started = p.RunStarted(thread_id="t", run_id="r", protocol_version=p.PROTOCOL_VERSION)
    joined = [started, *run.reopen()]
    joined += run.translate(text_event("L", "three", partial=True, author="l", subagent="l/1"))
    joined += run.translate(text_event("R", "beta", partial=True, author="r", subagent="r/1"))
    joined += run.finish()
    texts: dict[str, str] = {}
    for e in wire(joined):  # the StreamChecker refuses a START while another is open
        if e["type"] == "TEXT_MESSAGE_CONTENT":
            texts[e["messageId"]] = texts.get(e["messageId"], "") + e["delta"]
    assert texts == {"L": "one two three", "R": "alpha beta"}


def test_unstreamed_thoughts_come_whole_as_reasoning_before_the_reply() -> None:
    run = RunTranslator("t", "r")
    final = Event(
        id="e1",
        author="agent",
        invocation_id="inv",
        content=types.Content(
            role="model",
            parts=[types.Part(text="Let me see. ", thought=True), types.Part(text="Done.")],
        ),
    )
    out = wire(run.start() + run.translate(final) + run.finish())
    assert [(e["type"], e.get("delta")) for e in out][1:-1] == [
        ("REASONING_START", None),
        ("REASONING_MESSAGE_START", None),
        ("REASONING_MESSAGE_CONTENT", "Let me see. "),
        ("REASONING_MESSAGE_END", None),
        ("REASONING_END", None),
        ("TEXT_MESSAGE_START", None),
        ("TEXT_MESSAGE_CONTENT", "Done."),
        ("TEXT_MESSAGE_END", None),
    ]
    assert out[1]["messageId"] == "rs-e1" and out[6]["messageId"] == "e1"


def test_what_a_tool_showed_follows_each_calls_result_as_an_activity_snapshot() -> None:
    run = RunTranslator("t", "r")
    shown = [
        {"toolCallId": "c2", "surfaceId": "card", "operations": [{"deleteSurface": {}}]},
        {"toolCallId": "c1", "surfaceId": "card", "operations": [{"createSurface": {}}]},
    ]
    answers = response_event(("c1", "show", {"a2ui": {"shown": ["card"]}}), ("c2", "hide", {}))
    answers.custom_metadata = {"agui": {"runId": "r", "a2ui": shown}}
    events = run.start()
    events += run.translate(call_event("e1", ("c1", "show", {}), ("c2", "hide", {}), long=False))
    events += run.translate(answers) + run.finish()
    streamed = [
        (e["type"], e.get("toolCallId") or e["messageId"], e.get("content"))
        for e in wire(events)
        if e["type"] in ("TOOL_CALL_RESULT", "ACTIVITY_SNAPSHOT")
    ]
    assert streamed == [
        ("TOOL_CALL_RESULT", "c1", '{"a2ui":{"shown":["card"]}}'),
        ("ACTIVITY_SNAPSHOT", "a2ui-surface-card-c1", {"operations": [{"createSurface": {}}]}),
        ("TOOL_CALL_RESULT", "c2", "{}"),
        ("ACTIVITY_SNAPSHOT", "a2ui-surface-card-c2", {"operations": [{"deleteSurface": {}}]}),
    ]


def test_the_stream_checker_holds_activity_to_what_was_sent() -> None:
    checker = StreamChecker()
    checker.feed({"type": "RUN_STARTED", "threadId": "t", "runId": "r", "protocolVersion": "1.0"})
    snapshot = {"type": "ACTIVITY_SNAPSHOT", "messageId": "a", "activityType": "a2ui-surface"}
    checker.feed(snapshot | {"content": {"operations": []}, "replace": True})
    appended = p.ActivityDelta(
        message_id="a",
        activity_type="a2ui-surface",
        patch=[{"op": "add", "path": "/operations/-", "value": {}}],
    )
    checker.feed(json.loads(p.encode(appended)))
    delta = {"type": "ACTIVITY_DELTA", "messageId": "a", "activityType": "a2ui-surface"}
    with pytest.raises(AssertionError, match="never sent"):
        checker.feed(delta | {"messageId": "b", "patch": []})
    with pytest.raises(AssertionError, match="another activity type"):
        checker.feed(delta | {"activityType": "a2ui-action", "patch": []})


class _Sealed(pydantic.BaseModel):
    code: int

    @pydantic.field_serializer("code")
    def _refuse(self, code: int) -> int:
        raise RuntimeError("sealed")


@dataclasses.dataclass
class _Point:
    x: int
    label: str | None


def test_a_typed_result_is_shown_as_json_and_one_that_cannot_be_is_shown_as_text() -> None:
    response = types.FunctionResponse(
        name="t", response={"point": _Point(1, None), "sealed": _Sealed(code=7)}
    )
    assert result_content(response) == '{"point":{"x":1,"label":null},"sealed":"code=7"}'
