"""ADK events and their parts, made by hand: what a store or a translation test stores or
replays, without a model or a runner.

``event`` builds one from parts (``text``, ``call``, ``result``); ``user_says`` and
``agent_says`` are a turn's text in one line, ``cut_off_before_a_word`` a reply that never
said one; ``texts`` reads a loaded session back as one
line per event; ``kinds_of_events`` is one of each kind a story stores or streams.
"""

from __future__ import annotations

from typing import Any

from google.adk.events import Event, EventActions
from google.adk.sessions import Session
from google.adk.tools.tool_confirmation import ToolConfirmation
from google.genai import types

from gateway.store.cut_off import Ending, cut_off_reply


def event(author: str, *parts: types.Part, **fields: Any) -> Event:
    role = "user" if author == "user" or any(p.function_response for p in parts) else "model"
    return Event(
        invocation_id="inv",
        author=author,
        content=types.Content(role=role, parts=list(parts)),
        **fields,
    )


def text(value: str, **fields: Any) -> types.Part:
    return types.Part(text=value, **fields)


def call(call_id: str, name: str, **args: Any) -> types.Part:
    return types.Part(function_call=types.FunctionCall(id=call_id, name=name, args=args))


def result(call_id: str, name: str, **response: Any) -> types.Part:
    return types.Part(
        function_response=types.FunctionResponse(id=call_id, name=name, response=response)
    )


def user_says(text: str, invocation: str = "inv", **metadata: Any) -> Event:
    return Event(
        invocation_id=invocation,
        author="user",
        content=types.Content(role="user", parts=[types.Part(text=text)]),
        custom_metadata={"agui": metadata} if metadata else None,
    )


def agent_says(text: str, invocation: str = "inv") -> Event:
    return Event(
        invocation_id=invocation,
        author="agent",
        content=types.Content(role="model", parts=[types.Part(text=text)]),
    )


def cut_off_before_a_word(run_id: str, invocation: str) -> Event:
    """A reply of run ``run_id`` cut off before it said anything, as a close stores it."""
    return cut_off_reply(
        message_id="",
        invocation_id=invocation,
        author="agent",
        text="",
        ending=Ending.INTERRUPTED,
        metadata={"runId": run_id},
    )


def texts(session: Session | None) -> list[str]:
    assert session is not None
    out = []
    for event in session.events:
        assert event.content and event.content.parts
        part = event.content.parts[0]
        out.append(
            part.text
            or (part.function_call and "call " + (part.function_call.id or ""))
            or (part.function_response and "answer " + (part.function_response.id or ""))
            or ""
        )
    return out


def kinds_of_events() -> list[Event]:
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
