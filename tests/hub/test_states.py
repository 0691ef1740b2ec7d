"""A thread's life is one table (``gateway.hub.states``), and the runs keep to it.

First the table alone, with no server and no model: every trigger moves a thread
somewhere, and how a run ends leaves its thread where a read of its stored calls would
find it. Then the real hub of the session's gateway, where each run keeps the state it
leaves its thread in: waiting on the browser, idle once answered, where it was after an
input that runs no agent, waiting on a person, idle after a cancel.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from typing import Any

import pytest

from gateway import wire as p
from gateway.hub.hub import Hub
from gateway.hub.open_calls import OpenCall
from gateway.hub.states import (
    TRANSITIONS,
    ThreadState,
    Trigger,
    run_ended,
    thread_state,
    transition,
)
from gateway.hub.threads import Run
from gateway.translate.translator import CONFIRMATION_CALL
from tests.support.agui import new_id, tool_answer, user_input
from tests.support.approvals import APPROVE
from tests.support.flagship import FLAGSHIP
from tests.support.servers import RunningGateway

pytestmark = pytest.mark.unit

INTRO = "자기소개를 길게 해 주세요"  # a long streamed reply, to cancel mid-way

BROWSER_CALL = OpenCall("call-1", "navigateToScreen", "inv-1", 0.0, {})
APPROVAL = OpenCall("call-2", CONFIRMATION_CALL, "inv-1", 0.0, {})


# --- the table ------------------------------------------------------------------------------


def test_every_trigger_moves_a_thread_somewhere() -> None:
    assert {trigger for _, trigger in TRANSITIONS} == set(Trigger)


def test_a_move_the_table_does_not_hold_is_refused() -> None:
    with pytest.raises(p.GatewayError) as refused:
        transition(ThreadState.IDLE, Trigger.ALL_ANSWERED)
    assert refused.value.code is p.ErrorCode.VALIDATION_ERROR


@pytest.mark.parametrize("failed", [False, True], ids=["ended", "failed"])
@pytest.mark.parametrize(
    "left_open", [[], [BROWSER_CALL], [APPROVAL], [BROWSER_CALL, APPROVAL]], ids=repr
)
def test_a_run_ends_in_the_state_its_open_calls_say(
    left_open: list[OpenCall], failed: bool
) -> None:
    ending = run_ended(
        cancelled=False,
        failed=failed,
        approvals=any(call.is_approval for call in left_open),
        browser_calls=any(not call.is_approval for call in left_open),
    )
    stored = thread_state({call.call_id: call for call in left_open})
    assert transition(ThreadState.RUNNING, ending) is stored


def test_a_cancelled_run_leaves_its_thread_idle() -> None:
    """A cancel answers every call the run left open (``Driver._seal``)."""
    for failed, approvals, browser_calls in itertools.product([False, True], repeat=3):
        ending = run_ended(
            cancelled=True, failed=failed, approvals=approvals, browser_calls=browser_calls
        )
        assert transition(ThreadState.RUNNING, ending) is ThreadState.IDLE


# --- runs of the hub --------------------------------------------------------------------------


async def ran(hub: Hub, run_input: dict[str, Any]) -> Run:
    run = await hub.start("demo", p.decode_input(json.dumps(run_input)), None)
    await asyncio.wait_for(run.done.wait(), 15)
    return run


@pytest.mark.server
async def test_each_run_leaves_its_thread_in_the_state_the_table_moves_it_to(
    gateway: RunningGateway,
) -> None:
    hub = gateway.app.hub
    assert hub is not None
    thread = new_id("t")
    asked = await ran(hub, user_input(thread, FLAGSHIP))
    assert asked.thread_state is ThreadState.AWAITING_CLIENT
    [first_call] = asked.translator.pending
    answered = await ran(hub, tool_answer(thread, [(first_call, {"status": "navigated"})]))
    assert answered.thread_state is ThreadState.IDLE
    asked_again = await ran(hub, user_input(thread, FLAGSHIP))
    [second_call] = asked_again.translator.pending
    # A result sent twice brings nothing new: the run runs no agent and reports the call
    # still open, and the thread stays where it was.
    repeated = await ran(hub, tool_answer(thread, [(first_call, {"status": "navigated"})]))
    assert repeated.thread_state is ThreadState.AWAITING_CLIENT
    assert list(repeated.translator.pending) == [second_call]
    # A new message supersedes the open call; the approval it asks pauses the thread.
    approval = await ran(hub, user_input(thread, APPROVE))
    assert approval.thread_state is ThreadState.AWAITING_APPROVAL
    cancelled = await hub.start("demo", p.decode_input(json.dumps(user_input(thread, INTRO))), None)
    async with asyncio.timeout(15):
        while cancelled.streaming is None:  # its reply has begun
            await asyncio.sleep(0.005)
        assert await hub.cancel("demo", thread)
        await cancelled.done.wait()
    assert cancelled.thread_state is ThreadState.IDLE
