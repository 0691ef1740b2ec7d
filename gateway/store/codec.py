"""Stored values as text, and back: an ADK event, a state, an event's AG-UI messages.

Shared by every backend: what a row holds is JSON text, whatever holds the row. The
``decoded_*`` functions never raise on a bad value; they return a ``Damage`` (which row,
which column, what the decoder said without the value), so that the thread can be
quarantined and the read goes on.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import msgspec
import pydantic
from google.adk.events import Event
from google.adk.sessions.state import State

from gateway.store.adk_json import parse_event
from gateway.store.messages import MARK, EventMessages, Message

# What a decoder said about a stored value is cut to this length for logs and operators.
_COMPLAINT_CHARS = 200
# What decoding a stored value raises when the value is bad (msgspec's and pydantic's
# errors are ValueErrors; a column of the wrong SQLite type gives a TypeError).
_DECODE_ERRORS = (ValueError, TypeError, RecursionError)


def dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


_MESSAGES_DECODER = msgspec.json.Decoder(list[Message])


def dump_messages(event: Event, messages: EventMessages) -> str | None:
    """The event's AG-UI messages, as the store's projection ``messages`` makes them, as
    stored: a JSON array, or NULL when it shows none."""
    shown = messages(event)
    return msgspec.json.encode(shown).decode() if shown else None


def has_temp_state(event: Event) -> bool:
    """Whether the event's state delta has ``temp:`` keys: ADK never stores them."""
    delta = event.actions.state_delta if event.actions else None
    return any(key.startswith(State.TEMP_PREFIX) for key in delta or ())


def load_state(text: str | None) -> dict[str, Any]:
    state = json.loads(text) if text else {}
    if not isinstance(state, dict):
        raise ValueError(f"a state must be a JSON object, not {type(state).__name__}")
    return state


def updated_state(text: str | None, delta: dict[str, Any]) -> str:
    """A stored state with a delta applied, as ``dict.update`` does: ADK's shallow merge."""
    return dump({**load_state(text), **delta})


def merged_state(
    session_state: dict[str, Any], app_state: dict[str, Any], user_state: dict[str, Any]
) -> dict[str, Any]:
    merged = dict(session_state)
    merged.update((State.APP_PREFIX + key, value) for key, value in app_state.items())
    merged.update((State.USER_PREFIX + key, value) for key, value in user_state.items())
    return merged


@dataclasses.dataclass(frozen=True, slots=True)
class Damage:
    """A stored value of a thread that cannot be decoded: where it is and what was wrong."""

    seq: int | None  # the event row; None: the session's own state
    column: str
    reason: str


def _complaint(error: Exception) -> str:
    """What a decoder said about a stored value, without the value itself, cut short."""
    if isinstance(error, pydantic.ValidationError):
        details = error.errors(include_url=False, include_context=False, include_input=False)
        said = "; ".join(
            f"{'.'.join(map(str, detail['loc'])) or '$'}: {detail['msg']}" for detail in details[:3]
        )
    else:
        said = f"{type(error).__name__}: {(str(error).splitlines() or [''])[0]}"
    return said[:_COMPLAINT_CHARS]


def decoded_event(seq: int, data: str) -> Event | Damage:
    try:
        return parse_event(data)
    except _DECODE_ERRORS as error:  # the error, and the frames it holds, end here
        return Damage(seq, "data", _complaint(error))


def decoded_state(text: str | None) -> dict[str, Any] | Damage:
    try:
        return load_state(text)
    except _DECODE_ERRORS as error:
        return Damage(None, "state", _complaint(error))


def decoded_messages(seq: int, text: str, *, checked: bool = False) -> list[Message] | Damage:
    """The messages of one event row; ``checked`` also checks each one's shape (slower)."""
    try:
        messages = _MESSAGES_DECODER.decode(text)
        for message in messages if checked else ():
            _check_message(message)
    except _DECODE_ERRORS as error:
        return Damage(seq, "messages", _complaint(error))
    return messages


# The roles of the messages the gateway's projection (``history.event_messages``) makes.
_ROLES = ("user", "assistant", "tool", "reasoning", "activity", MARK)


def _check_message(message: Message) -> None:
    """Raises ValueError unless a stored message has what a snapshot is built from."""
    role = message.get("role")
    if not isinstance(message.get("id"), str) or role not in _ROLES:
        raise ValueError("a stored message needs a string id and a role")
    if role == "tool" and not isinstance(message.get("toolCallId"), str):
        raise ValueError("a stored tool message needs a string toolCallId")
    calls = message.get("toolCalls", [])
    if not isinstance(calls, list) or not all(
        isinstance(call, dict) and isinstance(call.get("id"), str) for call in calls
    ):
        raise ValueError("a stored message's toolCalls need string ids")
