"""The wire format: every AG-UI 1.0 frame the gateway sends or accepts, as msgspec Structs.

These types are the single description of the protocol. Decoding an upstream frame is one
``msgspec.json.decode``; its error text (``Expected `str`, got `int` - at `$.threadId```)
goes to the client as is. The JSON Schemas under ``schemas/`` are generated from here.

Downstream, every frame is one event object with no envelope. Upstream, a WebSocket text
frame is a RunAgentInput or a small control frame (``{"type": "cancel", ...}``).
"""

from __future__ import annotations

import enum
import logging
import re
import uuid
from typing import Annotated, Any, Literal

import msgspec

from gateway.wire import bounds

log = logging.getLogger(__name__)

PROTOCOL_VERSION = "1.0"

# Ids and names a client sends reach logs, URLs and the store: short and printable, and
# with no spaces around them (" t" and "t" must not name one thread). Stock clients send UUIDs.
MAX_ID_LENGTH = 256
_PRINTABLE = r"^(?!\s)[^\x00-\x1f\x7f]+(?<!\s)$(?!\n)"
Id = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_ID_LENGTH, pattern=_PRINTABLE)]
Name = Annotated[str, msgspec.Meta(min_length=1, max_length=128, pattern=_PRINTABLE)]
# The same rule for the ids of resent messages, which only the trailing ones need to meet.
_ID = re.compile(_PRINTABLE)
# Entries of a RunAgentInput's lists: far more than any client declares or resends.
MAX_MESSAGES = 10_000
MAX_DECLARED = 256


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


class ToolCall(_Wire, omit_defaults=False):
    """A call in an assistant message; ``type`` is always sent, as @ag-ui/client requires,
    and may be left out by a client."""

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
    # The ADK agent that spoke, and the subagent invocation it spoke in (absent: the root).
    name: str | None = None
    subagent_run_id: str | None = None
    # How a reply cut off ended: {"ended": "stopped" | "failed" | "interrupted"}.
    metadata: dict[str, Any] | None = None


class ToolMessage(_Wire, tag_field="role", tag="tool"):
    id: str
    content: Content
    tool_call_id: str
    error: str | None = None
    subagent_run_id: str | None = None


class SystemMessage(_Wire, tag_field="role", tag="system"):
    id: str
    content: str
    name: str | None = None


class DeveloperMessage(_Wire, tag_field="role", tag="developer"):
    id: str
    content: str
    name: str | None = None


class ActivityMessage(_Wire, tag_field="role", tag="activity"):
    """Structured progress that is not conversation (an A2UI surface, a press on one)."""

    id: str
    activity_type: str
    content: dict[str, Any]
    subagent_run_id: str | None = None


class ReasoningMessage(_Wire, tag_field="role", tag="reasoning"):
    id: str
    content: str
    subagent_run_id: str | None = None


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
    name: Name
    description: Annotated[str, msgspec.Meta(max_length=16_384)]
    parameters: dict[str, Any] | None = None


class Context(_Wire):
    description: Annotated[str, msgspec.Meta(max_length=1024)]
    value: Annotated[str, msgspec.Meta(max_length=65_536)]


class ResumeEntry(_Wire):
    interrupt_id: Id
    status: Literal["resolved", "cancelled"]
    payload: Any = None


class RunAgentInput(_Wire):
    thread_id: Id
    run_id: Id
    messages: Annotated[list[Message], msgspec.Meta(max_length=MAX_MESSAGES)]
    protocol_version: Annotated[str, msgspec.Meta(max_length=32)] | None = None
    parent_run_id: Id | None = None
    state: Any = None
    tools: Annotated[list[Tool], msgspec.Meta(max_length=MAX_DECLARED)] = msgspec.field(
        default_factory=list
    )
    context: Annotated[list[Context], msgspec.Meta(max_length=MAX_DECLARED)] = msgspec.field(
        default_factory=list
    )
    forwarded_props: Any = None
    resume: Annotated[list[ResumeEntry], msgspec.Meta(max_length=MAX_DECLARED)] | None = None

    def forwarded(self, key: str) -> dict[str, Any]:
        """``forwardedProps[key]`` when it is an object, else empty: what a client forwards
        is free-form, so a key of another shape means nothing was asked."""
        props = self.forwarded_props
        value = props.get(key) if isinstance(props, dict) else None
        return value if isinstance(value, dict) else {}


