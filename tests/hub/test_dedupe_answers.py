"""An answer sent twice runs once (``gateway.hub.dedupe``, ``gateway.hub.inputs``): a
browser's tool result or a person's approval that resumed the thread, sent again after it
ran, neither resumes the thread again nor asks the model again. Sent again with its runId
(a client cut off before it saw the run begin), the store finds its run (the answers a run
began with are stamped and indexed as a message is): RUN_DEDUPED, and the thread as a
reattach shows it. Under another runId (CopilotKit's ``useInterrupt`` resumes under the
interrupted run's runId; a client that makes a new one), the thread's ledger of answered
calls absorbs it: a notice, and no model call."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.agui import (
    AgUiSocket,
    new_id,
    outcome,
    resume,
    text_of,
    tool_answer,
    tool_calls,
    user_input,
)
from tests.support.approvals import APPROVE
from tests.support.dedupe import stored, told_deduped
from tests.support.first_events import replied
from tests.support.flagship import FLAGSHIP, MOVED
from tests.support.servers import RunningGateway, running_gateway

pytestmark = pytest.mark.server

NAVIGATED = {"status": "navigated", "message": "ok"}
APPROVED = {"approved": True}


def notices(events: list[dict[str, Any]]) -> list[str]:
    return [e["value"]["code"] for e in events if e["type"] == "CUSTOM"]


def replies(messages: list[dict[str, Any]], text: str) -> int:
    """How many of the thread's replies say ``text``: one per time the model was asked."""
    return len([m for m in messages if m["role"] == "assistant" and m.get("content") == text])


async def paused_on_the_browser(ws: AgUiSocket, thread: str) -> str:
    """The flagship's first run: the id of the navigateToScreen call it waits on."""
    first = await ws.run(user_input(thread, FLAGSHIP))
    [navigate] = tool_calls(first, "navigateToScreen")
    assert outcome(first) == {"type": "success", "pendingToolCallIds": [navigate["id"]]}
    return str(navigate["id"])


# Found in the thread its claim read, or, with a window of 2 events, through the index.
@pytest.mark.parametrize("window", [24, 2])
async def test_a_browser_result_sent_again_with_its_run_id_is_not_run_again(
    tmp_path: Path, window: int
) -> None:
    thread = new_id("t")
    async with running_gateway(db=str(tmp_path / "threads.db"), history_window=window) as gateway:
        async with gateway.socket() as ws:
            call_id = await paused_on_the_browser(ws, thread)
            answered = tool_answer(thread, [(call_id, NAVIGATED)])
            ran = await ws.run(answered)
            assert text_of(ran) == MOVED
            told = await ws.run(answered)
            told_deduped(told, answered["runId"])
            assert MOVED in replied(await ws.until_end())
        messages = await stored(gateway, thread)
    assert [m["toolCallId"] for m in messages if m["role"] == "tool"].count(call_id) == 1
    assert replies(messages, MOVED) == 1


async def test_a_browser_result_sent_again_under_a_new_run_id_is_ignored(
    gateway: RunningGateway,
) -> None:
    thread = new_id("t")
    async with gateway.socket() as ws:
        call_id = await paused_on_the_browser(ws, thread)
        assert text_of(await ws.run(tool_answer(thread, [(call_id, NAVIGATED)]))) == MOVED
        again = await ws.run(tool_answer(thread, [(call_id, NAVIGATED)]))
    assert notices(again) == ["TOOL_RESULT_IGNORED"] and not text_of(again)
    assert replies(await stored(gateway, thread), MOVED) == 1


@pytest.mark.parametrize("under", ["its own", "the interrupted run's"])
async def test_an_approval_sent_again_is_not_run_again(gateway: RunningGateway, under: str) -> None:
    thread = new_id("t")
    async with gateway.socket() as ws:
        asked = user_input(thread, APPROVE)
        [interrupt] = outcome(await ws.run(asked))["interrupts"]
        answer = resume(thread, interrupt["id"], payload=APPROVED)
        if under == "the interrupted run's":  # CopilotKit's useInterrupt
            answer["runId"] = asked["runId"]
        ran = await ws.run(answer)
        reply = text_of(ran)
        assert "승인했습니다" in reply
        again = await ws.run(answer)
        if under == "its own":
            told_deduped(again, answer["runId"])
            assert reply in replied(await ws.until_end())
        else:
            assert notices(again) == ["INTERRUPT_ALREADY_ANSWERED"] and not text_of(again)
    assert replies(await stored(gateway, thread), reply) == 1
