"""Issue 26, item 1: an agent's own long-running tool (ADK's human-in-the-loop pattern), over
/ws and SSE, answered by the thread's owner with a tool message.

The agent is ``tests.support.dojo.long_running``: ``ask_for_approval`` opens a ticket and
answers ``{"status": "pending", "ticketId"}`` at once; the manager's decision comes later.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from tests.support.agui import (
    new_id,
    outcome,
    snapshot_of,
    text_of,
    tool_answer,
    tool_calls,
    user_input,
)
from tests.support.budgets import scaled
from tests.support.dojo.long_running import build_agent
from tests.support.servers import RunningGateway, post_run, running_gateway

pytestmark = pytest.mark.server

ASK = "reimburse 500 for a conference trip"
APPROVED = {"status": "approved", "by": "manager"}


@pytest.fixture(scope="module")
async def gateway() -> AsyncIterator[RunningGateway]:
    async with running_gateway(agent=build_agent()) as running:
        yield running


def results(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == "TOOL_CALL_RESULT"]


def streamed_args(events: list[dict[str, Any]], call_id: str) -> str:
    return "".join(
        e["delta"] for e in events if e["type"] == "TOOL_CALL_ARGS" and e["toolCallId"] == call_id
    )


def ask(thread: str) -> dict[str, Any]:
    return user_input(thread, ASK, tools=[])


async def test_the_call_and_its_pending_result_stream_and_the_run_waits(
    gateway: RunningGateway,
) -> None:
    async with gateway.socket() as ws:
        events = await ws.run(ask(new_id("t")))
    [call] = tool_calls(events, "ask_for_approval")
    assert call["args"] == {"purpose": "a conference trip", "amount": "500"}
    [interim] = results(events)
    assert interim["toolCallId"] == call["id"]
    assert json.loads(interim["content"])["status"] == "pending"
    assert json.loads(interim["content"])["ticketId"] == f"ticket-{call['id']}"
    # The model is not asked about "pending": the run ends waiting for the final result.
    assert text_of(events) == ""
    assert outcome(events) == {"type": "success", "pendingToolCallIds": [call["id"]]}


async def test_the_owners_result_resumes_the_invocation_once(gateway: RunningGateway) -> None:
    thread = new_id("t")
    async with gateway.socket() as ws:
        [call] = tool_calls(await ws.run(ask(thread)), "ask_for_approval")
        resumed = await ws.run(tool_answer(thread, [(call["id"], APPROVED)], tools=[]))
        assert text_of(resumed) == "Paid 500 for a conference trip."
        assert [c["name"] for c in tool_calls(resumed)] == ["reimburse"]
        assert outcome(resumed) == {"type": "success"}
        again = await ws.run(tool_answer(thread, [(call["id"], APPROVED)], tools=[]))
    notices = [e for e in again if e["type"] == "CUSTOM"]
    assert [n["value"]["code"] for n in notices] == ["TOOL_RESULT_IGNORED"]
    assert text_of(again) == "" and not tool_calls(again), "no second resume"


async def test_a_rejected_ticket_reaches_the_model(gateway: RunningGateway) -> None:
    thread = new_id("t")
    async with gateway.socket() as ws:
        [call] = tool_calls(await ws.run(ask(thread)), "ask_for_approval")
        rejected = {"status": "rejected", "reason": "over budget"}
        resumed = await ws.run(tool_answer(thread, [(call["id"], rejected)], tools=[]))
    assert text_of(resumed) == "The manager did not approve it (rejected)."


async def test_a_reattach_shows_what_the_live_page_showed(gateway: RunningGateway) -> None:
    thread = new_id("t")
    async with gateway.socket() as ws:
        live = await ws.run(ask(thread))
    async with gateway.socket() as again:
        reattached = await again.run({"type": "reattach", "threadId": thread})
    messages = snapshot_of(reattached)
    [call] = tool_calls(live)
    [interim] = results(live)
    [assistant] = [m for m in messages if m["role"] == "assistant"]
    assert assistant["toolCalls"] == [
        {
            "id": call["id"],
            "type": "function",
            "function": {"name": call["name"], "arguments": streamed_args(live, call["id"])},
        }
    ]
    [tool] = [m for m in messages if m["role"] == "tool"]
    assert tool == {
        "id": interim["messageId"],
        "role": "tool",
        "toolCallId": call["id"],
        "content": interim["content"],
    }
    # The idle thread says what it waits for, as the live run's end did.
    assert outcome(reattached) == outcome(live)
    # And the same in /history, which a reload reads.
    async with httpx.AsyncClient(timeout=scaled(10)) as client:
        page = await client.get(
            f"{gateway.http}/history?threadId={thread}", headers={"X-Gateway-User": "demo"}
        )
    assert [m for m in page.json()["messages"] if m["role"] != "user"] == [assistant, tool]


async def test_no_tab_is_told_to_execute_the_agents_own_call(gateway: RunningGateway) -> None:
    thread = new_id("t")
    async with gateway.socket(query="&clientId=tab-1") as ws:
        live = await ws.run(ask(thread))
    async with gateway.socket(query="&clientId=tab-1") as again:
        reattached = await again.run({"type": "reattach", "threadId": thread})
    # The tab that started the run sees the call as everyone does: no executor's list.
    assert [e for e in live + reattached if e["type"] == "CUSTOM"] == []
    assert outcome(reattached)["pendingToolCallIds"] == [tool_calls(live)[0]["id"]]


async def test_another_user_cannot_answer_the_call(gateway: RunningGateway) -> None:
    thread = new_id("t")
    async with gateway.socket() as ws:
        [call] = tool_calls(await ws.run(ask(thread)), "ask_for_approval")
    async with gateway.socket(user="mallory") as other:
        error = await other.refused(tool_answer(thread, [(call["id"], APPROVED)], tools=[]))
    assert error["code"] == "ACCESS_DENIED"
    async with gateway.socket() as ws:
        resumed = await ws.run(tool_answer(thread, [(call["id"], APPROVED)], tools=[]))
    assert text_of(resumed) == "Paid 500 for a conference trip.", "the call stayed open"


async def test_a_new_message_closes_the_call_and_a_late_result_is_ignored(
    gateway: RunningGateway,
) -> None:
    thread = new_id("t")
    async with gateway.socket() as ws:
        [call] = tool_calls(await ws.run(ask(thread)), "ask_for_approval")
        moved_on = await ws.run(user_input(thread, "never mind", tools=[]))
        assert outcome(moved_on) == {"type": "success"}
        late = await ws.run(tool_answer(thread, [(call["id"], APPROVED)], tools=[]))
    assert [e["value"]["code"] for e in late if e["type"] == "CUSTOM"] == ["TOOL_RESULT_IGNORED"]
    assert text_of(late) == ""


async def test_over_sse_the_same(gateway: RunningGateway) -> None:
    thread = new_id("t")
    status, _, first, _ = await post_run(gateway, ask(thread))
    assert status == 200
    [call] = tool_calls(first, "ask_for_approval")
    assert json.loads(results(first)[0]["content"])["status"] == "pending"
    assert outcome(first) == {"type": "success", "pendingToolCallIds": [call["id"]]}
    status, _, resumed, _ = await post_run(
        gateway, tool_answer(thread, [(call["id"], APPROVED)], tools=[])
    )
    assert status == 200
    assert text_of(resumed) == "Paid 500 for a conference trip."


async def test_the_call_waits_past_the_browser_tools_timeout() -> None:
    """A ticket a person decides takes as long as it takes: only browser calls expire."""
    timeout = scaled(0.3)
    async with running_gateway(agent=build_agent(), client_tool_timeout=timeout) as gateway:
        thread = new_id("t")
        async with gateway.socket() as ws:
            [call] = tool_calls(await ws.run(ask(thread)), "ask_for_approval")
            await asyncio.sleep(timeout * 4)
            resumed = await ws.run(tool_answer(thread, [(call["id"], APPROVED)], tools=[]))
    assert text_of(resumed) == "Paid 500 for a conference trip."
