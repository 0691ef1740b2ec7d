"""A POST /invocations client that names its instance (``?clientId=C``, as on /ws) can come
back to its run after a reload: its aborted request stops nothing, whatever
``GATEWAY_SSE_ABORT`` says, and ``GET /invocations?threadId=T&clientId=C`` makes it the run's
executor again (``CUSTOM gateway.executor``), as a /ws reattach does. A bad ``clientId`` is
refused with a code and a sentence."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.support.agui import new_id, outcome, sse_events, text_of, user_input
from tests.support.budgets import scaled
from tests.support.servers import RunningGateway, running_gateway

pytestmark = pytest.mark.server

LONG = "자기소개를 길게 해 주세요"
NAVIGATE = "업무 요청 목록 화면 열어줘"
CLIENT = "client-under-test"


async def post_run(
    client: httpx.AsyncClient, gateway: RunningGateway, body: dict[str, Any], query: str
) -> list[dict[str, Any]]:
    answer = await client.post(
        f"{gateway.http}/invocations?{query}",
        content=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "X-Gateway-User": "demo"},
    )
    return sse_events(answer.content)


async def resume(
    client: httpx.AsyncClient, gateway: RunningGateway, thread: str, query: str = ""
) -> list[dict[str, Any]]:
    answer = await client.get(
        f"{gateway.http}/invocations?threadId={thread}&user=demo{query}", timeout=scaled(30)
    )
    assert answer.status_code == 200, answer.text
    return sse_events(answer.content)


async def test_a_named_client_that_leaves_mid_reply_finds_the_whole_reply_on_its_return() -> None:
    async with (
        running_gateway(scripted_pace_ms=40) as gateway,
        httpx.AsyncClient(timeout=20) as client,
    ):
        assert gateway.app.settings.sse_abort == "cancel"  # the stock clients' default holds
        thread = new_id("t")
        seen: list[dict[str, Any]] = []
        async with client.stream(
            "POST",
            f"{gateway.http}/invocations?clientId={CLIENT}",
            content=json.dumps(user_input(thread, LONG)).encode(),
            headers={"Content-Type": "application/json"},
        ) as response:
            async for line in response.aiter_lines():
                if line.startswith("data: "):
                    seen.append(json.loads(line.removeprefix("data: ")))
                if text_of(seen):
                    break  # the page reloads mid-reply
        back = await resume(client, gateway, thread, f"&clientId={CLIENT}")
    # It followed the run live to its natural end: nothing was stopped.
    assert outcome(back) == {"type": "success"}
    # The reply re-opened with what it had, then the rest live, to its last words.
    reply = text_of(back)
    assert reply.startswith(text_of(seen)) and len(reply) > 100
    assert reply.endswith("무엇을 도와드릴까요?")


async def test_the_named_client_is_told_its_open_call_on_its_return_and_no_one_else(
    gateway: RunningGateway,
) -> None:
    thread = new_id("t")
    async with httpx.AsyncClient(timeout=20) as client:
        paused = await post_run(client, gateway, user_input(thread, NAVIGATE), f"clientId={CLIENT}")
        [call] = outcome(paused)["pendingToolCallIds"]
        own = await resume(client, gateway, thread, f"&clientId={CLIENT}")
        other = await resume(client, gateway, thread, "&clientId=another-tab")
        anonymous = await resume(client, gateway, thread)
    executor = [e for e in own if e["type"] == "CUSTOM" and e["name"] == "gateway.executor"]
    assert [e["value"]["toolCallIds"] for e in executor] == [[call]]
    for stream in (other, anonymous):
        assert not [e for e in stream if e["type"] == "CUSTOM"], "another client is never told"
        assert outcome(stream)["pendingToolCallIds"] == [call]


async def test_a_bad_client_id_is_refused_with_a_code_and_a_sentence(
    gateway: RunningGateway,
) -> None:
    thread = new_id("t")
    bad = "x" * 300
    async with httpx.AsyncClient(timeout=20) as client:
        posted = await client.post(
            f"{gateway.http}/invocations?clientId={bad}",
            content=json.dumps(user_input(thread, "안녕")).encode(),
            headers={"Content-Type": "application/json"},
        )
        resumed = await client.get(
            f"{gateway.http}/invocations?threadId={thread}&user=demo&clientId={bad}"
        )
    assert posted.status_code == 400
    [refusal] = sse_events(posted.content)
    assert refusal["type"] == "RUN_ERROR" and refusal["code"] == "VALIDATION_ERROR"
    assert "clientId" in refusal["message"]
    assert resumed.status_code == 400
    assert "clientId" in resumed.text
    # Refused before anything started: the thread was never opened.
    assert gateway.app.hub is not None
    assert gateway.app.hub.threads.get(thread) is None
