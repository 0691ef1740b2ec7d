"""Through the real server: a damaged thread is its owner's coded error and nobody else's.

Its owner meets RUN_ERROR INTERNAL_ERROR with a sentence saying what to do, never exception
text, on every door: a run over /ws and over SSE, a reattach frame, and ``?threadId=`` on
connect. Every other thread runs on, and /ping stays Healthy, since the store still commits.
"""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from gateway.wire import bounds
from tests.support.agui import new_id, text_of, tool_answer, tool_calls, user_input
from tests.support.damage import BAD_EVENT_DATA, assert_quarantined, nested, plant_event
from tests.support.flagship import FLAGSHIP
from tests.support.processes import operator_command
from tests.support.servers import RunningGateway, post_run, running_gateway

pytestmark = pytest.mark.server


async def flagship_turn(gateway: RunningGateway, user: str = "demo") -> str:
    """The seed story on a new thread: find the screen, the browser opens it, the model says so.

    Only ``demo`` of the demo's users may open the screen.
    """
    thread = new_id("t")
    async with gateway.socket(user=user) as ws:
        first = await ws.run(user_input(thread, FLAGSHIP))
        [navigate] = tool_calls(first, "navigateToScreen")
        second = await ws.run(tool_answer(thread, [(navigate["id"], {"status": "navigated"})]))
    assert second[-1]["type"] == "RUN_FINISHED", second[-1]
    return text_of(second)


def every_run_in_a_worker(gateway: RunningGateway) -> bool:
    """GATEWAY_WORKERS=N: each run's invocation runs in a worker (on demand, a light
    load's run stays here)."""
    assert gateway.app.hub is not None
    pool = gateway.app.hub.engine.workers
    return pool is not None and not pool.on_demand


async def ping(gateway: RunningGateway) -> tuple[int, str]:
    async with httpx.AsyncClient(timeout=10) as client:
        response = await client.get(gateway.http + "/ping")
    return response.status_code, response.json()["status"]


async def test_a_damaged_thread_is_its_owners_coded_error_on_every_door(db: str) -> None:
    thread = new_id("t")
    async with running_gateway(db=db) as gateway:
        async with gateway.socket(user="alice") as ws:
            assert (await ws.run(user_input(thread, "안녕")))[-1]["type"] == "RUN_FINISHED"
        await asyncio.to_thread(plant_event, db, thread, BAD_EVENT_DATA["nested 300 deep"])

        async with gateway.socket(user="alice") as ws:
            assert_quarantined((await ws.run(user_input(thread, "또 안녕")))[-1], thread)
            # The connection stays usable, and the same answer comes again, from the record.
            assert_quarantined(await ws.refused({"type": "reattach", "threadId": thread}), thread)
            other = await ws.run(user_input(new_id("t"), "안녕"))
            assert other[-1]["type"] == "RUN_FINISHED"
        async with gateway.socket(user="alice", query=f"&threadId={thread}") as ws:
            assert_quarantined(await ws.next(), thread)
        status, _, events, _ = await post_run(gateway, user_input(thread, "안녕"), user="alice")
        assert status == 500
        assert_quarantined(events[-1], thread)

        # Another user learns nothing of it: the thread is simply not theirs.
        async with gateway.socket(user="bob") as ws:
            refused = await ws.run(user_input(thread, "안녕"))
        assert refused[-1]["code"] == "ACCESS_DENIED"

        assert "이동했습니다" in await flagship_turn(gateway)
        assert await ping(gateway) == (200, "Healthy")
        hub = gateway.app.hub
        assert hub is not None and thread not in hub.threads


@pytest.mark.parametrize("limits", [True, False], ids=["limits at the door", "no limits"])
async def test_a_deeply_nested_tool_result_takes_down_no_one(
    db: str, monkeypatch: pytest.MonkeyPatch, limits: bool
) -> None:
    """Issue 11's input on a live server: refused at the door, or stored, it harms no one else.

    Without the door's limits (as before issue 11, or for a bound a bug lets through) the
    result is stored, and the next turn finds the thread unreadable; with every run in a
    worker (``GATEWAY_WORKERS=2``) the worker cannot parse the run it is handed, and the
    run fails with the agent's coded error before anything is stored.
    """
    if not limits:
        monkeypatch.setattr(bounds, "MAX_DEPTH", 10_000)
    thread = new_id("t")
    async with running_gateway(db=db) as gateway:
        async with gateway.socket() as ws:
            first = await ws.run(user_input(thread, FLAGSHIP))
            [navigate] = tool_calls(first, "navigateToScreen")
            answer = {"status": "navigated", "detail": nested(200)}
            answered = await ws.run(tool_answer(thread, [(navigate["id"], answer)]))
            again = await ws.run(user_input(thread, "고마워"))
        if limits:
            assert answered[-1]["code"] == "VALIDATION_ERROR"
            assert again[-1]["type"] == "RUN_FINISHED"
        elif every_run_in_a_worker(gateway):
            assert answered[-1]["code"] == "AGENT_ERROR"
            assert again[-1]["type"] == "RUN_FINISHED"
        else:
            assert answered[-1]["type"] == "RUN_FINISHED"
            assert_quarantined(again[-1], thread)

        # What issue 11 saw fail: other users' turns over both doors, and an honest /ping.
        texts, posts = await asyncio.gather(
            asyncio.gather(*(flagship_turn(gateway) for _ in range(4))),
            asyncio.gather(
                *(post_run(gateway, user_input(new_id("t"), "안녕"), f"http{n}") for n in range(4))
            ),
        )
        assert all("이동했습니다" in text for text in texts)
        assert all(status == 200 and events[-1]["type"] == "RUN_FINISHED"
                   for status, _, events, _ in posts)  # fmt: skip
        assert await ping(gateway) == (200, "Healthy")
        store = gateway.app.hub.engine.sessions  # type: ignore[union-attr]
        assert store.can_commit


@pytest.mark.process
async def test_operators_find_quarantined_threads(db: str) -> None:
    thread = new_id("t")
    async with running_gateway(db=db) as gateway:
        async with gateway.socket(user="alice") as ws:
            await ws.run(user_input(thread, "안녕"))
            seq = await asyncio.to_thread(plant_event, db, thread, BAD_EVENT_DATA["invalid JSON"])
            assert_quarantined((await ws.run(user_input(thread, "안녕")))[-1], thread)
        listing = await asyncio.to_thread(operator_command, db, "threads", "--quarantined")
        (entry,) = json.loads(listing.stdout)
        assert entry["threadId"] == thread and entry["userId"] == "alice"
        assert entry["quarantined"]["eventRow"] == seq
        assert entry["quarantined"]["column"] == "data"
        exported = await asyncio.to_thread(operator_command, db, "export", thread)
        assert exported.returncode != 0
        assert f"event row {seq}" in exported.stderr and "Traceback" not in exported.stderr
