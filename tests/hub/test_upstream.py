"""Issue 4 over /ws: approvals through resume, cancel, unanswered calls, dropped sockets."""

from __future__ import annotations

import asyncio
import datetime
import time
from typing import Any

import pytest

from gateway.examples.navigator import work_requests
from tests.support.agui import (
    new_id,
    outcome,
    resume,
    text_of,
    tool_answer,
    user_input,
)
from tests.support.approvals import ask_approval
from tests.support.budgets import scaled
from tests.support.cancels import cancel_mid_reply_then_go_on
from tests.support.counting import counting
from tests.support.servers import RunningGateway, running_gateway

pytestmark = pytest.mark.server


async def test_approval_interrupt_then_approve_runs_the_tool(gateway: RunningGateway) -> None:
    thread = new_id("t")
    async with gateway.socket() as ws:
        interrupt = await ask_approval(ws, thread)
        assert interrupt["reason"] == "approval"
        assert "R-1042" in interrupt["message"] and "승인" in interrupt["message"]
        assert interrupt["responseSchema"]["required"] == ["approved"]
        expires = datetime.datetime.fromisoformat(interrupt["expiresAt"].replace("Z", "+00:00"))
        assert expires.timestamp() > time.time()
        events = await ws.run(resume(thread, interrupt["id"], payload={"approved": True}))
        results = [e for e in events if e["type"] == "TOOL_CALL_RESULT"]
        assert results and results[0]["toolCallId"] == interrupt["toolCallId"]
        assert '"status":"approved"' in results[0]["content"]
        assert text_of(events) == "R-1042 요청을 승인했습니다."
        assert outcome(events) == {"type": "success"}


