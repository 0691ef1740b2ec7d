"""The wire format: every AG-UI 1.0 frame the gateway sends or accepts, as msgspec Structs.

These types are the single description of the protocol. Decoding an upstream frame is one
``msgspec.json.decode``; its error text (``Expected `str`, got `int` - at `$.threadId```)
goes to the client as is. The JSON Schemas under ``schemas/`` are generated from here.

Downstream, every frame is one event object with no envelope. Upstream, a WebSocket text
frame is a RunAgentInput or a small control frame (``{"type": "cancel", ...}``).
"""

from __future__ import annotations

import enum
from typing import Any, Literal

import msgspec

PROTOCOL_VERSION = "1.0"


class _Wire(msgspec.Struct, rename="camel", omit_defaults=True, kw_only=True):
    """Common options: camelCase on the wire, absent optionals left out."""


# --- messages ------------------------------------------------------------------------------


class TextPart(_Wire, tag_field="type", tag="text"):
    text: str
    id: str | None = None


class ImagePart(_Wire, tag_field="type", tag="image"):
    source: dict[str, Any]
    id: str | None = None


class AudioPart(_Wire, tag_field="type", tag="audio"):
    source: dict[str, Any]
    id: str | None = None


class VideoPart(_Wire, tag_field="type", tag="video"):
    source: dict[str, Any]
    id: str | None = None


class DocumentPart(_Wire, tag_field="type", tag="document"):
    source: dict[str, Any]
    id: str | None = None


ContentPart = TextPart | ImagePart | AudioPart | VideoPart | DocumentPart
Content = str | list[ContentPart]


class FunctionCall(_Wire):
    name: str
    arguments: str


class ToolCall(_Wire):
    id: str
    function: FunctionCall
    type: Literal["function"] = "function"


class UserMessage(_Wire, tag_field="role", tag="user"):
    id: str
    content: Content
    name: str | None = None


class AssistantMessage(_Wire, tag_field="role", tag="assistant"):
    id: str
    content: str | None = None
    tool_calls: list[ToolCall] | None = None
    name: str | None = None


class ToolMessage(_Wire, tag_field="role", tag="tool"):
    id: str
    content: Content
    tool_call_id: str
    error: str | None = None


class SystemMessage(_Wire, tag_field="role", tag="system"):
    id: str
    content: str
    name: str | None = None


class DeveloperMessage(_Wire, tag_field="role", tag="developer"):
    id: str
    content: str
    name: str | None = None


class ActivityMessage(_Wire, tag_field="role", tag="activity"):
    id: str
    activity_type: str
    content: dict[str, Any]


class ReasoningMessage(_Wire, tag_field="role", tag="reasoning"):
    id: str
    content: str


Message = (
    UserMessage
    | AssistantMessage
    | ToolMessage
    | SystemMessage
    | DeveloperMessage
    | ActivityMessage
    | ReasoningMessage
)


# --- run input -----------------------------------------------------------------------------


class Tool(_Wire):
    name: str
    description: str
    parameters: dict[str, Any] | None = None


class Context(_Wire):
    description: str
    value: str


class ResumeEntry(_Wire):
    interrupt_id: str
    status: Literal["resolved", "cancelled"]
    payload: Any = None


class RunAgentInput(_Wire):
    thread_id: str
    run_id: str
    messages: list[Message]
    protocol_version: str | None = None
    parent_run_id: str | None = None
    state: Any = None
    tools: list[Tool] = msgspec.field(default_factory=list)
    context: list[Context] = msgspec.field(default_factory=list)
    forwarded_props: Any = None
    resume: list[ResumeEntry] | None = None


# --- WebSocket control frames --------------------------------------------------------------


class Cancel(_Wire, tag_field="type", tag="cancel"):
    thread_id: str


class Reattach(_Wire, tag_field="type", tag="reattach"):
    thread_id: str


ControlFrame = Cancel | Reattach
Upstream = RunAgentInput | Cancel | Reattach


# --- events --------------------------------------------------------------------------------


class Event(_Wire, tag_field="type"):
    """Base of every downstream frame; the tag is the AG-UI event type."""


class Interrupt(_Wire):
    id: str
    reason: str
    message: str | None = None
    tool_call_id: str | None = None
    response_schema: dict[str, Any] | None = None
    expires_at: str | None = None
    metadata: dict[str, Any] | None = None


class SuccessOutcome(_Wire, tag_field="type", tag="success"):
    pending_tool_call_ids: list[str] | None = None


class InterruptOutcome(_Wire, tag_field="type", tag="interrupt"):
    interrupts: list[Interrupt]


class CancelledOutcome(_Wire, tag_field="type", tag="cancelled"):
    pass


Outcome = SuccessOutcome | InterruptOutcome | CancelledOutcome


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


class RunError(Event, tag="RUN_ERROR"):
    message: str
    code: str | None = None


