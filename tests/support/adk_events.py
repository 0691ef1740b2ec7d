"""ADK events and their parts, made by hand: what a store or a translation test stores or
replays, without a model or a runner.

``event`` builds one from parts (``text``, ``call``, ``result``); ``user_says`` and
``agent_says`` are a turn's text in one line; ``texts`` reads a loaded session back as one
line per event.
"""

from __future__ import annotations

from typing import Any

from google.adk.events import Event
from google.adk.sessions import Session
from google.genai import types


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
