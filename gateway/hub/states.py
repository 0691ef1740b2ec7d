"""A thread's life: its states in one table, and the calls it waits on.

Theory of operation. A thread is an ADK session. Its life is one table, in ``TRANSITIONS``:

    IDLE             --user message-->           RUNNING
    RUNNING          --run ends, nothing open--> IDLE
    RUNNING          --browser calls open-->     AWAITING_CLIENT
    RUNNING          --approval asked-->         AWAITING_APPROVAL
    RUNNING          --cancel or failure-->      IDLE
    AWAITING_*       --every open item answered or expired--> RUNNING (the paused
                                                   invocation resumes)
    AWAITING_*       --some answered-->          AWAITING_* (the answers wait for the rest)
    AWAITING_*       --user message-->           RUNNING (open items closed as superseded)

Only RUNNING lives in memory; what a thread awaits is read from its stored events, so a
restart loses nothing.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any

from google.adk.events import Event as AdkEvent
from google.adk.sessions import Session

from gateway import wire as p
from gateway.context import event_metadata
from gateway.translate.translator import CONFIRMATION_CALL


class ThreadState(enum.Enum):
    IDLE = "idle"
    RUNNING = "running"
    AWAITING_CLIENT = "awaiting_client"
    AWAITING_APPROVAL = "awaiting_approval"


class Trigger(enum.Enum):
    USER_MESSAGE = "user message"
    ALL_ANSWERED = "every open item answered"
    SOME_ANSWERED = "some open items answered"
    ENDED_IDLE = "run ended, nothing open"
    ENDED_CLIENT = "run ended, browser calls open"
    ENDED_APPROVAL = "run ended, approval asked"
    STOPPED = "cancel or failure"


_AWAITING = (ThreadState.AWAITING_CLIENT, ThreadState.AWAITING_APPROVAL)
TRANSITIONS: dict[tuple[ThreadState, Trigger], ThreadState] = {
    (ThreadState.IDLE, Trigger.USER_MESSAGE): ThreadState.RUNNING,
    (ThreadState.RUNNING, Trigger.ENDED_IDLE): ThreadState.IDLE,
    (ThreadState.RUNNING, Trigger.ENDED_CLIENT): ThreadState.AWAITING_CLIENT,
    (ThreadState.RUNNING, Trigger.ENDED_APPROVAL): ThreadState.AWAITING_APPROVAL,
    (ThreadState.RUNNING, Trigger.STOPPED): ThreadState.IDLE,
    **{(state, Trigger.ALL_ANSWERED): ThreadState.RUNNING for state in _AWAITING},
    **{(state, Trigger.SOME_ANSWERED): state for state in _AWAITING},
    **{(state, Trigger.USER_MESSAGE): ThreadState.RUNNING for state in _AWAITING},
}


def transition(state: ThreadState, trigger: Trigger) -> ThreadState:
    try:
        return TRANSITIONS[(state, trigger)]
    except KeyError:
        raise p.GatewayError(
            p.ErrorCode.VALIDATION_ERROR,
            f"A thread that is {state.value} cannot take a {trigger.value}.",
        ) from None


# --- what a thread awaits ------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class OpenCall:
    """A long-running call without a response: a browser tool, or an approval request."""

    call_id: str
    name: str
    invocation_id: str
    asked_at: float
    args: dict[str, Any]
    # The client instance whose input started the run that made the call (``?clientId=``).
    client: str | None = None

    @property
    def is_approval(self) -> bool:
        return self.name == CONFIRMATION_CALL

    def approved_call(self) -> dict[str, Any]:
        """For an approval: the call it guards (``{"id", "name", "args"}``)."""
        original: dict[str, Any] = self.args.get("originalFunctionCall") or {}
        return original

    def asked_confirmation(self) -> dict[str, Any]:
        """For an approval: what the tool asked, ADK's ``ToolConfirmation`` (hint, payload)."""
        asked: dict[str, Any] = self.args.get("toolConfirmation") or {}
        return asked


def open_calls(session: Session | None) -> dict[str, OpenCall]:
    """Long-running calls in the thread that have no response yet, in call order."""
    found: dict[str, OpenCall] = {}
    for event in session.events if session else ():
        for call in event.get_function_calls():
            if call.id and call.id in (event.long_running_tool_ids or ()):
                found[call.id] = OpenCall(
                    call.id,
                    call.name or "",
                    event.invocation_id,
                    event.timestamp,
                    call.args or {},
                    _client_of(event),
                )
        for response in event.get_function_responses():
            if response.id:
                found.pop(response.id, None)
    return found


def _client_of(event: AdkEvent) -> str | None:
    client = event_metadata(event).get("client")
    return client if isinstance(client, str) else None


def answered_calls(session: Session | None) -> set[str]:
    return {
        response.id
        for event in (session.events if session else ())
        for response in event.get_function_responses()
        if response.id
    }


def thread_state(open_items: dict[str, OpenCall]) -> ThreadState:
    if any(call.is_approval for call in open_items.values()):
        return ThreadState.AWAITING_APPROVAL
    return ThreadState.AWAITING_CLIENT if open_items else ThreadState.IDLE
