"""The wire: every AG-UI 1.0 frame the gateway sends or accepts, as msgspec Structs.

These types are the single description of the protocol. Decoding an upstream frame is one
``msgspec.json.decode``; its error text (``Expected `str`, got `int` - at `$.threadId```)
goes to the client as is. The JSON Schemas under ``gateway/schemas/`` are generated from
here. Downstream, every frame is one event object with no envelope. Upstream, a WebSocket
text frame is a RunAgentInput or a small control frame (``{"type": "cancel", ...}``).

The package is the bottom layer: it imports nothing else of the gateway. Its face re-exports
the frames, so ``from gateway import wire as p`` reads ``p.RunStarted``, ``p.GatewayError``:

    base       the Struct options every frame shares, ids and names, the protocol version
    messages   AG-UI messages and their content parts
    events     downstream events, their encoding, and decoding a logged frame back
    errors     the AgentCore error codes, GatewayError, and ``unexpected`` failures
    upstream   RunAgentInput and the control frames, decoded strictly within bounds
    schemas    the JSON Schemas, generated from the types

Beside them, imported by name: ``versions`` (which AG-UI a client speaks, and its stream in
that version), ``bounds`` (what free-form JSON may hold), ``notices`` (``gateway.notice``
events, and runs of their own for events outside a run), ``pointers`` (paths into JSON), ``live`` (voice: the binary audio
frames and the live turn's custom events, docs/voice.md).
"""

from __future__ import annotations

from gateway.wire.base import (
    MAX_DECLARED,
    MAX_ID_LENGTH,
    MAX_MESSAGES,
    PROTOCOL_VERSION,
    Id,
    Name,
)
from gateway.wire.errors import (
    ErrorCode,
    GatewayError,
    unexpected,
)
from gateway.wire.events import (
    ActivityDelta,
    ActivitySnapshot,
    AnyEvent,
    CancelledOutcome,
    Custom,
    Event,
    Interrupt,
    InterruptOutcome,
    MessagesSnapshot,
    Outcome,
    ReasoningEnd,
    ReasoningMessageContent,
    ReasoningMessageEnd,
    ReasoningMessageStart,
    ReasoningStart,
    RunError,
    RunFinished,
    RunStarted,
    StateDelta,
    StateSnapshot,
    SubagentError,
    SubagentFinished,
    SubagentStarted,
    SuccessOutcome,
    SuspendedOutcome,
    TextMessageContent,
    TextMessageEnd,
    TextMessageStart,
    TokenUsage,
    ToolCallArgs,
    ToolCallEnd,
    ToolCallResult,
    ToolCallStart,
    decode_event,
    encode,
)
from gateway.wire.messages import (
    ActivityMessage,
    AssistantMessage,
    AudioPart,
    Content,
    ContentPart,
    DeveloperMessage,
    DocumentPart,
    FunctionCall,
    ImagePart,
    Message,
    ReasoningMessage,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolMessage,
    UserMessage,
    VideoPart,
    text_of,
    trailing_tool_messages,
)
from gateway.wire.schemas import (
    json_schemas,
)
from gateway.wire.upstream import (
    MAX_ACTION_CONTEXT_BYTES,
    MAX_ACTION_CONTEXT_DEPTH,
    MAX_CURSOR,
    Cancel,
    Context,
    ControlFrame,
    Cursor,
    Reattach,
    ResumeEntry,
    RunAgentInput,
    Tool,
    Upstream,
    UserAction,
    client_instance,
    cursor,
    decode_input,
    decode_upstream,
    reattach_to,
    user_action,
)

__all__ = [
    "MAX_ACTION_CONTEXT_BYTES",
    "MAX_ACTION_CONTEXT_DEPTH",
    "MAX_CURSOR",
    "MAX_DECLARED",
    "MAX_ID_LENGTH",
    "MAX_MESSAGES",
    "PROTOCOL_VERSION",
    "ActivityDelta",
    "ActivityMessage",
    "ActivitySnapshot",
    "AnyEvent",
    "AssistantMessage",
    "AudioPart",
    "Cancel",
    "CancelledOutcome",
    "Content",
    "ContentPart",
    "Context",
    "ControlFrame",
    "Cursor",
    "Custom",
    "DeveloperMessage",
    "DocumentPart",
    "ErrorCode",
    "Event",
    "FunctionCall",
    "GatewayError",
    "Id",
    "ImagePart",
    "Interrupt",
    "InterruptOutcome",
    "Message",
    "MessagesSnapshot",
    "Name",
    "Outcome",
    "ReasoningEnd",
    "ReasoningMessage",
    "ReasoningMessageContent",
    "ReasoningMessageEnd",
    "ReasoningMessageStart",
    "ReasoningStart",
    "Reattach",
    "ResumeEntry",
    "RunAgentInput",
    "RunError",
    "RunFinished",
    "RunStarted",
    "StateDelta",
    "StateSnapshot",
    "SubagentError",
    "SubagentFinished",
    "SubagentStarted",
    "SuccessOutcome",
    "SuspendedOutcome",
    "SystemMessage",
    "TextMessageContent",
    "TextMessageEnd",
    "TextMessageStart",
    "TextPart",
    "TokenUsage",
    "Tool",
    "ToolCall",
    "ToolCallArgs",
    "ToolCallEnd",
    "ToolCallResult",
    "ToolCallStart",
    "ToolMessage",
    "Upstream",
    "UserAction",
    "UserMessage",
    "VideoPart",
    "client_instance",
    "cursor",
    "decode_event",
    "decode_input",
    "decode_upstream",
    "encode",
    "json_schemas",
    "reattach_to",
    "text_of",
    "trailing_tool_messages",
    "unexpected",
    "user_action",
]