@pytest.mark.parametrize(
    ("status", "payload"),
    [("resolved", {"approved": False, "reason": "금액 확인 필요"}), ("cancelled", None)],
)
async def test_rejected_or_cancelled_approval_does_not_run_the_tool(
    gateway: RunningGateway, status: str, payload: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran = counting(monkeypatch, work_requests, "approve_work_request")
    thread = new_id("t")
    async with gateway.socket() as ws:
        interrupt = await ask_approval(ws, thread)
        events = await ws.run(resume(thread, interrupt["id"], status, payload))
        reply = text_of(events)
        assert "거절" in reply and "승인했습니다" not in reply
        assert not ran


async def test_second_and_unknown_answers_to_interrupts(gateway: RunningGateway) -> None:
    thread = new_id("t")
    async with gateway.socket() as ws:
        interrupt = await ask_approval(ws, thread)
        await ws.run(resume(thread, interrupt["id"], payload={"approved": True}))
        again = await ws.run(resume(thread, interrupt["id"], payload={"approved": True}))
        assert [e["value"]["code"] for e in again if e["type"] == "CUSTOM"] == [
            "INTERRUPT_ALREADY_ANSWERED"
        ]
        assert not text_of(again)
        unknown = await ws.refused(resume(thread, "no-such-interrupt", payload={"approved": True}))
        assert unknown["code"] == "VALIDATION_ERROR" and "no-such-interrupt" in unknown["message"]


async def test_malformed_approval_payload_is_a_validation_error(gateway: RunningGateway) -> None:
    thread = new_id("t")
    async with gateway.socket() as ws:
        interrupt = await ask_approval(ws, thread)
        error = await ws.refused(resume(thread, interrupt["id"], payload={"ok": 1}))
        assert error["code"] == "VALIDATION_ERROR" and "approved" in error["message"]
        events = await ws.run(resume(thread, interrupt["id"], payload={"approved": True}))
        assert "승인했습니다" in text_of(events)


async def test_expired_approval_is_resolved_as_rejected() -> None:
    async with running_gateway() as gateway:
        gateway.app.hub.planner.approval_timeout = 0.0  # type: ignore[union-attr]
        thread = new_id("t")
        async with gateway.socket() as ws:
            interrupt = await ask_approval(ws, thread)
            await asyncio.sleep(1.1)
            events = await ws.run(resume(thread, interrupt["id"], payload={"approved": True}))
            assert [e["value"]["code"] for e in events if e["type"] == "CUSTOM"] == [
                "INTERRUPT_EXPIRED"
            ]
            assert "거절" in text_of(events)


async def test_new_message_rejects_an_open_approval(gateway: RunningGateway) -> None:
    thread = new_id("t")
    async with gateway.socket() as ws:
        await ask_approval(ws, thread)
        events = await ws.run(user_input(thread, "안녕"))
        assert text_of(events).startswith("안녕하세요")
        again = await ws.run(user_input(thread, "고마워"))
        assert outcome(again) == {"type": "success"}


async def test_cancel_mid_reply_ends_cancelled_and_the_thread_goes_on() -> None:
    async with running_gateway(scripted_pace_ms=30) as gateway, gateway.socket() as ws:
        await cancel_mid_reply_then_go_on(ws)


async def test_a_cancel_naming_another_run_stops_nothing() -> None:
    """A Stop meant for a run that has ended must not stop the next one: a cancel that
    names its run stops that run only."""
    async with running_gateway(scripted_pace_ms=10) as gateway, gateway.socket() as ws:
        thread = new_id("t")
        await ws.send(user_input(thread, "자기소개를 길게 해 주세요"))
        started = await ws.next()
        while (await ws.next())["type"] != "TEXT_MESSAGE_CONTENT":
            pass
        await ws.send({"type": "cancel", "threadId": thread, "runId": "an-earlier-run"})
        assert outcome(await ws.until_end()) == {"type": "success"}
        [notice] = [e for e in await ws.until_end() if e["type"] == "CUSTOM"]
        assert notice["value"]["code"] == "NOTHING_TO_CANCEL"
        assert "'an-earlier-run'" in notice["value"]["message"]
        # Named as it is, the run stops.
        await ws.send(user_input(thread, "자기소개를 길게 해 주세요"))
        started = await ws.next()
        await ws.send({"type": "cancel", "threadId": thread, "runId": started["runId"]})
        assert outcome(await ws.until_end()) == {"type": "cancelled"}


async def test_cancel_in_a_slow_server_tool(monkeypatch: pytest.MonkeyPatch) -> None:
    # Set before the gateway starts, so its worker processes, if any, see it too.
    monkeypatch.setenv(work_requests.LATENCY_VARIABLE, "30")
    async with running_gateway() as gateway, gateway.socket() as ws:
        thread = new_id("t")
        interrupt = await ask_approval(ws, thread)
        await ws.send(resume(thread, interrupt["id"], payload={"approved": True}))
        assert (await ws.next())["type"] == "RUN_STARTED"
        await asyncio.sleep(0.2)
        sent = time.perf_counter()
        await ws.send({"type": "cancel", "threadId": thread})
        rest = await ws.until_end()
        assert time.perf_counter() - sent < scaled(2.0)
        assert outcome(rest) == {"type": "cancelled"}
        after = await ws.run(user_input(thread, "안녕"))
        assert outcome(after) == {"type": "success"}
        session = await gateway.app.hub.engine.session("demo", thread)  # type: ignore[union-attr]
        assert session is not None
        answered = {r.id for e in session.events for r in e.get_function_responses()}
        called = {c.id for e in session.events for c in e.get_function_calls()}
        assert called <= answered, "a cancelled run leaves no call without a response"


async def test_cancel_jumps_ahead_of_queued_runs() -> None:
    async with running_gateway(scripted_pace_ms=30) as gateway, gateway.socket() as ws:
        thread = new_id("t")
        await ws.send(user_input(thread, "자기소개를 길게 해 주세요"))
        await ws.send(user_input(new_id("t"), "안녕"))
        await ws.next()
        await ws.send({"type": "cancel", "threadId": thread})
        first = await ws.until_end()
        assert outcome(first) == {"type": "cancelled"}
        second = await ws.until_end()
        assert text_of(second).startswith("안녕하세요")


async def test_barge_in_cancel_then_new_message_back_to_back() -> None:
    async with running_gateway(scripted_pace_ms=30) as gateway, gateway.socket() as ws:
        thread = new_id("t")
        await ws.send(user_input(thread, "자기소개를 길게 해 주세요"))
        await ws.next()
        await ws.send({"type": "cancel", "threadId": thread})
        await ws.send(user_input(thread, "안녕"))
        assert outcome(await ws.until_end()) == {"type": "cancelled"}
        second = await ws.until_end()
        assert text_of(second).startswith("안녕하세요")


async def test_unanswered_call_expires_into_no_result() -> None:
    async with running_gateway(client_tool_timeout=0.3) as gateway, gateway.socket() as ws:
        thread = new_id("t")
        events = await ws.run(user_input(thread, "업무 요청 목록 화면 열어줘"))
        assert outcome(events)["pendingToolCallIds"]
        # The expiry resumes the run on its own; the socket watching the thread sees it.
        expired = await ws.until_end(timeout=5)
        assert "결과를 받지 못해" in text_of(expired)
        assert "이동했습니다" not in text_of(expired)


async def navigate_calls(gateway: RunningGateway, thread: str) -> list[Any]:
    session = await gateway.app.hub.engine.session("demo", thread)  # type: ignore[union-attr]
    if session is None:
        return []
    return [
        c for e in session.events for c in e.get_function_calls() if c.name == "navigateToScreen"
    ]


async def test_run_goes_on_after_the_socket_drops_and_answer_comes_from_another() -> None:
    async with running_gateway(scripted_pace_ms=20) as gateway:
        thread = new_id("t")
        async with gateway.socket() as first:
            await first.send(user_input(thread, "업무 요청 목록 화면 열어줘"))
            await first.next()
        # The run finishes without anyone listening; its call waits for an answer. Looked
        # for until it is stored, however slow the machine (a fresh worker's first run too).
        deadline = time.monotonic() + scaled(5)
        while not (calls := await navigate_calls(gateway, thread)):
            assert time.monotonic() < deadline, "the run never asked the browser"
            await asyncio.sleep(0.05)
        assert len(calls) == 1
        async with gateway.socket() as second:
            events = await second.run(tool_answer(thread, [(calls[0].id, {"status": "navigated"})]))
            assert "이동했습니다" in text_of(events)


async def test_sse_cancel_through_forwarded_props() -> None:
    import httpx

    async with running_gateway(scripted_pace_ms=30) as gateway, gateway.socket() as ws:
        thread = new_id("t")
        await ws.send(user_input(thread, "자기소개를 길게 해 주세요"))
        await ws.next()
        cancel = user_input(thread, "")
        cancel["forwardedProps"] = {"gateway": {"cancel": True}}
        async with httpx.AsyncClient(timeout=10) as client:
            response = await client.post(gateway.http + "/invocations", json=cancel)
        assert response.status_code == 200
        assert b'"code":"CANCEL_REQUESTED"' in response.content
        assert outcome(await ws.until_end()) == {"type": "cancelled"}


async def test_client_tool_declarations_are_checked_against_the_catalog(
    gateway: RunningGateway,
) -> None:
    async with gateway.socket() as ws:
        unknown = {"name": "launchMissiles", "description": "x", "parameters": {}}
        error = await ws.refused(user_input(new_id("t"), "안녕", tools=[unknown]))
        assert error["code"] == "VALIDATION_ERROR" and "launchMissiles" in error["message"]
        server = {"name": "find_screen", "description": "x"}
        error = await ws.refused(user_input(new_id("t"), "안녕", tools=[server]))
        assert "server tool" in error["message"]
        wrong_type = {
            "name": "navigateToScreen",
            "description": "x",
            "parameters": {"type": "object", "properties": {"screenId": {"type": "number"}}},
        }
        error = await ws.refused(user_input(new_id("t"), "안녕", tools=[wrong_type]))
        assert "navigateToScreen" in error["message"]
        assert "parameters.properties.screenId.type" in error["message"]
        extra = {
            "name": "navigateToScreen",
            "description": "x",
            "parameters": {"type": "object", "properties": {"url": {"type": "string"}}},
        }
        error = await ws.refused(user_input(new_id("t"), "안녕", tools=[extra]))
        assert "parameters.properties.url" in error["message"]
        ok = await ws.run(user_input(new_id("t"), "안녕"))
        assert outcome(ok) == {"type": "success"}
