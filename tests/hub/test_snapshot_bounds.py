"""A reattach to a long thread sends its latest part, bounded in bytes, and the rest pages in.

Issue 11 saw a 52-byte reattach frame queue a 4.5 MB snapshot. Now a snapshot holds at most
``snapshot_bytes`` of stored messages (the newest message always), a ``gateway.history``
event says where the older part begins, and ``GET /history`` pages back to the start.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from gateway.examples.navigator.agent import APP_NAME as APP
from gateway.store import SessionService
from tests.support.adk_events import call, event, result, text
from tests.support.agui import new_id, outcome, user_input
from tests.support.servers import running_gateway

pytestmark = pytest.mark.unit

BUDGET = 4_000


async def test_a_page_holds_the_newest_messages_that_fit_and_pages_back_to_the_start(
    store: SessionService,
) -> None:
    session = await store.create_session(app_name=APP, user_id="u", session_id="t")
    for turn in range(30):
        await store.append_event(session, event("user", text(f"question {turn} " + "x" * 300)))
        await store.append_event(session, event("agent", text(f"answer {turn}")))
    whole, latest = await store.thread_messages(APP, "u", "t")
    page = await store.thread_page(APP, "u", "t", max_bytes=BUDGET)
    assert page.latest == latest and page.earlier is not None
    assert page.messages == whole[-len(page.messages) :]
    assert 2 < len(page.messages) < len(whole)
    # The budget counts messages as the store keeps them: compact JSON.
    assert len(json.dumps(page.messages, ensure_ascii=False, separators=(",", ":"))) <= BUDGET
    pages = [page.messages]
    while page.earlier is not None:
        page = await store.thread_page(APP, "u", "t", max_bytes=BUDGET, before=page.earlier)
        pages.insert(0, page.messages)
    assert [m for part in pages for m in part] == whole


async def test_the_newest_message_comes_whole_even_past_the_budget(store: SessionService) -> None:
    session = await store.create_session(app_name=APP, user_id="u", session_id="t")
    await store.append_event(session, event("user", text("short")))
    await store.append_event(session, event("agent", text("y" * (BUDGET * 3))))
    page = await store.thread_page(APP, "u", "t", max_bytes=BUDGET)
    assert [m["content"] for m in page.messages] == ["y" * (BUDGET * 3)]
    assert page.earlier is not None


async def test_a_result_whose_call_was_left_out_is_left_out(store: SessionService) -> None:
    session = await store.create_session(app_name=APP, user_id="u", session_id="t")
    await store.append_event(session, event("agent", call("c1", "find_screen", q="z" * 5000)))
    await store.append_event(session, event("agent", result("c1", "find_screen", n=1)))
    await store.append_event(session, event("agent", text("done")))
    page = await store.thread_page(APP, "u", "t", max_bytes=1_000)
    assert [m["role"] for m in page.messages] == ["assistant"]


def history_events(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == "CUSTOM" and e["name"] == "gateway.history"]


@pytest.mark.server
async def test_a_reattach_sends_the_latest_part_and_the_rest_pages_in_over_http(db: str) -> None:
    async with running_gateway(db=db, snapshot_bytes=BUDGET) as gateway:
        thread = new_id("t")
        async with gateway.socket() as ws:
            for turn in range(12):
                assert outcome(await ws.run(user_input(thread, f"{turn} " + "가" * 400)))
            await ws.send({"type": "reattach", "threadId": thread})
            events = await ws.until_end()
        [snapshot] = [e for e in events if e["type"] == "MESSAGES_SNAPSHOT"]
        [note] = history_events(events)
        assert note["value"]["earlier"] is True
        turns = [m["content"].split(" ")[0] for m in snapshot["messages"] if m["role"] == "user"]
        assert turns == [str(n) for n in range(12 - len(turns), 12)] and len(turns) < 12
        assert len(json.dumps(snapshot["messages"], ensure_ascii=False)) <= BUDGET
        messages = snapshot["messages"]
        async with httpx.AsyncClient(base_url=gateway.http) as client:
            href = note["value"]["href"]
            while href:
                response = await client.get(href, headers={"X-Gateway-User": "demo"})
                assert response.status_code == 200, response.text
                page = response.json()
                messages = page["messages"] + messages
                href = (
                    f"/history?threadId={thread}&before={page['earlier']}"
                    if page["earlier"] is not None
                    else None
                )
            texts = [m["content"] for m in messages if m["role"] == "user"]
            assert [t.split(" ")[0] for t in texts] == [str(n) for n in range(12)]
            # Another user learns nothing; a bad cursor is a coded refusal.
            foreign = await client.get(
                href or note["value"]["href"], headers={"X-Gateway-User": "guest"}
            )
            assert foreign.status_code == 403
            assert foreign.json()["code"] == "ACCESS_DENIED"
            bad = await client.get(
                f"/history?threadId={thread}&before=¹", headers={"X-Gateway-User": "demo"}
            )
            assert bad.status_code == 400 and bad.json()["code"] == "VALIDATION_ERROR"


@pytest.mark.server
async def test_a_short_thread_comes_whole_with_no_history_note() -> None:
    async with running_gateway() as gateway, gateway.socket() as ws:
        thread = new_id("t")
        await ws.run(user_input(thread, "안녕"))
        await ws.send({"type": "reattach", "threadId": thread})
        events = await ws.until_end()
        assert not history_events(events)
        [snapshot] = [e for e in events if e["type"] == "MESSAGES_SNAPSHOT"]
        assert len(snapshot["messages"]) == 2


@pytest.mark.server
async def test_history_with_no_cursor_is_the_latest_part_a_reattach_sends() -> None:
    """What a client with no reattach (an HttpAgent) reads on load to show the thread."""
    async with running_gateway() as gateway, gateway.socket() as ws:
        thread = new_id("t")
        await ws.run(user_input(thread, "안녕"))
        await ws.send({"type": "reattach", "threadId": thread})
        [snapshot] = [e for e in await ws.until_end() if e["type"] == "MESSAGES_SNAPSHOT"]
        demo = {"X-Gateway-User": "demo"}
        async with httpx.AsyncClient(base_url=gateway.http) as client:
            latest = await client.get("/history", params={"threadId": thread}, headers=demo)
            assert latest.status_code == 200, latest.text
            assert latest.json() == {
                "threadId": thread,
                "messages": snapshot["messages"],
                "earlier": None,
                "times": snapshot["metadata"]["gateway.times"],
                "branches": {"forks": []},
            }
            # A thread not begun yet is an empty conversation, as a reattach to it shows.
            fresh = await client.get("/history", params={"threadId": new_id("t")}, headers=demo)
            assert fresh.status_code == 200 and fresh.json()["messages"] == []
            foreign = await client.get(
                "/history", params={"threadId": thread}, headers={"X-Gateway-User": "guest"}
            )
            assert foreign.status_code == 403 and foreign.json()["code"] == "ACCESS_DENIED"
