"""ADK events and sessions parsed without genai's per-model warning hook are the same
objects ``model_validate_json`` makes, and the hook is not run (``gateway.store.adk_json``)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

import pydantic
import pytest
from google.adk.events import Event, EventActions
from google.adk.sessions import Session
from google.adk.tools.tool_confirmation import ToolConfirmation
from google.genai import _common, types

from gateway.store import adk_json, codec
from gateway.store.adk_json import parse_event, parse_session

pytestmark = pytest.mark.unit


def _events() -> list[Event]:
    """One of each kind of event a story stores or streams, and a few it may."""
    return [
        Event(  # a streamed chunk of a reply, with a thought
            invocation_id="e-1",
            author="navigator",
            partial=True,
            content=types.Content(
                role="model",
                parts=[types.Part(text="생각", thought=True), types.Part(text="업무 요청 목록")],
            ),
            custom_metadata={"gateway": {"runId": "r-1"}},
        ),
        Event(  # the user's message, with a file
            invocation_id="e-1",
            author="user",
            content=types.Content(
                role="user",
                parts=[
                    types.Part(text="업무 요청 목록 화면 열어줘"),
                    types.Part(inline_data=types.Blob(mime_type="image/png", data=b"\x89PNG\x00")),
                ],
            ),
        ),
        Event(  # a browser call, long-running, with what the model used
            invocation_id="e-1",
            author="navigator",
            content=types.Content(
                role="model",
                parts=[
                    types.Part(
                        function_call=types.FunctionCall(
                            id="adk-2", name="navigateToScreen", args={"screenId": "MNU-3120"}
                        )
                    )
                ],
            ),
            long_running_tool_ids={"adk-2", "adk-1"},
            usage_metadata=types.GenerateContentResponseUsageMetadata(
                prompt_token_count=120, candidates_token_count=7, total_token_count=127
            ),
        ),
        Event(  # a tool's result, a state delta, an approval asked
            invocation_id="e-1",
            author="navigator",
            content=types.Content(
                role="user",
                parts=[
                    types.Part(
                        function_response=types.FunctionResponse(
                            id="adk-1",
                            name="find_screen",
                            response={"screens": [{"id": "MNU-3120", "score": 0.5, "tags": []}]},
                        )
                    )
                ],
            ),
            actions=EventActions(
                state_delta={"screen": "MNU-3120", "count": 2, "nested": {"a": [1, None]}},
                artifact_delta={"report.txt": 1},
                requested_tool_confirmations={"adk-1": ToolConfirmation(hint="ok?")},
                end_of_agent=True,
            ),
            branch="navigator.helper",
        ),
        Event(  # the model failed
            invocation_id="e-2",
            author="navigator",
            error_code="MODEL_FAILED",
            error_message="429",
        ),
    ]


def _json(model: pydantic.BaseModel) -> bytes:
    # As the store and a worker write them.
    return model.model_dump_json(exclude_none=True, by_alias=True).encode()


def hook_calls(parse: Callable[[bytes], Any], data: bytes) -> int:
    """How often genai's hook ran while ``parse`` parsed ``data``."""
    hook = _common.BaseModel._check_field_type_mismatches.__func__.__code__  # type: ignore[attr-defined]
    calls = 0

    def profile(frame: FrameType, event: str, arg: object) -> None:
        nonlocal calls
        if event == "call" and frame.f_code is hook:
            calls += 1

    sys.setprofile(profile)
    try:
        parse(data)
    finally:
        sys.setprofile(None)
    return calls


@pytest.mark.parametrize("event", _events(), ids=["chunk", "message", "call", "result", "failure"])
def test_an_event_parses_to_what_adk_parses_without_the_hook(event: Event) -> None:
    data = _json(event)
    parsed = parse_event(data)
    assert parsed == Event.model_validate_json(data) == event
    assert _json(parsed) == data  # stored as it came
    assert parse_event(data.decode()) == parsed  # a stored row is text
    if event.content is not None:  # what it spares: genai's models are in the content
        assert hook_calls(Event.model_validate_json, data) > 0
    assert hook_calls(parse_event, data) == 0


def test_a_session_parses_to_what_adk_parses_without_the_hook() -> None:
    session = Session(
        app_name="navigator",
        user_id="u",
        id="t",
        state={"screen": "MNU-3120"},
        events=_events(),
        last_update_time=1.5,
    )
    data = _json(session)
    parsed = parse_session(data)
    assert parsed == Session.model_validate_json(data) == session
    assert all(type(e) is Event for e in parsed.events)
    assert hook_calls(Session.model_validate_json, data) > 0
    assert hook_calls(parse_session, data) == 0


@pytest.mark.parametrize(
    "data",
    [
        b"{",
        b"[]",
        b'{"content": {"parts": [{"text": 3}]}}',
        b'{"content": {"parts": [{"nonsense": 1}]}}',  # genai's models forbid extras
        b'{"timestamp": "soon"}',
        b'{"content": ' * 300 + b"{}" + b"}" * 300,
    ],
    ids=["cut", "array", "text", "extra", "timestamp", "deep"],
)
def test_bad_json_is_refused_as_adk_refuses_it(data: bytes) -> None:
    with pytest.raises(pydantic.ValidationError) as ours:
        parse_event(data)
    with pytest.raises(pydantic.ValidationError) as adks:
        Event.model_validate_json(data)
    assert ours.value.errors(include_url=False) == adks.value.errors(include_url=False)
    # What the store records of a damaged row is the same.
    damage = codec.Damage(7, "data", codec._complaint(adks.value))
    assert codec.decoded_event(7, data.decode()) == damage


def test_a_schema_without_the_hook_is_parsed_by_its_own_validator() -> None:
    class Plain(pydantic.BaseModel):
        name: str

    assert adk_json.validator_without_hook(Plain) is None
    assert adk_json.validator_without_hook(types.Part) is not None


@pytest.mark.parametrize(
    "data",
    [
        '{"id": "e", "timestamp": 1.0, "author": "a", "state": {"k": 1}}',
        '{"id": "e", "timestamp": 1.0, "author": "a", "route": "next"}',
        '{"id": "e", "timestamp": 1.0, "author": "a", "\\u0073tate": {"k": 1}}',
        '{"id": "e", "timestamp": 1.0, "author": "a", "node_path": "wf/a"}',
    ],
    ids=["state", "route", "escaped", "node path"],
)
def test_adks_shortcuts_are_routed_as_adk_routes_them(data: str) -> None:
    """JSON ADK never writes, but a row could hold: ``Event``'s router still sees it."""
    adks = Event.model_validate_json(data)
    assert adks != Event(id="e", timestamp=1.0, author="a")  # routed somewhere
    assert parse_event(data) == parse_event(data.encode()) == adks
