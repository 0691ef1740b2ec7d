"""A POST /invocations client that goes away mid-run (a browser's Stop aborts the fetch)
stops its run by default, as a cancel does: a stock SSE client cannot reattach, so a run
going on would only keep the thread busy. ``sse_abort="keep"`` lets the run finish. A run
that paused on a browser call ended its stream first, so a client leaving then stops
nothing."""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from typing import Any

import httpx
import pytest

from tests.support.agui import new_id, outcome, sse_events, text_of, user_input
from tests.support.budgets import scaled
from tests.support.servers import RunningGateway, running_gateway

pytestmark = pytest.mark.server

LONG = "자기소개를 길게 해 주세요"
# Slow enough that the run is mid-reply when the client leaves.
PACE_MS = 40
IDLE_WITHIN_SECONDS = scaled(2.0)


async def leave_mid_reply(gateway: RunningGateway, thread: str) -> list[dict[str, Any]]:
    """Starts a run over SSE, reads until its reply has begun, then drops the connection."""
    events: list[dict[str, Any]] = []
    async with (
        httpx.AsyncClient(timeout=20) as client,
        client.stream(
            "POST",
            gateway.http + "/invocations",
            content=json.dumps(user_input(thread, LONG)).encode(),
            headers={"Content-Type": "application/json"},
        ) as response,
    ):
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                events.append(json.loads(line.removeprefix("data: ")))
            if text_of(events):
                break
    return events


async def idle_after(gateway: RunningGateway, thread: str, within: float) -> float:
    """Seconds until the thread has no run in progress."""
    assert gateway.app.hub is not None
    threads = gateway.app.hub.threads
    started = time.perf_counter()
    while (known := threads.get(thread)) is not None and known.run is not None:
        assert time.perf_counter() - started < within, "the run went on"
        await asyncio.sleep(0.002)
    return time.perf_counter() - started


async def last_reply(gateway: RunningGateway, thread: str) -> dict[str, Any]:
    async with gateway.socket() as ws:
        events = await ws.run({"type": "reattach", "threadId": thread})
    [snapshot] = [e for e in events if e["type"] == "MESSAGES_SNAPSHOT"]
    reply: dict[str, Any] = snapshot["messages"][-1]
    assert reply["role"] == "assistant"
    return reply


async def test_a_client_that_leaves_mid_run_stops_it_and_the_thread_goes_on() -> None:
    async with running_gateway(scripted_pace_ms=PACE_MS) as gateway:
        latencies = []
        for _ in range(5):
            thread = new_id("t")
            sent = text_of(await leave_mid_reply(gateway, thread))
            latencies.append(await idle_after(gateway, thread, IDLE_WITHIN_SECONDS))
            reply = await last_reply(gateway, thread)
            # The stored reply is what was streamed by the time it stopped, marked.
            assert reply.get("metadata") == {"ended": "stopped"}
            assert reply["content"].startswith(sent)
        # The thread takes a new message at once.
        async with httpx.AsyncClient(timeout=20) as client:
            again = await client.post(
                gateway.http + "/invocations",
                content=json.dumps(user_input(thread, "안녕")).encode(),
                headers={"Content-Type": "application/json"},
            )
        assert again.status_code == 200
        assert outcome(sse_events(again.content)) == {"type": "success"}
    print(f"abort -> idle: p50 {statistics.median(latencies) * 1000:.0f} ms, {latencies}")


async def test_with_keep_a_run_whose_client_left_finishes() -> None:
    async with running_gateway(scripted_pace_ms=PACE_MS, sse_abort="keep") as gateway:
        thread = new_id("t")
        await leave_mid_reply(gateway, thread)
        await idle_after(gateway, thread, scaled(30))
        reply = await last_reply(gateway, thread)
    assert "metadata" not in reply or "ended" not in reply["metadata"]
    assert len(reply["content"]) > 100


async def test_a_client_leaving_after_a_pause_on_the_browser_stops_nothing(
    gateway: RunningGateway,
) -> None:
    thread = new_id("t")
    async with httpx.AsyncClient(timeout=20) as client:
        paused = await client.post(
            gateway.http + "/invocations",
            content=json.dumps(user_input(thread, "업무 요청 목록 화면 열어줘")).encode(),
            headers={"Content-Type": "application/json"},
        )
    # The stream ended with the run paused; its client is gone, the call stays open.
    frames = sse_events(paused.content)
    pending = outcome(frames)["pendingToolCallIds"]
    await asyncio.sleep(0.1)
    async with gateway.socket() as ws:
        events = await ws.run({"type": "reattach", "threadId": thread})
    assert outcome(events)["pendingToolCallIds"] == pending
