"""SIGTERM to a real ``agent-gateway`` process mid-reply, as a deploy sends it: /ping turns
unready first, the replies streaming on /ws and on SSE finish, the /ws socket closes with
1012 only after its run ended, the process exits once done, and the thread holds the whole
reply, not an interrupted one."""

from __future__ import annotations

import asyncio
import json
import signal
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from gateway.doors.drain import CLOSE_CODE, CLOSE_REASON
from tests.support.agui import AgUiSocket, new_id, sse_events, text_of, user_input
from tests.support.budgets import scaled
from tests.support.processes import gateway_process, run_over_ws

pytestmark = pytest.mark.process

# The demo's scripted model streams this reply in 94 chunks: about 4 s at 40 ms a chunk.
LONG = "자기소개를 길게 해 주세요"


async def sse_reply(port: int, frame: dict[str, Any], started: asyncio.Event) -> bytes:
    """A POST /invocations streamed to its end; ``started`` is set at its first text."""
    body = b""
    async with (
        httpx.AsyncClient(timeout=scaled(60)) as client,
        client.stream(
            "POST",
            f"http://127.0.0.1:{port}/invocations",
            json=frame,
            headers={"X-Gateway-User": "demo"},
        ) as response,
    ):
        async for chunk in response.aiter_bytes():
            body += chunk
            if b"TEXT_MESSAGE_CONTENT" in body:
                started.set()
    return body


async def first_unready(port: int) -> float:
    """When /ping first answered 503 Draining."""
    async with httpx.AsyncClient(timeout=scaled(5)) as client:
        deadline = time.monotonic() + scaled(10)
        while time.monotonic() < deadline:
            response = await client.get(f"http://127.0.0.1:{port}/ping")
            if response.status_code == 503 and response.json()["status"] == "Draining":
                return time.monotonic()
            await asyncio.sleep(0.01)
    pytest.fail("/ping never said Draining")


async def test_sigterm_mid_reply_lets_ws_and_sse_replies_finish_then_closes_with_1012(
    tmp_path: Path,
) -> None:
    db, log = tmp_path / "drain.db", tmp_path / "gateway.log"
    ws_thread, sse_thread = new_id("t"), new_id("t")
    async with gateway_process(db, log, pace_ms=40, drain_seconds=scaled(30)) as (process, port):
        sse_started = asyncio.Event()
        sse = asyncio.create_task(sse_reply(port, user_input(sse_thread, LONG), sse_started))
        async with connect(f"ws://127.0.0.1:{port}/ws?user=demo", max_size=None) as raw:
            ws = AgUiSocket(raw)
            await ws.send(user_input(ws_thread, LONG))
            while not [e for e in ws.received if e["type"] == "TEXT_MESSAGE_CONTENT"]:
                await ws.next()
            await asyncio.wait_for(sse_started.wait(), scaled(10))

            process.send_signal(signal.SIGTERM)
            unready_at = await first_unready(port)
            finished_at = None
            with pytest.raises(ConnectionClosed) as close:
                while True:
                    event = await ws.next(scaled(30))
                    if event["type"] == "RUN_FINISHED":
                        finished_at = time.monotonic()
            closed_at = time.monotonic()
        body = await asyncio.wait_for(sse, scaled(30))
        # uvicorn raises the signal it caught again once it has shut down: ended by it.
        assert process.wait(timeout=scaled(30)) == -signal.SIGTERM

    received = close.value.rcvd
    assert received is not None and (received.code, received.reason) == (CLOSE_CODE, CLOSE_REASON)
    assert finished_at is not None, "the /ws reply did not finish"
    assert unready_at < finished_at <= closed_at
    assert ws.received[-1]["type"] == "RUN_FINISHED"
    assert ws.received[-1]["outcome"] == {"type": "success"}
    events = sse_events(body)
    assert events[-1]["type"] == "RUN_FINISHED", events[-1]
    said = log.read_text()
    assert "draining: no new runs; 2 in progress" in said, said[-3000:]
    assert "2 runs finished, 0 cut off" in said, said[-3000:]

    # The next process finds both replies whole: nothing was stored as interrupted.
    async with gateway_process(db, log) as (_, port):
        for thread, streamed in ((ws_thread, ws.received), (sse_thread, events)):
            replay = await run_over_ws(port, {"type": "reattach", "threadId": thread})
            [snapshot] = [e for e in replay if e["type"] == "MESSAGES_SNAPSHOT"]
            reply = snapshot["messages"][-1]
            assert reply["role"] == "assistant" and reply["content"] == text_of(streamed)
            assert "ended" not in json.dumps(reply.get("metadata") or {})
