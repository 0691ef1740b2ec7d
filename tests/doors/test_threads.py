"""The thread door on a real gateway, on each store: what docs/threads.md promises a client.

Threads are made the way a client makes them (runs over /ws), then listed, searched,
changed, exported and deleted over HTTP; another user's thread is 404 through every verb;
and a second connection of the same user hears of each change as ``gateway.thread``.
"""

from __future__ import annotations

import asyncio
import time
import urllib.parse
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from gateway.metrics import sample
from tests.support.agui import AgUiSocket, new_id, outcome, tool_answer, tool_calls, user_input
from tests.support.approvals import ask_approval
from tests.support.budgets import scaled
from tests.support.flagship import FLAGSHIP
from tests.support.servers import RunningGateway, running_gateway

pytestmark = pytest.mark.server


@pytest.fixture
async def gateway(db: str) -> AsyncIterator[RunningGateway]:
    async with running_gateway(db=db) as running:
        yield running


def client(gateway: RunningGateway, user: str = "ann") -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=gateway.http, headers={"X-Gateway-User": user}, timeout=scaled(10)
    )


async def said(gateway: RunningGateway, user: str, *texts: str) -> str:
    """A new thread of ``user`` in which they said ``texts``, one run each; its id."""
    thread = new_id("t")
    async with gateway.socket(user) as ws:
        for text in texts:
            assert outcome(await ws.run(user_input(thread, text)))
    async with client(gateway, user) as http:
        await settled(http, thread)
    return thread


async def listed(http: httpx.AsyncClient, query: str = "") -> list[str]:
    response = await http.get("/threads" + query)
    assert response.status_code == 200, response.text
    return [thread["threadId"] for thread in response.json()["threads"]]


