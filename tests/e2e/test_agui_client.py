"""The official @ag-ui/client HttpAgent against POST /invocations (node harness in node/)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

from tests.auth.test_doors import JWT, bearer
from tests.conftest import RunningGateway, running_gateway
from tests.support.agui import NAVIGATE_TOOL, PROTOCOL_VERSION, StreamChecker, new_id
from tests.support.tokens import token

NODE_DIR = Path(__file__).parent / "node"

pytestmark = pytest.mark.skipif(
    shutil.which("node") is None or not (NODE_DIR / "node_modules").is_dir(),
    reason="needs node and `npm ci` in tests/e2e/node (.ci/run does both)",
)


def client_environment(old_client: bool) -> dict[str, str]:
    """The harnesses drive @ag-ui/client 1.0, or 0.0.59 (CopilotKit 1.74's) if ``old_client``."""
    return {**os.environ, "AGUI_CLIENT": "0" if old_client else "1"}


async def official_check(
    events: list[dict[str, Any]], *, old_client: bool = False
) -> dict[str, Any]:
    """What a client's own checks make of ``events`` (1.0's enforcement and verifier, or
    0.0.59's schemas and verifier); the harness report."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(events, handle, ensure_ascii=False)
    process = await asyncio.create_subprocess_exec(
        "node",
        str(NODE_DIR / "check_stream.mjs"),
        handle.name,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=client_environment(old_client),
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), 60)
    Path(handle.name).unlink()
    assert process.returncode == 0, stderr.decode()
    report: dict[str, Any] = json.loads(stdout)
    return report


async def run_http_agent(
    gateway: RunningGateway,
    run_input: dict[str, Any],
    headers: dict[str, str] | None = None,
    *,
    old_client: bool = False,
) -> dict[str, Any]:
    """Runs the official client once, sending ``headers``; returns the harness report."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(run_input, handle, ensure_ascii=False)
    environment = {**client_environment(old_client), "AGUI_HEADERS": json.dumps(headers or {})}
    process = await asyncio.create_subprocess_exec(
        "node",
        str(NODE_DIR / "run_agent.mjs"),
        gateway.http + "/invocations",
        handle.name,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=environment,
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), 60)
    Path(handle.name).unlink()
    assert process.returncode == 0, stderr.decode()
    report: dict[str, Any] = json.loads(stdout)
    checker = StreamChecker(declared=None if old_client else PROTOCOL_VERSION)
    for event in report["http"].get("events", []):
        checker.feed(event)
    return report


def accepted(report: dict[str, Any]) -> None:
    assert report["failed"] is None, report["failed"]
    assert report["warnings"] == [], report["warnings"]
    assert report["errors"] == [], report["errors"]


def base_input(thread: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "threadId": thread,
        "runId": new_id("run"),
        # The node harness's client declares its own; a frame sent over /ws declares 1.0.
        "protocolVersion": PROTOCOL_VERSION,
        "messages": messages,
        "tools": [NAVIGATE_TOOL],
        "context": [],
        "state": {},
        "forwardedProps": {},
    }


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


async def approval_flow(
    gateway: RunningGateway, decision: str, *, old_client: bool = False
) -> dict[str, Any]:
    process = await asyncio.create_subprocess_exec(
        "node",
        str(NODE_DIR / "approval_flow.mjs"),
        gateway.http + "/invocations",
        new_id("t"),
        decision,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=client_environment(old_client),
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, stderr.decode()
    report: dict[str, Any] = json.loads(stdout)
    for run in ("first", "second"):
        checker = StreamChecker(declared=None if old_client else PROTOCOL_VERSION)
        for event in report[run]:
            checker.feed(event)
    return report


def reply_of(events: list[dict[str, Any]]) -> str:
    return "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")


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
