"""Downstream: every AG-UI event the gateway sends, tagged by ``type``, and their encoding.

Every frame the gateway sends is one of these, with no envelope. ``encode`` is the one
encoder of the hot path (msgspec, not pydantic); ``decode_event`` reads back a frame the
gateway encoded itself, from a thread's log.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from gateway.wire.base import Wire
from gateway.wire.messages import Content, Message


class Event(Wire, tag_field="type", kw_only=True):
    """Base of every downstream frame; the tag is the AG-UI event type."""

    # AG-UI's free-form metadata of any event; the gateway puts a frame's place in its
    # thread's log here (``gateway.hub.eventlog.SEQ``).
    metadata: dict[str, Any] | None = None


class Interrupt(Wire):
    id: str
    reason: str
    message: str | None = None
    tool_call_id: str | None = None
    response_schema: dict[str, Any] | None = None
    expires_at: str | None = None
    metadata: dict[str, Any] | None = None
    # The sub-agent invocation that asked; absent: the root agent.
    subagent_run_id: str | None = None


class SuccessOutcome(Wire, tag_field="type", tag="success"):
    pending_tool_call_ids: list[str] | None = None


class InterruptOutcome(Wire, tag_field="type", tag="interrupt"):
    interrupts: list[Interrupt]


class CancelledOutcome(Wire, tag_field="type", tag="cancelled"):
    pass


Outcome = SuccessOutcome | InterruptOutcome | CancelledOutcome


class TokenUsage(Wire):
    """One model's token counts in AG-UI 1.0's accounting: input and output are totals;
    reasoning and cached input are parts of them, never additions."""

    model: str | None = None
    provider: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    reasoning_tokens: int | None = None
    cached_input_tokens: int | None = None
    cache_write_input_tokens: int | None = None


class RunStarted(Event, tag="RUN_STARTED"):
    thread_id: str
    run_id: str
    # No default: msgspec leaves defaults out, and AG-UI 1.0 requires the declaration.
    protocol_version: str
    parent_run_id: str | None = None


class RunFinished(Event, tag="RUN_FINISHED"):
    thread_id: str
    run_id: str
    outcome: Outcome | None = None
    result: Any = None
    usage: list[TokenUsage] | None = None


class RunError(Event, tag="RUN_ERROR"):
    message: str
    code: str | None = None
    usage: list[TokenUsage] | None = None


class TextMessageStart(Event, tag="TEXT_MESSAGE_START"):
    message_id: str
    # "user": the user's message of a run, as the thread's other tabs are sent it.
    role: Literal["assistant", "user"]
    name: str | None = None
    subagent_run_id: str | None = None


class TextMessageContent(Event, tag="TEXT_MESSAGE_CONTENT"):
    message_id: str
    delta: str


class TextMessageEnd(Event, tag="TEXT_MESSAGE_END"):
    message_id: str


class ToolCallStart(Event, tag="TOOL_CALL_START"):
    tool_call_id: str
    tool_call_name: str
    parent_message_id: str | None = None
    subagent_run_id: str | None = None


class ToolCallArgs(Event, tag="TOOL_CALL_ARGS"):
    tool_call_id: str
    delta: str


class ToolCallEnd(Event, tag="TOOL_CALL_END"):
    tool_call_id: str


class ToolCallResult(Event, tag="TOOL_CALL_RESULT"):
    message_id: str
    tool_call_id: str
    content: Content
    role: Literal["tool"]
    subagent_run_id: str | None = None


class StateSnapshot(Event, tag="STATE_SNAPSHOT"):
    snapshot: Any


class StateDelta(Event, tag="STATE_DELTA"):
    delta: list[dict[str, Any]]
    subagent_run_id: str | None = None


class MessagesSnapshot(Event, tag="MESSAGES_SNAPSHOT"):
    messages: list[Message]


class Custom(Event, tag="CUSTOM"):
    name: str
    value: Any = None


class ActivitySnapshot(Event, tag="ACTIVITY_SNAPSHOT"):
    message_id: str
    activity_type: str
    content: dict[str, Any]
    # Absent means true in AG-UI 1.0: the content replaces what the message held.
    replace: bool | None = None
    subagent_run_id: str | None = None


class ActivityDelta(Event, tag="ACTIVITY_DELTA"):
    message_id: str
    activity_type: str
    # RFC 6902 operations on the activity message's content.
    patch: list[dict[str, Any]]
    subagent_run_id: str | None = None


class ReasoningStart(Event, tag="REASONING_START"):
    message_id: str
    subagent_run_id: str | None = None


class ReasoningMessageStart(Event, tag="REASONING_MESSAGE_START"):
    message_id: str
    role: Literal["reasoning"]
    subagent_run_id: str | None = None


class ReasoningMessageContent(Event, tag="REASONING_MESSAGE_CONTENT"):
    message_id: str
    delta: str


class ReasoningMessageEnd(Event, tag="REASONING_MESSAGE_END"):
    message_id: str


class ReasoningEnd(Event, tag="REASONING_END"):
    message_id: str


class SubagentStarted(Event, tag="SUBAGENT_STARTED"):
    subagent_run_id: str
    name: str
    description: str | None = None
    parent_subagent_run_id: str | None = None
    parent_tool_call_id: str | None = None
    parent_message_id: str | None = None


class SuspendedOutcome(Wire, tag_field="type", tag="suspended"):
    interrupt_ids: list[str] | None = None


class SubagentFinished(Event, tag="SUBAGENT_FINISHED"):
    subagent_run_id: str
    # Absent: it completed; suspended: it waits on a browser call or an approval.
    outcome: SuspendedOutcome | None = None


class SubagentError(Event, tag="SUBAGENT_ERROR"):
    subagent_run_id: str
    message: str
    code: str | None = None


AnyEvent = (
    RunStarted
    | RunFinished
    | RunError
    | TextMessageStart
    | TextMessageContent
    | TextMessageEnd
    | ToolCallStart
    | ToolCallArgs
    | ToolCallEnd
    | ToolCallResult
    | StateSnapshot
    | StateDelta
    | MessagesSnapshot
    | Custom
    | ActivitySnapshot
    | ActivityDelta
    | ReasoningStart
    | ReasoningMessageStart
    | ReasoningMessageContent
    | ReasoningMessageEnd
    | ReasoningEnd
    | SubagentStarted
    | SubagentFinished
    | SubagentError
)


encoder = msgspec.json.Encoder()


_event_decoder = msgspec.json.Decoder(AnyEvent)


def encode(event: Event) -> bytes:
    return encoder.encode(event)


def decode_event(data: bytes) -> Event:
    """An event the gateway encoded itself (a frame of a thread's log) back."""
    event: Event = _event_decoder.decode(data)
    return event
