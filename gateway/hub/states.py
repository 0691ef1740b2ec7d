"""A thread's life: its states in one table.

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

import enum

from gateway import wire as p
from gateway.hub.open_calls import OpenCall


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


def thread_state(open_items: dict[str, OpenCall]) -> ThreadState:
    if any(call.is_approval for call in open_items.values()):
        return ThreadState.AWAITING_APPROVAL
    return ThreadState.AWAITING_CLIENT if open_items else ThreadState.IDLE