def refused(response: httpx.Response, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["code"] == code and body["message"], body


async def test_a_listing_shows_titles_previews_and_pages_newest_first(
    gateway: RunningGateway,
) -> None:
    first = await said(gateway, "ann", "업무 요청 목록 화면 열어줘")
    second = await said(gateway, "ann", "hello there")
    await said(gateway, "bob", "bob's own")
    async with client(gateway) as http:
        response = await http.get("/threads")
        assert response.status_code == 200
        page = response.json()
        assert [t["threadId"] for t in page["threads"]] == [second, first]
        assert page["nextCursor"] is None
        summary = page["threads"][1]
        assert summary["title"] == "업무 요청 목록 화면 열어줘"
        assert summary["preview"] and summary["state"] == "idle"
        assert summary["waitingOn"] is None and summary["metadata"] == {}
        assert summary["createdAt"].endswith("Z") and summary["lastActivityAt"].endswith("Z")
        one = (await http.get("/threads?limit=1")).json()
        assert [t["threadId"] for t in one["threads"]] == [second]
        cursor = urllib.parse.quote(one["nextCursor"])
        rest = (await http.get(f"/threads?limit=1&cursor={cursor}")).json()
        assert [t["threadId"] for t in rest["threads"]] == [first]
        assert rest["nextCursor"] is None
        assert (await http.get(f"/threads/{first}")).json() == summary


async def test_search_finds_korean_and_ids_and_survives_hostile_queries(
    gateway: RunningGateway,
) -> None:
    korean = await said(gateway, "ann", "업무 요청 목록 화면 열어줘")
    order = await said(gateway, "ann", "where is order R-1042")
    await said(gateway, "bob", "업무 요청 R-1042")
    async with client(gateway) as http:
        assert await listed(http, "?q=" + urllib.parse.quote("업무 요청")) == [korean]
        assert await listed(http, "?q=R-1042") == [order]
        for hostile in ['"', "NEAR(a b)", "*", "a' OR 1=1 --", "\x00", "\u202e화면", "x" * 256]:
            response = await http.get("/threads", params={"q": hostile})
            assert response.status_code == 200, (hostile, response.text)
        refused(await http.get("/threads", params={"q": "x" * 10_000}), 400, "BAD_QUERY")
        refused(await http.get("/threads?cursor=bm90LWEtY3Vyc29y"), 400, "BAD_CURSOR")
        refused(await http.get("/threads?limit=101"), 400, "VALIDATION_ERROR")
        refused(await http.get("/threads?archived=maybe"), 400, "VALIDATION_ERROR")


async def test_rename_archive_pin_and_metadata_within_bounds(gateway: RunningGateway) -> None:
    older = await said(gateway, "ann", "first thread")
    newer = await said(gateway, "ann", "second thread")
    async with client(gateway) as http:
        response = await http.patch(
            f"/threads/{older}", json={"title": " Mine ", "pinned": True, "metadata": {"k": [1]}}
        )
        assert response.status_code == 200, response.text
        summary = response.json()
        assert (summary["title"], summary["pinned"], summary["metadata"]) == (
            "Mine",
            True,
            {"k": [1]},
        )
        assert await listed(http) == [older, newer]  # pinned first
        await http.patch(f"/threads/{newer}", json={"archived": True})
        assert await listed(http) == [older]
        assert await listed(http, "?archived=true") == [newer]
        assert sorted(await listed(http, "?archived=all")) == sorted([older, newer])
        assert await listed(http, "?q=mine") == [older]
        for body in (
            {},
            {"title": ""},
            {"title": "x" * 201},
            {"title": "a\x00b"},
            {"pinned": "yes"},
            {"colour": "red"},
            {"metadata": {f"k{n}": n for n in range(33)}},
            {"metadata": {"k": "x" * 4100}},
            {"metadata": {"k": [[[[[[[[[[1]]]]]]]]]]}},
            [1],
        ):
            refused(await http.patch(f"/threads/{older}", json=body), 400, "VALIDATION_ERROR")
        too_large = await http.patch(
            f"/threads/{older}", content=b"{" * 9000, headers={"Content-Type": "application/json"}
        )
        refused(too_large, 413, "VALIDATION_ERROR")
        assert (await http.get(f"/threads/{older}")).json()["title"] == "Mine"


async def test_another_users_thread_is_not_found_through_every_verb(
    gateway: RunningGateway,
) -> None:
    theirs = await said(gateway, "bob", "bob's secret plan")
    async with client(gateway, "ann") as http:
        for response in (
            await http.get(f"/threads/{theirs}"),
            await http.patch(f"/threads/{theirs}", json={"title": "mine now"}),
            await http.delete(f"/threads/{theirs}"),
            await http.get(f"/threads/{theirs}/export"),
            await http.get(f"/threads/{theirs}/export?format=markdown"),
            await http.get("/threads/no-such-thread"),
        ):
            refused(response, 404, "THREAD_NOT_FOUND")
        assert await listed(http) == [] and await listed(http, "?q=secret") == []
    async with client(gateway, "bob") as http:
        summary = (await http.get(f"/threads/{theirs}")).json()
        assert summary["title"] == "bob's secret plan"


async def test_export_as_json_and_markdown_downloads(gateway: RunningGateway) -> None:
    thread = await said(gateway, "ann", "업무 요청 목록 화면 열어줘")
    async with client(gateway) as http:
        response = await http.get(f"/threads/{thread}/export")
        assert response.status_code == 200
        assert response.headers["content-disposition"].startswith("attachment;")
        assert f"thread-{thread}.json" in response.headers["content-disposition"]
        document = response.json()
        assert document["thread"]["threadId"] == thread
        assert document["messages"][0] == {**document["messages"][0], "role": "user"}
        assert document["messages"][0]["content"] == "업무 요청 목록 화면 열어줘"
        markdown = await http.get(f"/threads/{thread}/export?format=markdown")
        assert markdown.headers["content-type"].startswith("text/markdown")
        text = markdown.text
        assert text.startswith("# 업무 요청 목록 화면 열어줘\n") and "**User**" in text
        assert "**Assistant**" in text
        refused(await http.get(f"/threads/{thread}/export?format=pdf"), 400, "VALIDATION_ERROR")


async def test_a_deleted_thread_shows_nowhere_and_leaves_an_audit_row(
    gateway: RunningGateway,
) -> None:
    thread = await said(gateway, "ann", "delete me: secret plans", "more plans")
    async with client(gateway) as http:
        response = await http.delete(f"/threads/{thread}")
        assert response.status_code == 204, response.text
        refused(await http.get(f"/threads/{thread}"), 404, "THREAD_NOT_FOUND")
        refused(await http.get(f"/threads/{thread}/export"), 404, "THREAD_NOT_FOUND")
        refused(await http.delete(f"/threads/{thread}"), 404, "THREAD_NOT_FOUND")
        assert await listed(http) == [] and await listed(http, "?q=plans") == []
        history = await http.get(f"/history?threadId={thread}")
        assert history.status_code == 200 and history.json()["messages"] == []
    async with gateway.socket("ann") as ws:
        await ws.send({"type": "reattach", "threadId": thread})
        events = await ws.until_end()
        snapshots = [e for e in events if e["type"] == "MESSAGES_SNAPSHOT"]
        assert all(s["messages"] == [] for s in snapshots)
        assert "secret" not in str(events)
        # A new run on the id starts a fresh thread.
        assert outcome(await ws.run(user_input(thread, "a fresh start")))
    async with client(gateway) as http:
        summary = (await http.get(f"/threads/{thread}")).json()
        assert summary["title"] == "a fresh start"
        exported = (await http.get(f"/threads/{thread}/export")).json()
        assert "secret" not in str(exported)
    audit = gateway.app.hub.audit
    assert audit is not None
    rows = [r for r in await audit.query_access(thread=thread) if r.action == "thread.deleted"]
    assert [(r.user_id, r.outcome) for r in rows] == [("ann", "ok")]


async def next_change(ws: AgUiSocket, name: str = "gateway.thread") -> dict[str, Any]:
    """The value of the next ``gateway.thread`` event, checked to travel in a run of its own."""
    while True:
        event = await ws.next(scaled(10))
        if event["type"] == "CUSTOM" and event["name"] == name:
            value: dict[str, Any] = event["value"]
            finished = await ws.next(scaled(10))
            assert finished["type"] == "RUN_FINISHED"
            return value


async def test_a_second_connection_hears_of_each_change_to_the_users_threads(
    gateway: RunningGateway,
) -> None:
    """A connection that asked (``?threads=live``); the tab making the thread did not ask,
    and its stream is what it always was (the other tests read it event by event)."""
    live = "&threads=live"
    async with gateway.socket("ann", live) as watcher, gateway.socket("bob", live) as stranger:
        thread = await said(gateway, "ann", "made in another tab")
        change = await next_change(watcher)
        assert change["change"] == "created" and change["thread"]["threadId"] == thread
        final = change
        while final["thread"]["state"] != "idle":  # a burst folds into few events
            final = await next_change(watcher)
        assert final["thread"]["title"] == "made in another tab"
        async with client(gateway) as http:
            await http.patch(f"/threads/{thread}", json={"title": "renamed"})
            renamed = await next_change(watcher)
            assert renamed["change"] == "updated" and renamed["thread"]["title"] == "renamed"
            await http.delete(f"/threads/{thread}")
            deleted = await next_change(watcher)
            assert deleted == {"change": "deleted", "thread": {"threadId": thread}}
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(stranger.next(), 0.8)


async def test_after_a_branch_switch_the_listing_and_its_news_preview_the_branch_shown(
    gateway: RunningGateway,
) -> None:
    """An edit forks the thread and a switch shows the first version again: GET /threads
    and the thread list's news (the sidebar) preview the last words of the branch shown,
    never those of the branch left (docs/branches.md)."""
    thread = new_id("t")
    live = "&threads=live"
    async with gateway.socket("ann", live) as watcher, gateway.socket("ann") as ws:
        async with client(gateway) as http:
            first = user_input(thread, "hello there", message_id="m1")
            await ws.run(first)
            shown_first = (await settled(http, thread))["preview"]
            # A stock client's edit of m1: another version, with a reply of its own.
            await ws.run(user_input(thread, FLAGSHIP, message_id="m1"))
            edited = (await settled(http, thread))["preview"]
            assert edited != shown_first
            while (await next_change(watcher))["thread"]["preview"] != edited:
                pass  # the news of the runs before the switch
            switch = user_input(thread, "") | {"messages": []}
            switch["forwardedProps"] = {"branch": {"switchTo": first["runId"]}}
            assert outcome(await ws.run(switch)) == {"type": "success"}
            assert (await settled(http, thread))["preview"] == shown_first
            assert [t["preview"] for t in (await http.get("/threads")).json()["threads"]] == [
                shown_first
            ]
        # The switch's news: the shown branch's words (a timeout here: they never came).
        while (await next_change(watcher))["thread"]["preview"] != shown_first:
            pass


async def test_the_door_takes_the_browsers_cors_preflight_for_patch(
    gateway: RunningGateway,
) -> None:
    async with httpx.AsyncClient(base_url=gateway.http) as http:
        response = await http.options(
            "/threads/t-1",
            headers={
                "Origin": gateway.http,
                "Access-Control-Request-Method": "PATCH",
                "Access-Control-Request-Headers": "content-type, x-gateway-user",
            },
        )
        assert response.status_code in (200, 204), response.text
        assert "PATCH" in response.headers["access-control-allow-methods"]
        wrong = await http.post("/threads", headers={"X-Gateway-User": "ann"})
        assert wrong.status_code == 405 and wrong.headers["allow"] == "GET"


async def test_a_thread_paused_on_the_browser_is_listed_as_waiting_on_it(
    gateway: RunningGateway,
) -> None:
    thread = new_id("t")
    # The demo's user may open the screen (its screen tree has it).
    async with gateway.socket("demo") as ws, client(gateway, "demo") as http:
        paused = await ws.run(user_input(thread, FLAGSHIP))
        [navigate] = tool_calls(paused, "navigateToScreen")
        summary = await settled(http, thread)
        assert (summary["state"], summary["waitingOn"]) == ("waiting", "browser_action")
        assert outcome(await ws.run(tool_answer(thread, [(navigate["id"], {"status": "ok"})])))
        summary = await settled(http, thread)
        assert (summary["state"], summary["waitingOn"]) == ("idle", None)


async def test_a_thread_paused_on_an_approval_is_listed_as_waiting_on_it(
    gateway: RunningGateway,
) -> None:
    """An approval's pause keeps the store's run open (a crash must resume it), yet the
    person is who the thread waits on: the list says so, not "running"."""
    thread = new_id("t")
    async with gateway.socket("approver") as ws, client(gateway, "approver") as http:
        await ask_approval(ws, thread)
        summary = await settled(http, thread)
        assert (summary["state"], summary["waitingOn"]) == ("waiting", "approval")


async def settled(http: httpx.AsyncClient, thread: str) -> dict[str, Any]:
    """The thread's summary once its run's end is stored (a run's last events reach the
    client before its last write commits)."""
    deadline = time.monotonic() + scaled(5)
    while True:
        summary: dict[str, Any] = (await http.get(f"/threads/{thread}")).json()
        if summary["state"] != "running" or time.monotonic() > deadline:
            return summary
        await asyncio.sleep(0.05)


async def test_deleting_a_thread_mid_run_stops_the_run_first(db: str) -> None:
    async with running_gateway(db=db, scripted_pace_ms=40) as gateway:
        thread = new_id("t")
        async with gateway.socket("ann") as ws, client(gateway) as http:
            await ws.send(user_input(thread, "자기소개를 길게 해 주세요"))
            seen = [await ws.next()]
            while sum(e["type"] == "TEXT_MESSAGE_CONTENT" for e in seen) < 2:
                seen.append(await ws.next())
            running = (await http.get(f"/threads/{thread}")).json()
            assert running["state"] == "running"
            assert (await http.delete(f"/threads/{thread}")).status_code == 204
            while seen[-1]["type"] not in ("RUN_FINISHED", "RUN_ERROR"):
                seen.append(await ws.next(scaled(10)))
            refused(await http.get(f"/threads/{thread}"), 404, "THREAD_NOT_FOUND")
            assert await listed(http) == []


async def test_each_answered_request_is_counted_by_verb(db: str) -> None:
    async with running_gateway(db=db, metrics="on") as gateway:
        thread = await said(gateway, "ann", "counted")
        async with client(gateway) as http:
            await http.get("/threads")
            await http.get("/threads?q=counted")
            await http.patch(f"/threads/{thread}", json={"pinned": True})
            await http.get(f"/threads/{thread}/export")
            await http.get("/threads/nobodys")  # refused: not counted
        counted = gateway.app.metrics
        for verb in ("list", "search", "edit", "export"):
            assert sample(counted, "gateway_thread_requests_total", verb=verb) == 1, verb
        assert sample(counted, "gateway_thread_requests_total", verb="delete") is None


async def test_archived_threads_count_in_the_quota_and_deleted_ones_do_not(db: str) -> None:
    async with running_gateway(db=db, user_threads=2) as gateway:
        kept = await said(gateway, "ann", "one")
        archived = await said(gateway, "ann", "two")
        async with client(gateway) as http:
            await http.patch(f"/threads/{archived}", json={"archived": True})
            async with gateway.socket("ann") as ws:
                refused_run = await ws.run(user_input(new_id("t"), "three"))
                assert refused_run[-1]["type"] == "RUN_ERROR"
                assert refused_run[-1]["code"] == "SERVICE_QUOTA_EXCEEDED"
            assert (await http.delete(f"/threads/{archived}")).status_code == 204
            third = await said(gateway, "ann", "three, now that one is gone")
            assert sorted(await listed(http)) == sorted([kept, third])