# --- a press on an A2UI surface ------------------------------------------------------------

# What a button's resolved ``context`` may hold: ids and the values its card shows. The model
# reads it and every event of its run carries it, so it stays small and shallow.
MAX_ACTION_CONTEXT_BYTES = 8 << 10
MAX_ACTION_CONTEXT_DEPTH = 8


class UserAction(_Wire):
    """A press on an A2UI surface: A2UI v0.9's client ``action``, as the AG-UI A2UI
    middleware forwards it in ``forwardedProps.a2uiAction.userAction``."""

    name: Name
    surface_id: Id
    source_component_id: Id
    context: dict[str, Any] = msgspec.field(default_factory=dict)
    timestamp: Annotated[str, msgspec.Meta(max_length=64)] | None = None


class _ForwardedAction(_Wire):
    user_action: UserAction


def user_action(run_input: RunAgentInput) -> UserAction | None:
    """The user action an input forwards, within its bounds; None when it forwards none.

    Raises VALIDATION_ERROR naming the field, before anything is stored.
    """
    props = run_input.forwarded_props
    forwarded = props.get("a2uiAction") if isinstance(props, dict) else None
    if forwarded is None:
        return None
    where = "$.forwardedProps.a2uiAction"
    try:
        action = msgspec.convert(forwarded, _ForwardedAction).user_action
    except msgspec.ValidationError as exc:
        raise GatewayError(
            ErrorCode.VALIDATION_ERROR,
            f"Invalid {where}: {_explained(exc).replace('`$', '`' + where)}; send "
            '{"userAction": {"name", "surfaceId", "sourceComponentId", "context"}}.',
        ) from None
    size = len(_encoder.encode(action.context))
    if size > MAX_ACTION_CONTEXT_BYTES:
        raise GatewayError(
            ErrorCode.VALIDATION_ERROR,
            f"{where}.userAction.context holds {size} bytes of JSON; an action's context may"
            f" hold at most {MAX_ACTION_CONTEXT_BYTES}: send the ids the button names, not data.",
        )
    try:
        bounds.check(action.context, max_depth=MAX_ACTION_CONTEXT_DEPTH)
    except bounds.OutOfBounds as bad:
        raise GatewayError(
            ErrorCode.VALIDATION_ERROR,
            f"Invalid RunAgentInput: {bad.at(where + '.userAction.context')}",
        ) from None
    return action


# --- WebSocket control frames --------------------------------------------------------------


class Cancel(_Wire, tag_field="type", tag="cancel"):
    thread_id: Id
    # The run the client means to stop: a cancel that arrives once another run of the
    # thread has begun stops nothing. None: whatever run the thread has.
    run_id: Id | None = None


# A position in a thread's event log (``gateway.hub.eventlog``): up to JSON's exact integers.
MAX_CURSOR = 2**53 - 1
Cursor = Annotated[int, msgspec.Meta(ge=0, le=MAX_CURSOR)]


class Reattach(_Wire, tag_field="type", tag="reattach"):
    thread_id: Id
    # The last sequence number the client saw: it is sent only what came after.
    after: Cursor | None = None


ControlFrame = Cancel | Reattach
Upstream = RunAgentInput | Cancel | Reattach


# --- events --------------------------------------------------------------------------------


class Event(_Wire, tag_field="type", kw_only=True):
    """Base of every downstream frame; the tag is the AG-UI event type."""

    # AG-UI's free-form metadata of any event; the gateway puts a frame's place in its
    # thread's log here (``gateway.hub.eventlog.SEQ``).
    metadata: dict[str, Any] | None = None


class Interrupt(_Wire):
    id: str
    reason: str
    message: str | None = None
    tool_call_id: str | None = None
    response_schema: dict[str, Any] | None = None
    expires_at: str | None = None
    metadata: dict[str, Any] | None = None
    # The sub-agent invocation that asked; absent: the root agent.
    subagent_run_id: str | None = None


class SuccessOutcome(_Wire, tag_field="type", tag="success"):
    pending_tool_call_ids: list[str] | None = None


class InterruptOutcome(_Wire, tag_field="type", tag="interrupt"):
    interrupts: list[Interrupt]


class CancelledOutcome(_Wire, tag_field="type", tag="cancelled"):
    pass


