"""Which AG-UI a client speaks, and its stream in that version: negotiation and downgrade.

AG-UI carries the version in-band: a consumer declares the one it speaks on
``RunAgentInput.protocolVersion``, the producer its own on ``RUN_STARTED``. A client that
declares a 1.x version gets the gateway's 1.0 stream as it is. A client that declares
none is from before the field existed (``@ag-ui/client`` 0.0.x, which CopilotKit 1.74
bundles): its zod schemas reject what 1.0 added inside strict objects, so its stream is
downgraded to what 0.0.x accepts. Any other major version is refused before the run starts.

The downgrade is a pure reshaping of events, applied where they are encoded for one
connection or request (``gateway.doors.send_queue``): it removes or flattens what 0.0.x cannot
read and never changes ids or order. For 0.0.x:

- RUN_STARTED carries no ``protocolVersion`` (0.0.x predates it);
- a success outcome carries no ``pendingToolCallIds`` (0.0.x's outcome is strict);
- a ``cancelled`` outcome, unknown to 0.0.x, leaves RUN_FINISHED without an outcome;
- an ``interrupt`` outcome stays (0.0.59 reads it and answers with ``resume``), and is also
  announced as CUSTOM ``on_interrupt`` before RUN_FINISHED, the legacy interrupt event that
  CopilotKit's ``useInterrupt`` answers with ``forwardedProps.command.resume``;
- a tool result's content (TOOL_CALL_RESULT, a tool message in MESSAGES_SNAPSHOT) is text;
- a user message in MESSAGES_SNAPSHOT keeps only the media parts 0.0.x can name (a
  ``data`` or ``url`` source).

What a downgrade loses is logged, for the operator; the client is told nothing it could not
parse. ``legacy_answer`` reads the legacy interrupt answer back as a 1.0 ``resume``.
"""

from __future__ import annotations

import enum
import logging
import re
from collections.abc import Callable
from typing import Any

import msgspec

from gateway import wire as p

log = logging.getLogger(__name__)


class Dialect(enum.Enum):
    """The shape of the stream a client is sent."""

    CURRENT = "1.0"  # AG-UI 1.x: events as the gateway builds them
    LEGACY = "0.0"  # @ag-ui/client 0.0.x: a client that declared no version


# MAJOR.MINOR as the spec publishes it; a patch, as clients' package versions have, is let by.
_VERSION = re.compile(r"^(\d{1,4})\.(\d{1,4})(?:\.\d{1,4})?$")
_CURRENT_MINOR = int(p.PROTOCOL_VERSION.split(".")[1])
# CopilotKit's name for the legacy interrupt event, and for its answer in forwardedProps.
LEGACY_INTERRUPT = "on_interrupt"


def negotiate(run_input: p.RunAgentInput) -> tuple[Dialect, p.RunAgentInput]:
    """The dialect an input's declaration asks for, and the input in 1.0 terms.

    Raises VALIDATION_ERROR, before any event, for a version the gateway does not speak.
    """
    declared = run_input.protocol_version
    if declared is None:
        return Dialect.LEGACY, legacy_answer(run_input)
    match = _VERSION.match(declared)
    if match is None:
        raise p.GatewayError(
            p.ErrorCode.VALIDATION_ERROR,
            f"protocolVersion {declared!r} is not a version: declare MAJOR.MINOR, "
            f'"{p.PROTOCOL_VERSION}" for AG-UI 1.0, or leave it out for a 0.0.x client.',
        )
    major, minor = int(match[1]), int(match[2])
    if major == 0:
        return Dialect.LEGACY, legacy_answer(run_input)
    if major != 1:
        raise p.GatewayError(
            p.ErrorCode.VALIDATION_ERROR,
            f"protocolVersion {declared!r} is AG-UI {major}.x, which this gateway does not "
            f'speak: it speaks {p.PROTOCOL_VERSION}. Declare "{p.PROTOCOL_VERSION}", or use '
            "a client of the 1.x line.",
        )
    if minor > _CURRENT_MINOR:
        # A newer minor only adds what older parties may skip: served, as the spec asks.
        log.info("a client declares AG-UI %s; serving %s", declared, p.PROTOCOL_VERSION)
    return Dialect.CURRENT, run_input


