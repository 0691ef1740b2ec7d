"""The official @ag-ui/client HttpAgent against POST /invocations (node harness in node/)."""

from __future__ import annotations

import json

import pytest

from tests.support.agui import new_id
from tests.support.auth import JWT, bearer
from tests.support.official_client import (
    NEEDS_NODE,
    accepted,
    approval_flow,
    base_input,
    reply_of,
    run_http_agent,
)
from tests.support.servers import RunningGateway, running_gateway
from tests.support.tokens import token

pytestmark = [NEEDS_NODE, pytest.mark.browser]


async def test_text_run_is_accepted_by_the_official_client(gateway: RunningGateway) -> None:
    thread = new_id("t")
    report = await run_http_agent(
        gateway, base_input(thread, [{"id": new_id("m"), "role": "user", "content": "안녕"}])
    )
    accepted(report)
    types = [e["type"] for e in report["events"]]
    assert types[0] == "RUN_STARTED" and types[-1] == "RUN_FINISHED"
    assistant = [m for m in report["messages"] if m["role"] == "assistant"]
    assert assistant[-1]["content"].startswith("안녕하세요")


async def test_client_tool_round_trip_through_the_official_client(
    gateway: RunningGateway,
) -> None:
    thread = new_id("t")
    user = {"id": new_id("m"), "role": "user", "content": "업무 요청 목록 화면 열어줘"}
    first = await run_http_agent(gateway, base_input(thread, [user]))
    accepted(first)
    calls = [
        call
        for message in first["messages"]
        if message["role"] == "assistant"
        for call in message.get("toolCalls", [])
        if call["function"]["name"] == "navigateToScreen"
    ]
    assert len(calls) == 1
    assert json.loads(calls[0]["function"]["arguments"])["screenId"] == "MNU-3120"
    finished = first["events"][-1]
    assert finished["outcome"]["pendingToolCallIds"] == [calls[0]["id"]]

    answer = {
        "id": new_id("tool"),
        "role": "tool",
        "toolCallId": calls[0]["id"],
        "content": json.dumps({"status": "navigated", "message": "opened"}),
    }
    second = await run_http_agent(gateway, base_input(thread, [*first["messages"], answer]))
    accepted(second)
    assistant = [m for m in second["messages"] if m["role"] == "assistant" and m.get("content")]
    assert assistant[-1]["content"] == "업무 요청 목록 화면으로 이동했습니다."


async def test_session_busy_reaches_the_official_client_as_409() -> None:
    thread = new_id("t")
    # A slow pace keeps the first run going while node starts up.
    async with (
        running_gateway(scripted_pace_ms=60, busy="reject") as gateway,
        gateway.socket() as ws,
    ):
        await ws.send(
            base_input(
                thread,
                [{"id": new_id("m"), "role": "user", "content": "자기소개를 길게 해 주세요"}],
            )
        )
        await ws.next()
        report = await run_http_agent(
            gateway, base_input(thread, [{"id": new_id("m"), "role": "user", "content": "안녕"}])
        )
        await ws.until_end()
    assert report["http"]["status"] == 409
    assert report["http"]["events"][0]["code"] == "SESSION_BUSY"
    assert "SESSION_BUSY" in report["failed"]


async def test_approval_through_the_official_resume_helper(gateway: RunningGateway) -> None:
    report = await approval_flow(gateway, "approve")
    accepted(report)
    [interrupt] = report["pendingInterrupts"]
    assert interrupt["reason"] == "approval" and "R-1042" in interrupt["message"]
    assert report["first"][-1]["outcome"]["type"] == "interrupt"
    assert report["resume"] == [
        {"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}
    ]
    assert reply_of(report["second"]) == "R-1042 요청을 승인했습니다."


async def test_rejection_through_the_official_resume_helper(gateway: RunningGateway) -> None:
    report = await approval_flow(gateway, "reject")
    accepted(report)
    reply = reply_of(report["second"])
    assert "거절" in reply and "승인했습니다" not in reply


async def test_the_official_client_runs_with_a_bearer_token_in_jwt_mode() -> None:
    run_input = base_input(new_id("t"), [{"id": new_id("m"), "role": "user", "content": "안녕"}])
    async with running_gateway(**JWT) as gateway:
        report = await run_http_agent(gateway, run_input, bearer(token()))
        refused = await run_http_agent(gateway, run_input)
    accepted(report)
    assert report["events"][-1]["type"] == "RUN_FINISHED"
    assert refused["http"]["status"] == 401
    assert refused["http"]["events"][0]["code"] == "UNAUTHORIZED"
    assert "401" in refused["failed"]
