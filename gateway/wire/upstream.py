"""Upstream: what a client sends, decoded strictly and within bounds, before anything is stored.

A WebSocket text frame is a RunAgentInput or a small control frame (``{"type": "cancel"}``,
``{"type": "reattach"}``); POST /invocations takes a RunAgentInput. Decoding is one
``msgspec.json.decode``, whose error names the field (``Expected `str`, got `int` - at
`$.threadId```); what the types leave free-form (state, forwarded props, parameters,
payloads) is walked by ``gateway.wire.bounds``. Every refusal is a VALIDATION_ERROR with a
sentence.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from gateway.wire import bounds
from gateway.wire.base import (
    ID,
    ID_RULE,
    MAX_DECLARED,
    MAX_ID_LENGTH,
    MAX_MESSAGES,
    Id,
    Name,
    Wire,
    explained,
)
from gateway.wire.errors import ErrorCode, GatewayError
from gateway.wire.events import encoder
from gateway.wire.messages import (
    ActivityMessage,
    Message,
    TextPart,
    ToolMessage,
    UserMessage,
    text_of,
    trailing_tool_messages,
)


class Tool(Wire):
    name: Name
    description: Annotated[str, msgspec.Meta(max_length=16_384)]
    parameters: dict[str, Any] | None = None


class Context(Wire):
    description: Annotated[str, msgspec.Meta(max_length=1024)]
    value: Annotated[str, msgspec.Meta(max_length=65_536)]


class ResumeEntry(Wire):
    interrupt_id: Id
    status: Literal["resolved", "cancelled"]
    payload: Any = None


class RunAgentInput(Wire):
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


# What a button's resolved ``context`` may hold: ids and the values its card shows. The model
# reads it and every event of its run carries it, so it stays small and shallow.
MAX_ACTION_CONTEXT_BYTES = 8 << 10


MAX_ACTION_CONTEXT_DEPTH = 8


class UserAction(Wire):
    """A press on an A2UI surface: A2UI v0.9's client ``action``, as the AG-UI A2UI
    middleware forwards it in ``forwardedProps.a2uiAction.userAction``."""

    name: Name
    surface_id: Id
    source_component_id: Id
    context: dict[str, Any] = msgspec.field(default_factory=dict)
    timestamp: Annotated[str, msgspec.Meta(max_length=64)] | None = None


class _ForwardedAction(Wire):
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
            f"Invalid {where}: {explained(exc).replace('`$', '`' + where)}; send "
            '{"userAction": {"name", "surfaceId", "sourceComponentId", "context"}}.',
        ) from None
    size = len(encoder.encode(action.context))
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


class Cancel(Wire, tag_field="type", tag="cancel"):
    thread_id: Id
    # The run the client means to stop: a cancel that arrives once another run of the
    # thread has begun stops nothing. None: whatever run the thread has.
    run_id: Id | None = None


# A position in a thread's event log (``gateway.hub.eventlog``): up to JSON's exact integers.
MAX_CURSOR = 2**53 - 1


Cursor = Annotated[int, msgspec.Meta(ge=0, le=MAX_CURSOR)]


class Reattach(Wire, tag_field="type", tag="reattach"):
    thread_id: Id
    # The last sequence number the client saw: it is sent only what came after.
    after: Cursor | None = None


class LiveStart(Wire, tag_field="type", tag="liveStart"):
    """Opens a live (voice) turn on the thread (docs/voice.md); ``tools``: the client tools
    the model may call in it, as in a RunAgentInput."""

    thread_id: Id
    run_id: Id
    tools: Annotated[list[Tool], msgspec.Meta(max_length=MAX_DECLARED)] = msgspec.field(
        default_factory=list
    )


class LiveStop(Wire, tag_field="type", tag="liveStop"):
    thread_id: Id


class LiveToolResult(Wire, tag_field="type", tag="liveToolResult"):
    """A client tool's result inside a live turn: the tool message a RunAgentInput would
    carry, sent at once (AG-UI has no mid-run channel for it)."""

    thread_id: Id
    message: ToolMessage


class LiveResume(Wire, tag_field="type", tag="liveResume"):
    """A person's answer to an approval asked inside a live turn: the ``resume`` entries a
    RunAgentInput would carry, sent at once (the live turn waits on them)."""

    thread_id: Id
    resume: Annotated[list[ResumeEntry], msgspec.Meta(min_length=1, max_length=MAX_DECLARED)]


ControlFrame = Cancel | Reattach | LiveStart | LiveStop | LiveToolResult | LiveResume


Upstream = RunAgentInput | Cancel | Reattach | LiveStart | LiveStop | LiveToolResult | LiveResume


_input_decoder = msgspec.json.Decoder(RunAgentInput)


_control_decoder = msgspec.json.Decoder(ControlFrame)


class _FrameKind(msgspec.Struct):
    type: Any = None


_kind_decoder = msgspec.json.Decoder(_FrameKind)


def decode_input(data: bytes | str) -> RunAgentInput:
    """Decodes a RunAgentInput within ``wire.bounds``, or VALIDATION_ERROR naming the field."""
    try:
        run_input = _input_decoder.decode(data)
    except msgspec.ValidationError as exc:
        raise GatewayError(
            ErrorCode.VALIDATION_ERROR, f"Invalid RunAgentInput: {explained(exc)}"
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
        if len(message.id) > MAX_ID_LENGTH or not ID.match(message.id):
            raise bounds.OutOfBounds(f"must be 1-{MAX_ID_LENGTH} characters, {ID_RULE}").within(
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


def _within(where: str, value: Any) -> None:
    try:
        bounds.check(value)
    except bounds.OutOfBounds as bad:
        raise bad.within(where) from None


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
        frame = _control_decoder.decode(data)
    except msgspec.ValidationError as exc:
        raise GatewayError(
            ErrorCode.VALIDATION_ERROR,
            f"Invalid control frame: {explained(exc)}."
            " Known types: cancel, reattach, liveStart, liveStop, liveToolResult, liveResume.",
        ) from None
    except RecursionError:
        raise _too_deep() from None
    if isinstance(frame, LiveStart):  # its tools' parameters are free-form, as an input's
        try:
            for index, tool in enumerate(frame.tools):
                _within(f".tools[{index}].parameters", tool.parameters)
        except bounds.OutOfBounds as bad:
            raise GatewayError(
                ErrorCode.VALIDATION_ERROR, f"Invalid liveStart: {bad.at('$')}"
            ) from None
    return frame


def client_instance(value: str) -> str:
    """A ``?clientId=``: the client instance (a browser tab, kept across its reloads) a
    connection speaks for; the client calls of the runs it starts are its to execute."""
    if len(value) > MAX_ID_LENGTH or not ID.match(value):
        raise GatewayError(
            ErrorCode.VALIDATION_ERROR,
            f"Invalid ?clientId=: it must be 1-{MAX_ID_LENGTH} characters, {ID_RULE}; "
            "send the id the tab keeps across its reloads, or none.",
        )
    return value


def reattach_to(thread_id: str) -> Reattach:
    """The reattach frame a ``?threadId=`` stands for, checked as a frame would be."""
    try:
        return msgspec.convert({"type": "reattach", "threadId": thread_id}, Reattach)
    except msgspec.ValidationError as exc:
        raise GatewayError(
            ErrorCode.VALIDATION_ERROR, f"Invalid ?threadId=: {explained(exc)}"
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