Outcome = SuccessOutcome | InterruptOutcome | CancelledOutcome


class TokenUsage(_Wire):
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


# Activity: what a UI renders as its own widget (``gateway.a2ui``'s surfaces), kept as a
# message of the transcript under ``messageId``.


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


# A model's thoughts: a span holding one reasoning message, both under one id.


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


# Which agent of a tree is speaking: each invocation of a sub-agent is announced, and
# what it says carries its ``subagentRunId``.


class SubagentStarted(Event, tag="SUBAGENT_STARTED"):
    subagent_run_id: str
    name: str
    description: str | None = None
    parent_subagent_run_id: str | None = None
    parent_tool_call_id: str | None = None
    parent_message_id: str | None = None


class SuspendedOutcome(_Wire, tag_field="type", tag="suspended"):
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


_FAILED = {
    ErrorCode.INTERNAL_ERROR: "The gateway failed while handling this",
    ErrorCode.AGENT_ERROR: "The agent failed while answering",
}


def unexpected(
    what: str, code: ErrorCode = ErrorCode.INTERNAL_ERROR, *, traceback: bool = True
) -> GatewayError:
    """For a failure being handled: logs it under a new error id, returns what to tell.

    The client gets the id and a sentence, never the exception's text (it can hold names,
    paths or another user's data); the log line with the same id has the details, and the
    traceback of the exception being handled unless ``traceback`` is False.
    """
    error_id = uuid.uuid4().hex[:12]
    log.error("%s failed (error id %s)", what, error_id, exc_info=traceback)
    return GatewayError(
        code,
        f"{_FAILED[code]} (error id {error_id}). What was stored before is kept; try again,"
        " or give the error id to the operator.",
    )


# --- encoding and decoding -----------------------------------------------------------------

_encoder = msgspec.json.Encoder()
_input_decoder = msgspec.json.Decoder(RunAgentInput)
_control_decoder = msgspec.json.Decoder(ControlFrame)
_event_decoder = msgspec.json.Decoder(AnyEvent)


class _FrameKind(msgspec.Struct):
    type: Any = None


_kind_decoder = msgspec.json.Decoder(_FrameKind)


def encode(event: Event) -> bytes:
    return _encoder.encode(event)


def decode_event(data: bytes) -> Event:
    """An event the gateway encoded itself (a frame of a thread's log) back."""
    event: Event = _event_decoder.decode(data)
    return event


def decode_input(data: bytes | str) -> RunAgentInput:
    """Decodes a RunAgentInput within ``wire.bounds``, or VALIDATION_ERROR naming the field."""
    try:
        run_input = _input_decoder.decode(data)
    except msgspec.ValidationError as exc:
        raise GatewayError(
            ErrorCode.VALIDATION_ERROR, f"Invalid RunAgentInput: {_explained(exc)}"
        ) from None
    except msgspec.DecodeError as exc:
        raise GatewayError(ErrorCode.VALIDATION_ERROR, f"Frame is not JSON: {exc}") from None
    except RecursionError:
        raise _too_deep() from None
    try:
        _check_free_form(run_input)
    except bounds.OutOfBounds as bad:
        raise GatewayError(
            ErrorCode.VALIDATION_ERROR, f"Invalid RunAgentInput: {bad.at('$')}"
        ) from None
    user_action(run_input)  # a press on a surface is checked at the door, as the rest is
    return run_input


def _check_free_form(run_input: RunAgentInput) -> None:
    """Walks every value of the input whose shape its type leaves open."""
    _within(".state", run_input.state)
    _within(".forwardedProps", run_input.forwarded_props)
    for index, tool in enumerate(run_input.tools):
        _within(f".tools[{index}].parameters", tool.parameters)
    for index, entry in enumerate(run_input.resume or ()):
        _within(f".resume[{index}].payload", entry.payload)
    for index, message in enumerate(run_input.messages):
        if len(message.id) > MAX_ID_LENGTH or not _ID.match(message.id):
            raise bounds.OutOfBounds(f"must be 1-{MAX_ID_LENGTH} characters, {_ID_RULE}").within(
                f".messages[{index}].id"
            )
        if isinstance(message, ActivityMessage):
            _within(f".messages[{index}].content", message.content)
        elif isinstance(message, UserMessage | ToolMessage) and not isinstance(
            message.content, str
        ):
            for part_index, part in enumerate(message.content):
                if not isinstance(part, TextPart):
                    _within(f".messages[{index}].content[{part_index}].source", part.source)
    # A tool result's text is stored as JSON when it is JSON: it must be readable back.
    for index in trailing_tool_messages(run_input.messages):
        message = run_input.messages[index]
        assert isinstance(message, ToolMessage)
        try:
            bounds.parse_json(text_of(message.content))
        except bounds.OutOfBounds as bad:
            raise bad.within(f".messages[{index}].content") from None
        except ValueError:
            pass  # not JSON: the model gets it as text


