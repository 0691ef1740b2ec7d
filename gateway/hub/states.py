"""A thread's life: its states in one table, and how a run's end moves it.

Theory of operation. A thread is an ADK session. Its life is one table, in ``TRANSITIONS``:

    IDLE        --user message-->                  RUNNING
    IDLE        --cut-off reply asked for again--> RUNNING (a restart's, ``finish_cut_off``)
    IDLE        --answered approval resumed-->     RUNNING (a restart's, ``finish_cut_off``:
                                                   a person's answer not acted on yet)
    RUNNING     --run ended, nothing open-->       IDLE
    RUNNING     --run ended, browser calls open--> AWAITING_CLIENT
    RUNNING     --run ended, approval asked-->     AWAITING_APPROVAL
    RUNNING     --cancel or failure-->             IDLE (a cancel answers the calls it left
                                                   open; a failure that left calls open
                                                   ends as a run that asked them does)
    AWAITING_*  --every open item answered or expired--> RUNNING (the paused invocation
                                                   resumes)
    AWAITING_*  --some answered-->                 AWAITING_* (the answers wait for the rest)
    AWAITING_*  --user message-->                  RUNNING (open items closed as superseded)

Who fires what. Planning (``gateway.hub.planning``) checks an input against the state it
reads from the stored thread (``thread_state``) and fires the move into RUNNING, or
``some answered``; the hub fires ``every open item answered`` for browser calls it
expires, and ``asked for again`` or ``resumed`` for a run a restart cut off. The driver
(``gateway.hub.driving``) fires the move out of RUNNING when the run ends, by how it
ended (``run_ended``). A run that runs no agent (answers that wait for the rest, or an
input with nothing new) fires nothing when it ends: it only reports what the thread
still waits for, and the thread stays where planning found it. Each run keeps the state
it leaves its thread in (``Run.thread_state``), and its last log line says it.

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
    ASKED_AGAIN = "cut-off reply asked for again"
    RESUMED = "answered approval resumed"
    ALL_ANSWERED = "every open item answered"
    SOME_ANSWERED = "some open items answered"
    ENDED_IDLE = "run ended, nothing open"
    ENDED_CLIENT = "run ended, browser calls open"
    ENDED_APPROVAL = "run ended, approval asked"
    STOPPED = "cancel or failure"


_AWAITING = (ThreadState.AWAITING_CLIENT, ThreadState.AWAITING_APPROVAL)
TRANSITIONS: dict[tuple[ThreadState, Trigger], ThreadState] = {
    (ThreadState.IDLE, Trigger.USER_MESSAGE): ThreadState.RUNNING,
    (ThreadState.IDLE, Trigger.ASKED_AGAIN): ThreadState.RUNNING,
    (ThreadState.IDLE, Trigger.RESUMED): ThreadState.RUNNING,
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


def run_ended(*, cancelled: bool, failed: bool, approvals: bool, browser_calls: bool) -> Trigger:
    """How a run that ran the agent ended, by what it leaves its thread waiting on.

    A cancel answers every call the run left open, so nothing waits; a failure leaves
    open what the run asked, as a run that ends does. An approval outranks browser calls,
    as in ``thread_state``.
    """
    if cancelled:
        return Trigger.STOPPED
    if approvals:
        return Trigger.ENDED_APPROVAL
    if browser_calls:
        return Trigger.ENDED_CLIENT
    return Trigger.STOPPED if failed else Trigger.ENDED_IDLE
