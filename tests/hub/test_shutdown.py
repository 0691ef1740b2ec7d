"""Stopping the gateway while a run streams: the run stops before the store closes, so it
neither fails on a closed store nor loses what its client was already sent; the next start
closes it as interrupted, as after a crash."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from tests.support.agui import new_id, user_input
from tests.support.servers import running_gateway

pytestmark = pytest.mark.server

LONG = "자기소개를 길게 해 주세요"


async def test_a_run_in_progress_at_shutdown_is_kept_not_failed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db = str(tmp_path / "stop.db")
    thread = new_id("t")
    seen: list[str] = []
    with caplog.at_level(logging.INFO):
        async with running_gateway(db=db, scripted_pace_ms=200) as gateway, gateway.socket() as ws:
            await ws.send(user_input(thread, LONG))
            while not [e for e in ws.received if e["type"] == "TEXT_MESSAGE_CONTENT"]:
                await ws.next()
            seen = [e["delta"] for e in ws.received if e["type"] == "TEXT_MESSAGE_CONTENT"]
        hub = gateway.app.hub
        assert hub is not None
        # Nothing of the run is left to fail later on the closed store.
        assert [t for t in hub.threads.values() if t.run is not None] == []
        await asyncio.sleep(0.5)
    failures = [r for r in caplog.records if "failed (error id" in r.getMessage()]
    assert failures == [] and "the session store is closed" not in caplog.text
    async with running_gateway(db=db) as gateway, gateway.socket() as ws:
        events = await ws.run({"type": "reattach", "threadId": thread})
    [snapshot] = [e for e in events if e["type"] == "MESSAGES_SNAPSHOT"]
    reply = snapshot["messages"][-1]
    assert reply["role"] == "assistant" and reply["content"].startswith("".join(seen))
    assert reply["metadata"] == {"ended": "interrupted"}


async def test_a_call_waiting_on_a_browser_does_not_expire_into_a_closed_store(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with running_gateway(client_tool_timeout=0.3) as gateway, gateway.socket() as ws:
        await ws.run(user_input(new_id("t"), "업무 요청 목록 화면 열어줘"))
    await asyncio.sleep(0.6)  # when the call's time would have come
    assert "never retrieved" not in caplog.text and "store is not open" not in caplog.text


async def test_a_call_made_after_its_client_left_still_expires_and_is_stopped_with_the_hub(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The client leaves before the run pauses on its call, so the thread has no watcher when
    # the call's timer is armed: the hub must still know that thread, or its stop misses it.
    async with running_gateway(client_tool_timeout=0.3) as gateway, gateway.socket() as ws:
        await ws.send(user_input(new_id("t"), "업무 요청 목록 화면 열어줘"))
        await ws.next()  # RUN_STARTED: the run is in progress
    await asyncio.sleep(0.6)
    assert "never retrieved" not in caplog.text and "store is not open" not in caplog.text


async def test_a_run_that_pauses_during_the_shutdown_grace_arms_no_timer() -> None:
    async with running_gateway(client_tool_timeout=60, scripted_pace_ms=150) as gateway:
        hub = gateway.app.hub
        assert hub is not None
        async with gateway.socket() as ws:
            await ws.send(user_input(new_id("t"), "업무 요청 목록 화면 열어줘"))
            await ws.next()  # RUN_STARTED: the run is in progress as the hub stops
            await hub.stop()
            while ws.received[-1]["type"] != "RUN_FINISHED":
                await asyncio.wait_for(ws.next(), 10)
            events = [e["type"] for e in ws.received]
            assert "TOOL_CALL_END" in events, "the run paused on its call within the grace"
            assert [t for t in hub.threads.values() if t.expiry is not None] == []
