"""POST /tool-results: a backend system's final result for an agent's own long-running call
(``gateway.doors.tool_results``), with the agent of ``tests.support.dojo.long_running``."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from google.adk.tools import LongRunningFunctionTool

from tests.support import tokens
from tests.support.agui import new_id, outcome, text_of, tool_answer, tool_calls, user_input
from tests.support.budgets import scaled
from tests.support.dojo.long_running import build_agent
from tests.support.servers import RunningGateway, running_gateway

pytestmark = pytest.mark.server

SERVICE_TOKEN = "s" * 40
APPROVED = {"status": "approved", "by": "manager"}
# The browser's own tool, as a client declares it.
SHOW_TICKET = {
    "name": "showTicket",
    "description": "Shows a ticket on the user's screen.",
    "parameters": {"type": "object", "properties": {"ticketId": {"type": "string"}}},
}


@pytest.fixture(scope="module")
async def gateway() -> AsyncIterator[RunningGateway]:
    async with running_gateway(agent=build_agent(), service_token=SERVICE_TOKEN) as running:
        yield running


async def post_result(
    gateway: RunningGateway,
    body: dict[str, Any] | bytes,
    credential: str | None = SERVICE_TOKEN,
    **headers: str,
) -> httpx.Response:
    sent = {"Content-Type": "application/json", **headers}
    if credential is not None:
        sent["Authorization"] = f"Bearer {credential}"
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    async with httpx.AsyncClient(timeout=scaled(20)) as client:
        return await client.post(gateway.http + "/tool-results", content=content, headers=sent)


async def pending_ticket(gateway: RunningGateway, thread: str) -> str:
    async with gateway.socket() as ws:
        events = await ws.run(user_input(thread, "reimburse 500 for a conference trip", tools=[]))
    [call] = tool_calls(events, "ask_for_approval")
    return str(call["id"])


def answer(thread: str, call_id: str, content: Any = None) -> dict[str, Any]:
    return {"threadId": thread, "toolCallId": call_id, "content": content or APPROVED}


def refusal(response: httpx.Response, status: int, code: str) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["type"] == "RUN_ERROR" and body["code"] == code, body
    message: str = body["message"]
    return message


async def test_the_backends_result_resumes_the_run_for_the_watching_user(
    gateway: RunningGateway,
) -> None:
    thread = new_id("t")
    call_id = await pending_ticket(gateway, thread)
    async with gateway.socket() as watcher:
        await watcher.run({"type": "reattach", "threadId": thread})
        response = await post_result(gateway, answer(thread, call_id))
        assert response.status_code == 202, response.text
        accepted = response.json()
        assert accepted["threadId"] == thread and accepted["toolCallId"] == call_id
        resumed = await watcher.until_end()
    assert resumed[0]["runId"] == accepted["runId"]
    [result] = [
        e for e in resumed if e["type"] == "TOOL_CALL_RESULT" and e["toolCallId"] == call_id
    ]
    assert result["messageId"] == f"result-{call_id}"
    assert json.loads(result["content"]) == APPROVED
    assert text_of(resumed) == "Paid 500 for a conference trip."
    assert outcome(resumed) == {"type": "success"}
    # A reload shows the backend's result as the watcher was shown it.
    async with gateway.socket() as again:
        messages = (await again.run({"type": "reattach", "threadId": thread}))[1]["messages"]
    assert {
        "id": result["messageId"],
        "role": "tool",
        "toolCallId": call_id,
        "content": result["content"],
    } in messages
    # A second answer is refused, and resumes nothing.
    again = await post_result(gateway, answer(thread, call_id))
    assert "already answered" in refusal(again, 409, "TOOL_RESULT_IGNORED")
    # The user's own answer after the backend's is ignored too.
    async with gateway.socket() as ws:
        late = await ws.run(tool_answer(thread, [(call_id, APPROVED)], tools=[]))
    assert [e["value"]["code"] for e in late if e["type"] == "CUSTOM"] == ["TOOL_RESULT_IGNORED"]
    # The backend's answer is audited: who (the service), what call, how it went.
    rows = await gateway.app.hub.audit.query_access(thread=thread)  # type: ignore[union-attr]
    answers = [r for r in rows if r.action == "tool result"]
    assert [(r.via, r.target, r.outcome) for r in answers] == [
        ("service", call_id, "ok"),
        ("service", call_id, "TOOL_RESULT_IGNORED"),
    ]


async def test_operators_see_the_wait_and_the_answer_and_no_error(
    gateway: RunningGateway, caplog: pytest.LogCaptureFixture
) -> None:
    thread = new_id("t")
    with caplog.at_level(logging.INFO, logger="gateway"):
        call_id = await pending_ticket(gateway, thread)
        async with gateway.socket() as watcher:
            await watcher.run({"type": "reattach", "threadId": thread})
            assert (await post_result(gateway, answer(thread, call_id))).status_code == 202
            await watcher.until_end()
    lines = [r.getMessage() for r in caplog.records]
    assert any(f"call {call_id} with an interim result" in line for line in lines)
    assert any(f"call={call_id}" in line and "resumed by run" in line for line in lines)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]


async def test_a_late_result_after_the_thread_moved_on_is_refused(
    gateway: RunningGateway,
) -> None:
    thread = new_id("t")
    call_id = await pending_ticket(gateway, thread)
    async with gateway.socket() as ws:
        await ws.run(user_input(thread, "never mind", tools=[]))
    response = await post_result(gateway, answer(thread, call_id))
    assert "superseded" in refusal(response, 409, "TOOL_CALL_CLOSED")


async def test_unknown_threads_and_calls_are_refused(gateway: RunningGateway) -> None:
    thread = new_id("t")
    await pending_ticket(gateway, thread)
    unknown_call = await post_result(gateway, answer(thread, "no-such-call"))
    assert "is not a tool call" in refusal(unknown_call, 400, "VALIDATION_ERROR")
    unknown_thread = await post_result(gateway, answer(new_id("t"), "no-such-call"))
    assert "no thread" in refusal(unknown_thread, 400, "VALIDATION_ERROR")


@pytest.mark.parametrize(
    "body",
    [
        b"{not json",
        json.dumps({"threadId": "t", "content": {}}).encode(),
        json.dumps({"threadId": "t", "toolCallId": 7, "content": {}}).encode(),
        json.dumps({"threadId": "t", "toolCallId": "c", "content": {}, "extra": 1}).encode(),
        json.dumps({"threadId": "", "toolCallId": "c", "content": {}}).encode(),
    ],
)
async def test_a_malformed_body_is_refused_with_what_is_wrong(
    gateway: RunningGateway, body: bytes
) -> None:
    response = await post_result(gateway, body)
    assert "POST /tool-results takes" in refusal(response, 400, "VALIDATION_ERROR")


async def test_a_result_too_deep_is_refused_before_anything_is_stored(
    gateway: RunningGateway,
) -> None:
    thread = new_id("t")
    call_id = await pending_ticket(gateway, thread)
    deep: Any = "leaf"
    for _ in range(200):
        deep = {"a": deep}
    refusal(await post_result(gateway, answer(thread, call_id, deep)), 400, "VALIDATION_ERROR")
    fine = await post_result(gateway, answer(thread, call_id))
    assert fine.status_code == 202, "the call stayed open"


async def test_a_user_or_a_wrong_credential_cannot_answer(gateway: RunningGateway) -> None:
    thread = new_id("t")
    call_id = await pending_ticket(gateway, thread)
    body = answer(thread, call_id)
    assert "Bearer" in refusal(await post_result(gateway, body, None), 401, "UNAUTHORIZED")
    wrong = await post_result(gateway, body, "t" * 40)
    assert "not the service credential" in refusal(wrong, 401, "UNAUTHORIZED")
    # The thread's owner, as dev mode names them, is no backend system.
    as_owner = await post_result(gateway, body, None, **{"X-Gateway-User": "demo"})
    refusal(as_owner, 401, "UNAUTHORIZED")
    # A user's JWT is not the service credential either.
    jwt = await post_result(gateway, body, tokens.token(sub="demo"))
    refusal(jwt, 401, "UNAUTHORIZED")
    assert (await post_result(gateway, body)).status_code == 202, "the call stayed open"


async def test_a_browser_call_is_the_browsers_to_answer(gateway: RunningGateway) -> None:
    thread = new_id("t")
    show = SHOW_TICKET
    async with gateway.socket() as ws:
        events = await ws.run(user_input(thread, "show ticket-42", tools=[show]))
        [call] = tool_calls(events, "showTicket")
        assert outcome(events) == {"type": "success", "pendingToolCallIds": [call["id"]]}
        response = await post_result(gateway, answer(thread, call["id"]))
        assert "a browser's call" in refusal(response, 403, "ACCESS_DENIED")
        shown = await ws.run(tool_answer(thread, [(call["id"], {"status": "shown"})], tools=[show]))
    assert text_of(shown) == "The ticket is on your screen (shown)."


async def test_a_result_beside_an_open_browser_call_waits_for_it(
    gateway: RunningGateway,
) -> None:
    thread = new_id("t")
    async with gateway.socket() as ws:
        ask = user_input(thread, "reimburse 500 for a trip and show it", tools=[SHOW_TICKET])
        events = await ws.run(ask)
        [ticket] = tool_calls(events, "ask_for_approval")
        [show] = tool_calls(events, "showTicket")
        assert sorted(outcome(events)["pendingToolCallIds"]) == sorted([ticket["id"], show["id"]])
        response = await post_result(gateway, answer(thread, ticket["id"]))
        assert response.status_code == 202, response.text
        assert response.json()["waitingFor"] == [show["id"]]
        waiting = await ws.until_end()  # the backend's run only reports what still waits
        assert outcome(waiting) == {"type": "success", "pendingToolCallIds": [show["id"]]}
        resumed = await ws.run(
            tool_answer(thread, [(show["id"], {"status": "shown"})], tools=[SHOW_TICKET])
        )
    # Resumed with both results (the script answers the last one it was given).
    assert text_of(resumed) == "The ticket is on your screen (shown)."
    assert outcome(resumed) == {"type": "success"}


async def test_a_browser_call_that_expires_beside_a_ticket_waits_for_the_ticket() -> None:
    timeout = scaled(0.3)
    async with running_gateway(
        agent=build_agent(), service_token=SERVICE_TOKEN, client_tool_timeout=timeout
    ) as gateway:
        thread = new_id("t")
        async with gateway.socket() as ws:
            ask = user_input(thread, "reimburse 500 for a trip and show it", tools=[SHOW_TICKET])
            [ticket] = tool_calls(await ws.run(ask), "ask_for_approval")
            # The browser never answers; the model is not run on its timeout alone.
            with pytest.raises(TimeoutError):
                await ws.next(timeout * 5)
            response = await post_result(gateway, answer(thread, ticket["id"]))
            assert response.status_code == 202, response.text
            assert response.json()["waitingFor"] == []
            resumed = await ws.until_end()
        async with gateway.socket() as again:
            messages = (await again.run({"type": "reattach", "threadId": thread}))[1]["messages"]
    # Resumed once, with the ticket's result and the browser call's timeout.
    assert text_of(resumed) == "The ticket is on your screen (no_result)."
    said = [m["content"] for m in messages if m["role"] == "assistant" and m.get("content")]
    assert said == ["The ticket is on your screen (no_result)."]


async def test_a_result_sent_while_the_thread_runs_is_refused_as_busy() -> None:
    opened = asyncio.Event()

    async def ask_for_approval(purpose: str, amount: str) -> dict[str, Any]:
        """Opens an approval ticket, once the ticket system answers."""
        await opened.wait()
        return {"status": "pending", "ticketId": "ticket-slow"}

    agent = build_agent()
    agent.tools = [LongRunningFunctionTool(func=ask_for_approval)]
    async with running_gateway(agent=agent, service_token=SERVICE_TOKEN) as gateway:
        thread = new_id("t")
        async with gateway.socket() as ws:
            await ws.send(user_input(thread, "reimburse 500 for a conference trip", tools=[]))
            while (event := await ws.next())["type"] != "TOOL_CALL_END":
                pass
            busy = await post_result(gateway, answer(thread, event["toolCallId"]))
            assert "send this result again" in refusal(busy, 409, "SESSION_BUSY")
            opened.set()
            assert outcome(await ws.until_end())["pendingToolCallIds"] == [event["toolCallId"]]
        again = await post_result(gateway, answer(thread, event["toolCallId"]))
        assert again.status_code == 202, again.text


async def test_the_door_is_closed_without_a_service_token() -> None:
    async with running_gateway(agent=build_agent()) as gateway:
        response = await post_result(gateway, answer("t", "c"))
    assert "GATEWAY_SERVICE_TOKEN" in refusal(response, 403, "ACCESS_DENIED")


async def test_a_pending_call_survives_a_restart_and_resumes_once(db: str) -> None:
    """On a SQLite file, and on a PostgreSQL database."""
    thread = new_id("t")
    async with running_gateway(agent=build_agent(), db=db, service_token=SERVICE_TOKEN) as first:
        call_id = await pending_ticket(first, thread)
    async with running_gateway(agent=build_agent(), db=db, service_token=SERVICE_TOKEN) as second:
        async with second.socket() as watcher:
            reattached = await watcher.run({"type": "reattach", "threadId": thread})
            assert outcome(reattached) == {"type": "success", "pendingToolCallIds": [call_id]}
            both = await asyncio.gather(
                post_result(second, answer(thread, call_id)),
                post_result(second, answer(thread, call_id)),
            )
            [taken, refused] = sorted(both, key=lambda r: r.status_code)
            assert taken.status_code == 202, taken.text
            # Refused as answered, or as busy while the first one's run goes on.
            assert refused.status_code == 409, refused.text
            assert refused.json()["code"] in ("TOOL_RESULT_IGNORED", "SESSION_BUSY")
            resumed = await watcher.until_end()
        assert text_of(resumed) == "Paid 500 for a conference trip."
        async with second.socket() as ws:
            final = await ws.run({"type": "reattach", "threadId": thread})
    replies = [m for m in final[1]["messages"] if m["role"] == "assistant" and m.get("content")]
    assert [m["content"] for m in replies] == ["Paid 500 for a conference trip."], "resumed once"