def trailing_tool_messages(messages: list[Message]) -> range:
    """Where the tool messages that end ``messages`` are: the results an input carries."""
    first = len(messages)
    while first > 0 and isinstance(messages[first - 1], ToolMessage):
        first -= 1
    return range(first, len(messages))


def text_of(content: Content) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(part.text for part in content if isinstance(part, TextPart))


def _within(where: str, value: Any) -> None:
    try:
        bounds.check(value)
    except bounds.OutOfBounds as bad:
        raise bad.within(where) from None


_ID_RULE = "with no control characters and no spaces around it"


def _explained(error: msgspec.ValidationError) -> str:
    """msgspec's message, with the id pattern said in words."""
    return str(error).replace(f"matching regex {_PRINTABLE!r}", _ID_RULE)


def _too_deep() -> GatewayError:
    return GatewayError(
        ErrorCode.VALIDATION_ERROR,
        f"Frame is nested too deeply; values may nest at most {bounds.MAX_DEPTH} levels.",
    )


def decode_upstream(data: bytes | str) -> Upstream:
    """Decodes one upstream WebSocket frame: a control frame if it has a ``type``."""
    try:
        kind = _kind_decoder.decode(data)
    except msgspec.DecodeError as exc:
        raise GatewayError(
            ErrorCode.VALIDATION_ERROR, f"Frame is not a JSON object: {exc}"
        ) from None
    except RecursionError:
        raise _too_deep() from None
    if kind.type is None:
        return decode_input(data)
    try:
        return _control_decoder.decode(data)
    except msgspec.ValidationError as exc:
        raise GatewayError(
            ErrorCode.VALIDATION_ERROR,
            f"Invalid control frame: {_explained(exc)}. Known types: cancel, reattach.",
        ) from None
    except RecursionError:
        raise _too_deep() from None


def client_instance(value: str) -> str:
    """A ``?clientId=``: the client instance (a browser tab, kept across its reloads) a
    connection speaks for; the client calls of the runs it starts are its to execute."""
    if len(value) > MAX_ID_LENGTH or not _ID.match(value):
        raise GatewayError(
            ErrorCode.VALIDATION_ERROR,
            f"Invalid ?clientId=: it must be 1-{MAX_ID_LENGTH} characters, {_ID_RULE}; "
            "send the id the tab keeps across its reloads, or none.",
        )
    return value


def reattach_to(thread_id: str) -> Reattach:
    """The reattach frame a ``?threadId=`` stands for, checked as a frame would be."""
    try:
        return msgspec.convert({"type": "reattach", "threadId": thread_id}, Reattach)
    except msgspec.ValidationError as exc:
        raise GatewayError(
            ErrorCode.VALIDATION_ERROR, f"Invalid ?threadId=: {_explained(exc)}"
        ) from None


def cursor(raw: str, name: str) -> int:
    """A cursor from a query string or header (``?after=``, ``Last-Event-ID``): a whole
    number from 0 to ``MAX_CURSOR``; anything else is VALIDATION_ERROR naming ``name``."""
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 16) or int(raw) > MAX_CURSOR:
        raise GatewayError(
            ErrorCode.VALIDATION_ERROR,
            f"{name} must be a whole number from 0 to {MAX_CURSOR}: the sequence number of"
            ' the last event you saw (an event\'s metadata "gateway.seq", an SSE id).',
        )
    return int(raw)


def json_schemas() -> dict[str, dict[str, Any]]:
    """The JSON Schemas of what the gateway accepts and emits, keyed by file name."""

    def one(kind: Any) -> dict[str, Any]:
        return msgspec.json.schema(kind)

    return {
        "run_agent_input.json": one(RunAgentInput),
        "control_frame.json": one(ControlFrame),
        "event.json": one(AnyEvent),
    }
