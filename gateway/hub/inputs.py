"""Reading an input: what a RunAgentInput brings that is new to its thread.

An input brings one of two things: a new turn (the user's message, or a press on an A2UI
surface, ``forwardedProps.a2uiAction``), or answers to the calls the thread waits on (a
browser's tool results, a person's approval answers through ``resume``). Answers to calls
already answered become notices; answers to calls that were never open are a
VALIDATION_ERROR.
"""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

import msgspec

from gateway import wire as p
from gateway.a2ui import actions
from gateway.adk import approvals
from gateway.hub.open_calls import OpenCall
from gateway.wire import bounds
from gateway.wire.notices import notice


@dataclasses.dataclass(frozen=True)
class NewTurn:
    """The user's message, or a press on a surface (``action``), which the model reads as
    ``text`` and which streams and is kept under ``message_id``."""

    message_id: str
    text: str
    action: p.UserAction | None = None


@dataclasses.dataclass(frozen=True)
class Answers:
    """Responses for open calls, keyed by call id, and notices about ignored ones."""

    responses: dict[str, dict[str, Any]]
    tool_messages: dict[str, p.ToolMessage]
    notices: list[p.Event]
    # The approval answers not taken as sent, by interrupt id: the code of their notice.
    overruled: dict[str, str] = dataclasses.field(default_factory=dict)


def read_input(
    run_input: p.RunAgentInput,
    open_items: dict[str, OpenCall],
    answered: set[str],
    approval_timeout: float,
    now: float,
) -> NewTurn | Answers:
    """Finds what is new in an input: the user's message, results, or approval answers.

    AG-UI clients resend the whole conversation; the thread's store is the truth, so only
    ``resume``, a press on a surface, the trailing user message or the trailing run of tool
    messages is read.
    """
    if (action := p.user_action(run_input)) is not None:
        if run_input.resume:
            raise p.GatewayError(
                p.ErrorCode.VALIDATION_ERROR,
                "An input carries either a press on a surface (forwardedProps.a2uiAction) or"
                " answers to interrupts (resume), not both: send them one at a time.",
            )
        return NewTurn(f"a2ui-action-{uuid.uuid4().hex[:12]}", actions.told(action), action)
    if run_input.resume:
        return read_resume(run_input.resume, open_items, answered, approval_timeout, now)
    if not run_input.messages:
        raise p.GatewayError(
            p.ErrorCode.VALIDATION_ERROR,
            "RunAgentInput.messages is empty: send the user's message, a tool result or resume.",
        )
    last = run_input.messages[-1]
    if isinstance(last, p.UserMessage):
        return NewTurn(message_id=last.id, text=p.text_of(last.content))
    if not isinstance(last, p.ToolMessage):
        raise p.GatewayError(
            p.ErrorCode.VALIDATION_ERROR,
            f"The last message (id {last.id!r}) must be a user message or a tool result.",
        )
    answers = Answers({}, {}, [])
    for index in p.trailing_tool_messages(run_input.messages):
        message = run_input.messages[index]
        assert isinstance(message, p.ToolMessage)
        call_id = message.tool_call_id
        if call_id in open_items and not open_items[call_id].is_approval:
            answers.responses[call_id] = tool_response(message)
            answers.tool_messages[call_id] = message
        elif call_id in answered:
            answers.notices.append(
                notice(
                    "TOOL_RESULT_IGNORED",
                    f"Tool call {call_id!r} was already answered; this result was ignored.",
                )
            )
        else:
            raise p.GatewayError(
                p.ErrorCode.VALIDATION_ERROR,
                f"Tool message {message.id!r}: toolCallId {call_id!r} is not a tool call "
                f"waiting for a result on thread {run_input.thread_id!r}.",
            )
    return answers


def starts_turn(run_input: p.RunAgentInput) -> bool:
    """Whether the input brings a new user message or a press on a surface (rather than
    answers to open calls)."""
    if run_input.resume:
        return False
    messages = run_input.messages
    pressed = p.user_action(run_input) is not None
    return pressed or (bool(messages) and isinstance(messages[-1], p.UserMessage))


def needed_part(run_input: p.RunAgentInput) -> p.RunAgentInput:
    """The input with only the messages ``read_input`` reads: the history a client resends
    is not kept while the input waits its turn."""
    messages = run_input.messages
    # The trailing tool messages, or else the last message.
    first = min(p.trailing_tool_messages(messages).start, len(messages) - 1)
    if first <= 0:
        return run_input
    return msgspec.structs.replace(run_input, messages=messages[first:])


def read_resume(
    entries: list[p.ResumeEntry],
    open_items: dict[str, OpenCall],
    answered: set[str],
    approval_timeout: float,
    now: float,
) -> Answers:
    """A person's approval answers (a typed run's ``resume``, a live turn's ``liveResume``)
    as the confirmations their calls are given; expired or repeated ones as notices."""
    answers = Answers({}, {}, [])
    for entry in entries:
        call = open_items.get(entry.interrupt_id)
        if call is None or not call.is_approval:
            if entry.interrupt_id in answered:
                code = answers.overruled[entry.interrupt_id] = "INTERRUPT_ALREADY_ANSWERED"
                answers.notices.append(
                    notice(
                        code,
                        f"Interrupt {entry.interrupt_id!r} was already answered; "
                        "this answer was ignored.",
                    )
                )
                continue
            raise p.GatewayError(
                p.ErrorCode.VALIDATION_ERROR,
                f"resume: interruptId {entry.interrupt_id!r} is not an open interrupt.",
            )
        approved, reason = _approval_of(entry)
        if approved and now > call.asked_at + approval_timeout:
            approved, reason = False, "the approval expired"
            code = answers.overruled[entry.interrupt_id] = "INTERRUPT_EXPIRED"
            answers.notices.append(
                notice(
                    code,
                    f"Interrupt {entry.interrupt_id!r} expired; it was resolved as rejected.",
                )
            )
        answer = entry.payload if isinstance(entry.payload, dict) else {}
        asked_for = call.asked_confirmation().get("payload")
        answers.responses[call.call_id] = approvals.confirmation(
            entry.interrupt_id, approved, reason, answer, asked_for
        )
    return answers


def _approval_of(entry: p.ResumeEntry) -> tuple[bool, str]:
    if entry.status == "cancelled":
        return False, "the user cancelled"
    payload = entry.payload
    if not isinstance(payload, dict) or not isinstance(payload.get("approved"), bool):
        raise p.GatewayError(
            p.ErrorCode.VALIDATION_ERROR,
            f"resume: interrupt {entry.interrupt_id!r} needs payload "
            '{"approved": true|false, "reason"?: string, "payload"?: ...}.',
        )
    return payload["approved"], str(payload.get("reason") or "")


def tool_response(message: p.ToolMessage) -> dict[str, Any]:
    """The browser's account, verbatim: its JSON object, or its text under ``result``.

    ``protocol.decode_input`` has checked the JSON is within ``gateway.wire.bounds``.
    """
    text = p.text_of(message.content)
    try:
        value = bounds.parse_json(text)
    except ValueError:
        value = text
    response = value if isinstance(value, dict) else {"result": value}
    if message.error:
        response = {**response, "error": message.error}
    return response
