"""The example agents end to end: a real gateway on loopback, over /ws and over SSE.

The expenses agent: its server tool, the browser's tool answered by a tool message, and an
approval both ways. The coordinator: a hand-off to the specialist, answered in the same run,
and the next turns going where ADK sends them. Every event passes the suite's stream checker
and the official AG-UI models.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from google.adk.sessions import Session

from gateway.examples.expenses import ledger
from gateway.examples.expenses.agent import BROWSER_TOOLS
from tests.support.agui import new_id, outcome, text_of, tool_answer, tool_calls, user_input
from tests.support.processes import GATEWAY, ROOT, gateway_process, run_over_ws
from tests.support.servers import RunningGateway, post_run, running_gateway

pytestmark = pytest.mark.server

EXPENSES = "gateway.examples.expenses.agent:root_agent"
COORDINATOR = "gateway.examples.coordinator.agent"
DOORS = ["ws", "sse"]

Turn = Callable[[dict[str, Any]], Awaitable[list[dict[str, Any]]]]


@pytest.fixture(scope="module")
async def expenses() -> AsyncIterator[RunningGateway]:
    async with running_gateway(agent=EXPENSES) as running:
        yield running


@pytest.fixture(scope="module")
async def coordinator() -> AsyncIterator[RunningGateway]:
    async with running_gateway(agent=COORDINATOR) as running:
        yield running


@contextlib.asynccontextmanager
async def door(gateway: RunningGateway, kind: str, user: str) -> AsyncIterator[Turn]:
    """Runs one RunAgentInput over /ws (one connection for the test) or as one SSE POST."""
    if kind == "ws":
        async with gateway.socket(user) as ws:
            yield ws.run
        return

    async def post(frame: dict[str, Any]) -> list[dict[str, Any]]:
        status, _, events, _ = await post_run(gateway, frame, user=user)
        assert status == 200, events
        return events

    yield post


def said(thread: str, text: str, tools: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return user_input(thread, text, tools=tools or [])


def resume(thread: str, interrupt_id: str, payload: dict[str, Any]) -> dict[str, Any]:
    frame = said(thread, "")
    frame["messages"] = []
    frame["resume"] = [{"interruptId": interrupt_id, "status": "resolved", "payload": payload}]
    return frame


async def session_of(gateway: RunningGateway, user: str, thread: str) -> Session:
    session = await gateway.app.hub.engine.session(user, thread)  # type: ignore[union-attr]
    assert session is not None
    return session


def submissions(session: Session) -> list[str]:
    """The expenses submit_expense really submitted in this thread, by its responses."""
    return [
        str(response.response.get("expenseId"))
        for event in session.events
        for response in event.get_function_responses()
        if response.name == "submit_expense"
        and response.response
        and response.response.get("status") == "submitted"
    ]


# --- expenses --------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", DOORS)
async def test_a_server_tool_turn_answers_from_the_tools_result(
    expenses: RunningGateway, kind: str
) -> None:
    thread = new_id("t")
    async with door(expenses, kind, new_id("u")) as run:
        events = await run(said(thread, "Show me my expenses"))
    [call] = tool_calls(events)
    assert call["name"] == "list_expenses" and call["args"] == {}
    [result] = [e for e in events if e["type"] == "TOOL_CALL_RESULT"]
    assert result["toolCallId"] == call["id"] and '"E-102"' in result["content"]
    assert text_of(events).startswith("You have 3 expenses, 521.90 EUR in all: E-101 Taxi")
    assert outcome(events) == {"type": "success"}


@pytest.mark.parametrize(
    ("kind", "status", "reply"),
    [
        ("ws", "opened", "I opened E-102 in the expense view."),
        ("sse", "opened", "I opened E-102 in the expense view."),
        ("ws", "not_found", "Your browser did not open E-102; it said: not_found."),
        ("sse", "not_found", "Your browser did not open E-102; it said: not_found."),
    ],
)
async def test_the_browser_tool_round_trip_and_the_reply_says_what_the_browser_did(
    expenses: RunningGateway, kind: str, status: str, reply: str
) -> None:
    thread = new_id("t")
    async with door(expenses, kind, new_id("u")) as run:
        asked = await run(said(thread, "Open E-102 please", BROWSER_TOOLS))
        [call] = tool_calls(asked)
        assert call["name"] == "showExpense" and call["args"] == {"expenseId": "E-102"}
        assert outcome(asked) == {"type": "success", "pendingToolCallIds": [call["id"]]}
        assert not text_of(asked)
        answered = await run(
            tool_answer(thread, [(call["id"], {"status": status})], tools=BROWSER_TOOLS)
        )
    assert text_of(answered) == reply
    assert outcome(answered) == {"type": "success"}


async def test_a_browser_that_declares_no_tool_is_never_asked_to_run_one(
    expenses: RunningGateway,
) -> None:
    async with door(expenses, "ws", new_id("u")) as run:
        events = await run(said(new_id("t"), "Open E-102 please"))
    assert tool_calls(events) == []
    assert text_of(events).startswith("I cannot open E-102 from here")


@pytest.mark.parametrize("kind", DOORS)
async def test_an_approved_submission_runs_the_tool_exactly_once(
    expenses: RunningGateway, kind: str
) -> None:
    thread, user = new_id("t"), new_id("u")
    async with door(expenses, kind, user) as run:
        asked = await run(said(thread, "Please submit E-102"))
        paused = outcome(asked)
        assert paused["type"] == "interrupt", paused
        [interrupt] = paused["interrupts"]
        [call] = tool_calls(asked, "submit_expense")
        assert interrupt["toolCallId"] == call["id"] and call["args"] == {"expense_id": "E-102"}
        assert submissions(await session_of(expenses, user, thread)) == []
        done = await run(resume(thread, interrupt["id"], {"approved": True}))
    assert text_of(done) == "I submitted E-102 (412.00 EUR) for reimbursement."
    assert outcome(done) == {"type": "success"}
    session = await session_of(expenses, user, thread)
    assert submissions(session) == ["E-102"]
    assert session.state[ledger.SUBMITTED] == ["E-102"]


@pytest.mark.parametrize("kind", DOORS)
async def test_a_rejected_submission_never_runs_the_tool(
    expenses: RunningGateway, kind: str
) -> None:
    thread, user = new_id("t"), new_id("u")
    async with door(expenses, kind, user) as run:
        asked = await run(said(thread, "Please submit E-102"))
        [interrupt] = outcome(asked)["interrupts"]
        rejected = {"approved": False, "reason": "not a business trip"}
        done = await run(resume(thread, interrupt["id"], rejected))
        reply = text_of(done)
        assert reply.startswith("I did not submit E-102") and "submitted E-102" not in reply
        listed = await run(said(thread, "list my expenses"))
    session = await session_of(expenses, user, thread)
    assert submissions(session) == []
    assert ledger.SUBMITTED not in session.state
    assert "E-102 Hotel, two nights, 412.00 EUR (draft)" in text_of(listed)


async def test_a_submission_under_the_limit_needs_no_approval(expenses: RunningGateway) -> None:
    thread, user = new_id("t"), new_id("u")
    async with door(expenses, "ws", user) as run:
        events = await run(said(thread, "submit E-101"))
    assert outcome(events) == {"type": "success"}
    assert text_of(events) == "I submitted E-101 (23.50 EUR) for reimbursement."
    assert submissions(await session_of(expenses, user, thread)) == ["E-101"]


# --- coordinator -----------------------------------------------------------------------------


def authors(session: Session) -> list[str]:
    """Who wrote each text reply of the thread, in order."""
    return [
        event.author
        for event in session.events
        if event.content
        and any(part.text for part in event.content.parts or ())
        and event.author != "user"
    ]


@pytest.mark.parametrize("kind", DOORS)
async def test_the_specialist_answers_in_the_hand_off_run_and_keeps_the_next_turn(
    coordinator: RunningGateway, kind: str
) -> None:
    thread, user = new_id("t"), new_id("u")
    async with door(coordinator, kind, user) as run:
        first = await run(said(thread, "Where is my order O-1042?"))
        assert [c["name"] for c in tool_calls(first)] == ["transfer_to_agent", "track_order"]
        assert tool_calls(first)[0]["args"] == {"agent_name": "order_desk"}
        assert text_of(first) == (
            "Order O-1042 is shipped: it left the warehouse on Monday and arrives on Thursday."
        )
        assert outcome(first) == {"type": "success"}
        # ADK gives the next turn to the agent that answered last: no second hand-off.
        second = await run(said(thread, "And O-1077?"))
        assert [c["name"] for c in tool_calls(second)] == ["track_order"]
        assert text_of(second) == "Order O-1077 is packing: it is being packed and ships tomorrow."
        # Not about an order: the order desk hands the turn back to the help desk.
        third = await run(said(thread, "Thanks, bye"))
        assert [c["args"] for c in tool_calls(third)] == [{"agent_name": "help_desk"}]
        assert text_of(third) == "You are welcome. Goodbye!"
    session = await session_of(coordinator, user, thread)
    assert authors(session) == ["order_desk", "order_desk", "help_desk"]


async def test_the_coordinator_answers_what_is_not_about_an_order_itself(
    coordinator: RunningGateway,
) -> None:
    async with door(coordinator, "ws", new_id("u")) as run:
        events = await run(said(new_id("t"), "Hello there"))
    assert tool_calls(events) == []
    assert text_of(events).startswith("Hello, this is the help desk.")


# --- the real CLI ----------------------------------------------------------------------------


@pytest.mark.process
async def test_the_cli_serves_an_example_by_module_path(tmp_path: Path) -> None:
    command = (*GATEWAY, "serve", "gateway.examples.expenses.agent")
    async with gateway_process(
        tmp_path / "gateway.db", tmp_path / "server.log", command=command
    ) as (_, port):
        events = await run_over_ws(port, said(new_id("t"), "list my expenses"))
    assert [c["name"] for c in tool_calls(events)] == ["list_expenses"]
    assert text_of(events).startswith("You have 3 expenses")


@pytest.mark.process
async def test_the_cli_serves_an_example_by_folder_path(tmp_path: Path) -> None:
    folder = ROOT / "gateway" / "examples" / "coordinator"
    command = (*GATEWAY, "serve", str(folder))
    async with gateway_process(
        tmp_path / "gateway.db", tmp_path / "server.log", command=command
    ) as (_, port):
        events = await run_over_ws(port, said(new_id("t"), "Where is O-1100?"))
    assert [c["name"] for c in tool_calls(events)] == ["transfer_to_agent", "track_order"]
    assert text_of(events) == "Order O-1100 is delivered: it was delivered on Friday."
