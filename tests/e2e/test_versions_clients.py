"""Both official clients from npm against the gateway: @ag-ui/client 1.0, and the 0.0.59
that CopilotKit 1.74 bundles, which declares no protocolVersion and gets the 0.0.x stream."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from gateway import wire as p
from gateway.wire import versions
from gateway.wire.versions import Dialect
from tests.support.agui import new_id, user_input
from tests.support.official_client import (
    NEEDS_NODE,
    accepted,
    approval_flow,
    base_input,
    official_check,
    reply_of,
    run_http_agent,
)
from tests.support.servers import RunningGateway
from tests.support.wire import every_event

pytestmark = [NEEDS_NODE, pytest.mark.browser]


def stream(events: list[p.Event], dialect: Dialect) -> list[dict[str, Any]]:
    return [json.loads(data) for e in events for _, data in versions.encoded(e, dialect)]


async def test_every_event_shaped_for_its_client_passes_that_clients_checks() -> None:
    old = await official_check(stream(every_event(), Dialect.LEGACY), old_client=True)
    assert old["failed"] is None and old["warnings"] == []
    current = await official_check(stream(every_event(), Dialect.CURRENT), old_client=False)
    assert current["failed"] is None and current["warnings"] == []


@pytest.mark.parametrize(
    "event",
    [
        p.RunFinished(
            thread_id="t", run_id="r", outcome=p.SuccessOutcome(pending_tool_call_ids=["c"])
        ),
        p.RunFinished(thread_id="t", run_id="r", outcome=p.CancelledOutcome()),
        p.ToolCallResult(
            message_id="m", tool_call_id="c", content=[p.TextPart(text="x")], role="tool"
        ),
        p.MessagesSnapshot(
            messages=[p.UserMessage(id="u", content=[p.ImagePart(source={"type": "file"})])]
        ),
        p.MessagesSnapshot(
            messages=[p.ToolMessage(id="tm", tool_call_id="c", content=[p.TextPart(text="x")])]
        ),
    ],
    ids=["pending-calls", "cancelled", "result-parts", "file-source", "tool-message-parts"],
)
async def test_what_the_downgrade_reshapes_is_what_0_0_59_rejects(event: p.Event) -> None:
    opened = p.RunStarted(thread_id="t", run_id="r", protocol_version=p.PROTOCOL_VERSION)
    closed = p.RunFinished(thread_id="t", run_id="r")
    events = [opened, event] if isinstance(event, p.RunFinished) else [opened, event, closed]
    as_is = [json.loads(p.encode(one)) for one in events]
    assert (await official_check(as_is, old_client=True))["failed"] is not None
    assert (await official_check(stream(events, Dialect.LEGACY), old_client=True))["failed"] is None


def tool_calls_of(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        call
        for message in report["messages"]
        if message["role"] == "assistant"
        for call in message.get("toolCalls", [])
    ]


async def test_a_frontend_tool_turn_through_copilotkits_bundled_client(
    gateway: RunningGateway,
) -> None:
    thread = new_id("t")
    user = {"id": new_id("m"), "role": "user", "content": "업무 요청 목록 화면 열어줘"}
    first = await run_http_agent(gateway, base_input(thread, [user]), old_client=True)
    accepted(first)
    assert "protocolVersion" not in first["request"]
    assert "protocolVersion" not in first["events"][0]
    assert first["events"][-1]["outcome"] == {"type": "success"}
    [call] = [c for c in tool_calls_of(first) if c["function"]["name"] == "navigateToScreen"]
    answer = {
        "id": new_id("tool"),
        "role": "tool",
        "toolCallId": call["id"],
        "content": json.dumps({"status": "navigated", "message": "opened"}),
    }
    second = await run_http_agent(
        gateway, base_input(thread, [*first["messages"], answer]), old_client=True
    )
    accepted(second)
    assert reply_of(second["events"]) == "업무 요청 목록 화면으로 이동했습니다."


async def test_the_1_0_client_still_gets_the_1_0_stream(gateway: RunningGateway) -> None:
    user = {"id": new_id("m"), "role": "user", "content": "업무 요청 목록 화면 열어줘"}
    report = await run_http_agent(gateway, base_input(new_id("t"), [user]))
    accepted(report)
    assert report["request"]["protocolVersion"] == p.PROTOCOL_VERSION
    assert report["events"][0]["protocolVersion"] == p.PROTOCOL_VERSION
    assert report["events"][-1]["outcome"]["pendingToolCallIds"]


async def test_an_approval_through_copilotkits_bundled_client(gateway: RunningGateway) -> None:
    report = await approval_flow(gateway, "approve", old_client=True)
    accepted(report)
    [interrupt] = report["pendingInterrupts"]
    assert report["announced"] == [interrupt]  # the legacy event names the same interrupt
    assert reply_of(report["second"]) == "R-1042 요청을 승인했습니다."


async def test_an_approval_answered_the_legacy_way(gateway: RunningGateway) -> None:
    report = await approval_flow(gateway, "legacy", old_client=True)
    accepted(report)
    assert report["second"][-1]["type"] == "RUN_FINISHED"
    assert reply_of(report["second"]) == "R-1042 요청을 승인했습니다."


async def test_the_1_0_client_is_not_sent_the_legacy_interrupt_event(
    gateway: RunningGateway,
) -> None:
    report = await approval_flow(gateway, "approve")
    accepted(report)
    assert report["announced"] == []


async def test_an_unknown_major_version_is_refused_on_both_doors(gateway: RunningGateway) -> None:
    frame = {**user_input(new_id("t"), "안녕"), "protocolVersion": "2.0"}
    async with httpx.AsyncClient() as http:
        answer = await http.post(gateway.http + "/invocations?user=demo", json=frame)
    assert answer.status_code == 400
    [refused] = [json.loads(line[5:]) for line in answer.text.splitlines() if line]
    assert refused["code"] == "VALIDATION_ERROR" and "AG-UI 2.x" in refused["message"]
    async with gateway.socket() as ws:
        await ws.send(frame)
        said = await ws.next()
    assert said["type"] == "RUN_ERROR" and said["code"] == "VALIDATION_ERROR"
    assert "AG-UI 2.x" in said["message"]
