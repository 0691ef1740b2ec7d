"""A drain cuts nobody off: the server told to stop (uvicorn's ``should_exit``, what SIGTERM
sets) first says so on /ping and /ready, refuses new work with a retryable code, lets the
runs in progress stream to their end, and closes each /ws connection with 1012 once its
run has ended; an idle one at once. (Real processes and SIGTERM: ``test_drain_sigterm``.)"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from gateway import wire as p
from gateway.api import create_app
from gateway.config import Settings
from gateway.doors.drain import CLOSE_CODE
from gateway.translate.translator import Phase
from tests.support.agui import AgUiSocket, new_id, snapshot_of, sse_events, text_of, user_input
from tests.support.budgets import scaled
from tests.support.servers import RunningGateway, running_gateway

pytestmark = pytest.mark.server

# The demo's scripted model streams this reply in 94 chunks.
LONG = "자기소개를 길게 해 주세요"


async def status_of(gateway: RunningGateway, path: str) -> tuple[int, str]:
    async with httpx.AsyncClient(timeout=scaled(10)) as client:
        response = await client.get(gateway.http + path)
    return response.status_code, response.json()["status"]


async def until_draining(gateway: RunningGateway) -> None:
    """Waits for /ping to say the drain began (the server notices on its next tick)."""
    deadline = asyncio.get_running_loop().time() + scaled(10)
    while await status_of(gateway, "/ping") != (503, "Draining"):
        assert asyncio.get_running_loop().time() < deadline, "/ping never said Draining"
        await asyncio.sleep(0.02)


async def closed(ws: AgUiSocket) -> tuple[int | None, str | None]:
    """Reads to the close; the code and reason the server closed with."""
    with pytest.raises(ConnectionClosed) as close:
        while True:
            await ws.next(scaled(30))
    received = close.value.rcvd
    return (received.code, received.reason) if received is not None else (None, None)


async def test_a_reply_streaming_on_ws_ends_before_its_socket_closes_with_1012(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="gateway.doors.drain")
    thread = new_id("t")
    async with (
        running_gateway(scripted_pace_ms=20, drain_seconds=scaled(30)) as gateway,
        gateway.socket() as ws,
        gateway.socket() as idle,
    ):
        assert await status_of(gateway, "/ready") == (200, "Healthy")
        await ws.send(user_input(thread, LONG))
        while not [e for e in ws.received if e["type"] == "TEXT_MESSAGE_CONTENT"]:
            await ws.next()
        gateway.server.should_exit = True  # what uvicorn's SIGTERM handler sets
        await until_draining(gateway)
        assert await status_of(gateway, "/ready") == (503, "Draining")
        assert "RUN_FINISHED" not in [e["type"] for e in ws.received], "the run ended first"
        # An idle connection goes at once, its client told to reconnect.
        assert await closed(idle) == (CLOSE_CODE, "service restart: reconnect and reattach")

        code, reason = await closed(ws)
    assert (code, reason) == (CLOSE_CODE, "service restart: reconnect and reattach")
    assert ws.received[-1]["type"] == "RUN_FINISHED"
    assert ws.received[-1]["outcome"] == {"type": "success"}
    assert len(text_of(ws.received)) > 200, "the whole reply, not a cut-off one"
    said = caplog.text
    assert "draining: no new runs; 1 in progress" in said
    assert "1 runs finished, 0 cut off" in said


async def test_a_reply_streaming_on_sse_ends_normally_during_a_drain() -> None:
    thread = new_id("t")
    async with (
        running_gateway(scripted_pace_ms=20, drain_seconds=scaled(30)) as gateway,
        httpx.AsyncClient(timeout=scaled(30)) as client,
        client.stream(
            "POST",
            gateway.http + "/invocations",
            json=user_input(thread, LONG),
            headers={"X-Gateway-User": "demo"},
        ) as response,
    ):
        body = b""
        async for chunk in response.aiter_bytes():
            body += chunk
            if b"TEXT_MESSAGE_CONTENT" in body and not gateway.server.should_exit:
                gateway.server.should_exit = True
    events = sse_events(body)
    assert events[-1]["type"] == "RUN_FINISHED", events[-1]
    assert len(text_of(events)) > 200


async def test_new_work_during_a_drain_is_refused_with_a_retryable_code(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="gateway.doors.drain")
    async with (
        running_gateway(scripted_pace_ms=20, drain_seconds=scaled(30)) as gateway,
        gateway.socket() as ws,
    ):
        await ws.send(user_input(new_id("t"), LONG))
        await ws.next()  # RUN_STARTED: a run keeps the drain going while this test looks
        gateway.server.should_exit = True
        await until_draining(gateway)
        # A new /ws connection: 503, when to try again, and a RUN_ERROR saying why.
        with pytest.raises(InvalidStatus) as refused:
            async with connect(gateway.ws_url()):
                pass
        answer = refused.value.response
        assert answer.status_code == 503 and answer.headers["retry-after"] == "1"
        assert b'"code":"SERVICE_UNAVAILABLE"' in answer.body
        # A new run on SSE: the same, as HTTP.
        async with httpx.AsyncClient(timeout=scaled(10)) as client:
            response = await client.post(
                gateway.http + "/invocations",
                json=user_input(new_id("t"), "안녕"),
                headers={"X-Gateway-User": "demo"},
            )
        assert response.status_code == 503 and response.headers["retry-after"] == "1"
        [error] = sse_events(response.content)
        assert error["code"] == "SERVICE_UNAVAILABLE" and "again" in error["message"]
        # Another input on the connection whose run streams: refused in its turn, and the
        # run it waited behind was not interrupted.
        await ws.send(user_input(new_id("t"), "안녕"))
        while ws.received[-1]["type"] != "RUN_FINISHED":
            await ws.next(scaled(30))
        assert ws.received[-1]["outcome"] == {"type": "success"}
        refusal = await ws.until_end()
        assert [e["type"] for e in refusal] == ["RUN_STARTED", "RUN_ERROR"]
        assert refusal[-1]["code"] == "SERVICE_UNAVAILABLE"
        assert (await closed(ws))[0] == CLOSE_CODE
    assert "2 new runs and 1 new connections refused meanwhile" in caplog.text


async def test_a_watcher_of_another_tabs_run_keeps_its_stream_to_the_end() -> None:
    thread = new_id("t")
    async with (
        running_gateway(scripted_pace_ms=20, drain_seconds=scaled(30)) as gateway,
        gateway.socket() as tab,
        gateway.socket() as other_tab,
    ):
        await tab.send(user_input(thread, LONG))
        while not [e for e in tab.received if e["type"] == "TEXT_MESSAGE_CONTENT"]:
            await tab.next()
        await other_tab.send({"type": "reattach", "threadId": thread})
        await other_tab.next()  # RUN_STARTED of the run it joined
        gateway.server.should_exit = True
        assert (await closed(other_tab))[0] == CLOSE_CODE
        assert (await closed(tab))[0] == CLOSE_CODE
    assert other_tab.received[-1]["type"] == "RUN_FINISHED"
    assert text_of(other_tab.received).endswith(text_of(tab.received)[-50:])


async def test_a_run_still_going_at_the_end_of_the_grace_is_cut_and_said_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="gateway.doors.drain")
    async with (
        running_gateway(scripted_pace_ms=200, drain_seconds=0.3) as gateway,
        gateway.socket() as ws,
    ):
        await ws.send(user_input(new_id("t"), LONG))
        await ws.next()
        gateway.server.should_exit = True
        assert (await closed(ws))[0] == CLOSE_CODE
    # Its stream ends as a run's does, saying why, before the close.
    cut = ws.received[-1]
    assert (cut["type"], cut["code"]) == ("RUN_ERROR", "SERVICE_UNAVAILABLE")
    assert "0 runs finished, 1 cut off (stored as interrupted)" in caplog.text


async def test_an_sse_stream_whose_run_is_cut_at_the_end_of_the_grace_ends_too() -> None:
    async with (
        running_gateway(scripted_pace_ms=200, drain_seconds=0.3) as gateway,
        httpx.AsyncClient(timeout=scaled(30)) as client,
        client.stream(
            "POST",
            gateway.http + "/invocations",
            json=user_input(new_id("t"), LONG),
            headers={"X-Gateway-User": "demo"},
        ) as response,
    ):
        body = b""
        async for chunk in response.aiter_bytes():
            body += chunk
            if b"TEXT_MESSAGE_CONTENT" in body and not gateway.server.should_exit:
                gateway.server.should_exit = True
    # The stream ended (so the server could stop), with the run's end, not mid-air.
    cut = sse_events(body)[-1]
    assert (cut["type"], cut["code"]) == ("RUN_ERROR", "SERVICE_UNAVAILABLE")
    assert "marked interrupted" in cut["message"]


async def test_a_host_apps_shutdown_drains_the_mounted_gateway(tmp_path: Path) -> None:
    """``Starlette(lifespan=gateway.lifespan)``: the host's shutdown lets the run finish."""
    db = str(tmp_path / "mounted.db")
    # About 4 s of reply: longer than the 2 s a stop used to give a run.
    settings = Settings(db=db, scripted_pace_ms=40, warm_up_runs=0, drain_seconds=scaled(30))
    mounted = create_app(None, settings)
    thread = new_id("t")
    async with mounted.lifespan():
        assert mounted.hub is not None
        frame = p.decode_input(json.dumps(user_input(thread, LONG)))
        run = await mounted.hub.start("demo", frame, None)
        while run.translator.phase is Phase.NEW:
            await asyncio.sleep(0.01)
    assert run.done.is_set(), "the shutdown did not wait for the run"
    async with running_gateway(db=db) as gateway, gateway.socket() as ws:
        events = await ws.run({"type": "reattach", "threadId": thread})
    reply = snapshot_of(events)[-1]
    assert reply["role"] == "assistant" and len(reply["content"]) > 200
    assert "metadata" not in reply, "the reply was cut off"
