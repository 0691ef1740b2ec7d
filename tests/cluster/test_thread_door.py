"""The thread door across two gateway processes on one PostgreSQL database.

A thread made through A is listed and searched through B; a tab connected to B hears of
its creation, its rename through A and its deletion through A as ``gateway.thread`` events
(the cluster's notify path); and once deleted through A nothing of it is readable through B.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import connect

from tests.support.agui import AgUiSocket, new_id, outcome, user_input
from tests.support.budgets import scaled
from tests.support.postgres import Postgres
from tests.support.processes import gateway_process

pytestmark = pytest.mark.process


@pytest.fixture(scope="module")
async def pair(
    postgres: Postgres, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[tuple[int, int]]:
    database = postgres.fresh_database()
    logs = tmp_path_factory.mktemp("thread-door")
    async with contextlib.AsyncExitStack() as stack:
        ports = []
        for name in "ab":
            _, port = await stack.enter_async_context(
                gateway_process(database, logs / f"{name}.log")
            )
            ports.append(port)
        yield ports[0], ports[1]


@contextlib.asynccontextmanager
async def tab(port: int, user: str, query: str = "") -> AsyncIterator[AgUiSocket]:
    async with connect(f"ws://127.0.0.1:{port}/ws?user={user}{query}", max_size=None) as ws:
        yield AgUiSocket(ws)


def door(port: int, user: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=f"http://127.0.0.1:{port}", headers={"X-Gateway-User": user}, timeout=scaled(10)
    )


async def change_of(ws: AgUiSocket, thread: str, wanted: str) -> dict[str, Any]:
    """The next ``gateway.thread`` change of ``thread`` of kind ``wanted`` heard on ``ws``."""
    while True:
        event = await ws.next(scaled(15))
        if event["type"] == "CUSTOM" and event["name"] == "gateway.thread":
            value: dict[str, Any] = event["value"]
            if value["thread"]["threadId"] == thread and value["change"] == wanted:
                return value


async def test_a_thread_made_on_one_process_is_listed_changed_and_deleted_through_the_other(
    pair: tuple[int, int],
) -> None:
    a, b = pair
    user = new_id("user")
    thread = new_id("t")
    async with tab(b, user, "&threads=live") as on_b:
        async with tab(a, user) as on_a:
            assert outcome(await on_a.run(user_input(thread, "업무 요청 목록 화면 열어줘")))
        created = await change_of(on_b, thread, "created")
        assert created["thread"]["threadId"] == thread
        async with door(b, "someone-else") as stranger:
            assert (await stranger.get(f"/threads/{thread}")).status_code == 404
            assert (await stranger.get("/threads", params={"q": "업무"})).json()["threads"] == []
        async with door(b, user) as through_b, door(a, user) as through_a:
            listed = (await through_b.get("/threads", params={"q": "업무 요청"})).json()
            assert [t["threadId"] for t in listed["threads"]] == [thread]
            assert listed["threads"][0]["title"] == "업무 요청 목록 화면 열어줘"
            renamed = await through_a.patch(f"/threads/{thread}", json={"title": "R-1042"})
            assert renamed.status_code == 200
            heard = await change_of(on_b, thread, "updated")
            while heard["thread"]["title"] != "R-1042":
                heard = await change_of(on_b, thread, "updated")
            assert (await through_a.delete(f"/threads/{thread}")).status_code == 204
            assert await change_of(on_b, thread, "deleted") == {
                "change": "deleted",
                "thread": {"threadId": thread},
            }
            gone = await through_b.get(f"/threads/{thread}")
            assert gone.status_code == 404 and gone.json()["code"] == "THREAD_NOT_FOUND"
            history = (await through_b.get(f"/history?threadId={thread}")).json()
            assert history["messages"] == []