def legacy_answer(run_input: p.RunAgentInput) -> p.RunAgentInput:
    """A legacy interrupt answer (``forwardedProps.command``) as the ``resume`` it means.

    CopilotKit answers an ``on_interrupt`` event with ``{"command": {"resume": <payload>,
    "interruptEvent": <the event's value>}}``; the value is the Interrupt, so its id names
    the interrupt, and the approval rules read the payload as they read a 1.0 answer.
    """
    command = run_input.forwarded("command")
    if run_input.resume or "resume" not in command:
        return run_input
    asked = command.get("interruptEvent")
    interrupt_id = asked.get("id") if isinstance(asked, dict) else None
    try:
        entry = msgspec.convert(
            {"interruptId": interrupt_id, "status": "resolved", "payload": command["resume"]},
            p.ResumeEntry,
        )
    except msgspec.ValidationError:
        raise p.GatewayError(
            p.ErrorCode.VALIDATION_ERROR,
            "forwardedProps.command.resume answers an interrupt, but "
            "forwardedProps.command.interruptEvent is not the on_interrupt event's value "
            "(an object with the interrupt's id); send it back as it came.",
        ) from None
    return msgspec.structs.replace(run_input, resume=[entry])


class _LegacyRunStarted(p.Event, tag="RUN_STARTED"):
    """RUN_STARTED as 0.0.x knows it: from before the stream declared a version."""

    thread_id: str
    run_id: str
    parent_run_id: str | None = None


def shaped(event: p.Event, dialect: Dialect) -> tuple[p.Event, ...]:
    """The events ``event`` is sent as to a client of ``dialect``: itself, for 1.x."""
    if dialect is Dialect.CURRENT or type(event) not in _DOWNGRADES:
        return (event,)
    downgrade: Callable[[Any], tuple[p.Event, ...]] = _DOWNGRADES[type(event)]
    return downgrade(event)


def encoded(event: p.Event, dialect: Dialect) -> list[tuple[p.Event, bytes]]:
    """The events ``event`` is sent as, each with its encoding."""
    if dialect is Dialect.CURRENT or type(event) not in _DOWNGRADES:
        return [(event, p.encode(event))]  # every event of a run but a few: no call more
    return [(one, p.encode(one)) for one in shaped(event, dialect)]


def _run_started(event: p.RunStarted) -> tuple[p.Event, ...]:
    legacy = _LegacyRunStarted(
        thread_id=event.thread_id,
        run_id=event.run_id,
        parent_run_id=event.parent_run_id,
        metadata=event.metadata,  # its number in the thread's log: 0.0.x reads metadata too
    )
    return (legacy,)


def _run_finished(event: p.RunFinished) -> tuple[p.Event, ...]:
    outcome = event.outcome
    if isinstance(outcome, p.SuccessOutcome) and outcome.pending_tool_call_ids is not None:
        return (msgspec.structs.replace(event, outcome=p.SuccessOutcome()),)
    if isinstance(outcome, p.CancelledOutcome):
        log.info("run %s: a 0.0.x client is not told the run was cancelled", event.run_id)
        return (msgspec.structs.replace(event, outcome=None),)
    if isinstance(outcome, p.InterruptOutcome) and outcome.interrupts:
        # The legacy flow answers one interrupt; the rest are asked again when it is answered.
        asked = p.Custom(name=LEGACY_INTERRUPT, value=msgspec.to_builtins(outcome.interrupts[0]))
        return (asked, event)
    return (event,)


def _tool_call_result(event: p.ToolCallResult) -> tuple[p.Event, ...]:
    if isinstance(event.content, str):
        return (event,)
    return (msgspec.structs.replace(event, content=_as_text(event.content, event.tool_call_id)),)


def _messages_snapshot(event: p.MessagesSnapshot) -> tuple[p.Event, ...]:
    return (msgspec.structs.replace(event, messages=[_message(m) for m in event.messages]),)


def _message(message: p.Message) -> p.Message:
    if isinstance(message, p.ToolMessage) and not isinstance(message.content, str):
        return msgspec.structs.replace(message, content=_as_text(message.content, message.id))
    if isinstance(message, p.UserMessage) and not isinstance(message.content, str):
        kept = [part for part in message.content if _named_by_legacy(part)]
        if len(kept) < len(message.content):
            log.warning(
                "message %s: a 0.0.x client is sent its text and url/data media", message.id
            )
            return msgspec.structs.replace(message, content=kept)
    return message


def _named_by_legacy(part: p.ContentPart) -> bool:
    """Whether 0.0.x's schema reads the part: text, or media from inline data or a URL."""
    if isinstance(part, p.TextPart):
        return True
    source: dict[str, Any] = part.source
    kind, value = source.get("type"), source.get("value")
    if not isinstance(value, str):
        return False
    return kind == "url" or (kind == "data" and isinstance(source.get("mimeType"), str))


def _as_text(content: list[p.ContentPart], where: str) -> str:
    if any(not isinstance(part, p.TextPart) for part in content):
        log.warning("%s: a 0.0.x client is sent only the text of a tool result", where)
    return p.text_of(content)


_DOWNGRADES: dict[type[p.Event], Callable[[Any], tuple[p.Event, ...]]] = {
    p.RunStarted: _run_started,
    p.RunFinished: _run_finished,
    p.ToolCallResult: _tool_call_result,
    p.MessagesSnapshot: _messages_snapshot,
}