class TextMessageStart(Event, tag="TEXT_MESSAGE_START"):
    message_id: str
    role: Literal["assistant"]


class TextMessageContent(Event, tag="TEXT_MESSAGE_CONTENT"):
    message_id: str
    delta: str


class TextMessageEnd(Event, tag="TEXT_MESSAGE_END"):
    message_id: str


class ToolCallStart(Event, tag="TOOL_CALL_START"):
    tool_call_id: str
    tool_call_name: str
    parent_message_id: str | None = None


class ToolCallArgs(Event, tag="TOOL_CALL_ARGS"):
    tool_call_id: str
    delta: str


class ToolCallEnd(Event, tag="TOOL_CALL_END"):
    tool_call_id: str


class ToolCallResult(Event, tag="TOOL_CALL_RESULT"):
    message_id: str
    tool_call_id: str
    content: str
    role: Literal["tool"]


class StateSnapshot(Event, tag="STATE_SNAPSHOT"):
    snapshot: Any


class StateDelta(Event, tag="STATE_DELTA"):
    delta: list[dict[str, Any]]


class MessagesSnapshot(Event, tag="MESSAGES_SNAPSHOT"):
    messages: list[Message]


class Custom(Event, tag="CUSTOM"):
    name: str
    value: Any = None


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
)


# --- errors --------------------------------------------------------------------------------


class ErrorCode(enum.StrEnum):
    """The AgentCore error table; ``http_status`` is what the SSE door answers with."""

    UNAUTHORIZED = "UNAUTHORIZED"
    ACCESS_DENIED = "ACCESS_DENIED"
    VALIDATION_ERROR = "VALIDATION_ERROR"
    RATE_LIMIT_EXCEEDED = "RATE_LIMIT_EXCEEDED"
    SESSION_BUSY = "SESSION_BUSY"
    SERVICE_QUOTA_EXCEEDED = "SERVICE_QUOTA_EXCEEDED"
    AGENT_ERROR = "AGENT_ERROR"
    INTERNAL_ERROR = "INTERNAL_ERROR"

    @property
    def http_status(self) -> int:
        return _HTTP_STATUS[self]


_HTTP_STATUS = {
    ErrorCode.UNAUTHORIZED: 401,
    ErrorCode.ACCESS_DENIED: 403,
    ErrorCode.VALIDATION_ERROR: 400,
    ErrorCode.RATE_LIMIT_EXCEEDED: 429,
    ErrorCode.SESSION_BUSY: 409,
    ErrorCode.SERVICE_QUOTA_EXCEEDED: 429,
    ErrorCode.AGENT_ERROR: 200,
    ErrorCode.INTERNAL_ERROR: 500,
}


class GatewayError(Exception):
    """An error a client can meet: a code from the table and a sentence saying what to do."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def to_event(self) -> RunError:
        return RunError(message=self.message, code=self.code.value)


# --- encoding and decoding -----------------------------------------------------------------

_encoder = msgspec.json.Encoder()
_input_decoder = msgspec.json.Decoder(RunAgentInput)
_control_decoder = msgspec.json.Decoder(ControlFrame)


class _FrameKind(msgspec.Struct):
    type: Any = None


_kind_decoder = msgspec.json.Decoder(_FrameKind)


def encode(event: Event) -> bytes:
    return _encoder.encode(event)


def decode_input(data: bytes | str) -> RunAgentInput:
    """Decodes a RunAgentInput, or raises VALIDATION_ERROR naming the bad field."""
    try:
        return _input_decoder.decode(data)
    except msgspec.ValidationError as exc:
        raise GatewayError(ErrorCode.VALIDATION_ERROR, f"Invalid RunAgentInput: {exc}") from None
    except msgspec.DecodeError as exc:
        raise GatewayError(ErrorCode.VALIDATION_ERROR, f"Frame is not JSON: {exc}") from None


def decode_upstream(data: bytes | str) -> Upstream:
    """Decodes one upstream WebSocket frame: a control frame if it has a ``type``."""
    try:
        kind = _kind_decoder.decode(data)
    except msgspec.DecodeError as exc:
        raise GatewayError(
            ErrorCode.VALIDATION_ERROR, f"Frame is not a JSON object: {exc}"
        ) from None
    if kind.type is None:
        return decode_input(data)
    try:
        return _control_decoder.decode(data)
    except msgspec.ValidationError as exc:
        raise GatewayError(
            ErrorCode.VALIDATION_ERROR,
            f"Invalid control frame: {exc}. Known types: cancel, reattach.",
        ) from None


def json_schemas() -> dict[str, dict[str, Any]]:
    """The JSON Schemas of what the gateway accepts and emits, keyed by file name."""

    def one(kind: Any) -> dict[str, Any]:
        return msgspec.json.schema(kind)

    return {
        "run_agent_input.json": one(RunAgentInput),
        "control_frame.json": one(ControlFrame),
        "event.json": one(AnyEvent),
    }
